// The window and the frame loop: run_gui.
#include "gui/app.hpp"

namespace convlab::ui {

void render_frame(App& a, double dt, bool swap) {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    // An export of the canvas is read from a frame without the mouse: nothing hovered, no
    // tooltip, no linked cells.
    const bool clean = a.export_pending();
    if (clean) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    if (deliver_input(a.window)) a.leave_field = 2;
    ImGui::NewFrame();
    a.frame(dt);
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(a.window, &w, &h);
    glViewport(0, 0, w, h);
    const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(a.pal().background);
    glClearColor(bg.x, bg.y, bg.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    a.after_render(clean);
    if (swap) glfwSwapBuffers(a.window);
    a.present_notes();
}

app::ViewRequest request_of(const std::string& view, const std::string& desc) {
    app::ViewRequest r;
    r.view = view;
    r.problem = parse_descriptor(desc);
    r.problem.check();
    return r;
}

void run_gui(const GuiOptions& o) {
    app::ViewRequest r = request_of(o.view, o.problem);
    // The settings of the last run (a damaged file: the defaults, said on the status line).
    const std::string settings_file = settings_path();
    std::string warning;
    const Settings st = load_settings(settings_file, &warning);
    // On the heap, owned by the frame function: in the browser run_frames unwinds this stack
    // frame while the frames go on.
    const auto w = std::make_shared<Window>(st.window_width, st.window_height, true, "ConvLab");
    const auto ap = std::make_shared<App>();
    App& a = *ap;
    a.window = w->get();
    a.font = w->font();
    a.content_scale = w->content_scale();
    a.measure_read = true;
    a.apply_settings(st);
    if (!warning.empty()) a.status = "settings: " + warning;
    a.s.presenter = a.s.presenter || o.presenter;
    a.s.follow = o.follow;
    if (o.presenter) a.toggle_fullscreen();
    std::string lesson_file = o.lesson;
    std::size_t lesson_step = o.lesson_step;
    if (o.restore_last && !st.lesson.empty() && std::filesystem::is_regular_file(st.lesson)) {
        lesson_file = st.lesson;
        lesson_step = st.lesson_step;
    }
    a.s.request = r;
    a.edit = r.problem;
    a.s.playback.step = o.step;  // kept (clamped) when the view arrives
    a.s.playback.granularity = o.granularity;
    if (!lesson_file.empty()) a.lesson.open(lesson_file, lesson_step);
    if (!a.lesson.player.is_open()) a.request(r);  // no lesson (or a malformed one): the view
    // (Captures destroyed in reverse: the App before its window.)
    auto frame = [w, ap, on_link = o.on_link, last = std::chrono::steady_clock::now(),
                  link = std::string()]() mutable {
        App& fa = *ap;
#ifdef __EMSCRIPTEN__
        glfwPollEvents();  // the browser calls each frame: no waiting here
#else
        // Idle (paused, nothing building): wait for events instead of spinning.
        if (fa.s.playback.paused && !fa.job && !fa.ex.sequence)
            glfwWaitEventsTimeout(0.1);
        else
            glfwPollEvents();
#endif
        const auto now = std::chrono::steady_clock::now();
        const double dt = std::chrono::duration<double>(now - last).count();
        last = now;
        render_frame(fa, dt);
        if (on_link)
            if (std::string now_link = fa.link(); now_link != link) on_link(link = now_link);
    };
#ifdef __EMSCRIPTEN__
    web::run_frames(std::move(frame));  // never returns: the browser calls frame() from now on
#else
    while (!glfwWindowShouldClose(a.window)) frame();
    // Kept for the next start; a failure is said, never lost silently, and never fails the run.
    try {
        save_settings(a.current_settings(), settings_file);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "convlab: settings not saved: %s\n", e.what());
    }
#endif
}

}  // namespace convlab::ui
