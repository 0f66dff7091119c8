// convlab lesson check FILE... | list [DIR] | show FILE --step K
//
// check: load, validate and evaluate every step of every file; one line a lesson on stdout, its
// failed
//        checks and errors ("file:line:column: what is wrong") on stderr, one a line. Every file is
//        checked; the command ends with status 2 when any failed.
// list:  the lessons of a directory (default: lessons/ of the data folder), with step counts.
// show:  one step: its narration (wrapped at 100 columns), the checks, and its named tensors as
//        text.
// handout: every step's canvas, narration and checks as a PDF (cmd_lesson_handout.cpp).
#include <filesystem>
#include <memory>
#include <ostream>

#include "cli/cli_common.hpp"
#include "gui/gui.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"

namespace convlab::cli {

std::string readability_line(const ui::FrameReport& r);  // cmd_shot.cpp
void ensure_display(std::ostream& out);                  // cmd_shot.cpp
void run_lesson_handout(const std::vector<std::string>& args, const Options& opts,
                        std::ostream& out);  // cmd_lesson_handout.cpp

namespace {

using lesson::Lesson;

std::string base_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

// One lesson file: its summary line on `out`, its failed checks and its errors on `diag`, one a
// line (file:line:column first, as a compiler's). A
// malformed file (it does not parse) is one error; a step that cannot be evaluated is one error
// and the other steps still run. Adds to the counts; never throws a LessonError.
struct CheckCounts {
    std::size_t checks = 0, failed = 0, errors = 0, bad_files = 0;
};

void check_file(const std::string& f, bool each, std::ostream& out, std::ostream& diag,
                CheckCounts& counts) {
    Lesson l;
    try {
        l = lesson::load_lesson(f);
    } catch (const lesson::LessonError& e) {
        diag << e.what() << "\n";
        ++counts.errors;
        ++counts.bad_files;
        return;
    }
    std::size_t checks = 0, passed = 0;
    std::vector<std::string> lines, passes;
    // An interrupt ends the checks between two steps (the steps done are reported).
    for (std::size_t k = 0; k < l.steps.size() && !cancel_requested(); ++k) {
        try {
            const auto r = std::make_shared<const lesson::StepResult>(lesson::evaluate(l, k));
            for (std::size_t c = 0; c < r->checks.size(); ++c) {
                ++checks;
                const std::string line = "  " + lesson::check_line(l, k, c, r->checks[c]);
                if (r->checks[c].passed) {
                    ++passed;
                    if (each) passes.push_back(line);
                } else {
                    lines.push_back(line);
                }
            }
            // What only the view tells: its steps and the tensors it draws.
            app::check_step_view(l, k, r);
        } catch (const lesson::LessonError& e) {
            lines.push_back(e.what());
            ++counts.errors;
        }
    }
    const bool bad = passed != checks || lines.size() > checks - passed;
    out << f << ": " << l.steps.size() << (l.steps.size() == 1 ? " step, " : " steps, ") << passed
        << "/" << checks << " checks passed" << (bad ? " (FAILED)" : "") << "\n";
    for (const auto& s : passes) out << s << "\n";
    out.flush();  // the summary line before its diagnostics, where both reach one terminal
    for (const auto& s : lines) diag << s << "\n";
    counts.checks += checks;
    counts.failed += checks - passed;
    counts.bad_files += bad;
}

// The readability rule (app::kReadableTextPx) for every step of the files that load, as the
// player shows them on a 1280x720 and a 1024x768 projector, with and without presenter mode, in
// one window: one line per render that fails it, naming the step (on `diag`), then a summary line
// (on `out`). Returns the failures.
std::size_t check_readable(const std::vector<std::string>& files, std::ostream& out,
                           std::ostream& diag) {
    struct Size {
        int w, h;
    };
    const Size sizes[] = {{1280, 720}, {1024, 768}};
    std::vector<ui::ShotOptions> list;
    std::vector<std::string> what;
    for (const std::string& f : files) {
        Lesson l;
        try {
            l = lesson::load_lesson(f);
        } catch (const lesson::LessonError&) {
            continue;  // reported by the check above
        }
        // A step that hides cells is checked hidden and revealed: the revealed values ("-0.5"
        // where "?" stood) need wider cells than the question marks.
        for (std::size_t k = 0; k < l.steps.size(); ++k)
            for (const bool reveal : {false, true}) {
                if (reveal && l.steps[k].hide.empty()) continue;
                for (const Size& z : sizes)
                    for (const bool presenter : {true, false}) {
                        ui::ShotOptions o;
                        o.lesson = f;
                        o.lesson_step = k;
                        o.width = z.w;
                        o.height = z.h;
                        o.presenter = presenter;
                        o.reveal = reveal;
                        list.push_back(o);
                        what.push_back(
                            f + ": step " + std::to_string(k + 1) + " (" +
                            (l.steps[k].title.empty() ? l.steps[k].view : l.steps[k].title) +
                            ") at " + std::to_string(z.w) + "x" + std::to_string(z.h) +
                            (presenter ? " in presenter mode" : "") + (reveal ? ", revealed" : ""));
                    }
            }
    }
    std::size_t failed = 0;
    const auto reports = ui::shots(list);
    for (std::size_t i = 0; i < reports.size(); ++i)
        if (!reports[i].readable_ok()) {
            ++failed;
            diag << "  " << what[i] << ": " << readability_line(reports[i]) << "\n";
        }
    out << "readability: " << reports.size() - failed << " of " << reports.size()
        << " step renders readable (digits of at least " << app::kReadableTextPx
        << " px on the step's cells and highlights)\n";
    return failed;
}

// Every file is checked, whatever the ones before it gave.
void run_check(const std::vector<std::string>& files, bool readable, bool each, std::ostream& out,
               std::ostream& diag) {
    if (files.empty()) throw Error("lesson check: expected one or more lesson files");
    if (readable) ensure_display(out);
    CheckCounts n;
    for (const std::string& f : files) {
        check_file(f, each, out, diag, n);
        if (cancel_requested()) throw Interrupted();
    }
    const std::size_t unreadable = readable ? check_readable(files, out, diag) : 0;
    if (n.bad_files == 0 && unreadable == 0) return;
    if (n.bad_files == 0)
        throw Error("lesson check: " + std::to_string(unreadable) +
                    " step renders fail the readability rule");
    std::string what = std::to_string(n.bad_files) + " of " + std::to_string(files.size()) +
                       (files.size() == 1 ? " lesson" : " lessons") + " failed";
    if (n.errors) what += ", " + std::to_string(n.errors) + (n.errors == 1 ? " error" : " errors");
    if (n.failed)
        what +=
            ", " + std::to_string(n.failed) + " of " + std::to_string(n.checks) + " checks failed";
    throw Error("lesson check: " + what);
}

void run_list(const std::vector<std::string>& args, std::ostream& out) {
    if (args.size() > 1) throw Error("lesson list: expected at most one directory");
    const std::string dir = args.empty() ? lesson::default_lesson_dir() : args[0];
    for (const std::string& f : lesson::lesson_files(dir)) {
        try {
            const Lesson l = lesson::load_lesson(f);
            out << base_name(f) << "  " << l.steps.size()
                << (l.steps.size() == 1 ? " step  " : " steps  ") << l.title << "\n";
        } catch (const lesson::LessonError& e) {
            out << base_name(f) << "  malformed: " << e.what() << "\n";
        }
    }
}

void run_show(const std::vector<std::string>& args, const Options& opts, std::ostream& out) {
    if (args.size() != 1) throw Error("lesson show: expected one lesson file");
    const Lesson l = lesson::load_lesson(args[0]);
    const auto k =
        static_cast<std::size_t>(parse_integer("--step", opts.required("lesson show", "--step"), 1,
                                               static_cast<std::int64_t>(l.steps.size())));
    const lesson::Step& s = l.steps[k - 1];
    const auto rp = std::make_shared<const lesson::StepResult>(lesson::evaluate(l, k - 1));
    const lesson::StepResult& r = *rp;
    const app::StepView sv = app::check_step_view(l, k - 1, rp);
    out << l.title << " - step " << k << " of " << l.steps.size();
    if (!s.title.empty()) out << ": " << s.title;
    out << "\nview: " << sv.view;
    if (sv.steps > 0)
        out << ", plays " << granularity_name(s.granularity) << " steps [" << s.step_begin << ", "
            << (s.step_end < 0 ? sv.steps : s.step_end) << ") of " << sv.steps;
    out << "\n";
    if (s.has_problem) out << "problem: " << s.problem_text << "\n";
    if (!s.map.empty())
        out << "map: " << s.map << " (" << r.map_steps << " " << granularity_name(s.granularity)
            << " steps)\n";
    if (s.network.present()) out << "loss: " << r.loss << "\n";
    out << "\n" << lesson::wrap_narration(s.narration, 100) << "\n";
    // "label: t[0,1] u" for a list of highlights or hidden cells (none: no line).
    const auto cells = [&](const char* label, const auto& list) {
        if (list.empty()) return;
        out << label;
        for (const auto& h : list) {
            out << " " << h.tensor;
            if (!h.at.empty()) {
                out << "[";
                for (std::size_t i = 0; i < h.at.size(); ++i) out << (i ? "," : "") << h.at[i];
                out << "]";
            }
        }
        out << "\n";
    };
    cells("highlights:", s.highlights);
    cells("hidden until revealed (R):", s.hide);
    for (const auto& c : r.checks) out << "check: " << c.message << "\n";
    std::vector<std::string> wanted;
    if (const std::string* t = opts.get("--tensor")) {
        std::size_t b = 0;
        for (std::size_t e; (e = t->find(',', b)) != std::string::npos; b = e + 1)
            wanted.push_back(t->substr(b, e - b));
        wanted.push_back(t->substr(b));
        for (const auto& w : wanted)
            if (!r.find(w)) throw Error("--tensor '" + w + "': this step has no such tensor");
    }
    for (const auto& t : r.tensors) {
        if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), t.name) == wanted.end())
            continue;
        out << "\n" << t.name << ": " << t.description << "\n" << lesson::format_tensor(t.value);
    }
}

void run_lesson(const Options& opts, std::ostream& out) {
    const auto& pos = opts.positional();
    if (pos.empty())
        throw Error(
            "lesson: expected an action: check FILE... | list [DIR] | show FILE | handout FILE");
    const std::vector<std::string> rest(pos.begin() + 1, pos.end());
    if (pos[0] != "show" && (opts.has("--step") || opts.has("--tensor")))
        throw Error("lesson " + pos[0] + ": --step and --tensor belong to 'lesson show'");
    for (const char* o : {"--readable", "--each"})
        if (pos[0] != "check" && opts.has(o))
            throw Error("lesson " + pos[0] + ": " + o + " belongs to 'lesson check'");
    for (const char* o : {"--out", "--size", "--presenter", "--palette"})
        if (pos[0] != "handout" && opts.has(o))
            throw Error("lesson " + pos[0] + ": " + o + " belongs to 'lesson handout'");
    if (pos[0] == "check")
        return run_check(rest, opts.has("--readable"), opts.has("--each"), out, opts.diagnostics());
    // handout writes one file at its end (nothing partial); an interrupt ends it between two
    // pictures.
    if (pos[0] == "handout") return run_lesson_handout(rest, opts, out);
    // list and show keep nothing partial: an interrupt ends them at once.
    const ImmediateInterrupt immediate;
    if (pos[0] == "list") return run_list(rest, out);
    if (pos[0] == "show") return run_show(rest, opts, out);
    throw Error("lesson: unknown action '" + pos[0] + "' (actions: check, list, show, handout)");
}

}  // namespace

const Command& lesson_command() {
    static const Command c{
        "lesson",
        "check, list and show classroom lessons (lessons/*.toml), or print one as a PDF handout",
        "lesson check [--readable] [--each] FILE... | lesson list [DIR] | lesson show FILE --step "
        "K "
        "[--tensor NAMES]\n"
        "       convlab lesson handout FILE --out FILE.pdf [--size WxH] [--presenter] "
        "[--palette NAME]",
        "check: loads, validates and evaluates every step with the engine; one line a lesson\n"
        "(steps, checks passed), then every error as file:line:column: what is wrong and every\n"
        "failed check with its line. All files are checked; status 2 when any failed.\n"
        "With --each also every passed check after its lesson's line, as PASS file:line:column:\n"
        "step K: message (the lines the browser build's test compares).\n"
        "With --readable also renders every step (as `convlab shot` does, under xvfb-run when\n"
        "there is no display) at 1280x720 and 1024x768, with and without presenter mode, and\n"
        "names each render whose current step or highlighted cells do not show their value in\n"
        "digits of at least 14 px (a step that fits only unreadably follows the step, zoomed;\n"
        "a step that hides cells is checked hidden and revealed).\n"
        "list: the lessons of DIR (default: the lessons/ directory of the data folder).\n"
        "show: the narration, checks and named tensors of step K (1-based).\n"
        "handout: a PDF for students (A4 landscape): a title page (title, audience, summary,\n"
        "problem, the steps and their pages), then a page a step: its canvas exactly as the app\n"
        "draws it (rendered as `convlab shot` does, all steps in one window), its title, its\n"
        "narration and its checks with their results. Cells a step hides for the class to\n"
        "predict are \"?\" there; the answers (the revealed picture, the text after [reveal],\n"
        "the values and the checks) are on pages of their own at the end. FILE may be a\n"
        "lesson's number (17). Written atomically: on any error no PDF is left.\n"
        "Lesson format: lessons/README.md.\n",
        {{"ACTION ARGS...", nullptr, "check FILE... | list [DIR] | show FILE | handout FILE"},
         {"--readable", nullptr,
          "check: also hold every step to the readability rule on a projector"},
         {"--each", nullptr, "check: also print every passed check (PASS file:line:column: ...)"},
         {"--step", "K", "show: the step, 1-based"},
         {"--tensor", "NAMES", "show: print only these tensors (comma-separated)"},
         {"--out", "FILE", "handout: the PDF"},
         {"--size", "WxH", "handout: the app window the canvas is drawn in (default 1280x720)"},
         {"--presenter", nullptr, "handout: the canvas as presenter mode draws it"},
         {"--palette", "NAME", "handout: default | high-contrast | colorblind"},
         kMaxMemoryOption},
        run_lesson};
    return c;
}

}  // namespace convlab::cli
