// A panel of a view as drawing primitives: filled and outlined rectangles, lines and text, in
// pixels. Window-free functions decide what a panel looks like at a cell size (its cells,
// padding, grid, tile labels, values, contribution counts, outlines: paint_panel) and what its
// title says and where it goes (title_text, layout_titled, paint_title); the canvas (ImGui draw
// lists, gui/canvas.cpp and gui/panel.cpp) and the SVG export (export/view_svg.cpp) each replay
// the same lists, so that the window and the file cannot draw a panel or its title differently.
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
    // Pixels free left of the panel (to the nearest panel beside it, or to min_x): where the
    // labels of its rows of tiles go when they have no room above them.
    float left_room = 0;
    float min_x = -1e30f;  // nothing is drawn left of this x (the canvas's or the file's edge)
    Rgba grid = 0, padding = 0, dim_text = 0, current = 0, value_text = 0, current_pad = 0;
    Rgba hovered = 0;
    std::function<Rgba(dim_t)> cell_colour;       // the fill of cell c
    std::function<std::string(dim_t)> cell_text;  // its value as written at value_size
    std::function<float(const std::string&, float)> text_width;  // of a text at a size
    std::function<Rgba(std::uint8_t)> group_colour;              // the outline of cell group g
    std::vector<CellPos> outlined;  // hovered / pinned cells (view cells)
};

// Cells free left of panel i of v, up to the nearest visible panel whose rows overlap its own
// (1e30 where there is none): the room for its tile rows' labels beyond the panel gap.
double room_left_of(const ViewModel& v, std::size_t i);

// Appends panel pn's primitives (state ps) to `out`, in drawing order.
void paint_panel(const Panel& pn, const PanelState& ps, const PanelPaint& pp,
                 std::vector<DrawPrim>& out);

// The width of a text at a size, in the output's font.
using TextWidth = std::function<float(const std::string&, float)>;

// t as written in `width` pixels: whole, or cut with "..." where it is wider (never inside a
// UTF-8 character).
std::string cut_to_width(const std::string& t, float width, float size, const TextWidth& measure);
// t in lines no wider than `width`, broken at spaces (a line's spaces at the break dropped), a
// word wider than a line cut where the line ends, as ImGui wraps.
std::vector<std::string> wrap_to_width(const std::string& t, float width, float size,
                                       const TextWidth& measure);

// A panel's dims with their roles ("rows h · cols w · tiles c →") and its shape ("(n=1, c=2)").
std::string role_text(const Panel& p);
std::string shape_text(const Shape& s);

// How the panels' titles are written: in the canvas's font at `size`, one line `size` tall.
struct TitlePaint {
    float size = 15;
    // One line, the name and the title's short form (short_title), cut with "..." at the wrap
    // width (a short window: the cells keep the height); else the name and the title, the shape
    // and the roles, each wrapped at it.
    bool compact = false;
    float right = 1e30f;  // no title passes this x (from the view's left edge): the canvas's edge
    Rgba text = 0;        // the lines' colour
    Rgba backdrop = 0;    // under a title pinned to the canvas's edge
    TextWidth text_width;
};

// A panel's title as written: its lines and the box they take (pixels).
struct TitleText {
    std::vector<std::string> lines;
    float w = 0, h = 0;
};

// The width panel pn's title wraps at, at z px a cell: its slot less 0.6 em, and no further
// than tp.right, but at least 8 em.
float title_wrap(const Panel& pn, float z, const TitlePaint& tp);
TitleText title_text(const Panel& pn, float z, const TitlePaint& tp);
// The least slot a panel's title gets (pixels): 13 em, less where a row of panels would pass
// canvas_w.
float title_slot(const ViewModel& v, float size, float canvas_w);
// Lays v out (layout_view) at z px a cell, each row's panels under the room their tallest title
// takes with the tile labels under it, slots at least min_slot pixels wide; rows of one-line
// titles half a line apart, not 2 cells. Returns the tallest room (pixels).
float layout_titled(ViewModel& v, float z, const TitlePaint& tp, float min_slot);
// Appends title t's lines with the first line's top-left corner at (x, y), over a backdrop where
// pinned to the canvas's edge (over other panels' cells).
void paint_title(const TitleText& t, float x, float y, const TitlePaint& tp, bool pinned,
                 std::vector<DrawPrim>& out);

// How many primitives of each kind a list holds.
PrimCounts count_prims(const std::vector<DrawPrim>& prims);
std::string counts_text(const PrimCounts& c);

// The SVG elements of a list, one per primitive (<rect>, <line>, <text>, <circle>; an image as an
// empty <rect>), text sized and positioned for DejaVu Sans as ImGui draws it (its baseline 0.8
// of the size below the line's top, its em 0.86 of the size).
void write_svg(std::ostream& o, const std::vector<DrawPrim>& prims);

}  // namespace convlab::app
