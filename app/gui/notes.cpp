// The presenter window's content and full screen.
#include "gui/app.hpp"

namespace convlab::ui {

// [SECTION] the presenter window

// Its content: the lesson's notes (gui/lesson.cpp), or without a lesson the view's step and
// check; then the keys.
void App::draw_notes() {
    const Palette& P = pal();
    const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(P.background);
    if (0.2126f * bg.x + 0.7152f * bg.y + 0.0722f * bg.z < 0.5f)
        ImGui::StyleColorsDark();
    else
        ImGui::StyleColorsLight();
    ImGui::GetStyle().Colors[ImGuiCol_Text] = ImGui::ColorConvertU32ToFloat4(P.panel_text);
    // A shot's clock is fixed, so that its picture depends on the step alone.
    const double elapsed =
        headless ? 0.0
                 : std::chrono::duration<double>(std::chrono::steady_clock::now() - notes_opened)
                       .count();
    const std::string clock = headless ? "12:00   ·   0:00:00 since the presenter window opened"
                                       : clock_line(std::time(nullptr), elapsed);
    const LessonColours c{
        P.panel_text, P.dim_text, P.good, P.bad, lesson_highlight_colour(s.palette), P.background};
    lesson.notes(c, clock);
    if (!lesson.active() && view) {
        ImGui::TextWrapped("No lesson open: the %s view, step %lld of %lld.", view->name.c_str(),
                           static_cast<long long>(s.playback.step + 1),
                           static_cast<long long>(steps()));
        ImGui::TextWrapped("%s", view->caption.c_str());
        if (!view->check.empty()) ImGui::TextWrapped("check: %s", view->check.c_str());
    }
    ImGui::Separator();
    ImGui::PushStyleColor(ImGuiCol_Text, P.dim_text);
    ImGui::TextWrapped(
        "Keys here act as in the main window: PgDn / N next step, PgUp / B previous, R reveal, "
        "space play, left / right one step, Z follow, F fit, S the canvas as PNG, F11 full "
        "screen (the main window, on its monitor), W closes this window.");
    ImGui::PopStyleColor();
    if (ImGui::Button("close (W)")) notes_window = false;
}

// Opens or closes the presenter window as notes_window says, and draws its frame (after the
// main window's, outside its ImGui frame).
void App::present_notes() {
    if (presenter && (!notes_window || presenter->close_requested())) {
        presenter.reset();
        notes_window = false;
    }
    if (!notes_window) return;
    if (!presenter) {
        try {
            presenter = std::make_unique<PresenterWindow>(window, !headless, 1280, 800);
        } catch (const std::exception& e) {
            status = e.what();
            notes_window = false;
            return;
        }
        // Its keys are the app's, as if pressed in the main window (never a text field's).
        presenter->on_key = queue_app_key;
        notes_opened = std::chrono::steady_clock::now();
    }
    std::vector<unsigned char> px;
    int w = 0, h = 0;
    presenter->render([this] { draw_notes(); }, pal().background, notes_png.empty() ? nullptr : &px,
                      &w, &h);
    if (!notes_png.empty()) {
        try {
            make_parent(notes_png);
            write_png(notes_png, w, h, px);
            status = "wrote " + notes_png;
        } catch (const std::exception& e) {
            status = e.what();
        }
        notes_png.clear();
    }
}

void App::toggle_fullscreen() {
    // Full screen on the monitor the window is on (the projector, where it was moved there).
    GLFWmonitor* mon = monitor_of(window);
    if (!mon) return;
    if (!fullscreen) {
        glfwGetWindowPos(window, &saved_x, &saved_y);
        glfwGetWindowSize(window, &saved_w, &saved_h);
        const GLFWvidmode* mode = glfwGetVideoMode(mon);
        glfwSetWindowMonitor(window, mon, 0, 0, mode->width, mode->height, mode->refreshRate);
    } else {
        glfwSetWindowMonitor(window, nullptr, saved_x, saved_y, saved_w, saved_h, 0);
    }
    fullscreen = !fullscreen;
}

}  // namespace convlab::ui
