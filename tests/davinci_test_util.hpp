// Shared by the DaVinci tests (tests/maps/test_davinci_maps.cpp, tests/conv/test_davinci_conv.cpp):
// layout checks, random integer buffers, padding lanes dirtied and counted, buffer comparison.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "convlab/davinci.hpp"
#include "convlab/index_map.hpp"
#include "convlab/layout.hpp"
#include "convlab/maps.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Error;
using convlab::Layout;
using convlab::Shape;
using convlab::Tensor;
namespace dv = convlab::davinci;

using convlab::test::for_each_coord;

namespace davinci_test {

using Dims = std::vector<dim_t>;

inline dim_t cdiv(dim_t a, dim_t b) {
    return (a + b - 1) / b;
}

inline dim_t prod(const Dims& v) {
    dim_t p = 1;
    for (dim_t x : v) p *= x;
    return p;
}

inline std::string text(const Dims& v) {
    std::string s = "(";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + ")";
}

// Checks a blocked layout exhaustively:
//  - offset(c) == formula(c) for every logical coordinate c;
//  - storage_size() == numel of the physical shape, and the offsets are distinct;
//  - the storage positions no coordinate reaches are exactly those the physical predicate calls
//    padding (valid(physical coord) == false);
//  - a Tensor of the layout, written at every logical coordinate, holds zero in every padding
//    lane.
// Returns the number of padding lanes.
inline dim_t check_layout(const Layout& l, const Shape& phys,
                          const std::function<dim_t(const Dims&)>& formula,
                          const std::function<bool(const Dims&)>& valid) {
    INFO(l.str());
    REQUIRE(l.storage_size() == phys.numel());
    std::vector<char> hit(static_cast<std::size_t>(l.storage_size()), 0);
    dim_t bad = 0, dup = 0;
    Tensor t(l, DType::f32);
    dim_t v = 0;
    for_each_coord(l.dims(), [&](const Dims& c) {
        const dim_t off = l.offset(c);
        if (off != formula(c) || off < 0 || off >= l.storage_size()) {
            if (!bad) INFO("first bad offset at " << text(c));
            ++bad;
            return;
        }
        dup += hit[off];
        hit[off] = 1;
        t.set(c, static_cast<float>(++v));
    });
    CHECK(bad == 0);
    CHECK(dup == 0);
    dim_t pad = 0, mismatch = 0, nonzero = 0;
    dim_t off = 0;
    for_each_coord(phys.dims, [&](const Dims& pc) {
        const bool is_valid = valid(pc);
        if (is_valid != (hit[off] != 0)) ++mismatch;
        if (!is_valid) {
            ++pad;
            if (t.get_offset(off) != 0.0f) ++nonzero;
        }
        ++off;
    });
    CHECK(mismatch == 0);
    CHECK(nonzero == 0);
    CHECK(pad == l.storage_size() - l.numel());
    return pad;
}

inline const dim_t kC0s[] = {16, 8, 4, 1, 32};

using Buf = std::vector<float>;
using convlab::IndexMap;
using convlab::Problem;
namespace maps = convlab::maps;

// Dense integer data in [-3, 3], never 0 (so that a wrong zero is visible).
inline Buf random_buf(dim_t n, std::mt19937& rng) {
    Buf b(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(1, 3);
    for (auto& v : b) v = static_cast<float>(rng() & 1 ? d(rng) : -d(rng));
    return b;
}

inline Buf run(const IndexMap& m, const Buf& src) {
    REQUIRE(static_cast<dim_t>(src.size()) == m.src().numel());
    Buf dst(static_cast<std::size_t>(m.dst().numel()), -7.0f);
    m.execute(src.data(), dst.data());
    return dst;
}

// Storage positions of a layout that no logical coordinate reaches.
inline std::vector<char> padding_mask(const Layout& l) {
    std::vector<char> pad(static_cast<std::size_t>(l.storage_size()), 1);
    for_each_coord(l.dims(), [&](const Dims& c) { pad[l.offset(c)] = 0; });
    return pad;
}

// Writes `v` into every padding lane (a source whose padding lanes are garbage).
inline void dirty_padding(Buf& b, const Layout& l, float v = 1000.0f) {
    const auto pad = padding_mask(l);
    for (std::size_t i = 0; i < b.size(); ++i)
        if (pad[i]) b[i] = v;
}

inline dim_t nonzero_padding(const Buf& b, const Layout& l) {
    const auto pad = padding_mask(l);
    dim_t n = 0;
    for (std::size_t i = 0; i < b.size(); ++i) n += pad[i] && b[i] != 0.0f;
    return n;
}

// Same shapes and the same image of every domain element.
inline void check_same_map(const IndexMap& a, const IndexMap& b) {
    INFO(a.name() << " vs " << b.name());
    REQUIRE(a.src().dims == b.src().dims);
    REQUIRE(a.dst().dims == b.dst().dims);
    REQUIRE(a.kind() == b.kind());
    dim_t bad = 0, first = -1;
    for (dim_t i = 0; i < a.domain().numel(); ++i)
        if (a.map(i) != b.map(i)) {
            if (first < 0) first = i;
            ++bad;
        }
    INFO("first difference at domain element " << first);
    CHECK(bad == 0);
}

inline void check_equal_bufs(const Buf& got, const Buf& want, const std::string& what) {
    INFO(what);
    REQUIRE(got.size() == want.size());
    dim_t bad = 0, first = -1;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i])) {
            if (first < 0) first = static_cast<dim_t>(i);
            ++bad;
        }
    INFO("first mismatch at " << first << " (" << bad << " differ)");
    CHECK(bad == 0);
}

// Random activation-like dims (N, C, spatial...) of rank 3..5.
inline Dims random_dims(std::mt19937& rng, dim_t max_n = 20) {
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    Dims d{pick(1, max_n), pick(1, 20)};
    const dim_t ns = pick(1, 3);
    for (dim_t i = 0; i < ns; ++i) d.push_back(pick(1, ns == 3 ? 3 : 4));
    return d;
}

inline dim_t random_c0(std::mt19937& rng) {
    const dim_t c0s[] = {16, 8, 16, 4, 1, 32};
    return c0s[rng() % 6];
}

inline Dims swap01(Dims d) {
    std::swap(d[0], d[1]);
    return d;
}

}  // namespace davinci_test
