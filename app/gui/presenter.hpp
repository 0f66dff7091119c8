// The presenter window (internal to the app's ui library): a second GLFW window for the teacher's
// screen, as slide software's presenter view, while the main window's canvas goes to the
// projector without any narration. It has its own Dear ImGui context (ImGui 1.86 has no
// multi-viewport support) and shares the main window's OpenGL objects; gui.cpp's App decides
// what it shows (App::draw_notes) and takes its keys as its own.
#pragma once

#include <ctime>
#include <functional>
#include <string>
#include <vector>

struct GLFWwindow;
struct GLFWmonitor;
struct ImGuiContext;
struct ImFont;

namespace convlab::ui {

// The current ImGui context set up as the app's windows are: no .ini file, the light style,
// DejaVu Sans at font_px (arrows, Greek, math symbols; ImGui's own font where it is missing).
// Returns the font.
ImFont* setup_app_context(float font_px);

// The monitor that holds the centre of window w (its full-screen monitor when it is full screen),
// else the primary monitor; nullptr when there is none.
GLFWmonitor* monitor_of(GLFWwindow* w);

// "10:42   ·   1:05:09 since the presenter window opened": the time of day `now` (local) and an
// elapsed time in seconds.
std::string clock_line(std::time_t now, double elapsed_s);

class PresenterWindow {
  public:
    // Opens a w x h window beside `main` (sharing its OpenGL objects), with its own ImGui context
    // and the same font; where the machine has two monitors or more, on one the main window is
    // not on. visible false: a hidden window for headless pictures. Throws Error when GLFW cannot
    // open it. `main`'s OpenGL context is current again on return.
    PresenterWindow(GLFWwindow* main, bool visible, int w, int h);
    ~PresenterWindow();
    PresenterWindow(const PresenterWindow&) = delete;
    PresenterWindow& operator=(const PresenterWindow&) = delete;

    // Called for each key event in this window (GLFW key and action): the app treats them as
    // pressed in its main window.
    std::function<void(int key, int action)> on_key;
    // A key event as GLFW delivers one to this window (what the headless key scripts use).
    void key_event(int key, int action);

    // The window's close button was pressed.
    bool close_requested() const;
    GLFWwindow* get() const { return win_; }

    // One frame: draw() fills a window-sized ImGui window (background: packed ImU32 colour),
    // then the picture is shown; pixels: also read back (RGBA rows, top row first) into it, with
    // its size in w and h. Restores the main window's OpenGL and ImGui contexts.
    void render(const std::function<void()>& draw, unsigned background,
                std::vector<unsigned char>* pixels = nullptr, int* w = nullptr, int* h = nullptr);

  private:
    GLFWwindow* win_ = nullptr;
    GLFWwindow* main_ = nullptr;
    ImGuiContext* ctx_ = nullptr;
};

}  // namespace convlab::ui
