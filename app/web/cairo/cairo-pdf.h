// cairo's PDF surface, in the browser build's subset (cairo.h beside it): it is created in the
// error state CAIRO_STATUS_NOT_IN_BROWSER, so that an export says PDF is not available.
#pragma once

#include "cairo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum _cairo_pdf_metadata {
    CAIRO_PDF_METADATA_TITLE,
    CAIRO_PDF_METADATA_AUTHOR,
    CAIRO_PDF_METADATA_SUBJECT,
    CAIRO_PDF_METADATA_KEYWORDS,
    CAIRO_PDF_METADATA_CREATOR
} cairo_pdf_metadata_t;

cairo_surface_t* cairo_pdf_surface_create(const char* filename, double width_in_points,
                                          double height_in_points);
void cairo_pdf_surface_set_metadata(cairo_surface_t* surface, cairo_pdf_metadata_t metadata,
                                    const char* utf8);

#ifdef __cplusplus
}
#endif
