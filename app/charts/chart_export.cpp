// Draws a chart's primitives (charts/chart_paint.hpp) with cairo (SVG, PNG, PDF surfaces). Index:
//   [SECTION] replay
//   [SECTION] export
#include "charts/chart_export.hpp"
#include "charts/chart_paint.hpp"
#include "export/xml_escape.hpp"

#include "convlab/output_file.hpp"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer: fontconfig (behind cairo's text) keeps its font cache for the life of the
// process and reports it as leaked at exit; that cache is not ours to free (FcFini would break
// any other fontconfig user in the process).
extern "C" const char* __lsan_default_suppressions() {
    return "leak:libfontconfig.so\n";
}
#endif

namespace convlab::charts {

using app::xml_escape;

namespace {

const char* const kFont = "DejaVu Sans";

// [SECTION] replay

void font(cairo_t* cr, double size, bool bold) {
    cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double text_width(cairo_t* cr, const std::string& s) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    return e.x_advance;
}

void color(cairo_t* cr, app::Rgba c) {
    cairo_set_source_rgba(cr, (c & 0xff) / 255.0, ((c >> 8) & 0xff) / 255.0,
                          ((c >> 16) & 0xff) / 255.0, ((c >> 24) & 0xff) / 255.0);
}

// The painter's sizes for a page, its texts measured with cairo's font.
ChartPaint page_paint(cairo_t* cr, double width, double height) {
    ChartPaint p = file_paint(width, height);
    p.text_width = [cr](const std::string& s, float size, bool bold) {
        font(cr, size, bold);
        return static_cast<float>(text_width(cr, s));
    };
    return p;
}

// Fills the current path with p.fill, then outlines it with p.stroke (0: not either), and clears
// it.
void fill_stroke(cairo_t* cr, const DrawPrim& p) {
    if (p.fill) {
        color(cr, p.fill);
        if (!p.stroke) {
            cairo_fill(cr);
            return;
        }
        cairo_fill_preserve(cr);
    }
    color(cr, p.stroke);
    cairo_set_line_width(cr, p.width);
    cairo_stroke(cr);  // a transparent one when neither: it only clears the path
}

}  // namespace

app::PrimCounts replay(cairo_t* cr, const std::vector<DrawPrim>& prims) {
    app::PrimCounts n;
    for (const DrawPrim& p : prims) {
        switch (p.kind) {
            case DrawPrim::Kind::Rect:
                cairo_rectangle(cr, p.x0, p.y0, p.x1 - p.x0, p.y1 - p.y0);
                fill_stroke(cr, p);
                ++n.rects;
                break;
            case DrawPrim::Kind::Line:
                color(cr, p.stroke);
                cairo_set_line_width(cr, p.width);
                if (p.dash > 0) {
                    const double d[] = {p.dash, p.gap};
                    cairo_set_dash(cr, d, 2, 0);
                }
                cairo_move_to(cr, p.x0, p.y0);
                cairo_line_to(cr, p.x1, p.y1);
                cairo_stroke(cr);
                cairo_set_dash(cr, nullptr, 0, 0);
                ++n.lines;
                break;
            case DrawPrim::Kind::Circle:
                cairo_arc(cr, p.x0, p.y0, p.size, 0, 2 * M_PI);
                fill_stroke(cr, p);
                ++n.circles;
                break;
            case DrawPrim::Kind::Text: {
                font(cr, p.size, p.bold);
                color(cr, p.stroke);
                cairo_save(cr);
                double x = p.x0;
                if (p.centred) x = 0.5 * (p.x0 + p.x1 - text_width(cr, p.text));
                cairo_move_to(cr, x, p.y0);
                if (p.angle != 0) cairo_rotate(cr, p.angle);
                cairo_rel_move_to(cr, 0, 0.8 * p.size);
                cairo_show_text(cr, p.text.c_str());
                cairo_restore(cr);
                ++n.texts;
                break;
            }
            case DrawPrim::Kind::Image:  // a view's cells: no chart paints one
                ++n.images;
                break;
        }
    }
    return n;
}

namespace {

// [SECTION] export

struct SurfaceDeleter {
    void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
    void operator()(cairo_t* c) const { cairo_destroy(c); }
};

void check(cairo_status_t st, const std::string& path) {
    if (st != CAIRO_STATUS_SUCCESS)
        throw Error("cannot write chart '" + path + "': " + cairo_status_to_string(st));
}

// Cairo draws the text of an SVG as glyph outlines, so nothing in it can be searched or read by
// a screen reader: a <title> (the chart's title) and a <desc> (subtitle, verification status,
// machine record, notes, the command that reproduces it) go in as the root's first children.
void add_svg_text(const Chart& chart, const std::string& tmp, const std::string& path) {
    std::string svg;
    {
        std::ifstream in(tmp, std::ios::binary);
        svg.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof()) throw Error("cannot write chart '" + path + "': read back");
    }
    const std::size_t root = svg.find("<svg");
    const std::size_t end = root == std::string::npos ? root : svg.find('>', root);
    if (end == std::string::npos)
        throw Error("cannot write chart '" + path + "': cairo wrote no <svg> element");
    std::string desc = chart.subtitle;
    for (const std::string& f : chart.footer) desc += (desc.empty() ? "" : "\n") + f;
    const std::string text =
        "\n<title>" + xml_escape(chart.title) + "</title>\n<desc>" + xml_escape(desc) + "</desc>";
    svg.insert(end + 1, text);
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << svg;
    out.close();
    if (!out) throw Error("cannot write chart '" + path + "': rewriting the SVG failed");
}

}  // namespace

const char* format_extension(Format f) {
    switch (f) {
        case Format::Svg:
            return "svg";
        case Format::Png:
            return "png";
        case Format::Pdf:
            return "pdf";
    }
    return "?";
}

app::PrimCounts export_chart(const Chart& chart, const std::string& path, Format format,
                             const ExportSize& size) {
    app::PrimCounts drawn;
    // Cairo writes by file name: it writes the temporary of an OutputFile (output_file.hpp),
    // which is removed on any failure and renamed onto the target (through a symlink) at the end.
    OutputFile file(path);
    const std::string& tmp = file.temp_path();
    {
        std::unique_ptr<cairo_surface_t, SurfaceDeleter> surface;
        double scale = 1;
        switch (format) {
            case Format::Svg:
                surface.reset(cairo_svg_surface_create(tmp.c_str(), size.width, size.height));
                break;
            case Format::Pdf:
                surface.reset(cairo_pdf_surface_create(tmp.c_str(), size.width, size.height));
                break;
            case Format::Png:
                scale = size.png_scale;
                surface.reset(cairo_image_surface_create(
                    CAIRO_FORMAT_RGB24, static_cast<int>(std::lround(size.width * scale)),
                    static_cast<int>(std::lround(size.height * scale))));
                break;
        }
        check(cairo_surface_status(surface.get()), path);
        if (format == Format::Pdf) {
            cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_TITLE,
                                           chart.title.c_str());
            std::string subject = chart.verification;
            if (!chart.footer.empty()) subject += "; " + chart.footer.back();  // Reproduce: ...
            cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_SUBJECT,
                                           subject.c_str());
            cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_CREATOR,
                                           "ConvLab (convlab bench)");
        }
        std::unique_ptr<cairo_t, ContextDeleter> cr(cairo_create(surface.get()));
        cairo_scale(cr.get(), scale, scale);
        std::vector<DrawPrim> prims;
        paint_chart(chart, page_paint(cr.get(), size.width, size.height), prims);
        drawn = replay(cr.get(), prims);
        check(cairo_status(cr.get()), path);
        cr.reset();
        if (format == Format::Png) {
            check(cairo_surface_write_to_png(surface.get(), tmp.c_str()), path);
        } else {
            cairo_surface_finish(surface.get());
            check(cairo_surface_status(surface.get()), path);
        }
    }
    if (format == Format::Svg) add_svg_text(chart, tmp, path);
    file.commit();
    return drawn;
}

std::vector<DrawPrim> file_prims(const Chart& chart, const ExportSize& size) {
    std::unique_ptr<cairo_surface_t, SurfaceDeleter> surface(
        cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
    std::unique_ptr<cairo_t, ContextDeleter> cr(cairo_create(surface.get()));
    std::vector<DrawPrim> prims;
    paint_chart(chart, page_paint(cr.get(), size.width, size.height), prims);
    return prims;
}

std::vector<std::string> export_chart_all(const Chart& chart, const std::string& dir,
                                          const ExportSize& size) {
    std::vector<std::string> paths;
    for (Format f : {Format::Svg, Format::Png, Format::Pdf}) {
        const std::string path =
            (std::filesystem::path(dir) / (chart.id + "." + format_extension(f))).string();
        export_chart(chart, path, f, size);
        paths.push_back(path);
    }
    return paths;
}

}  // namespace convlab::charts
