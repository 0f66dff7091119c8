// convlab: the desktop app and the command-line subcommands (see cli/cli.hpp).
// No arguments: the GUI when a display can be opened, else the headless demo.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "convlab/output_file.hpp"
#include "ui/gui.hpp"

int main(int argc, char** argv) {
    convlab::ui::adopt_stderr();
    // Ctrl-C and SIGTERM end a command cleanly: temporaries removed, exit status 130.
    convlab::install_interrupt_handlers();
    if (argc == 1) {
        if (convlab::ui::display_available()) {
            convlab::ui::set_program_args(argc, argv);
            return convlab::ui::report_status(convlab::run_cli({"gui"}, std::cout, std::cerr));
        }
        std::cerr << "convlab: no display (DISPLAY unset or unreachable): running the headless "
                     "demo, see out/demo/\n";
        // The demo re-runs `convlab demo` under xvfb-run, not the GUI.
        char demo[] = "demo";
        char* args[] = {argv[0], demo, nullptr};
        convlab::ui::set_program_args(2, args);
        return convlab::ui::report_status(convlab::run_cli({"demo"}, std::cout, std::cerr));
    }
    convlab::ui::set_program_args(argc, argv);
    std::vector<std::string> args(argv + 1, argv + argc);
    return convlab::ui::report_status(convlab::run_cli(std::move(args), std::cout, std::cerr));
}
