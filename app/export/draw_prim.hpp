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

// How many primitives of each kind a list holds (the rendering tests compare the window's with
// the files').
struct PrimCounts {
    long long rects = 0, lines = 0, texts = 0, images = 0, circles = 0;
    bool operator==(const PrimCounts&) const = default;
};

}  // namespace convlab::app
