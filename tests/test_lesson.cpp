// Lessons: every lesson of lessons/ loads, validates and passes its checks; malformed lessons give
// "file:line:column: what" errors at the right line; checks can fail; the worked problem's
// gradients; the `convlab lesson` command.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "convlab/layers.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"
#include "test_files.hpp"

using namespace convlab;
using namespace convlab::lesson;

namespace {

const std::string kLessonDir = std::string(CONVLAB_SOURCE_DIR) + "/lessons";

// A minimal valid lesson; `step_extra` is appended inside its one step.
std::string lesson_text(const std::string& step_extra, const std::string& view = "im2col") {
    // Line numbers: 1 title, 2 audience, 3 [[step]], 4 view, 5 problem, 6 narration, 7 extra.
    std::string t = "title = \"t\"\naudience = \"a\"\n[[step]]\n";
    t += "view = \"" + view + "\"\n";
    t += "problem = \"mb1ic1iw5oc1kw3pw1\"\nnarration = \"n\"\n";
    return t + step_extra;
}

// Parses and validates, and checks every step against its view (as `convlab lesson check`);
// returns the LessonError (or fails the test when there is none).
LessonError error_of(const std::string& text) {
    try {
        const Lesson l = parse_lesson(text, "bad.toml");
        validate(l);
        for (std::size_t k = 0; k < l.steps.size(); ++k)
            app::check_step_view(l, k, std::make_shared<const StepResult>(evaluate(l, k)));
    } catch (const LessonError& e) {
        return e;
    }
    FAIL("no LessonError for:\n" << text);
    return LessonError({}, "");
}

void expect_error(const std::string& text, int line, const std::string& fragment) {
    const LessonError e = error_of(text);
    INFO("error: " << std::string(e.what()));
    CHECK(e.pos().file == "bad.toml");
    CHECK(e.pos().line == line);
    CHECK(std::string(e.what()).rfind("bad.toml:" + std::to_string(line) + ":", 0) == 0);
    CHECK(e.message().find(fragment) != std::string::npos);
}

int run(std::vector<std::string> args, std::string& out, std::string& err) {
    const convlab::test::Run r = convlab::test::run_in_process(std::move(args));
    out = r.out;
    err = r.err;
    return r.status;
}

}  // namespace

TEST_CASE("lessons: every lesson in lessons/ loads, validates and passes every check") {
    const std::vector<std::string> files = lesson_files(kLessonDir);
    REQUIRE(files.size() >= 18);
    std::size_t checks = 0;
    for (const std::string& f : files) {
        CAPTURE(f);
        const Lesson l = load_lesson(f);
        CHECK(!l.title.empty());
        CHECK(!l.audience.empty());
        REQUIRE(!l.steps.empty());
        for (std::size_t k = 0; k < l.steps.size(); ++k) {
            CAPTURE(k + 1);
            const Step& s = l.steps[k];
            CHECK(!s.narration.empty());
            const auto rp = std::make_shared<const StepResult>(evaluate(l, k));
            const StepResult& r = *rp;
            CHECK(!r.tensors.empty());
            if (!s.map.empty()) CHECK(r.map_steps > 0);
            // The step range lies within its view's steps (which the player plays).
            const app::StepView v = app::check_step_view(l, k, rp);
            CHECK(s.step_end <= v.steps);
            CHECK(s.step_begin < std::max<dim_t>(v.steps, 1));
            REQUIRE(r.checks.size() == s.checks.size());
            for (const CheckResult& c : r.checks) {
                INFO(c.message);
                CHECK(c.passed);
            }
            checks += r.checks.size();
        }
    }
    CHECK(checks >= 100);
}

TEST_CASE("lessons: the course is numbered 01..18 in order") {
    const std::vector<std::string> files = lesson_files(kLessonDir);
    for (std::size_t i = 0; i < 18 && i < files.size(); ++i) {
        char prefix[4];
        std::snprintf(prefix, sizeof prefix, "%02zu_", i + 1);
        CHECK(std::filesystem::path(files[i]).filename().string().rfind(prefix, 0) == 0);
    }
}

TEST_CASE("lessons: malformed lessons give file:line errors naming what is wrong") {
    SUBCASE("TOML syntax") {
        // toml++ reports the line where the unterminated array began.
        expect_error(lesson_text("steps = [0, \n"), 7, "TOML syntax");
    }
    SUBCASE("unknown view") {
        expect_error(lesson_text("", "im2kol"), 4, "unknown view 'im2kol'");
    }
    SUBCASE("a stage names a panel the view does not draw") {
        expect_error(lesson_text("panels = [\"src\", \"diff_wei\"]\n"), 7,
                     "'panels' entry 'diff_wei': the im2col view has no such panel");
        expect_error(lesson_text("panels = []\n"), 7, "'panels' must be a non-empty array");
        expect_error(lesson_text("panels = [\"src\", 3]\n"), 7,
                     "a 'panels' entry must be a tensor name");
    }
    SUBCASE("bad descriptor") {
        std::string t = lesson_text("");
        t.replace(t.find("mb1ic1iw5oc1kw3pw1"), 18, "mb1ic1iw5oc1kw9");
        expect_error(t, 5, "problem 'mb1ic1iw5oc1kw9'");
    }
    SUBCASE("step range beyond the view") {
        // The im2col view of this problem: 5 columns at line granularity.
        expect_error(lesson_text("map = \"im2col\"\ngranularity = \"line\"\nsteps = [0, 6]\n"), 9,
                     "the im2col view of mb1ic1iw5oc1kw3pw1 has 5 line steps");
        // The weight_grad view plays dW element by element (3 steps), with no map.
        expect_error(lesson_text("steps = [3, 3]\n", "weight_grad"), 7, "has 3 element steps");
        // A view without steps.
        expect_error(lesson_text("steps = [0, 1]\n", "tensors"), 7,
                     "the tensors view has no steps to play");
        // The step it opens on: inside the range, and inside the view.
        expect_error(lesson_text("steps = [1, 3]\nstart = 3\n", "weight_grad"), 8,
                     "'start' = 3 must lie in 'steps' [1, 3)");
        expect_error(lesson_text("start = 3\n", "weight_grad"), 7,
                     "'start' = 3: the weight_grad view of mb1ic1iw5oc1kw3pw1 has 3 element steps");
    }
    SUBCASE("a highlight on a tensor the step's view does not draw") {
        // The im2col view draws X and B (and its map's tensors), not Y.
        expect_error(
            lesson_text("highlights = [\"col[0,0,1]\", \"dst[0,0,2]\"]\n"), 7,
            "highlight 'dst[0,0,2]': the im2col view does not draw dst (it draws: src, col)");
        // The weight_grad view has no bias gradient; the tensors view draws what it is asked to.
        expect_error(lesson_text("highlights = [\"diff_bias[0]\"]\n", "weight_grad"), 7,
                     "the weight_grad view does not draw diff_bias (it draws: src, diff_dst, "
                     "diff_wei, col)");
        const std::string ok = lesson_text("highlights = [\"diff_bias[0]\"]\n", "tensors");
        const Lesson l = parse_lesson(ok, "ok.toml");
        CHECK_NOTHROW(
            app::check_step_view(l, 0, std::make_shared<const StepResult>(evaluate(l, 0))));
    }
    SUBCASE("show: tensor names of the step, on the tensors view only") {
        expect_error(lesson_text("show = [\"src\", \"dts\"]\n", "tensors"), 7,
                     "'show' names tensor 'dts', which this step does not have");
        expect_error(lesson_text("show = [\"src\"]\n"), 7,
                     "'show' lists the panels of the tensors view; this step's view is 'im2col'");
        expect_error(lesson_text("show = \"src\"\n", "tensors"), 7,
                     "'show' must be an array of tensor names");
    }
    SUBCASE("chart: a timings step's, one its compare list measures") {
        expect_error(lesson_text("chart = \"ops_fwd\"\n"), 7,
                     "'chart' goes with view = \"timings\"");
        expect_error(lesson_text("compare = [\"bwd_data:col2im\"]\nchart = \"relative_bwd_data\"\n",
                                 "timings"),
                     8,
                     "chart 'relative_bwd_data': the step's measurement (its 'compare' list) gives "
                     "ops_bwd_data, gflops_bwd_data");
    }
    SUBCASE("unknown map") {
        expect_error(lesson_text("map = \"im3col\"\n"), 7, "unknown map 'im3col'");
    }
    SUBCASE("map that does not fit the problem") {
        expect_error(lesson_text("map = \"fractal_z_3d\"\n"), 7, "fractal_z_3d");
    }
    SUBCASE("unknown check tensor") {
        expect_error(lesson_text("[[step.check]]\ntensor = \"diff_wie\"\nequals = 1\n"), 7,
                     "tensor 'diff_wie'");
    }
    SUBCASE("check index outside the tensor") {
        expect_error(lesson_text("[[step.check]]\ntensor = \"diff_wei\"\nat = [0, 0, 3]\n"
                                 "equals = 1\n"),
                     7, "outside [0, 3)");
    }
    SUBCASE("check value of the wrong shape") {
        expect_error(lesson_text("[[step.check]]\ntensor = \"diff_wei\"\nequals = [1, 2]\n"), 9,
                     "selects dims (1,1,3)");
    }
    SUBCASE("wrong types") {
        expect_error(lesson_text("granularity = 3\n"), 7, "'granularity' must be a string");
        expect_error(lesson_text("[[step.check]]\ntensor = \"dst\"\nequals = \"one\"\n"), 9,
                     "must be a number");
        expect_error(lesson_text("steps = \"all\"\nmap = \"im2col\"\n"), 7,
                     "'steps' must be an array of integers");
        expect_error("title = 5\naudience = \"a\"\n[[step]]\n", 1, "'title' must be a string");
    }
    SUBCASE("ragged nesting of inline data") {
        expect_error(lesson_text("[step.data]\nsrc = [[1, 2], [3]]\n"), 8, "ragged nesting");
    }
    SUBCASE("inline data of the wrong size") {
        expect_error(lesson_text("[step.data]\nsrc = [1, 2, 3]\n"), 8, "needs (1,1,5)");
    }
    SUBCASE("unknown key (a typo)") {
        expect_error(lesson_text("narattion = \"x\"\n"), 7, "unknown key 'narattion'");
    }
    SUBCASE("missing required keys") {
        expect_error("title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"im2col\"\n", 3,
                     "needs 'narration'");
        expect_error(
            "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"im2col\"\n"
            "narration = \"n\"\n",
            3, "needs a 'problem'");
    }
    SUBCASE("layer names clash") {
        expect_error(lesson_text("[step.network]\ninput = [[[1, 2, 3, 4, 5]]]\ntarget = [0]\n"
                                 "[[step.network.layer]]\ntype = \"relu\"\nname = \"dst\"\n"),
                     10, "layer name 'dst' is taken");
    }
    SUBCASE("highlight of a missing tensor") {
        expect_error(lesson_text("highlights = [\"srx[0,0,1]\"]\n"), 7, "tensor 'srx'");
    }
    SUBCASE("network layer that does not fit its input") {
        expect_error(lesson_text("[step.network]\ninput = [[[[1, 2], [3, 4]]]]\ntarget = [0]\n"
                                 "[[step.network.layer]]\ntype = \"conv\"\n"
                                 "problem = \"mb1ic1ih3oc1kh3\"\nseed = 1\n"),
                     10, "layer conv0");  // the [[step.network.layer]] header
    }
}

TEST_CASE("lessons: a wrong expected value fails its check with got and expected") {
    const Lesson l =
        parse_lesson(lesson_text("[step.data]\nsrc = [1, 2, -1, 3, 0]\nwei = [1, 0, -1]\n"
                                 "[[step.check]]\ntensor = \"dst\"\nat = [0, 0, 1]\nequals = 2.5\n"
                                 "[[step.check]]\ntensor = \"dst\"\nequals = [-2, 2, -1, -1, 3]\n"),
                     "wrong.toml");
    const StepResult r = evaluate(l, 0);
    REQUIRE(r.checks.size() == 2);
    CHECK_FALSE(r.checks[0].passed);
    CHECK(r.checks[0].worst == doctest::Approx(0.5));
    CHECK(r.checks[0].message.find("dst[0,0,1] = 2, expected 2.5") != std::string::npos);
    CHECK(r.checks[1].passed);
}

TEST_CASE("lessons: lesson-level problem, data and network are defaults of every step") {
    const Lesson l = parse_lesson(
        "title = \"t\"\naudience = \"a\"\n"
        "problem = \"mb1ic1iw5oc1kw3\"\n"
        "[data]\nsrc = [1, 2, 3, 4, 5]\nwei = [1, 1, 1]\n"
        "[[step]]\nview = \"im2col\"\nnarration = \"n\"\n"
        "[[step]]\nview = \"im2col\"\nnarration = \"n\"\n"
        "problem = \"mb1ic1iw4oc1kw2\"\n",
        "d.toml");
    REQUIRE(l.steps.size() == 2);
    const StepResult a = evaluate(l, 0);
    const Tensor& y = a.find("dst")->value;
    REQUIRE(y.numel() == 3);
    CHECK(y.f32()[0] == 6.0f);  // 1 + 2 + 3
    CHECK(y.f32()[2] == 12.0f);
    // The second step has its own problem, and so no default data (seeded instead).
    CHECK(l.steps[1].problem.kernel[0] == 2);
    CHECK(l.steps[1].data.empty());
}

TEST_CASE("lessons: the worked problem's gradients, by the layers directly") {
    // 4x4 image, ones at (1,1) and (2,2); w1: -1 at (1,0), 1 at (1,1); w2: -1 at (2,1), 1 at (1,1);
    // no padding, ReLU, 2x2 max pooling, identity fc, softmax cross-entropy, target index 1.
    using namespace convlab::layers;
    Tensor x({1, 1, 4, 4});
    x.set(std::vector<dim_t>{0, 0, 1, 1}, 1.0f);
    x.set(std::vector<dim_t>{0, 0, 2, 2}, 1.0f);
    const Problem p = parse_descriptor("mb1ic1ih4oc2kh3");
    Tensor w(p.wei_dims());
    w.set(std::vector<dim_t>{0, 0, 1, 0}, -1.0f);
    w.set(std::vector<dim_t>{0, 0, 1, 1}, 1.0f);
    w.set(std::vector<dim_t>{1, 0, 2, 1}, -1.0f);
    w.set(std::vector<dim_t>{1, 0, 1, 1}, 1.0f);
    Tensor fc({2, 2});
    fc.f32()[0] = fc.f32()[3] = 1.0f;
    Sequential net;
    net.add(std::make_unique<Conv>("conv", p, w));
    net.add(std::make_unique<ReLU>("relu"));
    net.add(std::make_unique<MaxPool>("pool", Pool{{2, 2}, {}}));
    net.add(std::make_unique<FullyConnected>("fc", fc));
    net.forward(x);
    CHECK(net.loss({1}) == doctest::Approx(std::log(2.0)).epsilon(1e-7));
    net.backward();
    const Tensor& dw = *net.layers()[0]->params()[0].grad;
    const float dw1[9] = {0, 0, 0, 0, 0.5f, 0, 0, 0, 0.5f};
    const float dw2[9] = {0, 0, 0, 0, -0.5f, 0, 0, 0, -0.5f};
    for (int i = 0; i < 9; ++i) {
        CAPTURE(i);
        CHECK(dw.f32()[i] == doctest::Approx(dw1[i]));
        CHECK(dw.f32()[9 + i] == doctest::Approx(dw2[i]));
    }
    const Tensor& dW = *net.layers()[3]->params()[0].grad;
    const float want[4] = {0.5f, 0.5f, -0.5f, -0.5f};
    for (int i = 0; i < 4; ++i) CHECK(dW.f32()[i] == doctest::Approx(want[i]));
}

TEST_CASE("lessons: convlab lesson check, list and show") {
    std::string out, err;
    const std::string one = kLessonDir + "/01_backprop_1d.toml";
    CHECK(run({"lesson", "check", one, kLessonDir + "/17_worked_problem.toml"}, out, err) == 0);
    CHECK(out.find("01_backprop_1d.toml: 4 steps, 5/5 checks passed\n") != std::string::npos);
    CHECK(out.find("17_worked_problem.toml: 5 steps, 14/14 checks passed\n") != std::string::npos);
    CHECK(err.empty());

    // --each: every passed check after its lesson's line, one line each, with its position.
    CHECK(run({"lesson", "check", "--each", one}, out, err) == 0);
    {
        std::size_t passes = 0;
        for (std::size_t p = 0; (p = out.find("\n  PASS " + one + ":", p)) != std::string::npos;
             ++p)
            ++passes;
        CHECK(passes == 5);
        CHECK(out.find(": step 2: diff_wei") != std::string::npos);
        CHECK(out.find("01_backprop_1d.toml: 4 steps, 5/5 checks passed\n  PASS ") !=
              std::string::npos);
    }
    CHECK(run({"lesson", "list", "--each"}, out, err) == 2);
    CHECK(err.find("--each belongs to 'lesson check'") != std::string::npos);

    CHECK(run({"lesson", "list"}, out, err) == 0);
    CHECK(out.find("01_backprop_1d.toml  4 steps  Backprop through a 1-D convolution") !=
          std::string::npos);
    CHECK(out.find("18_measuring.toml") != std::string::npos);

    CHECK(run({"lesson", "show", one, "--step", "2", "--tensor", "diff_wei"}, out, err) == 0);
    CHECK(out.find("dL/dw[1] = 1*1 + 2*2") != std::string::npos);
    CHECK(out.find("check: diff_wei") != std::string::npos);
    CHECK(out.find("diff_wei: dL/dW") != std::string::npos);
    CHECK(out.find("\ncol:") == std::string::npos);  // only the tensors asked for

    // The narration wrapped at 100 columns between words: lesson 4's step 2 has a longer line;
    // every word is kept, in order, and the lines within 100 columns are shown as written.
    {
        const auto lines_of = [](const std::string& t) {
            std::vector<std::string> v;
            std::istringstream in(t);
            for (std::string l; std::getline(in, l);) v.push_back(l);
            return v;
        };
        const auto words_of = [](const std::string& t) {
            std::vector<std::string> v;
            std::istringstream in(t);
            for (std::string w; in >> w;) v.push_back(w);
            return v;
        };
        const std::string four = kLessonDir + "/04_stride.toml";
        const std::string narration = load_lesson(four).steps[1].narration;
        std::size_t longest = 0;
        for (const std::string& l : lines_of(narration)) longest = std::max(longest, l.size());
        REQUIRE(longest > 100);  // the case under test
        CHECK(run({"lesson", "show", four, "--step", "2", "--tensor", "diff_dst"}, out, err) == 0);
        const std::size_t b = out.find("\n\n") + 2, e = out.find("\nhighlights:");
        REQUIRE(e != std::string::npos);
        REQUIRE(b < e);
        const std::string shown = out.substr(b, e - b);
        for (const std::string& l : lines_of(shown)) CHECK(l.size() <= 100);
        CHECK(words_of(shown) == words_of(narration));
        CHECK(lines_of(shown).size() > lines_of(narration).size());
        for (const std::string& l : lines_of(narration))
            if (l.size() <= 100) CHECK(shown.find(l) != std::string::npos);
    }

    // A malformed lesson: status 2, one line "convlab: file:line:column: ...".
    const auto dir = std::filesystem::temp_directory_path() / "convlab_lesson_test";
    std::filesystem::create_directories(dir);
    const std::string bad = (dir / "bad.toml").string();
    {
        std::ofstream f(bad);
        f << lesson_text("", "im2kol");
    }
    CHECK(run({"lesson", "check", one, bad}, out, err) == 2);
    CHECK(out.find("01_backprop_1d.toml: 4 steps, 5/5 checks passed\n") != std::string::npos);
    // Diagnostics go to standard error, as a compiler's; the summary lines stay on the output.
    CHECK(out.find(bad + ":4:8:") == std::string::npos);
    CHECK(
        err.find(
            bad +
            ":4:8: unknown view 'im2kol' (views: im2col, col2im, stride, "
            "fliprot, fractal, tnc, weight_grad, timings, tensors, winograd, map:NAME for a map of "
            "`convlab map --list`)\n") != std::string::npos);
    CHECK(err.ends_with("\nconvlab: lesson check: 1 of 2 lessons failed, 1 error\n"));
    // list keeps going over a malformed lesson.
    CHECK(run({"lesson", "list", dir.string()}, out, err) == 0);
    CHECK(out.find("bad.toml  malformed: " + bad + ":4:8:") != std::string::npos);
    // A failed check: listed with its line, status 2.
    {
        std::ofstream f(bad);
        f << lesson_text("[[step.check]]\ntensor = \"dst\"\nat = [0, 0, 0]\nequals = 7\n");
    }
    CHECK(run({"lesson", "check", bad}, out, err) == 2);
    CHECK(out.find("1 step, 0/1 checks passed (FAILED)") != std::string::npos);
    CHECK(err.find("FAIL " + bad + ":7:") != std::string::npos);
    CHECK(err.ends_with("\nconvlab: lesson check: 1 of 1 lesson failed, 1 of 1 checks failed\n"));

    // Several malformed files: every one is reported (file:line:column: message), in order, and
    // the good files between them are still checked.
    {
        const std::string bad2 = (dir / "bad2.toml").string(), bad3 = (dir / "bad3.toml").string();
        std::ofstream(bad2) << lesson_text("map = \"im3col\"\n");
        // Two steps: the first names a missing tensor, the second still runs and passes.
        std::ofstream(bad3) << lesson_text("highlights = [\"dts[0]\"]\n") +
                                   "[[step]]\nview = \"im2col\"\nproblem = \"mb1ic1iw5oc1kw3\"\n"
                                   "narration = \"n\"\n[[step.check]]\ntensor = \"dst\"\n"
                                   "equals_tensor = \"dst\"\n";
        std::ofstream(bad) << lesson_text("", "im2kol");
        CHECK(run({"lesson", "check", bad, one, bad2, bad3}, out, err) == 2);
        INFO(out);
        INFO(err);
        const auto at = [&](const std::string& s) { return err.find(s); };
        CHECK(at(bad + ":4:8: unknown view 'im2kol'") == 0);
        CHECK(at(bad + ":4:8:") < at(bad2 + ":7:7: unknown map 'im3col'"));
        CHECK(at(bad2 + ":7:") < at(bad3 + ":7:15: the highlight names tensor 'dts'"));
        CHECK(at(bad3 + ":7:15:") < at("convlab: lesson check: 3 of 4 lessons failed, 3 errors\n"));
        CHECK(out.find("01_backprop_1d.toml: 4 steps, 5/5 checks passed\n") <
              out.find(bad3 + ": 2 steps, 1/1 checks passed (FAILED)\n"));
        CHECK(out.find(bad3 + ": 2 steps, 1/1 checks passed (FAILED)\n") != std::string::npos);
    }

    // lesson check rejects a highlight its view does not draw, at the highlight's line.
    std::ofstream(bad) << lesson_text("highlights = [\"dst[0,0,0]\"]\n");
    CHECK(run({"lesson", "check", bad}, out, err) == 2);
    CHECK(err.find(bad + ":7:15: highlight 'dst[0,0,0]': the im2col view does not draw dst") !=
          std::string::npos);

    CHECK(run({"lesson", "show", one, "--step", "9"}, out, err) == 2);
    CHECK(err.find("--step") != std::string::npos);
    CHECK(run({"lesson", "check"}, out, err) == 2);
    CHECK(run({"lesson", "teach"}, out, err) == 2);
    CHECK(err.find("unknown action 'teach'") != std::string::npos);
    CHECK(run({"lesson", "check", (dir / "missing.toml").string()}, out, err) == 2);
    CHECK(err.find("missing.toml: cannot open: No such file or directory\n") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("lesson: a narration flows: line breaks inside a paragraph become spaces") {
    // The file's lines (about 100 characters) left short fragments where the panel wrapped
    // them at another width.
    CHECK(flow_narration("one two\nthree four\nfive") == "one two three four five");
    // Paragraphs, indented formulas and list items keep their lines.
    CHECK(flow_narration("a\n\nb") == "a\n\nb");
    CHECK(flow_narration("sum over i:\n  y = 1 + 2\n  = 3\nso y is 3.") ==
          "sum over i:\n  y = 1 + 2\n  = 3\nso y is 3.");
    CHECK(flow_narration("steps:\n- pad\n  by one\n- gemm\n1. first\n10. tenth") ==
          "steps:\n- pad\n  by one\n- gemm\n1. first\n10. tenth");
    CHECK(flow_narration("- a list item\nthat goes on") == "- a list item that goes on");
    CHECK(flow_narration("1.5 is not a list\nitem") == "1.5 is not a list item");
    CHECK(flow_narration("") == "");
    CHECK(flow_narration("ends with a break\n") == "ends with a break\n");
}
