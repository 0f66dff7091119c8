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

}  // namespace convlab::ui::web
