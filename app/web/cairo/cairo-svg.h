// cairo's SVG surface, in the browser build's subset (cairo.h beside it).
#pragma once

#include "cairo.h"

#ifdef __cplusplus
extern "C" {
#endif

cairo_surface_t* cairo_svg_surface_create(const char* filename, double width_in_points,
                                          double height_in_points);

#ifdef __cplusplus
}
#endif
