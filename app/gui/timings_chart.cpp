// The Timings view's chart card (gui/timings_chart.hpp). Index:
//   [SECTION] drawing helpers (dashes, rotated text, colours)
//   [SECTION] the chart: card, axes, marks, legend, hover tooltip
#include "gui/timings_chart.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace convlab::ui::chart_draw {

namespace {

// [SECTION] drawing helpers

ImU32 col(charts::Color c) {
    return IM_COL32(c.r, c.g, c.b, c.a);
}

constexpr ImU32 kSoftInk = IM_COL32(80, 80, 80, 255);
constexpr ImU32 kGrid = IM_COL32(224, 224, 224, 255);
constexpr ImU32 kFail = IM_COL32(200, 30, 30, 255);

void dashed(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 c, float thick, float on = 6, float off = 4) {
    const float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
    if (len <= 0) return;
    for (float t = 0; t < len; t += on + off) {
        const float t1 = std::min(len, t + on);
        dl->AddLine(ImVec2(a.x + dx * t / len, a.y + dy * t / len),
                    ImVec2(a.x + dx * t1 / len, a.y + dy * t1 / len), c, thick);
    }
}

// Text rotated by `angle` (radians, counter-clockwise on screen when negative... as cairo: the
// text's baseline turns by angle about `pivot`), drawn at `pos` before the turn.
void rotated_text(ImDrawList* dl, ImFont* f, float size, ImVec2 pos, ImU32 c, const std::string& t,
                  float angle, ImVec2 pivot) {
    const int first = dl->VtxBuffer.Size;
    dl->AddText(f, size, pos, c, t.c_str());
    const float cs = std::cos(angle), sn = std::sin(angle);
    for (int i = first; i < dl->VtxBuffer.Size; ++i) {
        ImVec2& p = dl->VtxBuffer[i].pos;
        const float x = p.x - pivot.x, y = p.y - pivot.y;
        p = ImVec2(pivot.x + x * cs - y * sn, pivot.y + x * sn + y * cs);
    }
}

float text_w(ImFont* f, float size, const std::string& t) {
    return f->CalcTextSizeA(size, FLT_MAX, 0, t.c_str()).x;
}

float text_h(ImFont* f, float size, const std::string& t, float wrap) {
    return f->CalcTextSizeA(size, FLT_MAX, wrap, t.c_str()).y;
}

void swatch(ImDrawList* dl, ImVec2 p, float s, const charts::LegendEntry& e) {
    if (e.failed) {
        dl->AddLine(p, ImVec2(p.x + s, p.y + s * 0.7f), kFail, 2);
        dl->AddLine(ImVec2(p.x, p.y + s * 0.7f), ImVec2(p.x + s, p.y), kFail, 2);
        return;
    }
    const ImU32 c = col(e.color);
    if (e.style == charts::SeriesStyle::LinePoints) {
        const float y = p.y + s * 0.35f;
        if (e.connect) {
            if (e.dashed)
                dashed(dl, ImVec2(p.x, y), ImVec2(p.x + s, y), c, 2, 4, 3);
            else
                dl->AddLine(ImVec2(p.x, y), ImVec2(p.x + s, y), c, 2);
        }
        dl->AddCircleFilled(ImVec2(p.x + s * 0.5f, y), s * 0.25f, c);
        return;
    }
    dl->AddRectFilled(p, ImVec2(p.x + s, p.y + s * 0.7f), c);
    dl->AddRect(p, ImVec2(p.x + s, p.y + s * 0.7f), IM_COL32(0, 0, 0, 90));
}

constexpr float kLabelAngle = -55.0f * 3.14159265f / 180.0f;

}  // namespace

std::string fit_text(ImFont* f, float size, const std::string& t, float w) {
    if (text_w(f, size, t) <= w) return t;
    std::string cut = t;
    while (!cut.empty() && text_w(f, size, cut + "..") > w) cut.pop_back();
    return cut + "..";
}

// [SECTION] the chart

ChartLayout layout_chart(const charts::Chart& c, ImFont* f, ImVec2 a, ImVec2 b, float fs,
                         bool one_line_subtitle) {
    ChartLayout L;
    L.one_line_subtitle = one_line_subtitle;
    L.pad = fs * (one_line_subtitle ? 0.5f : 0.7f);
    L.title_fs = fs * (one_line_subtitle ? 1.0f : 1.15f);
    L.sub_fs = fs * 0.78f;
    L.tick_fs = fs * 0.72f;
    const float W = b.x - a.x;
    L.subtitle_y = a.y + L.pad + L.title_fs * 1.2f;
    const float top =
        L.subtitle_y +
        (one_line_subtitle ? L.sub_fs * 1.2f : text_h(f, L.sub_fs, c.subtitle, W - 2 * L.pad)) +
        fs * 0.6f;
    float tick_w = 0;
    for (const charts::Tick& t : c.y.ticks)
        tick_w = std::max(tick_w, text_w(f, L.tick_fs, t.label));
    L.legend_w = std::clamp(W * 0.24f, fs * 9, fs * 15);
    float longest = 0;
    for (const std::string& s : c.x.categories)
        longest = std::max(longest, text_w(f, L.tick_fs, s));
    L.plot.left = a.x + L.pad + fs * 1.3f + tick_w + 6;
    L.plot.right = b.x - L.pad - L.legend_w - fs;
    // Labels that fit their slots stay level (a lesson's one layer: the turned label took a
    // quarter of a small window's chart); turned ones take at most a quarter of the card's
    // height (longer ones are cut; the hover names the layer in full).
    const std::size_t slots = std::max<std::size_t>(1, c.x.categories.size());
    L.flat_labels = longest + fs <= L.plot.width() / static_cast<float>(slots);
    L.label_w =
        L.flat_labels
            ? longest
            : std::min(longest, std::max(fs * 3, 0.25f * (b.y - a.y) / std::sin(-kLabelAngle)));
    L.label_h = L.flat_labels ? L.tick_fs * 1.3f : L.label_w * std::sin(-kLabelAngle) + L.tick_fs;
    for (const auto& s : c.series)
        for (const auto& m : s.marks) L.slot_labels |= !m.label.empty();
    L.plot.top = top;
    L.plot.bottom = b.y - L.pad - fs * 1.1f - L.label_h - (L.slot_labels ? L.tick_fs * 1.1f : 0);
    return L;
}

// Room for the bars: four lines of the font high (three in a short view, where a lesson's one
// layer still reads), six wide.
bool drawable(const ChartLayout& L, float fs) {
    return L.plot.height() >= fs * (L.one_line_subtitle ? 3 : 4) && L.plot.width() >= fs * 6;
}

// Draws chart c into the card [a, b], the hovered mark outlined.
void draw_chart(const charts::Chart& c, const ChartLayout& L, ImDrawList* dl, ImFont* f, ImVec2 a,
                ImVec2 b, float fs, std::optional<std::pair<std::size_t, std::size_t>> hovered) {
    const float pad = L.pad, sub_fs = L.sub_fs, tick_fs = L.tick_fs, legend_w = L.legend_w;
    const bool slot_labels = L.slot_labels;
    const float W = b.x - a.x;
    dl->AddRectFilled(a, b, IM_COL32(255, 255, 255, 255), 4);
    dl->AddRect(a, b, IM_COL32(200, 200, 200, 255), 4);
    // Title, the verification tag, the subtitle.
    dl->AddText(f, L.title_fs, ImVec2(a.x + pad, a.y + pad), kInk, c.title.c_str());
    if (!c.verified) {
        const std::string tag = "NOT ALL MEASUREMENTS VERIFIED (see under the chart)";
        dl->AddText(f, sub_fs, ImVec2(b.x - pad - text_w(f, sub_fs, tag), a.y + pad), kFail,
                    tag.c_str());
    }
    if (L.one_line_subtitle)
        dl->AddText(f, sub_fs, ImVec2(a.x + pad, L.subtitle_y), kSoftInk,
                    fit_text(f, sub_fs, c.subtitle, W - 2 * pad).c_str());
    else
        dl->AddText(f, sub_fs, ImVec2(a.x + pad, L.subtitle_y), kSoftInk, c.subtitle.c_str(),
                    nullptr, W - 2 * pad);
    const app::PlotRect& P = L.plot;
    if (!drawable(L, fs)) {
        dl->AddText(f, fs, ImVec2(a.x + pad, P.top), kSoftInk, "(window too small for the chart)");
        return;
    }
    const app::ScreenChart S = app::map_chart(c, P);
    // Grid and y tick labels; shading of every other category.
    for (const app::ScreenTick& t : S.y_ticks) {
        dl->AddLine(ImVec2(P.left, t.pos), ImVec2(P.right, t.pos), kGrid);
        dl->AddText(f, tick_fs,
                    ImVec2(P.left - 6 - text_w(f, tick_fs, t.label), t.pos - tick_fs * 0.5f), kInk,
                    t.label.c_str());
    }
    for (float x : S.shaded)
        dl->AddRectFilled(ImVec2(x, P.top), ImVec2(x + S.slot, P.bottom), IM_COL32(0, 0, 0, 7));
    // Y axis title, turned a quarter left, centred on the plot.
    {
        const std::string title = fit_text(f, sub_fs, c.y.title, P.height());
        const float tw = text_w(f, sub_fs, title);
        const ImVec2 pivot(a.x + pad, 0.5f * (P.top + P.bottom) + 0.5f * tw);
        rotated_text(dl, f, sub_fs, pivot, kInk, title, -3.14159265f / 2, pivot);
    }
    const auto noisy = [&](const app::ScreenMark& m) {
        return m.series < c.series.size() && m.mark < c.series[m.series].marks.size() &&
               c.series[m.series].marks[m.mark].noisy;
    };
    // Marks (clipped to the plot): bars and FAIL crosses, reference lines, then points.
    dl->PushClipRect(ImVec2(P.left, P.top - 1), ImVec2(P.right + 1, P.bottom + 1), true);
    for (const app::ScreenMark& m : S.bars) {
        if (m.kind == app::ScreenMark::Kind::FailCross) {
            dl->AddLine(ImVec2(m.x0, m.y1), ImVec2(m.x1, m.y0), kFail, 2);
            dl->AddLine(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), kFail, 2);
            continue;
        }
        dl->AddRectFilled(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), col(m.color));
        dl->AddRect(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), IM_COL32(255, 255, 255, 180));
        if (noisy(m)) {
            // Hatched as in the export: measured while other processes took over 5% of the CPU,
            // or while the machine itself ran slow (Measurement::noisy).
            dl->PushClipRect(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), true);
            for (float x = m.x0 - (m.y1 - m.y0); x < m.x1; x += 5)
                dl->AddLine(ImVec2(x, m.y1), ImVec2(x + (m.y1 - m.y0), m.y0),
                            IM_COL32(255, 255, 255, 150));
            dl->PopClipRect();
        }
        if (m.whisker) {
            const float cx = 0.5f * (m.x0 + m.x1), cap = std::min(3.0f, 0.3f * (m.x1 - m.x0));
            const ImU32 w = IM_COL32(40, 40, 40, 200);
            dl->AddLine(ImVec2(cx, m.wy0), ImVec2(cx, m.wy1), w);
            dl->AddLine(ImVec2(cx - cap, m.wy0), ImVec2(cx + cap, m.wy0), w);
            dl->AddLine(ImVec2(cx - cap, m.wy1), ImVec2(cx + cap, m.wy1), w);
        }
    }
    for (const app::ScreenLine& r : S.refs) {
        if (r.dashed)
            dashed(dl, ImVec2(r.x0, r.y0), ImVec2(r.x1, r.y1), col(r.color), 1.6f);
        else
            dl->AddLine(ImVec2(r.x0, r.y0), ImVec2(r.x1, r.y1), col(r.color), 1.6f);
    }
    for (const app::ScreenLine& l : S.links) {
        if (l.dashed)
            dashed(dl, ImVec2(l.x0, l.y0), ImVec2(l.x1, l.y1), col(l.color), 1.6f, 4, 3);
        else
            dl->AddLine(ImVec2(l.x0, l.y0), ImVec2(l.x1, l.y1), col(l.color), 1.6f);
    }
    for (const app::ScreenMark& m : S.points) {
        const float cx = 0.5f * (m.x0 + m.x1);
        if (m.kind == app::ScreenMark::Kind::Level)
            dl->AddLine(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y0), col(m.color), 2.4f);
        dl->AddCircleFilled(ImVec2(cx, m.y0), 4.2f, col(m.color));
        dl->AddCircle(ImVec2(cx, m.y0), 4.2f, IM_COL32(255, 255, 255, 255));
        if (noisy(m)) dl->AddCircle(ImVec2(cx, m.y0), 7.5f, col(m.color), 0, 1.5f);  // ringed
    }
    // The hovered mark: outlined.
    if (hovered) {
        for (const auto* list : {&S.bars, &S.points})
            for (const app::ScreenMark& m : *list)
                if (m.series == hovered->first && m.mark == hovered->second) {
                    const float grow = m.kind == app::ScreenMark::Kind::Bar ? 1.5f : 6;
                    dl->AddRect(ImVec2(std::min(m.x0, m.x1) - grow, m.y0 - grow),
                                ImVec2(std::max(m.x0, m.x1) + grow, m.y1 + grow),
                                IM_COL32(0, 0, 0, 255), 0, 0, 2.5f);
                }
    }
    dl->PopClipRect();
    // Axes frame.
    dl->AddLine(ImVec2(P.left, P.top), ImVec2(P.left, P.bottom), IM_COL32(50, 50, 50, 255));
    dl->AddLine(ImVec2(P.left, P.bottom), ImVec2(P.right, P.bottom), IM_COL32(50, 50, 50, 255));
    // Slot labels under the bars, then the category labels turned as in the export.
    float label_top = P.bottom + 4;
    if (slot_labels) {
        const float sfs = tick_fs * 0.85f;
        for (std::size_t s = 0; s < c.series.size(); ++s)
            for (const auto& m : c.series[s].marks)
                if (!m.label.empty()) {
                    const float cx =
                        P.left + static_cast<float>(c.x.frac(0.5 * (m.x0 + m.x1))) * P.width();
                    dl->AddText(f, sfs, ImVec2(cx - 0.5f * text_w(f, sfs, m.label), label_top),
                                kSoftInk, m.label.c_str());
                }
        label_top += tick_fs * 1.1f;
    }
    for (const app::ScreenTick& t : S.categories) {
        const std::string label = fit_text(f, tick_fs, t.label, L.label_w);
        const float tw = text_w(f, tick_fs, label);
        if (L.flat_labels) {
            dl->AddText(f, tick_fs, ImVec2(t.pos - 0.5f * tw, label_top + 2), kInk, label.c_str());
            continue;
        }
        const ImVec2 pivot(t.pos + 3, label_top + 2);
        // End of the text at the pivot (right-aligned), turned up to the left.
        rotated_text(dl, f, tick_fs, ImVec2(pivot.x - tw, pivot.y), kInk, label, kLabelAngle,
                     pivot);
    }
    const float xt = text_w(f, sub_fs, c.x.title);
    dl->AddText(f, sub_fs, ImVec2(0.5f * (P.left + P.right) - 0.5f * xt, b.y - pad - sub_fs), kInk,
                c.x.title.c_str());
    // Legend: series, reference lines, then the headline figures in a box (inside the card).
    dl->PushClipRect(a, b, true);
    const float lx = b.x - pad - legend_w, lfs = fs * 0.75f, sw = lfs;
    float ly = P.top;
    const auto legend_text = [&](const std::string& t) {
        dl->AddText(f, lfs, ImVec2(lx + sw + 6, ly), kInk, t.c_str(), nullptr, legend_w - sw - 6);
        ly += text_h(f, lfs, t, legend_w - sw - 6) + lfs * 0.4f;
    };
    for (const charts::LegendEntry& e : c.legend) {
        swatch(dl, ImVec2(lx, ly + lfs * 0.2f), sw, e);
        legend_text(e.label);
    }
    for (const charts::RefLine& r : c.ref_lines) {
        const float yy = ly + lfs * 0.5f;
        if (r.dashed)
            dashed(dl, ImVec2(lx, yy), ImVec2(lx + sw, yy), col(r.color), 1.6f, 4, 2.5f);
        else
            dl->AddLine(ImVec2(lx, yy), ImVec2(lx + sw, yy), col(r.color), 1.6f);
        legend_text(r.label);
    }
    if (!c.annotations.empty()) {
        ly += lfs * 0.6f;
        std::string text;
        for (const std::string& t : c.annotations) text += (text.empty() ? "" : "\n\n") + t;
        const float afs = fs * 0.8f;
        const float h = text_h(f, afs, text, legend_w - 12) + 10;
        dl->AddRectFilled(ImVec2(lx - 4, ly), ImVec2(lx + legend_w, ly + h),
                          IM_COL32(255, 255, 230, 255));
        dl->AddRect(ImVec2(lx - 4, ly), ImVec2(lx + legend_w, ly + h), IM_COL32(153, 140, 77, 255));
        dl->AddText(f, afs, ImVec2(lx + 3, ly + 5), kInk, text.c_str(), nullptr, legend_w - 12);
    }
    dl->PopClipRect();
}

// The tooltip of a mark: its exact figures, in a box beside (x, y), kept inside the window.
void mark_tooltip(ImDrawList* dl, ImFont* f, float fs, const charts::Chart& c, std::size_t s,
                  std::size_t k, ImVec2 at, ImVec2 lo, ImVec2 hi) {
    const charts::Series& se = c.series[s];
    const charts::Mark& m = se.marks[k];
    // The series' name first, unless the mark's own text already says it.
    const std::string text =
        m.hover.find(se.name) == std::string::npos ? se.name + "\n" + m.hover : m.hover;
    const float tfs = fs * 0.8f;
    const ImVec2 sz = f->CalcTextSizeA(tfs, FLT_MAX, 0, text.c_str());
    ImVec2 p(at.x + 16, at.y - sz.y - 16);
    if (p.x + sz.x + 16 > hi.x) p.x = at.x - sz.x - 28;
    p.x = std::max(p.x, lo.x);
    p.y = std::clamp(p.y, lo.y, std::max(lo.y, hi.y - sz.y - 12));
    dl->AddRectFilled(ImVec2(p.x - 6, p.y - 5), ImVec2(p.x + sz.x + 6, p.y + sz.y + 5),
                      IM_COL32(255, 255, 245, 250), 3);
    dl->AddRect(ImVec2(p.x - 6, p.y - 5), ImVec2(p.x + sz.x + 6, p.y + sz.y + 5),
                IM_COL32(60, 60, 60, 255), 3);
    dl->AddRectFilled(ImVec2(p.x - 6, p.y - 5), ImVec2(p.x - 2, p.y + sz.y + 5),
                      m.kind == charts::MarkKind::Failed ? kFail : col(se.color));
    dl->AddText(f, tfs, p, kInk, text.c_str());
}

// Centre of a mark on screen (for a forced tooltip).
ImVec2 mark_centre(const charts::Chart& c, const app::PlotRect& P, std::size_t s, std::size_t k) {
    const app::ScreenChart S = app::map_chart(c, P);
    for (const auto* list : {&S.bars, &S.points})
        for (const app::ScreenMark& m : *list)
            if (m.series == s && m.mark == k) return ImVec2(0.5f * (m.x0 + m.x1), m.y0);
    return ImVec2(P.left, P.top);
}

}  // namespace convlab::ui::chart_draw
