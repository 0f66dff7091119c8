// Chart export to files with cairo: SVG, PNG and PDF, headless (no display). The picture is
// charts/chart_paint.hpp's primitive list (the one the app's Timings panel replays), its texts
// measured with cairo's font so that the layout fits the file, replayed with cairo.
#pragma once

#include <string>
#include <vector>

#include "charts/chart.hpp"
#include "export/draw_prim.hpp"

typedef struct _cairo cairo_t;  // cairo.h's

namespace convlab::charts {

enum class Format { Svg, Png, Pdf };
const char* format_extension(Format f);  // "svg", "png", "pdf"

// Page size of an export in points (SVG/PDF); PNG is drawn at png_scale pixels per point.
struct ExportSize {
    double width = 1280;
    double height = 720;
    double png_scale = 1.5;  // 1920 x 1080 pixels
};

// Writes `chart` to `path` (through a temporary file renamed into place, so a failure leaves no
// partial file). Throws Error naming the path and cairo's reason. Returns how many primitives of
// each kind it drew.
app::PrimCounts export_chart(const Chart& chart, const std::string& path, Format format,
                             const ExportSize& size = {});
// Draws a primitive list with cairo (a text's baseline 0.8 of its size below the line's top, as
// app::write_svg puts it); returns how many of each kind it drew.
app::PrimCounts replay(cairo_t* cr, const std::vector<app::DrawPrim>& prims);
// The primitives a file of this size draws (texts measured with cairo's font).
std::vector<app::DrawPrim> file_prims(const Chart& chart, const ExportSize& size = {});
// Writes dir/<chart.id>.svg, .png and .pdf; returns the paths written.
std::vector<std::string> export_chart_all(const Chart& chart, const std::string& dir,
                                          const ExportSize& size = {});

}  // namespace convlab::charts
