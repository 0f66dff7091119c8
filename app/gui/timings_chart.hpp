// The Timings view's chart card drawn with ImGui draw lists (gui/timings.cpp draws the controls,
// tabs and footer around it): the primitives of charts/chart_paint.hpp replayed (the list the
// cairo export in charts/chart_export.cpp replays too), and a mark's tooltip.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "charts/chart.hpp"
#include "export/draw_prim.hpp"
#include "imgui.h"
#include "model/timings_state.hpp"

namespace convlab::ui::chart_draw {

constexpr ImU32 kInk = IM_COL32(25, 25, 25, 255);

// `t`, cut to at most `w` pixels with ".." at the end.
std::string fit_text(ImFont* f, float size, const std::string& t, float w);

// Draws one primitive (export/draw_prim.hpp) with ImGui; an Image is left to the caller, which
// holds the texture (the canvas, gui/panel.cpp).
void draw_prim(ImDrawList* dl, ImFont* f, const app::DrawPrim& p);
// Draws a list of primitives; counts what it drew.
app::PrimCounts replay(ImDrawList* dl, ImFont* f, const std::vector<app::DrawPrim>& prims);

// The tooltip of a mark: its exact figures, in a box beside (x, y), kept inside the window.
void mark_tooltip(ImDrawList* dl, ImFont* f, float fs, const charts::Chart& c, std::size_t s,
                  std::size_t k, ImVec2 at, ImVec2 lo, ImVec2 hi);

// Centre of a mark on screen (for a forced tooltip).
ImVec2 mark_centre(const charts::Chart& c, const app::PlotRect& P, std::size_t s, std::size_t k);

}  // namespace convlab::ui::chart_draw
