// The app's keys (App::keyboard, App::key_press).
#include "gui/app.hpp"

namespace convlab::ui {

// [SECTION] keyboard

void App::keyboard() {
    for (const KeyPress& k : take_key_presses()) key_press(k.key, k.repeat);
}

void App::key_press(int key, bool is_repeat) {
    const dim_t n = steps();
    auto& pb = s.playback;
    const auto pressed = [&](int k, bool repeat = false) {
        return k == key && (repeat || !is_repeat);
    };
    if (pressed(GLFW_KEY_SPACE)) pb.paused = !pb.paused;
    if (pressed(GLFW_KEY_RIGHT, true)) {
        pb.paused = true;
        pb.step_forward(n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_LEFT, true)) {
        pb.paused = true;
        pb.step_back(n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_HOME)) {
        pb.scrub(0, n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_END)) {
        pb.scrub(n - 1, n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_UP, true)) pb.speed = std::min(120.0, pb.speed * 1.5);
    if (pressed(GLFW_KEY_DOWN, true)) pb.speed = std::max(0.25, pb.speed / 1.5);
    if (pressed(GLFW_KEY_G)) {
        pb.granularity = pb.granularity == Granularity::Element ? Granularity::Line
                         : pb.granularity == Granularity::Line  ? Granularity::Tile
                         : pb.granularity == Granularity::Tile  ? Granularity::Whole
                                                                : Granularity::Element;
        pb.step = 0;
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_L)) pb.loop = !pb.loop;
    if (pressed(GLFW_KEY_C)) s.palette = (s.palette + 1) % kNumPalettes;
    if (pressed(GLFW_KEY_F)) set_follow(false);  // the fit
    if (pressed(GLFW_KEY_Z)) set_follow(!s.follow);
    if (pressed(GLFW_KEY_P)) {
        s.presenter = !s.presenter;
        fit_chosen = false;
    }
    if (pressed(GLFW_KEY_T)) notes = !notes;
    if (pressed(GLFW_KEY_W)) notes_window = !notes_window;
    if (pressed(GLFW_KEY_TAB)) show_sidebar = !show_sidebar;
    if (pressed(GLFW_KEY_F11)) toggle_fullscreen();
    if (pressed(GLFW_KEY_H) || pressed(GLFW_KEY_F1)) show_help = !show_help;
    if (pressed(GLFW_KEY_S)) ex.png = ex.dir + "/" + s.request.view + ".png";
    if (pressed(GLFW_KEY_E) && s.request.view != "timings") gif_key();
    if (pressed(GLFW_KEY_EQUAL, true) || pressed(GLFW_KEY_KP_ADD, true))
        s.font_scale = std::min(3.0f, s.font_scale + 0.1f);
    if (pressed(GLFW_KEY_MINUS, true) || pressed(GLFW_KEY_KP_SUBTRACT, true))
        s.font_scale = std::max(0.6f, s.font_scale - 0.1f);
    if (pressed(GLFW_KEY_ESCAPE)) {
        if (s.pinned.valid())
            s.pinned = {};
        else if (s.presenter) {
            s.presenter = false;
            if (fullscreen) toggle_fullscreen();
        }
    }
    const auto& names = app::view_names();
    // 1-9 and 0 (the tenth, as on the keyboard's row).
    for (int k = 0; k < static_cast<int>(names.size()) && k < 10; ++k)
        if (pressed(k < 9 ? GLFW_KEY_1 + k : GLFW_KEY_0))
            set_view(names[static_cast<std::size_t>(k)]);
    if (lesson.keyboard(pressed)) return;  // a lesson: PgDn / PgUp (and N / B) step through it
    if (pressed(GLFW_KEY_PAGE_DOWN) || pressed(GLFW_KEY_PAGE_UP)) {
        const auto it = std::find(names.begin(), names.end(), s.request.view);
        const auto i = static_cast<int>(it - names.begin());
        const int m = static_cast<int>(names.size());
        set_view(
            names[static_cast<std::size_t>((i + (pressed(GLFW_KEY_PAGE_DOWN) ? 1 : m - 1)) % m)]);
    }
}

}  // namespace convlab::ui
