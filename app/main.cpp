// convlab: the desktop app and the command-line subcommands (see cli/cli.hpp).
// No arguments: the GUI when a display can be opened, else the headless demo.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#if defined(__linux__) && defined(__GLIBC__)
#include <unistd.h>
#endif

#include "cli/cli.hpp"
#include "convlab/output_file.hpp"
#include "gui/gui.hpp"

namespace {

// The commands that build views (the GUI, shot, demo, lesson) run again at once with glibc's
// malloc backing its large blocks by transparent huge pages (the tunable glibc.malloc.hugetlb,
// read only at start-up): the step state and textures of a view of millions of cells are
// hundreds of megabytes, and their first touch one page fault every 4 KiB took half the CPU
// time of the tnc view's first frame on conv1. Where the exec fails the command goes on as is.
void prefer_huge_pages(int argc, char** argv) {
#if defined(__linux__) && defined(__GLIBC__)
    const char* t = std::getenv("GLIBC_TUNABLES");
    if (t && std::strstr(t, "glibc.malloc.hugetlb")) return;
    if (argc > 1) {
        const std::string_view c = argv[1];
        if (c != "gui" && c != "shot" && c != "demo" && c != "lesson") return;
    }
    const std::string v =
        (t && *t ? std::string(t) + ":" : std::string()) + "glibc.malloc.hugetlb=1";
    if (::setenv("GLIBC_TUNABLES", v.c_str(), 1) != 0) return;
    ::execv("/proc/self/exe", argv);
#else
    (void)argc;
    (void)argv;
#endif
}

}  // namespace

int main(int argc, char** argv) {
    prefer_huge_pages(argc, argv);
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
