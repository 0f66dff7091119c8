#include "web/web_glue.hpp"

#include <emscripten.h>

#include <cstdlib>
#include <utility>

namespace convlab::ui::web {

namespace {

std::function<void()>& frame_fn() {
    static std::function<void()> f;
    return f;
}

void call_frame() {
    frame_fn()();
}

// clang-format off
EM_JS(char*, js_location_hash, (), {
    return stringToNewUTF8(window.location.hash);
});
EM_JS(void, js_set_location_hash, (const char* fragment), {
    const f = UTF8ToString(fragment);
    if (window.location.hash !== f) history.replaceState(null, "", f);
});
EM_JS(double, js_device_pixel_ratio, (), {
    return window.devicePixelRatio || 1;
});
EM_JS(void, js_fit_canvas, (), {
    const r = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(window.innerWidth * r));
    const h = Math.max(1, Math.round(window.innerHeight * r));
    const c = Module["canvas"];
    // Browser.setCanvasSize tells GLFW (its resize listener), which reports the new size.
    if (c.width !== w || c.height !== h) Browser.setCanvasSize(w, h);
});
EM_JS(int, js_toggle_fullscreen, (), {
    if (document.fullscreenElement) {
        document.exitFullscreen().catch(() => {});
        return 0;
    }
    const p = document.documentElement.requestFullscreen();
    if (p) p.catch(() => {});
    return 1;
});
EM_JS(double, js_corner_width, (), {
    const b = document.getElementById("bar");
    return b ? b.getBoundingClientRect().width * (window.devicePixelRatio || 1) : 0;
});
EM_JS(double, js_corner_height, (), {
    const b = document.getElementById("bar");
    return b ? b.getBoundingClientRect().height * (window.devicePixelRatio || 1) : 0;
});
EM_JS(void, js_copy_text, (const char* text), {
    const t = UTF8ToString(text);
    const ask = () => window.prompt("copy this", t);
    if (navigator.clipboard && navigator.clipboard.writeText)
        navigator.clipboard.writeText(t).catch(ask);
    else
        ask();
});
EM_JS(void, js_download, (const char* path), {
    const p = UTF8ToString(path);
    try {
        const blob = new Blob([FS.readFile(p)]);
        const a = document.createElement("a");
        a.href = URL.createObjectURL(blob);
        a.download = p.substring(p.lastIndexOf("/") + 1);
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    } catch (e) {
        console.error("convlab: cannot download " + p + ": " + e);
    }
});
// clang-format on

}  // namespace

void run_frames(std::function<void()> frame) {
    frame_fn() = std::move(frame);
    // fps 0: the browser's own frame rate (requestAnimationFrame); simulate_infinite_loop 1:
    // does not return, so the caller's stack frame (its App and window) is never unwound.
    emscripten_set_main_loop(call_frame, 0, 1);
    std::abort();  // not reached
}

std::string location_hash() {
    char* s = js_location_hash();
    std::string r = s ? s : "";
    std::free(s);
    return r;
}

void set_location_hash(const std::string& fragment) {
    js_set_location_hash(fragment.c_str());
}

float device_pixel_ratio() {
    const double r = js_device_pixel_ratio();
    return r >= 1.0 ? static_cast<float>(r) : 1.0f;
}

void fit_canvas() {
    js_fit_canvas();
}

bool toggle_fullscreen() {
    return js_toggle_fullscreen() != 0;
}

void copy_text(const std::string& text) {
    js_copy_text(text.c_str());
}

void download(const std::string& path) {
    js_download(path.c_str());
}

float corner_width() {
    return static_cast<float>(js_corner_width());
}

float corner_height() {
    return static_cast<float>(js_corner_height());
}

}  // namespace convlab::ui::web
