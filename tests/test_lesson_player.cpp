// The lesson player: its window-free state (open, next / previous, evaluation on a worker thread,
// check results, step plans, highlights, step-range playback, malformed lessons), the tensors
// view, and every step of every lesson rendered headless as the player shows it (one window,
// many shots, through `convlab demo --lessons`), each PNG checked for size and content.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "charts/chart.hpp"
#include "cli/cli.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"
#include "model/timings_state.hpp"
#include "stb_image.h"
#include "test_files.hpp"
#include "test_lessons.hpp"

using namespace convlab;
namespace fs = std::filesystem;
using convlab::test::can_render;
using convlab::test::distinct_colours;
using convlab::test::Image;
using convlab::test::kLessonDir;
using convlab::test::lesson_file;
using convlab::test::load_png;
using convlab::test::Run;
using convlab::test::run_binary;
using convlab::test::TempDir;

namespace {

const std::vector<float>& values_of(const lesson::StepResult& r, const std::string& name,
                                    std::vector<float>& buf) {
    const lesson::NamedTensor* t = r.find(name);
    REQUIRE_MESSAGE(t != nullptr, name);
    buf.assign(t->value.f32(), t->value.f32() + t->value.numel());
    return buf;
}

}  // namespace

TEST_CASE("lesson player: open, next, previous, clamps, check results") {
    app::LessonPlayer p;
    p.scan(kLessonDir);
    REQUIRE(p.entries.size() >= 18);
    for (const auto& e : p.entries) {
        INFO(e.file);
        CHECK(e.error.empty());
        CHECK(!e.title.empty());
        CHECK(e.steps > 0);
    }
    CHECK(!p.next());  // nothing open: no-op
    REQUIRE(p.open(lesson_file("01")));
    CHECK(p.step() == 0);
    CHECK(p.busy());  // evaluated off the caller's thread
    CHECK(p.poll(true));
    REQUIRE(p.result() != nullptr);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.error().empty());
    CHECK(p.plan()->request.view == p.lesson()->steps[0].view);
    CHECK(p.plan()->request.problem == p.lesson()->steps[0].problem);
    CHECK(p.plan()->granularity == p.lesson()->steps[0].granularity);
    CHECK(p.result()->checks.size() == p.lesson()->steps[0].checks.size());
    CHECK(p.result()->passed() == p.result()->checks.size());
    // The view shows the very data the step was evaluated with (lesson 1: p = [1, 2, -1, 3, 0]).
    std::vector<float> buf;
    CHECK(p.plan()->request.src == values_of(*p.result(), "src", buf));
    CHECK(p.plan()->request.src == std::vector<float>{1, 2, -1, 3, 0});
    const auto gen = p.generation();
    CHECK(p.next());
    CHECK(p.step() == 1);
    CHECK(p.result() == nullptr);  // until its evaluation arrives
    // Several keys in a row: only the last step's result is taken.
    CHECK(p.next());
    CHECK(p.prev());
    CHECK(p.poll(true));
    CHECK(p.step() == 1);
    REQUIRE(p.result() != nullptr);
    CHECK(p.generation() > gen);
    CHECK(p.plan()->request.view == p.lesson()->steps[1].view);
    CHECK(p.go(100));  // clamped to the last step
    CHECK(p.step() == p.num_steps() - 1);
    CHECK(!p.next());
    p.poll(true);
    CHECK(p.go(0));
    CHECK(!p.prev());
    p.poll(true);
    CHECK(p.step() == 0);
}

TEST_CASE(
    "lesson player: every step of every lesson evaluates, its checks pass, its plan is "
    "buildable") {
    for (const auto& f : lesson::lesson_files(kLessonDir)) {
        app::LessonPlayer p;
        REQUIRE_MESSAGE(p.open(f), p.error());
        for (std::size_t k = 0; k < p.num_steps(); ++k) {
            INFO(f << " step " << k + 1);
            p.go(k);
            p.poll(true);
            REQUIRE_MESSAGE(p.result() != nullptr, p.error());
            CHECK(p.result()->passed() == p.result()->checks.size());
            REQUIRE(p.plan() != nullptr);
            // Every highlight of the step resolves to a block of its tensor.
            CHECK(p.plan()->highlights.size() == p.lesson()->steps[k].highlights.size());
            if (p.plan()->request.view == "timings") continue;
            const app::ViewModel v = app::build_view(p.plan()->request);
            CHECK(!v.panels.empty());
            // A highlight lights the cells of its panel that hold the highlighted values.
            const auto cells = app::highlight_cells(v, *p.plan());
            // The step opens on the first step of its range, where every highlighted cell is
            // already written (the narration talks about it; it must not be blank).
            const dim_t n = app::num_steps(v, p.plan()->granularity);
            if (n > 0) {
                app::Playback pb;
                pb.step = p.plan()->open;
                CHECK(!app::clamp_to_range(pb, p.plan()->range_begin, p.plan()->range_end, n));
                const app::StepState st = app::compute_step(v, p.plan()->granularity, pb.step);
                for (std::size_t i = 0; i < cells.size(); ++i)
                    for (dim_t c : cells[i]) {
                        const auto cu = static_cast<std::size_t>(c);
                        if ((st.panels[i].flags[cu] & app::kPending) == 0) continue;
                        // Where it is written, for the message.
                        dim_t w = pb.step;
                        while (w + 1 < n &&
                               (app::compute_step(v, p.plan()->granularity, w).panels[i].flags[cu] &
                                app::kPending))
                            ++w;
                        FAIL_CHECK("panel " << v.panels[i].name << " cell " << c
                                            << " is blank at step " << pb.step
                                            << ", where the step opens; written at step " << w);
                    }
            }
            for (const auto& h : p.plan()->highlights) {
                // The view draws every highlighted tensor (lesson check rejects it otherwise).
                INFO(h.text);
                const int i = app::panel_of_tensor(v, h.tensor, p.plan()->map);
                REQUIRE(i >= 0);
                REQUIRE(v.panels[static_cast<std::size_t>(i)].numel() == h.numel);
                const auto& c = cells[static_cast<std::size_t>(i)];
                const lesson::NamedTensor* t = p.result()->find(h.tensor);
                for (dim_t e = h.begin; e < h.end; ++e) {
                    CHECK(std::binary_search(c.begin(), c.end(), e));
                    // The panel shows the step's own value there (lesson data, engine results).
                    CHECK(
                        v.panels[static_cast<std::size_t>(i)].values[static_cast<std::size_t>(e)] ==
                        t->value.f32()[e]);
                }
            }
        }
    }
}

TEST_CASE("lesson player: step range limits playback") {
    app::Playback pb;
    pb.step = 0;
    CHECK(app::clamp_to_range(pb, 3, 6, 10));
    CHECK(pb.step == 3);
    pb.paused = false;
    pb.loop = true;
    // Playing through the range's end starts it again.
    for (int i = 0; i < 3; ++i) {
        pb.advance(1.0 / pb.speed, 10);
        app::clamp_to_range(pb, 3, 6, 10);
    }
    CHECK(pb.step == 3);
    // Without loop: stops on the range's last step.
    pb.loop = false;
    pb.step = 5;
    pb.advance(1.0 / pb.speed, 10);
    CHECK(app::clamp_to_range(pb, 3, 6, 10));
    CHECK(pb.step == 5);
    CHECK(pb.paused);
    // Stepping back from the first step stays there; the last key stays on the last step.
    pb.step = 3;
    pb.step_back(10);
    app::clamp_to_range(pb, 3, 6, 10);
    CHECK(pb.step == 3);
    pb.step = 5;
    pb.step_forward(10);
    app::clamp_to_range(pb, 3, 6, 10);
    CHECK(pb.step == 5);
    // end -1 (to the end) and end beyond the view: n; a view without steps: untouched.
    pb.step = 9;
    CHECK(!app::clamp_to_range(pb, 0, -1, 10));
    CHECK(!app::clamp_to_range(pb, 0, 50, 10));
    CHECK(!app::clamp_to_range(pb, 2, 4, 0));
    // A range starting beyond the view starts on its last step.
    pb.step = 0;
    app::clamp_to_range(pb, 20, 30, 10);
    CHECK(pb.step == 9);
}

TEST_CASE("lesson player: a lesson step's range and highlights reach the view (lesson 15)") {
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("15"), 1));  // the stride-phase step: steps = [6, 25]
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.plan()->range_begin == 6);
    CHECK(p.plan()->range_end == 25);
    const app::ViewModel v = app::build_view(p.plan()->request);
    const auto cells = app::highlight_cells(v, *p.plan());
    const int dx = app::panel_of_tensor(v, "diff_src", p.plan()->map);
    REQUIRE(dx >= 0);
    CHECK(v.panels[static_cast<std::size_t>(dx)].name == "dX");
    // diff_src[0,0,1,1] of a 5x5 image: element 6; its value is the narration's 12.
    CHECK(cells[static_cast<std::size_t>(dx)] == std::vector<dim_t>{6});
    CHECK(v.panels[static_cast<std::size_t>(dx)].values[6] == 12.0f);
    CHECK(p.plan()->highlights[0].values == "12");
}

TEST_CASE("lesson player: a step opens where its narration is (start, granularity)") {
    app::LessonPlayer p;
    // Lesson 2, step 3: dL/dX[1][2] of a 4x4 dX, element 6; the whole range still plays.
    REQUIRE(p.open(lesson_file("02"), 2));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.plan()->open == 6);
    CHECK(p.plan()->range_begin == 0);
    CHECK(p.plan()->range_end == -1);
    app::ViewModel v = app::build_view(p.plan()->request);
    app::StepState st = app::compute_step(v, p.plan()->granularity, p.plan()->open);
    const int dx = app::panel_of_tensor(v, "diff_src", p.plan()->map);
    REQUIRE(dx >= 0);
    const auto& flags = st.panels[static_cast<std::size_t>(dx)].flags;
    CHECK((flags[6] & app::kPending) == 0);
    CHECK((flags[6] & app::kCurrent) != 0);
    CHECK((flags[7] & app::kPending) != 0);  // the next one is still blank
    // Lesson 4, step 5: one row a step, opening on row 5 (the leftover row): all of dX written.
    REQUIRE(p.open(lesson_file("04"), 4));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.plan()->granularity == Granularity::Line);
    CHECK(p.plan()->open == 5);
    v = app::build_view(p.plan()->request);
    st = app::compute_step(v, p.plan()->granularity, p.plan()->open);
    const int dx4 = app::panel_of_tensor(v, "diff_src", p.plan()->map);
    REQUIRE(dx4 >= 0);
    for (auto f : st.panels[static_cast<std::size_t>(dx4)].flags) CHECK((f & app::kPending) == 0);
}

TEST_CASE("tensors view: a step's show list gives the panels, in its order (lesson 7: W B = Y)") {
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("07"), 1));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.plan()->request.view == "tensors");
    CHECK(p.plan()->request.tensor_names == std::vector<std::string>{"wei", "col", "dst"});
    const app::ViewModel v = app::build_view(p.plan()->request);
    REQUIRE(v.panels.size() == 3);
    CHECK(v.panels[0].name == "wei");
    CHECK(v.panels[1].name == "col");
    CHECK(v.panels[2].name == "dst");
    // One row, left to right; Y[0][0][0] = 10 is outlined in Y.
    CHECK(v.panels[0].y == v.panels[2].y);
    CHECK(v.panels[0].x < v.panels[1].x);
    CHECK(v.panels[1].x < v.panels[2].x);
    CHECK(app::highlight_cells(v, *p.plan())[2] == std::vector<dim_t>{0});
    CHECK(v.panels[2].values[0] == 10.0f);
    // A highlighted tensor the list leaves out is drawn after it.
    TempDir t;
    const std::string f = t.write("show.toml",
                                  "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"tensors\"\n"
                                  "problem = \"mb1ic1iw5oc1kw3\"\nnarration = \"n\"\n"
                                  "show = [\"dst\", \"src\"]\nhighlights = [\"wei[0]\"]\n");
    REQUIRE(p.open(f));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.plan()->request.tensor_names == std::vector<std::string>{"dst", "src", "wei"});
}

TEST_CASE("tensors view: the tensors a network step talks about, values to three figures") {
    const auto panels_of = [](const std::string& lesson, std::size_t step) {
        app::LessonPlayer p;
        REQUIRE(p.open(lesson_file(lesson), step));
        p.poll(true);
        REQUIRE(p.plan() != nullptr);
        const app::ViewModel v = app::build_view(p.plan()->request);
        std::map<std::string, app::Panel> by;
        for (const auto& pn : v.panels) by[pn.name] = pn;
        return by;
    };
    // Lesson 17, step 4 (the pooling tie): the pooling output and its gradient are drawn, the
    // gradient right below it.
    auto by = panels_of("17", 3);
    for (const char* n : {"conv", "relu", "pool", "diff_conv", "diff_relu", "diff_pool"})
        CHECK_MESSAGE(by.count(n), n);
    CHECK(by["diff_pool"].x == by["pool"].x);
    CHECK(by["diff_pool"].y > by["pool"].y);
    // Step 2: the fc output; lesson 11, step 2: fc; lesson 6, step 3: the input t.
    CHECK(panels_of("17", 1).count("fc"));
    CHECK(panels_of("11", 1).count("fc"));
    by = panels_of("06", 2);
    REQUIRE(by.count("input"));
    CHECK(by["input"].values[2] == 2.0f);  // t[0][2]
    // The loss 0.0181499 (cells show two decimals): three significant figures in its title.
    REQUIRE(by.count("loss"));
    CHECK(by["loss"].title.rfind("= 0.0181  ", 0) == 0);
    REQUIRE(by.count("probs"));
    CHECK(by["probs"].title.rfind("= [0.982, 0.018]  ", 0) == 0);
    // Values two decimals show exactly get no such title.
    CHECK(panels_of("17", 2)["diff_fc"].title.rfind("= ", 0) == std::string::npos);
}

TEST_CASE("lesson player: a timings step measures its own layer live (lesson 18)") {
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("18"), 1));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.plan()->request.view == "timings");
    const lesson::Step& s = p.lesson()->steps[1];
    CHECK(s.chart == "relative_bwd_data");
    // What the lesson UI starts in the Timings panel when the step opens (gui/lesson.cpp), on a
    // smaller layer: the test measures, it does not teach.
    app::TimingsLessonRun run;
    run.problem = s.problem;
    run.problem.mb = 1;
    run.problem.ic = run.problem.oc = 4;
    run.problem.name = "lesson18";
    run.algos = s.compare;
    run.chart = s.chart;
    run.source = "test";
    bench::Config cfg = app::lesson_config(run, 1, std::nullopt, "out dir");
    REQUIRE(cfg.layers.size() == 1);
    CHECK(cfg.passes == std::vector<Pass>{Pass::Forward, Pass::BackwardData});
    CHECK(cfg.command.find("--passes fwd,bwd_data --algos "
                           "fwd:im2col_gemm,bwd_data:col2im,bwd_data:via_forward") !=
          std::string::npos);
    CHECK(cfg.command.find("--out 'out dir'") != std::string::npos);
    app::TimingsRun r;
    REQUIRE(r.start(std::move(cfg)));
    r.wait();
    const app::TimingsSnapshot sn = r.snapshot();
    REQUIRE(sn.results != nullptr);
    CHECK(sn.error.empty());
    // Exactly the step's algorithms, all verified, and the step's chart among the charts.
    std::set<std::string> measured;
    for (const auto& m : sn.results->rows)
        measured.insert(std::string(pass_name(m.pass)) + ":" + m.algorithm);
    CHECK(measured == std::set<std::string>(s.compare.begin(), s.compare.end()));
    CHECK(sn.results->failed() == 0);
    bool has_chart = false;
    for (const auto& c : charts::standard_charts(*sn.results)) has_chart |= c.id == s.chart;
    CHECK(has_chart);
    // Not PASS:NAME, or an unknown algorithm: refused with the reason.
    run.algos = {"col2im"};
    CHECK_THROWS_WITH_AS(app::lesson_config(run, 1, std::nullopt, "x"),
                         doctest::Contains("PASS:NAME"), Error);
    run.algos = {"bwd_data:col3im"};
    CHECK_THROWS_AS(app::lesson_config(run, 1, std::nullopt, "x"), Error);
    // None listed: every algorithm of every pass.
    run.algos.clear();
    CHECK(app::lesson_config(run, 1, std::nullopt, "x").passes.size() == 3);
}

TEST_CASE("lesson player: next at a lesson's last step opens the next lesson, and back") {
    app::LessonPlayer p;
    p.scan(kLessonDir);
    REQUIRE(p.open(lesson_file("01")));
    p.poll(true);
    // Through lesson 1 step by step, then on into lesson 2.
    const std::size_t n1 = p.num_steps();
    for (std::size_t k = 1; k < n1; ++k) CHECK(p.forward());
    CHECK(p.step() == n1 - 1);
    CHECK(p.file() == lesson_file("01"));
    CHECK(p.forward());
    CHECK(p.file() == lesson_file("02"));
    CHECK(p.step() == 0);
    CHECK(p.poll(true));
    REQUIRE(p.result() != nullptr);
    CHECK(p.plan()->request.view == p.lesson()->steps[0].view);
    // Back from lesson 2's first step: lesson 1's last step.
    CHECK(p.backward());
    CHECK(p.file() == lesson_file("01"));
    CHECK(p.step() == n1 - 1);
    p.poll(true);
    // The course's ends stay where they are.
    REQUIRE(p.open(lesson_file("01")));
    CHECK(!p.backward());
    CHECK(p.file() == lesson_file("01"));
    REQUIRE(p.open(lesson_file("18"), 100));
    CHECK(!p.forward());
    CHECK(p.file() == lesson_file("18"));
    p.poll(true);
    // A lesson that does not parse is skipped; a file outside the list has no neighbours.
    TempDir t;
    const std::string good =
        "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"im2col\"\n"
        "problem = \"mb1ic1iw5oc1kw3\"\nnarration = \"n\"\n";
    const std::string a = t.write("a.toml", good), c = t.write("c.toml", good);
    t.write("b.toml", "title = \"broken\n");
    app::LessonPlayer q;
    q.scan(t.path.string());
    REQUIRE(q.entries.size() == 3);
    REQUIRE(q.open(a));
    CHECK(q.forward());
    CHECK(q.file() == c);
    CHECK(q.backward());
    CHECK(q.file() == a);
    q.poll(true);
    REQUIRE(q.open(lesson_file("02"), 100));
    CHECK(!q.forward());
    q.poll(true);
}

TEST_CASE("lesson player: a malformed lesson is an error state with file:line, never a crash") {
    TempDir t;
    const std::string bad = t.write("bad.toml",
                                    "title = \"t\"\naudience = \"a\"\n[[step]]\n"
                                    "view = \"im2kol\"\nnarration = \"n\"\n");
    app::LessonPlayer p;
    CHECK(!p.open(bad));
    CHECK(!p.is_open());
    CHECK(p.error().rfind(bad + ":4:", 0) == 0);
    CHECK(p.error().find("im2kol") != std::string::npos);
    CHECK(!p.next());
    CHECK(!p.poll(true));
    // A missing file, then a good lesson: the player recovers.
    CHECK(!p.open((t.path / "missing.toml").string()));
    CHECK(!p.error().empty());
    REQUIRE(p.open(lesson_file("02")));
    CHECK(p.error().empty());
    p.poll(true);
    CHECK(p.result() != nullptr);
    // A lesson that parses but whose step names a missing tensor: that step's error.
    const std::string bad_step =
        t.write("bad_step.toml",
                "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"im2col\"\nproblem = "
                "\"mb1ic1iw5oc1kw3\"\nnarration = \"n\"\nhighlights = [\"nothing[0]\"]\n");
    REQUIRE(p.open(bad_step));
    CHECK(p.poll(true));
    CHECK(p.result() == nullptr);
    CHECK(p.error().rfind(bad_step + ":", 0) == 0);
    CHECK(p.error().find("nothing") != std::string::npos);
    // The directory listing marks the malformed files and keeps the others.
    const auto list = app::list_lessons(t.path.string());
    REQUIRE(list.size() == 2);
    CHECK(!list[0].error.empty());  // bad.toml
    CHECK(list[1].error.empty());   // bad_step.toml parses (its step fails when evaluated)
    CHECK(list[1].steps == 1);
}

TEST_CASE("tensors view: a step's named tensors as panels, forward above backward") {
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("17"), 4));  // the worked problem: the kernel gradients
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    CHECK(p.plan()->request.view == "tensors");
    const app::ViewModel v = app::build_view(p.plan()->request);
    std::map<std::string, const app::Panel*> by;
    for (const auto& pn : v.panels) by[pn.name] = &pn;
    REQUIRE(by.count("conv.diff_wei"));
    REQUIRE(by.count("conv.wei"));
    // Values are the engine's, element for element; the gradient sits below its tensor.
    std::vector<float> buf;
    CHECK(by["conv.diff_wei"]->values == values_of(*p.result(), "conv.diff_wei", buf));
    CHECK(by["conv.diff_wei"]->values[4] == 0.5f);  // dL/dw1[1][1], the lecture's number
    CHECK(by["conv.diff_wei"]->y > by["conv.wei"]->y);
    CHECK(by["conv.diff_wei"]->x == by["conv.wei"]->x);
    CHECK(by["conv.diff_wei"]->shape.dims == std::vector<dim_t>{2, 1, 3, 3});
    const auto cells = app::highlight_cells(v, *p.plan());
    const int i = app::panel_of_tensor(v, "conv.diff_wei", "");
    REQUIRE(i >= 0);
    // conv.diff_wei[0,0,1,1], [0,0,2,2], [1,0,1,1]: elements 4, 8, 13.
    CHECK(cells[static_cast<std::size_t>(i)] == std::vector<dim_t>{4, 8, 13});
    CHECK(v.formula(v, i, 4).find("0.5") != std::string::npos);
    // Without a lesson: the problem's own tensors, evaluated by the engine.
    app::ViewRequest r;
    r.view = "tensors";
    r.problem = parse_descriptor("mb1ic2ih3oc2kh2");
    const app::ViewModel w = app::build_view(r);
    std::set<std::string> names;
    for (const auto& pn : w.panels) names.insert(pn.name);
    for (const char* n : {"src", "wei", "dst", "diff_dst", "diff_src", "diff_wei"})
        CHECK(names.count(n));
    CHECK(app::num_steps(w, Granularity::Line) == 0);
    r.problem.kernel[0] = 9;  // invalid: the engine's message
    CHECK_THROWS_AS(app::build_view(r), Error);
}

namespace {

// Pixels of rows [y0, y1) right of the sidebar (x >= 400) within tol of colour c.
// Pixels of rows [y0, y1) close to colour c, from column x0 on (400: right of the sidebar).
int count_near(const Image& im, const int c[3], int y0, int y1, int tol = 8, int x0 = 400) {
    int n = 0;
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < im.w; ++x) {
            const unsigned char* p = &im.rgb[(static_cast<std::size_t>(y) * im.w + x) * 3];
            n += std::abs(p[0] - c[0]) <= tol && std::abs(p[1] - c[1]) <= tol &&
                 std::abs(p[2] - c[2]) <= tol;
        }
    return n;
}

// The default palette's highlight outline (gui/lesson.cpp) and the PASS text colour.
constexpr int kHighlight[3] = {190, 40, 150};
constexpr int kGood[3] = {0, 130, 60};

}  // namespace

TEST_CASE("lesson player render: every step of every lesson, headless" *
          doctest::skip(!can_render())) {
    TempDir t;
    const Run r = run_binary("demo --lessons --out " + t.path.string(), t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::istringstream lines(r.out);
    std::vector<std::string> files;
    // The PNGs, one a line (then each one's readability verdict, "FILE: readable: ...").
    for (std::string f; std::getline(lines, f);)
        if (f.size() > 4 && f.compare(f.size() - 4, 4, ".png") == 0) files.push_back(f);
    CHECK(r.out.find(": NOT readable") == std::string::npos);
    // One PNG a step.
    std::size_t steps = 0;
    std::vector<std::pair<std::string, std::size_t>> expected;
    for (const auto& f : lesson::lesson_files(kLessonDir)) {
        const lesson::Lesson l = lesson::load_lesson(f);
        for (std::size_t k = 0; k < l.steps.size(); ++k) expected.emplace_back(f, k);
        steps += l.steps.size();
    }
    REQUIRE(files.size() == steps);
    std::set<std::size_t> pictures;  // hashes of the pixels
    for (std::size_t i = 0; i < files.size(); ++i) {
        const auto& [lesson_path, k] = expected[i];
        INFO(files[i]);
        Image im = load_png(files[i]);
        // The class's view: a 1280x720 projector in presenter mode.
        CHECK(im.w == 1280);
        CHECK(im.h == 720);
        // Content in the canvas (top half) and in the narration strip (bottom part).
        CHECK(distinct_colours(im, 0, im.h / 2) > 50);
        CHECK(distinct_colours(im, im.h * 3 / 4, im.h) > 20);
        pictures.insert(std::hash<std::string_view>{}(
            std::string_view(reinterpret_cast<const char*>(im.rgb.data()), im.rgb.size())));
        // Highlights that the step's view shows are outlined; passed checks say PASS in green.
        app::LessonPlayer p;
        REQUIRE(p.open(lesson_path, k));
        p.poll(true);
        REQUIRE(p.plan() != nullptr);
        if (p.plan()->request.view != "timings") {
            const app::ViewModel v = app::build_view(p.plan()->request);
            std::size_t lit = 0;
            for (const auto& c : app::highlight_cells(v, *p.plan())) lit += c.size();
            // (Presenter mode: no sidebar, the whole width is the canvas.)
            if (lit > 0) CHECK(count_near(im, kHighlight, 120, im.h, 8, 0) > 30);
        }
        if (!p.result()->checks.empty()) CHECK(count_near(im, kGood, im.h / 2, im.h, 8, 0) > 30);
    }
    CHECK(pictures.size() == files.size());  // every step looks different
}

TEST_CASE("lesson player render: shot --lesson, and a malformed lesson fails with file:line" *
          doctest::skip(!can_render())) {
    TempDir t;
    const std::string out = (t.path / "l17.png").string();
    Run r = run_binary("shot --lesson 17 --step 5 --out " + out, t.path);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(fs::exists(out));
    CHECK(r.out.find("step 5") != std::string::npos);
    const std::string bad = t.write("bad.toml",
                                    "title = \"t\"\naudience = \"a\"\n[[step]]\n"
                                    "view = \"im2kol\"\nnarration = \"n\"\n");
    const std::string no = (t.path / "no.png").string();
    r = run_binary("shot --lesson " + bad + " --step 1 --out " + no, t.path);
    CHECK(r.status == 2);
    CHECK(r.err.rfind("convlab: " + bad + ":4:", 0) == 0);
    CHECK(!fs::exists(no));
    // A step beyond the lesson: refused before any window.
    std::ostringstream o, e;
    CHECK(run_cli({"shot", "--lesson", "01", "--step", "9", "--out", no}, o, e) == 2);
    CHECK(e.str().find("--step") != std::string::npos);
    CHECK(!fs::exists(no));
}
