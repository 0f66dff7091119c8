// The lesson handout PDF: pages planned first (text wrapped and measured, pictures placed), then
// drawn with cairo's toy text API in DejaVu Sans / DejaVu Sans Mono (the fonts the app's charts
// use; UTF-8, math symbols included). Index:
//   [SECTION] text: fonts, UTF-8, wrapping
//   [SECTION] pages: plan
//   [SECTION] pages: draw
//   [SECTION] the handout
#include "handout/handout.hpp"

#include <cairo-pdf.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/output_file.hpp"

namespace convlab::handout {

namespace {

// A4 landscape, in points.
constexpr double kPageW = 841.89, kPageH = 595.28, kMargin = 34;
constexpr double kContentW = kPageW - 2 * kMargin;
constexpr double kContentBottom = kPageH - kMargin - 4;  // the footer is under it
constexpr double kBody = 10.5;                           // narration and checks
constexpr double kMono = 9.5;                            // indented formulas, descriptors

// [SECTION] text: fonts, UTF-8, wrapping

enum class Face { Sans, Bold, Mono };
struct Rgb {
    double r, g, b;
};
constexpr Rgb kInk{0.1, 0.1, 0.1}, kDim{0.42, 0.42, 0.42}, kGood{0.04, 0.45, 0.18},
    kBad{0.76, 0.08, 0.08}, kAsk{0.62, 0.32, 0.0};

void set_font(cairo_t* cr, Face f, double size) {
    cairo_select_font_face(cr, f == Face::Mono ? "DejaVu Sans Mono" : "DejaVu Sans",
                           CAIRO_FONT_SLANT_NORMAL,
                           f == Face::Bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double width_of(cairo_t* cr, const std::string& s) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    return e.x_advance;
}

// The length of the UTF-8 sequence starting with byte c (0: not a valid lead byte).
std::size_t utf8_length(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

// Valid UTF-8 (an invalid byte becomes U+FFFD) with tabs as four spaces and no control
// characters: cairo refuses an invalid string and would end the whole document with it.
std::string clean_text(std::string_view s) {
    std::string r;
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = utf8_length(c);
        bool ok = n > 0 && i + n <= s.size();
        for (std::size_t k = 1; ok && k < n; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
        if (ok && n == 3) {  // no overlong forms, no surrogates
            const auto c1 = static_cast<unsigned char>(s[i + 1]);
            ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
        }
        if (ok && n == 4) {
            const auto c1 = static_cast<unsigned char>(s[i + 1]);
            ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
        }
        if (!ok) {
            r += "\xEF\xBF\xBD";
            ++i;
        } else if (c == '\t') {
            r += "    ";
            ++i;
        } else if (c < 0x20 && c != '\n') {
            r += ' ';
            ++i;
        } else {
            r.append(s.substr(i, n));
            i += n;
        }
    }
    return r;
}

// Code points of a valid UTF-8 string.
std::size_t code_points(std::string_view s) {
    std::size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

// The byte offset after the first `n` code points of s.
std::size_t after_code_points(std::string_view s, std::size_t n) {
    std::size_t i = 0;
    for (; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n-- == 0) break;
    return i;
}

struct Style {
    Face face = Face::Sans;
    double size = kBody;
    Rgb colour = kInk;
};

// A line of text placed in a text box: its left at `x` from the box's left, `gap` more space
// above it than a line's height (a paragraph's start; dropped at the top of a box), and an
// optional second text right-aligned at the box's right (a page number).
struct Line {
    std::string text;
    Style style;
    double x = 0;
    double gap = 0;
    std::string right;
    double height() const { return style.size * 1.36; }
};

class Writer {
  public:
    Writer(cairo_t* cr, double width) : cr_(cr), width_(width) {}
    std::vector<Line> lines;
    double width() const { return width_; }

    double measure(const std::string& text, Style st) {
        set_font(cr_, st.face, st.size);
        return width_of(cr_, text);
    }

    // Prose whose first line also has `right` at the box's right (a page number): the text
    // wraps short of it.
    void prose_right(const std::string& text, Style st, const std::string& right) {
        const double keep = width_;
        width_ -= measure(right, st) + 18;
        const std::size_t at = lines.size();
        prose(text, st);
        width_ = keep;
        if (at < lines.size()) lines[at].right = right;
    }

    // A space of `g` points before the next line.
    void gap(double g) { gap_ = std::max(gap_, g); }

    // Words wrapped greedily at the width; the first line at first_x, the others at rest_x. A
    // word wider than a line is cut between two characters.
    void prose(const std::string& text, Style st, double first_x = 0, double rest_x = 0) {
        const std::string t = clean_text(text);
        set_font(cr_, st.face, st.size);
        std::string line;
        double x = first_x;
        const auto flush = [&] {
            push(line, st, x);
            line.clear();
            x = rest_x;
        };
        std::size_t i = 0;
        while (i < t.size()) {
            while (i < t.size() && t[i] == ' ') ++i;
            if (i >= t.size()) break;
            std::size_t j = t.find(' ', i);
            if (j == std::string::npos) j = t.size();
            std::string word = t.substr(i, j - i);
            i = j;
            const std::string cand = line.empty() ? word : line + " " + word;
            if (width_of(cr_, cand) <= width_ - x) {
                line = cand;
                continue;
            }
            if (!line.empty()) flush();
            while (!word.empty() && width_of(cr_, word) > width_ - x) {  // longer than a line
                std::size_t keep = code_points(word);
                while (keep > 1 &&
                       width_of(cr_, word.substr(0, after_code_points(word, keep))) > width_ - x)
                    --keep;
                line = word.substr(0, after_code_points(word, keep));
                word.erase(0, line.size());
                flush();
            }
            line = word;
        }
        if (!line.empty() || lines.empty() || gap_ > 0) flush();
    }

    // A line as written (its spaces kept: aligned columns), in the monospaced face; a line too
    // long is broken at its last space that fits (else between two characters), its
    // continuation indented two characters past the line's own indent.
    void verbatim(const std::string& text, Style st) {
        std::string t = clean_text(text);
        set_font(cr_, st.face, st.size);
        const double cw = std::max(1.0, width_of(cr_, "0"));
        const auto cols = static_cast<std::size_t>(std::max(8.0, std::floor(width_ / cw)));
        std::size_t indent = 0;
        while (indent < t.size() && t[indent] == ' ') ++indent;
        const std::size_t cont = std::min(indent + 2, cols / 2);
        bool first = true;
        while (true) {
            const std::size_t room = first ? cols : cols - cont;
            if (code_points(t) <= room) {
                push((first ? "" : std::string(cont, ' ')) + t, st, 0);
                break;
            }
            std::size_t cut = after_code_points(t, room);
            const std::size_t space = t.rfind(' ', cut);
            if (space != std::string::npos && space > (first ? indent : 0)) cut = space;
            push((first ? "" : std::string(cont, ' ')) + t.substr(0, cut), st, 0);
            t.erase(0, cut);
            while (!t.empty() && t[0] == ' ') t.erase(0, 1);
            first = false;
            if (t.empty()) break;
        }
    }

    // A narration as the lesson panel flows it (lesson::flow_narration): paragraphs of prose,
    // indented lines (formulas, worked sums) verbatim, list items with a hanging indent.
    void narration(std::string_view text, Style st) {
        const std::string flowed = lesson::flow_narration(text);
        std::size_t b = 0;
        while (b <= flowed.size()) {
            std::size_t e = flowed.find('\n', b);
            if (e == std::string::npos) e = flowed.size();
            const std::string line = flowed.substr(b, e - b);
            b = e + 1;
            if (line.find_first_not_of(" \t") == std::string::npos) {
                gap(st.size * 0.6);
                continue;
            }
            if (line[0] == ' ' || line[0] == '\t') {
                verbatim(line, {Face::Mono, kMono, st.colour});
                continue;
            }
            // "- ", "* " or "1. ": the item's other lines start under its text.
            std::size_t marker = 0;
            if (line.size() > 2 && (line[0] == '-' || line[0] == '*') && line[1] == ' ') marker = 2;
            std::size_t d = 0;
            while (d < line.size() && line[d] >= '0' && line[d] <= '9') ++d;
            if (d > 0 && d + 1 < line.size() && line[d] == '.' && line[d + 1] == ' ')
                marker = d + 2;
            set_font(cr_, st.face, st.size);
            prose(line, st, 0, marker ? width_of(cr_, line.substr(0, marker)) : 0);
        }
    }

    double height(std::size_t from = 0, std::size_t to = std::string::npos) const {
        to = std::min(to, lines.size());
        double h = 0;
        for (std::size_t i = from; i < to; ++i)
            h += lines[i].height() + (i > from ? lines[i].gap : 0);
        return h;
    }

  private:
    void push(const std::string& text, Style st, double x) {
        lines.push_back({text, st, x, lines.empty() ? 0 : gap_, {}});
        gap_ = 0;
    }
    cairo_t* cr_;
    double width_;
    double gap_ = 0;
};

// How many of lines[from...] fit in a box `h` high (at least one, so that every page advances).
std::size_t fitting(const std::vector<Line>& lines, std::size_t from, double h) {
    double y = 0;
    std::size_t i = from;
    for (; i < lines.size(); ++i) {
        y += lines[i].height() + (i > from ? lines[i].gap : 0);
        if (y > h + 0.01) break;  // a box made exactly as high as its text holds all of it
    }
    return std::max<std::size_t>(i - from, from < lines.size() ? 1 : 0);
}

// [SECTION] pages: plan

struct Rect {
    double x = 0, y = 0, w = 0, h = 0;
};

struct Page {
    std::vector<Line> heading;  // the page's title and the grey line under it, wrapped
    double heading_h = 0;
    const Picture* picture = nullptr;
    Rect picture_at;
    std::vector<Line> text;
    Rect text_at;
};

// Sets the page's heading (its title, then `sub` in grey) and returns the top of the content
// under it and its rule.
double heading_lines(cairo_t* cr, Page& p, const std::string& title, double size,
                     const std::string& sub) {
    Writer w(cr, kContentW);
    w.prose(title, {Face::Bold, size, kInk});
    if (!sub.empty()) w.prose(sub, {Face::Sans, 9.5, kDim});
    p.heading_h = w.height();
    p.heading = std::move(w.lines);
    return kMargin + p.heading_h + 12;
}

// The picture's largest size inside box b (at most 1 pt a pixel), at the box's top left.
Rect place(const Picture& pic, const Rect& b) {
    if (pic.w <= 0 || pic.h <= 0) return {b.x, b.y, 0, 0};
    const double s = std::min({b.w / pic.w, b.h / pic.h, 1.0});
    return {b.x, b.y, pic.w * s, pic.h * s};
}

// Pages for a picture with its text (a step, or its answers): the picture beside a text column
// or above full-width text, whichever draws it larger with all the text on the page; when the
// text fits neither way, the picture over the top half and the rest of the text on pages of
// their own, headed "(continued)".
void picture_pages(cairo_t* cr, std::vector<Page>& pages, const std::string& title,
                   const std::string& sub, const Picture* pic,
                   const std::function<void(Writer&)>& fill) {
    Page first;
    const double top = heading_lines(cr, first, title, 16, sub);
    const double ch = kContentBottom - top, gap = 16;
    const bool has_pic = pic && pic->w > 0 && pic->h > 0;
    const double side_w = kContentW * 0.36;
    Writer full(cr, kContentW), side(cr, side_w);
    fill(full);
    fill(side);
    const double full_h = full.height(), side_h = side.height();
    Rect stacked_pic{}, side_pic{};
    bool stacked_ok = false, side_ok = false;
    if (has_pic) {
        const double room = ch - full_h - gap;
        if (room >= 0.3 * ch) {
            stacked_pic = place(*pic, {kMargin, top, kContentW, room});
            stacked_ok = true;
        }
        if (side_h <= ch) {
            side_pic = place(*pic, {kMargin, top, kContentW - side_w - gap, ch});
            side_ok = true;
        }
    }
    std::vector<Line>* lines = &full.lines;
    if (!has_pic) {
        first.text_at = {kMargin, top, kContentW, ch};
    } else if (side_ok && (!stacked_ok || side_pic.w > stacked_pic.w)) {
        first.picture_at = side_pic;
        first.text_at = {kMargin + side_pic.w + gap, top, kContentW - side_pic.w - gap, ch};
        lines = &side.lines;  // wrapped for the column (at most the width the picture leaves)
    } else {
        if (!stacked_ok) stacked_pic = place(*pic, {kMargin, top, kContentW, ch * 0.55});
        first.picture_at = stacked_pic;
        first.text_at = {kMargin, top + stacked_pic.h + gap, kContentW, ch - stacked_pic.h - gap};
    }
    if (has_pic) first.picture = pic;
    std::size_t n = fitting(*lines, 0, first.text_at.h);
    first.text.assign(lines->begin(), lines->begin() + static_cast<std::ptrdiff_t>(n));
    pages.push_back(std::move(first));
    for (std::size_t at = n; at < lines->size(); at += n) {
        // Only the stacked layout continues (the side one holds all its text): full-width lines.
        Page more;
        const double t = heading_lines(cr, more, title + " (continued)", 16, sub);
        more.text_at = {kMargin, t, kContentW, kContentBottom - t};
        n = fitting(*lines, at, more.text_at.h);
        more.text.assign(lines->begin() + static_cast<std::ptrdiff_t>(at),
                         lines->begin() + static_cast<std::ptrdiff_t>(at + n));
        if (!more.text.empty()) more.text.front().gap = 0;
        pages.push_back(std::move(more));
    }
}

// Text-only pages (the title page and its continuation).
void text_pages(cairo_t* cr, std::vector<Page>& pages, const std::string& title, double size,
                const std::string& sub, const std::vector<Line>& lines) {
    for (std::size_t at = 0; at < lines.size() || at == 0;) {
        Page p;
        const double top = heading_lines(cr, p, at == 0 ? title : title + " (continued)",
                                         at == 0 ? size : 16, sub);
        p.text_at = {kMargin, top, kContentW, kContentBottom - top};
        const std::size_t n = fitting(lines, at, p.text_at.h);
        p.text.assign(lines.begin() + static_cast<std::ptrdiff_t>(at),
                      lines.begin() + static_cast<std::ptrdiff_t>(at + n));
        if (!p.text.empty()) p.text.front().gap = 0;
        pages.push_back(std::move(p));
        at += n;
        if (n == 0) break;
    }
}

// [SECTION] pages: draw

void colour(cairo_t* cr, Rgb c) {
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

void draw_lines(cairo_t* cr, const std::vector<Line>& lines, const Rect& box) {
    double y = box.y;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const Line& l = lines[i];
        if (i > 0) y += l.gap;
        set_font(cr, l.style.face, l.style.size);
        colour(cr, l.style.colour);
        const double base = y + l.style.size;  // a line's baseline, its ascent under its top
        cairo_move_to(cr, box.x + l.x, base);
        cairo_show_text(cr, l.text.c_str());
        if (!l.right.empty()) {
            cairo_move_to(cr, box.x + box.w - width_of(cr, l.right), base);
            cairo_show_text(cr, l.right.c_str());
        }
        y += l.height();
    }
}

struct SurfaceDeleter {
    void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};

// The picture as a cairo image (kept alive until the document is finished: the PDF surface
// reads it when it writes the page).
cairo_surface_t* image_of(const Picture& pic) {
    cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, pic.w, pic.h);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) return s;
    cairo_surface_flush(s);
    unsigned char* data = cairo_image_surface_get_data(s);
    const int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; y < pic.h; ++y) {
        auto* row =
            reinterpret_cast<std::uint32_t*>(data + static_cast<std::ptrdiff_t>(y) * stride);
        const unsigned char* p = pic.rgba.data() + static_cast<std::size_t>(y) * pic.w * 4;
        for (int x = 0; x < pic.w; ++x, p += 4)
            row[x] = 0xFF000000u | std::uint32_t{p[0]} << 16 | std::uint32_t{p[1]} << 8 | p[2];
    }
    cairo_surface_mark_dirty(s);
    return s;
}

void draw_page(cairo_t* cr, const Page& p, int number, int total, const std::string& footer,
               std::vector<std::unique_ptr<cairo_surface_t, SurfaceDeleter>>& images) {
    draw_lines(cr, p.heading, {kMargin, kMargin, kContentW, 0});
    const double y = kMargin + p.heading_h;
    cairo_set_line_width(cr, 0.6);
    colour(cr, {0.75, 0.75, 0.75});
    cairo_move_to(cr, kMargin, y + 5);
    cairo_line_to(cr, kPageW - kMargin, y + 5);
    cairo_stroke(cr);
    if (p.picture && p.picture_at.w > 0) {
        images.emplace_back(image_of(*p.picture));
        cairo_surface_t* img = images.back().get();
        cairo_save(cr);
        cairo_translate(cr, p.picture_at.x, p.picture_at.y);
        cairo_scale(cr, p.picture_at.w / p.picture->w, p.picture_at.h / p.picture->h);
        cairo_set_source_surface(cr, img, 0, 0);
        cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_GOOD);
        cairo_paint(cr);
        cairo_restore(cr);
        // A thin frame: a light canvas keeps its edge on white paper.
        cairo_set_line_width(cr, 0.5);
        colour(cr, {0.6, 0.6, 0.6});
        cairo_rectangle(cr, p.picture_at.x, p.picture_at.y, p.picture_at.w, p.picture_at.h);
        cairo_stroke(cr);
    }
    draw_lines(cr, p.text, p.text_at);
    // The footer: the lesson's title (shortened with an ellipsis past 80% of the width) and the
    // page number.
    set_font(cr, Face::Sans, 8.5);
    colour(cr, kDim);
    std::string f = footer;
    if (width_of(cr, f) > kContentW * 0.8) {
        std::size_t keep = code_points(f);
        while (keep > 1 &&
               width_of(cr, f.substr(0, after_code_points(f, keep)) + "\u2026") > kContentW * 0.8)
            --keep;
        f = f.substr(0, after_code_points(f, keep)) + "\u2026";
    }
    cairo_move_to(cr, kMargin, kPageH - 26 + 8.5);
    cairo_show_text(cr, f.c_str());
    const std::string n = "page " + std::to_string(number) + " of " + std::to_string(total);
    cairo_move_to(cr, kPageW - kMargin - width_of(cr, n), kPageH - 26 + 8.5);
    cairo_show_text(cr, n.c_str());
}

// [SECTION] the handout

// "mb1ic1iw5oc1kw3pw1" for a step with a problem; a network's layers otherwise.
std::string problem_of(const lesson::Step& s) {
    if (s.has_problem) return s.problem_text;
    std::string r;
    for (const auto& layer : s.network.layers)
        if (!layer.problem_text.empty())
            r += (r.empty() ? "network: " : ", ") + layer.name + " " + layer.problem_text;
    return r.empty() ? "a network" : r;
}

std::string step_title(const lesson::Lesson& l, std::size_t k) {
    std::string t = "Step " + std::to_string(k + 1) + " of " + std::to_string(l.steps.size());
    if (!l.steps[k].title.empty()) t += ": " + l.steps[k].title;
    return t;
}

std::string step_sub(const lesson::Lesson& l, std::size_t k, const StepPage& sp) {
    const lesson::Step& s = l.steps[k];
    std::string r = l.title + "  ·  view " + sp.plan.request.view + "  ·  problem " + problem_of(s);
    if (!s.map.empty()) r += "  ·  map " + s.map;
    return r;
}

// Whether a tensor block (name, index prefix) of the step shows one of its hidden cells.
bool hidden_block(const StepPage& sp, const std::string& tensor, const std::vector<dim_t>& at) {
    const lesson::NamedTensor* t = sp.result.find(tensor);
    if (!t) return false;
    for (const auto& h : sp.plan.hidden)
        if (app::covers(h, tensor, at, t->value.dims())) return true;
    return false;
}

// The highlights and checks of a step; hiding: the values of its hidden cells stay "?".
void results_text(Writer& w, const lesson::Step& s, const StepPage& sp, bool hiding) {
    if (!sp.plan.highlights.empty()) {
        w.gap(kBody * 0.7);
        std::string h = "Outlined in the picture:  ";
        for (std::size_t i = 0; i < sp.plan.highlights.size(); ++i) {
            const auto& hl = sp.plan.highlights[i];
            h += (i ? "   ·   " : "") + hl.text + " = " +
                 (hiding && hidden_block(sp, hl.tensor, hl.at) ? "?" : hl.values);
        }
        w.prose(h, {Face::Sans, kBody, kAsk});
    }
    const auto& rs = sp.result.checks;
    if (rs.empty()) return;
    w.gap(kBody * 0.7);
    w.prose("Checks against the engine: " + std::to_string(sp.result.passed()) + " of " +
                std::to_string(rs.size()) + " pass",
            {Face::Bold, kBody, kInk});
    for (std::size_t i = 0; i < rs.size(); ++i) {
        const bool hid = hiding && i < s.checks.size() &&
                         (hidden_block(sp, s.checks[i].tensor, s.checks[i].at) ||
                          hidden_block(sp, s.checks[i].equals_tensor, s.checks[i].equals_at));
        const std::string tag = rs[i].passed ? "PASS  " : "FAIL  ";
        const std::string what =
            hid ? s.checks[i].tensor + ": its value is on the answers pages" : rs[i].message;
        const Style st{Face::Sans, kBody, rs[i].passed ? kGood : kBad};
        w.prose(tag + what, st, 0, w.measure(tag, st));
    }
}

struct Sink {
    OutputFile* file;
    std::string error;  // the first write error ("cannot write PATH: why")
};

cairo_status_t write_to(void* closure, const unsigned char* data, unsigned int length) {
    auto* sink = static_cast<Sink*>(closure);
    try {
        sink->file->write(data, length);
    } catch (const std::exception& e) {
        if (sink->error.empty()) sink->error = e.what();
        return CAIRO_STATUS_WRITE_ERROR;
    }
    return CAIRO_STATUS_SUCCESS;
}

struct ContextDeleter {
    void operator()(cairo_t* c) const { cairo_destroy(c); }
};

// "steps 1-3" / "step 4".
std::string step_range(std::size_t a, std::size_t b) {
    return a == b ? "step " + std::to_string(a + 1)
                  : "steps " + std::to_string(a + 1) + "-" + std::to_string(b + 1);
}

// The title page's text; pages of the steps numbered from first_step_page.
std::vector<Line> title_text(cairo_t* cr, const lesson::Lesson& l, const Settings& settings,
                             const std::vector<int>& step_page, int answers_page,
                             const std::vector<std::size_t>& answered) {
    Writer w(cr, kContentW);
    const Style head{Face::Bold, 13, kInk};
    w.prose("For: " + l.audience, {Face::Sans, 12, kInk});
    if (!l.summary.empty()) {
        w.gap(12);
        w.prose("What it teaches", head);
        w.narration(l.summary, {Face::Sans, 11.5, kInk});
    }
    // The problems, consecutive steps with the same one together.
    w.gap(12);
    std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> groups;
    for (std::size_t k = 0; k < l.steps.size(); ++k) {
        const std::string p = problem_of(l.steps[k]);
        if (!groups.empty() && groups.back().first == p)
            groups.back().second.second = k;
        else
            groups.push_back({p, {k, k}});
    }
    w.prose(groups.size() == 1 ? "The problem (benchdnn descriptor)"
                               : "The problems (benchdnn descriptors)",
            head);
    for (const auto& g : groups) {
        const std::string range =
            groups.size() == 1 ? "every step" : step_range(g.second.first, g.second.second);
        w.prose_right(g.first, {Face::Mono, 10.5, kInk}, range);
    }
    w.gap(12);
    w.prose("Steps", head);
    for (std::size_t k = 0; k < l.steps.size(); ++k)
        w.prose_right(
            "Step " + std::to_string(k + 1) + ":  " +
                (l.steps[k].title.empty() ? "(view " + l.steps[k].view + ")" : l.steps[k].title),
            {Face::Sans, 11.5, kInk}, "page " + std::to_string(step_page[k]));
    if (!answered.empty()) {
        std::string which;
        for (std::size_t i = 0; i < answered.size(); ++i)
            which += (i ? ", " : "") + std::to_string(answered[i] + 1);
        w.prose_right("Answers: the cells marked ? revealed (step" +
                          std::string(answered.size() > 1 ? "s " : " ") + which + ")",
                      {Face::Sans, 11.5, kInk}, "page " + std::to_string(answers_page));
    }
    w.gap(14);
    w.prose(settings.pictures + (answered.empty()
                                     ? std::string(".")
                                     : ". Cells marked ? are for you to predict: the answers "
                                       "follow the steps, on pages of their own."),
            {Face::Sans, 9.5, kDim});
    return std::move(w.lines);
}

}  // namespace

Summary write_pdf(const std::string& path, const lesson::Lesson& l,
                  const std::vector<StepPage>& steps, const Settings& settings) {
    if (steps.size() != l.steps.size())
        throw Error("handout: " + std::to_string(steps.size()) + " step pages for " +
                    std::to_string(l.steps.size()) + " steps");
    OutputFile file(path);
    Sink sink{&file, {}};
    // The pictures outlive the document: the PDF surface reads them when it writes a page.
    std::vector<std::unique_ptr<cairo_surface_t, SurfaceDeleter>> images;
    std::unique_ptr<cairo_surface_t, SurfaceDeleter> surface(
        cairo_pdf_surface_create_for_stream(write_to, &sink, kPageW, kPageH));
    if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS)
        file.fail(std::string("cairo: ") +
                  cairo_status_to_string(cairo_surface_status(surface.get())));
    const std::string meta_title = clean_text(l.title);
    cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_TITLE, meta_title.c_str());
    cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_SUBJECT,
                                   "ConvLab lesson handout");
    cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_CREATOR,
                                   "ConvLab (convlab lesson handout)");
    std::unique_ptr<cairo_t, ContextDeleter> context(cairo_create(surface.get()));
    cairo_t* cr = context.get();

    std::vector<Page> step_pages, answer_pages;
    std::vector<int> first_of_step;
    std::vector<std::size_t> answered;
    for (std::size_t k = 0; k < l.steps.size(); ++k) {
        const lesson::Step& s = l.steps[k];
        const StepPage& sp = steps[k];
        const bool hiding = !sp.plan.hidden.empty();
        first_of_step.push_back(static_cast<int>(step_pages.size()));
        picture_pages(cr, step_pages, step_title(l, k), step_sub(l, k, sp), &sp.canvas,
                      [&](Writer& w) {
                          w.narration(lesson::narration_part(s.narration, !hiding), {});
                          if (hiding) {
                              w.gap(kBody * 0.7);
                              w.prose(
                                  "Predict the cells marked ?, then turn to the answers at "
                                  "the end of the handout.",
                                  {Face::Bold, kBody, kAsk});
                          }
                          results_text(w, s, sp, hiding);
                      });
        if (!hiding) continue;
        answered.push_back(k);
        picture_pages(cr, answer_pages, "Answers: " + step_title(l, k), step_sub(l, k, sp),
                      sp.revealed.w > 0 ? &sp.revealed : nullptr, [&](Writer& w) {
                          const std::string a = answer_part(s.narration);
                          if (!a.empty()) w.narration(a, {});
                          w.gap(kBody * 0.7);
                          w.prose("The cells marked ?:", {Face::Bold, kBody, kInk});
                          for (const auto& h : sp.plan.hidden)
                              w.prose(h.text + " = " + h.values, {Face::Sans, kBody, kInk});
                          results_text(w, s, sp, false);
                      });
    }
    // The title pages number the others, so their own count comes first (a long list of steps
    // takes a second title page).
    std::vector<Page> title_pages;
    for (int guess = 1; guess <= 8; ++guess) {
        std::vector<int> page_of(first_of_step);
        for (int& p : page_of) p += guess + 1;
        const int answers_page = guess + static_cast<int>(step_pages.size()) + 1;
        title_pages.clear();
        const std::string sub =
            "ConvLab lesson handout  ·  " + std::filesystem::path(l.file).filename().string();
        text_pages(cr, title_pages, l.title, 24, sub,
                   title_text(cr, l, settings, page_of, answers_page, answered));
        if (static_cast<int>(title_pages.size()) == guess) break;
    }
    std::vector<const Page*> all;
    for (const auto* part : {&title_pages, &step_pages, &answer_pages})
        for (const Page& p : *part) all.push_back(&p);
    const int total = static_cast<int>(all.size());
    for (int i = 0; i < total; ++i) {
        draw_page(cr, *all[static_cast<std::size_t>(i)], i + 1, total, clean_text(l.title), images);
        cairo_show_page(cr);
    }
    const cairo_status_t drawn = cairo_status(cr);
    context.reset();
    cairo_surface_finish(surface.get());
    if (!sink.error.empty()) throw Error(sink.error);
    if (drawn != CAIRO_STATUS_SUCCESS)
        file.fail(std::string("cairo: ") + cairo_status_to_string(drawn));
    if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS)
        file.fail(std::string("cairo: ") +
                  cairo_status_to_string(cairo_surface_status(surface.get())));
    surface.reset();
    images.clear();
    file.commit();
    Summary sum;
    sum.pages = total;
    sum.title_pages = static_cast<int>(title_pages.size());
    sum.step_pages = static_cast<int>(step_pages.size());
    sum.answer_pages = static_cast<int>(answer_pages.size());
    return sum;
}

Picture trim_blank_margins(const Picture& pic, int keep) {
    if (pic.w <= 0 || pic.h <= 0) return pic;
    const auto px = [&](int x, int y) {
        const unsigned char* p = pic.rgba.data() + (static_cast<std::size_t>(y) * pic.w + x) * 4;
        return std::uint32_t{p[0]} << 16 | std::uint32_t{p[1]} << 8 | p[2];
    };
    const std::uint32_t bg = px(pic.w - 1, pic.h - 1);
    int x0 = pic.w, y0 = pic.h, x1 = -1, y1 = -1;
    for (int y = 0; y < pic.h; ++y)
        for (int x = 0; x < pic.w; ++x)
            if (px(x, y) != bg) {
                x0 = std::min(x0, x);
                x1 = std::max(x1, x);
                y0 = std::min(y0, y);
                y1 = std::max(y1, y);
            }
    if (x1 < 0) return pic;  // nothing drawn: the canvas as it is
    x0 = std::max(0, x0 - keep);
    y0 = std::max(0, y0 - keep);
    x1 = std::min(pic.w - 1, x1 + keep);
    y1 = std::min(pic.h - 1, y1 + keep);
    Picture r;
    r.w = x1 - x0 + 1;
    r.h = y1 - y0 + 1;
    r.rgba.resize(static_cast<std::size_t>(r.w) * static_cast<std::size_t>(r.h) * 4);
    for (int y = 0; y < r.h; ++y)
        std::copy_n(pic.rgba.begin() + (static_cast<std::ptrdiff_t>(y0 + y) * pic.w + x0) * 4,
                    r.w * 4, r.rgba.begin() + static_cast<std::ptrdiff_t>(y) * r.w * 4);
    return r;
}

std::string answer_part(std::string_view narration) {
    const std::string before = lesson::narration_part(narration, false);
    const std::string all = lesson::narration_part(narration, true);
    if (all.size() <= before.size() + 1) return "";
    return all.substr(before.size() + 1);
}

}  // namespace convlab::handout
