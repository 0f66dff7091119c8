// The map registry (convlab/map_registry.hpp) and the view registry (app/lesson/views.hpp): every
// registered kernel equals its map's execution on every element, every map is an expression,
// every view of the registry has a builder, and every map animates in the generic map view.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "convlab/map_registry.hpp"
#include "lesson/lesson.hpp"
#include "lesson/views.hpp"
#include "model/model.hpp"
#include "test_util.hpp"

using namespace convlab;
using convlab::test::random_problem;

namespace {

// A problem the map takes (the fractal_z pair refuses the other's rank; winograd takes 2-D 3x3
// stride-1 problems only).
bool takes(const MapEntry& e, const Problem& p) {
    try {
        e.build(p, 8);
        return true;
    } catch (const Error&) {
        return false;
    }
}

}  // namespace

TEST_CASE("map registry: names are unique, entries complete, old lists are its views") {
    std::set<std::string> seen;
    for (const MapEntry& e : map_registry()) {
        INFO(e.name);
        CHECK(seen.insert(e.name).second);
        for (const auto& a : e.aliases) CHECK(seen.insert(a).second);
        CHECK((e.family == "nchw" || e.family == "davinci"));
        CHECK(!e.summary.empty());
        CHECK(static_cast<bool>(e.build));
        CHECK(find_map(e.name) == &e);
    }
    CHECK(find_map("ndc1hwc0") == find_map("nc1hwc0"));
    CHECK(find_map("no_such_map") == nullptr);
    CHECK_THROWS_WITH_AS(map_entry("im3col"),
                         doctest::Contains("map 'im3col': unknown; maps: im2col"), Error);
}

TEST_CASE("map registry: every map is an expression, and every kernel equals its map everywhere") {
    std::mt19937 rng(5904);
    int kernels = 0, problems = 0;
    for (int t = 0; t < 24; ++t) {
        Problem p = random_problem(rng, t % 3 == 0 ? 2 : 0);
        if (t % 6 == 0) {  // one winograd-shaped problem now and then
            p = parse_descriptor("mb1ic2ih8oc2kh3ph1");
        }
        const dim_t c0 = std::vector<dim_t>{1, 3, 4, 8, 16}[rng() % 5];
        INFO(to_descriptor(p) << " c0 " << c0);
        for (const MapEntry& e : map_registry()) {
            INFO(e.name);
            if (!takes(e, p)) continue;
            ++problems;
            const IndexMap m = e.build(p, c0);
            CHECK(m.expr() != nullptr);
            CHECK(!m.formula().empty());
            if (!e.kernel) continue;
            ++kernels;
            std::vector<float> src(static_cast<std::size_t>(m.src().numel()));
            for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 97 + 1);
            std::vector<float> want(static_cast<std::size_t>(m.dst().numel()));
            m.execute(src.data(), want.data());
            std::vector<float> got(want.size(), -7.0f);  // every element must be written
            e.kernel(p, c0, src.data(), got.data());
            CHECK(got == want);
        }
    }
    CHECK(kernels > 100);
    CHECK(problems > kernels);
}

TEST_CASE(
    "view registry: every view has a builder, and every map is a generic view that animates") {
    for (const lesson::ViewSpec& v : lesson::view_registry()) {
        INFO(v.name);
        CHECK(app::has_view_builder(v.name));
        CHECK(std::count(lesson::view_names().begin(), lesson::view_names().end(), v.name) == 1);
    }
    CHECK(!app::has_view_builder("map:no_such_map"));
    for (const MapEntry& e : map_registry()) {
        const std::string name = "map:" + e.name;
        INFO(name);
        const lesson::ViewSpec* v = lesson::find_view(name);
        REQUIRE(v != nullptr);
        CHECK(v->map == e.name);
        app::ViewRequest r;
        r.view = name;
        r.problem = parse_descriptor(e.name == "fractal_z_3d" ? "mb1ic3id3ih3iw3oc2kd2kh2kw2"
                                                              : "mb1ic2ih8oc2kh3ph1");
        r.c0 = 4;
        const app::ViewModel vm = app::build_view(r);
        REQUIRE(vm.panels.size() == 2);
        const IndexMap m = e.build(r.problem, r.c0);
        CHECK(vm.panels[1].shape == m.dst());
        // The destination panel holds the map's execution of the source panel.
        std::vector<float> want(static_cast<std::size_t>(m.dst().numel()));
        m.execute(vm.panels[0].values.data(), want.data());
        CHECK(vm.panels[1].values == want);
        CHECK(app::num_steps(vm, Granularity::Line) == m.num_steps(Granularity::Line));
        if (e.kernel) CHECK(vm.check.find(": yes") != std::string::npos);
        CHECK(vm.caption == m.formula());
        // Every cell's hover names it and its partner.
        const std::string f = vm.formula(vm, 1, m.dst().numel() - 1);
        CHECK(f.find(vm.panels[1].name + "(") == 0);
        CHECK((f.find(" <- ") != std::string::npos || f.find(" sum of ") != std::string::npos));
    }
}
