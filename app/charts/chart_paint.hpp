// A benchmark chart as drawing primitives (export/draw_prim.hpp): one window-free painter decides
// the whole picture (plot rectangle, grid and ticks, bars with whiskers, FAIL crosses, points and
// their lines, dashed reference lines, hatched noisy bars, legend, headline box, category labels,
// title, subtitle, footer) at a box, font sizes and a text measure. The Timings panel replays the
// list with ImGui (gui/timings_chart.cpp) and the file export with cairo (charts/chart_export.cpp),
// so the window and the SVG/PNG/PDF files cannot lay a chart out differently.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "charts/chart.hpp"
#include "export/draw_prim.hpp"

namespace convlab::charts {

using app::DrawPrim;
using app::Rgba;

// The plot rectangle in pixels (y grows downwards).
struct PlotBox {
    float left = 0, top = 0, right = 1, bottom = 1;
    float width() const { return right - left; }
    float height() const { return bottom - top; }
};

// How a chart is painted: its box, margins, font sizes, a text measure and the hovered mark.
struct ChartPaint {
    float x0 = 0, y0 = 0, x1 = 1280, y1 = 720;  // the chart's box (pixels)
    float pad = 18;                             // margin inside the box
    float gap = 18;                             // between the plot and the legend column
    float title = 20, subtitle = 12, tick = 10, tag = 9, legend = 11, annotation = 12.5f;
    float footer = 9.5f;
    float legend_w = 220;
    // A plot smaller than this is not drawn ("window too small for the chart").
    float min_plot_w = 60, min_plot_h = 40;
    bool one_line_subtitle = false;  // the subtitle cut to one line (a short window), not wrapped
    bool card = false;               // an outlined card (the window) instead of a plain page
    bool bold = true;                // title, headline figures and the unverified tag in bold
    bool draw_footer = true;         // the window writes the footer itself, under the card
    // Slot names (Mark::tag) turned under their bars; false: the slots' numbers (Mark::label),
    // which keep a small window's plot tall.
    bool slot_names = true;
    float line = 1.33f;  // the subtitle's line height, in em
    std::string unverified = "NOT ALL MEASUREMENTS VERIFIED (see footer)";
    // Width of a text at a size (bold or not) in the output's font; unset: 0.55 em a character.
    std::function<float(const std::string&, float, bool)> text_width;
    std::optional<std::pair<std::size_t, std::size_t>> hovered;  // outlined (series, mark)
};

// The file export's sizes for a page of width x height points.
ChartPaint file_paint(double width, double height);
// The Timings panel's sizes for a card [x0, x1] x [y0, y1] at font size fs (compact: a short
// window, the subtitle on one line).
ChartPaint screen_paint(float x0, float y0, float x1, float y1, float fs, bool compact);

struct PaintedChart {
    PlotBox plot;           // where the data went (hover lookup: Chart::hit through it)
    bool drawable = false;  // false: too small, only the title and a note were painted
};

// Appends chart c's primitives to `out`, in drawing order.
PaintedChart paint_chart(const Chart& c, const ChartPaint& p, std::vector<DrawPrim>& out);

}  // namespace convlab::charts
