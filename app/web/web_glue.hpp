// The browser's side of the app (emscripten builds only): the frame loop the browser drives, the
// page's URL fragment, its canvas and full screen, and files handed to the user as downloads.
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

// Device pixels per CSS pixel (2 on most high-DPI screens), at least 1.
float device_pixel_ratio();
// Sizes the canvas's drawing buffer to the browser window (in device pixels) when it differs,
// which GLFW reports as a window resize.
void fit_canvas();
// Asks the browser to show the page full screen, or to leave full screen; returns whether the
// page is full screen once the browser has done it (it may refuse without a user gesture).
bool toggle_fullscreen();

// The box the page draws over the canvas's top right corner (its "copy link" bar), in device
// pixels; 0 x 0 when the page has none.
float corner_width();
float corner_height();

// Copies text to the system's clipboard (navigator.clipboard); where the page may not, offers
// it in a prompt to copy by hand, as the page's "copy link" does.
void copy_text(const std::string& text);

// Hands the file at `path` (in the page's memory file system) to the user as a download named as
// its last path component. A file that cannot be read is said on the console.
void download(const std::string& path);

}  // namespace convlab::ui::web
