// winograd's weight gradient: the transforms of the output gradients (A y A^T) and of the sums
// into dW (G^T m G), by blocks of tiles side by side, by split steps, or fused for one block
// (fused_weight_gradient). The forward, the rules and the shared transforms: winograd.cpp.
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

}  // namespace

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
    const Tuning& tuning = a.tuning;
    dim_t tb = block_tiles(q, tuning);
    bool side = (q.tiles() + tb - 1) / tb * q.groups >= threads && acc_bytes <= (8u << 20);
    if (tuning.winograd_split) side = false;
    if (tuning.winograd_block <= 0) {
        const dim_t most = most_tiles(q);
        if (q.tiles() <= most) side = false;
        if (!side) {
            const dim_t per_tile = kPoints * (q.cg + q.kg) * dim_t{sizeof(float)};
            tb = std::min(q.tiles(), std::max(most, (dim_t{48} << 20) / per_tile / 16 * 16));
        }
    }
    const dim_t nblocks = (q.tiles() + tb - 1) / tb;
    if (!side && nblocks == 1 && !tuning.winograd_unfused && fused_applies(tb))
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
                sgemm(tuning, k1 - k0, cg, nb,
                      StridedA{yy + xi * point_stride(kg, ld) + k0 * ld, ld, 1},
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

}  // namespace convlab::detail
