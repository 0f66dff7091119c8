// A benchmark chart as drawing primitives (charts/chart_paint.hpp). Index:
//   [SECTION] primitives and text helpers
//   [SECTION] sizes of the two outputs
//   [SECTION] the painter: layout, plot, marks, labels, legend
#include "charts/chart_paint.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace convlab::charts {

namespace {

// [SECTION] primitives and text helpers

constexpr Rgba rgba(int r, int g, int b, int a = 255) {
    return static_cast<Rgba>(r) | static_cast<Rgba>(g) << 8 | static_cast<Rgba>(b) << 16 |
           static_cast<Rgba>(a) << 24;
}
Rgba rgba(Color c) {
    return rgba(c.r, c.g, c.b, c.a);
}

constexpr Rgba kInk = rgba(25, 25, 25);
constexpr Rgba kSoftInk = rgba(77, 77, 77);
constexpr Rgba kGrid = rgba(224, 224, 224);
constexpr Rgba kFail = rgba(204, 26, 26);
constexpr Rgba kAxis = rgba(51, 51, 51);
constexpr float kPi = 3.14159265f;
constexpr float kLabelAngle = -55 * kPi / 180;  // turned category labels
constexpr float kAscent = 0.8f;                 // baseline below a line's top, in em

struct Out {
    std::vector<DrawPrim>& v;
    const ChartPaint& p;
    float width(const std::string& s, float size, bool bold = false) const {
        return p.text_width ? p.text_width(s, size, bold)
                            : 0.55f * size * static_cast<float>(s.size());
    }
    void rect(float x0, float y0, float x1, float y1, Rgba fill, Rgba stroke, float w = 1) {
        v.push_back(app::rect_prim(x0, y0, x1, y1, fill, stroke, w));
    }
    void line(float x0, float y0, float x1, float y1, Rgba c, float w, float dash = 0,
              float gap = 0) {
        v.push_back(app::line_prim(x0, y0, x1, y1, c, w, dash, gap));
    }
    void circle(float x, float y, float r, Rgba fill, Rgba stroke, float w = 1) {
        v.push_back(app::circle_prim(x, y, r, fill, stroke, w));
    }
    // `s` with its line's top at y: from x (align 0), centred on x (0.5) or ending at x (1).
    void text(float x, float y, const std::string& s, float size, Rgba c, float align = 0,
              bool bold = false) {
        if (s.empty()) return;
        DrawPrim d;
        d.kind = DrawPrim::Kind::Text;
        d.x0 = x - align * width(s, size, bold);
        d.y0 = y;
        d.x1 = d.x0;
        d.size = size;
        d.stroke = c;
        d.bold = bold;
        d.text = s;
        v.push_back(std::move(d));
    }
    // `s` turned by `angle` about its line's top-left corner (x, y).
    void turned(float x, float y, const std::string& s, float size, Rgba c, float angle) {
        text(x, y, s, size, c);
        if (!s.empty()) v.back().angle = angle;
    }
    // Splits text into lines of at most `w` (at spaces; '\n' ends a line; a longer word stays).
    std::vector<std::string> wrap(const std::string& text, float size, float w, bool bold = false) {
        std::vector<std::string> lines;
        std::size_t start = 0;
        while (start <= text.size()) {
            std::size_t nl = text.find('\n', start);
            if (nl == std::string::npos) nl = text.size();
            const std::string para = text.substr(start, nl - start);
            std::string line;
            std::size_t i = 0;
            while (i <= para.size()) {
                std::size_t j = para.find(' ', i);
                if (j == std::string::npos) j = para.size();
                const std::string word = para.substr(i, j - i);
                const std::string cand = line.empty() ? word : line + " " + word;
                if (!line.empty() && width(cand, size, bold) > w) {
                    lines.push_back(line);
                    line = word;
                } else {
                    line = cand;
                }
                i = j + 1;
            }
            lines.push_back(line);
            start = nl + 1;
        }
        while (!lines.empty() && lines.back().empty()) lines.pop_back();
        return lines;
    }
    // `s`, cut to at most `w` with ".." at the end.
    std::string fit(const std::string& s, float size, float w) {
        if (width(s, size) <= w) return s;
        std::string cut = s;
        while (!cut.empty() && width(cut + "..", size) > w) cut.pop_back();
        return cut + "..";
    }
};

}  // namespace

// [SECTION] sizes of the two outputs

ChartPaint file_paint(double width, double height) {
    ChartPaint p;
    p.x1 = static_cast<float>(width);
    p.y1 = static_cast<float>(height);
    return p;
}

ChartPaint screen_paint(float x0, float y0, float x1, float y1, float fs, bool compact) {
    ChartPaint p;
    p.x0 = x0;
    p.y0 = y0;
    p.x1 = x1;
    p.y1 = y1;
    p.pad = fs * (compact ? 0.5f : 0.7f);
    p.gap = fs;
    p.title = fs * (compact ? 1.0f : 1.15f);
    p.subtitle = fs * 0.78f;
    p.tick = fs * 0.72f;
    p.tag = fs * 0.65f;
    p.legend = fs * 0.75f;
    p.annotation = fs * 0.8f;
    p.footer = fs * 0.7f;
    p.legend_w = std::clamp((x1 - x0) * 0.24f, fs * 9, fs * 15);
    // Room for the bars: six letters wide, four lines high (three in a short window, where a
    // lesson's one layer still reads).
    p.min_plot_w = fs * 6;
    p.min_plot_h = fs * (compact ? 3 : 4);
    p.one_line_subtitle = compact;
    p.card = true;
    p.bold = false;
    p.draw_footer = false;
    p.slot_names = false;
    p.line = 1.15f;
    p.unverified = "NOT ALL MEASUREMENTS VERIFIED (see under the chart)";
    return p;
}

// [SECTION] the painter

PaintedChart paint_chart(const Chart& c, const ChartPaint& p, std::vector<DrawPrim>& v) {
    Out o{v, p};
    PaintedChart res;
    const float W = p.x1 - p.x0;
    const float pad = p.pad;

    // The page or card, title, the unverified tag, the subtitle.
    o.rect(p.x0, p.y0, p.x1, p.y1, rgba(255, 255, 255), p.card ? rgba(200, 200, 200) : 0);
    o.text(p.x0 + pad, p.y0 + pad, c.title, p.title, kInk, 0, p.bold);
    if (!c.verified)
        o.text(p.x1 - pad, p.y0 + pad + 0.1f * p.title, p.unverified, p.subtitle * 1.08f, kFail, 1,
               p.bold);
    const std::vector<std::string> subtitle =
        p.one_line_subtitle ? std::vector<std::string>{o.fit(c.subtitle, p.subtitle, W - 2 * pad)}
                            : o.wrap(c.subtitle, p.subtitle, W - 2 * pad);
    const float sub_lh = p.subtitle * p.line;
    const float sub_top = p.y0 + pad + p.title * 1.4f;
    for (std::size_t i = 0; i < subtitle.size(); ++i)
        o.text(p.x0 + pad, sub_top + sub_lh * static_cast<float>(i), subtitle[i], p.subtitle,
               kSoftInk);
    const float top = sub_top + sub_lh * static_cast<float>(subtitle.size()) + p.subtitle * 1.1f;

    // Footer: verification status (red when not all verified), machine, noise, command.
    std::vector<std::string> footer;
    if (p.draw_footer)
        for (const std::string& f : c.footer)
            for (const std::string& l : o.wrap(f, p.footer, W - 2 * pad)) footer.push_back(l);
    const float foot_lh = p.footer * 1.3f;
    const float footer_top = p.y1 - pad - foot_lh * static_cast<float>(footer.size());
    if (!footer.empty()) {
        o.line(p.x0 + pad, footer_top - 4, p.x1 - pad, footer_top - 4, rgba(217, 217, 217), 0.6f);
        for (std::size_t i = 0; i < footer.size(); ++i) {
            const bool first_block = i == 0 || (footer[i].rfind("Machine:", 0) != 0 && i < 2 &&
                                                footer[0].rfind("NOT", 0) == 0);
            o.text(p.x0 + pad, footer_top + foot_lh * static_cast<float>(i), footer[i], p.footer,
                   !c.verified && first_block ? rgba(191, 13, 13) : rgba(64, 64, 64));
        }
    }
    const float x_title_top =
        (footer.empty() ? footer_top : footer_top - p.footer * 1.6f) - p.subtitle * 1.25f;

    // The plot rectangle: y tick labels and the turned y title on the left, the legend column
    // on the right, slot names and category labels under it.
    float tick_w = 0;
    for (const Tick& t : c.y.ticks) tick_w = std::max(tick_w, o.width(t.label, p.tick));
    float longest = 0;
    for (const std::string& s : c.x.categories) longest = std::max(longest, o.width(s, p.tick));
    const float legend_x = p.x1 - pad - p.legend_w;
    PlotBox P;
    P.left = p.x0 + pad + p.subtitle * 1.4f + tick_w + 6;
    P.right = legend_x - p.gap;
    P.top = top;
    // Labels that fit their slots stay level; turned ones take at most a quarter of the box's
    // height (longer ones are cut; the hover names the layer in full).
    const std::size_t slots = std::max<std::size_t>(1, c.x.categories.size());
    const bool flat = longest + p.tick * 1.4f <= P.width() / static_cast<float>(slots);
    const float sin_l = std::sin(-kLabelAngle);
    const float label_w =
        flat ? longest : std::min(longest, std::max(p.tick * 4, 0.25f * (p.y1 - p.y0) / sin_l));
    const float label_h = flat ? p.tick * 1.3f : label_w * sin_l + p.tick * 1.2f;
    bool slot_labels = false;
    float tag_w = 0;  // longest slot name, written turned under its bar
    for (const Series& s : c.series)
        for (const Mark& m : s.marks) {
            slot_labels |= !m.label.empty();
            if (p.slot_names && !m.tag.empty()) tag_w = std::max(tag_w, o.width(m.tag, p.tag));
        }
    const float slot_h = tag_w > 0 ? tag_w + 8 : slot_labels ? p.tag * 1.35f : 0;
    P.bottom = x_title_top - 6 - label_h - slot_h - 4;
    res.plot = P;
    res.drawable = P.width() >= p.min_plot_w && P.height() >= p.min_plot_h;
    if (!res.drawable) {
        o.text(p.x0 + pad, top, "(window too small for the chart)", p.subtitle / 0.78f, kSoftInk);
        return res;
    }

    Axis xa = c.x, ya = c.y;
    if (!(xa.max > xa.min)) xa.max = xa.min + 1;
    if (!(ya.max > ya.min)) ya.max = ya.min + 1;
    const auto px = [&](double x) { return P.left + static_cast<float>(xa.frac(x)) * P.width(); };
    const auto py = [&](double y) {
        return P.bottom - static_cast<float>(ya.frac(y)) * P.height();
    };

    // Grid and y ticks; every other category shaded, to tell the layers apart; the y title.
    for (const Tick& t : c.y.ticks) {
        if (t.value < ya.min - 1e-9 || t.value > ya.max + 1e-9) continue;
        const float y = py(t.value);
        o.line(P.left, y, P.right, y, kGrid, 0.8f);
        o.text(P.left - 6, y - 0.5f * p.tick, t.label, p.tick, kAxis, 1);
    }
    for (std::size_t i = 0; i < c.x.categories.size(); i += 2) {
        const double x = static_cast<double>(i);
        o.rect(px(x), P.top, px(x + 1), P.bottom, rgba(0, 0, 0, 7), 0);
    }
    {
        const std::string title = o.fit(c.y.title, p.subtitle, P.height());
        o.turned(p.x0 + pad, 0.5f * (P.top + P.bottom) + 0.5f * o.width(title, p.subtitle), title,
                 p.subtitle, kInk, -kPi / 2);
    }

    // Marks: bars and FAIL crosses, reference lines, then points and their lines. Axis::frac
    // clamps, so every mark stays inside the plot. Noisy values get a '~' over them.
    std::vector<std::pair<float, float>> tildes;  // (x, y) pixels of the mark tops
    const auto add_tilde = [&](float x, float y) {
        for (auto& t : tildes)
            if (std::fabs(t.first - x) < 0.5f) {
                t.second = std::min(t.second, y);
                return;
            }
        tildes.emplace_back(x, y);
    };
    std::optional<std::array<float, 4>> outline;  // the hovered mark's box
    const auto hovered = [&](std::size_t s, std::size_t k) {
        return p.hovered && p.hovered->first == s && p.hovered->second == k;
    };
    for (std::size_t si = 0; si < c.series.size(); ++si) {
        const Series& s = c.series[si];
        if (s.style == SeriesStyle::LinePoints) continue;  // drawn over the bars below
        for (std::size_t k = 0; k < s.marks.size(); ++k) {
            const Mark& m = s.marks[k];
            const float x0 = px(m.x0), x1 = px(m.x1);
            if (m.kind == MarkKind::Failed) {
                const float w = std::max(4.0f, x1 - x0), cx = 0.5f * (x0 + x1);
                const float h = std::min(14.0f, 0.08f * P.height()), b = P.bottom - 2;
                o.line(cx - w / 2, b, cx + w / 2, b - h, kFail, 1.8f);
                o.line(cx - w / 2, b - h, cx + w / 2, b, kFail, 1.8f);
                if (hovered(si, k))
                    outline = std::array<float, 4>{cx - w / 2, b - h, cx + w / 2, b};
                continue;
            }
            const float top_y = std::min(py(m.y0), py(m.y1)), bot_y = std::max(py(m.y0), py(m.y1));
            o.rect(x0, top_y, x1, bot_y, rgba(s.color), rgba(255, 255, 255, 180), 0.5f);
            if (m.noisy) {
                // Diagonal hatching, each stroke cut to the bar.
                const float h = bot_y - top_y;
                for (float d = -h; d < x1 - x0; d += 6) {
                    const float a = std::max(0.0f, -d), b = std::min(h, x1 - x0 - d);
                    if (b > a)
                        o.line(x0 + d + a, bot_y - a, x0 + d + b, bot_y - b, rgba(0, 0, 0, 90),
                               0.8f);
                }
                add_tilde(0.5f * (x0 + x1), top_y);
            }
            if (std::isfinite(m.lo) && std::isfinite(m.hi)) {
                const float cx = 0.5f * (x0 + x1), cap = std::min(3.0f, 0.3f * (x1 - x0));
                const Rgba w = rgba(38, 38, 38, 204);
                o.line(cx, py(m.lo), cx, py(m.hi), w, 0.8f);
                o.line(cx - cap, py(m.lo), cx + cap, py(m.lo), w, 0.8f);
                o.line(cx - cap, py(m.hi), cx + cap, py(m.hi), w, 0.8f);
            }
            if (hovered(si, k))
                outline = std::array<float, 4>{x0 - 1.5f, top_y - 1.5f, x1 + 1.5f, bot_y + 1.5f};
        }
    }
    for (const RefLine& r : c.ref_lines) {
        const float y = py(r.y);
        o.line(P.left, y, P.right, y, rgba(r.color), 1.4f, r.dashed ? 6 : 0, 4);
    }
    for (std::size_t si = 0; si < c.series.size(); ++si) {
        const Series& s = c.series[si];
        if (s.style != SeriesStyle::LinePoints) continue;
        // Consecutive layers are joined; a missing layer leaves a gap.
        for (std::size_t k = 0; s.connect && k + 1 < s.marks.size(); ++k) {
            const Mark& a = s.marks[k];
            const Mark& b = s.marks[k + 1];
            if (b.x0 - a.x0 > 1.5) continue;
            o.line(px(a.x0), py(a.y0), px(b.x0), py(b.y0), rgba(s.color), 1.6f, s.dashed ? 4 : 0,
                   3);
        }
        for (std::size_t k = 0; k < s.marks.size(); ++k) {
            const Mark& m = s.marks[k];
            const float y = py(m.y0), cx = 0.5f * (px(m.x0) + px(m.x1));
            if (m.x1 > m.x0) o.line(px(m.x0), y, px(m.x1), y, rgba(s.color), 2.2f);  // a level
            o.circle(cx, y, 3.6f, rgba(s.color), rgba(255, 255, 255));
            if (m.noisy) {  // a ring around the dot, and the '~'
                o.circle(cx, y, 6.5f, 0, rgba(s.color));
                add_tilde(cx, y - 6);
            }
            if (hovered(si, k))
                outline = std::array<float, 4>{std::min(cx - 6, px(m.x0) - 2), y - 6,
                                               std::max(cx + 6, px(m.x1) + 2), y + 6};
        }
    }
    if (outline)
        o.rect((*outline)[0], (*outline)[1], (*outline)[2], (*outline)[3], 0, rgba(0, 0, 0), 2.5f);
    const float tilde_fs = p.subtitle * 1.08f;
    for (const auto& [x, y] : tildes)
        o.text(x, std::max(y - 3, P.top - 2) - kAscent * tilde_fs, "~", tilde_fs, kInk, 0.5f, true);
    // Axes frame.
    o.line(P.left, P.top, P.left, P.bottom, kAxis, 1);
    o.line(P.left, P.bottom, P.right, P.bottom, kAxis, 1);

    // Slot names turned under their bars (or slot numbers), then the category labels.
    for (const Series& s : c.series)
        for (const Mark& m : s.marks) {
            const float cx = 0.5f * (px(m.x0) + px(m.x1));
            if (p.slot_names && !m.tag.empty()) {
                // As large as the bar is wide (a turned line of text is about 0.75 em thick).
                const float fs = std::clamp((px(m.x1) - px(m.x0)) / 0.75f, 6.0f, p.tag);
                o.turned(cx - 0.45f * fs, P.bottom + 4 + o.width(m.tag, fs), m.tag, fs,
                         rgba(64, 64, 64), -kPi / 2);
            } else if (!m.label.empty()) {
                o.text(cx, P.bottom + 3, m.label, p.tag * 0.95f, rgba(64, 64, 64), 0.5f);
            }
        }
    const float label_top = P.bottom + 4 + slot_h;
    for (std::size_t i = 0; i < c.x.categories.size(); ++i) {
        const float x = px(static_cast<double>(i) + 0.5);
        const std::string label = o.fit(c.x.categories[i], p.tick, label_w);
        if (flat) {
            o.text(x, label_top + 2, label, p.tick, rgba(38, 38, 38), 0.5f);
            continue;
        }
        // The text ends at (x + 3, label_top + 4) on its baseline, turned up to the left.
        const float w = o.width(label, p.tick), cs = std::cos(kLabelAngle),
                    sn = std::sin(kLabelAngle), asc = kAscent * p.tick;
        o.turned(x + 3 - w * cs + asc * sn, label_top + 4 - w * sn - asc * cs, label, p.tick,
                 rgba(38, 38, 38), kLabelAngle);
    }
    o.text(0.5f * (P.left + P.right), x_title_top, c.x.title, p.subtitle, kInk, 0.5f);

    // Legend: series, then reference lines (dashed swatch), then the headline figures in a box,
    // all in the column right of the plot so nothing covers a bar.
    const float lfs = p.legend, sw = lfs * 1.27f, lx = legend_x, text_w = p.legend_w - sw - 6;
    float ly = P.top;
    const auto legend_text = [&](const std::string& label) {
        const auto lines = o.wrap(label, lfs, text_w);
        for (std::size_t i = 0; i < lines.size(); ++i)
            o.text(lx + sw + 6, ly + lfs * 1.27f * static_cast<float>(i), lines[i], lfs, kInk);
        ly +=
            lfs * 1.27f * static_cast<float>(std::max<std::size_t>(1, lines.size())) + lfs * 0.55f;
    };
    for (const LegendEntry& e : c.legend) {
        const float y = ly + 0.1f * lfs, h = 0.7f * sw;
        if (e.failed) {
            o.line(lx, y + h, lx + sw, y, kFail, 1.8f);
            o.line(lx, y, lx + sw, y + h, kFail, 1.8f);
        } else if (e.style == SeriesStyle::LinePoints) {
            const float ym = y + 0.5f * h;
            if (e.connect) o.line(lx, ym, lx + sw, ym, rgba(e.color), 2, e.dashed ? 4 : 0, 3);
            o.circle(lx + 0.5f * sw, ym, 0.23f * sw, rgba(e.color), 0);
        } else {
            o.rect(lx, y, lx + sw, y + h, rgba(e.color), rgba(0, 0, 0, 90), 0.6f);
        }
        legend_text(e.label);
    }
    for (const RefLine& r : c.ref_lines) {
        const float y = ly + 0.45f * lfs;
        o.line(lx, y, lx + sw, y, rgba(r.color), 1.6f, r.dashed ? 4 : 0, 2.5f);
        legend_text(r.label);
    }
    if (!c.annotations.empty()) {
        ly += lfs * 0.7f;
        const float afs = p.annotation, alh = afs * 1.28f;
        std::vector<std::string> lines;
        for (const std::string& a : c.annotations) {
            for (const std::string& l : o.wrap(a, afs, p.legend_w - 16, p.bold)) lines.push_back(l);
            lines.emplace_back();  // a gap between annotations
        }
        lines.pop_back();
        // The box stays inside the chart's box: lines that do not fit are left out.
        std::size_t n = lines.size();
        while (n > 0 && ly + alh * static_cast<float>(n) + 6 > p.y1 - pad) --n;
        if (n > 0) {
            o.rect(lx - 4, ly, lx + p.legend_w, ly + alh * static_cast<float>(n) + 10,
                   rgba(255, 255, 230), rgba(153, 140, 77), 0.8f);
            for (std::size_t i = 0; i < n; ++i)
                o.text(lx + 4, ly + 5 + alh * static_cast<float>(i), lines[i], afs, kInk, 0,
                       p.bold);
        }
    }
    return res;
}

}  // namespace convlab::charts
