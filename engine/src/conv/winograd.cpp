// winograd: minimal filtering F(4x4, 3x3) (Winograd; for CNNs Lavin and Gray, "Fast Algorithms
// for Convolutional Neural Networks", 2016) for 2-D 3x3 convolutions of stride 1, undilated, any
// padding, groups.
//
// Per 4x4 tile of output and channel pair (k, c), the 3x3 window sums become one product per
// point of a 6x6 transformed tile: 36 multiplications where direct takes 144. Over all channels
// and a block of tiles the products are 36 GEMMs:
//   V[xi](c, t) = (B^T d B)[xi]        d: the 6x6 input patch of tile t, channel c
//   U[xi](k, c) = (G g G^T)[xi]        g: the 3x3 filter W[k][c]
//   M[xi]       = U[xi] V[xi]          (the engine's blocked GEMM, K x C times C x tiles)
//   Y tile      = A^T M A              (4x4 outputs of channel k, tile t)
// Backward data (stride 1) is the forward of FlipRot(W) over dY padded by 2 - pad (docs/design.md),
// so the same tiles compute it with U built from the flipped, channel-swapped filters.
// The weight gradient sums over tiles in the transformed domain, F(3x3, 4x4) by transposing the
// forward's bilinear algorithm:  dW[k][c] = G^T (sum_t (A dY_t A^T) (.) (B^T d_t B)) G.
//
// Interpolation points 0, 1, -1, 2, -1/2 and infinity, not Lavin's 0, +-1, +-2: half the
// rounding error (as Barabasz et al., "Error analysis and improving the accuracy of Winograd
// convolution for deep neural networks", 2020, found), for a denser input transform (26
// terms against 22). Modelled in double against fp32, 512 channels, blocks of 256: 1.0e-5 of
// the output's rms against 1.9e-5 (weight gradient over 3000 tiles: 3.4e-6 against 7.6e-6).
// Measured in the benchmark at batch 32 against oneDNN on ResNet-50's 3x3 layers (the check
// allows 1e-4 of max(|ref|, rms)): largest errors 1.4-2.6e-5, where Lavin's points gave
// 3.9-9.0e-5.
//   B^T = [1  3/2  -2  -3/2   1  0]   G = [    1     0     0]   A^T = [1  1   1  1    1  0]
//         [0  -1  -5/2 -1/2   1  0]       [ -1/3  -1/3  -1/3]         [0  1  -1  2  -1/2  0]
//         [0   1   1/2 -5/2   1  0]       [  1/3  -1/3   1/3]         [0  1   1  4   1/4  0]
//         [0 -1/2  -1   1/2   1  0]       [ 1/15  2/15  4/15]         [0  1  -1  8  -1/8  1]
//         [0   2   -1   -2    1  0]       [-16/15 8/15 -4/15]
//         [0   1   3/2  -2  -3/2 1]       [    0     0     1]
//
// Blocks of tiles run side by side on the threads (each its own V and M in scratch) where there
// are enough of them; otherwise the three steps of one block run one after another, each split
// over the threads (channels, transformed points, output channels). The weight gradient's one
// block of a small image (batch 1) runs fused, each thread on data of its own
// (fused_weight_gradient).
#include "omp_compat.hpp"
#include "x86.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "algorithms.hpp"
#include "checked.hpp"
#include "microkernel.hpp"
#include "parallel.hpp"
#include "thread_profile.hpp"

namespace convlab::detail {

namespace {

constexpr int kPoints = 36;  // 6 x 6 transformed points per tile
constexpr int kVSlot = kWinogradVSlot, kMSlot = kWinogradMSlot;
// The forward GEMMs' reduction over channels in blocks of 256 (their partial sums added), not
// in one run: the rounding of long sums in the transformed domain is what the output transform
// amplifies most. Modelled in double against fp32 (512 channels, Lavin's points): 1.9e-5 of the
// rms in one run of 512 (what the GEMM's blocking chose), 9.8e-6 with 256, 8.0e-6 with 128
// (which cost res4a_branch2b and res5a_branch2b 5-15% at batch 32).
constexpr dim_t kReductionBlock = 256;

int g_block_tiles = 0;       // 0: chosen per problem
bool g_split_steps = false;  // the weight gradient's blocks always by split steps (tests)
bool g_unfused = false;      // the weight gradient's one block without fused_weight_gradient

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
Geom geom_of(const Problem& p, Pass pass) {
    const bool bd = pass == Pass::BackwardData;
    Geom q;
    q.n = p.mb;
    q.groups = p.groups;
    q.cg = bd ? p.ocg() : p.icg();
    q.kg = bd ? p.icg() : p.ocg();
    for (int a = 0; a < 2; ++a) {
        (a ? q.w : q.h) = bd ? p.out(a) : p.in[static_cast<std::size_t>(a)];
        (a ? q.ow : q.oh) = bd ? p.in[static_cast<std::size_t>(a)] : p.out(a);
        const dim_t pad = p.pad_begin[static_cast<std::size_t>(a)];
        (a ? q.pl : q.pt) = bd ? 2 - pad : pad;
    }
    q.th = (q.oh + 3) / 4;
    q.tw = (q.ow + 3) / 4;
    return q;
}

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

// Row i of an input patch run: row[e] = x(y, x0 + e) for e < count, zero outside the plane.
[[gnu::always_inline]] inline void load_row(const float* plane, const Geom& q, dim_t y, dim_t x0,
                                            dim_t count, float* row) {
    if (y < 0 || y >= q.h) {
        std::fill(row, row + count, 0.0f);
        return;
    }
    const float* src = plane + y * q.w;
    const dim_t lo = std::clamp<dim_t>(-x0, 0, count), hi = std::clamp<dim_t>(q.w - x0, lo, count);
    std::fill(row, row + lo, 0.0f);
    std::copy(src + x0 + lo, src + x0 + hi, row + lo);
    std::fill(row + hi, row + count, 0.0f);
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

// The 6-point transforms, applied to vectors of tiles (B^T d for inputs; A^T m for outputs; A y
// for output gradients; G^T m for weight gradients). out[i] is len floats ldo apart.
[[gnu::always_inline]] inline void bt6(const float* const d[6], float* const o[6], dim_t len) {
#pragma omp simd simdlen(8)
    for (dim_t t = 0; t < len; ++t) {
        const float d0 = d[0][t], d1 = d[1][t], d2 = d[2][t], d3 = d[3][t], d4 = d[4][t],
                    d5 = d[5][t];
        o[0][t] = d0 + 1.5f * (d1 - d3) - 2.0f * d2 + d4;
        o[1][t] = -d1 - 2.5f * d2 - 0.5f * d3 + d4;
        o[2][t] = d1 + 0.5f * d2 - 2.5f * d3 + d4;
        o[3][t] = 0.5f * (d3 - d1) - d2 + d4;
        o[4][t] = 2.0f * (d1 - d3) - d2 + d4;
        o[5][t] = d1 + 1.5f * (d2 - d4) - 2.0f * d3 + d5;
    }
}

[[gnu::always_inline]] inline void at6(const float* const m[6], float* const o[4], dim_t len) {
#pragma omp simd simdlen(8)
    for (dim_t t = 0; t < len; ++t) {
        const float m0 = m[0][t], m1 = m[1][t], m2 = m[2][t], m3 = m[3][t], m4 = m[4][t],
                    m5 = m[5][t];
        const float s12 = m1 + m2, d12 = m1 - m2;
        o[0][t] = m0 + s12 + m3 + m4;
        o[1][t] = d12 + 2.0f * m3 - 0.5f * m4;
        o[2][t] = s12 + 4.0f * m3 + 0.25f * m4;
        o[3][t] = d12 + 8.0f * m3 - 0.125f * m4 + m5;
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

// V[xi * ldx + t] = the columns of tmp ([i][j][t], rows already transformed) transformed: the
// second half of B^T d B, over lp lanes.
[[gnu::always_inline]] inline void input_columns(const float* tmp, dim_t lp, float* v, dim_t ldx) {
    for (int j = 0; j < 6; ++j) {
        const float* d[6];
        float* o[6];
        for (int i = 0; i < 6; ++i) {
            d[i] = tmp + (i * 6 + j) * lp;
            o[i] = v + (i * 6 + j) * ldx;
        }
        bt6(d, o, lp);
    }
}

// V[xi * ldx + j + e] for the run of len tiles (n, th, tw0..) of one input channel plane.
// work: 44 lp + 8 floats (lp: len padded).
CONVLAB_ISA_CLONES void input_run(const float* plane, const Geom& q, dim_t th, dim_t tw0, dim_t len,
                                  float* v, dim_t ldx, float* work) {
    const dim_t lp = padded(len);  // whole vectors: lanes past len are never stored
    float* tmp = work;             // [i][j'][t]: rows transformed along w
    float* row = work + 36 * lp;   // 4 lp + 4 floats of one input row
    float* ph = row + 4 * lp + 4;  // its 4 phases, lp + 1 floats each: ph_c[m] = row[4 m + c]
    const dim_t lq = lp + 1;
    const dim_t x0 = 4 * tw0 - q.pl;
    for (int i = 0; i < 6; ++i) {
        load_row(plane, q, 4 * th + i - q.pt, x0, 4 * lp + 4, row);
        // De-interleaved first, so that the transform reads each d_j at unit stride (read at
        // stride 4, GCC peels a scalar iteration per vector for the group's gap: half the
        // lanes of a 14-tile row ran scalar).
#pragma omp simd simdlen(8)
        for (dim_t m = 0; m < lq; ++m)
            for (int c = 0; c < 4; ++c) ph[c * lq + m] = row[4 * m + c];
        // d_j(t) = row[4 t + j]: phases 0..3 at t, then phases 0 and 1 at t + 1
        const float* d[6] = {ph, ph + lq, ph + 2 * lq, ph + 3 * lq, ph + 1, ph + lq + 1};
        float* o[6];
        for (int j = 0; j < 6; ++j) o[j] = tmp + (i * 6 + j) * lp;
        bt6(d, o, lp);
    }
    input_columns(tmp, lp, v, ldx);
}

// Narrow images (fewer than kGroupBelow tiles a row: outputs up to 24 wide) have short runs
// whose lanes sit mostly idle (a 7x7 output's runs are 2 tiles), so their transforms take
// tiles kGroupLanes at a time across rows and images, each tile's patch gathered by scalar
// loads.
constexpr dim_t kGroupBelow = 7, kGroupLanes = 16;

inline bool grouped(const Geom& q) {
    return q.tw < kGroupBelow;
}

// V[xi * ldx + e] for tiles [t0, t0 + len) (len <= kGroupLanes, any rows and images) of input
// channel ch (of all, g * cg + c). work: 72 kGroupLanes floats.
CONVLAB_ISA_CLONES void input_group(const float* src, dim_t ch, const Geom& q, dim_t t0, dim_t len,
                                    float* v, dim_t ldx, float* work) {
    const dim_t lp = padded(len);
    float* d = work;              // [i][j][t]: the patches
    float* tmp = work + 36 * lp;  // [i][j'][t]: rows transformed along w
    const dim_t per = q.tiles_per_image();
    for (dim_t e = 0; e < lp; ++e) {
        if (e >= len) {
            for (int x = 0; x < 36; ++x) d[x * lp + e] = 0.0f;
            continue;
        }
        const dim_t t = t0 + e, n = t / per, r = t % per;
        const dim_t y0 = 4 * (r / q.tw) - q.pt, x0 = 4 * (r % q.tw) - q.pl;
        const float* plane = src + n * q.in_image() + ch * q.h * q.w;
        for (int i = 0; i < 6; ++i) {
            const dim_t y = y0 + i;
            const bool in = y >= 0 && y < q.h;
            for (int j = 0; j < 6; ++j) {
                const dim_t x = x0 + j;
                d[(i * 6 + j) * lp + e] = in && x >= 0 && x < q.w ? plane[y * q.w + x] : 0.0f;
            }
        }
    }
    for (int i = 0; i < 6; ++i) {
        const float* di[6];
        float* o[6];
        for (int j = 0; j < 6; ++j) {
            di[j] = d + (i * 6 + j) * lp;
            o[j] = tmp + (i * 6 + j) * lp;
        }
        bt6(di, o, lp);
    }
    input_columns(tmp, lp, v, ldx);
}

// y[(r * 4 + c) * lp + t] = A^T M A of the tiles in M's lp lanes (M[xi * ldx + t]); s: 24 lp
// floats of scratch (the columns combined along w).
[[gnu::always_inline]] inline void output_tiles(const float* m, dim_t ldx, dim_t lp, float* s,
                                                float* y) {
    for (int i = 0; i < 6; ++i) {
        const float* mi[6];
        float* o[4];
        for (int j = 0; j < 6; ++j) mi[j] = m + (i * 6 + j) * ldx;
        for (int c = 0; c < 4; ++c) o[c] = s + (i * 4 + c) * lp;
        at6(mi, o, lp);
    }
    for (int c = 0; c < 4; ++c) {
        const float* si[6];
        float* o[4];
        for (int i = 0; i < 6; ++i) si[i] = s + (i * 4 + c) * lp;
        for (int r = 0; r < 4; ++r) o[r] = y + (r * 4 + c) * lp;
        at6(si, o, lp);
    }
}

// The 4x4 outputs of one output channel plane for the run of len tiles (n, th, tw0..) from
// M[xi * ldx + e]; plus bias. work: 6 * 4 * len + 4 * 4 * len + 4 * len floats.
CONVLAB_ISA_CLONES void output_run(const float* m, dim_t ldx, const Geom& q, dim_t th, dim_t tw0,
                                   dim_t len, float bias, float* plane, float* work) {
    const dim_t lp = padded(len);  // whole vectors: lanes past len are never stored
    float* s = work;               // [i][q][t]: columns combined along w
    float* y = work + 24 * lp;     // [p][q][t]
    float* row = y + 16 * lp;      // 4 lp floats of one output row
    output_tiles(m, ldx, lp, s, y);
    const dim_t x0 = 4 * tw0, count = std::min(4 * len, q.ow - x0);
    for (int r = 0; r < 4; ++r) {
        const dim_t oy = 4 * th + r;
        if (oy >= q.oh) break;
        const float* yr = y + r * 4 * lp;
        for (dim_t t = 0; t < lp; ++t)
            for (int c = 0; c < 4; ++c) row[4 * t + c] = yr[c * lp + t] + bias;
        std::copy(row, row + count, plane + oy * q.ow + x0);
    }
}

// output_run for tiles [t0, t0 + len) (len <= kGroupLanes, any rows and images) of output
// channel ch (of all): M[xi * ldx + e]. work: 40 kGroupLanes floats.
CONVLAB_ISA_CLONES void output_group(const float* m, dim_t ldx, const Geom& q, dim_t t0, dim_t len,
                                     float bias, float* dst, dim_t ch, float* work) {
    const dim_t lp = padded(len);
    float* s = work;            // [i][c][t]: columns combined along w
    float* y = work + 24 * lp;  // [r][c][t]
    output_tiles(m, ldx, lp, s, y);
    const dim_t per = q.tiles_per_image();
    for (dim_t e = 0; e < len; ++e) {
        const dim_t t = t0 + e, n = t / per, r = t % per;
        const dim_t y0 = 4 * (r / q.tw), x0 = 4 * (r % q.tw);
        float* plane = dst + n * q.out_image() + ch * q.oh * q.ow;
        for (dim_t i = 0; i < 4 && y0 + i < q.oh; ++i)
            for (dim_t c = 0; c < 4 && x0 + c < q.ow; ++c)
                plane[(y0 + i) * q.ow + x0 + c] = y[(i * 4 + c) * lp + e] + bias;
    }
}

struct Block {
    dim_t t0, t1;
};

// This thread's scratch slot, or Error naming what did not fit.
float* scratch_or_error(int slot, std::size_t floats, const char* what) {
    try {
        return scratch(slot, floats);
    } catch (const std::bad_alloc&) {
        throw Error(std::string("winograd: ") + std::to_string((floats * sizeof(float)) >> 20) +
                    " MiB of " + what + " do not fit in memory");
    }
}

// Sizes the given scratch slots of every thread of the next parallel regions (slot, floats)
// before they start, so that no allocation fails inside one (an exception cannot leave it):
// throws Error naming winograd's buffers when they do not fit in memory.
void reserve_scratch(std::initializer_list<std::pair<int, std::size_t>> slots) {
    bool ok = true;
#pragma omp parallel
    {
        try {
            for (const auto& [slot, floats] : slots) scratch(slot, floats);
        } catch (const std::bad_alloc&) {
#pragma omp atomic write
            ok = false;
        }
    }
    if (ok) return;
    std::size_t bytes = 0;
    for (const auto& sl : slots) bytes += sl.second * sizeof(float);
    throw Error("winograd: " + std::to_string(bytes >> 20) +
                " MiB of transformed tiles per thread do not fit in memory");
}

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

// The tiles of one block through the three steps, for group g. Each step's loop runs over
// [0, count) split as loop() decides (all on this thread, or an omp for of the caller's team).
template <class Loop>
void run_block(const Geom& q, dim_t g, Block b, const float* src, const float* u, const float* bias,
               float* dst, float* v, float* mm, Profiler* tp, const Loop& loop) {
    const dim_t nb = b.t1 - b.t0, ld = row_len(nb), cg = q.cg, kg = q.kg;
    transform_inputs(q, g, b, src, v, tp, loop);
    {
        Span s(tp, "gemm");
        loop(kPoints, [&](dim_t xi, float*) {
            gemm(kg, nb, cg, StridedA{u + (g * kPoints + xi) * kg * cg, cg, 1},
                 StridedB{v + xi * point_stride(cg, ld), ld, 1}, mm + xi * point_stride(kg, ld), ld,
                 false, kReductionBlock);
        });
    }
    {
        Span s(tp, "wino_dst");
        loop(kg, [&](dim_t k, float* work) {
            const float bk = bias ? bias[g * kg + k] : 0.0f;
            if (grouped(q)) {
                for (dim_t t = b.t0; t < b.t1; t += kGroupLanes)
                    output_group(mm + k * ld + (t - b.t0), point_stride(kg, ld), q, t,
                                 std::min(kGroupLanes, b.t1 - t), bk, dst, g * kg + k, work);
                return;
            }
            for_runs(q, b.t0, b.t1, [&](dim_t n, dim_t th, dim_t tw0, dim_t len, dim_t j) {
                float* plane = dst + n * q.out_image() + (g * kg + k) * q.oh * q.ow;
                if (k + 1 < kg)
                    prefetch_rows(plane + q.oh * q.ow, q.oh, q.ow, 4 * th, 4, 4 * tw0, 4 * len,
                                  true);
                output_run(mm + k * ld + j, point_stride(kg, ld), q, th, tw0, len, bk, plane, work);
            });
        });
    }
}

// The most tiles of a block: V and M (or Y) within 32 MiB, 16 to 96.
dim_t most_tiles(const Geom& q) {
    const dim_t per_tile = kPoints * (q.cg + q.kg) * dim_t{sizeof(float)};
    return std::clamp<dim_t>((dim_t{32} << 20) / per_tile / 16 * 16, 16, 96);
}

// Tiles per block (the last block short): 96, two tiles of 48 columns of the GEMM's kernels.
// ResNet-50's 3x3 layers, one call alternating with implicit_gemm: at batch 1 56x56 and 28x28
// measured 0.59 and 0.71 ms with 98, 0.69 and 0.82 with 56, 0.83 and 0.92 with 32; at batch 32
// 14x14 22.4 ms with 96 against 27.4 with 48 and 28-31 with 56, 7x7 19.1 against 22.4 with 48.
// Shared evenly instead, 196 tiles went as 80, 80 and 36 (forward, to 16s) or 66, 66 and 64
// (weight gradient) and measured slower than 96, 96 and 4: 0.70-0.72 against 0.60-0.65 ms,
// 0.66-0.73 against 0.63. Fewer where a block's transformed inputs and products would pass
// 32 MiB; set_winograd_block overrides (tests).
dim_t block_tiles(const Geom& q) {
    if (g_block_tiles > 0) return std::min<dim_t>(g_block_tiles, q.tiles());
    const dim_t most = most_tiles(q);
    // Enough blocks for each thread to run its own side by side (one parallel region a call)
    // rather than each step of a block split over the threads (three regions a block, nine for
    // res2a_branch2b's 196 tiles at batch 1): two a thread where blocks of 48 tiles or more
    // allow it, else one a thread of 16 or more. In the benchmark against oneDNN, split steps
    // went 2x slow in many runs (res2a_branch2b's forward 1.09 ms and weight gradient 1.45,
    // res3a_branch2b's weight gradient 1.09-1.15 in 3 of 4 runs, against 0.45-0.63); side by
    // side res3a_branch2b measured 0.56-0.63 forward and 0.70-0.76 weight gradient in every run.
    // (The weight gradient has since gone back to split steps where one block holds all tiles:
    // see backward_weight_winograd.)
    const dim_t threads = static_cast<dim_t>(omp_get_max_threads());
    const dim_t two_each = (q.tiles() + 2 * threads - 1) / (2 * threads);
    const dim_t one_each = (q.tiles() + threads - 1) / threads;
    if (q.tiles() > most && two_each >= 48) return std::min(most, (two_each + 7) / 8 * 8);
    if (threads > 1 && one_each >= 16 && one_each <= most) return one_each;
    return std::min(q.tiles(), most);
}

// Work floats of the transforms of one run (the longest run is a whole tile row).
dim_t work_floats(const Geom& q) {
    return std::max(44 * padded(q.tw) + 64, 72 * kGroupLanes);
}

void run_tiles(const Geom& q, const float* src, const float* u, const float* bias, float* dst,
               Profiler* prof) {
    const dim_t tb = block_tiles(q);
    const dim_t nblocks = (q.tiles() + tb - 1) / tb;
    const int threads = omp_get_max_threads();
    const auto v_floats = static_cast<std::size_t>(kPoints * point_stride(q.cg, row_len(tb)));
    const auto m_floats = static_cast<std::size_t>(kPoints * point_stride(q.kg, row_len(tb)));
    const auto w_floats = static_cast<std::size_t>(work_floats(q));
    if (nblocks * q.groups >= threads) {
        // Blocks side by side, each thread its own V and M.
        reserve_scratch({{kVSlot, v_floats + w_floats}, {kMSlot, m_floats}});
        ThreadProfilers tps(prof);
        // The slots are reserved (scratch cannot allocate here); the blocks' GEMMs may.
        ParallelError err;
#pragma omp parallel
        {
            float* v = scratch(kVSlot, v_floats + w_floats);
            float* work = v + v_floats;
            float* mm = scratch(kMSlot, m_floats);
            Profiler* tp = tps.mine();
            const auto serial = [&](dim_t count, const auto& body) {
                for (dim_t i = 0; i < count; ++i) body(i, work);
            };
#pragma omp for schedule(dynamic) collapse(2)
            for (dim_t g = 0; g < q.groups; ++g)
                for (dim_t bi = 0; bi < nblocks; ++bi)
                    err.run([&] {
                        run_block(q, g, Block{bi * tb, std::min(q.tiles(), (bi + 1) * tb)}, src, u,
                                  bias, dst, v, mm, tp, serial);
                    });
        }
        err.rethrow();
        return;
    }
    // Few blocks: each step of a block split over the threads. V and M are the first thread's.
    reserve_scratch({{kWinogradWorkSlot, w_floats}});
    float* v = scratch_or_error(kVSlot, v_floats, "transformed tiles");
    float* mm = scratch_or_error(kMSlot, m_floats, "transformed products");
    for (dim_t g = 0; g < q.groups; ++g)
        for (dim_t bi = 0; bi < nblocks; ++bi) {
            const Block b{bi * tb, std::min(q.tiles(), (bi + 1) * tb)};
            const auto split = [&](dim_t count, const auto& body) {
                ParallelError err;
#pragma omp parallel
                {
                    float* work = scratch(kWinogradWorkSlot, w_floats);
#pragma omp for schedule(static)
                    for (dim_t i = 0; i < count; ++i) err.run([&] { body(i, work); });
                }
                err.rethrow();
            };
            run_block(q, g, b, src, u, bias, dst, v, mm, prof, split);
        }
}

// U[g][xi][k][c] = (G f G^T)[xi] for the 3x3 filters f of group g: W[k][c], or for backward
// data FlipRot(W): f(c', k') = W[k'][c'] rotated by 180 degrees (k = the input channel c' of the
// forward, c = its output channel k').
void transform_weights(const Problem& p, const float* wei, bool flip, float* u, Profiler* prof) {
    Span s(prof, "wino_wei");
    const dim_t kg = flip ? p.icg() : p.ocg(), cg = flip ? p.ocg() : p.icg();
    const dim_t icg = p.icg();
    constexpr dim_t kChunk = 16;  // filters per pass: 36 rows of 16 floats, whole cache lines
    constexpr float k3 = 1.0f / 3, k15 = 1.0f / 15;
#pragma omp parallel for collapse(2) schedule(static) if (p.oc * icg >= 4096)
    for (dim_t g = 0; g < p.groups; ++g)
        for (dim_t k = 0; k < kg; ++k)
            for (dim_t c0 = 0; c0 < cg; c0 += kChunk) {
                const dim_t cn = std::min(kChunk, cg - c0);
                float out[kPoints][kChunk];
                for (dim_t e = 0; e < cn; ++e) {
                    const dim_t c = c0 + e;
                    // the forward's filter f(k, c), 3x3
                    float f[3][3];
                    const float* w = flip ? wei + ((g * p.ocg() + c) * icg + k) * 9
                                          : wei + ((g * p.ocg() + k) * icg + c) * 9;
                    for (int r = 0; r < 3; ++r)
                        for (int x = 0; x < 3; ++x)
                            f[r][x] = flip ? w[(2 - r) * 3 + 2 - x] : w[r * 3 + x];
                    // G f (6 x 3), then (G f) G^T (6 x 6)
                    const auto gcol = [&](float a, float b, float cc, float o[6]) {
                        o[0] = a;
                        o[1] = -(a + b + cc) * k3;
                        o[2] = (a - b + cc) * k3;
                        o[3] = (a + 2.0f * b + 4.0f * cc) * k15;
                        o[4] = (-16.0f * a + 8.0f * b - 4.0f * cc) * k15;
                        o[5] = cc;
                    };
                    float gf[3][6];  // columns of G f
                    for (int x = 0; x < 3; ++x) gcol(f[0][x], f[1][x], f[2][x], gf[x]);
                    for (int i = 0; i < 6; ++i) {
                        float row[6];
                        gcol(gf[0][i], gf[1][i], gf[2][i], row);
                        for (int j = 0; j < 6; ++j) out[i * 6 + j][e] = row[j];
                    }
                }
                for (int xi = 0; xi < kPoints; ++xi)
                    std::copy(out[xi], out[xi] + cn, u + ((g * kPoints + xi) * kg + k) * cg + c0);
            }
}

// A w for 4-point vectors of tiles: w0; w0+w1+w2+w3; w0-w1+w2-w3; w0+2w1+4w2+8w3;
// w0-2w1+4w2-8w3; w3 (w(t) = d[j][t * step]).
[[gnu::always_inline]] inline void a6(const float* const d[4], dim_t step, float* const o[6],
                                      dim_t len) {
#pragma omp simd simdlen(8)
    for (dim_t t = 0; t < len; ++t) {
        const float w0 = d[0][t * step], w1 = d[1][t * step], w2 = d[2][t * step],
                    w3 = d[3][t * step];
        const float s02 = w0 + w2, s13 = w1 + w3;
        o[0][t] = w0;
        o[1][t] = s02 + s13;
        o[2][t] = s02 - s13;
        o[3][t] = w0 + 2.0f * w1 + 4.0f * w2 + 8.0f * w3;
        o[4][t] = w0 - 0.5f * w1 + 0.25f * w2 - 0.125f * w3;
        o[5][t] = w3;
    }
}

// Y[xi * ldx + t] = the columns of tmp ([i][j][t], 4 rows already transformed) transformed: the
// second half of A y A^T, over lp lanes.
[[gnu::always_inline]] inline void grad_columns(const float* tmp, dim_t lp, float* y, dim_t ldx) {
    for (int j = 0; j < 6; ++j) {
        const float* d[4];
        float* o[6];
        for (int i = 0; i < 4; ++i) d[i] = tmp + (i * 6 + j) * lp;
        for (int i = 0; i < 6; ++i) o[i] = y + (i * 6 + j) * ldx;
        a6(d, 1, o, lp);
    }
}

// The 6x6 transform A y A^T of the 4x4 output-gradient tiles of one channel plane (zero beyond
// the plane) for the run of len tiles (n, th, tw0..): Y[xi * ldx + e]. work: 40 * len floats.
CONVLAB_ISA_CLONES void grad_run(const float* plane, const Geom& q, dim_t th, dim_t tw0, dim_t len,
                                 float* y, dim_t ldx, float* work) {
    const dim_t lp = padded(len);  // whole vectors: lanes past len are never stored
    float* tmp = work;             // [i][j'][t]: rows transformed along w
    float* row = work + 36 * lp;   // 4 lp floats of one row
    const dim_t x0 = 4 * tw0, count = std::min(4 * len, q.ow - x0);
    for (int i = 0; i < 4; ++i) {
        float* o[6];
        for (int j = 0; j < 6; ++j) o[j] = tmp + (i * 6 + j) * lp;
        const dim_t oy = 4 * th + i;
        if (oy < q.oh) {
            std::copy(plane + oy * q.ow + x0, plane + oy * q.ow + x0 + count, row);
            std::fill(row + count, row + 4 * lp, 0.0f);
        } else {
            std::fill(row, row + 4 * lp, 0.0f);
        }
        const float* d[4] = {row, row + 1, row + 2, row + 3};
        a6(d, 4, o, lp);
    }
    grad_columns(tmp, lp, y, ldx);
}

// grad_run for tiles [t0, t0 + len) (len <= kGroupLanes, any rows and images) of output
// channel ch (of all) of dY. work: 40 kGroupLanes floats.
CONVLAB_ISA_CLONES void grad_group(const float* diff_dst, dim_t ch, const Geom& q, dim_t t0,
                                   dim_t len, float* y, dim_t ldx, float* work) {
    const dim_t lp = padded(len);
    float* d = work;              // [i][j][t]: the 4x4 tiles
    float* tmp = work + 16 * lp;  // [i][j'][t]: rows transformed along w
    const dim_t per = q.tiles_per_image();
    for (dim_t e = 0; e < lp; ++e) {
        if (e >= len) {
            for (int x = 0; x < 16; ++x) d[x * lp + e] = 0.0f;
            continue;
        }
        const dim_t t = t0 + e, n = t / per, r = t % per;
        const dim_t y0 = 4 * (r / q.tw), x0 = 4 * (r % q.tw);
        const float* plane = diff_dst + n * q.out_image() + ch * q.oh * q.ow;
        for (dim_t i = 0; i < 4; ++i)
            for (dim_t j = 0; j < 4; ++j)
                d[(i * 4 + j) * lp + e] =
                    y0 + i < q.oh && x0 + j < q.ow ? plane[(y0 + i) * q.ow + x0 + j] : 0.0f;
    }
    for (int i = 0; i < 4; ++i) {
        const float* di[4] = {d + (i * 4) * lp, d + (i * 4 + 1) * lp, d + (i * 4 + 2) * lp,
                              d + (i * 4 + 3) * lp};
        float* o[6];
        for (int j = 0; j < 6; ++j) o[j] = tmp + (i * 6 + j) * lp;
        a6(di, 1, o, lp);
    }
    grad_columns(tmp, lp, y, ldx);
}

// dW[k][c0 .. c0 + cn) of one output channel k (cn <= kWeiChunk filters, 9 floats each from
// dw) = G^T M G of the 36 points' sums, point xi's at m + xi * ps (kWeiChunk floats readable
// even past cn), the transform vectorised over the filters' lanes, in float: the sums are
// float already, and this adds one rounding of a value of their size (2 ulps of the largest dW
// where the double transform it replaced gave 0; the GEMMs' sums over the tiles err more). It
// took res4a_branch2b's fused weight gradient (256 x 256 filters, batch 1) 0.42 of its 0.99 ms in
// double, by 16 filters copied into a zeroed double block; this way, microbenchmark, 11.3 -> 4.1
// ns a filter.
constexpr dim_t kWeiChunk = 16;
CONVLAB_ISA_CLONES void weight_chunk(const float* m, dim_t ps, dim_t cn, float* dw) {
    // G^T rows: [1, -1/3, 1/3, 1/15, -16/15, 0], [0, -1/3, -1/3, 2/15, 8/15, 0],
    // [0, -1/3, 1/3, 4/15, -4/15, 1]; applied to the filters' lanes at once.
    constexpr float k3 = 1.0f / 3, k15 = 1.0f / 15;
    float half[3][6][kWeiChunk];  // G^T M: 3 x 6
    for (int j = 0; j < 6; ++j) {
#pragma omp simd
        for (dim_t e = 0; e < kWeiChunk; ++e) {
            const float x0 = m[j * ps + e], x1 = m[(6 + j) * ps + e], x2 = m[(12 + j) * ps + e],
                        x3 = m[(18 + j) * ps + e], x4 = m[(24 + j) * ps + e],
                        x5 = m[(30 + j) * ps + e];
            half[0][j][e] = x0 + (x2 - x1) * k3 + (x3 - 16.0f * x4) * k15;
            half[1][j][e] = -(x1 + x2) * k3 + (2.0f * x3 + 8.0f * x4) * k15;
            half[2][j][e] = (x2 - x1) * k3 + (4.0f * x3 - 4.0f * x4) * k15 + x5;
        }
    }
    alignas(64) float out[9][kWeiChunk];  // (G^T M) G, [r * 3 + x][e]
    for (int r = 0; r < 3; ++r) {
#pragma omp simd
        for (dim_t e = 0; e < kWeiChunk; ++e) {
            const float x0 = half[r][0][e], x1 = half[r][1][e], x2 = half[r][2][e],
                        x3 = half[r][3][e], x4 = half[r][4][e], x5 = half[r][5][e];
            out[r * 3][e] = x0 + (x2 - x1) * k3 + (x3 - 16.0f * x4) * k15;
            out[r * 3 + 1][e] = -(x1 + x2) * k3 + (2.0f * x3 + 8.0f * x4) * k15;
            out[r * 3 + 2][e] = (x2 - x1) * k3 + (4.0f * x3 - 4.0f * x4) * k15 + x5;
        }
    }
    for (dim_t e = 0; e < cn; ++e)
        for (int rx = 0; rx < 9; ++rx) dw[e * 9 + rx] = out[rx][e];
}

// The weight gradient's second step of a block: Y = A dY A^T of the output channels k of group
// g that loop() hands out, over the block's tiles (the next channel's rows prefetched), row k
// of point xi at yy + xi * yps + (k - k0) * ld.
template <class Loop>
void transform_grads(const Geom& q, dim_t g, Block b, const float* diff_dst, float* yy, dim_t yps,
                     dim_t k0, Profiler* tp, const Loop& loop) {
    const dim_t ld = row_len(b.t1 - b.t0), kg = q.kg;
    Span s(tp, "wino_diff_dst");
    loop(kg, [&](dim_t k, float* work) {
        float* y = yy + (k - k0) * ld;
        if (grouped(q)) {
            for (dim_t t = b.t0; t < b.t1; t += kGroupLanes)
                grad_group(diff_dst, g * kg + k, q, t, std::min(kGroupLanes, b.t1 - t),
                           y + (t - b.t0), yps, work);
            return;
        }
        for_runs(q, b.t0, b.t1, [&](dim_t n, dim_t th, dim_t tw0, dim_t len, dim_t j) {
            const float* plane = diff_dst + n * q.out_image() + (g * kg + k) * q.oh * q.ow;
            if (k + 1 < kg)
                prefetch_rows(plane + q.oh * q.ow, q.oh, q.ow, 4 * th, 4, 4 * tw0, 4 * len, false);
            grad_run(plane, q, th, tw0, len, y + j, yps, work);
        });
    });
}

// The weight gradient with every tile in one block (batch 1), each thread on data of its own.
// Each thread takes a share of the input channels (whole panels): it transforms those channels'
// inputs (V) and packs them as B panels once (per block of its channels), then runs all output
// channels MR at a time: transforms their output gradients (Y, MR rows a point, computed by
// every thread for itself), multiplies the 36 points' rows by its panels into sums of MR x
// (block) per point, and turns those into dW at once. Nothing one thread writes is read by the
// other, and the sums of all filters (2.25 MiB for 128 x 128) are never written out and read
// back.
//
// Why not split steps (each step split over the threads, V and Y shared): this machine's two
// vCPUs lie near each other in some minutes and far apart in others. A line written by one
// thread and then read by the other cost 5.2 ns in the first, 8.5-8.8 in the second, while
// private data, L2, L3 and the FMA pipes measured the same in both (harness, probes between
// calls). Split steps, every thread reading the V and Y the other wrote, took res3a_branch2b's
// weight gradient at batch 1 from 0.59 ms to 1.07 (medians) in the far minutes, this way from
// 0.58 to 0.73-0.81; in the bench 9 of 24 runs had measured 0.99-1.33 ms against 0.59-0.78.
constexpr std::size_t kFusedPackBytes = std::size_t{512} << 10;  // a block's packed V, at most

bool fused_applies(dim_t nb) {
    // Whole panels of NR columns are whole chunks of weight_chunk (every kernel's NR is 16 or 32).
    if (microkernel().nr % kWeiChunk) return false;
    return std::size_t{kPoints} * static_cast<std::size_t>(nb * microkernel().nr) * sizeof(float) <=
           kFusedPackBytes;
}

void fused_weight_gradient(const Geom& q, const ConvArgs& a, Profiler* prof) {
    const MicroKernel& uk = microkernel();
    const dim_t mr = uk.mr, nr = uk.nr;
    const Block b{0, q.tiles()};
    const dim_t nb = q.tiles(), ld = row_len(nb), cg = q.cg, kg = q.kg;
    const dim_t ps_v = point_stride(cg, ld);
    const dim_t ps_y = point_stride(mr, ld);  // a point's MR rows of Y
    const dim_t panel = nb * nr;              // floats of one point's packed panel
    const dim_t per_block =
        std::max<dim_t>(1, static_cast<dim_t>(kFusedPackBytes / sizeof(float)) / (kPoints * panel));
    const dim_t cbp = per_block * nr;            // a block's columns, whole panels
    const dim_t sum_ps = point_stride(mr, cbp);  // floats between the points' sums
    const dim_t y_floats = kPoints * ps_y, pack_floats = kPoints * per_block * panel;
    const auto mine_floats = static_cast<std::size_t>(work_floats(q) + y_floats + pack_floats +
                                                      kPoints * sum_ps + mr * nb);
    reserve_scratch({{kWinogradWorkSlot, mine_floats}});
    // V's rows by channel (each thread writes and reads only those of its channels).
    float* v =
        scratch_or_error(kVSlot, static_cast<std::size_t>(kPoints * ps_v), "transformed tiles");
    const dim_t panels = (cg + nr - 1) / nr;
    ThreadProfilers tps(prof);
#pragma omp parallel
    {
        const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
        float* work = scratch(kWinogradWorkSlot, mine_floats);
        float* yy = work + work_floats(q);
        float* pack = yy + y_floats;
        float* sums = pack + pack_floats;
        // Y's MR rows packed, where the kernel cannot read them in place.
        float* ap = sums + kPoints * sum_ps;
        Profiler* tp = tps.mine();
        // A last partial tile's rows past the output channels give sums that are not used; zero
        // at first, so that they are defined (later, the previous tile's rows).
        std::fill(yy, yy + y_floats, 0.0f);
        // This thread's input channels, whole panels: [ca, ce).
        const dim_t ca = std::min(cg, panels * id / nt * nr),
                    ce = std::min(cg, panels * (id + 1) / nt * nr);
        const auto range = [&](dim_t lo, dim_t hi) {
            return [&, lo, hi](dim_t, const auto& body) {
                for (dim_t i = lo; i < hi; ++i) body(i, work);
            };
        };
        for (dim_t g = 0; g < q.groups; ++g) {
            transform_inputs(q, g, b, a.src, v, tp, range(ca, ce));
            for (dim_t cs = ca; cs < ce; cs += cbp) {
                const dim_t cw = std::min(cbp, ce - cs), np = (cw + nr - 1) / nr;
                {
                    Span s(tp, "pack_src");
                    for (int xi = 0; xi < kPoints; ++xi)
                        for (dim_t j = 0; j < np; ++j)
                            pack_transposed(v + xi * ps_v + (cs + j * nr) * ld, ld,
                                            std::min(nr, cw - j * nr), nb, static_cast<int>(nr),
                                            pack + (xi * per_block + j) * panel);
                }
                for (dim_t k0 = 0; k0 < kg; k0 += mr) {
                    const dim_t mv = std::min(mr, kg - k0);
                    transform_grads(q, g, b, a.diff_dst, yy, ps_y, k0, tp, range(k0, k0 + mv));
                    {
                        Span s(tp, "gemm");
                        for (int xi = 0; xi < kPoints; ++xi) {
                            const float* ay = yy + xi * ps_y;
                            for (dim_t j = 0; j < np; ++j) {
                                const float* bp = pack + (xi * per_block + j) * panel;
                                float* c = sums + xi * sum_ps + j * nr;
                                if (uk.rowa_fn)  // Y's rows read in place
                                    uk.rowa_fn(nb, ay, bp, c, cbp, false, ld);
                                else {
                                    if (j == 0)
                                        pack_a(StridedA{ay, ld, 1}, 0, mr, 0, nb,
                                               static_cast<int>(mr), ap);
                                    uk.fn(nb, ap, bp, c, cbp, false, mr);
                                }
                            }
                        }
                    }
                    Span s(tp, "wino_wei");
                    for (dim_t r = 0; r < mv; ++r)
                        for (dim_t c0 = 0; c0 < cw; c0 += kWeiChunk)  // NR, so cbp: whole chunks
                            weight_chunk(sums + r * cbp + c0, sum_ps, std::min(kWeiChunk, cw - c0),
                                         a.diff_wei + ((g * kg + k0 + r) * cg + cs + c0) * 9);
                }
            }
        }
    }
}

float* weights_buffer(const Problem& p) {
    return scratch_or_error(kWinogradUSlot,
                            static_cast<std::size_t>(kPoints * p.groups * p.ocg() * p.icg()),
                            "transformed filters");
}

}  // namespace

void set_winograd_block(int tiles) {
    g_block_tiles = std::max(tiles, 0);
}

void set_winograd_split(bool always) {
    g_split_steps = always;
}

void set_winograd_unfused(bool unfused) {
    g_unfused = unfused;
}

bool winograd_applies(const Problem& p) {
    return p.ndims == 2 && p.kernel[0] == 3 && p.kernel[1] == 3 && p.stride[0] == 1 &&
           p.stride[1] == 1 && p.dilation[0] == 1 && p.dilation[1] == 1;
}

namespace {
int g_winograd_mode = 0;
}

void set_winograd(int mode) {
    g_winograd_mode = mode;
}

bool winograd_pays(const Problem& p, Pass pass) {
    if (g_winograd_mode == 2) return false;
    if (!winograd_applies(p) || p.icg() < 16 || p.ocg() < 16) return false;
    const Geom q = geom_of(p, pass);
    // With AVX2's microkernel (no AVX-512) from 16 tiles: there the 14x14 layers' GEMMs run
    // at about half the peak. Zen 3, one process, best of 20 alternating, prepared weights,
    // winograd against auto's other choice (ms): 14x14, 256 channels, forward 1.94-1.98 against
    // 2.61-3.51, backward data 1.98-2.28 against 2.19-2.83; 128 channels 0.49 / 0.91 and 0.41 /
    // 0.56; 64 channels 0.19 / 0.30 and 0.19 / 0.20. At 12x12 (9 tiles) the backward data lost
    // (1.82 against 1.68), at 7x7 (4 tiles) both (6.1 against 3.6, 6.2 against 3.1).
    if (pass != Pass::BackwardWeight) return q.tiles() >= (avx512_selected() ? 32 : 16);
    if (q.tiles() < 32 && (q.tiles() < 8 || q.tiles() * std::min(q.cg, q.kg) < 2048)) return false;
    // The weight gradient rewrites its 36 sums of K x C per block of tiles: at most 64 MiB
    // (ResNet-50's largest, 512 x 512, are 36 MiB).
    return std::size_t{kPoints} * static_cast<std::size_t>(p.oc * p.icg()) * sizeof(float) <=
           (std::size_t{64} << 20);
}

namespace {
void check_applies(const Problem& p, Pass pass) {
    if (winograd_applies(p)) return;
    throw Error(std::string("winograd: ") + pass_name(pass) + " of " + to_descriptor(p) +
                ": needs " + kWinogradRule);
}
}  // namespace

std::size_t winograd_weights_size(const Problem& p) {
    return static_cast<std::size_t>(kPoints * p.groups * p.ocg() * p.icg());
}

void prepare_winograd_weights(const Problem& p, Pass pass, const float* wei, float* u,
                              Profiler* prof) {
    transform_weights(p, wei, pass == Pass::BackwardData, u, prof);
}

namespace {
// The transformed filters of a call: prepared, or transformed into scratch now.
const float* call_weights(const Problem& p, Pass pass, const ConvArgs& a, Profiler* prof) {
    if (a.prepared)
        if (const float* u = a.prepared->winograd(p, pass)) return u;
    float* u = weights_buffer(p);
    transform_weights(p, a.wei, pass == Pass::BackwardData, u, prof);
    return u;
}
}  // namespace

void forward_winograd(const Problem& p, const ConvArgs& a, Profiler* prof) {
    check_applies(p, Pass::Forward);
    const float* u = call_weights(p, Pass::Forward, a, prof);
    run_tiles(geom_of(p, Pass::Forward), a.src, u, a.bias, a.dst, prof);
}

void backward_weight_winograd(const Problem& p, const ConvArgs& a, Profiler* prof) {
    check_applies(p, Pass::BackwardWeight);
    const Geom q = geom_of(p, Pass::Forward);
    // All tiles in one block where they fit (split steps below), not a block a thread: each
    // thread's sums are the size of dW's 36 transformed points, written and then added up, for
    // a reduction of only its tiles. res3a_branch2b at batch 1 (49 tiles, 128 x 128 filters),
    // harness alternating the two in one process, 2 threads, 4 runs on a noisy machine:
    // 1.29-1.93 -> 0.93-1.25 ms (split with the points shared, 0.93-1.48). In the benchmark
    // against oneDNN, 3 runs each alternating the two builds: 1.03, 1.18, 1.75 -> 0.91, 0.61,
    // 0.65 ms (the earlier split steps' slow runs were those of side by side too).
    // Split steps also where each thread's sums would pass 8 MiB, and then in blocks of up to
    // 48 MiB of V and Y (not 96 tiles): the shared sums (9.4 MiB for 256 x 256 filters) are
    // read and written once a block. Batch 32, harness, 2 threads, noisy: res4a_branch2b
    // (512 tiles) 28-32 -> 21-24 ms in one block, res5a_branch2b (128) 28-31 -> 25-27.
    // One block whose 36 points of one 32-column panel fit in 512 KiB (113 tiles and fewer,
    // batch 1) runs fused_weight_gradient instead of split steps: res3a_branch2b, bench, one
    // layer, 30 runs alternating the builds: 0.596-1.250 ms (6 runs above 0.8) -> 0.577-0.749
    // (none; medians 0.643 -> 0.608, oneDNN's 1.02).
    const int threads = omp_get_max_threads();
    const auto acc_bytes =
        std::size_t{kPoints} * static_cast<std::size_t>(p.oc * q.cg) * sizeof(float);
    dim_t tb = block_tiles(q);
    bool side = (q.tiles() + tb - 1) / tb * q.groups >= threads && acc_bytes <= (8u << 20);
    if (g_split_steps) side = false;
    if (g_block_tiles == 0) {
        const dim_t most = most_tiles(q);
        if (q.tiles() <= most) side = false;
        if (!side) {
            const dim_t per_tile = kPoints * (q.cg + q.kg) * dim_t{sizeof(float)};
            tb = std::min(q.tiles(), std::max(most, (dim_t{48} << 20) / per_tile / 16 * 16));
        }
    }
    const dim_t nblocks = (q.tiles() + tb - 1) / tb;
    if (!side && nblocks == 1 && !g_unfused && fused_applies(tb))
        return fused_weight_gradient(q, a, prof);
    const auto v_floats = static_cast<std::size_t>(kPoints * point_stride(q.cg, row_len(tb)));
    const auto y_floats = static_cast<std::size_t>(kPoints * point_stride(q.kg, row_len(tb)));
    const auto w_floats = static_cast<std::size_t>(work_floats(q));
    // The sums: [g][xi][k][c], their points a cache line further apart than K x C (64 KiB apart
    // for 128 x 128, the final transform's 36 reads of a filter fell in one cache set).
    const dim_t acc_stride = point_stride(q.kg, q.cg);
    const auto acc_floats = static_cast<std::size_t>(kPoints * q.groups * acc_stride);
    // One block's three steps: V (inputs), Y (output gradients), acc += Y V^T per point.
    const auto block = [&](dim_t g, Block b, float* v, float* yy, float* acc, bool first,
                           bool split, Profiler* tp, const auto& loop) {
        const dim_t nb = b.t1 - b.t0, ld = row_len(nb), cg = q.cg, kg = q.kg;
        transform_inputs(q, g, b, a.src, v, tp, loop);
        transform_grads(q, g, b, a.diff_dst, yy, point_stride(kg, ld), 0, tp, loop);
        Span s(tp, "gemm");
        const auto rows = [&](dim_t k0, dim_t k1) {  // acc's rows [k0, k1) of every point
            for (int xi = 0; xi < kPoints && k0 < k1; ++xi)
                sgemm(k1 - k0, cg, nb, StridedA{yy + xi * point_stride(kg, ld) + k0 * ld, ld, 1},
                      StridedB{v + xi * point_stride(cg, ld), 1, ld},
                      acc + (g * kPoints + xi) * acc_stride + k0 * cg, cg, !first);
        };
        if (!split) return rows(0, kg);
        // Split steps: each thread a share of the rows over all points, the share of the rows
        // it transforms below (a share of the points left the transform reading the other
        // thread's sums).
        const auto nt = static_cast<dim_t>(omp_get_max_threads());
        loop(nt, [&](dim_t i, float*) { rows(kg * i / nt, kg * (i + 1) / nt); });
    };
    // The sums of each thread (side by side) or of all (split), [g][xi][k][c], and which
    // groups each has written (its first block of a group overwrites).
    std::vector<float*> accs;
    std::vector<std::vector<char>> wrote;
    if (side) {
        // Blocks side by side, each thread its own V, Y and sums (added up below).
        reserve_scratch(
            {{kVSlot, v_floats + w_floats}, {kMSlot, y_floats}, {kWinogradUSlot, acc_floats}});
        accs.assign(static_cast<std::size_t>(threads), nullptr);
        wrote.assign(static_cast<std::size_t>(threads),
                     std::vector<char>(static_cast<std::size_t>(q.groups), 0));
        ThreadProfilers tps(prof);
        ParallelError err;  // (the slots are reserved; the blocks' GEMMs may allocate)
#pragma omp parallel
        {
            float* v = scratch(kVSlot, v_floats + w_floats);
            float* work = v + v_floats;
            float* yy = scratch(kMSlot, y_floats);
            float* acc = scratch(kWinogradUSlot, acc_floats);
            Profiler* tp = tps.mine();
            const auto id = static_cast<std::size_t>(omp_get_thread_num());
            accs[id] = acc;
            const auto serial = [&](dim_t count, const auto& body) {
                for (dim_t i = 0; i < count; ++i) body(i, work);
            };
#pragma omp for schedule(dynamic) collapse(2)
            for (dim_t g = 0; g < q.groups; ++g)
                for (dim_t bi = 0; bi < nblocks; ++bi)
                    err.run([&] {
                        char& w = wrote[id][static_cast<std::size_t>(g)];
                        block(g, Block{bi * tb, std::min(q.tiles(), (bi + 1) * tb)}, v, yy, acc, !w,
                              false, tp, serial);
                        w = 1;
                    });
        }
        err.rethrow();
    } else {
        // Few blocks: each step of a block split over the threads.
        reserve_scratch({{kWinogradWorkSlot, w_floats}});
        float* v = scratch_or_error(kVSlot, v_floats, "transformed tiles");
        float* yy = scratch_or_error(kMSlot, y_floats, "transformed gradients");
        accs.push_back(scratch_or_error(kWinogradUSlot, acc_floats, "transformed sums"));
        wrote.assign(1, std::vector<char>(static_cast<std::size_t>(q.groups), 1));
        const auto split = [&](dim_t count, const auto& body) {
            ParallelError err;
#pragma omp parallel
            {
                float* work = scratch(kWinogradWorkSlot, w_floats);
#pragma omp for schedule(static)
                for (dim_t i = 0; i < count; ++i) err.run([&] { body(i, work); });
            }
            err.rethrow();
        };
        for (dim_t g = 0; g < q.groups; ++g)
            for (dim_t bi = 0; bi < nblocks; ++bi)
                block(g, Block{bi * tb, std::min(q.tiles(), (bi + 1) * tb)}, v, yy, accs[0],
                      bi == 0, true, prof, split);
    }
    // dW[k][c] = G^T (sum of the threads' M) G, 16 filters at a time (36 runs of 16 floats read
    // from each sum, the transform vectorised over the 16). One sum (split steps) is read in
    // place; the threads' sums are added in float (for two, the correctly rounded sum, as in
    // double before).
    Span s(prof, "wino_wei");
    const dim_t kg = q.kg, cg = q.cg;
    std::vector<std::vector<const float*>> sums(static_cast<std::size_t>(q.groups));  // [g]
    for (std::size_t t = 0; t < accs.size(); ++t)
        for (dim_t g = 0; g < q.groups; ++g)
            if (accs[t] && wrote[t][static_cast<std::size_t>(g)])
                sums[static_cast<std::size_t>(g)].push_back(accs[t] + g * kPoints * acc_stride);
#pragma omp parallel for collapse(2) schedule(static) if (p.oc * cg >= 4096)
    for (dim_t g = 0; g < q.groups; ++g)
        for (dim_t k = 0; k < kg; ++k)
            for (dim_t c0 = 0; c0 < cg; c0 += kWeiChunk) {
                const dim_t cn = std::min(kWeiChunk, cg - c0), at = k * cg + c0;
                float* dw = a.diff_wei + ((g * kg + k) * cg + c0) * 9;
                const auto& from = sums[static_cast<std::size_t>(g)];
                if (from.size() == 1 && cn == kWeiChunk) {
                    weight_chunk(from[0] + at, acc_stride, cn, dw);
                    continue;
                }
                float m[kPoints][kWeiChunk] = {};  // zero past cn
                for (const float* f : from)
                    for (int xi = 0; xi < kPoints; ++xi)
                        for (dim_t e = 0; e < cn; ++e) m[xi][e] += f[at + xi * acc_stride + e];
                weight_chunk(m[0], kWeiChunk, cn, dw);
            }
}

void backward_data_winograd(const Problem& p, const ConvArgs& a, Profiler* prof) {
    check_applies(p, Pass::BackwardData);
    const float* u = call_weights(p, Pass::BackwardData, a, prof);
    run_tiles(geom_of(p, Pass::BackwardData), a.diff_dst, u, nullptr, a.diff_src, prof);
}

// The buffers of the calls above, by the same choices (block_tiles, side by side or split steps,
// fused), in floats: V, M or Y and the transforms' work per thread (or once, plus the work per
// thread, for split steps), the transformed filters or the sums, and each thread's GEMM packing.
dim_t winograd_work(const Problem& p, Pass pass) {
    if (!winograd_applies(p)) return 0;
    const dim_t threads = omp_get_max_threads();
    const Geom q = geom_of(p, pass == Pass::BackwardWeight ? Pass::Forward : pass);
    const dim_t w = work_floats(q);
    dim_t floats = 0;
    if (pass != Pass::BackwardWeight) {
        const dim_t tb = block_tiles(q), ld = row_len(tb);
        const dim_t v = sat_mul(kPoints, sat_add(sat_mul(q.cg, ld), 16));
        const dim_t m = sat_mul(kPoints, sat_add(sat_mul(q.kg, ld), 16));
        const dim_t u = sat_mul({kPoints, p.groups, p.ocg(), p.icg()});
        // Side by side: V, M and work per thread; split: V and M once, work per thread.
        floats = sat_add(u, sat_mul(threads, sat_add(sat_add(v, m), w)));
    } else {
        // backward_weight_winograd's choice of blocks, then the larger of its paths.
        const dim_t acc_floats =
            sat_mul(kPoints, sat_mul(q.groups, sat_add(sat_mul(q.kg, q.cg), 16)));
        const dim_t most = most_tiles(q);
        const dim_t per_tile = kPoints * (q.cg + q.kg) * dim_t{sizeof(float)};
        const dim_t tb =
            std::max(block_tiles(q),
                     std::min(q.tiles(), std::max(most, (dim_t{48} << 20) / per_tile / 16 * 16)));
        const dim_t ld = row_len(tb);
        const dim_t v = sat_mul(kPoints, sat_add(sat_mul(q.cg, ld), 16));
        const dim_t y = sat_mul(kPoints, sat_add(sat_mul(q.kg, ld), 16));
        const dim_t side = sat_mul(threads, sat_add(sat_add(v, y), sat_add(acc_floats, w)));
        const dim_t split = sat_add(sat_add(v, y), sat_add(acc_floats, sat_mul(threads, w)));
        // fused_weight_gradient: V of all tiles, each thread's Y rows, packed V and sums.
        const MicroKernel& uk = microkernel();
        const dim_t mr = uk.mr, nr = uk.nr, nb = q.tiles(), all_ld = row_len(nb);
        const dim_t panel = sat_mul(nb, nr);
        const dim_t per_block = std::max<dim_t>(
            1, static_cast<dim_t>(kFusedPackBytes / sizeof(float)) / sat_mul(kPoints, panel));
        const dim_t sum_ps = sat_add(sat_mul({mr, per_block, nr}), 16);
        const dim_t mine = sat_add(sat_add(w, sat_mul(kPoints, sat_add(sat_mul(mr, all_ld), 16))),
                                   sat_add(sat_mul({kPoints, per_block, panel}),
                                           sat_add(sat_mul(kPoints, sum_ps), sat_mul(mr, nb))));
        const dim_t fused =
            sat_add(sat_mul(kPoints, sat_add(sat_mul(q.cg, all_ld), 16)), sat_mul(threads, mine));
        floats = std::max({side, split, fused});
    }
    return sat_add(sat_mul(floats, dim_t{sizeof(float)}),
                   sat_mul(threads, per_thread_bytes(p, kGemmPackBytes)));
}

}  // namespace convlab::detail
