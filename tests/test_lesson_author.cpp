// Authoring and presenting lessons: predict-then-reveal steps (the 'hide' key: parse errors, the
// hidden cells' state, the narration before and after the reveal, shots of both), the hover links
// of the tensors view's convolutions, axis names, the lesson name derived from a file name, and
// the reload of a lesson file edited on disk.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "convlab/problem.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"
#include "model/model.hpp"
#include "stb_image.h"
#include "test_files.hpp"
#include "test_lessons.hpp"

using namespace convlab;
namespace fs = std::filesystem;
using convlab::test::can_render;
using convlab::test::Image;
using convlab::test::kLessonDir;
using convlab::test::lesson_file;
using convlab::test::load_png;
using convlab::test::Run;
using convlab::test::run_binary;
using convlab::test::TempDir;

namespace {

// A one-step lesson of the 1-D problem (line 7 is `extra`), its view `view`.
std::string lesson_text(const std::string& extra, const std::string& view = "stride",
                        const std::string& narration = "n") {
    return "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"" + view +
           "\"\nproblem = \"mb1ic1iw5oc1kw3pw1\"\nnarration = \"\"\"" + narration + "\"\"\"\n" +
           extra;
}

// Parse, validate and check against the view (as `convlab lesson check`): the error, or "".
std::string error_of(const std::string& text) {
    try {
        const lesson::Lesson l = lesson::parse_lesson(text, "bad.toml");
        lesson::validate(l);
        for (std::size_t k = 0; k < l.steps.size(); ++k)
            app::check_step_view(
                l, k, std::make_shared<const lesson::StepResult>(lesson::evaluate(l, k)));
    } catch (const lesson::LessonError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("reveal: 'hide' entries parse like highlights, bad ones are file:line:column errors") {
    // Fine: a whole tensor, an index prefix, an element.
    CHECK(error_of(lesson_text("hide = [\"diff_src\"]\n")) == "");
    CHECK(error_of(lesson_text("hide = [\"diff_src[0,0,2]\", \"diff_dst[0]\"]\n")) == "");
    const lesson::Lesson l =
        lesson::parse_lesson(lesson_text("hide = [\"diff_src[0,0,2]\"]\n"), "x.toml");
    REQUIRE(l.steps[0].hide.size() == 1);
    CHECK(l.steps[0].hide[0].tensor == "diff_src");
    CHECK(l.steps[0].hide[0].at == std::vector<dim_t>{0, 0, 2});
    struct Bad {
        std::string extra, where, fragment;
    };
    const Bad bad[] = {
        {"hide = \"diff_src\"\n", "bad.toml:7:8:", "'hide' must be a non-empty array"},
        {"hide = []\n", "bad.toml:7:8:", "non-empty"},
        {"hide = [3]\n", "bad.toml:7:9:", "a 'hide' entry must be a string"},
        {"hide = [\"diff_src[0,x]\"]\n", "bad.toml:7:9:", "index 'x' is not an integer"},
        {"hide = [\"diff_src[0\"]\n", "bad.toml:7:9:", "expected ']'"},
        {"hide = [\"[0]\"]\n", "bad.toml:7:9:", "no tensor name"},
        {"hide = [\"nope\"]\n", "bad.toml:7:9:", "nope"},
        {"hide = [\"diff_src[0,0,5]\"]\n", "bad.toml:7:9:", "diff_src"},
        // A tensor of the step that the step's view does not draw.
        {"hide = [\"col\"]\n",
         "bad.toml:7:9:", "'hide' entry 'col': the stride view does not draw"},
    };
    for (const Bad& b : bad) {
        const std::string e = error_of(lesson_text(b.extra));
        INFO(b.extra << " -> " << e);
        CHECK(e.rfind(b.where, 0) == 0);
        CHECK(e.find(b.fragment) != std::string::npos);
    }
    // A "[reveal]" line in the narration of a step that hides nothing.
    const std::string e = error_of(lesson_text("", "stride", "before\n[reveal]\nafter"));
    CHECK(e.rfind("bad.toml:6:", 0) == 0);
    CHECK(e.find("[reveal]") != std::string::npos);
}

TEST_CASE("reveal: the narration before and after the reveal") {
    const std::string n = "Predict dX[0].\n[reveal]\n  dX[0] = 2.\nSo it goes.";
    CHECK(lesson::narration_part(n, false) == "Predict dX[0].");
    CHECK(lesson::narration_part(n, true) == "Predict dX[0].\n  dX[0] = 2.\nSo it goes.");
    CHECK(lesson::narration_part("no marker", false) == "no marker");
    CHECK(lesson::narration_part("a [reveal] inside a line\nb", false) ==
          "a [reveal] inside a line\nb");
}

TEST_CASE("reveal: hidden cells have no value in the state until revealed (lesson 04 step 5)") {
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("04"), 4));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    REQUIRE(p.plan()->hidden.size() == 1);
    CHECK(p.plan()->hidden[0].text == "diff_src[0,0,5]");
    const app::ViewModel v = app::build_view(p.plan()->request);
    const int dx = app::panel_of_tensor(v, "diff_src", p.plan()->map);
    REQUIRE(dx >= 0);
    const auto dxu = static_cast<std::size_t>(dx);
    const auto cells = app::hidden_cells(v, *p.plan());
    // Row 5 of the 6x6 dX: elements 30..35.
    CHECK(cells[dxu] == std::vector<dim_t>{30, 31, 32, 33, 34, 35});
    app::StepState st = app::compute_step(v, p.plan()->granularity, p.plan()->open);
    // The step opens with row 5 written: [0, 1, 0, -1, 0, 0] (the narration's).
    CHECK(st.panels[dxu].shown[31] == 1.0f);
    const app::StepState revealed = st;
    app::hide_cells(st, cells);
    for (dim_t c = 0; c < 36; ++c) {
        const auto cu = static_cast<std::size_t>(c);
        const bool hid = c >= 30;
        CHECK(((st.panels[dxu].flags[cu] & app::kHidden) != 0) == hid);
        CHECK(std::isnan(st.panels[dxu].shown[cu]) == hid);
        if (!hid) CHECK(st.panels[dxu].shown[cu] == revealed.panels[dxu].shown[cu]);
    }
    // No other panel loses a value.
    for (std::size_t i = 0; i < st.panels.size(); ++i) {
        if (i == dxu) continue;
        for (float x : st.panels[i].shown) CHECK(!std::isnan(x));
    }
    // The hover: a hidden cell's formula, and that of a cell linked to one, would give it away.
    CHECK(app::formula_hidden(v, st, dx, 31));
    CHECK(!app::formula_hidden(v, st, dx, 7));
    CHECK(!app::formula_hidden(v, revealed, dx, 31));
    // The highlighted cells lie in the hidden row: a check on the row is hidden, one on row 1 not.
    const lesson::NamedTensor* t = p.result()->find("diff_src");
    REQUIRE(t != nullptr);
    CHECK(app::covers(p.plan()->hidden[0], "diff_src", {0, 0, 5}, t->value.dims()));
    CHECK(app::covers(p.plan()->hidden[0], "diff_src", {0, 0, 5, 1}, t->value.dims()));
    CHECK(app::covers(p.plan()->hidden[0], "diff_src", {}, t->value.dims()));
    CHECK(!app::covers(p.plan()->hidden[0], "diff_src", {0, 0, 1}, t->value.dims()));
    CHECK(!app::covers(p.plan()->hidden[0], "diff_dst", {}, t->value.dims()));
}

TEST_CASE("reveal: lessons 1, 4, 8, 14 and 17 each have a step to predict") {
    for (const char* n : {"01", "04", "08", "14", "17"}) {
        const lesson::Lesson l = lesson::load_lesson(lesson_file(n));
        std::size_t hiding = 0;
        for (std::size_t k = 0; k < l.steps.size(); ++k) {
            if (l.steps[k].hide.empty()) continue;
            ++hiding;
            // The answer comes after the reveal: the narration shown before it is shorter.
            CHECK(lesson::narration_part(l.steps[k].narration, false).size() <
                  lesson::narration_part(l.steps[k].narration, true).size());
            // Every hidden cell is drawn by the step's view (so it shows as "?").
            app::LessonPlayer p;
            REQUIRE(p.open(lesson_file(n), k));
            p.poll(true);
            REQUIRE_MESSAGE(p.plan() != nullptr, p.error());
            const app::ViewModel v = app::build_view(p.plan()->request);
            const auto cells = app::hidden_cells(v, *p.plan());
            std::size_t total = 0;
            for (const auto& c : cells) total += c.size();
            dim_t want = 0;
            for (const auto& h : p.plan()->hidden) want += h.end - h.begin;
            INFO("lesson " << n << " step " << k + 1);
            CHECK(total == static_cast<std::size_t>(want));
            CHECK(total > 0);
        }
        INFO("lesson " << n);
        CHECK(hiding >= 1);
    }
}

TEST_CASE("reveal: shots of a hidden and a revealed step differ, --reveal refused elsewhere" *
          doctest::skip(!can_render())) {
    TempDir t;
    const std::string hid = (t.path / "hidden.png").string();
    const std::string rev = (t.path / "revealed.png").string();
    Run r = run_binary("shot --lesson 04 --step 5 --size 1280x720 --out " + hid, t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    r = run_binary("shot --lesson 04 --step 5 --size 1280x720 --reveal --out " + rev, t.path);
    REQUIRE(r.status == 0);
    const Image a = load_png(hid), b = load_png(rev);
    REQUIRE(a.w == b.w);
    REQUIRE(a.h == b.h);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a.rgb.size(); ++i) differ += a.rgb[i] != b.rgb[i];
    CHECK(differ > 500);
    // A step that hides nothing: --reveal is a mistake, said in one line.
    r = run_binary("shot --lesson 04 --step 1 --reveal --out " + (t.path / "x.png").string(),
                   t.path);
    CHECK(r.status == 2);
    CHECK(r.err.find("--reveal") != std::string::npos);
    CHECK(!fs::exists(t.path / "x.png"));
    r = run_binary("shot --view stride --reveal --out " + (t.path / "y.png").string(), t.path);
    CHECK(r.status == 2);
    CHECK(r.err.find("--reveal goes with --lesson") != std::string::npos);
}

namespace {

// The number after a formula's last " = ".
double formula_result(const std::string& f) {
    const auto at = f.rfind(" = ");
    REQUIRE(at != std::string::npos);
    return std::stod(f.substr(at + 3));
}

int panel_named(const app::ViewModel& v, const std::string& name) {
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        if (v.panels[i].name == name) return static_cast<int>(i);
    FAIL("no panel " << name);
    return -1;
}

}  // namespace

TEST_CASE("network view: a kernel gradient cell lights the input and dY cells it was made of") {
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("17"), 4));  // the kernel gradients
    p.poll(true);
    REQUIRE_MESSAGE(p.plan() != nullptr, p.error());
    const app::ViewModel v = app::build_view(p.plan()->request);
    const int dw = panel_named(v, "conv.diff_wei"), x = panel_named(v, "input"),
              dy = panel_named(v, "diff_conv");
    // conv.diff_wei[k=0, c=0, 1, 1] (element 4 of 2x1x3x3) = sum over the 2x2 outputs (i, j) of
    // input[0, 0, i + 1, j + 1] * diff_conv[0, 0, i, j]: input cells 5, 6, 9, 10 of the 4x4
    // image, diff_conv cells 0..3 of its first channel.
    const auto cells = app::linked_cells(v, dw, 4);
    CHECK(cells[static_cast<std::size_t>(dw)] == std::vector<dim_t>{4});
    CHECK(cells[static_cast<std::size_t>(x)] == std::vector<dim_t>{5, 6, 9, 10});
    CHECK(cells[static_cast<std::size_t>(dy)] == std::vector<dim_t>{0, 1, 2, 3});
    // The second kernel's cell [1, 0, 2, 2] (element 9 + 8 = 17): its dY cells are channel 1's.
    const auto c2 = app::linked_cells(v, dw, 17);
    CHECK(c2[static_cast<std::size_t>(x)] == std::vector<dim_t>{10, 11, 14, 15});
    CHECK(c2[static_cast<std::size_t>(dy)] == std::vector<dim_t>{4, 5, 6, 7});
    // The formula gives the products and their sum, which is the cell's value (0.5, -0.5).
    for (dim_t c : {dim_t{4}, dim_t{8}, dim_t{13}, dim_t{17}, dim_t{0}}) {
        const std::string f = v.formula(v, dw, c);
        INFO(f);
        CHECK(f.find("conv.diff_wei(k=") == 0);
        CHECK(f.find("input") != std::string::npos);
        CHECK(formula_result(f) ==
              doctest::Approx(
                  v.panels[static_cast<std::size_t>(dw)].values[static_cast<std::size_t>(c)]));
    }
    CHECK(v.formula(v, dw, 4).find("1*0.5") != std::string::npos);
}

TEST_CASE("tensors view: convolution terms equal the engine's results, every cell") {
    // Groups, stride, padding, dilation, two images: every cell of dst, diff_src and diff_wei is
    // the sum of its terms' products, and a hover lights exactly the cells of those terms.
    for (const char* desc :
         {"g2mb2ic4ih5oc4kh3sh2ph1dh1", "mb1ic2iw7oc3kw3sw2pw2", "mb1ic1ih4oc2kh3"}) {
        app::ViewRequest r;
        r.view = "tensors";
        r.problem = parse_descriptor(desc);
        const app::ViewModel v = app::build_view(r);
        const int x = panel_named(v, "src"), w = panel_named(v, "wei"), y = panel_named(v, "dst"),
                  dx = panel_named(v, "diff_src"), dw = panel_named(v, "diff_wei"),
                  dy = panel_named(v, "diff_dst");
        const auto val = [&](int panel, dim_t c) {
            return static_cast<double>(
                v.panels[static_cast<std::size_t>(panel)].values[static_cast<std::size_t>(c)]);
        };
        const std::tuple<int, app::ConvResult, int, int> kinds[] = {
            {y, app::ConvResult::Dst, x, w},
            {dx, app::ConvResult::DiffSrc, dy, w},
            {dw, app::ConvResult::DiffWei, x, dy}};
        for (const auto& [res, kind, a, b] : kinds) {
            const dim_t n = v.panels[static_cast<std::size_t>(res)].numel();
            for (dim_t c = 0; c < n; ++c) {
                double sum = 0;
                for (const auto& [ia, ib] : app::conv_terms(r.problem, kind, c))
                    sum += val(a, ia) * val(b, ib);
                INFO(desc << " panel " << res << " cell " << c);
                CHECK(sum == doctest::Approx(val(res, c)).epsilon(1e-5));
                CHECK(formula_result(v.formula(v, res, c)) ==
                      doctest::Approx(val(res, c)).epsilon(1e-4));
            }
        }
    }
}

TEST_CASE("tensors view: the axes are named by what they index (k output channels)") {
    app::ViewRequest r;
    r.view = "tensors";
    r.problem = parse_descriptor("mb2ic3ih3oc2kh2");
    const app::ViewModel v = app::build_view(r);
    const auto names = [&](const std::string& p) {
        return v.panels[static_cast<std::size_t>(panel_named(v, p))].shape.names;
    };
    CHECK(names("src") == std::vector<std::string>{"n", "c", "h", "w"});
    CHECK(names("diff_src") == std::vector<std::string>{"n", "c", "h", "w"});
    CHECK(names("wei") == std::vector<std::string>{"k", "c", "kh", "kw"});
    CHECK(names("dst") == std::vector<std::string>{"n", "k", "h", "w"});
    CHECK(names("diff_dst") == std::vector<std::string>{"n", "k", "h", "w"});
    // The network: the convolution's output and what follows it count its output channels.
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("17"), 0));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    const app::ViewModel n = app::build_view(p.plan()->request);
    CHECK(n.panels[static_cast<std::size_t>(panel_named(n, "conv"))].shape.names[1] == "k");
    CHECK(n.panels[static_cast<std::size_t>(panel_named(n, "input"))].shape.names[1] == "c");
    // FlipRot's caption names the kernel size by its axes, not K (the output channels).
    r.view = "fliprot";
    const app::ViewModel f = app::build_view(r);
    CHECK(f.caption.find("kh x kw = 2 x 2") != std::string::npos);
    CHECK(f.caption.find("K-1") == std::string::npos);
}

TEST_CASE("lesson player: a lesson's name in the app comes from its number, else its file") {
    CHECK(app::lesson_label("lessons/17_worked_problem.toml") == "Lesson 17");
    CHECK(app::lesson_label("/x/01_backprop_1d.toml") == "Lesson 01");
    CHECK(app::lesson_label("quiz.toml") == "quiz");
    CHECK(app::lesson_label("/tmp/q.toml") == "q");
    CHECK(app::lesson_label("2024notes.toml") == "2024notes");
    CHECK(app::lesson_label("7.toml") == "Lesson 7");
}

TEST_CASE("lesson player: a lesson file edited on disk reloads on the step it was on") {
    TempDir t;
    const auto text = [](const std::string& narration, int steps) {
        std::string s = "title = \"t\"\naudience = \"a\"\n";
        for (int k = 0; k < steps; ++k)
            s += "[[step]]\nview = \"stride\"\nproblem = \"mb1ic1iw5oc1kw3pw1\"\nnarration = \"" +
                 narration + std::to_string(k) + "\"\n";
        return s;
    };
    const std::string f = t.write("quiz.toml", text("first ", 3));
    app::LessonPlayer p;
    REQUIRE(p.open(f, 1));
    p.poll(true);
    CHECK(!p.reload_if_changed());  // nothing changed
    // An edit (its time set apart from the first: file systems with coarse times).
    const auto bump = [&](const std::string& body) {
        const auto before = fs::last_write_time(f);
        t.write("quiz.toml", body);
        fs::last_write_time(f, before + std::chrono::seconds(2));
    };
    bump(text("second ", 3));
    CHECK(p.reload_if_changed());
    p.poll(true);
    CHECK(p.step() == 1);
    REQUIRE(p.lesson() != nullptr);
    CHECK(p.lesson()->steps[1].narration == "second 1");
    CHECK(!p.reload_if_changed());
    // A broken edit: the error, with its line; fixed, it opens on the same step again.
    bump("title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"im2kol\"\nnarration = \"n\"\n");
    CHECK(p.reload_if_changed());
    CHECK(p.lesson() == nullptr);
    CHECK(p.error().find("quiz.toml:4:") != std::string::npos);
    bump(text("third ", 3));
    CHECK(p.reload_if_changed());
    p.poll(true);
    CHECK(p.step() == 1);
    REQUIRE(p.lesson() != nullptr);
    CHECK(p.lesson()->steps[1].narration == "third 1");
    // Fewer steps now: the step is clamped to the last.
    bump(text("fourth ", 1));
    CHECK(p.reload_if_changed());
    CHECK(p.step() == 0);
}

TEST_CASE("reveal: a hidden small tensor keeps its values out of its panel title") {
    // diff_bias of a 1-channel problem on real-valued data: one value, which the title would
    // quote to three figures.
    const std::string text =
        "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"tensors\"\n"
        "problem = \"mb1ic1iw5oc1kw3pw1\"\nnarration = \"n\"\nshow = [\"diff_bias\"]\n"
        "hide = [\"diff_bias\"]\n[step.data]\nsrc = [0.5, 0.25, 0.125, 1, 2]\nbias = [0]\n"
        "diff_dst = [0.001, 0.002, 0.0, 0.0, 0.0]\n";
    const lesson::Lesson l = lesson::parse_lesson(text, "x.toml");
    auto r = std::make_shared<const lesson::StepResult>(lesson::evaluate(l, 0));
    app::StepPlan plan = app::plan_step(l, 0, r);
    const app::ViewModel hidden = app::build_view(plan.request);
    plan.request.hidden_tensors.clear();
    const app::ViewModel shown = app::build_view(plan.request);
    const auto title = [&](const app::ViewModel& v) {
        return v.panels[static_cast<std::size_t>(panel_named(v, "diff_bias"))].title;
    };
    CHECK(title(shown).find("= 0.003") != std::string::npos);
    CHECK(title(hidden).find("0.003") == std::string::npos);
}

TEST_CASE("reveal: a hidden cell not yet written stays blank, a written one is '?'") {
    // Lesson 01 step 3 opens on dX[0]: dX[1..4] are still pending there, all five hidden.
    app::LessonPlayer p;
    REQUIRE(p.open(lesson_file("01"), 2));
    p.poll(true);
    REQUIRE(p.plan() != nullptr);
    const app::ViewModel v = app::build_view(p.plan()->request);
    app::StepState st = app::compute_step(v, p.plan()->granularity, p.plan()->open);
    app::hide_cells(st, app::hidden_cells(v, *p.plan()));
    const auto dx = static_cast<std::size_t>(app::panel_of_tensor(v, "diff_src", p.plan()->map));
    CHECK(std::string(app::hidden_text(st.panels[dx].flags[0])) == "?");
    for (std::size_t c = 1; c < 5; ++c) {
        CHECK((st.panels[dx].flags[c] & app::kHidden) != 0);
        CHECK(std::string(app::hidden_text(st.panels[dx].flags[c])).empty());
    }
}
