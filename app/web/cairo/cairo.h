// The subset of cairo's API that charts/chart_export.cpp draws with, for the browser build
// (cairo has no WebAssembly build here): declared as cairo declares it, implemented by
// web/chart_canvas.cpp over SVG text and the page's 2D canvas. Only the web build puts this
// folder on its include path; the desktop build includes Debian's cairo.
#pragma once

#include <math.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846  // (glibc's math.h defines it; strict C++ on musl does not)
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;

typedef enum _cairo_status {
    CAIRO_STATUS_SUCCESS = 0,
    CAIRO_STATUS_NO_MEMORY,
    CAIRO_STATUS_INVALID_RESTORE,
    CAIRO_STATUS_WRITE_ERROR,
    CAIRO_STATUS_SURFACE_FINISHED,
    CAIRO_STATUS_INVALID_SIZE,
    // Not cairo's: a surface type this subset does not have (PDF).
    CAIRO_STATUS_NOT_IN_BROWSER
} cairo_status_t;

typedef enum _cairo_format { CAIRO_FORMAT_ARGB32 = 0, CAIRO_FORMAT_RGB24 = 1 } cairo_format_t;
typedef enum _cairo_font_slant { CAIRO_FONT_SLANT_NORMAL } cairo_font_slant_t;
typedef enum _cairo_font_weight {
    CAIRO_FONT_WEIGHT_NORMAL,
    CAIRO_FONT_WEIGHT_BOLD
} cairo_font_weight_t;

typedef struct {
    double x_bearing, y_bearing, width, height, x_advance, y_advance;
} cairo_text_extents_t;

const char* cairo_status_to_string(cairo_status_t status);

cairo_surface_t* cairo_image_surface_create(cairo_format_t format, int width, int height);
cairo_status_t cairo_surface_status(cairo_surface_t* surface);
cairo_status_t cairo_surface_write_to_png(cairo_surface_t* surface, const char* filename);
void cairo_surface_finish(cairo_surface_t* surface);
void cairo_surface_destroy(cairo_surface_t* surface);

cairo_t* cairo_create(cairo_surface_t* target);
void cairo_destroy(cairo_t* cr);
cairo_status_t cairo_status(cairo_t* cr);
void cairo_save(cairo_t* cr);
void cairo_restore(cairo_t* cr);

void cairo_scale(cairo_t* cr, double sx, double sy);
void cairo_rotate(cairo_t* cr, double angle);

void cairo_set_source_rgb(cairo_t* cr, double red, double green, double blue);
void cairo_set_source_rgba(cairo_t* cr, double red, double green, double blue, double alpha);
void cairo_set_line_width(cairo_t* cr, double width);
void cairo_set_dash(cairo_t* cr, const double* dashes, int num_dashes, double offset);

void cairo_move_to(cairo_t* cr, double x, double y);
void cairo_rel_move_to(cairo_t* cr, double dx, double dy);
void cairo_line_to(cairo_t* cr, double x, double y);
void cairo_rectangle(cairo_t* cr, double x, double y, double width, double height);
void cairo_arc(cairo_t* cr, double xc, double yc, double radius, double angle1, double angle2);

void cairo_paint(cairo_t* cr);
void cairo_fill(cairo_t* cr);
void cairo_fill_preserve(cairo_t* cr);
void cairo_stroke(cairo_t* cr);
void cairo_clip(cairo_t* cr);

void cairo_select_font_face(cairo_t* cr, const char* family, cairo_font_slant_t slant,
                            cairo_font_weight_t weight);
void cairo_set_font_size(cairo_t* cr, double size);
void cairo_text_extents(cairo_t* cr, const char* utf8, cairo_text_extents_t* extents);
void cairo_show_text(cairo_t* cr, const char* utf8);

#ifdef __cplusplus
}
#endif
