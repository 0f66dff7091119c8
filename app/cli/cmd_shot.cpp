// convlab shot: renders one view of the desktop app, exactly as the window shows it, into a PNG
// without a person (and measures frame times). Without a display it re-runs itself under
// xvfb-run.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/cli_common.hpp"
#include "convlab/output_file.hpp"
#include "export/gif_writer.hpp"
#include "gui/gui.hpp"
#include "lesson/lesson.hpp"
#include "model/timings_state.hpp"

namespace convlab::cli {

namespace {

void parse_size(const std::string& text, int& w, int& h) {
    const auto x = text.find('x');
    if (x == std::string::npos) throw Error("--size '" + text + "': expected WxH, e.g. 1600x1000");
    w = static_cast<int>(parse_integer("--size width", text.substr(0, x), 320, 8192));
    h = static_cast<int>(parse_integer("--size height", text.substr(x + 1), 240, 8192));
}

// --from A --to B [--fps F]: the steps of --gif (or of --sequence, as --steps A:B), and the GIF's
// speed in steps a second.
void gif_range(const Options& opts, ui::ShotOptions& o) {
    const auto* from = opts.get("--from");
    const auto* to = opts.get("--to");
    const auto* fps = opts.get("--fps");
    if ((from || to) && o.gif.empty() && o.sequence_dir.empty())
        throw Error("--from and --to go with --gif (or --sequence)");
    if (fps && o.gif.empty()) throw Error("--fps goes with --gif");
    if ((from || to) && opts.has("--steps")) throw Error("--steps A:B and --from/--to: give one");
    if (opts.has("--steps") && o.sequence_dir.empty())
        throw Error("--steps goes with --sequence (--gif takes --from A --to B)");
    if (from) o.seq_from = parse_integer("--from", *from, 0, std::int64_t{1} << 40);
    if (to) o.seq_to = parse_integer("--to", *to, 0, std::int64_t{1} << 40);
    if (o.seq_to >= 0 && o.seq_from > o.seq_to)
        throw Error("--from " + std::to_string(o.seq_from) + " --to " + std::to_string(o.seq_to) +
                    ": the first step must not come after the last");
    if (fps) {
        char* end = nullptr;
        o.gif_fps = std::strtod(fps->c_str(), &end);
        if (fps->empty() || *end != '\0' || !(o.gif_fps >= ui::kGifMinFps) ||
            !(o.gif_fps <= ui::kGifMaxFps))
            throw Error("--fps '" + *fps + "': expected a number of steps a second in [0.1, 50]");
    }
}

}  // namespace

// "readable: ..." for a shot's report: the rule, how many of the cells that must be read show
// their value at that size, and the digits' size.
std::string readability_line(const ui::FrameReport& r) {
    char b[200];
    std::snprintf(
        b, sizeof b,
        "%s: %lld of %lld cells of the step show their value, digits %.1f px (rule: %.0f px)",
        r.readable_ok() ? "readable" : "NOT readable", r.readable, r.must_read,
        static_cast<double>(r.text_px), static_cast<double>(app::kReadableTextPx));
    return b;
}

// --lesson FILE: a path, or a lesson of the lessons/ directory by number or name ("17",
// "17_worked_problem"). Error when none matches.
std::string lesson_path(const std::string& arg) {
    if (std::filesystem::is_regular_file(arg)) return arg;
    const bool number =
        !arg.empty() && arg.size() <= 2 &&
        std::all_of(arg.begin(), arg.end(), [](char c) { return c >= '0' && c <= '9'; });
    const std::string prefix = number && arg.size() == 1 ? "0" + arg + "_"
                               : number                  ? arg + "_"
                                                         : arg;
    for (const auto& f : lesson::lesson_files(lesson::default_lesson_dir()))
        if (std::filesystem::path(f).filename().string().rfind(prefix, 0) == 0) return f;
    throw Error("--lesson '" + arg + "': no such file, and no lesson of " +
                lesson::default_lesson_dir() + " starts with '" + prefix + "'");
}

// --lesson FILE [--step K]: the lesson file and its step (K from 1, as `convlab lesson show`).
void lesson_options(const Options& opts, std::string& file, std::size_t& step) {
    file = lesson_path(*opts.get("--lesson"));
    // Load it now: a malformed lesson fails before any window opens (file:line: what).
    const lesson::Lesson l = lesson::load_lesson(file);
    step = 0;
    if (const auto* s = opts.get("--step"))
        step = static_cast<std::size_t>(
            parse_integer("--step (a step of the lesson, from 1)", *s, 1,
                          static_cast<std::int64_t>(std::max<std::size_t>(1, l.steps.size()))) -
            1);
}

// The options shared by shot and demo.
ui::ShotOptions shot_options(const Options& opts) {
    ui::ShotOptions o;
    if (opts.has("--lesson")) {
        if (opts.has("--view") || opts.has("--problem"))
            throw Error("--lesson: the step sets the view and the problem (drop --view/--problem)");
        lesson_options(opts, o.lesson, o.lesson_step);
    }
    o.view = opts.value_or("--view", "im2col");
    o.problem = opts.value_or("--problem", o.problem);
    // Fail on a bad descriptor before any window is opened.
    in_context("--problem", [&] {
        parse_descriptor(o.problem).check();
        return 0;
    });
    if (const auto* s = opts.get("--step"); s && o.lesson.empty())
        o.step = parse_integer("--step", *s, 0, std::int64_t{1} << 40);
    if (const auto* s = opts.get("--size")) parse_size(*s, o.width, o.height);
    if (const auto* s = opts.get("--corner")) {
        const auto x = s->find('x');
        if (x == std::string::npos) throw Error("--corner '" + *s + "': expected WxH, e.g. 200x40");
        o.corner_w = static_cast<int>(parse_integer("--corner width", s->substr(0, x), 0, 4096));
        o.corner_h = static_cast<int>(parse_integer("--corner height", s->substr(x + 1), 0, 1024));
    }
    if (const auto* s = opts.get("--granularity")) o.granularity = parse_granularity(*s);
    if (const auto* s = opts.get("--data")) {
        if (*s == "integer")
            o.data = app::DataKind::Integer;
        else if (*s == "real")
            o.data = app::DataKind::Real;
        else
            throw Error("--data '" + *s + "': expected integer or real");
    }
    if (const auto* s = opts.get("--c0")) o.c0 = parse_integer("--c0", *s, 1, 64);
    if (const auto* s = opts.get("--palette")) {
        if (*s == "default")
            o.palette = 0;
        else if (*s == "high-contrast")
            o.palette = 1;
        else if (*s == "colorblind")
            o.palette = 2;
        else
            throw Error("--palette '" + *s + "': expected default, high-contrast or colorblind");
    }
    o.presenter = opts.has("--presenter");
    o.follow = opts.has("--follow");
    if (const auto* s = opts.get("--zoom")) {
        if (o.follow) throw Error("--zoom and --follow: give one (the cell size is the follow's)");
        o.zoom = static_cast<float>(parse_integer("--zoom", *s, 2, 96));
    }
    o.reveal = opts.has("--reveal");
    if (o.reveal && o.lesson.empty())
        throw Error("--reveal goes with --lesson (a step's hidden cells revealed)");
    if (const auto* s = opts.get("--hover")) {
        const auto c = s->find(':');
        if (c == std::string::npos) throw Error("--hover '" + *s + "': expected PANEL:CELL");
        o.hover_panel = static_cast<int>(parse_integer("--hover panel", s->substr(0, c), 0, 63));
        o.hover_cell = parse_integer("--hover cell", s->substr(c + 1), 0, std::int64_t{1} << 40);
    }
    // The timings view's content: a results.json, or the quick benchmark run before the shot.
    if (const auto* s = opts.get("--results")) o.results = *s;
    o.bench_quick = opts.has("--bench-quick");
    if (const auto* s = opts.get("--chart")) o.chart = *s;
    if (const auto* s = opts.get("--peer")) {
        if (!o.bench_quick) throw Error("--peer goes with --bench-quick (the run it times)");
        o.peer = app::peer_choice(*s).name;  // throws naming the known names
    }
    if ((!o.results.empty() || o.bench_quick || !o.chart.empty()) && o.view != "timings")
        throw Error("--results, --bench-quick and --chart go with --view timings");
    if (!o.results.empty() && o.bench_quick)
        throw Error("--results and --bench-quick: give one (show a file, or measure)");
    if (!o.results.empty()) in_context("--results", [&] { (void)app::load_results(o.results); });
    bool known = false;
    for (const auto& v : app::view_names()) known |= v == o.view;
    if (!known) {
        std::string names;
        for (const auto& v : app::view_names()) names += (names.empty() ? "" : ", ") + v;
        throw Error("--view '" + o.view + "': unknown view (views: " + names + ")");
    }
    return o;
}

// Without a display: re-run this command under xvfb-run and end with its status.
void ensure_display(std::ostream& out) {
    if (ui::display_available()) return;
    out.flush();
    std::cout.flush();
    const int status = ui::rerun_under_xvfb();
    std::exit(status);
}

namespace {

void run_shot(const Options& opts, std::ostream& out) {
    ui::ShotOptions o = shot_options(opts);
    const bool report = opts.has("--report");
    if (const auto* s = opts.get("--frames"))
        o.frames = static_cast<int>(parse_integer("--frames", *s, 1, 100000));
    if (const auto* s = opts.get("--out")) o.out = *s;
    if (const auto* s = opts.get("--svg")) {
        o.svg = *s;
        ui::check_writable(o.svg);
    }
    if (const auto* s = opts.get("--sequence")) {
        o.sequence_dir = *s;
        if (!std::filesystem::is_directory(o.sequence_dir))
            throw Error("--sequence " + o.sequence_dir + ": no such directory");
        if (const auto* r = opts.get("--steps")) {
            const auto c = r->find(':');
            if (c == std::string::npos) throw Error("--steps '" + *r + "': expected A:B");
            o.seq_from = parse_integer("--steps", r->substr(0, c), 0, std::int64_t{1} << 40);
            o.seq_to = parse_integer("--steps", r->substr(c + 1), 0, std::int64_t{1} << 40);
        }
    }
    if (const auto* s = opts.get("--gif")) {
        o.gif = *s;
        ui::check_writable(o.gif);
        if (!o.sequence_dir.empty())
            throw Error("--gif and --sequence: give one (one GIF, or numbered PNGs)");
    }
    gif_range(opts, o);
    o.canvas_only = opts.has("--canvas");
    if (o.canvas_only && o.out.empty() && o.gif.empty() && o.sequence_dir.empty())
        throw Error("--canvas goes with --out, --gif or --sequence (the pictures it crops)");
    if (const auto* s = opts.get("--keys")) {
        o.keys = *s;
        ui::check_key_script(o.keys);
    }
    if (const auto* s = opts.get("--notes-out")) {
        o.notes_out = *s;
        ui::check_writable(o.notes_out);
    }
    if (o.out.empty() && o.frames == 0 && o.svg.empty() && o.sequence_dir.empty() &&
        o.gif.empty() && o.notes_out.empty() && o.keys.empty() && !report && !opts.has("--titles"))
        throw Error(
            "shot needs --out FILE.png (or --svg, --sequence, --gif, --notes-out, --keys, "
            "--frames N --report)");
    if (report && o.frames == 0) o.frames = 60;
    if (!o.out.empty()) ui::check_writable(o.out);
    ensure_display(out);
    // --out, --svg, --gif and --sequence all or none: a failed picture leaves none of them.
    OutputTransaction transaction;
    const ui::FrameReport r = ui::shot(o);
    transaction.commit();
    if (!o.svg.empty())
        out << "wrote " << o.svg << "\npanels drawn: canvas " << app::counts_text(r.canvas_prims)
            << "; svg " << app::counts_text(r.svg_prims) << "\n";
    if (opts.has("--titles")) {
        // One line per title line drawn: where, from its panel's top-left cell, and what.
        const auto list = [&out](const char* by, const std::vector<ui::TitleLine>& lines) {
            for (const ui::TitleLine& l : lines) {
                char at[96];
                std::snprintf(at, sizeof at, "title %s %zu %.1f %.1f %.1f ", by, l.panel,
                              static_cast<double>(l.prim.x0), static_cast<double>(l.prim.y0),
                              static_cast<double>(l.prim.size));
                out << at << l.prim.text << "\n";
            }
        };
        list("canvas", r.canvas_titles);
        list("svg", r.svg_titles);
    }
    if (!o.sequence_dir.empty()) out << "wrote the steps to " << o.sequence_dir << "\n";
    if (!o.gif.empty())
        out << "wrote " << o.gif << " (steps " << o.seq_from << " to "
            << (o.seq_to < 0 ? std::string("the last") : std::to_string(o.seq_to)) << ", "
            << o.gif_fps << " steps a second, looping)\n";
    if (!o.out.empty())
        out << "wrote " << o.out << " (" << o.width << "x" << o.height << ", "
            << (o.lesson.empty()
                    ? "view " + o.view + ", step " + std::to_string(o.step)
                    : "lesson " + o.lesson + ", step " + std::to_string(o.lesson_step + 1))
            << ")\n";
    if (!o.notes_out.empty()) out << "wrote " << o.notes_out << " (the presenter window)\n";
    if (!r.state.empty()) out << "after the keys: " << r.state << "\n";
    if (o.canvas_only) {
        char c[120];
        std::snprintf(c, sizeof c, "canvas alone: %.0fx%.0f px at (%.0f, %.0f) of the window\n",
                      static_cast<double>(r.canvas_w), static_cast<double>(r.canvas_h),
                      static_cast<double>(r.canvas_x), static_cast<double>(r.canvas_y));
        out << c;
    }
    if (!r.timings_status.empty()) out << "timings: " << r.timings_status << "\n";
    if (o.view != "timings" && r.canvas_w > 0) {
        char fit[160];
        std::snprintf(fit, sizeof fit,
                      "view %s the canvas: drawn %.0fx%.0f px of %.0fx%.0f, cells %.1f px\n",
                      o.follow || r.followed ? "follows the step on"
                      : r.fits()             ? "fits"
                                             : "does NOT fit",
                      static_cast<double>(r.drawn_w), static_cast<double>(r.drawn_h),
                      static_cast<double>(r.canvas_w), static_cast<double>(r.canvas_h),
                      static_cast<double>(r.cell_px));
        out << fit;
        out << readability_line(r) << "\n";
    }
    if (report) {
        char buf[640];
        std::snprintf(buf, sizeof buf,
                      "frames %d, view %s, problem %s, %dx%d: frame time with a new step every "
                      "frame median %.2f ms, max %.2f ms; without step changes median %.2f ms, "
                      "max %.2f ms (view built in %.0f ms, first frame %.0f ms); CPU time of "
                      "the process: a frame with a new step median %.2f ms, without %.2f ms, "
                      "the build %.0f ms, the first frame %.0f ms\n",
                      r.frames, o.view.c_str(), o.problem.c_str(), o.width, o.height, r.median_ms,
                      r.max_ms, r.still_median_ms, r.still_max_ms, r.build_ms, r.first_frame_ms,
                      r.cpu_median_ms, r.still_cpu_median_ms, r.build_cpu_ms, r.first_frame_cpu_ms);
        out << buf;
    }
}

}  // namespace

const Command& shot_command() {
    static const Command c{
        "shot",
        "render a view of the desktop app to PNG without a person (xvfb-run when no display)",
        "shot --view NAME --problem DESC --step K [--size WxH] [--granularity G] --out FILE.png\n"
        "       convlab shot --lesson FILE --step K --out FILE.png\n"
        "       convlab shot --view NAME --problem DESC --gif FILE.gif --from A --to B [--fps F]",
        "Renders exactly what the window shows (the same drawing code) and reads the back buffer\n"
        "into a PNG, written atomically. Without a display it re-runs itself under\n"
        "xvfb-run -a -s \"-screen 0 1920x1200x24\". --frames N --report plays N steps (one a\n"
        "frame, the worst case) and prints the median and max frame time.\n"
        "Views: im2col col2im stride fliprot fractal tnc weight_grad timings tensors.\n"
        "The timings view shows --results FILE or measures first with --bench-quick.\n"
        "--gif FILE --from A --to B renders steps A to B (the same drawing) into one animated\n"
        "GIF that loops, --fps F steps a second (a palette of <= 256 colours per frame).\n"
        "--lesson FILE --step K renders step K (from 1) of a lesson as the player shows it: its\n"
        "view, problem, data, granularity, first step of its range, highlights and narration;\n"
        "the cells a step hides for the class to predict are \"?\" unless --reveal.\n",
        {{"--view", "NAME", lesson::view_choices().c_str()},
         {"--problem", "DESC", "benchdnn descriptor (default mb1ic2ih3oc2kh2)"},
         {"--step", "K", "the step shown, from 0 (default 0); with --lesson the lesson's, from 1"},
         {"--lesson", "FILE", "a lesson file (or its number: 17) to show a step of"},
         {"--reveal", nullptr,
          "with --lesson: the step's hidden (\"?\") cells revealed, as after the key R"},
         {"--size", "WxH", "window size in pixels (default 1600x1000)"},
         {"--corner", "WxH",
          "keep the window's top right WxH pixels free of the header's text (where the browser's "
          "page draws its \"copy link\" bar)"},
         {"--granularity", "G", "element | line (default) | tile | whole"},
         {"--data", "KIND", "integer (default) | real"},
         {"--c0", "C0", "C0 of the DaVinci views (default 16)"},
         {"--palette", "NAME", "default | high-contrast | colorblind"},
         {"--presenter", nullptr, "presenter mode (bigger fonts, no sidebar)"},
         {"--follow", nullptr,
          "the canvas follows the step: cells of at least 28 px, the step's cells in the middle "
          "(key Z)"},
         {"--hover", "PANEL:CELL",
          "show the linking of cell CELL of panel PANEL (from 0); timings: SERIES:MARK tooltip"},
         {"--results", "FILE", "timings: show this results.json (convlab bench, an export)"},
         {"--bench-quick", nullptr, "timings: run the quick benchmark first (classroom set)"},
         {"--chart", "ID", "timings: the chart shown (relative_bwd_data, ops_fwd, gflops_fwd ...)"},
         {"--peer", "NAME",
          "timings, --bench-quick: onednn (default) | onednn-nchw | none, as the panel's choice"},
         {"--out", "FILE", "the PNG"},
         {"--canvas", nullptr,
          "--out, --gif and --sequence of the canvas alone, as the app's exports (no sidebar, "
          "header, narration, tooltip)"},
         {"--notes-out", "FILE",
          "the presenter window open (key W; the canvas then shows no narration), its picture "
          "as this PNG"},
         {"--keys", "SCRIPT",
          "keys pressed first, at once: \"focus:kernel 3 Enter Right PgDn notes:R\" (see "
          "docs/cli.md)"},
         {"--svg", "FILE", "also the view as SVG (cells, values, titles)"},
         {"--zoom", "PX", "cells of PX pixels (2 to 96) from the canvas's top left, not the fit"},
         {"--titles", nullptr,
          "print each panel title line the canvas drew (and the SVG wrote, with --svg): "
          "\"title canvas|svg PANEL X Y SIZE TEXT\", X and Y from the panel's top-left cell"},
         {"--sequence", "DIR", "also steps as numbered PNGs DIR/VIEW_NNNN.png"},
         {"--steps", "A:B", "the steps of --sequence (default all)"},
         {"--gif", "FILE", "also steps as one looping animated GIF (each frame <= 256 colours)"},
         {"--from", "A", "the first step of --gif or --sequence (default 0)"},
         {"--to", "B", "the last step of --gif or --sequence (default the last)"},
         {"--fps", "F", "--gif: steps a second, 0.1 to 50 (default 2, the app's speed)"},
         {"--frames", "N", "render N frames, one new step each"},
         {"--report", nullptr, "print frame-time median and max"},
         kMaxMemoryOption},
        run_shot};
    return c;
}

}  // namespace convlab::cli
