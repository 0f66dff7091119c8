// convlab demo: every view of the desktop app at a few steps, rendered to PNGs without a person
// (the shot machinery; under xvfb-run when there is no display), and the list of files.
#include <algorithm>
#include <filesystem>
#include <span>

#include "cli/cli_common.hpp"
#include "cli/cmd_bench.hpp"
#include "convlab/output_file.hpp"
#include "gui/gui.hpp"
#include "lesson/lesson.hpp"
#include "lesson/views.hpp"

namespace convlab::cli {

ui::ShotOptions shot_options(const Options& opts);
void ensure_display(std::ostream& out);
std::string readability_line(const ui::FrameReport& r);  // cmd_shot.cpp

namespace {

// The verified timing plot: the quick benchmark (assets/shapes/classroom.txt, every pass and
// algorithm, each measurement checked against a reference before it is plotted) written to
// DIR/timings as CSV, JSON and charts (SVG, PNG, PDF). Appends the chart PNGs to `files`.
void demo_timing_plot(const std::string& dir, std::vector<std::string>& files, std::ostream& out,
                      const OutputTransaction& transaction) {
    const std::string tdir = dir + "/timings";
    out << "measuring the classroom shape set (verified timings) into " << tdir << " ...\n";
    out.flush();
    const int status = write_quick_timings(tdir, out);
    throw_if_cancelled();  // interrupted: the demo ends, and its transaction removes every file
    if (status == 2) throw Error("demo: the timing run failed (see above)");
    if (status == 1)
        out << "WARNING: some measurements failed verification: they are marked FAIL and not "
               "plotted\n";
    // The charts just written: pending in the demo's transaction until it ends.
    std::vector<std::string> pngs;
    for (const std::string& f : transaction.pending())
        if (std::filesystem::path(f).parent_path() == std::filesystem::path(tdir) &&
            std::filesystem::path(f).extension() == ".png")
            pngs.push_back(f);
    std::sort(pngs.begin(), pngs.end());
    files.insert(files.end(), pngs.begin(), pngs.end());
}

void run_demo(const Options& opts, std::ostream& out) {
    const std::string dir = opts.value_or("--out", "out/demo");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!std::filesystem::is_directory(dir))
        throw Error("--out " + dir + ": cannot create the directory");
    ensure_display(out);
    // Every picture and chart or none: a failure or an interrupt leaves no file of the demo.
    OutputTransaction transaction;
    std::vector<ui::ShotOptions> list;
    std::vector<std::string> files;
    int k = 0;
    {
        // Lesson steps as the lesson player shows them (one window, many shots): with --lessons
        // every step of every lesson, else the first step of each (what a class opens on).
        const bool all_steps = opts.has("--lessons");
        for (const auto& f : lesson::lesson_files(lesson::default_lesson_dir())) {
            const lesson::Lesson l = lesson::load_lesson(f);
            const std::string stem = std::filesystem::path(f).stem().string();
            for (std::size_t st = 0; st < (all_steps ? l.steps.size() : 1); ++st) {
                ui::ShotOptions s;
                s.lesson = f;
                s.lesson_step = st;
                // The gallery of every step is the class's view: a 1280x720 projector in
                // presenter mode.
                if (all_steps) {
                    s.width = 1280;
                    s.height = 720;
                    s.presenter = true;
                }
                s.out =
                    dir + "/lesson" + stem.substr(0, 2) + "_step" + std::to_string(st + 1) + ".png";
                list.push_back(s);
                files.push_back(s.out);
            }
        }
    }
    // Every view of the registry at its demo problems (lesson/views.hpp).
    std::vector<std::pair<std::string, lesson::ViewDemo>> demos;
    if (!opts.has("--lessons"))
        for (const lesson::ViewSpec& v : lesson::view_registry())
            for (const lesson::ViewDemo& d : v.demos) demos.emplace_back(v.name, d);
    for (const auto& [view, d] : demos) {
        Options o;
        o.set("--view", view);
        o.set("--problem", d.problem);
        o.set("--granularity", d.granularity);
        ui::ShotOptions s = shot_options(o);
        // First, a middle and the last step (each view's step count at its granularity).
        app::ViewRequest r;
        r.view = s.view;
        r.problem = parse_descriptor(s.problem);
        const dim_t n = app::num_steps(app::build_view(r), s.granularity);
        for (const dim_t step : {dim_t{0}, n / 2, n - 1}) {
            if (step > 0 && step == n / 2 && n / 2 == n - 1) continue;
            s.step = step;
            char name[128];
            std::snprintf(name, sizeof name, "/%02d_%s_step%lld.png", k++, view.c_str(),
                          static_cast<long long>(step));
            s.out = dir + name;
            list.push_back(s);
            files.push_back(s.out);
        }
    }
    const auto reports = ui::shots(list);
    if (opts.has("--lessons"))
        for (std::size_t i = 0; i < reports.size(); ++i)
            out << files[i] << ": " << readability_line(reports[i]) << "\n";
    if (!opts.has("--lessons")) {
        demo_timing_plot(dir, files, out, transaction);
        // The Timings view of the app showing those verified results (still the transaction's
        // temporary).
        ui::ShotOptions t;
        t.view = "timings";
        t.results = OutputTransaction::current_file(dir + "/timings/results.json");
        t.results_name = dir + "/timings/results.json";
        t.out = dir + "/" + std::to_string(k) + "_timings_view.png";
        const auto shown = ui::shots({t});
        if (!shown.empty() && !shown[0].timings_status.empty())
            out << "timings view: " << shown[0].timings_status << "\n";
        files.push_back(t.out);
    }
    transaction.commit();
    for (const auto& f : files) out << f << "\n";
}

}  // namespace

const Command& demo_command() {
    static const Command c{
        "demo",
        "render every view at a few steps and a verified timing plot to out/demo, without a person",
        "demo [--out DIR] [--lessons]",
        "Uses the same drawing code as the window (see 'convlab shot'); under xvfb-run when\n"
        "there is no display. Then runs the quick benchmark (the classroom shape set, every\n"
        "measurement verified before it is plotted), writes its charts to DIR/timings and a\n"
        "screenshot of the Timings view, and the first step of every lesson as the lesson player\n"
        "shows it. With --lessons: every step of every lesson only (no views, no timings), at\n"
        "1280x720 in presenter mode (the class's view), each with the readability rule's verdict.\n"
        "Prints the files written.\n",
        {{"--out", "DIR", "output directory (default out/demo)"},
         {"--lessons", nullptr,
          "every step of every lesson only (DIR/lessonNN_stepK.png), as the player shows it"},
         kMaxMemoryOption},
        run_demo};
    return c;
}

}  // namespace convlab::cli
