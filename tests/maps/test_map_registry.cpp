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

TEST_CASE(
    "map registry: enumerating a map a line at a time equals its expression element by "
    "element") {
    // images, execute and for_each_in_step evaluate once per line what does not vary along it
    // (MapExpr::line_images): on every element of every map they give what the expression's
    // interpreter gives for that element alone, over whole lines and ranges cut inside them.
    std::mt19937 rng(5911);
    int maps = 0;
    for (int t = 0; t < 12; ++t) {
        const Problem p = t % 4 == 0 ? parse_descriptor("mb2ic3ih7oc5kh3sh2ph1")
                                     : random_problem(rng, t % 3 == 0 ? 2 : 0);
        const dim_t c0 = std::vector<dim_t>{1, 3, 4, 8, 16}[rng() % 5];
        INFO(to_descriptor(p) << " c0 " << c0);
        for (const MapEntry& e : map_registry()) {
            INFO(e.name);
            if (!takes(e, p)) continue;
            ++maps;
            const IndexMap m = e.build(p, c0);
            REQUIRE(m.expr() != nullptr);
            const Shape& dom = m.domain();
            const dim_t n = dom.numel();
            std::vector<dim_t> want(static_cast<std::size_t>(n)), c(dom.dims.size());
            for (dim_t i = 0; i < n; ++i) {
                dom.coord_of(i, c);
                want[static_cast<std::size_t>(i)] = m.expr()->linear(c.data(), m.codomain().dims);
            }
            std::vector<dim_t> got(static_cast<std::size_t>(n), -7);
            m.images(0, n, got.data());
            CHECK(got == want);
            for (int r = 0; r < 4; ++r) {  // ranges that start and end inside lines
                const dim_t b = static_cast<dim_t>(rng() % static_cast<std::uint64_t>(n));
                const dim_t len = 1 + static_cast<dim_t>(rng() % static_cast<std::uint64_t>(n - b));
                std::vector<dim_t> part(static_cast<std::size_t>(len), -7);
                m.images(b, b + len, part.data());
                CHECK(std::equal(part.begin(), part.end(), want.begin() + b));
            }
            // The walk: every domain element once, with its image, in the order the element
            // steps take them.
            std::vector<std::pair<dim_t, dim_t>> walk;
            m.for_each_in_step(Granularity::Whole, 0,
                               [&](dim_t si, dim_t di) { walk.emplace_back(si, di); });
            REQUIRE(static_cast<dim_t>(walk.size()) == n);
            const bool gather = m.kind() == IndexMap::Kind::Gather;
            std::vector<int> seen(static_cast<std::size_t>(n), 0);
            bool images_ok = true;
            for (const auto& [si, di] : walk) {
                const dim_t d = gather ? di : si, img = gather ? si : di;
                ++seen[static_cast<std::size_t>(d)];
                images_ok = images_ok && want[static_cast<std::size_t>(d)] == img;
            }
            CHECK(images_ok);
            CHECK(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
            for (int r = 0; r < 8; ++r) {
                const dim_t s = static_cast<dim_t>(rng() % static_cast<std::uint64_t>(n));
                std::vector<std::pair<dim_t, dim_t>> one;
                m.for_each_in_step(Granularity::Element, s,
                                   [&](dim_t si, dim_t di) { one.emplace_back(si, di); });
                REQUIRE(one.size() == 1);
                CHECK(one[0] == walk[static_cast<std::size_t>(s)]);
            }
            std::vector<std::pair<dim_t, dim_t>> lines;
            for (dim_t s = 0; s < m.num_steps(Granularity::Line); ++s)
                m.for_each_in_step(Granularity::Line, s,
                                   [&](dim_t si, dim_t di) { lines.emplace_back(si, di); });
            CHECK(lines == walk);
            // The execution reads and writes where the images say.
            std::vector<float> src(static_cast<std::size_t>(m.src().numel()));
            for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 89 + 1);
            std::vector<float> ref(static_cast<std::size_t>(m.dst().numel()), 0.0f);
            for (dim_t i = 0; i < n; ++i) {
                const dim_t j = want[static_cast<std::size_t>(i)];
                if (gather)
                    ref[static_cast<std::size_t>(i)] =
                        j < 0 ? 0.0f : src[static_cast<std::size_t>(j)];
                else if (j >= 0)
                    ref[static_cast<std::size_t>(j)] += src[static_cast<std::size_t>(i)];
            }
            std::vector<float> out(ref.size(), -7.0f);
            m.execute(src.data(), out.data());
            CHECK(out == ref);
        }
    }
    CHECK(maps > 100);
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
