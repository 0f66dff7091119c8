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
//
// This file: the transforms of inputs, outputs and filters, the forward and backward data tiles,
// the rules and the work memory; winograd_wgrad.cpp: the weight gradient.
#include "omp_compat.hpp"
#include "x86.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "winograd_internal.hpp"

namespace convlab::detail {

namespace {

// The forward GEMMs' reduction over channels in blocks of 256 (their partial sums added), not
// in one run: the rounding of long sums in the transformed domain is what the output transform
// amplifies most. Modelled in double against fp32 (512 channels, Lavin's points): 1.9e-5 of the
// rms in one run of 512 (what the GEMM's blocking chose), 9.8e-6 with 256, 8.0e-6 with 128
// (which cost res4a_branch2b and res5a_branch2b 5-15% at batch 32).
constexpr dim_t kReductionBlock = 256;

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

}  // namespace

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

namespace {

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

}  // namespace

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

namespace {

// The tiles of one block through the three steps, for group g, the products under tuning. Each
// step's loop runs over [0, count) split as loop() decides (all on this thread, or an omp for of
// the caller's team).
template <class Loop>
void run_block(const Geom& q, const Tuning& tuning, dim_t g, Block b, const float* src,
               const float* u, const float* bias, float* dst, float* v, float* mm, Profiler* tp,
               const Loop& loop) {
    const dim_t nb = b.t1 - b.t0, ld = row_len(nb), cg = q.cg, kg = q.kg;
    transform_inputs(q, g, b, src, v, tp, loop);
    {
        Span s(tp, "gemm");
        loop(kPoints, [&](dim_t xi, float*) {
            gemm(tuning, kg, nb, cg, StridedA{u + (g * kPoints + xi) * kg * cg, cg, 1},
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

}  // namespace

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
// 32 MiB; Tuning::winograd_block overrides (tests).
dim_t block_tiles(const Geom& q, const Tuning& t) {
    if (t.winograd_block > 0) return std::min<dim_t>(t.winograd_block, q.tiles());
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

namespace {

void run_tiles(const Geom& q, const Tuning& t, const float* src, const float* u, const float* bias,
               float* dst, Profiler* prof) {
    const dim_t tb = block_tiles(q, t);
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
                        run_block(q, t, g, Block{bi * tb, std::min(q.tiles(), (bi + 1) * tb)}, src,
                                  u, bias, dst, v, mm, tp, serial);
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
            run_block(q, t, g, b, src, u, bias, dst, v, mm, prof, split);
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

float* weights_buffer(const Problem& p) {
    return scratch_or_error(kWinogradUSlot,
                            static_cast<std::size_t>(kPoints * p.groups * p.ocg() * p.icg()),
                            "transformed filters");
}

}  // namespace

bool winograd_applies(const Problem& p) {
    return p.ndims == 2 && p.kernel[0] == 3 && p.kernel[1] == 3 && p.stride[0] == 1 &&
           p.stride[1] == 1 && p.dilation[0] == 1 && p.dilation[1] == 1;
}

bool winograd_pays(const Problem& p, Pass pass, const Tuning& t) {
    if (t.winograd == Rule::Never) return false;
    if (t.winograd == Rule::Always) return winograd_applies(p);
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

void check_applies(const Problem& p, Pass pass) {
    if (winograd_applies(p)) return;
    throw Error(std::string("winograd: ") + pass_name(pass) + " of " + to_descriptor(p) +
                ": needs " + kWinogradRule);
}

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
    run_tiles(geom_of(p, Pass::Forward), a.tuning, a.src, u, a.bias, a.dst, prof);
}
void backward_data_winograd(const Problem& p, const ConvArgs& a, Profiler* prof) {
    check_applies(p, Pass::BackwardData);
    const float* u = call_weights(p, Pass::BackwardData, a, prof);
    run_tiles(geom_of(p, Pass::BackwardData), a.tuning, a.diff_dst, u, nullptr, a.diff_src, prof);
}

// The buffers of the calls above, by the same choices (block_tiles, side by side or split steps,
// fused), in floats: V, M or Y and the transforms' work per thread (or once, plus the work per
// thread, for split steps), the transformed filters or the sums, and each thread's GEMM packing.
dim_t winograd_work(const Problem& p, Pass pass, const Tuning& t) {
    if (!winograd_applies(p)) return 0;
    const dim_t threads = omp_get_max_threads();
    const Geom q = geom_of(p, pass == Pass::BackwardWeight ? Pass::Forward : pass);
    const dim_t w = work_floats(q);
    dim_t floats = 0;
    if (pass != Pass::BackwardWeight) {
        const dim_t tb = block_tiles(q, t), ld = row_len(tb);
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
            std::max(block_tiles(q, t),
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
