// A drawing primitive in pixels: what the window-free painters produce (a view's panel:
// export/view_drawing.hpp; a benchmark chart: charts/chart_paint.hpp) and each output replays
// (ImGui draw lists on screen, SVG text, cairo for the chart files), so that no two outputs lay
// out the same picture twice.
#pragma once

#include <cstdint>
#include <string>

namespace convlab::app {

// A colour as 0xAABBGGRR (the byte order of ImGui's IM_COL32).
using Rgba = std::uint32_t;

struct DrawPrim {
    enum class Kind : std::uint8_t {
        Rect,   // [x0, x1] x [y0, y1]: filled with `fill` (0: not), outlined with `stroke` (0: not)
        Line,   // from (x0, y0) to (x1, y1) in `stroke`, dashed when dash > 0
        Text,   // `text` at `size` px in `stroke`, its line's top at y0; from x0, or centred
                // between x0 and x1; turned by `angle` about (x0, y0) when angle != 0
        Image,  // the panel's cells as one picture over [x0, x1] x [y0, y1] (cells under 3 px)
        Circle,  // centre (x0, y0), radius `size`: filled with `fill`, outlined with `stroke`
    };
    Kind kind = Kind::Rect;
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    Rgba fill = 0, stroke = 0;
    float width = 1.0f;  // outline and line thickness
    float size = 0.0f;   // text size; a circle's radius
    bool centred = false;
    bool bold = false;  // text: the bold face where the output has one
    float dash = 0.0f;  // line: dash length (0: solid), with gaps of `gap`
    float gap = 0.0f;
    float angle = 0.0f;  // text: radians, clockwise on screen (y down), as cairo_rotate
    std::string text;
};

// The shapes as the painters (paint_panel, paint_chart) append them.
inline DrawPrim rect_prim(float x0, float y0, float x1, float y1, Rgba fill, Rgba stroke,
                          float width = 1) {
    DrawPrim d;
    d.kind = DrawPrim::Kind::Rect;
    d.x0 = x0;
    d.y0 = y0;
    d.x1 = x1;
    d.y1 = y1;
    d.fill = fill;
    d.stroke = stroke;
    d.width = width;
    return d;
}
inline DrawPrim line_prim(float x0, float y0, float x1, float y1, Rgba c, float width = 1,
                          float dash = 0, float gap = 0) {
    DrawPrim d = rect_prim(x0, y0, x1, y1, 0, c, width);
    d.kind = DrawPrim::Kind::Line;
    d.dash = dash;
    d.gap = gap;
    return d;
}
inline DrawPrim circle_prim(float x, float y, float r, Rgba fill, Rgba stroke, float width = 1) {
    DrawPrim d = rect_prim(x, y, 0, 0, fill, stroke, width);
    d.kind = DrawPrim::Kind::Circle;
    d.size = r;
    return d;
}

// How many primitives of each kind a list holds (the rendering tests compare the window's with
// the files').
struct PrimCounts {
    long long rects = 0, lines = 0, texts = 0, images = 0, circles = 0;
    bool operator==(const PrimCounts&) const = default;
};

}  // namespace convlab::app
