// The browser's side of the app (emscripten builds only): the frame loop the browser drives and
// the page's URL fragment.
#pragma once

#include <functional>
#include <string>

namespace convlab::ui::web {

// Hands frame() to the browser, which calls it once a display frame
// (emscripten_set_main_loop), and never returns: the caller's locals stay alive, as in a loop.
[[noreturn]] void run_frames(std::function<void()> frame);

// The page's URL fragment, '#' first ("" when it has none).
std::string location_hash();
// Replaces the page's fragment without a new history entry and without a hashchange event.
void set_location_hash(const std::string& fragment);

}  // namespace convlab::ui::web
