// Headless shots: frames drawn in a hidden window, key scripts, frame-time reports.
#include "gui/app.hpp"

namespace convlab::ui {

namespace {

// CPU time of the whole process (all its threads) in milliseconds.
double process_cpu_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// The median of v (sorted in place).
double median_of(std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// [SECTION] key scripts (ShotOptions::keys)

// Runs a key script in the app: the keys between two focus words arrive at once (GLFW's
// callbacks called as a fast typist's keys would call them), then frames until every key has
// been handed out and the view and the lesson step they asked for are built.
void run_key_script(App& a, const std::vector<ScriptKey>& script) {
    const auto settle = [&] {
        // (and the exports they started: S, E)
        for (int i = 0; i < 100000 && (input_pending() || a.ex.sequence || !a.ex.png.empty()); ++i)
            render_frame(a, 0.0);
        for (int i = 0; i < 3; ++i) {
            a.update_lesson(true);
            a.poll(true);
            render_frame(a, 0.0);
        }
    };
    for (const ScriptKey& k : script) {
        if (!k.focus.empty()) {
            settle();
            a.focus_field = k.focus;
            for (int i = 0; i < 4 && !text_field_active(); ++i) render_frame(a, 0.0);
            if (!text_field_active())
                throw Error("--keys focus:" + k.focus +
                            ": the field did not take the keyboard (the sidebar's fields are "
                            "hidden in presenter mode)");
            continue;
        }
        if (!k.drop.empty()) {
            settle();
            const char* paths[] = {k.drop.c_str()};
            drop_callback(a.window, 1, paths);
            continue;
        }
        if (k.notes) {
            if (!a.presenter) settle();  // (a W before it opens the window at the frame's end)
            if (!a.presenter)
                throw Error("--keys notes:...: the presenter window is not open (W opens it)");
            a.presenter->key_event(k.key, GLFW_PRESS);
            a.presenter->key_event(k.key, GLFW_RELEASE);
            continue;
        }
        key_callback(a.window, k.key, 0, GLFW_PRESS, 0);
        if (k.ch) char_callback(a.window, k.ch);
        key_callback(a.window, k.key, 0, GLFW_RELEASE, 0);
    }
    settle();
}

FrameReport shot_in(Window& w, const ShotOptions& o) {
    App a;
    a.window = w.get();
    a.font = w.font();
    a.measure_read = true;
    a.headless = true;
    a.ex.window = !o.canvas_only;
    a.notes_window = !o.notes_out.empty();
    a.s.presenter = o.presenter;
    a.s.palette = o.palette;
    a.s.follow = o.follow;
    a.corner = ImVec2(static_cast<float>(o.corner_w), static_cast<float>(o.corner_h));
    a.s.playback.granularity = o.granularity;
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_ms();
    if (!o.lesson.empty()) {
        // The lesson step exactly as the player shows it (gui/lesson.cpp).
        a.lesson.open(o.lesson, o.lesson_step);
        a.update_lesson(true);  // evaluates the step and requests its view
        if (!a.lesson.plan()) throw Error(a.lesson.player.error());
        a.poll(true);
        a.update_lesson(true);  // its step range and highlights on the built view
        if (o.reveal && !a.lesson.set_revealed(true))
            throw Error("--reveal: step " + std::to_string(o.lesson_step + 1) + " of " + o.lesson +
                        " hides no cells");
    } else {
        app::ViewRequest r = request_of(o.view, o.problem);
        r.data = o.data;
        r.c0 = o.c0;
        a.request(r);
        a.poll(true);
    }
    FrameReport rep;
    rep.build_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rep.build_cpu_ms = process_cpu_ms() - cpu0;
    if (!a.view) throw Error("view " + o.view + ": " + a.s.error);
    const dim_t n = a.steps();
    if (o.lesson.empty() && (n > 0 || o.step != 0) && (o.step < 0 || o.step >= n))
        throw Error("--step " + std::to_string(o.step) + ": the " + o.view + " view has " +
                    std::to_string(n) + " steps at granularity " + granularity_name(o.granularity) +
                    " (0 to " + std::to_string(n - 1) + ")");
    if (o.lesson.empty()) a.s.playback.step = o.step;
    a.step_dirty = true;
    if (o.zoom > 0) {  // no fit: cells of o.zoom px from the canvas's top-left corner
        a.s.zoom = o.zoom;
        a.fit_auto = false;
    }
    if (o.view == "timings")
        prepare_timings_shot(*a.timings, {o.results, o.bench_quick, o.frames == 0, o.chart,
                                          o.hover_panel, o.hover_cell, o.peer, o.results_name});
    if (o.hover_panel >= 0 && o.view != "timings") {
        if (o.hover_panel >= static_cast<int>(a.view->panels.size()) || o.hover_cell < 0 ||
            o.hover_cell >= a.view->panels[static_cast<std::size_t>(o.hover_panel)].numel())
            throw Error("--hover: no such cell in the " + o.view + " view");
        a.s.hover = {o.hover_panel, o.hover_cell};
        a.s.hover_forced = true;
    }
    // Every option is checked before the first file is written: a command that fails writes
    // nothing.
    const dim_t to = o.seq_to < 0 ? n - 1 : o.seq_to;
    if ((!o.sequence_dir.empty() || !o.gif.empty()) &&
        (o.seq_from < 0 || o.seq_from > to || to >= n))
        throw Error("steps " + std::to_string(o.seq_from) + " to " + std::to_string(to) + ": the " +
                    o.view + " view has steps 0 to " + std::to_string(n - 1));
    // A few frames settle ImGui's layout (auto-sized items measure themselves on frame 1; a
    // lesson step that is unreadable fitted follows the step from the next frame on).
    for (int i = 0; i < 4; ++i) {
        const auto f0 = std::chrono::steady_clock::now();
        const double c0 = process_cpu_ms();
        render_frame(a, 0.0);
        glFinish();
        if (i == 0) {  // the fit and every panel's texture: what a new view costs before it shows
            rep.first_frame_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0)
                    .count();
            rep.first_frame_cpu_ms = process_cpu_ms() - c0;
        }
    }
    if (!o.keys.empty()) {
        run_key_script(a, parse_key_script(o.keys));
        rep.state = "view " + a.s.request.view + ", problem " + to_descriptor(a.s.request.problem) +
                    ", step " + std::to_string(a.s.playback.step);
        if (a.lesson.player.is_open())
            rep.state += ", lesson step " + std::to_string(a.lesson.player.step() + 1) + " of " +
                         std::to_string(a.lesson.player.num_steps());
        rep.state += a.notes_window ? ", presenter window open" : ", presenter window closed";
        if (!a.s.error.empty()) rep.state += ", error: " + a.s.error;
    }
    rep.canvas_x = a.canvas_min.x;
    rep.canvas_y = a.canvas_min.y;
    rep.canvas_w = a.canvas_size.x;
    rep.canvas_h = a.canvas_size.y;
    rep.drawn_w = a.drawn_size.x;
    rep.drawn_h = a.drawn_size.y;
    rep.cell_px = a.s.zoom;
    rep.must_read = a.read.must;
    rep.readable = a.read.ok;
    rep.text_px = a.read.text_px;
    rep.followed = a.s.follow;
    if (a.s.request.view == "timings") rep.timings_status = timings_status(*a.timings);
    if (!o.out.empty()) {
        a.ex.png = o.out;
        render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
    }
    if (o.canvas_image) {
        a.ex.canvas_grab = true;
        render_frame(a, 0.0);
        rep.image_w = a.ex.grab_w;
        rep.image_h = a.ex.grab_h;
        rep.image = std::move(a.ex.grab);
    }
    rep.canvas_prims = a.canvas_prims;
    rep.canvas_titles = a.canvas_titles;
    if (!o.svg.empty()) {
        a.ex.svg = o.svg;
        render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
        rep.svg_prims = a.svg_prims;  // and the canvas's of the same frame
        rep.canvas_prims = a.canvas_prims;
        rep.svg_titles = a.svg_titles;
        rep.canvas_titles = a.canvas_titles;
    }
    if (!o.sequence_dir.empty() || !o.gif.empty()) {
        if (!o.sequence_dir.empty()) a.ex.dir = o.sequence_dir;
        a.ex.gif = o.gif;
        a.ex.gif_fps = o.gif_fps;
        a.ex.sequence = true;
        a.ex.seq_next = o.seq_from;
        a.ex.seq_end = to + 1;
        while (a.ex.sequence) render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
    }
    if (!o.notes_out.empty()) {
        if (!a.presenter)
            throw Error("--notes-out: the presenter window did not open: " + a.status);
        a.status.clear();
        a.notes_png = o.notes_out;
        render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
    }
    if (o.frames > 0) {
        // Frames with a new step each (step_change) or none, timed by the wall clock and by the
        // process's CPU time: the medians and the wall clock's max.
        const auto run = [&](bool step_change, double& median, double& max, double& cpu) {
            std::vector<double> ms, cpu_ms;
            for (int i = 0; i < o.frames; ++i) {
                const auto f0 = std::chrono::steady_clock::now();
                const double c0 = process_cpu_ms();
                if (step_change) {
                    a.s.playback.step_forward(n);  // the worst case: a new step every frame
                    a.step_dirty = true;
                }
                render_frame(a, 0.0);
                glFinish();
                ms.push_back(
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0)
                        .count());
                cpu_ms.push_back(process_cpu_ms() - c0);
            }
            median = median_of(ms);
            max = ms.back();
            cpu = median_of(cpu_ms);
        };
        rep.frames = o.frames;
        run(true, rep.median_ms, rep.max_ms, rep.cpu_median_ms);
        // The same number of frames without a step change (hovering, panning, idle playback).
        run(false, rep.still_median_ms, rep.still_max_ms, rep.still_cpu_median_ms);
    }
    return rep;
}

}  // namespace

void check_key_script(const std::string& keys) {
    (void)parse_key_script(keys);
}

FrameReport shot(const ShotOptions& o) {
    if (!o.out.empty()) check_writable(o.out);
    if (!o.notes_out.empty()) check_writable(o.notes_out);
    Window w(o.width, o.height, false, "ConvLab shot");
    return shot_in(w, o);
}

std::vector<FrameReport> shots(const std::vector<ShotOptions>& list) {
    std::vector<FrameReport> r;
    if (list.empty()) return r;
    for (const auto& o : list)
        if (!o.out.empty()) check_writable(o.out);
    Window w(list[0].width, list[0].height, false, "ConvLab demo");
    for (const auto& o : list) {
        throw_if_cancelled();  // an interrupt ends a series between two pictures
        glfwSetWindowSize(w.get(), o.width, o.height);
        r.push_back(shot_in(w, o));
    }
    return r;
}

void check_writable(const std::string& path) {
    check_output_path(path);
}

void write_png(const std::string& path, int w, int h, const std::vector<unsigned char>& rgba) {
    OutputFile file(path);  // stb writes by name: into the temporary, renamed at commit
    if (!stbi_write_png(file.temp_path().c_str(), w, h, 4, rgba.data(), w * 4))
        file.fail("the PNG encoder failed");
    file.commit();
}

}  // namespace convlab::ui
