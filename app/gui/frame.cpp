// The frame: dropped files, the settings kept between runs, App::frame.
#include "gui/app.hpp"

namespace convlab::ui {

std::vector<std::string> g_dropped;
void drop_callback(GLFWwindow*, int count, const char** paths) {
    for (int i = 0; i < count && g_dropped.size() < 64; ++i) g_dropped.emplace_back(paths[i]);
}

void App::open_dropped() {
    std::vector<std::string> files;
    files.swap(g_dropped);
    for (const std::string& f : files) {
        const std::string ext = std::filesystem::path(f).extension().string();
        if (ext == ".toml") {
            lesson.open(f, 0);  // a malformed lesson says so in the narration panel
            status = "opened " + f;
        } else if (ext == ".json") {
            if (lesson.active()) lesson.close();
            set_view("timings");
            show_results_file(*timings, f);
            status = "showing " + f;
        } else {
            status = f + ": not opened (a lesson is a .toml file, benchmark results a .json)";
        }
    }
}

void App::apply_settings(const Settings& set) {
    s.palette = 0;
    for (int i = 0; i < kNumPalettes; ++i)
        if (set.palette == kPaletteKeys[i]) s.palette = i;
    s.font_scale = set.font_scale;
    s.presenter = set.presenter;
    notes = set.notes;
}

Settings App::current_settings() const {
    Settings out;
    out.palette = kPaletteKeys[std::clamp(s.palette, 0, kNumPalettes - 1)];
    out.font_scale = std::clamp(s.font_scale, 0.6f, 3.0f);
    out.presenter = s.presenter;
    out.notes = notes;
    if (lesson.player.is_open()) {
        out.lesson = lesson.player.file();
        out.lesson_step = lesson.player.step();
    }
    out.view = s.request.view;
    out.problem = to_descriptor(s.request.problem);
    int w = 0, h = 0;
    glfwGetWindowSize(window, &w, &h);
    if (!glfwGetWindowMonitor(window) && w >= 320 && h >= 240) {  // not full screen
        out.window_width = std::min(w, 16384);
        out.window_height = std::min(h, 16384);
    }
    return out;
}

void App::frame(double dt) {
    ImGuiIO& io = ImGui::GetIO();
    io.FontGlobalScale = s.font_scale * (s.presenter ? 1.35f : 1.0f);
#ifdef __EMSCRIPTEN__
    corner = ImVec2(web::corner_width(), web::corner_height());  // the page's "copy link" bar
#endif
    poll(false);
    open_dropped();
    keyboard();
    if (view && s.playback.advance(dt, steps())) step_dirty = true;
    update_lesson();
    if (ex.sequence) {
        s.playback.paused = true;
        s.playback.scrub(ex.seq_next, steps());
        step_dirty = true;
    }
    update_step();
    update_lut();
    const Palette& P = pal();
    if (styled_palette != s.palette) {
        // Widgets (input fields, buttons, sliders) follow the palette's brightness: a dark
        // palette (high contrast) gets ImGui's dark widgets, so its light text never lands on a
        // light field.
        const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(P.background);
        const float luma = 0.2126f * bg.x + 0.7152f * bg.y + 0.0722f * bg.z;
        if (luma < 0.5f)
            ImGui::StyleColorsDark();
        else
            ImGui::StyleColorsLight();
        styled_palette = s.palette;
    }
    ImGui::GetStyle().Colors[ImGuiCol_WindowBg] = ImGui::ColorConvertU32ToFloat4(P.background);
    ImGui::GetStyle().Colors[ImGuiCol_Text] = ImGui::ColorConvertU32ToFloat4(P.panel_text);
    const bool side = show_sidebar && !s.presenter;
    // The timings view keeps only the lesson, view, display and window export in the sidebar
    // (sidebar): narrower, its charts get the width, unless a lesson's step list is shown.
    // A window under 1200 px wide (a 1024x768 projector) gets the narrow sidebar too: its
    // canvas keeps 720 of the 1024 px for the cells.
    const bool narrow =
        (s.request.view == "timings" && !lesson.active()) || io.DisplaySize.x < 1200.0f;
    const float sw = side ? (narrow ? 300.0f : 380.0f) * s.font_scale * content_scale : 0.0f;
    if (side) sidebar(sw);
    lesson.strip = s.presenter && !notes;
    // With the presenter window open the narration is there, and the canvas here keeps the
    // whole height (the projector shows no notes).
    const float lesson_h = notes_window
                               ? 0.0f
                               : lesson.panel_height(io.DisplaySize.x - sw, io.DisplaySize.y,
                                                     short_window() ? 0.3f : 0.5f);
    ImGui::SetNextWindowPos(ImVec2(sw, 0));
    ImGui::SetNextWindowSize(ImVec2(io.DisplaySize.x - sw, io.DisplaySize.y - lesson_h));
    ImGui::Begin("view", nullptr,
                 ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                     ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoBringToFrontOnFocus);
    header();
    if (s.presenter && !short_window()) {
        const char* keys =
            "presenter: space play  ←/→ step  G granularity  1-9,0 view  C palette  +/- font  "
            "F fit  Z follow  T narration  W notes window  F11 full screen  Esc leave";
        if (corner_room() > 0) {  // beside the page's bar: cut before it
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            one_line(keys);
            ImGui::PopStyleColor();
        } else {
            ImGui::TextDisabled("%s", keys);
        }
    }
    // The canvas fills the rest of the view window (canvas(), or the timings view's charts); it
    // records its rectangle (canvas_min, canvas_max).
    canvas();
    ImGui::End();
    if (!notes_window)
        lesson.panel(ImVec2(sw, io.DisplaySize.y - lesson_h),
                     ImVec2(io.DisplaySize.x - sw, lesson_h),
                     {P.panel_text, P.dim_text, P.good, P.bad, lesson_highlight_colour(s.palette),
                      P.background});
    // Enter or Escape in a text field: ImGui ends the edit in that frame; where the field still
    // holds the keyboard a frame later, it is taken away, so the view keys reach the view.
    if (leave_field > 0 && --leave_field == 0 && text_field_active())
        ImGui::SetWindowFocus(nullptr);
    if (show_help) {
        ImGui::Begin("keys", &show_help, ImGuiWindowFlags_AlwaysAutoResize);
        ImGui::TextUnformatted(
            "space      play / pause\n"
            "left/right step back / forward\n"
            "Home/End   first / last step\n"
            "up/down    speed\n"
            "G          granularity element / line / tile / whole\n"
            "L          loop\n"
            "1-9, 0     views; PgUp/PgDn previous / next\n"
            "F          fit to window\n"
            "Z          follow the step (zoomed in)\n"
            "C          palette\n"
            "P          presenter mode\n"
            "T          presenter: narration / strip\n"
            "W          presenter window (your screen)\n"
            "R          lesson: reveal the ? cells\n"
            "Tab        sidebar\n"
            "F11        full screen\n"
            "+/-        font size\n"
            "S          the canvas as PNG\n"
            "E          the canvas as GIF (a lesson step's steps)\n"
            "Esc        unpin / leave presenter\n"
            "PgDn/N     lesson: next step\n"
            "PgUp/B     lesson: previous step");
        ImGui::End();
    }
}

}  // namespace convlab::ui
