// implicit_gemm's shifted tiles: the forward (and the stride-1 backward data through FlipRot)
// computed transposed from padded stride-phase planes (Shifted), W^T in panels (ShiftedPanels),
// and when they pay.
#include "omp_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "implicit_gemm_internal.hpp"

namespace convlab::detail {

// Width Wh of the phase planes' rows along an axis (stride s, dilation d, padding pb, input in,
// output out, k taps): the narrowest at which each tap k d of each kept output o reads, at
// xx = o + k d / s of phase (k d) mod s, either a column of its own row (xx < Wh) or, past the
// end, the next row's column xx - Wh, which must be left padding while the value the tap wants
// lies outside the input too. At least out, at most out + (k-1) d / s, which always holds.
dim_t shared_pad_width(dim_t s, dim_t d, dim_t pb, dim_t in, dim_t out, dim_t k) {
    const dim_t widest = out + (k - 1) * d / s;
    const auto iw = [&](dim_t xx, dim_t ph) { return xx * s + ph - pb; };
    for (dim_t wh = out; wh < widest; ++wh) {  // at least out: p = oh Wh + ow
        bool ok = true;
        for (dim_t t = 0; t < k && ok; ++t) {
            const dim_t ph = t * d % s;
            for (dim_t o = 0; o < out && ok; ++o) {
                const dim_t xx = o + t * d / s;
                if (xx < wh) continue;
                const dim_t want = iw(xx, ph), got = iw(xx - wh, ph);
                ok = xx - wh < wh && (want < 0 || want >= in) && (got < 0 || got >= in);
            }
        }
        if (ok) return wh;
    }
    return widest;
}

namespace {
// The weight gradient's tiles: wide enough that the dropped padding columns cost less than the
// gathers they save: outputs at least 14 wide, with 32 or more output channels per group.
// res4a_branch2b (3x3, 14x14; 2 of its 16 plane columns dropped) against im2col^T gathered, 2
// threads, min of 2-3 alternating medians: batch 1 1.31 -> 1.24 ms, batch 4 6.03 -> 5.29,
// batch 32 44.9 -> 38.6. At 7x7 (res5a_branch2b) it tied: 1.40 / 1.39, 48.2 / 48.4.
bool shifted_pays(const Problem& p) {
    return geom3(p).out[2] >= 14 && p.ocg() >= 32;
}
}  // namespace

bool shifted_possible(const Problem& p) {
    const Geom3 g = geom3(p);
    const MicroKernel& uk = microkernel();
    if (!uk.shifted_row_fn[1] || g.k[0] != 1 || g.in[0] != 1 || g.s[0] != 1 ||
        p.kernel_spatial() < 2)
        return false;
    const dim_t npan = (p.ocg() + 31) / 32, rows = sat_mul(p.icg(), p.kernel_spatial());
    // W^T (the weights' size, rounded up to panels) within 16 MiB, the planes within 4 MiB
    // (products checked: strides of 2^31 overflow them).
    if (sat_mul({p.groups, npan, 32, rows, dim_t{sizeof(float)}}) > (dim_t{16} << 20)) return false;
    if (!Shifted::narrowest_fits(p.icg(), g, g.out[1] + (g.k[1] - 1) * g.d[1] / g.s[1] + 1))
        return false;
    const Shifted sg(p);
    return sat_mul(sg.size(), dim_t{sizeof(float)}) <= (dim_t{4} << 20);
}

// The weight gradient from the planes: dW_g^T (rows x K/G) = X' dY_g^T over the positions,
// 12 reduction rows (each contiguous along the positions from its offset) by 32 output
// channels of dY^T packed with zeros at the dropped positions. Its packed dY^T (K/G x
// positions) and dW (partials of whole images per thread) within 4 MiB.
bool use_shifted_wgrad(const Problem& p, const Tuning& t) {
    if (t.shifted == Rule::Never || !microkernel().row_runs_fn[0][12] || !shifted_possible(p))
        return false;
    const Shifted sg(p);
    const dim_t npan = (p.ocg() + 31) / 32;
    if (static_cast<std::size_t>(npan * 32 * sg.npos) * sizeof(float) > (4u << 20)) return false;
    // Read by taps with whole images per thread (grouped, a tile over several): any width, and
    // a dW of any size (beyond 4 MiB the threads split its panels, no partials). res5a_branch2b
    // (7x7, 512 channels), harness, 2 threads, against the merged GEMM: batch 32 37.4 -> 30.8
    // ms, batch 8 9.33 -> 7.80, batch 4 4.63 -> 4.38; 256 channels at batch 32 10.4 -> 8.0. At
    // batch 1 (one image a tile of 42 positions) it lost, 1.19 -> 1.69.
    if (wgrad_taps_apply(p, t) && images_in_parallel(p.mb) && p.ocg() >= 32) return true;
    if (static_cast<std::size_t>(p.oc * p.icg() * p.kernel_spatial()) * sizeof(float) > (4u << 20))
        return false;
    return t.shifted == Rule::Always || shifted_pays(p);
}

namespace {
// Whether forward_shifted, one image at a time, splits the panels of W^T between the threads
// (each reading all of the planes) rather than the tiles (each reading all of W^T): where the
// planes are the smaller. 14x14 (res4a_branch2b) batch 1 measured 1.15 ms by panels, 2.2 by
// tiles; 56x56 (res2a_branch2b) 1.43 by tiles, 1.70 by panels.
bool shifted_by_panels(const Problem& p, const Shifted& sg) {
    return sg.cg * sg.plane * sg.sh * sg.sw < (p.ocg() + 31) / 32 * 32 * sg.rows;
}

// One image of one group split by panels: each thread packs a panel just before that panel's
// tiles (into a buffer of its own that stays in L2 while they pass) rather than all of W^T
// first, written to memory and read back.
bool packs_by_panel(const Problem& p, const Shifted& sg) {
    return p.mb * p.groups == 1 && shifted_by_panels(p, sg);
}

// One image packed panel by panel (packs_by_panel) pays below 196 positions too: 7x7 with 512
}  // namespace

// The forward's row tiles drop nothing and skip the padding rows' taps, so output width does
// not matter; W^T is packed once per call, so it pays from 196 output positions per group
// (a 14x14 image, four 7x7 ones): at batch 1, 7x7 (res5a_branch2b) measured 1.55 against
// im2col's 1.60 ms forward and 2.1 against col2im's 1.35 backward, where packing FlipRot(W)^T
// took 1 ms.
// Short reductions too (below 256 rows), with the images side by side on the threads: on the
// machine of 2026-11-23 (2 FMA ports, 2 MiB L2 per core), cv harness, 2 threads, min of 2-3
// alternating medians against im2col's GEMM: conv1 (147 rows) batch 32 47.8 -> 41.2 ms, batch 4
// 6.02 -> 4.93; 3x3 at 56x56 with 8 input channels (72 rows), batch 32, 6.13 -> 4.94, with 16
// 12.7 -> 10.5. (An earlier machine with half the peak per core measured conv1 at batch 32 the
// other way, 47.8 against 42.9, and these were left to the GEMM.)
//
// channels (res5a_branch2b) at batch 1, harness, 2 threads, 3 interleaved rounds against the
// GEMM, medians 1.34-1.40 -> 1.19-1.30 ms (min 1.21-1.34 -> 1.07-1.12). Not with flip (the
// backward data's FlipRot), whose packing costs more: 0.60-0.78 ms of that layer's 1.64-1.83,
// against col2im's 1.2; unless FlipRot(W) was prepared once (prepare_weights): then
// res5a_branch2b's backward data at batch 1, harness, 2 threads, 3 rounds, took 0.854-0.857 ms
// against col2im's 1.162-1.165 (14x14, 256 channels: 0.926-0.928 against 0.994-0.995).
bool use_shifted(const Problem& p, const Tuning& t, bool flip, bool prepared) {
    if (t.shifted == Rule::Never || !shifted_possible(p)) return false;
    if (t.shifted == Rule::Always) return true;
    // AVX2 (narrow_tiles): only rows of 28 or more outputs, tiles of 9 to 12 positions. AMD EPYC
    // (Zen 3), auto with the weights prepared, one process, best of 20 (batch 32: 4)
    // alternating, GEMM -> tiles (ms): conv1 batch 1 2.97 -> 2.42, batch 32 180.6 -> 169.0 (the
    // 56x56 and 28x28 3x3 layers take winograd first); tied or lost at batch 1: 3x3 at 14x14,
    // forward 2.00 -> 1.97, backward data 1.72 -> 1.90; at 7x7 3.19 -> 4.10 and 3.25 -> 4.35.
    if (narrow_tiles() && geom3(p).out[2] < 28) return false;
    return p.ocg() >= 32 && (p.mb * p.out_spatial() >= 196 ||
                             ((!flip || prepared) && packs_by_panel(p, Shifted(p))));
}

// With flip, a.wei is the weights of the problem whose backward data p is (K and C swapped):
// p's weights are their FlipRot, read while packing.
// prepared: the panels (ShiftedPanels) packed once by prepare_weights, or null (packed here).
void forward_shifted(const Problem& p, const ConvArgs& a, Profiler* prof, bool flip,
                     const float* prepared) {
    const MicroKernel& uk = microkernel();
    Shifted sg(p);
    const Geom3& g = sg.g;
    const dim_t kg = p.ocg(), cg = sg.cg, rows = sg.rows, kh_n = g.k[1];
    const dim_t oh_n = g.out[1], ow_n = g.out[2], cols = oh_n * ow_n;
    const dim_t wh = sg.wh, per_kh = rows / kh_n;
    const dim_t npan = (kg + 31) / 32, is = g.in[1] * g.in[2];
    // Whole output rows in the lanes (row_lanes_apply: conv1's 112), 4 channels at a time.
    const Tuning& tuning = a.tuning;
    const bool lanes = row_lanes_apply(p, tuning);
    // Tiles: each output row cut into segs runs of at most kShiftedRowMax positions (in the
    // lanes: one tile, the whole row).
    const dim_t segs = lanes ? 1 : (ow_n + kShiftedRowMax - 1) / kShiftedRowMax;
    const dim_t ntiles = oh_n * segs;
    // The taps kh that read inside the input, [kh_lo, kh_hi) per output row: with the reduction
    // rows in (kh, ci, kw) order, a row's tiles run over that range of rows only.
    std::vector<dim_t> kh_lo(static_cast<std::size_t>(oh_n)), kh_hi(kh_lo.size());
    for (dim_t oh = 0; oh < oh_n; ++oh)
        valid_range(oh * g.s[1] - g.pb[1], g.d[1], g.in[1], kh_n,
                    kh_lo[static_cast<std::size_t>(oh)], kh_hi[static_cast<std::size_t>(oh)]);
    // 3 wide, stride 1, padded by 1 along w (edges, below) and stride 1 along h: the tiles read
    // the input itself, rows W apart, the edge tiles skipping the padding columns' taps and each
    // output row only the kh whose rows lie inside (kh_lo, kh_hi): no planes are padded.
    const bool in_place = unpadded_tiles_apply(p, tuning);
    if (in_place)
        sg.make_input_offsets();
    else
        sg.make_offsets(true);
    const dim_t row_stride = in_place ? g.in[2] : wh;  // between output rows, in the input
    const std::vector<dim_t>& off = sg.off;
    const ShiftedPanels panels(p, sg, flip);
    const char* pack_name = flip ? "fliprot" : "pack_wei";
    // 3 wide, stride 1, padded by 1 along w (the 3x3 layers, and their backward data): a row's
    // first and last tiles skip the taps that read the padding column (shifted_edge_fn), 2 of
    // every 21 multiply-adds of a 7-wide row, 1 of 21 of a tile at one edge.
    const bool edges = edge_tiles_apply(p, tuning);
    // The input channels of image n, group gi.
    const auto image = [&](dim_t n, dim_t gi) { return a.src + (n * p.ic + gi * cg) * is; };
    // Share id of nt of the planes of image n, group gi into the planes at xp.
    const auto pad = [&](dim_t n, dim_t gi, float* xp, dim_t id, dim_t nt) {
        sg.pad(image(n, gi), xp, id, nt);
    };
    // Tiles [t0, t1) of image n, group gi, panel jp (its W^T at w). With rowbuf (whole rows of
    // tiles, t0 and t1 multiples of segs), each output row of the panel's channels is computed
    // into rowbuf (32 x OW) and then streamed to dst (stream_rows).
    const bool stream_lanes = lanes && streams_output(p, tuning);
    const bool whole_images = images_in_parallel(p.mb * p.groups);
    // Where the streamed rows are fenced (stream_fence): at the end of each call of tiles, or,
    // with whole images per thread, once an image's tiles are done. conv1 at batch 32, harness:
    // with a fence per tile (4 channels of a row) 37.1 ms, where it had just run in 34.8
    // without; one per image measured as none, alternating, 35.37/35.41 against 35.40/35.65.
    const bool fence_per_call = stream_lanes && !whole_images;
    const auto tiles = [&](dim_t n, dim_t gi, const float* xp, dim_t jp, const float* w, dim_t t0,
                           dim_t t1, float* rowbuf) {
        float* d = a.dst + (n * p.oc + gi * kg + jp * 32) * cols;
        const int nv = static_cast<int>(std::min<dim_t>(32, kg - jp * 32));
        if (lanes) {  // output row t, the panel's channels 4 at a time
            for (dim_t t = t0; t < t1; ++t) {
                const dim_t r0 = kh_lo[static_cast<std::size_t>(t)] * per_kh,
                            r1 = kh_hi[static_cast<std::size_t>(t)] * per_kh;
                for (int o = 0; o < nv; o += 4)
                    uk.row_lanes_fn[ow_n / 16](r1 - r0, xp + t * row_stride, off.data() + r0,
                                               w + r0 * 32 + o, 32, d + o * cols + t * ow_n, cols,
                                               std::min(4, nv - o), stream_lanes);
            }
            if (fence_per_call) stream_fence();
            return;
        }
        for (dim_t t = t0; t < t1; ++t) {
            const dim_t oh = t / segs, sgi = t % segs;
            const dim_t ow0 = ow_n * sgi / segs, len = ow_n * (sgi + 1) / segs - ow0;
            const dim_t r0 = kh_lo[static_cast<std::size_t>(oh)] * per_kh,
                        r1 = kh_hi[static_cast<std::size_t>(oh)] * per_kh;
            float* c = rowbuf ? rowbuf + ow0 : d + oh * ow_n + ow0;
            const int edge = edges ? (ow0 == 0 ? 1 : 0) + (ow0 + len == ow_n ? 2 : 0) : 0;
            (edge ? uk.shifted_edge_fn[edge - 1][len] : uk.shifted_row_fn[len])(
                r1 - r0, xp + oh * row_stride + ow0, off.data() + r0, w + r0 * 32, c,
                rowbuf ? ow_n : cols, nv);
            if (rowbuf && sgi == segs - 1) stream_rows(rowbuf, ow_n, nv, ow_n, d + oh * ow_n, cols);
        }
    };
    // Split by tiles, thread id of nt runs tiles [first_tile(id, nt), first_tile(id + 1, nt)).
    const auto first_tile = [&](dim_t id, dim_t nt) { return ntiles * id / nt; };
    const std::size_t xsize = static_cast<std::size_t>(sg.size());
    // One image at a time: the (panel, tile) pairs split panel-major or the tiles split.
    const bool by_panels = shifted_by_panels(p, sg);
    const bool fused = !prepared && packs_by_panel(p, sg);  // one image: never whole_images
    // Split by tiles, every thread reads all of W^T: where it is small, each thread packs the
    // group's W^T into a buffer of its own, so that no thread writes lines that the other holds
    // in its cache from the last call. Packing lines that another core had read measured 5
    // times slower than packing one's own (harness, 64 x 576: 17 against 3.2 us; 128 x 1152:
    // 69 against 16), with the other thread waiting: res2a_branch2b at batch 1 spent 17-65 us
    // of its 1.0 ms packing.
    const bool own_wt = !prepared && !fused && !whole_images && !by_panels &&
                        npan * 32 * rows * sizeof(float) <= (1u << 20);
    // Otherwise W^T of every group packed once, the threads splitting each group's panels.
    float* packed =
        prepared || fused || own_wt ? nullptr : scratch(kPackedWeiSlot, panels.size(p.groups));
    const float* wt = prepared ? prepared : packed;
    if (packed) {
        Span s(prof, pack_name);
#pragma omp parallel if (npan * rows * 32 >= 65536)
        {
            const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
            for (dim_t gi = 0; gi < p.groups; ++gi) {
                const dim_t jp0 = npan * id / nt, jp1 = npan * (id + 1) / nt;
                if (jp0 < jp1)
                    panels.pack(a.wei, gi, jp0, jp1, packed + (gi * npan + jp0) * 32 * rows);
            }
        }
    }
    if (whole_images) {
        // Whole images per thread, panel by panel: a panel's W^T stays in cache while the
        // image's tiles pass.
        const bool stream =
            streams_output(p, tuning) && !lanes;  // (the lanes' tiles stream their own)
        ThreadProfilers tp(prof);
        ParallelError err;
#pragma omp parallel for schedule(dynamic)
        for (dim_t q = 0; q < p.mb * p.groups; ++q)
            err.run([&] {
                const dim_t n = q / p.groups, gi = q % p.groups;
                float* rowbuf = stream
                                    ? scratch(kTransposedSlot, static_cast<std::size_t>(32 * ow_n))
                                    : nullptr;
                Profiler* mine = tp.mine();
                const float* xp = image(n, gi);
                if (!in_place) {
                    Span s(mine, "pad");
                    float* planes = scratch(kSubsampleSlot, xsize);
                    pad(n, gi, planes, 0, 1);
                    xp = planes;
                }
                Span s(mine, "gemm");
                // With planes, the input of the image this thread likely takes next (q + threads)
                // is prefetched while this one's tiles run, 8 rows of tiles at a time, so that its
                // padding reads it from cache, not memory. conv1, batch 32, harness, 2 threads, 2
                // alternating rounds: pad 1.59-1.70 -> 1.10-1.13 ms, the call 35.02-35.16 ->
                // 34.76-34.79.
                if (in_place) {
                    for (dim_t jp = 0; jp < npan; ++jp)
                        tiles(n, gi, xp, jp, wt + (gi * npan + jp) * 32 * rows, 0, ntiles, rowbuf);
                    return;
                }
                const dim_t nt = omp_get_num_threads(), qn = q + nt;
                const dim_t chunk = 8 * segs, nchunks = (ntiles + chunk - 1) / chunk;
                PrefetchA next;
                if (qn < p.mb * p.groups)
                    next = PrefetchA(StridedA{image(qn / p.groups, qn % p.groups), cg * is, 1}, 0,
                                     1, 0, cg * is, npan * nchunks);
                for (dim_t jp = 0; jp < npan; ++jp)
                    for (dim_t t0 = 0; t0 < ntiles; t0 += chunk) {
                        tiles(n, gi, xp, jp, wt + (gi * npan + jp) * 32 * rows, t0,
                              std::min(t0 + chunk, ntiles), rowbuf);
                        next.step_into_l2();
                    }
                if (stream_lanes) stream_fence();
            });
        err.rethrow();
        return;
    }
    float* planes = in_place ? nullptr : scratch(kSubsampleSlot, xsize);
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t gi = 0; gi < p.groups; ++gi) {
            const float* xp = in_place ? image(n, gi) : planes;
            if (!in_place) {
                Span s(prof, "pad");
#pragma omp parallel
                {
                    const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
                    // Split by tiles, each thread pads the rows its tiles read (those from its
                    // first output row on): the lines a thread writes are then those it read in
                    // the last call, not lines the other core holds (conv1 at batch 1: 0.042 ms
                    // on one thread, 0.10 on two split by planes).
                    if (by_panels || fused)
                        pad(n, gi, planes, id, nt);
                    else
                        sg.pad_rows(image(n, gi), planes, id == 0 ? 0 : first_tile(id, nt) / segs,
                                    id == nt - 1 ? sg.hh : first_tile(id + 1, nt) / segs,
                                    id == nt - 1);
                }
            }
            if (own_wt) {
                ThreadProfilers tp(prof);
                ParallelError err;
#pragma omp parallel
                err.run([&] {
                    const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
                    float* w = scratch(kPackedWeiSlot, static_cast<std::size_t>(npan * 32 * rows));
                    {
                        Span s(tp.mine(), pack_name);
                        panels.pack(a.wei, gi, 0, npan, w);
                    }
                    Span s(tp.mine(), "gemm");
                    for (dim_t jp = 0; jp < npan; ++jp)
                        tiles(n, gi, xp, jp, w + jp * 32 * rows, first_tile(id, nt),
                              first_tile(id + 1, nt), nullptr);
                });
                err.rethrow();
                continue;
            }
            if (fused) {
                ThreadProfilers tp(prof);
                ParallelError err;
#pragma omp parallel
                err.run([&] {
                    const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
                    const dim_t all = npan * ntiles, q0 = all * id / nt, q1 = all * (id + 1) / nt;
                    float* w = scratch(kPackedWeiSlot, static_cast<std::size_t>(32 * rows));
                    for (dim_t jp = q0 / ntiles; jp < npan && jp * ntiles < q1; ++jp) {
                        {
                            Span s(tp.mine(), pack_name);
                            panels.pack(a.wei, gi, jp, jp + 1, w);
                        }
                        Span s(tp.mine(), "gemm");
                        tiles(n, gi, xp, jp, w, std::max(q0 - jp * ntiles, dim_t{0}),
                              std::min(q1 - jp * ntiles, ntiles), nullptr);
                    }
                });
                err.rethrow();
                continue;
            }
            Span s(prof, "gemm");
#pragma omp parallel
            {
                const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
                if (by_panels) {
                    const dim_t all = npan * ntiles, q0 = all * id / nt, q1 = all * (id + 1) / nt;
                    for (dim_t jp = q0 / ntiles; jp < npan && jp * ntiles < q1; ++jp)
                        tiles(n, gi, xp, jp, wt + (gi * npan + jp) * 32 * rows,
                              std::max(q0 - jp * ntiles, dim_t{0}),
                              std::min(q1 - jp * ntiles, ntiles), nullptr);
                } else {
                    for (dim_t jp = 0; jp < npan; ++jp)
                        tiles(n, gi, xp, jp, wt + (gi * npan + jp) * 32 * rows, first_tile(id, nt),
                              first_tile(id + 1, nt), nullptr);
                }
            }
        }
}

}  // namespace convlab::detail
