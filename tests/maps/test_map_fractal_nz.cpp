// FRACTAL_NZ, added through the map registry only: against the FRACTAL_NZ layout's offsets and
// independent index arithmetic, in `convlab map`, in a lesson step and in the generic map view.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "convlab/davinci.hpp"
#include "convlab/map_registry.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"
#include "model/model.hpp"
#include "test_files.hpp"
#include "test_util.hpp"

using namespace convlab;

TEST_CASE("fractal_nz: the weight matrix lands at the FRACTAL_NZ offsets, padding zero") {
    std::mt19937 rng(5906);
    for (int t = 0; t < 30; ++t) {
        const Problem p = test::random_problem(rng);
        const dim_t c0 = std::vector<dim_t>{1, 3, 4, 8, 16}[rng() % 5];
        INFO(to_descriptor(p) << " c0 " << c0);
        const IndexMap m = build_map("fractal_nz", p, c0);
        const dim_t M = p.oc, K = p.icg() * p.kernel_spatial();
        const dim_t M1 = (M + 15) / 16, K1 = (K + c0 - 1) / c0;
        REQUIRE(m.dst().dims == std::vector<dim_t>{K1, M1, 16, c0});
        std::vector<float> src(static_cast<std::size_t>(M * K));
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i + 1);
        std::vector<float> dst(static_cast<std::size_t>(m.dst().numel()), -1.0f);
        m.execute(src.data(), dst.data());
        // Every matrix element at (((k/C0)*M1 + m/16)*16 + m%16)*C0 + k%C0, as the layout says.
        const Layout l = davinci::fractal_nz(M, K, c0);
        std::vector<float> want(dst.size(), 0.0f);
        dim_t bad = 0;
        for (dim_t r = 0; r < M; ++r)
            for (dim_t k = 0; k < K; ++k) {
                const dim_t off = (((k / c0) * M1 + r / 16) * 16 + r % 16) * c0 + k % c0;
                const std::vector<dim_t> rk{r, k};
                bad += l.offset(rk) != off;
                want[static_cast<std::size_t>(off)] = src[static_cast<std::size_t>(r * K + k)];
            }
        CHECK(bad == 0);
        CHECK(dst == want);
    }
    const IndexMap m = build_map("fractal_nz", parse_descriptor("mb1ic3ih4oc20kh3"), 8);
    CHECK(m.formula() ==
          "fractal_nz: dst(k1, m1, m0, c0) <- src(m, k)   zero unless m < M, k < K   where m = "
          "m1*M0 + m0, k = k1*C0 + c0");
}

TEST_CASE("fractal_nz: convlab map, a lesson step and the generic map view") {
    // 20 x 27 weights, C0 8: element (m 17, k 26) is fractal (k1 3, m1 1) at (m0 1, c0 2).
    const test::Run r =
        test::run_in_process({"map", "--map", "fractal_nz", "--problem", "mb1ic3ih4oc20kh3", "--c0",
                              "8", "--explain", "3,1,1,2"});
    CHECK(r.status == 0);
    CHECK(r.out.find("m = m1*M0 + m0 = 1*16 + 1 = 17") != std::string::npos);
    CHECK(r.out.find("k = k1*C0 + c0 = 3*8 + 2 = 26") != std::string::npos);
    CHECK(r.out.find("dst(k1=3,m1=1,m0=1,c0=2) <- src(m=17,k=26)") != std::string::npos);
    // A lesson names the map and its generic view; the map's source is the step's weights.
    const std::string text =
        "title = \"t\"\naudience = \"a\"\n[[step]]\nview = \"map:fractal_nz\"\n"
        "problem = \"mb1ic1ih3oc2kh2\"\nmap = \"fractal_nz\"\nc0 = 2\nnarration = \"n\"\n"
        "highlights = [\"map.dst[1]\"]\n"
        "[step.data]\nwei = [[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]\n"
        "[[step.check]]\ntensor = \"map.dst\"\nat = [1, 0, 1]\nequals = [7, 8]\n";
    const lesson::Lesson l = lesson::parse_lesson(text, "nz.toml");
    const lesson::StepResult s = lesson::evaluate(l, 0);
    REQUIRE(s.checks.size() == 1);
    CHECK(s.checks[0].passed);
    const app::StepView sv =
        app::check_step_view(l, 0, std::make_shared<const lesson::StepResult>(s));
    CHECK(sv.view == "map:fractal_nz");
    app::ViewRequest vr;
    vr.view = "map:fractal_nz";
    vr.problem = parse_descriptor("mb1ic3ih4oc20kh3");
    vr.c0 = 8;
    const app::ViewModel v = app::build_view(vr);
    REQUIRE(v.panels.size() == 2);
    CHECK(v.panels[0].name == "wei");
    CHECK(v.panels[1].name == "wei_fractal_nz");
    CHECK(app::num_steps(v, Granularity::Tile) > 1);
}
