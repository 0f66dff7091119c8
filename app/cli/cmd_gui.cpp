// convlab gui: opens the desktop app (also what `convlab` with no arguments does).
#include "cli/cli_common.hpp"
#include "lesson/lesson.hpp"
#include "ui/gui.hpp"

namespace convlab::cli {

void lesson_options(const Options& opts, std::string& file, std::size_t& step);  // cmd_shot.cpp

namespace {

void run_gui(const Options& opts, std::ostream&) {
    ui::GuiOptions o;
    if (opts.has("--lesson")) {
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
        "--lesson FILE [--step K]",
        "Without --view, --problem or --lesson it opens on lesson 1, step 1.\n",
        {{"--problem", "DESC", "benchdnn descriptor (default mb1ic2ih3oc2kh2)"},
         {"--view", "NAME", lesson::view_choices().c_str()},
         {"--presenter", nullptr, "full screen, large fonts, keyboard only"},
         {"--follow", nullptr, "follow the step: readable cells around it (key Z turns it off)"},
         {"--lesson", "FILE", "open a lesson (a file, or its number: 17)"},
         {"--step", "K", "with --lesson: the step to open, from 1"},
         kMaxMemoryOption},
        run_gui};
    return c;
}

}  // namespace convlab::cli
