// What the browser build cannot do, said where it is asked for: the animated GIF export (giflib)
// and the chart files (cairo) have no WebAssembly build here. The same interfaces as
// export/gif_writer.cpp and charts/chart_export.cpp; each export throws Error, which the app shows
// on its status line.
#include <algorithm>
#include <cmath>

#include "charts/chart_export.hpp"
#include "convlab/problem.hpp"
#include "export/gif_writer.hpp"

namespace convlab::ui {

namespace {
[[noreturn]] void no_gif(const std::string& path) {
    throw Error("cannot write " + path + ": the GIF export is not available in the browser");
}
}  // namespace

int gif_delay_cs(double fps) {
    if (!(fps >= kGifMinFps)) fps = kGifMinFps;  // also NaN
    fps = std::min(fps, kGifMaxFps);
    return static_cast<int>(std::lround(100.0 / fps));
}

struct GifWriter::Impl {
    std::string path;
};

GifWriter::GifWriter(std::string path, int) {
    no_gif(path);
}
GifWriter::~GifWriter() = default;
void GifWriter::add(int, int, const std::vector<unsigned char>&) {}
void GifWriter::finish() {}
int GifWriter::frames() const {
    return 0;
}
const std::string& GifWriter::path() const {
    return impl_->path;
}

void write_gif(const std::string& path, const std::vector<RgbaFrame>&, int) {
    no_gif(path);
}

}  // namespace convlab::ui

namespace convlab::charts {

const char* format_extension(Format f) {
    switch (f) {
        case Format::Svg:
            return "svg";
        case Format::Png:
            return "png";
        case Format::Pdf:
            return "pdf";
    }
    return "?";
}

void export_chart(const Chart&, const std::string& path, Format, const ExportSize&) {
    throw Error("cannot write " + path + ": chart files (cairo) are not available in the browser");
}

std::vector<std::string> export_chart_all(const Chart& chart, const std::string& dir,
                                          const ExportSize& size) {
    export_chart(chart, dir + "/" + chart.id + ".svg", Format::Svg, size);
    return {};
}

}  // namespace convlab::charts
