// NHWC, added through the map registry only: against independent index arithmetic, in
// `convlab map`, in a lesson step and in the app's generic map view.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "convlab/map_registry.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"
#include "model/model.hpp"
#include "test_files.hpp"
#include "test_util.hpp"

using namespace convlab;

TEST_CASE("nhwc: every element lands at ((n*H + h)*W + w)*C + c, for 1-D to 3-D problems") {
    std::mt19937 rng(5905);
    for (int t = 0; t < 30; ++t) {
        const Problem p = test::random_problem(rng);
        INFO(to_descriptor(p));
        const IndexMap m = build_map("nhwc", p);
        const dim_t C = p.ic, S = p.in_spatial();
        REQUIRE(m.dst().numel() == p.mb * C * S);
        std::vector<float> src(static_cast<std::size_t>(m.src().numel()));
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
        std::vector<float> dst(src.size(), -1.0f);
        m.execute(src.data(), dst.data());
        dim_t bad = 0;
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t c = 0; c < C; ++c)
                for (dim_t s = 0; s < S; ++s)  // s: the spatial position, row-major
                    bad += dst[static_cast<std::size_t>((n * S + s) * C + c)] !=
                           src[static_cast<std::size_t>((n * C + c) * S + s)];
        CHECK(bad == 0);
        CHECK(m.dst().names.back() == "c");
    }
    const IndexMap m = build_map("nhwc", parse_descriptor("mb1ic3ih4oc2kh3"));
    CHECK(m.formula() == "nhwc: dst(n, h, w, c) <- src(n, c, h, w)");
}

TEST_CASE("nhwc: convlab map, a lesson step and the generic map view") {
    const test::Run r = test::run_in_process(
        {"map", "--map", "nhwc", "--problem", "mb1ic2ih2oc1kh1", "--explain", "0,1,0,1"});
    CHECK(r.status == 0);
    CHECK(r.out.find("dst(n=0,h=1,w=0,c=1) <- src(n=0,c=1,h=1,w=0)") != std::string::npos);
    // A lesson names the map and its generic view; the map's source is the step's src.
    const std::string text =
        "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"map:nhwc\"\n"
        "problem = \"mb1ic2ih2iw2oc1kh1kw1\"\nmap = \"nhwc\"\nnarration = \"n\"\n"
        "highlights = [\"map.dst[0,1,0]\"]\n"
        "[step.data]\nsrc = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]\n"
        "[[step.check]]\ntensor = \"map.dst\"\nat = [0, 1, 0]\nequals = [3, 7]\n";
    const lesson::Lesson l = lesson::parse_lesson(text, "nhwc.toml");
    const lesson::StepResult s = lesson::evaluate(l, 0);
    REQUIRE(s.checks.size() == 1);
    CHECK(s.checks[0].passed);
    const app::StepView sv =
        app::check_step_view(l, 0, std::make_shared<const lesson::StepResult>(s));
    CHECK(sv.view == "map:nhwc");
    app::ViewRequest vr;
    vr.view = "map:nhwc";
    vr.problem = parse_descriptor("mb1ic2ih2iw2oc1kh1kw1");
    const app::ViewModel v = app::build_view(vr);
    REQUIRE(v.panels.size() == 2);
    CHECK(v.panels[1].name == "src_nhwc");
    CHECK(v.caption == "nhwc: dst(n, h, w, c) <- src(n, c, h, w)");
}
