// convlab gui: opens the desktop app (also what `convlab` with no arguments does).
#include "cli/cli_common.hpp"
#include "gui/gui.hpp"
#include "lesson/lesson.hpp"
#include "model/link.hpp"

namespace convlab::cli {

void lesson_options(const Options& opts, std::string& file, std::size_t& step);  // cmd_shot.cpp

namespace {

void run_gui(const Options& opts, std::ostream&) {
    ui::GuiOptions o;
    if (const auto* open = opts.get("--open")) {
        // A link (the browser build's URL fragment): a lesson's step or a view's step.
        if (opts.has("--lesson") || opts.has("--view") || opts.has("--problem") ||
            opts.has("--step"))
            throw Error(
                "--open: the link sets the lesson or view (drop --lesson/--view/--problem/"
                "--step)");
        const ui::Link l = in_context("--open", [&] { return ui::parse_link(*open); });
        if (l.lesson > 0) {
            o.lesson = in_context("--open", [&] {
                return ui::lesson_file_of(l.lesson, lesson::default_lesson_dir());
            });
            o.lesson_step = l.lesson_step;
        } else {
            o.view = l.view;
            o.problem = l.problem;
            o.step = l.step;
            o.granularity = l.granularity;
        }
    } else if (opts.has("--lesson")) {
        lesson_options(opts, o.lesson, o.lesson_step);
    } else if (!opts.has("--view") && !opts.has("--problem")) {
        // The default first screen: the last lesson and step (the settings file), else lesson 1,
        // step 1 (when the lessons are there).
        o.restore_last = true;
        try {
            const auto files = lesson::lesson_files(lesson::default_lesson_dir());
            if (!files.empty()) o.lesson = files.front();
        } catch (const std::exception&) {
        }
    }
    o.view = opts.value_or("--view", o.view);
    o.problem = opts.value_or("--problem", o.problem);
    o.presenter = opts.has("--presenter");
    o.follow = opts.has("--follow");
    in_context("--problem", [&] {
        parse_descriptor(o.problem).check();
        return 0;
    });
    if (!ui::display_available())
        throw Error(
            "no display (DISPLAY unset or unreachable): 'convlab shot' and 'convlab demo' "
            "render the views to PNG without one");
    ui::run_gui(o);
}

}  // namespace

const Command& gui_command() {
    static const Command c{
        "gui",
        "open the desktop app (the default when convlab runs without arguments)",
        "gui [--problem DESC] [--view NAME] [--presenter] [--follow] | gui "
        "--lesson FILE [--step K] | gui --open LINK",
        "Without --view, --problem or --lesson it opens on lesson 1, step 1.\n",
        {{"--problem", "DESC", "benchdnn descriptor (default mb1ic2ih3oc2kh2)"},
         {"--view", "NAME", lesson::view_choices().c_str()},
         {"--presenter", nullptr, "full screen, large fonts, keyboard only"},
         {"--follow", nullptr, "follow the step: readable cells around it (key Z turns it off)"},
         {"--lesson", "FILE", "open a lesson (a file, or its number: 17)"},
         {"--step", "K", "with --lesson: the step to open, from 1"},
         {"--open", "LINK",
          "a link as the browser's address shows it: '#lesson=14&step=3' or "
          "'#view=stride&problem=DESC&step=7[&granularity=G]'"},
         kMaxMemoryOption},
        run_gui};
    return c;
}

}  // namespace convlab::cli
