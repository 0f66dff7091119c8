// Helpers of the fast-path tests (tests/gemm, tests/conv): integer data, so that ConvLab's
// blocked GEMM (every microkernel this CPU runs) and the GEMM-based algorithms (im2col_gemm,
// col2im, via_forward, implicit_gemm) must match a naive product or `direct` exactly, on
// problems large enough to fill register tiles, cross the cache blocks and split over threads.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "../engine/src/conv/algorithms.hpp"
#include "../engine/src/gemm/microkernel.hpp"
#include "convlab/bench.hpp"
#include "convlab/conv.hpp"
#include "convlab/maps.hpp"
#include "test_util.hpp"

using namespace convlab;
using convlab::test::check_equal;
using convlab::test::density;
using convlab::test::integer_tensor;

namespace {

// A test's switch of a Tuning rule by number, as the tests loop over them: 0 Auto, 1 Always,
// 2 Never.
inline Rule rule(int mode) {
    return mode == 1 ? Rule::Always : mode == 2 ? Rule::Never : Rule::Auto;
}

// Restores the best microkernel when a test case ends (the rules of the algorithms and of the
// blocked GEMM are each call's Tuning).
struct RestoreCore {
    ~RestoreCore() {
        int n = 0;
        detail::select_microkernel(detail::microkernels(n)[0].isa);
    }
};

// What implicit_gemm's specialised paths need of the selected microkernel, read at run time
// (the AVX-512 microkernel has all of them; AVX2's and the portable one none): where a test
// asserts that such a path ran, it does so where the kernels are there, and elsewhere asserts
// what runs instead (the results are checked against direct either way).
// The shifted tiles (a forward from the stride-phase planes or the input in place, the stride-1
// backward data through FlipRot): shifted_possible.
inline bool shifted_kernels() {
    return detail::microkernel().shifted_row_fn[1] != nullptr;
}
// The weight gradient's tiles from the planes too: use_shifted_wgrad.
inline bool shifted_wgrad_kernels() {
    return shifted_kernels() && detail::microkernel().row_runs_fn[0][12] != nullptr;
}
// Tiles that implicit_gemm's default rules take in fewer places (narrow_tiles: AVX2's, passes
// of at most 6 positions x 16 channels).
inline bool narrow_tiles() {
    return shifted_kernels() && !detail::avx512_selected();
}
// The 1x1 (pointwise) tiles, forward and backward data: pointwise_possible.
inline bool pointwise_kernels() {
    return detail::microkernel().shifted_row_fn[1] != nullptr;
}
// A 1x1 strided by 2 along w read in place by the forward's tiles: strided_rows_apply.
inline bool strided_rows_kernels() {
    return detail::microkernel().shifted_row_s2_fn[1] != nullptr;
}
// The same by the weight gradient's tiles: strided_wgrad_applies.
inline bool strided_wgrad_kernels() {
    return detail::microkernel().row_runs_fn[1][1] != nullptr;
}
// The shifted edge tiles (and with them the input read in place): edge_tiles_apply.
inline bool edge_kernels() {
    return detail::microkernel().shifted_edge_fn[2][1] != nullptr;
}
// Output rows of p (16 V positions) in the lanes: row_lanes_apply's row_lanes_fn[V].
inline bool row_lanes_kernel(const Problem& p) {
    const dim_t w = p.out(p.ndims - 1), v = w / 16;
    return w % 16 == 0 && v >= 1 && v <= detail::kRowLanesMax &&
           detail::microkernel().row_lanes_fn[v] != nullptr;
}

inline std::vector<float> integers(std::size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> d(-3, 3);
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(d(rng));
    return v;
}

// A random problem with enough channels and pixels to exercise full and partial tiles.
inline Problem larger_problem(std::mt19937& rng, int ndims) {
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    for (;;) {
        Problem p;
        p.ndims = ndims;
        p.mb = pick(1, 3);
        p.groups = pick(0, 2) == 0 ? pick(2, 3) : 1;
        p.ic = p.groups * pick(1, 20);
        p.oc = p.groups * pick(1, 30);
        if (pick(0, 6) == 0) {  // depthwise
            p.groups = p.ic;
            p.oc = p.ic;
        }
        const dim_t max_in = ndims == 3 ? 9 : ndims == 2 ? 23 : 90;
        for (int i = 0; i < ndims; ++i) {
            p.in[i] = pick(3, max_in);
            p.kernel[i] = pick(1, ndims == 1 ? 7 : 4);
            p.stride[i] = pick(1, 3);
            p.dilation[i] = pick(0, 2) == 0 ? 2 : 1;
            p.pad_begin[i] = pick(0, 3);
            p.pad_end[i] = pick(0, 3);
        }
        if (p.validate().empty()) return p;
    }
}

inline bool is_fast_algo(std::string_view name) {
    return name == "im2col_gemm" || name == "col2im" || name == "via_forward" ||
           name == "implicit_gemm" || name == "auto";
}

// Every fast algorithm of every pass under tn equals direct on p, bit for bit (integer data);
// auto without winograd (which it takes from 16 tiles with AVX2's microkernel, and whose
// transforms round: its choice is tested in test_winograd.cpp).
inline int check_problem(const Problem& p, std::mt19937& rng, const std::string& tag, Tuning tn) {
    tn.winograd = Rule::Never;
    const Tensor src = integer_tensor(p.src_dims(), rng), wei = integer_tensor(p.wei_dims(), rng);
    const Tensor bias = integer_tensor({p.oc}, rng), dy = integer_tensor(p.dst_dims(), rng);
    const std::string what = to_descriptor(p) + " " + tag + " ";
    int compared = 0;
    const Tensor y = forward(p, src, wei, &bias, "direct");
    const Tensor dx = backward_data(p, dy, wei, "direct");
    const Tensor dw = backward_weight(p, src, dy, "direct");
    for (const Algorithm* a : algorithms(Pass::Forward))
        if (is_fast_algo(a->name)) {
            check_equal(forward(p, src, wei, &bias, a->name, nullptr, nullptr, tn), y,
                        what + "fwd " + a->name);
            ++compared;
        }
    for (const Algorithm* a : algorithms(Pass::BackwardData))
        if (is_fast_algo(a->name)) {
            check_equal(backward_data(p, dy, wei, a->name, nullptr, nullptr, tn), dx,
                        what + "bwd_data " + a->name);
            ++compared;
        }
    for (const Algorithm* a : algorithms(Pass::BackwardWeight))
        if (is_fast_algo(a->name)) {
            check_equal(backward_weight(p, src, dy, a->name, nullptr, tn), dw,
                        what + "bwd_weight " + a->name);
            ++compared;
        }
    return compared;
}
inline int check_problem(const Problem& p, std::mt19937& rng, const std::string& tag) {
    return check_problem(p, rng, tag, Tuning{});
}

// c (m x n) = A * B (+ c when acc) by naive loops in double, A (m x k) and B (k x n) stored
// transposed when ta, tb.
inline std::vector<float> naive_product(dim_t m, dim_t n, dim_t k, const std::vector<float>& a,
                                        const std::vector<float>& b, bool ta, bool tb, bool acc,
                                        std::vector<float> c) {
    for (dim_t i = 0; i < m; ++i)
        for (dim_t j = 0; j < n; ++j) {
            double sum = acc ? c[i * n + j] : 0.0;
            for (dim_t q = 0; q < k; ++q)
                sum +=
                    double(a[ta ? q * m + i : i * k + q]) * double(b[tb ? j * k + q : q * n + j]);
            c[i * n + j] = static_cast<float>(sum);
        }
    return c;
}

// C = A * B (+ C when acc) from the blocked GEMM under tn equals a naive product on every
// element, A (m x k) and B (k x n) stored transposed when ta, tb.
inline void check_gemm(dim_t m, dim_t n, dim_t k, bool ta, bool tb, bool acc, std::mt19937& rng,
                       const Tuning& tn = {}) {
    const auto a = integers(static_cast<std::size_t>(m * k), rng);
    const auto b = integers(static_cast<std::size_t>(k * n), rng);
    auto c = integers(static_cast<std::size_t>(m * n), rng);
    const std::vector<float> want = naive_product(m, n, k, a, b, ta, tb, acc, c);
    const detail::StridedA sa{a.data(), ta ? 1 : k, ta ? m : 1};
    const detail::StridedB sb{b.data(), tb ? 1 : n, tb ? k : 1};
    detail::sgemm(tn, m, n, k, sa, sb, c.data(), n, acc);
    dim_t bad = 0;
    for (std::size_t i = 0; i < c.size(); ++i) bad += c[i] != want[i];
    INFO("m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb << " acc " << acc);
    CHECK(bad == 0);
}

// Elements of C = A * B (+ C when acc) by detail::gemm under tn, A and B row-major random
// integers, that differ from the naive product; C 64-byte aligned (one float off with misalign),
// written by non-temporal stores where the tiles allow when stream.
inline dim_t gemm_mismatches(dim_t m, dim_t n, dim_t k, bool acc, bool stream, bool misalign,
                             std::mt19937& rng, const Tuning& tn = {}) {
    const auto a = integers(static_cast<std::size_t>(m * k), rng);
    const auto b = integers(static_cast<std::size_t>(k * n), rng);
    std::vector<float> buf(static_cast<std::size_t>(m * n + 32));
    const auto at = reinterpret_cast<std::uintptr_t>(buf.data());
    float* c = buf.data() + (64 - at % 64) % 64 / 4 + (misalign ? 1 : 0);
    const auto init = integers(static_cast<std::size_t>(m * n), rng);
    std::copy(init.begin(), init.end(), c);
    detail::gemm(tn, m, n, k, detail::StridedA{a.data(), k, 1}, detail::StridedB{b.data(), n, 1}, c,
                 n, acc, 0, stream);
    const auto want = naive_product(m, n, k, a, b, false, false, acc, init);
    dim_t bad = 0;
    for (dim_t e = 0; e < m * n; ++e) bad += c[e] != want[static_cast<std::size_t>(e)];
    return bad;
}

// Whether implicit_gemm's forward of d under tn packed W^T ("pack_wei"), its result equal to
// direct's.
inline bool forward_packed_wei(const char* d, std::mt19937& rng, const Tuning& tn) {
    const Problem p = parse_descriptor(d);
    const Tensor src = integer_tensor(p.src_dims(), rng), wei = integer_tensor(p.wei_dims(), rng);
    Profiler prof;
    check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &prof, nullptr, tn),
                forward(p, src, wei, nullptr, "direct"), d);
    return prof.seconds("pack_wei") > 0.0;
}

// Random unpadded 1x1 problem number t (1-D to 3-D by t, groups of 2 for every fourth, strides
// up to 3 for every third) of mb images, lengths up to len1 (1-D) or len (2-D, 3-D).
inline Problem random_1x1(std::mt19937& rng, int t, dim_t mb, dim_t len1, dim_t len) {
    const auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    Problem p;
    p.ndims = 1 + t % 3;
    p.mb = mb;
    p.groups = t % 4 == 3 ? 2 : 1;
    p.ic = p.groups * pick(1, 40);
    p.oc = p.groups * pick(1, 70);
    for (int i = 0; i < p.ndims; ++i) {
        p.in[i] = pick(1, p.ndims == 1 ? len1 : len);
        p.kernel[i] = 1;
        p.stride[i] = t % 3 == 0 ? pick(1, 3) : 1;
    }
    REQUIRE(p.validate().empty());
    return p;
}

// Twelve of them (t = 0 .. 11: 1-D to 3-D, every third strided, every fourth with groups), of
// mb_lo to mb_hi images each.
inline std::vector<Problem> random_1x1s(std::mt19937& rng, dim_t mb_lo, dim_t mb_hi, dim_t len1,
                                        dim_t len) {
    std::vector<Problem> probs;
    for (int t = 0; t < 12; ++t)
        probs.push_back(
            random_1x1(rng, t, std::uniform_int_distribution<dim_t>(mb_lo, mb_hi)(rng), len1, len));
    return probs;
}
}  // namespace
