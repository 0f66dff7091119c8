// The Timings view's chart card (gui/timings_chart.hpp). Index:
//   [SECTION] primitives (dashes, turned text)
//   [SECTION] tooltip
#include "gui/timings_chart.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace convlab::ui::chart_draw {

namespace {

// [SECTION] primitives (dashes, turned text)

ImU32 col(charts::Color c) {
    return IM_COL32(c.r, c.g, c.b, c.a);
}

constexpr ImU32 kFail = IM_COL32(200, 30, 30, 255);

void dashed(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 c, float thick, float on, float off) {
    const float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
    if (len <= 0 || on <= 0) return;
    for (float t = 0; t < len; t += on + std::max(off, 0.0f)) {
        const float t1 = std::min(len, t + on);
        dl->AddLine(ImVec2(a.x + dx * t / len, a.y + dy * t / len),
                    ImVec2(a.x + dx * t1 / len, a.y + dy * t1 / len), c, thick);
    }
}

float text_w(ImFont* f, float size, const std::string& t) {
    return f->CalcTextSizeA(size, FLT_MAX, 0, t.c_str()).x;
}

}  // namespace

std::string fit_text(ImFont* f, float size, const std::string& t, float w) {
    if (text_w(f, size, t) <= w) return t;
    std::string cut = t;
    while (!cut.empty() && text_w(f, size, cut + "..") > w) cut.pop_back();
    return cut + "..";
}

void draw_prim(ImDrawList* dl, ImFont* f, const app::DrawPrim& p) {
    const ImVec2 a(p.x0, p.y0), b(p.x1, p.y1);
    switch (p.kind) {
        case app::DrawPrim::Kind::Rect:
            if (p.fill) dl->AddRectFilled(a, b, p.fill);
            if (p.stroke) dl->AddRect(a, b, p.stroke, 0, 0, p.width);
            break;
        case app::DrawPrim::Kind::Line:
            if (p.dash > 0)
                dashed(dl, a, b, p.stroke, p.width, p.dash, p.gap);
            else
                dl->AddLine(a, b, p.stroke, p.width);
            break;
        case app::DrawPrim::Kind::Circle:
            if (p.fill) dl->AddCircleFilled(a, p.size, p.fill);
            if (p.stroke) dl->AddCircle(a, p.size, p.stroke, 0, p.width);
            break;
        case app::DrawPrim::Kind::Text: {
            float x = p.x0;
            if (p.centred) x += (p.x1 - p.x0 - text_w(f, p.size, p.text)) * 0.5f;
            const int first = dl->VtxBuffer.Size;
            dl->AddText(f, p.size, ImVec2(x, p.y0), p.stroke, p.text.c_str());
            if (p.angle != 0) {
                // Turned about the line's top-left corner, as cairo_rotate turns the export's.
                const float cs = std::cos(p.angle), sn = std::sin(p.angle);
                for (int i = first; i < dl->VtxBuffer.Size; ++i) {
                    ImVec2& v = dl->VtxBuffer[i].pos;
                    const float dx = v.x - p.x0, dy = v.y - p.y0;
                    v = ImVec2(p.x0 + dx * cs - dy * sn, p.y0 + dx * sn + dy * cs);
                }
            }
            break;
        }
        case app::DrawPrim::Kind::Image:
            break;
    }
}

app::PrimCounts replay(ImDrawList* dl, ImFont* f, const std::vector<app::DrawPrim>& prims) {
    app::PrimCounts n;
    for (const app::DrawPrim& p : prims) {
        draw_prim(dl, f, p);
        switch (p.kind) {
            case app::DrawPrim::Kind::Rect:
                ++n.rects;
                break;
            case app::DrawPrim::Kind::Line:
                ++n.lines;
                break;
            case app::DrawPrim::Kind::Text:
                ++n.texts;
                break;
            case app::DrawPrim::Kind::Image:
                ++n.images;
                break;
            case app::DrawPrim::Kind::Circle:
                ++n.circles;
                break;
        }
    }
    return n;
}

// [SECTION] tooltip

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
