// cairo's API as charts/chart_export.cpp uses it (web/cairo/cairo.h), for the browser build: an
// SVG surface writes an SVG document (its text as <text> elements), an image surface draws on a
// canvas element of the page (Path2D of the same path data) and writes that canvas's PNG, a PDF
// surface is created in an error state. The meaning is cairo's: a path is fixed in device space
// as it is built, the line width and dashes are in user space when stroked, fill and stroke clear
// the path (fill_preserve keeps it), save/restore cover the whole state, the clip included, and
// show_text draws at the current point and advances it.
#include <emscripten.h>
#include "export/xml_escape.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cairo-pdf.h"
#include "cairo-svg.h"
#include "cairo.h"

using convlab::app::xml_escape;

namespace {

// clang-format off
EM_JS(int, js_canvas_new, (int w, int h), {
    const c = document.createElement("canvas");
    c.width = w;
    c.height = h;
    Module.chartCanvases = Module.chartCanvases || [];
    Module.chartCanvases.push(c);
    return Module.chartCanvases.length - 1;
});
EM_JS(void, js_canvas_free, (int id), {
    Module.chartCanvases[id] = null;
});
EM_JS(void, js_canvas_fill, (int id, const char* d, const char* style), {
    const g = Module.chartCanvases[id].getContext("2d");
    g.fillStyle = UTF8ToString(style);
    g.fill(new Path2D(UTF8ToString(d)));
});
EM_JS(void, js_canvas_stroke, (int id, const char* d, const char* style, double width,
                               const char* dash), {
    const g = Module.chartCanvases[id].getContext("2d");
    g.strokeStyle = UTF8ToString(style);
    g.lineWidth = width;
    const ds = UTF8ToString(dash);
    g.setLineDash(ds ? ds.split(" ").map(Number) : []);
    g.stroke(new Path2D(UTF8ToString(d)));
});
EM_JS(void, js_canvas_clip, (int id, const char* d), {
    const g = Module.chartCanvases[id].getContext("2d");
    g.save();
    g.clip(new Path2D(UTF8ToString(d)));
});
EM_JS(void, js_canvas_unclip, (int id), {
    Module.chartCanvases[id].getContext("2d").restore();
});
EM_JS(void, js_canvas_text, (int id, const char* text, const char* font, const char* style,
                             double a, double b, double c, double d, double e, double f), {
    const g = Module.chartCanvases[id].getContext("2d");
    g.save();
    g.setTransform(a, b, c, d, e, f);
    g.font = UTF8ToString(font);
    g.fillStyle = UTF8ToString(style);
    g.fillText(UTF8ToString(text), 0, 0);
    g.restore();
});
EM_JS(int, js_canvas_png, (int id, const char* path), {
    try {
        const url = Module.chartCanvases[id].toDataURL("image/png");
        const bin = atob(url.substring(url.indexOf(",") + 1));
        const bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        FS.writeFile(UTF8ToString(path), bytes);
        return 1;
    } catch (e) {
        console.error("convlab: chart PNG: " + e);
        return 0;
    }
});
// The advance of a text in a font of `size` user units, as the page's canvas measures it.
EM_JS(double, js_text_width, (const char* text, const char* font), {
    Module.measureCanvas = Module.measureCanvas || document.createElement("canvas");
    const g = Module.measureCanvas.getContext("2d");
    g.font = UTF8ToString(font);
    return g.measureText(UTF8ToString(text)).width;
});
// clang-format on

const char* const kFamily = "\"DejaVu Sans\", sans-serif";  // the font the desktop's cairo uses

// A number for the SVG text: `digits` decimals, without trailing zeros.
std::string num(double v, int digits = 2) {
    char b[48];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    std::string s = b;
    while (s.back() == '0') s.pop_back();  // "12.50" -> "12.5", "3.00" -> "3"
    if (s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

// User space to device space: device = (a x + c y + e, b x + d y + f).
struct Matrix {
    double a = 1, b = 0, c = 0, d = 1, e = 0, f = 0;
    void apply(double& x, double& y) const {
        const double u = a * x + c * y + e, v = b * x + d * y + f;
        x = u;
        y = v;
    }
    void linear(double& x, double& y) const {
        const double u = a * x + c * y, v = b * x + d * y;
        x = u;
        y = v;
    }
    double scale() const { return std::sqrt(std::fabs(a * d - b * c)); }
};

struct State {
    Matrix m;
    double r = 0, g = 0, b = 0, alpha = 1;  // the source colour (cairo's default: opaque black)
    double line_width = 2;                  // cairo's default
    std::vector<double> dash;
    double font_size = 10;  // cairo's default
    bool bold = false;
    int clips = 0;  // clips set at this level: undone by the restore that ends it
};

}  // namespace

struct _cairo_surface {
    enum class Kind { Svg, Image, Pdf } kind = Kind::Svg;
    cairo_status_t status = CAIRO_STATUS_SUCCESS;
    std::string path;              // SVG: the file written by finish
    double width = 0, height = 0;  // device units: points (SVG), pixels (image)
    std::string body;              // SVG: the elements drawn so far
    int clip_ids = 0;              // SVG: clip paths defined
    int canvas = -1;               // image: the page's canvas
    bool finished = false;
};

struct _cairo {
    cairo_surface_t* surface = nullptr;
    State st;
    std::vector<State> saved;
    std::string path;  // SVG path data, device space
    bool has_point = false;
    double x = 0, y = 0;  // the current point, device space
    cairo_status_t status = CAIRO_STATUS_SUCCESS;
};

namespace {

bool svg(const cairo_t* cr) {
    return cr->surface->kind == _cairo_surface::Kind::Svg;
}
bool drawable(const cairo_t* cr) {
    return cr->status == CAIRO_STATUS_SUCCESS && cr->surface->status == CAIRO_STATUS_SUCCESS &&
           !cr->surface->finished;
}

std::string rgb(const State& s) {
    auto c = [](double v) { return std::to_string(static_cast<int>(std::lround(255 * v))); };
    return "rgb(" + c(s.r) + "," + c(s.g) + "," + c(s.b) + ")";
}
std::string rgba(const State& s) {
    auto c = [](double v) { return std::to_string(static_cast<int>(std::lround(255 * v))); };
    return "rgba(" + c(s.r) + "," + c(s.g) + "," + c(s.b) + "," + num(s.alpha) + ")";
}
std::string font_css(const State& s, double size) {
    return std::string(s.bold ? "bold " : "") + num(size) + "px " + kFamily;
}

void point(cairo_t* cr, char op, double x, double y) {
    cr->st.m.apply(x, y);
    cr->path += cr->path.empty() ? "" : " ";
    cr->path += op;
    cr->path += num(x) + " " + num(y);
    cr->has_point = true;
    cr->x = x;
    cr->y = y;
}

void fill_path(cairo_t* cr) {
    if (!drawable(cr) || cr->path.empty()) return;
    const State& s = cr->st;
    if (svg(cr)) {
        cr->surface->body += "<path d=\"" + cr->path + "\" fill=\"" + rgb(s) + "\"" +
                             (s.alpha < 1 ? " fill-opacity=\"" + num(s.alpha) + "\"" : "") + "/>\n";
    } else {
        js_canvas_fill(cr->surface->canvas, cr->path.c_str(), rgba(s).c_str());
    }
}

void clear_path(cairo_t* cr) {
    cr->path.clear();
    cr->has_point = false;
}

void undo_clips(cairo_t* cr, int n) {
    for (int i = 0; i < n; ++i) {
        if (svg(cr))
            cr->surface->body += "</g>\n";
        else if (cr->surface->kind == _cairo_surface::Kind::Image)
            js_canvas_unclip(cr->surface->canvas);
    }
}

cairo_surface_t* failed_surface(cairo_status_t st) {
    auto* s = new _cairo_surface;
    s->kind = _cairo_surface::Kind::Pdf;
    s->status = st;
    return s;
}

}  // namespace

extern "C" {

const char* cairo_status_to_string(cairo_status_t status) {
    switch (status) {
        case CAIRO_STATUS_SUCCESS:
            return "no error has occurred";
        case CAIRO_STATUS_NO_MEMORY:
            return "out of memory";
        case CAIRO_STATUS_INVALID_RESTORE:
            return "cairo_restore() without matching cairo_save()";
        case CAIRO_STATUS_WRITE_ERROR:
            return "error while writing to output stream";
        case CAIRO_STATUS_SURFACE_FINISHED:
            return "the target surface has been finished";
        case CAIRO_STATUS_INVALID_SIZE:
            return "invalid value (typically too big) for the size of the input (surface, "
                   "pattern, etc.)";
        case CAIRO_STATUS_NOT_IN_BROWSER:
            return "not available in the browser (no cairo: SVG and PNG only)";
    }
    return "unknown status";
}

cairo_surface_t* cairo_svg_surface_create(const char* filename, double width, double height) {
    if (!(width > 0 && height > 0)) return failed_surface(CAIRO_STATUS_INVALID_SIZE);
    auto* s = new _cairo_surface;
    s->kind = _cairo_surface::Kind::Svg;
    s->path = filename;
    s->width = width;
    s->height = height;
    return s;
}

cairo_surface_t* cairo_pdf_surface_create(const char*, double, double) {
    return failed_surface(CAIRO_STATUS_NOT_IN_BROWSER);
}

void cairo_pdf_surface_set_metadata(cairo_surface_t*, cairo_pdf_metadata_t, const char*) {}

cairo_surface_t* cairo_image_surface_create(cairo_format_t, int width, int height) {
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
        return failed_surface(CAIRO_STATUS_INVALID_SIZE);
    auto* s = new _cairo_surface;
    s->kind = _cairo_surface::Kind::Image;
    s->width = width;
    s->height = height;
    s->canvas = js_canvas_new(width, height);
    return s;
}

cairo_status_t cairo_surface_status(cairo_surface_t* surface) {
    return surface ? surface->status : CAIRO_STATUS_NO_MEMORY;
}

cairo_status_t cairo_surface_write_to_png(cairo_surface_t* surface, const char* filename) {
    if (!surface || surface->kind != _cairo_surface::Kind::Image) return CAIRO_STATUS_WRITE_ERROR;
    if (surface->status != CAIRO_STATUS_SUCCESS) return surface->status;
    return js_canvas_png(surface->canvas, filename) ? CAIRO_STATUS_SUCCESS
                                                    : CAIRO_STATUS_WRITE_ERROR;
}

void cairo_surface_finish(cairo_surface_t* surface) {
    if (!surface || surface->finished || surface->status != CAIRO_STATUS_SUCCESS) return;
    surface->finished = true;
    if (surface->kind != _cairo_surface::Kind::Svg) return;
    std::ofstream out(surface->path, std::ios::binary | std::ios::trunc);
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(surface->width)
        << "pt\" height=\"" << num(surface->height) << "pt\" viewBox=\"0 0 " << num(surface->width)
        << " " << num(surface->height) << "\">\n"
        << surface->body << "</svg>\n";
    out.close();
    if (!out) surface->status = CAIRO_STATUS_WRITE_ERROR;
    surface->body.clear();
}

void cairo_surface_destroy(cairo_surface_t* surface) {
    if (!surface) return;
    cairo_surface_finish(surface);
    if (surface->canvas >= 0) js_canvas_free(surface->canvas);
    delete surface;
}

cairo_t* cairo_create(cairo_surface_t* target) {
    auto* cr = new _cairo;
    cr->surface = target;
    if (target->status != CAIRO_STATUS_SUCCESS) cr->status = target->status;
    return cr;
}

void cairo_destroy(cairo_t* cr) {
    if (!cr) return;
    // Clips still set (a save without its restore) end with the context, as in cairo.
    undo_clips(cr, cr->st.clips);
    for (auto it = cr->saved.rbegin(); it != cr->saved.rend(); ++it) undo_clips(cr, it->clips);
    delete cr;
}

cairo_status_t cairo_status(cairo_t* cr) {
    return cr->status;
}

void cairo_save(cairo_t* cr) {
    cr->saved.push_back(cr->st);
    cr->st.clips = 0;
}

void cairo_restore(cairo_t* cr) {
    if (cr->saved.empty()) {
        cr->status = CAIRO_STATUS_INVALID_RESTORE;
        return;
    }
    undo_clips(cr, cr->st.clips);
    cr->st = cr->saved.back();
    cr->saved.pop_back();
}

void cairo_scale(cairo_t* cr, double sx, double sy) {
    Matrix& m = cr->st.m;
    m.a *= sx;
    m.b *= sx;
    m.c *= sy;
    m.d *= sy;
}

void cairo_rotate(cairo_t* cr, double angle) {
    Matrix& m = cr->st.m;
    const double cs = std::cos(angle), sn = std::sin(angle);
    const Matrix o = m;
    m.a = o.a * cs + o.c * sn;
    m.b = o.b * cs + o.d * sn;
    m.c = -o.a * sn + o.c * cs;
    m.d = -o.b * sn + o.d * cs;
}

void cairo_set_source_rgb(cairo_t* cr, double red, double green, double blue) {
    cairo_set_source_rgba(cr, red, green, blue, 1);
}

void cairo_set_source_rgba(cairo_t* cr, double red, double green, double blue, double alpha) {
    auto clamp = [](double v) { return v < 0 ? 0 : v > 1 ? 1 : v; };
    cr->st.r = clamp(red);
    cr->st.g = clamp(green);
    cr->st.b = clamp(blue);
    cr->st.alpha = clamp(alpha);
}

void cairo_set_line_width(cairo_t* cr, double width) {
    cr->st.line_width = width < 0 ? 0 : width;
}

void cairo_set_dash(cairo_t* cr, const double* dashes, int num_dashes, double) {
    cr->st.dash.assign(dashes, dashes + (num_dashes > 0 ? num_dashes : 0));
}

void cairo_move_to(cairo_t* cr, double x, double y) {
    point(cr, 'M', x, y);
}

void cairo_rel_move_to(cairo_t* cr, double dx, double dy) {
    if (!cr->has_point) return;
    cr->st.m.linear(dx, dy);
    const double x = cr->x + dx, y = cr->y + dy;
    cr->path += cr->path.empty() ? "M" : " M";
    cr->path += num(x) + " " + num(y);
    cr->x = x;
    cr->y = y;
}

void cairo_line_to(cairo_t* cr, double x, double y) {
    point(cr, cr->has_point ? 'L' : 'M', x, y);
}

void cairo_rectangle(cairo_t* cr, double x, double y, double w, double h) {
    point(cr, 'M', x, y);
    point(cr, 'L', x + w, y);
    point(cr, 'L', x + w, y + h);
    point(cr, 'L', x, y + h);
    cr->path += " Z";
    point(cr, 'M', x, y);  // cairo: the current point is the rectangle's origin again
}

void cairo_arc(cairo_t* cr, double xc, double yc, double radius, double angle1, double angle2) {
    while (angle2 < angle1) angle2 += 2 * M_PI;
    point(cr, cr->has_point ? 'L' : 'M', xc + radius * std::cos(angle1),
          yc + radius * std::sin(angle1));
    // Elliptical arc pieces of at most half a turn (SVG's arc command is ambiguous for a whole
    // one); positive angles turn from +x towards +y, SVG's sweep flag 1 in y-down space. The
    // radius in device units: the charts scale uniformly.
    const double r = radius * cr->st.m.scale();
    const int pieces = std::max(1, static_cast<int>(std::ceil((angle2 - angle1) / M_PI - 1e-9)));
    for (int i = 1; i <= pieces; ++i) {
        const double t = angle1 + (angle2 - angle1) * i / pieces;
        double x = xc + radius * std::cos(t), y = yc + radius * std::sin(t);
        cr->st.m.apply(x, y);
        cr->path += " A" + num(r) + " " + num(r) + " 0 0 1 " + num(x) + " " + num(y);
        cr->x = x;
        cr->y = y;
    }
}

void cairo_paint(cairo_t* cr) {
    const std::string keep = cr->path;
    const double w = cr->surface->width, h = cr->surface->height;
    cr->path = "M0 0 L" + num(w) + " 0 L" + num(w) + " " + num(h) + " L0 " + num(h) + " Z";
    fill_path(cr);
    cr->path = keep;
}

void cairo_fill_preserve(cairo_t* cr) {
    fill_path(cr);
}

void cairo_fill(cairo_t* cr) {
    fill_path(cr);
    clear_path(cr);
}

void cairo_stroke(cairo_t* cr) {
    if (drawable(cr) && !cr->path.empty()) {
        const State& s = cr->st;
        const double k = s.m.scale();
        std::string dash;
        for (double v : s.dash) dash += (dash.empty() ? "" : " ") + num(v * k);
        if (svg(cr)) {
            cr->surface->body += "<path d=\"" + cr->path + "\" fill=\"none\" stroke=\"" + rgb(s) +
                                 "\" stroke-width=\"" + num(s.line_width * k) + "\"" +
                                 (s.alpha < 1 ? " stroke-opacity=\"" + num(s.alpha) + "\"" : "") +
                                 (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") +
                                 "/>\n";
        } else {
            js_canvas_stroke(cr->surface->canvas, cr->path.c_str(), rgba(s).c_str(),
                             s.line_width * k, dash.c_str());
        }
    }
    clear_path(cr);
}

void cairo_clip(cairo_t* cr) {
    if (drawable(cr) && !cr->path.empty()) {
        if (svg(cr)) {
            const std::string id = "clip" + std::to_string(++cr->surface->clip_ids);
            cr->surface->body += "<clipPath id=\"" + id + "\"><path d=\"" + cr->path +
                                 "\"/></clipPath>\n<g clip-path=\"url(#" + id + ")\">\n";
        } else {
            js_canvas_clip(cr->surface->canvas, cr->path.c_str());
        }
        ++cr->st.clips;
    }
    clear_path(cr);
}

void cairo_select_font_face(cairo_t* cr, const char*, cairo_font_slant_t,
                            cairo_font_weight_t weight) {
    cr->st.bold = weight == CAIRO_FONT_WEIGHT_BOLD;
}

void cairo_set_font_size(cairo_t* cr, double size) {
    cr->st.font_size = size;
}

void cairo_text_extents(cairo_t* cr, const char* utf8, cairo_text_extents_t* e) {
    const double w = js_text_width(utf8, font_css(cr->st, cr->st.font_size).c_str());
    *e = {};
    e->width = w;
    e->height = cr->st.font_size;
    e->y_bearing = -0.76 * cr->st.font_size;  // DejaVu Sans's cap height, about
    e->x_advance = w;
}

void cairo_show_text(cairo_t* cr, const char* utf8) {
    if (!cr->has_point || !drawable(cr)) return;
    const State& s = cr->st;
    const Matrix& m = s.m;
    if (svg(cr)) {
        cr->surface->body += "<text transform=\"matrix(" + num(m.a, 4) + " " + num(m.b, 4) + " " +
                             num(m.c, 4) + " " + num(m.d, 4) + " " + num(cr->x) + " " + num(cr->y) +
                             ")\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"" +
                             num(s.font_size) + "\"" + (s.bold ? " font-weight=\"bold\"" : "") +
                             " fill=\"" + rgb(s) + "\"" +
                             (s.alpha < 1 ? " fill-opacity=\"" + num(s.alpha) + "\"" : "") + ">" +
                             xml_escape(utf8) + "</text>\n";
    } else {
        js_canvas_text(cr->surface->canvas, utf8, font_css(s, s.font_size).c_str(), rgba(s).c_str(),
                       m.a, m.b, m.c, m.d, cr->x, cr->y);
    }
    // The current point advances by the text's width, in user space.
    double dx = js_text_width(utf8, font_css(s, s.font_size).c_str()), dy = 0;
    m.linear(dx, dy);
    cr->x += dx;
    cr->y += dy;
}

}  // extern "C"
