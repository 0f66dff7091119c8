// The desktop app rendered headless through the real binary (`convlab demo` / `convlab shot`,
// which re-run themselves under xvfb-run when there is no display): every view's PNG has the
// window's size and real content (the current-step colour in the canvas, many colours), the
// picture follows the step and the hover, bad shots fail with status 2 and leave no file, and
// the frame-time report of the ResNet-50 3x3 layer's im2col view. Skipped only when there is
// neither a display nor xvfb-run.
#include <doctest/doctest.h>
#include <gif_lib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "charts/chart.hpp"
#include "cli/cli.hpp"
#include "lesson/lesson.hpp"
#include "stb_image.h"
#include "test_files.hpp"

namespace fs = std::filesystem;
using convlab::test::can_render;
using convlab::test::distinct_colours;
using convlab::test::Image;
using convlab::test::load_png;
using convlab::test::Run;
using convlab::test::run_binary;
using convlab::test::TempDir;

namespace {

// Pixels right of the sidebar (x >= 400) close to colour c.
int count_near(Image& im, int r, int g, int b, int tol = 6) {
    int n = 0;
    for (int y = 0; y < im.h; ++y)
        for (int x = 400; x < im.w; ++x) {
            const unsigned char* p = im.at(x, y);
            n +=
                std::abs(p[0] - r) <= tol && std::abs(p[1] - g) <= tol && std::abs(p[2] - b) <= tol;
        }
    return n;
}

// The default palette's "current step" fill: white mixed 80% with Okabe-Ito orange (230,159,0),
// and "linked": white mixed 85% with sky blue (86,180,233).
constexpr int kCurrent[3] = {235, 178, 51};
constexpr int kLinked[3] = {111, 191, 236};

}  // namespace

TEST_CASE("app render: every view, headless, at a few steps" * doctest::skip(!can_render())) {
    TempDir t;
    const Run r = run_binary("demo --out " + t.path.string(), t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::istringstream lines(r.out);
    std::string file;
    std::set<std::string> views;
    int shots = 0, lesson_shots = 0;
    while (std::getline(lines, file)) {
        // The file list follows the timing run's summary; the chart exports are 1920x1080.
        if (!file.ends_with(".png") || file.find("/timings/") != std::string::npos) continue;
        INFO(file);
        REQUIRE(fs::exists(file));
        Image im = load_png(file);
        CHECK(im.w == 1600);
        CHECK(im.h == 1000);
        CHECK(distinct_colours(im) > 50);
        if (file.ends_with("_timings_view.png")) {  // the Timings view: charts, no cells
            views.insert("timings");
            continue;
        }
        if (fs::path(file).filename().string().starts_with("lesson")) {  // a lesson's first step
            ++lesson_shots;
            continue;
        }
        // The current step is drawn in the canvas.
        CHECK(count_near(im, kCurrent[0], kCurrent[1], kCurrent[2]) > 50);
        const auto stem = fs::path(file).filename().string();
        for (const char* v :
             {"im2col", "col2im", "stride", "fliprot", "fractal", "tnc", "weight_grad", "winograd"})
            if (stem.find(std::string("_") + v + "_step") != std::string::npos) views.insert(v);
        ++shots;
    }
    CHECK(views.size() == 9);
    CHECK(shots >= 14);
    // The Timings view names the results file by its final path, not by the temporary it was
    // read from before the demo's files were renamed into place.
    CHECK(r.out.find("timings view: showing " + (t.path / "timings" / "results.json").string() +
                     " (measured earlier") != std::string::npos);
    CHECK(lesson_shots ==
          static_cast<int>(
              convlab::lesson::lesson_files(convlab::lesson::default_lesson_dir()).size()));
}

TEST_CASE("app render: the picture follows the step and the hover" * doctest::skip(!can_render())) {
    TempDir t;
    const std::string base = "shot --view col2im --problem mb1ic2ih3oc2kh2 --size 1280x800 ";
    const auto a = (t.path / "a.png").string(), b = (t.path / "b.png").string(),
               c = (t.path / "c.png").string();
    REQUIRE(run_binary(base + "--step 0 --out " + a, t.path).status == 0);
    REQUIRE(run_binary(base + "--step 3 --out " + b, t.path).status == 0);
    REQUIRE(run_binary(base + "--step 3 --hover 3:4 --out " + c, t.path).status == 0);
    Image ia = load_png(a), ib = load_png(b), ic = load_png(c);
    CHECK(ia.w == 1280);
    CHECK(ia.h == 800);
    CHECK(ia.rgb != ib.rgb);
    // Hovering dX(0,0,1,1) lights its four B* sources (and W, dY through B* = W^T dY).
    // (The legend's swatch has that colour in both.)
    CHECK(count_near(ic, kLinked[0], kLinked[1], kLinked[2]) >
          count_near(ib, kLinked[0], kLinked[1], kLinked[2]) + 500);
    // Placeholder views render too (and say what will be there).
    for (const char* v : {"timings", "tensors"}) {
        const auto p = (t.path / (std::string(v) + ".png")).string();
        const Run r = run_binary(std::string("shot --view ") + v + " --out " + p, t.path);
        INFO(r.err);
        CHECK(r.status == 0);
        CHECK(fs::exists(p));
    }
}

TEST_CASE("app render: a step reached by stepping draws what the step drawn afresh draws" *
          doctest::skip(!can_render())) {
    // Cells under 3 px are drawn from the panels' textures, which a step redraws only where
    // its cells changed (texels listed once by a mark kept between steps, then their parents
    // level by level). Keys take the view to step 8, then a numbered sequence draws steps 3 to
    // 6, a frame each (back, then forward a step at a time): its picture of step 6 must be the
    // one a fresh shot of step 6 draws, pixel for pixel.
    TempDir t;
    for (const char* view : {"stride", "col2im"}) {
        CAPTURE(view);
        const std::string base = std::string("shot --view ") + view +
                                 " --problem mb1ic32ih28oc64oh14kh1sh2ph0 --size 1280x720 ";
        const fs::path dir = t.path / view;
        fs::create_directories(dir);
        const Run a = run_binary(base +
                                     "--keys \"Right Right Right Right Right Right Right Right\" "
                                     "--sequence " +
                                     dir.string() + " --steps 3:6",
                                 t.path);
        INFO(a.err);
        REQUIRE(a.status == 0);
        CHECK(a.out.find("step 8,") != std::string::npos);
        const auto fresh = (t.path / "fresh.png").string();
        const Run b = run_binary(base + "--step 6 --out " + fresh, t.path);
        REQUIRE(b.status == 0);
        // (textures: cells under 3 px)
        double cells = 0;
        const std::size_t at = b.out.find("cells ");
        REQUIRE(at != std::string::npos);
        REQUIRE(std::sscanf(b.out.c_str() + at, "cells %lf", &cells) == 1);
        CHECK(cells < 3.0);
        const Image ia = load_png((dir / (std::string(view) + "_0006.png")).string()),
                    ib = load_png(fresh);
        REQUIRE(ia.rgb.size() == ib.rgb.size());
        std::size_t differ = 0;
        for (std::size_t k = 0; k < ia.rgb.size(); ++k) differ += ia.rgb[k] != ib.rgb[k] ? 1 : 0;
        CHECK(differ == 0);
    }
}

TEST_CASE("app render: the timings chart keeps its room in a 1280x720 window" *
          doctest::skip(!can_render())) {
    // The footer (verification, machine, noise, reproduce, exports) takes about 10 lines; at
    // 720 pixels it left the chart "(window too small for the chart)". The chart keeps 24 lines
    // and the footer scrolls below it: implicit_gemm's bars must be there.
    TempDir t;
    const auto p = (t.path / "t.png").string();
    const Run r = run_binary(
        "shot --view timings --bench-quick --chart gflops_fwd --size 1280x720 --out " + p, t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    Image im = load_png(p);
    const convlab::charts::Color c = convlab::charts::algorithm_color("implicit_gemm");
    CHECK(count_near(im, c.r, c.g, c.b, 2) > 2000);
}

TEST_CASE("app render: a measuring lesson's chart is drawn in a 1024x768 window" *
          doctest::skip(!can_render())) {
    // Lesson 18 measures one layer under its narration. The shape-set controls (set, batch, one
    // row of algorithms per pass) do not stand above it, as they do not describe the step's
    // run, and its one layer's label stays level: the turned label took a quarter of the card
    // and left "(window too small for the chart)". The gemm segments must be there.
    TempDir t;
    const auto p = (t.path / "l.png").string();
    const Run r = run_binary("shot --lesson 18 --step 1 --size 1024x768 --out " + p, t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    Image im = load_png(p);
    const convlab::charts::Color c = convlab::charts::operation_color("gemm");
    CHECK(count_near(im, c.r, c.g, c.b, 2) > 1500);
}

TEST_CASE("app render: lesson 18's ratio chart is drawn in presenter mode at 1280x720" *
          doctest::skip(!can_render())) {
    // Its step 2 measures the backward data against the forward live. At 1280x720 in presenter
    // mode the chart read "(window too small for the chart)": the col2im and via_forward bars
    // must be there (the live run's and the reference's shipped with the lesson), and the shot
    // reports the run's bwd_data / fwd ratios, the reference's beside them.
    TempDir t;
    const auto p = (t.path / "l.png").string();
    const Run r =
        run_binary("shot --lesson 18 --step 2 --presenter --size 1280x720 --out " + p, t.path);
    INFO(r.out);
    INFO(r.err);
    REQUIRE(r.status == 0);
    Image im = load_png(p);
    for (const char* algo : {"col2im", "via_forward"}) {
        CAPTURE(algo);
        const convlab::charts::Color c = convlab::charts::algorithm_color(algo);
        CHECK(count_near(im, c.r, c.g, c.b, 2) > 400);
    }
    CHECK(r.out.find("timings: finished: ") != std::string::npos);
    CHECK(r.out.find("bwd_data / fwd: col2im ") != std::string::npos);
    CHECK(r.out.find("(reference: col2im ") != std::string::npos);
}

namespace {
// A shot's fit line ("view fits the canvas: drawn WxH px of WxH, cells Z px"): the canvas height
// and the cell size, checked to be there (r holds the run, for the caller's INFO).
struct Fit {
    int canvas_h = 0;
    double cells = 0;
};
Fit fitted_shot(const std::string& args, const TempDir& t, Run& r) {
    r = run_binary("shot " + args + " --out " + (t.path / "l.png").string(), t.path);
    Fit f;
    REQUIRE(r.status == 0);
    // A lesson step whose fit is unreadable follows the step instead (readably).
    CHECK((r.out.find("view fits the canvas") != std::string::npos ||
           (r.out.find("view follows the step") != std::string::npos &&
            r.out.find("\nreadable: ") != std::string::npos)));
    const std::string key = " px of ", cells = ", cells ";
    const auto at = r.out.find(key), ca = r.out.find(cells);
    REQUIRE(at != std::string::npos);
    REQUIRE(ca != std::string::npos);
    int cw = 0;
    REQUIRE(std::sscanf(r.out.c_str() + at + key.size(), "%dx%d", &cw, &f.canvas_h) == 2);
    f.cells = std::atof(r.out.c_str() + ca + cells.size());
    return f;
}
}  // namespace

TEST_CASE("app render: a lesson in presenter mode on a 1280x720 projector leaves the view room" *
          doctest::skip(!can_render())) {
    // Header, presenter key line and narration (half the height) left the view of lesson 17's
    // network 145 of 720 pixels, its cells a few pixels wide. Under 900 pixels the narration
    // takes at most 40% (it scrolls), the header drops the hover hint and the key line, and the
    // titles are one line: the canvas must be a third of the window and more. With the caption
    // one line, the legend smaller and the rows half a line apart, its 2 x 2 cells went from 17
    // px (digits hidden below 19) to 39.
    TempDir t;
    Run r;
    INFO(r.out);
    INFO(r.err);
    const Fit f = fitted_shot("--lesson 17 --step 4 --presenter --size 1280x720", t, r);
    CHECK(f.canvas_h >= 300);
    CHECK(f.cells >= 32.0);
}

TEST_CASE("app render: the network view's cells grow with the projector's canvas" *
          doctest::skip(!can_render())) {
    // Lesson 17's kernel gradients, revealed, in presenter mode: 4 cells of gap between its small
    // tensors took a third of the row, so the width held the cells to 34.5 px (digits 18.3 px)
    // at 1280x720 with the canvas's lower quarter empty, and to digits of 14.9 px at 1024x768.
    // With 2 cells the digits are 23.4 and 17.2 px (the height allows about 25 at 1280x720).
    TempDir t;
    for (const auto& [size, least] :
         {std::pair<const char*, double>{"1280x720", 21.0}, {"1024x768", 16.0}}) {
        CAPTURE(size);
        const Run r =
            run_binary(std::string("shot --lesson 17 --step 5 --presenter --reveal --size ") +
                           size + " --out " + (t.path / "n.png").string(),
                       t.path);
        INFO(r.out);
        REQUIRE(r.status == 0);
        const std::string key = ", digits ";
        const std::size_t at = r.out.find(key);
        REQUIRE(at != std::string::npos);
        const double digits = std::atof(r.out.c_str() + at + key.size());
        CHECK(digits >= least);
        CHECK(r.out.find("readable: 5 of 5 cells") != std::string::npos);
    }
}

TEST_CASE("app render: cells too small to read on a projector put the panels in one row" *
          doctest::skip(!can_render())) {
    // Lesson 13's TNCf step at 1280x720 in presenter mode: the tnc view's two rows (X, X5, T
    // over dY, dY5, dYf) left a 304-pixel canvas two rows of titles and cells of 4.8 px. Below
    // 10 px the fit also tries one row, the view's own row breaks lifted: 12 px.
    TempDir t;
    Run r;
    INFO(r.out);
    INFO(r.err);
    CHECK(fitted_shot("--lesson 13 --step 2 --presenter --size 1280x720", t, r).cells >= 10.0);
}

TEST_CASE("app render: bad shots fail with status 2, one line, no file") {
    TempDir t;
    // Refused before any window opens (in-process).
    const auto in_process = [&](std::vector<std::string> args) {
        const Run r = convlab::test::run_in_process(std::move(args));
        CHECK(r.status == 2);
        const std::string& e = r.err;
        CHECK(e.rfind("convlab: ", 0) == 0);
        CHECK(std::count(e.begin(), e.end(), '\n') == 1);
        return e;
    };
    const auto missing = (t.path / "no" / "such" / "dir" / "x.png").string();
    CHECK(in_process({"shot", "--view", "im2col", "--out", missing}).find("cannot write") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(missing));
    CHECK(in_process({"shot", "--view", "nope", "--out", (t.path / "x.png").string()})
              .find("unknown view") != std::string::npos);
    CHECK(in_process(
              {"shot", "--problem", "mb1ic2ih3oc2kh2sh0", "--out", (t.path / "x.png").string()})
              .find("sh must be >= 1") != std::string::npos);
    CHECK(in_process({"shot", "--size", "10x10", "--out", (t.path / "x.png").string()})
              .find("--size") != std::string::npos);
    CHECK(in_process({"shot", "--view", "im2col"}).find("--out") != std::string::npos);
    CHECK(in_process({"shot", "--out", t.path.string()}).find("cannot write") != std::string::npos);
    CHECK(in_process({"shot", "--keys", "Right Foo", "--out", (t.path / "x.png").string()})
              .find("--keys 'Foo': unknown key") != std::string::npos);
    CHECK(in_process({"shot", "--canvas", "--frames", "2"}).find("--canvas goes with") !=
          std::string::npos);
    CHECK(in_process({"shot", "--notes-out", missing}).find("cannot write") != std::string::npos);
    CHECK_FALSE(fs::exists(t.path / "x.png"));
    if (!can_render()) return;
    // A field the presenter mode hides cannot take the keys.
    const Run hidden = run_binary("shot --presenter --keys \"focus:kernel 3\"", t.path);
    CHECK(hidden.status == 2);
    CHECK(hidden.err.find("did not take the keyboard") != std::string::npos);
    // Needs the view: a step past the end.
    const auto p = (t.path / "late.png").string();
    const Run r = run_binary("shot --view im2col --step 4 --out " + p, t.path);
    CHECK(r.status == 2);
    CHECK(r.err.find("--step 4") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(p));
}

TEST_CASE("app render: the program under xvfb-run reports its own status to the parent") {
    // The re-run program writes its status to the file CONVLAB_XVFB_STATUS names: the parent
    // ends with it, not with xvfb-run's (5 when xvfb-run cannot remove its temporary directory).
    TempDir t;
    const fs::path file = t.path / "status";
    ::setenv("CONVLAB_XVFB_STATUS", file.c_str(), 1);
    // The status written, or -1 without a file; and the process's own exit status.
    const auto reported = [&](const std::string& args, int& exit_status) {
        fs::remove(file);
        exit_status = run_binary(args, t.path).status;
        std::ifstream f(file);
        int s = -1;
        f >> s;
        return s;
    };
    int st = -1;
    CHECK(reported("compute --no-such-option", st) == 2);
    CHECK(st == 2);
    CHECK(reported("algos", st) == 0);
    CHECK(st == 0);
    ::unsetenv("CONVLAB_XVFB_STATUS");
    CHECK(reported("algos", st) == -1);  // not under the parent: no file
    CHECK(st == 0);
}

TEST_CASE("app render: frame times of the ResNet-50 3x3 layer's im2col view" *
          doctest::skip(!can_render())) {
    TempDir t;
    const Run r = run_binary(
        "shot --view im2col --problem mb1ic64ih56oc64kh3ph1 --frames 20 --report", t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    MESSAGE(r.out);
    // "... median M ms, max X ms; without step changes median ..."
    double median = -1, max = -1;
    const std::size_t at = r.out.find("median ");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::sscanf(r.out.c_str() + at, "median %lf ms, max %lf ms", &median, &max) == 2);
    CHECK(median > 0);
    CHECK(max >= median);
    // The figures are printed, not held to a bound: a timed assertion fails with the machine's
    // load, not with the code (the sanitizer build measured a median of 513 ms against a bound
    // of 500 while other renders ran beside it; the release build 44 ms).
}

TEST_CASE("app render: SVG export and a numbered PNG sequence of a step range" *
          doctest::skip(!can_render())) {
    TempDir t;
    const auto svg = (t.path / "v.svg").string();
    const auto seq = t.path / "seq";
    fs::create_directories(seq);
    const Run r = run_binary("shot --view col2im --problem mb1ic2ih3oc2kh2 --step 2 --svg " + svg +
                                 " --sequence " + seq.string() + " --steps 1:3",
                             t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::ifstream f(svg);
    const std::string text((std::istreambuf_iterator<char>(f)), {});
    CHECK(text.rfind("<svg", 0) == 0);
    CHECK(text.find("</svg>") != std::string::npos);
    const auto count = [](const std::string& hay, const std::string& needle) {
        std::size_t n = 0;
        for (std::size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1))
            ++n;
        return n;
    };
    // One filled rect per cell (W 16, dY 8, B* 32, dX 18), as the canvas fills them; outlines
    // (the current step's cells) are rects without a fill.
    CHECK(count(text, "stroke=\"none\"/>") == 16 + 8 + 32 + 18);
    // The panels' primitives are the canvas's: the same list replayed (export/view_drawing.hpp).
    CHECK(r.out.find("panels drawn: canvas ") != std::string::npos);
    CHECK(text.find("B*  B* = W^T dY") != std::string::npos);         // the canvas's title
    CHECK(text.find("xml:space=\"preserve\"") != std::string::npos);  // its double space shown
    CHECK(text.find("not written yet") != std::string::npos);
    // dX's 18 cells carry their contribution counts, as in the window.
    CHECK(count(text, "\">x") == 18);
    // Padding cells are drawn as padding: X of 4 x 4 padded by 1 has 20 of them.
    const auto padded = (t.path / "p.svg").string();
    REQUIRE(run_binary("shot --view im2col --problem mb1ic1ih4oc1kh3ph1 --step 0 --svg " + padded,
                       t.path)
                .status == 0);
    std::ifstream pf(padded);
    const std::string ptext((std::istreambuf_iterator<char>(pf)), {});
    // Filled: X's 20 padding cells and 16 cells, B's 9 x 16 (the 5 padding zeros column 0
    // reads, output (0, 0): 3 above, 2 to the left, are filled and outlined).
    CHECK(count(ptext, "stroke=\"none\"/>") == 20 + 16 + 9 * 16);
    CHECK(count(ptext, "<line x1=") >= 20);  // each padding cell crossed out
    // Steps 1..3 as col2im_0001.png ... col2im_0003.png, each a different picture.
    std::vector<std::vector<unsigned char>> pics;
    for (int k = 1; k <= 3; ++k) {
        const auto p = seq / ("col2im_000" + std::to_string(k) + ".png");
        INFO(p.string());
        REQUIRE(fs::exists(p));
        pics.push_back(load_png(p.string()).rgb);
    }
    CHECK_FALSE(fs::exists(seq / "col2im_0000.png"));
    CHECK_FALSE(fs::exists(seq / "col2im_0004.png"));
    CHECK(pics[0] != pics[1]);
    CHECK(pics[1] != pics[2]);
}

// The window and the SVG draw a view's panels from one list of primitives (export/
// view_drawing.hpp): where the canvas shows every cell whole (cells of 34 px and more, as the
// SVG's 36), both replay the same count of rectangles, lines and texts. A panel drawn by one
// renderer outside the list (a cell, a label, a count) makes them differ.
TEST_CASE("app render: the canvas and the SVG replay the same panel primitives" *
          doctest::skip(!can_render())) {
    TempDir t;
    const auto svg = (t.path / "s.svg").string();
    for (const std::string args : {"--view im2col --problem mb1ic2ih3oc2kh2 --step 2",
                                   "--view col2im --problem mb1ic2ih3oc2kh2 --step 3",
                                   "--view im2col --problem mb1ic1ih4oc1kh3ph1 --step 0"}) {
        const Run r = run_binary("shot " + args + " --svg " + svg, t.path);
        INFO(args << "\n" << r.out << r.err);
        REQUIRE(r.status == 0);
        const auto at = r.out.find("panels drawn: canvas ");
        REQUIRE(at != std::string::npos);
        const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
        const auto semi = line.find("; svg ");
        REQUIRE(semi != std::string::npos);
        const std::string canvas = line.substr(21, semi - 21), file = line.substr(semi + 6);
        MESSAGE(args << ": canvas " << canvas << "; svg " << file);
        CHECK(canvas == file);
        CHECK(canvas.rfind("0 rects", 0) != 0);  // the panels were drawn
        // The cell size the canvas chose: whole cells there too (else the comparison is moot).
        const auto cells = r.out.find(", cells ");
        REQUIRE(cells != std::string::npos);
        CHECK(std::stod(r.out.substr(cells + 8)) >= 34.0);
    }
}

// The window and the SVG write the panels' titles with one painter (export/view_drawing.hpp's
// title_text, layout_titled and paint_title): with the canvas's cells at the SVG's 36 px
// (--zoom 36) and the view as wide as the canvas (C0 = 4: a canvas's edge wraps a title there),
// every title line is the same text at the same place from its panel's top-left cell, in the
// same size. A title laid out or worded by one output alone makes them differ.
TEST_CASE("app render: the canvas and the SVG write the same panel titles at the same places" *
          doctest::skip(!can_render())) {
    TempDir t;
    const auto svg = (t.path / "s.svg").string();
    for (const std::string args : {"--view im2col --problem mb1ic2ih3oc2kh2 --step 2",
                                   "--view stride --problem mb1ic1ih5oc1kh3sh2 --step 1",
                                   "--view tnc --problem mb1ic2ih3oc2kh2 --c0 4 --step 0",
                                   "--view fractal --problem mb1ic2ih3oc2kh2 --c0 4 --step 0"}) {
        const Run r = run_binary("shot " + args + " --zoom 36 --titles --svg " + svg, t.path);
        INFO(args << "\n" << r.out << r.err);
        REQUIRE(r.status == 0);
        std::vector<std::string> canvas, file;
        std::istringstream lines(r.out);
        for (std::string l; std::getline(lines, l);) {
            if (l.rfind("title canvas ", 0) == 0) canvas.push_back(l.substr(13));
            if (l.rfind("title svg ", 0) == 0) file.push_back(l.substr(10));
        }
        REQUIRE(!canvas.empty());
        CHECK(canvas == file);
        // Above their panel's cells, the panels' names first ("0 0.0 -84.0 15.0 X  input").
        for (const std::string& l : canvas) {
            std::istringstream in(l);
            std::size_t panel = 0;
            double x = 0, y = 0, size = 0;
            in >> panel >> x >> y >> size;
            CHECK(y + size <= 0);
            CHECK(x == 0);
        }
    }
}

TEST_CASE("app render: the fitted view is never cut off, in presenter mode and in a lesson" *
          doctest::skip(!can_render())) {
    // Presenter mode enlarges the fonts and a lesson adds its narration panel after the first
    // frame: the fit must follow, or the bottom row of panels (dX, the gradients) is lost.
    TempDir t;
    const auto png = (t.path / "f.png").string();
    for (const std::string args :
         {"--view stride --problem mb1ic1ih6oc1oh3kh3sh2ph1 --step 4 --presenter",
          "--view col2im --problem mb1ic2ih5oc2kh3sh2ph1 --step 3 --size 1024x768",
          "--view im2col --problem mb1ic2ih3oc2kh2 --step 1", "--lesson 17 --step 5 --presenter",
          "--lesson 01 --step 3 --presenter",
          // A small projector: lesson 17's five forward tensors, arranged again for the canvas.
          "--lesson 17 --step 2 --size 1024x768 --presenter",
          "--lesson 17 --step 2 --size 1024x768",
          // Six tensors over four gradients: in bands of columns, the titles apart.
          "--lesson 11 --step 2 --size 1024x768 --presenter",
          "--lesson 06 --step 3 --size 1024x768"}) {
        const Run r = run_binary("shot " + args + " --out " + png, t.path);
        INFO(args << "\n" << r.out << r.err);
        REQUIRE(r.status == 0);
        // Fitted whole, or (a lesson step unreadable fitted) following the step readably.
        CHECK((r.out.find("view fits the canvas: drawn") != std::string::npos ||
               (r.out.find("view follows the step") != std::string::npos &&
                r.out.find("\nreadable: ") != std::string::npos)));
    }
    const auto cells = [&](const std::string& args) {
        const Run r = run_binary("shot " + args + " --out " + png, t.path);
        INFO(args << "\n" << r.out << r.err);
        REQUIRE(r.status == 0);
        const auto at = r.out.find("cells ");
        REQUIRE(at != std::string::npos);
        return std::stod(r.out.substr(at + 6));
    };
    // The rows chosen again for the real canvas: lesson 01's X and B side by side on a 1024 x
    // 768 projector (56.6 px cells), not stacked as arranged for 1600 x 1000 (39.0 px).
    CHECK(cells("--lesson 01 --step 1 --size 1024x768 --presenter") >= 50.0);
    // One-line titles tried beside full ones, not chosen once by the height full ones took:
    // with the narration flowed the canvas grew 8 px and lesson 07's cells fell from 28.6 px to
    // 21 (full titles over the column matrix's 8 rows); both tried, 30.5.
    CHECK(cells("--lesson 07 --step 1 --size 1024x768") >= 28.0);
}

TEST_CASE("app render: following the step zooms a large view in to readable cells" *
          doctest::skip(!can_render())) {
    // The tnc view of 8 channels at batch 2 on a 1024 x 768 projector: fitted (F), its cells
    // are under 2 px; following the step, 28 px with the step's cells in the picture. Presenter
    // mode follows by itself where the fit leaves the step unreadable.
    TempDir t;
    const std::string base =
        "shot --view tnc --problem mb2ic8ih10oc8kh3sh2ph1 --presenter --size 1024x768 ";
    const auto fitted = (t.path / "fit.png").string(), followed = (t.path / "follow.png").string();
    const auto cells = [](const Run& r) {
        const auto at = r.out.find("cells ");
        REQUIRE(at != std::string::npos);
        return std::stod(r.out.substr(at + 6));
    };
    const Run rf = run_binary(base + "--step 300 --keys F --out " + fitted, t.path);
    INFO(rf.out << rf.err);
    REQUIRE(rf.status == 0);
    CHECK(rf.out.find("view fits the canvas") != std::string::npos);
    CHECK(cells(rf) < 5.0);
    for (const char* how : {"--follow", ""}) {
        const Run rz = run_binary(base + "--step 300 " + how + " --out " + followed, t.path);
        INFO(how << "\n" << rz.out << rz.err);
        REQUIRE(rz.status == 0);
        CHECK(rz.out.find("view follows the step") != std::string::npos);
        // Digits where the fit had none (the step's 36 cells lie too far apart for all of them
        // to be in one picture at 28 px: 16 are).
        const auto shown = rz.out.find(" of 36 cells of the step show their value");
        REQUIRE(shown != std::string::npos);
        CHECK(std::stoi(rz.out.substr(rz.out.rfind(' ', shown - 1) + 1)) >= 16);
        CHECK(cells(rz) == doctest::Approx(28.0));
    }
    // Without presenter mode the fit stays, as the teacher's own screen shows it.
    const Run rw = run_binary(
        "shot --view tnc --problem mb2ic8ih10oc8kh3sh2ph1 --size 1024x768 "
        "--step 300 --out " +
            fitted,
        t.path);
    INFO(rw.out << rw.err);
    REQUIRE(rw.status == 0);
    CHECK(rw.out.find("view fits the canvas") != std::string::npos);
    // The last shot of the loop (presenter mode, no --follow) is the followed picture below.
    REQUIRE(run_binary(base + "--step 300 --follow --out " + followed, t.path).status == 0);
    // The step's line of 16 cells (data and zero lanes, both tinted with the current step's
    // orange) at 28 px, below the header and its legend.
    const auto orange = [](Image& im) {
        int n = 0;
        for (int y = 200; y < im.h; ++y)
            for (int x = 0; x < im.w; ++x) {
                const unsigned char* p = im.at(x, y);
                n += p[0] > 180 && p[1] > 110 && p[1] < 200 && p[0] - p[2] > 90;
            }
        return n;
    };
    Image a = load_png(fitted), b = load_png(followed);
    CHECK(orange(b) > 16 * 20 * 20);
    CHECK(orange(b) > 4 * orange(a));
}

TEST_CASE("app render: the header leaves the browser's copy-link corner free" *
          doctest::skip(!can_render())) {
    // The browser's page draws its "copy link" bar over the window's top right corner and the
    // app keeps the header's text out of that box (--corner gives it, as the page's size of the
    // bar does). The tnc view's caption, cut to one line at 720 px high, runs to the right edge:
    // under the bar without the box, ending before it with the box.
    TempDir t;
    const std::string base = "shot --view tnc --problem mb2ic8ih10oc8kh3sh2ph1 --size 1280x720 ";
    const auto plain = (t.path / "plain.png").string(), kept = (t.path / "kept.png").string();
    for (const auto& [args, out] :
         {std::pair{std::string(), plain}, std::pair{std::string("--corner 200x40 "), kept}}) {
        const Run r = run_binary(base + args + "--out " + out, t.path);
        INFO(r.out << r.err);
        REQUIRE(r.status == 0);
    }
    // Pixels of the 200 x 40 corner unlike its most common colour (the header's background),
    // the window's border (its top row and right column) left out.
    const auto ink = [](Image& im) {
        std::map<int, int> freq;
        const auto rgb = [&im](int x, int y) {
            const unsigned char* p = im.at(x, y);
            return (p[0] << 16) | (p[1] << 8) | p[2];
        };
        for (int y = 2; y < 40; ++y)
            for (int x = im.w - 200; x < im.w - 2; ++x) ++freq[rgb(x, y)];
        const int bg = std::max_element(freq.begin(), freq.end(), [](auto& l, auto& r) {
                           return l.second < r.second;
                       })->first;
        int n = 0;
        for (int y = 2; y < 40; ++y)
            for (int x = im.w - 200; x < im.w - 2; ++x) {
                const int c = rgb(x, y);
                n += std::abs(((c >> 16) & 255) - ((bg >> 16) & 255)) +
                         std::abs(((c >> 8) & 255) - ((bg >> 8) & 255)) +
                         std::abs((c & 255) - (bg & 255)) >
                     60;
            }
        return n;
    };
    Image a = load_png(plain), b = load_png(kept);
    CHECK(ink(a) > 40);
    CHECK(ink(b) == 0);
    const Run bad = run_binary(base + "--corner 200 --out " + kept, t.path);
    CHECK(bad.status == 2);
    CHECK(bad.err.find("convlab: --corner '200': expected WxH") != std::string::npos);
}

TEST_CASE("app render: a theme file changes the palette" * doctest::skip(!can_render())) {
    TempDir t;
    fs::create_directories(t.path / "assets" / "themes");
    {
        std::ofstream f(t.path / "assets" / "themes" / "default.theme");
        f << "# test theme\nname = test magenta\nbackground = #ff00ff\nnot a line\n";
    }
    const auto p = (t.path / "m.png").string();
    const Run r = run_binary("shot --view im2col --out " + p, t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    Image im = load_png(p);
    CHECK(count_near(im, 255, 0, 255, 2) > 100000);  // the canvas background
    // The bad line is named, with its file and line, and the shot still succeeds.
    CHECK(r.err.find("default.theme:4: expected 'field = value', got 'not a line'") !=
          std::string::npos);
}

TEST_CASE("app render: every lesson step is readable on a projector" *
          doctest::skip(!can_render())) {
    // The readability rule: at 1280x720 and 1024x768, with and without presenter mode, the cells
    // of each step's current step and its highlights show their values in digits of at least 14
    // px, inside the canvas (a step whose fit is smaller follows the step, zoomed in).
    TempDir t;
    std::string files;
    for (const auto& f :
         convlab::lesson::lesson_files(std::string(CONVLAB_SOURCE_DIR) + "/lessons"))
        files += " " + f;
    const Run r = run_binary("lesson check --readable" + files, t.path);
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    const auto at = r.out.find("readability: ");
    REQUIRE(at != std::string::npos);
    const int ok = std::stoi(r.out.substr(at + 13));
    const int of = std::stoi(r.out.substr(r.out.find(" of ", at) + 4));
    CHECK(ok == of);
    CHECK(of >= 4 * 60);  // every step of the 18 lessons, 4 renders each
}

TEST_CASE("app render: the readability rule names a step it cannot hold" *
          doctest::skip(!can_render())) {
    // Two highlights at the opposite corners of a ResNet-sized column matrix: no zoom shows both
    // with readable digits, and the check names the step, the size and the mode.
    TempDir t;
    const auto lesson = (t.path / "far.toml").string();
    std::ofstream(lesson) << "title = \"Far apart\"\naudience = \"a\"\n"
                             "problem = \"mb1ic16ih28oc16kh3ph1\"\n"
                             "[[step]]\ntitle = \"Two corners\"\nview = \"im2col\"\n"
                             "map = \"im2col\"\ngranularity = \"line\"\n"
                             "narration = \"The first and the last entry of B.\"\n"
                             "highlights = [\"col[0,0,0,0]\", \"col[0,0,143,783]\"]\n";
    const Run r = run_binary("lesson check --readable " + lesson, t.path);
    INFO(r.out << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("far.toml: step 1 (Two corners) at 1280x720 in presenter mode: NOT "
                     "readable") != std::string::npos);
    CHECK(r.err.find("fail the readability rule") != std::string::npos);
}

namespace {

// "after the keys: ..." of a shot with --keys.
std::string state_after(const Run& r) {
    const auto at = r.out.find("after the keys: ");
    if (at == std::string::npos) return "";
    return r.out.substr(at + 16, r.out.find('\n', at) - at - 16);
}

// The canvas height a shot reports ("drawn WxH px of WxH").
int canvas_height(const Run& r) {
    const auto at = r.out.find(" px of ");
    int w = 0, h = 0;
    if (at == std::string::npos || std::sscanf(r.out.c_str() + at + 7, "%dx%d", &w, &h) != 2)
        return -1;
    return h;
}

}  // namespace

TEST_CASE("app render: keys after Enter or Escape in a field reach the view, none is lost" *
          doctest::skip(!can_render())) {
    TempDir t;
    const std::string base = "shot --view im2col --problem mb1ic1ih6oc1kh3 --size 1280x800 --keys ";
    const auto keys = [&](const std::string& script, const std::string& more = "") {
        const Run r = run_binary(base + "\"" + script + "\"" + more, t.path);
        INFO(r.err);
        CHECK(r.status == 0);
        return state_after(r);
    };
    // Typed at once: the kernel field takes "2" and Enter; the "2" after Enter is the view key
    // (col2im), not a second digit in the field (kernel 22, an invalid problem).
    std::string s = keys("focus:kernel 2 Enter 2 Right Right");
    CHECK(s.find("view col2im") != std::string::npos);
    CHECK(s.find("kh2") != std::string::npos);
    CHECK(s.find("step 2,") != std::string::npos);
    CHECK(s.find("error") == std::string::npos);
    // Escape reverts the field (kernel 3 again) and the step key after it steps.
    s = keys("focus:kernel 5 Escape Right");
    CHECK(s.find("kh3,") != std::string::npos);
    CHECK(s.find("step 1,") != std::string::npos);
    // In the descriptor field the arrows move its cursor, not the view's step; after Enter they
    // step the view.
    s = keys("focus:descriptor Right Right");
    CHECK(s.find("step 0,") != std::string::npos);
    s = keys("focus:descriptor Enter Right Right");
    CHECK(s.find("step 2,") != std::string::npos);
    // Five presses between two frames are five steps.
    s = keys("Right Right Right Right Right");
    CHECK(s.find("step 5,") != std::string::npos);
    // A presenter remote's two PgDn at once: two lesson steps, in the main window and in the
    // presenter window alike.
    Run r = run_binary("shot --lesson 14 --keys \"PgDn PgDn\"", t.path);
    CHECK(state_after(r).find("lesson step 3 of") != std::string::npos);
    r = run_binary("shot --lesson 14 --presenter --keys \"W notes:PgDn notes:PgDn notes:W\"",
                   t.path);
    INFO(r.err);
    CHECK(state_after(r).find("lesson step 3 of") != std::string::npos);
    CHECK(state_after(r).find("presenter window closed") != std::string::npos);  // W closed it
    // A lesson file dropped on the window opens it at its first step; a results file shows the
    // timings view; any other file changes nothing.
    const std::string kLessonDir = std::string(CONVLAB_SOURCE_DIR) + "/lessons";
    r = run_binary(
        "shot --view im2col --keys \"drop:" + kLessonDir + "/14_backward_via_forward.toml PgDn\"",
        t.path);
    INFO(r.err);
    CHECK(state_after(r).find("lesson step 2 of") != std::string::npos);
    r = run_binary(
        "shot --view im2col --keys \"drop:" + kLessonDir + "/18_measuring.results.json\"", t.path);
    CHECK(state_after(r).find("view timings") != std::string::npos);
    r = run_binary("shot --view col2im --keys \"drop:" + kLessonDir + "/README.md\"", t.path);
    CHECK(state_after(r).find("view col2im") != std::string::npos);
    CHECK(state_after(r).find("lesson step") == std::string::npos);
}

TEST_CASE("app render: the presenter window has the notes, the projected canvas none" *
          doctest::skip(!can_render())) {
    TempDir t;
    const std::string base = "shot --lesson 14 --presenter --size 1280x720 ";
    const auto p = [&](const char* name) { return (t.path / name).string(); };
    const Run strip = run_binary(base + "--step 3 --out " + p("strip.png"), t.path);
    const Run notes = run_binary(
        base + "--step 3 --out " + p("canvas.png") + " --notes-out " + p("n3.png"), t.path);
    const Run again = run_binary(base + "--step 3 --notes-out " + p("n3b.png"), t.path);
    const Run next = run_binary(base + "--step 4 --notes-out " + p("n4.png"), t.path);
    for (const Run* r : {&strip, &notes, &again, &next}) {
        INFO(r->err);
        REQUIRE(r->status == 0);
    }
    // The canvas takes the strip's height too, and its bottom rows are the canvas's margin: one
    // colour, where the strip's text was.
    CHECK(canvas_height(notes) > canvas_height(strip) + 30);
    Image with = load_png(p("canvas.png")), without = load_png(p("strip.png"));
    // (Inside the window's 1-pixel border.)
    const auto band_colours = [](const Image& im) {
        std::set<int> c;
        for (int y = im.h - 20; y < im.h - 1; ++y)
            for (int x = 1; x < im.w - 1; ++x) {
                const unsigned char* q = im.at(x, y);
                c.insert(q[0] << 16 | q[1] << 8 | q[2]);
            }
        return c.size();
    };
    CHECK(band_colours(with) == 1);
    CHECK(band_colours(without) > 2);
    // The notes: the presenter window's size, text in several colours, the passing check in the
    // palette's green (0, 130, 60); the same step twice the same picture (the shots' clock is
    // fixed), another step another.
    Image n3 = load_png(p("n3.png")), n3b = load_png(p("n3b.png")), n4 = load_png(p("n4.png"));
    CHECK(n3.w == 1280);
    CHECK(n3.h == 800);
    CHECK(distinct_colours(n3) > 20);
    int green = 0;
    for (int y = 0; y < n3.h; ++y)
        for (int x = 0; x < n3.w; ++x) {
            const unsigned char* q = n3.at(x, y);
            green += std::abs(q[0] - 0) < 8 && std::abs(q[1] - 130) < 8 && std::abs(q[2] - 60) < 8;
        }
    CHECK(green > 100);
    CHECK(n3.rgb == n3b.rgb);
    CHECK(n3.rgb != n4.rgb);
}

TEST_CASE("app render: the app's exports are of the canvas alone" * doctest::skip(!can_render())) {
    TempDir t;
    const std::string base = "shot --view col2im --problem mb1ic2ih3oc2kh2 --size 1280x800 ";
    const auto p = [&](const char* name) { return (t.path / name).string(); };
    const Run whole = run_binary(base + "--step 3 --out " + p("w.png"), t.path);
    const Run canvas = run_binary(base + "--step 3 --canvas --out " + p("c.png"), t.path);
    const Run gif =
        run_binary(base + "--canvas --gif " + p("g.gif") + " --from 0 --to 2 --fps 2", t.path);
    for (const Run* r : {&whole, &canvas, &gif}) {
        INFO(r->err);
        REQUIRE(r->status == 0);
    }
    int cw = 0, ch = 0, cx = 0, cy = 0;
    const auto at = canvas.out.find("canvas alone: ");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::sscanf(canvas.out.c_str() + at, "canvas alone: %dx%d px at (%d, %d)", &cw, &ch,
                        &cx, &cy) == 4);
    Image w = load_png(p("w.png")), c = load_png(p("c.png"));
    CHECK(c.w == cw);
    CHECK(c.h == ch);
    // Right of the sidebar and under the header.
    CHECK(cx >= 300);
    CHECK(cy >= 60);
    // The window has the sidebar's widgets left of the canvas; the export is the window's
    // canvas rectangle, pixel for pixel, without them.
    CHECK(distinct_colours(w, 0, 200) > 10);
    REQUIRE(cx + cw <= w.w);
    REQUIRE(cy + ch <= w.h);
    long differ = 0;
    for (int y = 0; y < ch; ++y)
        for (int x = 0; x < cw; ++x)
            differ += std::memcmp(c.at(x, y), w.at(cx + x, cy + y), 3) != 0;
    CHECK(differ == 0);
    // The GIF: every frame the canvas's size.
    const auto gif_frames = [](const std::string& path, int fw, int fh) {
        int err = 0;
        GifFileType* g = DGifOpenFileName(path.c_str(), &err);
        REQUIRE(g != nullptr);
        REQUIRE(DGifSlurp(g) == GIF_OK);
        CHECK(g->SWidth == fw);
        CHECK(g->SHeight == fh);
        for (int k = 0; k < g->ImageCount; ++k) {
            CHECK(g->SavedImages[k].ImageDesc.Width == fw);
            CHECK(g->SavedImages[k].ImageDesc.Height == fh);
        }
        const int n = g->ImageCount;
        DGifCloseFile(g, &err);
        return n;
    };
    CHECK(gif_frames(p("g.gif"), cw, ch) == 3);
    // In a lesson in presenter mode (no sidebar), key E: the step's steps as a GIF of the canvas
    // (lesson 14's step 2 plays the 16 steps of dY's zero insertion), into the export folder.
    const Run e = run_binary(
        "shot --lesson 14 --step 2 --presenter --size 1280x720 --canvas --keys E "
        "--out " +
            p("e.png"),
        t.path);
    INFO(e.err);
    REQUIRE(e.status == 0);
    const auto ea = e.out.find("canvas alone: ");
    REQUIRE(ea != std::string::npos);
    REQUIRE(std::sscanf(e.out.c_str() + ea, "canvas alone: %dx%d", &cw, &ch) == 2);
    CHECK(ch < 720 - 60);  // the canvas alone: without the header above it and the strip below
    CHECK(gif_frames(p("out/export/stride.gif"), cw, ch) == 16);
}
