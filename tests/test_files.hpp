// Shared test helpers for files and processes: a temporary folder, the convlab command line run
// in-process or as the binary with its output captured, and PNG pictures decoded for the
// headless-rendering checks.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "stb_image.h"
#include "test_tempdir.hpp"

namespace convlab::test {

namespace fs = std::filesystem;

// True where the app can render: a display, or xvfb-run to make one.
inline bool can_render() {
    const char* d = std::getenv("DISPLAY");
    return (d && *d) || ::access("/usr/bin/xvfb-run", X_OK) == 0;
}

struct Run {
    int status = -1;
    std::string out, err;
};

// Runs the command line in this process (convlab::run_cli), capturing both streams.
inline Run run_in_process(std::vector<std::string> args) {
    std::ostringstream out, err;
    Run r;
    r.status = convlab::run_cli(std::move(args), out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
}

// Runs the convlab binary with `args` (shell-quoted by the caller) in `dir` (theme files are
// looked up relative to the working directory first), capturing both streams.
//
// Subcommands that open an OpenGL context (demo, shot, gui, lesson handout) run without
// LeakSanitizer's exit check: its stop-the-world tracer occasionally segfaults on the threads and
// dynamic TLS that Mesa leaves behind ("Tracer caught signal 11", a sanitizer runtime bug, not a
// leak; it failed one CI run of the every-lesson render). AddressSanitizer and UBSan still watch
// those runs, and every other subcommand and every in-process test keeps the leak check.
inline Run run_binary(const std::string& args, const fs::path& dir) {
    const fs::path o = dir / "stdout.txt", e = dir / "stderr.txt";
    const std::string first = args.substr(0, args.find(' '));
    const bool gl = first == "demo" || first == "shot" || first == "gui" ||
                    args.rfind("lesson handout", 0) == 0;
    const std::string env =
        gl ? "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" " : "";
    const std::string cmd = "cd " + dir.string() + " && " + env + std::string(CONVLAB_BINARY) +
                            " " + args + " >" + o.string() + " 2>" + e.string();
    Run r;
    const int s = std::system(cmd.c_str());
    r.status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    std::ifstream fo(o), fe(e);
    r.out.assign(std::istreambuf_iterator<char>(fo), {});
    r.err.assign(std::istreambuf_iterator<char>(fe), {});
    return r;
}

// A decoded picture, RGB8 rows top first.
struct Image {
    int w = 0, h = 0;
    std::vector<unsigned char> rgb;
    unsigned char* at(int x, int y) { return &rgb[(static_cast<std::size_t>(y) * w + x) * 3]; }
    const unsigned char* at(int x, int y) const {
        return &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
    }
};

inline Image load_png(const std::string& path) {
    Image im;
    int n = 0;
    unsigned char* d = stbi_load(path.c_str(), &im.w, &im.h, &n, 3);
    REQUIRE_MESSAGE(d != nullptr, "cannot decode " << path);
    im.rgb.assign(d, d + static_cast<std::size_t>(im.w) * im.h * 3);
    stbi_image_free(d);
    return im;
}

// Distinct colours of rows [y0, y1) (all rows by default).
inline int distinct_colours(const Image& im, int y0 = 0, int y1 = -1) {
    if (y1 < 0) y1 = im.h;
    std::set<int> s;
    for (std::size_t i = static_cast<std::size_t>(y0) * im.w * 3;
         i + 2 < static_cast<std::size_t>(y1) * im.w * 3; i += 3)
        s.insert(im.rgb[i] << 16 | im.rgb[i + 1] << 8 | im.rgb[i + 2]);
    return static_cast<int>(s.size());
}

}  // namespace convlab::test
