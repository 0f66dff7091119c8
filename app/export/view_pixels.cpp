// The view as pixels: PNG, numbered PNG sequences and GIF read back from the rendered frame
// (App::export_pixels, App::after_render).
#include "gui/app.hpp"

namespace convlab::ui {

void make_parent(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
}

// The pixels an export writes: the whole window for a shot, else the canvas's rectangle alone,
// at the framebuffer's resolution.
std::vector<unsigned char> App::export_pixels(int& w, int& h) const {
    std::vector<unsigned char> px = read_back_buffer(w, h, window);
    if (ex.window) return px;
    const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
    const auto at = [](float v, float sc, int hi) {
        return std::clamp(static_cast<int>(std::lround(v * sc)), 0, hi);
    };
    const int x0 = at(canvas_min.x, scale.x, w), x1 = at(canvas_max.x, scale.x, w);
    const int y0 = at(canvas_min.y, scale.y, h), y1 = at(canvas_max.y, scale.y, h);
    if (x1 <= x0 || y1 <= y0) throw Error("export: the canvas has no pixels");
    std::vector<unsigned char> out(static_cast<std::size_t>(x1 - x0) *
                                   static_cast<std::size_t>(y1 - y0) * 4);
    const std::size_t row = static_cast<std::size_t>(x1 - x0) * 4;
    for (int y = y0; y < y1; ++y)
        std::memcpy(out.data() + static_cast<std::size_t>(y - y0) * row,
                    px.data() + (static_cast<std::size_t>(y) * static_cast<std::size_t>(w) +
                                 static_cast<std::size_t>(x0)) *
                                    4,
                    row);
    w = x1 - x0;
    h = y1 - y0;
    return out;
}

// clean: this frame was drawn without the mouse (export_pending() when it began); the app's
// PNG and GIF exports wait for such a frame.
void App::after_render(bool clean) {
    if (!ex.window && !clean && (!ex.png.empty() || ex.sequence)) return;
    try {
        if (ex.canvas_grab) {
            int w = 0, h = 0;
            const auto px = read_back_buffer(w, h, window);
            // The canvas in framebuffer pixels (more than window units on a HiDPI screen).
            const ImVec2 fb = ImGui::GetIO().DisplayFramebufferScale;
            const auto at = [](float v, float scale, int lo, int hi) {
                return std::clamp(static_cast<int>(std::lround(v * scale)), lo, hi);
            };
            const int x0 = at(canvas_min.x, fb.x, 0, w), y0 = at(canvas_min.y, fb.y, 0, h);
            const int x1 = at(canvas_max.x, fb.x, x0, w), y1 = at(canvas_max.y, fb.y, y0, h);
            ex.grab_w = x1 - x0;
            ex.grab_h = y1 - y0;
            ex.grab.resize(static_cast<std::size_t>(ex.grab_w) *
                           static_cast<std::size_t>(ex.grab_h) * 4);
            for (int y = y0; y < y1; ++y)
                std::copy_n(px.begin() + (static_cast<std::ptrdiff_t>(y) * w + x0) * 4,
                            ex.grab_w * 4,
                            ex.grab.begin() + static_cast<std::ptrdiff_t>(y - y0) * ex.grab_w * 4);
            ex.canvas_grab = false;
        }
        if (!ex.png.empty()) {
            int w = 0, h = 0;
            auto px = export_pixels(w, h);
            make_parent(ex.png);
            write_png(ex.png, w, h, px);
            status = "wrote " + ex.png;
            offer_download(ex.png);
            ex.png.clear();
        }
        if (!ex.svg.empty()) {
            make_parent(ex.svg);
            write_file(ex.svg, svg());
            status = "wrote " + ex.svg;
            offer_download(ex.svg);
            ex.svg.clear();
        }
        if (ex.sequence && !ex.gif.empty()) {  // one GIF frame a step (gif_writer.hpp)
            int w = 0, h = 0;
            auto px = export_pixels(w, h);
            if (!ex.gif_out) {
                make_parent(ex.gif);
                ex.gif_out = std::make_unique<GifWriter>(ex.gif, gif_delay_cs(ex.gif_fps));
            }
            ex.gif_out->add(w, h, px);
            if (++ex.seq_next >= ex.seq_end) {
                ex.sequence = false;
                ex.gif_out->finish();
                status =
                    "wrote " + ex.gif + " (" + std::to_string(ex.gif_out->frames()) + " frames)";
                ex.gif_out.reset();
                offer_download(ex.gif);
            }
        }
        if (ex.sequence && ex.gif.empty()) {
            int w = 0, h = 0;
            auto px = export_pixels(w, h);
            char name[64];
            std::snprintf(name, sizeof name, "/%s_%04lld.png", s.request.view.c_str(),
                          static_cast<long long>(ex.seq_next));
            const std::string path = ex.dir + name;
            make_parent(path);
            write_png(path, w, h, px);
            offer_download(path);
            ex.written.push_back(path);
            if (++ex.seq_next >= ex.seq_end) {
                ex.sequence = false;
                status = "wrote " + std::to_string(ex.written.size()) + " PNGs to " + ex.dir;
            }
        }
    } catch (const std::exception& e) {
        status = e.what();
        ex.png.clear();
        ex.svg.clear();
        ex.sequence = false;
        ex.gif_out.reset();  // removes the unfinished GIF's temporary file
    }
}

}  // namespace convlab::ui
