// The benchmark's charts as data: one model, no drawing code, no screen coordinates. Everything
// is in data units (x: categories i occupy [i, i+1); y: the axis' unit). One painter,
// charts/chart_paint.hpp, turns a Chart into drawing primitives in pixels for a box; the SVG,
// PNG and PDF files (chart_export.cpp, cairo) and the app's Timings panel (ImGui draw lists)
// replay that one list, so the two cannot lay a chart out differently.
//
// The painter, in drawing order:
//   plot rect P (pixels); X(v) = P.left + x.frac(v) * P.width; Y(v) = P.bottom - y.frac(v) *
//   P.height; y.ticks: grid lines + labels; series in order: Bars/StackedBars -> a rectangle
//   (X(x0), Y(y1)) - (X(x1), Y(y0)) and a whisker lo..hi when finite; Failed -> a red
//   cross on the axis in [x0, x1]; LinePoints -> a dot at (X((x0 + x1) / 2), Y(y0)), a level
//   segment when x1 > x0, lines between consecutive marks when `connect`; ref_lines dashed;
//   x.categories under the axis; legend, ref_lines and annotations beside the plot; footer under
//   it. Hover: hit(X^-1(mouse.x), Y^-1(mouse.y), tol_x, tol_y) -> the mark's `hover` text in a
//   tooltip. During a run, rebuild the charts from Config::Progress::results (copied under a mutex)
//   as measurements arrive.
//
// Index:
//   [SECTION] model
//   [SECTION] the standard charts of a benchmark run
//   [SECTION] helpers (ticks, colours, layer names)
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convlab/bench.hpp"

namespace convlab::charts {

// [SECTION] model

struct Color {
    std::uint8_t r = 0, g = 0, b = 0, a = 255;
};

struct Tick {
    double value = 0;
    std::string label;
};

struct Axis {
    std::string title;
    double min = 0, max = 1;
    bool log = false;  // logarithmic (min > 0): ratios, where 0.5x and 2x are equally far from 1
    std::vector<Tick> ticks;
    // x axis of every standard chart: category i (a layer) spans [i, i+1), label at i + 0.5.
    std::vector<std::string> categories;
    // Position of v along the axis, 0 at min and 1 at max (log-aware; clamped). A drawer maps
    // it to pixels: x_px = left + frac(x) * width; y_px = bottom - frac(y) * height.
    double frac(double v) const;
};

enum class MarkKind {
    Bar,     // rectangle [x0, x1] x [y0, y1]
    Point,   // a dot at ((x0 + x1) / 2, y0), y1 = y0; when x1 > x0 also a level segment from x0
             // to x1 (the peer's value across a layer's bars)
    Failed,  // a slot [x0, x1] whose measurement failed verification or did not run: drawn as a
             // FAIL marker on the x axis, never as a value (y0 = y1 = axis min)
};

struct Mark {
    MarkKind kind = MarkKind::Bar;
    double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    // Whisker (interquartile range of the repeats) in y units; NaN when none.
    double lo = std::numeric_limits<double>::quiet_NaN();
    double hi = std::numeric_limits<double>::quiet_NaN();
    std::string hover;  // exact figures, several lines ('\n')
    std::string label;  // short text drawn at the mark (slot number of a stacked bar); may be ""
    // Name of the slot (a short algorithm name) on the first mark of each stacked bar: the
    // export writes it turned under the bar instead of `label`'s number. May be "".
    std::string tag;
    // Measured while other processes used more than bench::kNoisyForeignCpu of the CPUs: the
    // export hatches the bar (or rings the point) and puts a '~' over it.
    bool noisy = false;
};

enum class SeriesStyle { Bars, StackedBars, LinePoints };

struct Series {
    std::string name;  // legend text
    Color color;
    SeriesStyle style = SeriesStyle::Bars;
    bool dashed = false;  // LinePoints: a dashed line
    bool connect = true;  // LinePoints: join the points of consecutive categories
    std::vector<Mark> marks;
};

// A horizontal reference line across the plot (the machine's fp32 peak; 1 = as fast as forward).
struct RefLine {
    std::string label;
    double y = 0;
    Color color;
    bool dashed = true;
};

struct LegendEntry {
    std::string label;
    Color color;
    SeriesStyle style = SeriesStyle::Bars;
    bool dashed = false;
    bool failed = false;  // the FAIL marker's entry
    bool connect = true;  // LinePoints: drawn with its line (false: a dot alone)
};

struct Chart {
    std::string id;  // file stem: "relative_bwd_data", "ops_bwd_data", "gflops_fwd" ...
    std::string title;
    std::string subtitle;
    Axis x, y;
    std::vector<Series> series;
    std::vector<RefLine> ref_lines;
    std::vector<LegendEntry> legend;
    std::vector<std::string> annotations;  // headline figures, shown beside the legend
    // Printed under the plot on every export: verification status, machine record, noise, the
    // command that reproduces the chart.
    std::vector<std::string> footer;
    bool verified = false;     // every measurement of the run was verified and passed
    std::string verification;  // one line
    std::size_t plotted = 0;   // marks with a value
    std::size_t failed = 0;    // Failed marks
    std::size_t noisy = 0;     // plotted values marked noisy (a stacked bar counts once)

    // The mark under data point (hx, hy): the nearest whose box, grown by tol_x (x data units)
    // and tol_y (a fraction of the plot height), holds it. Returns (series index, mark index).
    std::optional<std::pair<std::size_t, std::size_t>> hit(double hx, double hy, double tol_x,
                                                           double tol_y) const;
};

// [SECTION] the standard charts of a benchmark run

// (a) the paper's chart: time of each backward-data algorithm / time of the forward algorithm,
// per layer (1 = as fast as forward), with the count of layers where via_forward beats col2im.
// forward_algo: the engine's forward algorithm to divide by ("" = im2col_gemm when measured,
// else the first measured). The peer's own bwd_data / fwd ratio is drawn as points.
Chart relative_time_chart(const bench::Results& r, const std::string& forward_algo = "");
// (b) per-operation share of each algorithm's time, stacked, per layer, for one pass.
Chart operation_share_chart(const bench::Results& r, Pass pass);
// (c) GFLOP/s per layer per algorithm of one pass, the peer as a line, the measured fp32 peak as
// a reference line.
Chart gflops_chart(const bench::Results& r, Pass pass);
// All of them for the passes in the results: relative (when fwd and bwd_data were measured),
// then ops_<pass> and gflops_<pass> per pass.
std::vector<Chart> standard_charts(const bench::Results& r);
// The standard charts that standard_charts leaves out for these results, each with why:
// "relative_bwd_data: skipped, needs passes fwd and bwd_data".
std::vector<std::string> skipped_charts(const bench::Results& r);

// (d) Several runs (machines, builds) side by side, for one pass: per algorithm measured in every
// run (and the peer), the sum of its median times over the layers that every run measured it
// on, one bar per run (legend: each run's label, e.g. its CPU, threads and date). A
// measurement that failed in a run makes that run's bar a FAIL marker. `labels` name the runs
// (same size as `runs`).
Chart machines_chart(const std::vector<bench::Results>& runs,
                     const std::vector<std::string>& labels, Pass pass);
// A run's label for machines_chart: "CPU, N threads, date"; where two would match, the build
// ("[baseline, kernels avx2]") where the builds differ, then the shortest tail of the run's path
// (`files`: results.json or its folder) that tells them apart.
std::vector<std::string> run_labels(const std::vector<bench::Results>& runs,
                                    const std::vector<std::string>& files);

// Layers where `a` is faster than `b` (median totals), over the layers where both ran and were
// verified, in one pass.
struct WinCount {
    int wins = 0;
    int compared = 0;
    std::vector<std::string> winners;  // layer names
};
WinCount count_wins(const bench::Results& r, Pass pass, const std::string& a, const std::string& b);

// [SECTION] helpers (ticks, colours, layer names)

// Axis bounds and tick counts are capped so that no data (zero, negative, NaN, infinite or a
// range of hundreds of decades) can make the tick loops run long or allocate much.
constexpr int kMaxTicks = 30;         // ticks per axis at most (plus one)
constexpr double kLogMin = 1e-300;    // a log axis never reaches below
constexpr double kLogMax = 1e300;     // nor above
constexpr double kLinearMax = 1e300;  // a linear axis stays within +-kLinearMax

// About `count` ticks at 1, 2, 5 x 10^k steps covering [lo, hi]; *lo and *hi are widened to
// the outer ticks.
std::vector<Tick> nice_ticks(double& lo, double& hi, int count = 6);
// Log axis ticks at 1, 2, 5 x 10^k inside [lo, hi] (lo > 0; only 10^k when [lo, hi] spans more
// than four decades); *lo and *hi widened to a 1-2-5 value.
std::vector<Tick> log_ticks(double& lo, double& hi);
// A fixed colour per algorithm / operation name, so the same name has the same colour in
// every chart.
Color algorithm_color(const std::string& name);
Color operation_color(const std::string& name);
// The profiler spans the engine's algorithms record, each with its own operation_color.
const std::vector<std::string>& known_operations();
// A short algorithm name for labels under narrow bars: "im2col_gemm" -> "im2col".
std::string short_algorithm_name(const std::string& name);
// "resnet_50:res2a_branch1" -> "res2a_branch1".
std::string short_layer_name(const std::string& name);

}  // namespace convlab::charts
