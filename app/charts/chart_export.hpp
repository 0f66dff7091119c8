// Chart export to files with cairo: SVG, PNG and PDF, headless (no display). The drawing reads
// only the chart model (chart.hpp); the app's on-screen drawing reads the same model.
#pragma once

#include <string>
#include <vector>

#include "charts/chart.hpp"

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
// partial file). Throws Error naming the path and cairo's reason.
void export_chart(const Chart& chart, const std::string& path, Format format,
                  const ExportSize& size = {});
// Writes dir/<chart.id>.svg, .png and .pdf; returns the paths written.
std::vector<std::string> export_chart_all(const Chart& chart, const std::string& dir,
                                          const ExportSize& size = {});

}  // namespace convlab::charts
