// The Timings view's chart card drawn with ImGui draw lists (gui/timings.cpp draws the controls,
// tabs and footer around it): the card's layout, the chart mark for mark as app::map_chart places
// it (the same order and shapes as the cairo export in charts/chart_export.cpp), and a mark's
// tooltip.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "charts/chart.hpp"
#include "imgui.h"
#include "model/timings_state.hpp"

namespace convlab::ui::chart_draw {

constexpr ImU32 kInk = IM_COL32(25, 25, 25, 255);

// `t`, cut to at most `w` pixels with ".." at the end.
std::string fit_text(ImFont* f, float size, const std::string& t, float w);

// Sizes of a chart's parts in the card [a, b] (pixels), as the export lays them out.
struct ChartLayout {
    float pad = 0, title_fs = 0, sub_fs = 0, tick_fs = 0;
    float subtitle_y = 0, legend_w = 0, label_h = 0, label_w = 0;
    bool slot_labels = false;
    bool flat_labels = false;        // category labels level: each fits its slot's width
    bool one_line_subtitle = false;  // the subtitle cut to one line (a short view)
    app::PlotRect plot;
};

ChartLayout layout_chart(const charts::Chart& c, ImFont* f, ImVec2 a, ImVec2 b, float fs,
                         bool one_line_subtitle = false);

// Room for the bars: four lines of the font high (three in a short view, where a lesson's one
// layer still reads), six wide.
bool drawable(const ChartLayout& L, float fs);

// Draws chart c into the card [a, b], the hovered mark outlined.
void draw_chart(const charts::Chart& c, const ChartLayout& L, ImDrawList* dl, ImFont* f, ImVec2 a,
                ImVec2 b, float fs, std::optional<std::pair<std::size_t, std::size_t>> hovered);

// The tooltip of a mark: its exact figures, in a box beside (x, y), kept inside the window.
void mark_tooltip(ImDrawList* dl, ImFont* f, float fs, const charts::Chart& c, std::size_t s,
                  std::size_t k, ImVec2 at, ImVec2 lo, ImVec2 hi);

// Centre of a mark on screen (for a forced tooltip).
ImVec2 mark_centre(const charts::Chart& c, const app::PlotRect& P, std::size_t s, std::size_t k);

}  // namespace convlab::ui::chart_draw
