// A panel of a view as drawing primitives: filled and outlined rectangles, lines and text, in
// pixels. One window-free function decides what a panel looks like at a cell size (its cells,
// padding, grid, tile labels, values, contribution counts, outlines); the canvas (ImGui draw
// lists, gui/panel.cpp) and the SVG export (export/view_svg.cpp) each replay the same list, so
// that the window and the file cannot draw a panel differently.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "export/draw_prim.hpp"
#include "model/model.hpp"

namespace convlab::app {

// How a panel is painted: where, at what cell size, in which colours, with which text.
struct PanelPaint {
    float ox = 0, oy = 0;  // the view's origin (pixels)
    float z = 1;           // a cell's side (pixels)
    // Only what meets this rectangle is drawn (the canvas's visible part).
    float clip_x0 = -1e30f, clip_y0 = -1e30f, clip_x1 = 1e30f, clip_y1 = 1e30f;
    float label_size = 15;  // tile labels' size, shrunk to min_label where that labels every tile
    float min_label = 11;
    float lift = 3;         // tile labels' gap above their tile (a lesson outline's thickness + 1)
    float value_size = 0;   // the digits' size (0: no values written)
    float group_width = 1;  // a cell group's outline thickness
    float gap = 4;          // cells between panels (ViewModel::panel_gap): a row's label room
    Rgba grid = 0, padding = 0, dim_text = 0, current = 0, value_text = 0, current_pad = 0;
    Rgba hovered = 0;
    std::function<Rgba(dim_t)> cell_colour;       // the fill of cell c
    std::function<std::string(dim_t)> cell_text;  // its value as written at value_size
    std::function<float(const std::string&, float)> text_width;  // of a text at a size
    std::function<Rgba(std::uint8_t)> group_colour;              // the outline of cell group g
    std::vector<CellPos> outlined;  // hovered / pinned cells (view cells)
};

// Appends panel pn's primitives (state ps) to `out`, in drawing order.
void paint_panel(const Panel& pn, const PanelState& ps, const PanelPaint& pp,
                 std::vector<DrawPrim>& out);

// How many primitives of each kind a list holds.
PrimCounts count_prims(const std::vector<DrawPrim>& prims);
std::string counts_text(const PrimCounts& c);

// The SVG elements of a list, one per primitive (<rect>, <line>, <text>, <circle>; an image as an
// empty <rect>), text positioned for DejaVu Sans (its baseline 0.8 of the size below the line's
// top).
void write_svg(std::ostream& o, const std::vector<DrawPrim>& prims);

}  // namespace convlab::app
