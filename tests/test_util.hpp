// Shared test helpers: seeded random problems and data, and element-wise comparison that prints
// the problem and the first mismatching coordinate.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace convlab::test {

// Whether the engine runs on several threads (OpenMP): the portable build has one, so that
// set_num_threads(2) leaves it at 1 and the checks of the policies for two threads do not apply.
#if defined(_OPENMP)
inline constexpr bool kThreaded = true;
#else
inline constexpr bool kThreaded = false;
#endif

// Calls f(coord) for every coordinate of dims, in row-major order (none when a dim is <= 0).
template <class F>
void for_each_coord(const std::vector<dim_t>& dims, F&& f) {
    for (dim_t d : dims)
        if (d <= 0) return;
    std::vector<dim_t> c(dims.size(), 0);
    for (;;) {
        f(std::as_const(c));
        int a = static_cast<int>(dims.size()) - 1;
        for (; a >= 0; --a) {
            if (++c[a] < dims[a]) break;
            c[a] = 0;
        }
        if (a < 0) return;
    }
}

// A random valid problem: 1-D to 3-D, groups (incl. depthwise), dilation, asymmetric padding,
// strides with leftover r > 0, batch 1 and more. Sizes kept small so that direct loops are quick.
inline Problem random_problem(std::mt19937& rng, int ndims = 0) {
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    for (;;) {
        Problem p;
        p.ndims = ndims ? ndims : static_cast<int>(pick(1, 3));
        p.mb = pick(1, 3);
        const dim_t g = pick(0, 3) == 0 ? 1 : pick(1, 3);
        p.groups = g;
        p.ic = g * pick(1, 3);
        p.oc = g * pick(1, 3);
        if (pick(0, 5) == 0) {  // depthwise
            p.groups = p.ic;
            p.oc = p.ic * pick(1, 2);
        }
        const dim_t max_in = p.ndims == 3 ? 6 : p.ndims == 2 ? 9 : 14;
        for (int i = 0; i < p.ndims; ++i) {
            p.in[i] = pick(1, max_in);
            p.kernel[i] = pick(1, 4);
            p.stride[i] = pick(1, 3);
            p.dilation[i] = pick(0, 2) == 0 ? pick(2, 3) : 1;
            p.pad_begin[i] = pick(0, 2);
            p.pad_end[i] = pick(0, 2);
        }
        if (p.validate().empty()) return p;
    }
}

// Dense integer-valued data in [-lo, hi]: sums of products stay exact in fp32, so fast paths must
// match the reference bit for bit. Zero is avoided half of the time so that data is dense.
inline Tensor integer_tensor(std::vector<dim_t> dims, std::mt19937& rng, int range = 3) {
    Tensor t(std::move(dims));
    std::uniform_int_distribution<int> d(-range, range);
    float* p = t.f32();
    for (dim_t i = 0; i < t.numel(); ++i) {
        int v = d(rng);
        if (v == 0 && (rng() & 1)) v = 1;
        p[i] = static_cast<float>(v);
    }
    return t;
}

inline Tensor real_tensor(std::vector<dim_t> dims, std::mt19937& rng) {
    Tensor t(std::move(dims));
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    float* p = t.f32();
    for (dim_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
    return t;
}

// Exact equality of every element; reports the first mismatch with its context.
inline void check_equal(const Tensor& got, const Tensor& want, const std::string& what) {
    REQUIRE_MESSAGE(got.dims() == want.dims(), what);
    const float* g = got.f32();
    const float* w = want.f32();
    dim_t bad = -1, count = 0;
    for (dim_t i = 0; i < got.numel(); ++i)
        if (!(g[i] == w[i])) {
            if (bad < 0) bad = i;
            ++count;
        }
    INFO(what);
    if (bad >= 0) {
        std::vector<dim_t> c(static_cast<std::size_t>(got.rank()));
        got.coord_of(bad, c);
        INFO("first mismatch at " << dims_str(c) << ": got " << g[bad] << ", want " << w[bad]
                                  << " (" << count << " of " << got.numel() << " differ)");
        CHECK(bad < 0);
    } else {
        CHECK(bad < 0);
    }
}

// |got - want| <= atol + rtol * |want| on every element.
inline void check_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                        const std::string& what) {
    REQUIRE_MESSAGE(got.dims() == want.dims(), what);
    const float* g = got.f32();
    const float* w = want.f32();
    dim_t bad = -1;
    for (dim_t i = 0; i < got.numel() && bad < 0; ++i)
        if (!(std::abs(double(g[i]) - double(w[i])) <= atol + rtol * std::abs(double(w[i]))))
            bad = i;
    INFO(what);
    if (bad >= 0) INFO("element " << bad << ": got " << g[bad] << ", want " << w[bad]);
    CHECK(bad < 0);
}

// Fraction of non-zero elements (a comparison of mostly-zero tensors proves little).
inline double density(const Tensor& t) {
    if (t.numel() == 0) return 0;
    dim_t nz = 0;
    for (dim_t i = 0; i < t.numel(); ++i) nz += t.f32()[i] != 0.0f;
    return double(nz) / double(t.numel());
}

}  // namespace convlab::test
