// Internal to winograd (winograd.cpp: the transforms, the forward and backward data tiles and the
// rules; winograd_wgrad.cpp: the weight gradient): the tiles' geometry and what both share.
#pragma once

#include "omp_compat.hpp"
#include "x86.hpp"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <utility>

#include "algorithms.hpp"
#include "checked.hpp"
#include "microkernel.hpp"
#include "parallel.hpp"
#include "thread_profile.hpp"

namespace convlab::detail {

constexpr int kPoints = 36;  // 6 x 6 transformed points per tile
constexpr int kVSlot = kWinogradVSlot, kMSlot = kWinogradMSlot;

// One forward-like problem on planes: out (n, k, oh, ow) from in (n, c, h, w), 3x3, stride 1.
struct Geom {
    dim_t n = 1, groups = 1, cg = 1, kg = 1;  // images, groups, channels in and out per group
    dim_t h = 1, w = 1, oh = 1, ow = 1;
    dim_t pt = 0, pl = 0;  // padding before, rows and columns
    dim_t th = 1, tw = 1;  // tiles per column and row: ceil(o / 4)
    dim_t tiles_per_image() const { return th * tw; }
    dim_t tiles() const { return n * th * tw; }
    dim_t in_image() const { return groups * cg * h * w; }
    dim_t out_image() const { return groups * kg * oh * ow; }
};

// The forward-like problem whose tiles compute pass of p: the forward itself (and the weight
// gradient's tiles), or for backward data the forward of FlipRot(W) over dY (stride 1: no
// zeros inserted), padded by 2 - pad before.
Geom geom_of(const Problem& p, Pass pass);

// Calls f(n, th, tw0, len, j) for the runs of tiles along a tile row that make up tiles [t0, t1)
// (j: the run's first tile counted from t0).
template <class F>
void for_runs(const Geom& q, dim_t t0, dim_t t1, const F& f) {
    const dim_t per = q.tiles_per_image();
    for (dim_t t = t0; t < t1;) {
        const dim_t n = t / per, r = t % per, th = r / q.tw, tw0 = r % q.tw;
        const dim_t len = std::min(q.tw - tw0, t1 - t);
        f(n, th, tw0, len, t - t0);
        t += len;
    }
}

// Prefetches rows [y0, y0 + rows) x columns [x0, x0 + count) of a plane (h x w), clamped to
// it: the next channel's share of a run while this one's is transformed. Channels' planes lie
// far apart, so each run reads short pieces of many rows, which the hardware prefetchers
// follow poorly; from memory (large batches) the transforms waited on them.
inline void prefetch_rows(const float* plane, dim_t h, dim_t w, dim_t y0, dim_t rows, dim_t x0,
                          dim_t count, bool write) {
    const dim_t ya = std::max<dim_t>(y0, 0), yb = std::min(y0 + rows, h);
    const dim_t xa = std::max<dim_t>(x0, 0), xb = std::min(x0 + count, w);
    if (xa >= xb) return;
    for (dim_t y = ya; y < yb; ++y) {
        const char* a = reinterpret_cast<const char*>(plane + y * w + xa);
        const char* b = reinterpret_cast<const char*>(plane + y * w + xb - 1);
        for (; a <= b; a += 64)
            if (write)
                __builtin_prefetch(a, 1, 3);
            else
                __builtin_prefetch(a, 0, 3);
        if (write)  // the hint must be a constant for clang: one call per kind, as above
            __builtin_prefetch(b, 1, 3);
        else
            __builtin_prefetch(b, 0, 3);
    }
}

// len rounded up to whole vectors of 8 lanes (Zen 4 runs 16-lane AVX-512 as two 8-lane halves
// anyway; short rows of tiles waste fewer lanes). The transforms run over lp lanes: buffers of
// runs hold lp floats, and rows of V, M and Y hold 15 floats of slack past the block (row_len).
inline dim_t padded(dim_t len) {
    return (len + 7) / 8 * 8;
}
inline dim_t row_len(dim_t nb) {
    return padded(nb + 15);
}
// Floats between the 36 points' matrices of V, M and Y (channels rows of ld floats each): one
// cache line more than they fill, so that the 36 rows a transform writes (or reads) together
// do not fall in the same cache set, as they would 4 KiB apart (64 channels of 80):
// res2a_branch2b at batch 1 0.87 -> 0.76 ms. Channel-major instead (a channel's 36 rows
// together, the GEMMs reading every 36th row) measured even alone but erratic in the benchmark,
// between oneDNN's runs: res3a_branch2b's forward 0.45-0.49 -> 0.88-1.05 ms.
inline dim_t point_stride(dim_t channels, dim_t ld) {
    return channels * ld + 16;
}

// Narrow images (fewer than kGroupBelow tiles a row: outputs up to 24 wide) have short runs
// whose lanes sit mostly idle (a 7x7 output's runs are 2 tiles), so their transforms take
// tiles kGroupLanes at a time across rows and images, each tile's patch gathered by scalar
// loads.
constexpr dim_t kGroupBelow = 7, kGroupLanes = 16;

inline bool grouped(const Geom& q) {
    return q.tw < kGroupBelow;
}

// The input transform V = B^T d B of a run of tiles along a tile row, and of kGroupLanes tiles
// of narrow images (winograd.cpp: compiled for each ISA, CONVLAB_ISA_CLONES).
void input_run(const float* plane, const Geom& q, dim_t th, dim_t tw0, dim_t len, float* v,
               dim_t ldx, float* work);
void input_group(const float* src, dim_t ch, const Geom& q, dim_t t0, dim_t len, float* v,
                 dim_t ldx, float* work);

struct Block {
    dim_t t0, t1;
};

// This thread's scratch slot, or Error naming what did not fit.
float* scratch_or_error(int slot, std::size_t floats, const char* what);
// Sizes the given scratch slots of every thread of the next parallel regions (slot, floats)
// before they start: throws Error naming winograd's buffers when they do not fit in memory.
void reserve_scratch(std::initializer_list<std::pair<int, std::size_t>> slots);

// The first step of a block, forward and weight gradient alike: V = B^T d B of every input
// channel of group g over the block's tiles (the next channel's rows prefetched).
template <class Loop>
void transform_inputs(const Geom& q, dim_t g, Block b, const float* src, float* v, Profiler* tp,
                      const Loop& loop) {
    const dim_t ld = row_len(b.t1 - b.t0), cg = q.cg;
    Span s(tp, "wino_src");
    loop(cg, [&](dim_t c, float* work) {
        if (grouped(q)) {
            for (dim_t t = b.t0; t < b.t1; t += kGroupLanes)
                input_group(src, g * cg + c, q, t, std::min(kGroupLanes, b.t1 - t),
                            v + c * ld + (t - b.t0), point_stride(cg, ld), work);
            return;
        }
        for_runs(q, b.t0, b.t1, [&](dim_t n, dim_t th, dim_t tw0, dim_t len, dim_t j) {
            const float* plane = src + n * q.in_image() + (g * cg + c) * q.h * q.w;
            if (c + 1 < cg)
                prefetch_rows(plane + q.h * q.w, q.h, q.w, 4 * th - q.pt, 6, 4 * tw0 - q.pl,
                              4 * len + 2, false);
            input_run(plane, q, th, tw0, len, v + c * ld + j, point_stride(cg, ld), work);
        });
    });
}

// The most tiles of a block, the tiles per block, and the work floats of one run's transforms
// (winograd.cpp says why).
dim_t most_tiles(const Geom& q);
dim_t block_tiles(const Geom& q, const Tuning& t);
dim_t work_floats(const Geom& q);
// A block's packed V in fused_weight_gradient (winograd_wgrad.cpp), at most; winograd_work
// states it.
inline constexpr std::size_t kFusedPackBytes = std::size_t{512} << 10;
// Throws Error naming the pass and p unless winograd applies.
void check_applies(const Problem& p, Pass pass);

}  // namespace convlab::detail
