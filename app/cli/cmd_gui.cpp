// convlab gui: opens the desktop app (also what `convlab` with no arguments does).
#include "cli/cli_common.hpp"
#include "ui/gui.hpp"

namespace convlab::cli {

namespace {

void run_gui(const Options& opts, std::ostream&) {
    ui::GuiOptions o;
    o.view = opts.value_or("--view", o.view);
    o.problem = opts.value_or("--problem", o.problem);
    o.presenter = opts.has("--presenter");
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
    static const Command c{"gui",
                           "open the desktop app (the default when convlab runs without arguments)",
                           "gui [--problem DESC] [--view NAME] [--presenter]",
                           "",
                           {{"--problem", "DESC", "benchdnn descriptor (default mb1ic2ih3oc2kh2)"},
                            {"--view", "NAME",
                             "im2col (default) | col2im | stride | fliprot | fractal | tnc | "
                             "weight_grad | timings | tensors"},
                            {"--presenter", nullptr, "full screen, large fonts, keyboard only"}},
                           run_gui};
    return c;
}

}  // namespace convlab::cli
