// Index-map dumps (dump, dump_json) and execution through non-row-major layouts.
#include <doctest/doctest.h>

#include "map_reference.hpp"

using namespace maps_test;

// [SECTION] dumps

TEST_CASE("maps: dump() lists every pair in enumeration order") {
    for (const Problem& p : random_problems(1301, 9)) {
        for (const IndexMap& m : all_maps(p)) {
            INFO(describe(p) << " map " << m.name());
            const auto want = expected_pairs(m);
            const dim_t total = static_cast<dim_t>(want.size());
            const auto lines = lines_of(m.dump());
            REQUIRE(static_cast<dim_t>(lines.size()) == total + 1);
            CHECK(lines[0].rfind("# map " + m.name() + " (", 0) == 0);
            CHECK(lines[0].find(m.kind() == IndexMap::Kind::Gather ? "gather" : "reduce") !=
                  std::string::npos);
            dim_t bad = 0;
            std::string first_bad;
            for (dim_t i = 0; i < total; ++i) {
                const auto [s, d] = want[i];
                std::string expect;
                const std::string& got = lines[i + 1];
                bool ok;
                if (m.kind() == IndexMap::Kind::Gather) {
                    expect = "dst" + coord_text(m.dst(), d) + " <- " +
                             (s < 0 ? std::string("0") : "src" + coord_text(m.src(), s));
                    ok = got == expect;
                } else if (d >= 0) {
                    expect = "dst" + coord_text(m.dst(), d) + " += src" + coord_text(m.src(), s);
                    ok = got == expect;
                } else {
                    // A source that feeds nothing: named, without a destination.
                    expect = "src" + coord_text(m.src(), s);
                    ok = got.size() >= expect.size() &&
                         got.compare(got.size() - expect.size(), expect.size(), expect) == 0 &&
                         got.find("dst") == std::string::npos;
                }
                if (!ok && !bad++) first_bad = "line " + got + " / want " + expect;
            }
            INFO(first_bad);
            CHECK(bad == 0);

            // Truncated dumps: the same first lines, then a count of what was left out.
            for (dim_t limit : {dim_t{0}, dim_t{1}, dim_t{5}, total - 1, total, total + 3}) {
                if (limit < 0) continue;
                const auto cut = lines_of(m.dump(limit));
                const dim_t shown = std::min(limit, total);
                INFO("limit " << limit);
                REQUIRE(static_cast<dim_t>(cut.size()) == shown + 1 + (limit < total ? 1 : 0));
                CHECK(std::equal(cut.begin(), cut.begin() + shown + 1, lines.begin()));
                if (limit < total)
                    CHECK(cut.back() == "# ... " + std::to_string(total - limit) + " more");
            }
        }
    }
    // Axis names of 1-D and 3-D problems.
    const auto l1 = lines_of(maps::strided(make_problem(1, 1, 1, 1, 1, {5}, {2}, {2})).dump(1));
    CHECK(l1[1] == "dst(n=0,k=0,w=0) <- src(n=0,k=0,w=0)");
    const auto l3 = lines_of(
        maps::im2col(make_problem(3, 1, 1, 1, 1, {2, 2, 2}, {1, 1, 1}, {}, {1, 0, 0})).dump(1));
    CHECK(l3[1] == "dst(n=0,g=0,row=0,col=0) <- 0");
}

namespace {

// A small structural JSON check: strings closed, brackets and braces balanced and nested.
bool balanced_json(const std::string& s) {
    std::vector<char> stack;
    bool in_string = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[')
            stack.push_back(c);
        else if (c == '}' || c == ']') {
            if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) return false;
            stack.pop_back();
        }
    }
    return !in_string && stack.empty();
}

// The "pairs" array of dump_json as numbers.
std::vector<std::pair<dim_t, dim_t>> json_pairs(const std::string& s, bool& ok) {
    std::vector<std::pair<dim_t, dim_t>> out;
    ok = false;
    std::size_t i = s.find("\"pairs\":[");
    if (i == std::string::npos) return out;
    i += 9;
    while (i < s.size() && s[i] != ']') {
        if (s[i] == ',') ++i;
        long long a = 0, b = 0;
        int used = 0;
        if (std::sscanf(s.c_str() + i, "[%lld,%lld]%n", &a, &b, &used) != 2 || used == 0)
            return out;
        out.emplace_back(a, b);
        i += static_cast<std::size_t>(used);
    }
    ok = i < s.size();
    return out;
}

}  // namespace

TEST_CASE("maps: dump_json holds the shapes, pairs_total and the pairs") {
    for (const Problem& p : random_problems(1401, 9)) {
        for (const IndexMap& m : all_maps(p)) {
            INFO(describe(p) << " map " << m.name());
            const auto want = expected_pairs(m);
            const std::string j = m.dump_json();
            CHECK(balanced_json(j));
            CHECK(j.front() == '{');
            CHECK(j.find("\"name\":\"" + m.name() + "\"") != std::string::npos);
            CHECK(j.find(std::string("\"kind\":\"") +
                         (m.kind() == IndexMap::Kind::Gather ? "gather" : "reduce") + "\"") !=
                  std::string::npos);
            CHECK(j.find("\"pairs_total\":" + std::to_string(want.size()) + ",") !=
                  std::string::npos);
            std::string src_json = "\"src\":{\"dims\":[";
            for (int a = 0; a < m.src().rank(); ++a)
                src_json += (a ? "," : "") + std::to_string(m.src().dims[a]);
            src_json += "],\"names\":[";
            for (int a = 0; a < m.src().rank(); ++a)
                src_json += (a ? ",\"" : "\"") + m.src().names[a] + "\"";
            CHECK(j.find(src_json + "]}") != std::string::npos);
            bool ok = false;
            CHECK(json_pairs(j, ok) == want);
            CHECK(ok);
            const dim_t limit = std::min<dim_t>(7, static_cast<dim_t>(want.size()));
            const std::string jl = m.dump_json(limit);
            CHECK(balanced_json(jl));
            CHECK(jl.find("\"pairs_total\":" + std::to_string(want.size()) + ",") !=
                  std::string::npos);
            const auto cut = json_pairs(jl, ok);
            CHECK(ok);
            CHECK(cut == std::vector<std::pair<dim_t, dim_t>>(want.begin(), want.begin() + limit));
        }
    }
}

// [SECTION] execution through layouts

namespace {

// Runs m on tensors of the given layouts (source filled with 1, 2, 3 ... by logical index) and
// checks every logical destination value against the dense executor.
void check_layout_execute(const IndexMap& m, const Layout& src_layout, const Layout& dst_layout,
                          DType dst_dtype = DType::f32) {
    INFO("map " << m.name() << " src " << src_layout.str() << " dst " << dst_layout.str() << " "
                << std::string(convlab::dtype_name(dst_dtype)));
    const Buf src = iota(m.src().numel());
    const Buf dense = run(m, src);
    Tensor s(src_layout, DType::f32);
    for_each_coord(m.src().dims, [&](const Dims& c) { s.set(c, src[lin(m.src().dims, c)]); });
    Tensor d(dst_layout, dst_dtype);
    d.fill(99.0f);  // stale values must not survive (a reduce starts from zero)
    m.execute(s, d);
    dim_t bad = 0;
    for_each_coord(m.dst().dims,
                   [&](const Dims& c) { bad += d.get(c) != dense[lin(m.dst().dims, c)]; });
    CHECK(bad == 0);
    // Padding lanes of a blocked destination stay zero.
    std::vector<bool> reached(static_cast<std::size_t>(dst_layout.storage_size()), false);
    for_each_coord(m.dst().dims, [&](const Dims& c) {
        reached[static_cast<std::size_t>(dst_layout.offset(std::span<const dim_t>(c)))] = true;
    });
    dim_t dirty = 0;
    for (dim_t o = 0; o < dst_layout.storage_size(); ++o)
        if (!reached[static_cast<std::size_t>(o)]) dirty += d.get_offset(o) != 0.0f;
    CHECK(dirty == 0);
}

}  // namespace

TEST_CASE("maps: execute(Tensor, Tensor) through non-row-major layouts") {
    const Problem p2 = make_problem(2, 2, 3, 4, 1, {5, 4}, {3, 2}, {2, 1}, {1, 0}, {1, 1});
    const Problem p1 = make_problem(1, 2, 4, 2, 2, {7}, {3}, {2}, {1}, {0});
    const Problem p3 = make_problem(3, 1, 2, 2, 1, {3, 4, 3}, {2, 2, 1}, {1, 2, 1}, {1, 0, 0});
    for (const Problem& p : {p1, p2, p3}) {
        INFO(describe(p));
        const IndexMap im = maps::im2col(p);
        check_layout_execute(im, Layout::nxc(im.src().dims), Layout::row_major(im.dst().dims));
        check_layout_execute(im, Layout::ncx(im.src().dims),
                             Layout::permuted(im.dst().dims, {3, 2, 1, 0}, "reversed"));
        const IndexMap c2 = maps::col2im(p);
        check_layout_execute(c2, Layout::row_major(c2.src().dims), Layout::nxc(c2.dst().dims));
        const IndexMap pd = maps::pad_for_backward_data(p);
        check_layout_execute(pd, Layout::nxc(pd.src().dims), Layout::nxc(pd.dst().dims));
        check_layout_execute(pd, Layout::ncx(pd.src().dims), Layout::nxc(pd.dst().dims),
                             DType::f16);
        const IndexMap st = maps::strided(p);
        check_layout_execute(st, Layout::ncx(st.src().dims), Layout::nxc(st.dst().dims),
                             DType::bf16);
    }
    // Into blocked destinations: TNC of activations into NC1HWC0, FlipRot into FRACTAL_Z.
    const IndexMap t = maps::tnc_src(p2);
    const Dims td = t.dst().dims;
    for (dim_t c0 : {16, 8})
        check_layout_execute(t, Layout::nxc(t.src().dims),
                             Layout::blocked(td, {0, 1, 2, 3}, {{1, c0}}, "NC1HWC0"));
    const IndexMap f = maps::flip_rot(p2);
    check_layout_execute(
        f, Layout::row_major(f.src().dims),
        Layout::blocked(f.dst().dims, {1, 2, 3, 0}, {{0, 16}, {1, 8}}, "FRACTAL_Z"));
    // Shapes must match.
    const IndexMap im = maps::im2col(p2);
    Tensor good_src(im.src().dims), good_dst(im.dst().dims), wrong(Dims{1, 2, 3, 4});
    CHECK_THROWS_AS(im.execute(wrong, good_dst), Error);
    CHECK_THROWS_AS(im.execute(good_src, wrong), Error);
    CHECK_NOTHROW(im.execute(good_src, good_dst));
}
