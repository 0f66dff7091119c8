// Draws a chart model with cairo (SVG, PNG, PDF surfaces). Index:
//   [SECTION] text helpers
//   [SECTION] layout
//   [SECTION] drawing
//   [SECTION] export
#include "charts/chart_export.hpp"
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

// [SECTION] text helpers

void font(cairo_t* cr, double size, bool bold = false) {
    cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double text_width(cairo_t* cr, const std::string& s) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    return e.x_advance;
}

void color(cairo_t* cr, Color c) {
    cairo_set_source_rgba(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0, c.a / 255.0);
}

// Splits text into lines of at most `width` (at word boundaries; a longer word is cut).
std::vector<std::string> wrap(cairo_t* cr, const std::string& text, double width) {
    std::vector<std::string> lines;
    std::string line;
    std::size_t i = 0;
    while (i <= text.size()) {
        std::size_t j = text.find(' ', i);
        if (j == std::string::npos) j = text.size();
        const std::string word = text.substr(i, j - i);
        const std::string cand = line.empty() ? word : line + " " + word;
        if (!line.empty() && text_width(cr, cand) > width) {
            lines.push_back(line);
            line = word;
        } else {
            line = cand;
        }
        i = j + 1;
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

void text_at(cairo_t* cr, double x, double y, const std::string& s, double align = 0) {
    cairo_move_to(cr, x - align * text_width(cr, s), y);
    cairo_show_text(cr, s.c_str());
}

// [SECTION] layout

struct Layout {
    double W = 0, H = 0;
    double left = 0, right = 0, top = 0, bottom = 0;  // plot area
    double legend_x = 0, legend_w = 0;
    std::vector<std::string> subtitle;  // wrapped
    std::vector<std::string> footer;    // wrapped
    double footer_top = 0;
    double label_h = 0;  // rotated category labels
    double slot_h = 0;   // slot names (turned) or numbers under the bars
    Axis xa, ya;
    double ymin = 0, ymax = 1;
    double px(double x) const { return left + xa.frac(x) * (right - left); }
    double py(double y) const { return bottom - ya.frac(y) * (bottom - top); }
};

constexpr double kPad = 18;
constexpr double kLabelAngle = -55 * 3.14159265358979 / 180;
constexpr double kFooterSize = 9.5;
constexpr double kTickSize = 10;
constexpr double kTagSize = 9;

Layout layout(cairo_t* cr, const Chart& c, double W, double H) {
    Layout L;
    L.W = W;
    L.H = H;
    L.legend_w = 220;
    L.legend_x = W - kPad - L.legend_w;
    font(cr, 12);
    L.subtitle = wrap(cr, c.subtitle, W - 2 * kPad);
    font(cr, kFooterSize);
    for (const std::string& f : c.footer)
        for (const std::string& l : wrap(cr, f, W - 2 * kPad)) L.footer.push_back(l);
    L.footer_top = H - kPad - kFooterSize * 1.3 * static_cast<double>(L.footer.size());
    font(cr, kTickSize);
    double longest = 0;
    for (const std::string& s : c.x.categories) longest = std::max(longest, text_width(cr, s));
    L.label_h = longest * std::sin(-kLabelAngle) + 12;
    L.top = kPad + 26 + 16 * static_cast<double>(L.subtitle.size()) + 14;
    L.left = kPad + 62;
    L.right = L.legend_x - 18;
    bool slot_labels = false;
    double tag_w = 0;  // longest slot name, written turned under its bar
    font(cr, kTagSize);
    for (const Series& s : c.series)
        for (const Mark& m : s.marks) {
            slot_labels |= !m.label.empty();
            if (!m.tag.empty()) tag_w = std::max(tag_w, text_width(cr, m.tag));
        }
    L.slot_h = tag_w > 0 ? tag_w + 8 : slot_labels ? 12 : 0;
    L.bottom = L.footer_top - 14 - 18 - L.label_h - L.slot_h;
    L.xa.min = c.x.min;
    L.xa.max = c.x.max > c.x.min ? c.x.max : c.x.min + 1;
    L.ya.min = c.y.min;
    L.ya.max = c.y.max > c.y.min ? c.y.max : c.y.min + 1;
    L.ya.log = c.y.log;
    L.ymin = L.ya.min;
    L.ymax = L.ya.max;
    return L;
}

// [SECTION] drawing

void draw_fail_marker(cairo_t* cr, const Layout& L, const Mark& m) {
    const double x0 = L.px(m.x0), x1 = L.px(m.x1);
    const double w = std::max(4.0, x1 - x0);
    const double cx = 0.5 * (x0 + x1);
    const double h = std::min(14.0, 0.08 * (L.bottom - L.top));
    cairo_save(cr);
    cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
    cairo_set_line_width(cr, 1.6);
    cairo_move_to(cr, cx - w / 2, L.bottom - 2);
    cairo_line_to(cr, cx + w / 2, L.bottom - 2 - h);
    cairo_move_to(cr, cx - w / 2, L.bottom - 2 - h);
    cairo_line_to(cr, cx + w / 2, L.bottom - 2);
    cairo_stroke(cr);
    cairo_restore(cr);
}

// Diagonal hatching over a rectangle (a noisy measurement's bar).
void hatch(cairo_t* cr, double x, double y, double w, double h) {
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    cairo_set_source_rgba(cr, 0, 0, 0, 0.35);
    cairo_set_line_width(cr, 0.8);
    for (double d = -h; d < w; d += 6) {
        cairo_move_to(cr, x + d, y + h);
        cairo_line_to(cr, x + d + h, y);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

void draw_swatch(cairo_t* cr, double x, double y, const LegendEntry& e) {
    if (e.failed) {
        cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
        cairo_set_line_width(cr, 1.6);
        cairo_move_to(cr, x, y - 10);
        cairo_line_to(cr, x + 14, y);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + 14, y - 10);
        cairo_stroke(cr);
        return;
    }
    color(cr, e.color);
    if (e.style == SeriesStyle::LinePoints) {
        cairo_set_line_width(cr, 2);
        if (e.dashed) {
            const double d[] = {4, 3};
            cairo_set_dash(cr, d, 2, 0);
        }
        if (e.connect) {
            cairo_move_to(cr, x, y - 5);
            cairo_line_to(cr, x + 14, y - 5);
            cairo_stroke(cr);
        }
        cairo_set_dash(cr, nullptr, 0, 0);
        cairo_arc(cr, x + 7, y - 5, 3.2, 0, 2 * M_PI);
        cairo_fill(cr);
    } else {
        cairo_rectangle(cr, x, y - 10, 14, 10);
        cairo_fill_preserve(cr);
        cairo_set_source_rgba(cr, 0, 0, 0, 0.35);
        cairo_set_line_width(cr, 0.6);
        cairo_stroke(cr);
    }
}

void draw(cairo_t* cr, const Chart& c, double W, double H) {
    const Layout L = layout(cr, c, W, H);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);

    // Title, subtitle; a red tag when not everything was verified.
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    font(cr, 20, true);
    text_at(cr, kPad, kPad + 18, c.title);
    if (!c.verified) {
        font(cr, 13, true);
        cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
        text_at(cr, W - kPad, kPad + 16, "NOT ALL MEASUREMENTS VERIFIED (see footer)", 1);
    }
    font(cr, 12);
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
    for (std::size_t i = 0; i < L.subtitle.size(); ++i)
        text_at(cr, kPad, kPad + 42 + 16 * static_cast<double>(i), L.subtitle[i]);

    // Grid and y ticks.
    font(cr, kTickSize);
    cairo_set_line_width(cr, 0.6);
    for (const Tick& t : c.y.ticks) {
        if (t.value < L.ymin - 1e-9 || t.value > L.ymax + 1e-9) continue;
        const double y = L.py(t.value);
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, L.left, y);
        cairo_line_to(cr, L.right, y);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        text_at(cr, L.left - 6, y + 3.5, t.label, 1);
    }
    // Alternate category shading, to tell the layers apart.
    for (std::size_t i = 0; i < c.x.categories.size(); i += 2) {
        cairo_set_source_rgba(cr, 0, 0, 0, 0.025);
        cairo_rectangle(cr, L.px(static_cast<double>(i)), L.top,
                        L.px(static_cast<double>(i) + 1) - L.px(static_cast<double>(i)),
                        L.bottom - L.top);
        cairo_fill(cr);
    }
    // Y axis title (rotated).
    cairo_save(cr);
    font(cr, 12);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    cairo_move_to(cr, kPad + 12, 0.5 * (L.top + L.bottom) + 0.5 * text_width(cr, c.y.title));
    cairo_rotate(cr, -M_PI / 2);
    cairo_show_text(cr, c.y.title.c_str());
    cairo_restore(cr);

    // Marks, clipped to the plot. Noisy values get a '~' over them, drawn after the clip.
    std::vector<std::pair<double, double>> tildes;  // (x, y) pixels of the mark tops
    auto add_tilde = [&](double x, double y) {
        for (auto& t : tildes)
            if (std::fabs(t.first - x) < 0.5) {
                t.second = std::min(t.second, y);
                return;
            }
        tildes.emplace_back(x, y);
    };
    cairo_save(cr);
    cairo_rectangle(cr, L.left, L.top - 1, L.right - L.left, L.bottom - L.top + 1);
    cairo_clip(cr);
    for (const Series& s : c.series) {
        if (s.style == SeriesStyle::LinePoints) continue;  // drawn over the bars below
        for (const Mark& m : s.marks) {
            if (m.kind == MarkKind::Failed) {
                draw_fail_marker(cr, L, m);
                continue;
            }
            const double x0 = L.px(m.x0), x1 = L.px(m.x1);
            const double y0 = L.py(m.y0), y1 = L.py(m.y1);
            color(cr, s.color);
            cairo_rectangle(cr, x0, std::min(y0, y1), x1 - x0, std::fabs(y1 - y0));
            cairo_fill_preserve(cr);
            cairo_set_source_rgba(cr, 1, 1, 1, 0.7);
            cairo_set_line_width(cr, 0.5);
            cairo_stroke(cr);
            if (m.noisy) {
                hatch(cr, x0, std::min(y0, y1), x1 - x0, std::fabs(y1 - y0));
                add_tilde(0.5 * (x0 + x1), std::min(y0, y1));
            }
            if (std::isfinite(m.lo) && std::isfinite(m.hi)) {
                const double cx = 0.5 * (x0 + x1), cap = std::min(3.0, 0.3 * (x1 - x0));
                cairo_set_source_rgba(cr, 0.15, 0.15, 0.15, 0.8);
                cairo_set_line_width(cr, 0.8);
                cairo_move_to(cr, cx, L.py(m.lo));
                cairo_line_to(cr, cx, L.py(m.hi));
                cairo_move_to(cr, cx - cap, L.py(m.lo));
                cairo_line_to(cr, cx + cap, L.py(m.lo));
                cairo_move_to(cr, cx - cap, L.py(m.hi));
                cairo_line_to(cr, cx + cap, L.py(m.hi));
                cairo_stroke(cr);
            }
        }
    }
    for (const RefLine& r : c.ref_lines) {
        const double y = L.py(r.y);
        color(cr, r.color);
        cairo_set_line_width(cr, 1.4);
        if (r.dashed) {
            const double d[] = {6, 4};
            cairo_set_dash(cr, d, 2, 0);
        }
        cairo_move_to(cr, L.left, y);
        cairo_line_to(cr, L.right, y);
        cairo_stroke(cr);
        cairo_set_dash(cr, nullptr, 0, 0);
    }
    for (const Series& s : c.series) {
        if (s.style != SeriesStyle::LinePoints) continue;
        color(cr, s.color);
        cairo_set_line_width(cr, 1.6);
        if (s.dashed) {
            const double d[] = {4, 3};
            cairo_set_dash(cr, d, 2, 0);
        }
        // Consecutive layers are joined; a missing layer leaves a gap.
        for (std::size_t k = 0; s.connect && k + 1 < s.marks.size(); ++k) {
            const Mark& a = s.marks[k];
            const Mark& b = s.marks[k + 1];
            if (b.x0 - a.x0 > 1.5) continue;
            cairo_move_to(cr, L.px(a.x0), L.py(a.y0));
            cairo_line_to(cr, L.px(b.x0), L.py(b.y0));
        }
        cairo_stroke(cr);
        cairo_set_dash(cr, nullptr, 0, 0);
        for (const Mark& m : s.marks) {
            if (m.x1 > m.x0) {  // a level across the layer
                color(cr, s.color);
                cairo_set_line_width(cr, 2.2);
                cairo_move_to(cr, L.px(m.x0), L.py(m.y0));
                cairo_line_to(cr, L.px(m.x1), L.py(m.y0));
                cairo_stroke(cr);
            }
            const double cx = 0.5 * (L.px(m.x0) + L.px(m.x1));
            cairo_arc(cr, cx, L.py(m.y0), 3.6, 0, 2 * M_PI);
            color(cr, s.color);
            cairo_fill_preserve(cr);
            cairo_set_source_rgb(cr, 1, 1, 1);
            cairo_set_line_width(cr, 1);
            cairo_stroke(cr);
            if (m.noisy) {  // a ring around the dot, and the '~'
                color(cr, s.color);
                cairo_set_line_width(cr, 1);
                cairo_arc(cr, cx, L.py(m.y0), 6.5, 0, 2 * M_PI);
                cairo_stroke(cr);
                add_tilde(cx, L.py(m.y0) - 6);
            }
        }
    }
    cairo_restore(cr);
    font(cr, 13, true);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    for (const auto& [x, y] : tildes) text_at(cr, x, std::max(y - 3, L.top - 2), "~", 0.5);
    // Axes frame.
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, L.left, L.top);
    cairo_line_to(cr, L.left, L.bottom);
    cairo_line_to(cr, L.right, L.bottom);
    cairo_stroke(cr);

    // Slot names turned under their bars (or slot numbers), then rotated category labels.
    const double label_top = L.bottom + 4 + L.slot_h;
    cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
    for (const Series& s : c.series)
        for (const Mark& m : s.marks) {
            const double cx = 0.5 * (L.px(m.x0) + L.px(m.x1));
            if (!m.tag.empty()) {
                // As large as the bar is wide (a turned line of text is about 0.75 em thick).
                const double fs = std::clamp((L.px(m.x1) - L.px(m.x0)) / 0.75, 6.0, kTagSize);
                font(cr, fs);
                cairo_save(cr);
                cairo_move_to(cr, cx + 0.35 * fs, L.bottom + 4 + text_width(cr, m.tag));
                cairo_rotate(cr, -M_PI / 2);
                cairo_show_text(cr, m.tag.c_str());
                cairo_restore(cr);
            } else if (!m.label.empty()) {
                font(cr, 8.5);
                text_at(cr, cx, L.bottom + 11, m.label, 0.5);
            }
        }
    font(cr, kTickSize);
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    for (std::size_t i = 0; i < c.x.categories.size(); ++i) {
        const double x = L.px(static_cast<double>(i) + 0.5);
        cairo_save(cr);
        cairo_move_to(cr, x + 3, label_top + 4);
        cairo_rotate(cr, kLabelAngle);
        cairo_rel_move_to(cr, -text_width(cr, c.x.categories[i]), 0);
        cairo_show_text(cr, c.x.categories[i].c_str());
        cairo_restore(cr);
    }
    font(cr, 12);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    text_at(cr, 0.5 * (L.left + L.right), label_top + L.label_h + 12, c.x.title, 0.5);

    // Legend: series, then reference lines (dashed swatch), then the headline figures in a box,
    // all in the column right of the plot so nothing covers a bar.
    double ly = L.top + 12;
    font(cr, 11);
    auto legend_text = [&](const std::string& label) {
        const auto lines = wrap(cr, label, L.legend_w - 24);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        for (std::size_t i = 0; i < lines.size(); ++i)
            text_at(cr, L.legend_x + 20, ly + 14 * static_cast<double>(i), lines[i]);
        ly += 14 * static_cast<double>(lines.size()) + 6;
    };
    for (const LegendEntry& e : c.legend) {
        draw_swatch(cr, L.legend_x, ly, e);
        legend_text(e.label);
    }
    for (const RefLine& r : c.ref_lines) {
        color(cr, r.color);
        cairo_set_line_width(cr, 1.6);
        if (r.dashed) {
            const double d[] = {4, 2.5};
            cairo_set_dash(cr, d, 2, 0);
        }
        cairo_move_to(cr, L.legend_x, ly - 5);
        cairo_line_to(cr, L.legend_x + 14, ly - 5);
        cairo_stroke(cr);
        cairo_set_dash(cr, nullptr, 0, 0);
        legend_text(r.label);
    }
    if (!c.annotations.empty()) {
        ly += 8;
        font(cr, 12.5, true);
        std::vector<std::string> lines;
        for (const std::string& a : c.annotations) {
            for (const std::string& l : wrap(cr, a, L.legend_w - 16)) lines.push_back(l);
            lines.emplace_back();  // a gap between annotations
        }
        lines.pop_back();
        const double h = 16 * static_cast<double>(lines.size()) + 10;
        cairo_set_source_rgba(cr, 1, 1, 0.9, 1);
        cairo_rectangle(cr, L.legend_x - 4, ly - 4, L.legend_w, h);
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, 0.6, 0.55, 0.3);
        cairo_set_line_width(cr, 0.8);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        for (std::size_t i = 0; i < lines.size(); ++i)
            text_at(cr, L.legend_x + 4, ly + 12 + 16 * static_cast<double>(i), lines[i]);
    }

    // Footer: verification status (red when not all verified), machine, noise, command.
    font(cr, kFooterSize);
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    cairo_set_line_width(cr, 0.6);
    cairo_move_to(cr, kPad, L.footer_top - 10);
    cairo_line_to(cr, W - kPad, L.footer_top - 10);
    cairo_stroke(cr);
    for (std::size_t i = 0; i < L.footer.size(); ++i) {
        const bool first_block = i == 0 || (L.footer[i].rfind("Machine:", 0) != 0 && i < 2 &&
                                            L.footer[0].rfind("NOT", 0) == 0);
        if (!c.verified && first_block) {
            cairo_set_source_rgb(cr, 0.75, 0.05, 0.05);
        } else {
            cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
        }
        text_at(cr, kPad, L.footer_top + kFooterSize * 1.3 * static_cast<double>(i), L.footer[i]);
    }
}

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

void export_chart(const Chart& chart, const std::string& path, Format format,
                  const ExportSize& size) {
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
        draw(cr.get(), chart, size.width, size.height);
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
