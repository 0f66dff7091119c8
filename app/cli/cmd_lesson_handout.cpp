// convlab lesson handout FILE --out lesson.pdf: every step of a lesson rendered as the app draws
// its canvas (the headless shots, all in one window), with its narration and checks, laid out as
// a PDF for students (handout/handout.hpp). Without a display it re-runs itself under xvfb-run.
#include <filesystem>
#include <memory>
#include <ostream>

#include "cli/cli_common.hpp"
#include "gui/gui.hpp"
#include "handout/handout.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"

namespace convlab::cli {

ui::ShotOptions shot_options(const Options& opts);  // cmd_shot.cpp
std::string lesson_path(const std::string& arg);    // cmd_shot.cpp
void ensure_display(std::ostream& out);             // cmd_shot.cpp

namespace {

const char* palette_name(int p) {
    return p == 1 ? "high-contrast" : p == 2 ? "colorblind" : "default";
}

}  // namespace

void run_lesson_handout(const std::vector<std::string>& args, const Options& opts,
                        std::ostream& out) {
    if (args.size() != 1) throw Error("lesson handout: expected one lesson file");
    const std::string& pdf = opts.required("lesson handout", "--out");
    // A path, or a lesson of the lessons/ directory by number or name, as `shot --lesson`.
    std::string file = args[0];
    if (!std::filesystem::exists(file)) {
        try {
            file = lesson_path(file);
        } catch (const Error&) {
            throw Error("lesson handout: '" + args[0] + "': no such file, and no lesson of " +
                        lesson::default_lesson_dir() + " by that number or name");
        }
    }
    // Bad input fails before any window opens: a malformed lesson (file:line:column: what), an
    // output path that cannot be written, bad --size or --palette.
    const lesson::Lesson l = lesson::load_lesson(file);
    check_output_path(pdf);
    // --size, --palette and --presenter as `convlab shot` takes them; a projector's window by
    // default.
    ui::ShotOptions base = shot_options(opts);
    if (!opts.has("--size")) {
        base.width = 1280;
        base.height = 720;
    }
    ensure_display(out);
    // Every step evaluated (its checks) and planned (its highlights and hidden cells); a step
    // that cannot be shown is an error at its line.
    std::vector<handout::StepPage> pages(l.steps.size());
    std::vector<ui::ShotOptions> list;
    std::vector<std::pair<std::size_t, bool>> which;  // (step, revealed) of each picture
    std::size_t checks = 0, passed = 0;
    for (std::size_t k = 0; k < l.steps.size(); ++k) {
        throw_if_cancelled();
        const auto r = std::make_shared<const lesson::StepResult>(lesson::evaluate(l, k));
        app::check_step_view(l, k, r);
        pages[k].plan = app::plan_step(l, k, r);
        pages[k].result = *r;
        checks += r->checks.size();
        passed += r->passed();
        for (const bool reveal : {false, true}) {
            if (reveal && pages[k].plan.hidden.empty()) break;
            ui::ShotOptions o = base;
            o.lesson = file;
            o.lesson_step = k;
            o.reveal = reveal;
            o.canvas_image = true;
            list.push_back(o);
            which.emplace_back(k, reveal);
        }
    }
    auto reports = ui::shots(list);
    for (std::size_t i = 0; i < reports.size(); ++i) {
        ui::FrameReport& rep = reports[i];
        if (rep.image_w <= 0 || rep.image_h <= 0)
            throw Error("lesson handout: step " + std::to_string(which[i].first + 1) +
                        ": the canvas was not drawn");
        handout::Picture& p =
            which[i].second ? pages[which[i].first].revealed : pages[which[i].first].canvas;
        p.w = rep.image_w;
        p.h = rep.image_h;
        p.rgba = std::move(rep.image);
        // The canvas's empty background around the view is not printed.
        p = handout::trim_blank_margins(p, 16);
    }
    handout::Settings settings;
    settings.pictures = "Pictures: the app's canvas in a " + std::to_string(base.width) + "x" +
                        std::to_string(base.height) + " window" +
                        (base.presenter ? ", presenter mode" : "") + ", palette " +
                        palette_name(base.palette);
    const handout::Summary s = handout::write_pdf(pdf, l, pages, settings);
    out << "wrote " << pdf << " (" << s.pages << " pages: " << s.title_pages << " title, "
        << s.step_pages << " for " << l.steps.size() << (l.steps.size() == 1 ? " step" : " steps");
    if (s.answer_pages) out << ", " << s.answer_pages << " of answers";
    out << "; " << passed << " of " << checks << " checks pass)\n";
}

}  // namespace convlab::cli
