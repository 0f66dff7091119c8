// implicit_gemm's weight gradient: dW_g = sum_n dY_g(n) * B(n)^T, the packer gathering B^T
// (im2col^T), or from the shifted planes, the pointwise rows or the sampled input.
#include "omp_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "implicit_gemm_internal.hpp"

namespace convlab::detail {

// Whether the weight gradient runs over its images merged along the reduction: where an image has
// at most 64 positions, because image by image each short product loads and stores all of dW;
// at 28x28 and 56x56 each thread's images summed in its own dW pay instead (timings:
// docs/algorithms.md, "merge_images_wgrad").
namespace {
bool merge_images_wgrad(const Problem& p, const Tuning& t) {
    if (p.mb < 2 || t.merge_wgrad == Rule::Never) return false;
    return t.merge_wgrad == Rule::Always || p.out_spatial() <= 64;
}
}  // namespace

bool merged_wgrad_applies(const Problem& p, const Tuning& t) {
    return !use_shifted_wgrad(p, t) && merge_images_wgrad(p, t);
}

// 1x1 layers with fewer output than input channels (the bottlenecks' first 1x1s) and enough
// positions summed: the product computed transposed, dW^T (C/G x K/G) = X dY^T, and then
// transposed into dW. Its packed B is then dY^T, each of its values used by C/G rows, where
// X^T's were used by only K/G. With few positions (a 7x7 or 14x14 image at batch 1)
// transposing dW would cost as much as it saves (timings: docs/algorithms.md, "swapped_wgrad").
bool swapped_wgrad(const Problem& p, const Tuning& t) {
    if (t.swap_wgrad == Rule::Never || !reads_input_1x1(p)) return false;
    return t.swap_wgrad == Rule::Always || (p.ocg() < p.icg() && p.mb * p.out_spatial() >= 512);
}

// Positions per pass of the shifted weight-gradient tiles (a run of dY^T: 256 KiB per panel).
constexpr dim_t kShiftedWgradRun = 2048;

// Images per call of the shifted weight gradient with whole images per thread: up to
// kShiftedWgradRun positions, each tile running over all of them (row_runs_fn, a run per output
// row) before it adds its 12 x 32 values to dW, and the images' input (the planes, or with taps
// the input read in place) and dY^T within 2 MiB each. Positions are the planes' (with their
// padding columns), or with taps the output's; more images a call means more multiply-adds per
// store of a tile (timings: docs/algorithms.md, "shifted_wgrad_images").
dim_t shifted_wgrad_images(const Problem& p, const Tuning& t) {
    const Shifted sg(p);
    const dim_t npan = (p.ocg() + 31) / 32;
    const bool taps = wgrad_taps_apply(p, t);
    const dim_t npos = taps ? p.out_spatial() : sg.npos;
    const dim_t per_image = std::max(taps ? p.icg() * p.in_spatial() : sg.size(), npan * npos * 32);
    return std::clamp<dim_t>(
        std::min(kShiftedWgradRun / npos, (dim_t{2} << 20) / dim_t{4} / per_image), 1, p.mb);
}

// dW_g (Kg x rows) = sum_n dY_g(n) (Kg x cols) * im2col(n)^T (cols x rows).
void backward_weight_implicit_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const dim_t kg = p.ocg(), cg = p.icg(), rows = cg * p.kernel_spatial();
    const dim_t cols = p.out_spatial(), is = p.in_spatial();
    const bool identity = im2col_is_identity(p);
    // Wide strided or 3x3 layers: from padded stride-phase planes (use_shifted_wgrad).
    const Tuning& tuning = a.tuning;
    const bool shifted = use_shifted_wgrad(p, tuning);
    Shifted sg(p);
    const dim_t npan = (kg + 31) / 32, ow_n = sg.g.out[2];
    const dim_t group = shifted ? shifted_wgrad_images(p, tuning) : 1;
    // Stride 1 (wgrad_taps_apply): the tiles read the input itself, 12 input channels of one tap
    // each (ctiles: [c0, c0 + mv), the last 13-19 as two), over only the positions whose inputs
    // lie inside it; no planes are padded and no padding is multiplied.
    const bool taps = shifted && wgrad_taps_apply(p, tuning);
    if (shifted && !taps) sg.make_offsets();  // the planes' rows (the taps find theirs)
    const dim_t ks = p.kernel_spatial();
    std::vector<std::pair<dim_t, int>> ctiles;
    for (dim_t c0 = 0; taps && c0 < cg;) {
        const dim_t left = cg - c0,
                    mv = left > 12 && left < 20 ? (left + 1) / 2 : std::min<dim_t>(12, left);
        ctiles.emplace_back(c0, static_cast<int>(mv));
        c0 += mv;
    }
    // out += sum over images [n, n + nb) of dY_g X'^T, on the calling thread (its spans into
    // prf), or with `split` on all threads (nb = 1; each thread padding channels, packing dY^T
    // rows, then computing tiles of out of its own; prf null).
    auto shifted_image = [&](dim_t g, dim_t n, dim_t nb, float* out, bool acc, bool split,
                             Profiler* prf, dim_t jp0, dim_t jp1) {
        const MicroKernel& uk = microkernel();
        const dim_t xsize = sg.size(), np = jp1 - jp0;
        float* xp = taps ? nullptr : scratch(kSubsampleSlot, static_cast<std::size_t>(nb * xsize));
        const dim_t oh_n = sg.g.out[1], nrg = (rows + 11) / 12;
        const dim_t ntiles = taps ? np * dim_t(ctiles.size()) * ks : np * nrg;
        // One image (on all threads with split, else whole images per thread): each thread
        // packs only the rows of dY^T its tiles read, a run of output rows at a time just
        // before them, into a buffer of its own (kPanelSlot) that stays in L2, instead of all
        // of dY^T first, written to memory and read back. conv1 at batch 32, harness, 2
        // threads, 3 interleaved rounds: 46.2-47.7 -> 43.8-45.9 ms; res2a_branch2b tied.
        const bool own = nb == 1;
        float* dyt =
            own ? nullptr : scratch(kPackedDySlot, static_cast<std::size_t>(np * nb * cols * 32));
        // Read by the pragma only: unused where OpenMP is off (the portable build).
        [[maybe_unused]] const int threads = split ? omp_get_max_threads() : 1;
        ParallelError err;  // (the padding and packing before the barrier cannot throw)
#pragma omp parallel num_threads(threads)
        {
            const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
            if (!taps) {
                Span s(prf, "pad");
                for (dim_t i = 0; i < nb; ++i)
                    sg.pad(a.src + ((n + i) * p.ic + g * cg) * is, xp + i * xsize, id, nt);
            }
            // dY^T by panels of 32 channels (a panel's images one after another).
            if (!own) {
                Span s(prf, "pack_dst");
                for (dim_t q = np * oh_n * id / nt; q < np * oh_n * (id + 1) / nt; ++q) {
                    const dim_t jl = q / oh_n, jp = jp0 + jl, oh = q % oh_n;
                    for (dim_t i = 0; i < nb; ++i) {
                        const float* dy = a.diff_dst + ((n + i) * p.oc + g * kg) * cols;
                        pack_transposed(dy + jp * 32 * cols + oh * ow_n, cols,
                                        std::min<dim_t>(32, kg - jp * 32), ow_n, 32,
                                        dyt + ((jl * nb + i) * cols + oh * ow_n) * 32);
                    }
                }
            }
#pragma omp barrier
            err.run([&] {
                // Tiles panel-major, so that with two panels each thread streams one panel of dY^T
                // (conv1 at batch 1: 1.6 MiB each; interleaved, both threads streamed both through
                // L2). One image: over output rows of up to 2048 positions that every tile passes
                // before the next (conv1's weight gradient at batch 1, 3 rounds: 1.69-2.00 ms ->
                // 0.98-1.31; res2a_branch2b 0.82-1.09 -> 0.77-1.05; res3a_branch2b 1.15-1.17 ->
                // 1.11). Several images (whole images): each tile over all of them. A run per
                // output row: the planes' padding columns are not multiplied (they were, as zeros
                // of dY^T: 1 of 15 at 14x14). Harness, 2 threads, alternating against that build,
                // medians, ms: batch 32 res4a_branch2b 36.8/36.8 -> 35.1/35.4,
                // res3a_branch2b 35.4/35.2 -> 34.7/34.5, res2a_branch2b 35.1/35.1 -> 34.8/34.7,
                // conv1 42.4/40.4 -> 39.9/40.0; batch 1 res4a_branch2b 1.19-1.20 -> 1.13-1.15.
                const dim_t hstep = nb > 1 ? oh_n : std::max<dim_t>(1, kShiftedWgradRun / ow_n);
                const float* rp[12];
                const Geom3& g3 = sg.g;
                const float* x0 = a.src + (n * p.ic + g * cg) * is;
                // This thread's tiles and the panels they read, [jlo, jhi]. With taps, whole groups
                // of a tile's ks taps (flushed together).
                const dim_t unit = taps ? ks : 1, units = ntiles / unit;
                const dim_t t0 = units * id / nt * unit, t1 = units * (id + 1) / nt * unit;
                // The raw tap tiles of a group (flush_tap_tiles).
                std::vector<float> tap_tiles(static_cast<std::size_t>(taps ? ks * 12 * 32 : 0));
                const dim_t per_panel = ntiles / np, jlo = t0 / per_panel,
                            jhi = t1 > t0 ? (t1 - 1) / per_panel : jlo - 1;
                const dim_t run = std::min(hstep, oh_n) * ow_n;  // positions of a run, at most
                float* mine =
                    own ? scratch(kPanelSlot, static_cast<std::size_t>((jhi - jlo + 1) * run * 32))
                        : nullptr;
                // Panel jl's dY^T from position q of the image (in the rows of this run when own).
                dim_t h0 = 0;
                const auto dy_at = [&](dim_t jl, dim_t q) -> const float* {
                    return own ? mine + ((jl - jlo) * run + q - h0 * ow_n) * 32
                               : dyt + (jl * nb * cols + q) * 32;
                };
                for (; h0 < oh_n; h0 += hstep) {
                    const dim_t nq = std::min(hstep, oh_n - h0);
                    if (own) {
                        Span s(prf, "pack_dst");
                        const float* dy = a.diff_dst + (n * p.oc + g * kg) * cols;
                        for (dim_t jl = jlo; jl <= jhi; ++jl) {
                            const dim_t jp = jp0 + jl;
                            pack_transposed(dy + jp * 32 * cols + h0 * ow_n, cols,
                                            std::min<dim_t>(32, kg - jp * 32), nq * ow_n, 32,
                                            mine + (jl - jlo) * run * 32);
                        }
                    }
                    Span s(prf, "gemm");
                    for (dim_t t = t0; t < t1; ++t) {
                        const dim_t jl = t / (ntiles / np), jp = jp0 + jl;
                        const int nv = static_cast<int>(std::min<dim_t>(32, kg - jp * 32));
                        if (!taps) {
                            const dim_t r0 = t % nrg * 12;
                            const int mv = static_cast<int>(std::min<dim_t>(12, rows - r0));
                            for (int i = 0; i < mv; ++i)
                                rp[i] = xp + h0 * sg.wh + sg.off[static_cast<std::size_t>(r0 + i)];
                            const Runs u{nb, nq, ow_n, xsize, sg.wh, cols * 32, ow_n * 32};
                            uk.row_runs_fn[0][mv](u, rp, dy_at(jl, h0 * ow_n),
                                                  out + jp * 32 * rows + r0, rows, false, nv,
                                                  acc || h0 > 0);
                            continue;
                        }
                        // Tap (kh, kw) of input channels [c0, c0 + mv): only the output rows and
                        // columns whose inputs lie inside the image, read in place. Against the
                        // planes (harness, 2 threads, 2-3 alternating rounds, medians, ms): batch
                        // 32 res4a_branch2b 34.9/34.9 -> 32.4/32.2, res3a_branch2b 35.0/35.0 ->
                        // 33.1/33.3, res2a_branch2b 35.1/35.3 -> 33.9/34.1; batch 1 res2a_branch2b
                        // 1.15-1.16 -> 1.05-1.06, res3a_branch2b 1.12-1.14 -> 1.02-1.05,
                        // res4a_branch2b 1.18-1.19 -> 1.15-1.16.
                        const dim_t tap = t % ks;
                        const auto [c0, mv] =
                            ctiles[static_cast<std::size_t>(t / ks % dim_t(ctiles.size()))];
                        const dim_t ih0 = tap / g3.k[2] * g3.d[1] - g3.pb[1],
                                    iw0 = tap % g3.k[2] * g3.d[2] - g3.pb[2];
                        dim_t qlo = 0, qhi = 0, klo = 0, khi = 0;
                        valid_range(ih0, 1, g3.in[1], oh_n, qlo, qhi);
                        valid_range(iw0, 1, g3.in[2], ow_n, klo, khi);
                        qlo = std::max(qlo, h0);
                        qhi = std::max(qlo, std::min(qhi, h0 + nq));
                        for (int i = 0; i < mv; ++i)
                            rp[i] = x0 + (c0 + i) * is + (qlo + ih0) * g3.in[2] + klo + iw0;
                        const Runs u{nb,       qhi - qlo, khi - klo, p.ic * is,
                                     g3.in[2], cols * 32, ow_n * 32};
                        // Raw into tap_tiles, the group's taps then stored together: stored each
                        // transposed, a tile wrote its 12 x 32 floats one at a time (ks apart in
                        // dW). Bench, 2 threads, 3 alternating rounds at batch 1: res4a_branch2b
                        // 1.136/1.167/1.185 -> 1.031/1.064/1.034 ms,
                        // res3a_branch2b 1.017/1.030/1.033
                        // -> 0.997/1.007/0.992, res2a_branch2b 1.017/1.043/1.042
                        // -> 1.000/1.017/1.000; 2 at batch 32: res5a_branch2b 31.8/31.4
                        // -> 30.7/31.0, res2a_branch2b 33.3/34.1 -> 32.9/33.1.
                        uk.row_runs_fn[0][mv](u, rp, dy_at(jl, qlo * ow_n + klo),
                                              tap_tiles.data() + tap * 12 * 32, 0, true, nv, false);
                        if (tap == ks - 1)
                            flush_tap_tiles(tap_tiles.data(), mv, static_cast<int>(ks),
                                            out + jp * 32 * rows + c0 * ks, rows, nv,
                                            acc || h0 > 0);
                    }
                }
            });
        }
        err.rethrow();
    };
    // out (Kg x rows) = (acc ? out : 0) + dY_g(n) * im2col(n)^T over the positions [q0, q1).
    // Strided 1x1: B^T is the input sampled at the strides, transposed (as in the forward), or
    // with whole images per thread and a stride of 2 along w, read in place (in_place).
    const Geom3 geo = geom3(p);
    const bool by_images = images_in_parallel(p.mb);
    const bool merged = !shifted && merge_images_wgrad(p, tuning);  // merged_wgrad_applies
    const std::size_t wsize = static_cast<std::size_t>(kg * rows);
    const bool in_place = by_images && wsize * sizeof(float) <= (4u << 20) && !merged &&
                          strided_wgrad_applies(p, tuning);
    const bool subsample = !in_place && can_subsample(p, 1);
    const bool deint = !subsample && !identity && can_deinterleave(p, 1);
    // Not transposed: the GEMM's B packer samples the input itself (sampled_wgrad_applies), on
    // all threads, or with whole images per thread each thread's product over its image. There
    // the copy was written first and then read (an image's sampled copy, 0.8 MiB for
    // res3a_branch1); on a Zen 5 (2026-11-29, a peak of 529 GFLOP/s for 2 threads), batch 32, 2
    // threads, harness, 3 rounds alternating, medians (ms) copy -> sampled: res3a_branch1 (256 ->
    // 512, 28x28 out) 19.4-19.8 -> 16.8-17.1, res4a_branch1 (512 -> 1024, 14x14) 17.4-18.0 ->
    // 16.5-16.9. (On the earlier Zen 4, peak 230, res4a_branch1 measured the copy
    // ahead, 31.96/31.71 against 32.70/32.53: sampling costs the same there, the GEMM twice as
    // long.) The sampled product also takes the place of the transposed one: res4a_branch2a (512 ->
    // 256, 14x14), swap on the copy 7.0-7.3 -> sampled 5.7-5.8.
    const bool sampled_images = by_images && subsample && !merged &&
                                tuning.sampled_wgrad_whole_images &&
                                sampled_wgrad_applies(p, tuning);
    // Transposed (swap): out^T (rows x Kg) = X dY_g^T, then dW_g = out^T transposed.
    const bool swap = !in_place && !sampled_images && swapped_wgrad(p, tuning);
    const bool sampled =
        subsample && !swap && (!by_images || sampled_images) && sampled_wgrad_applies(p, tuning);
    // out += dY_g(n) X_g(n)^T with X read every other float of its rows by the
    // row_runs_fn tiles (12 input channels x 32 output channels), whole image n on the
    // calling thread: dY^T packed by panels of 32 channels (at most 512 KiB, kept in L2); the
    // tiles by 12 input channels, then runs of output rows (about 256 positions, whose inputs
    // stay in L1 while the panels pass), then panels. The first panel's tiles prefetch the next
    // 12 channels' input rows into L2 a run at a time (Runs::ahead), where a prefetch of all of
    // them spread over the tiles (about 80 lines a tile, in a burst) left the tiles waiting on
    // memory: res3a_branch2a, batch 32, harness, 2 threads, 3 alternating rounds, 10.2-10.7 ->
    // 9.4-9.8 ms.
    auto strided_image = [&](dim_t g, dim_t n, float* out, bool acc, Profiler* prf) {
        const MicroKernel& uk = microkernel();
        const float* x = a.src + (n * p.ic + g * cg) * is;
        const float* dy = a.diff_dst + (n * p.oc + g * kg) * cols;
        float* dyt = scratch(kPackedDySlot, static_cast<std::size_t>(npan * cols * 32));
        {
            Span s(prf, "pack_dst");
            for (dim_t jp = 0; jp < npan; ++jp)
                pack_transposed(dy + jp * 32 * cols, cols, std::min<dim_t>(32, kg - jp * 32), cols,
                                32, dyt + jp * cols * 32);
        }
        Span s(prf, "gemm");
        const dim_t oh = geo.out[1], ow = geo.out[2], rs = geo.s[1] * geo.in[2];
        const dim_t hrun = std::max<dim_t>(1, 256 / ow);
        const float* rp[12];
        for (dim_t r0 = 0; r0 < rows; r0 += 12) {
            const int mv = static_cast<int>(std::min<dim_t>(12, rows - r0));
            for (dim_t h0 = 0; h0 < oh; h0 += hrun) {
                const dim_t nq = std::min(hrun, oh - h0);
                for (int i = 0; i < mv; ++i) rp[i] = x + (r0 + i) * is + h0 * rs;
                for (dim_t jp = 0; jp < npan; ++jp) {
                    Runs u{1, nq, ow, 0, rs, 0, ow * 32};
                    if (jp == 0 && r0 + 24 <= rows) u.ahead = 12 * is;
                    uk.row_runs_fn[1][mv](
                        u, rp, dyt + (jp * cols + h0 * ow) * 32, out + jp * 32 * rows + r0, rows,
                        false, static_cast<int>(std::min<dim_t>(32, kg - jp * 32)), acc || h0 > 0);
                }
            }
        }
    };
    // A dW of 1 MiB or more is written by non-temporal stores by the product that writes its
    // final values (final; GemmBlocking::stream_c). Batch 1, harness, 2 threads, 6-8 runs
    // interleaved: res5a_branch2a (1024 -> 512, 7x7 out, a reduction of 49 positions)
    // 0.300-0.364 -> 0.269-0.276 ms, and again 0.283-0.373 -> 0.284-0.293; res4b_branch2a (1024
    // -> 256 at 14x14) 0.471-0.519 -> 0.462-0.509, again 0.468-0.495 -> 0.458-0.476; the other
    // layers with a dW of 1-8 MiB tied. Smaller ones lost (res3a_branch1, 512 KiB, 0.99-1.08 ->
    // 1.05-1.10). Tuning::stream_output applies. The gathered products too (Im2colTB):
    // res5a_branch2b at batch 1 (a 9 MiB dW, a reduction of 49), harness alternating the modes
    // with 4 MiB touched between calls, 2 runs: 1.48/1.52 -> 1.35/1.38 ms; bench against
    // oneDNN, 4 rounds alternating builds: 0.857/1.056/0.852/0.956 -> 0.842/0.798/0.844/0.936.
    // On cores with 2 MiB of L2 (large_l2: the Xeon, with 260 MiB of L3) only from 16 MiB: the
    // regular stores' dW stayed in cache between calls, and streaming it lost on every layer
    // with 1-9 MiB of it (timings: docs/algorithms.md, "stream_dw").
    const std::size_t stream_from = large_l2() ? std::size_t{16} << 20 : std::size_t{1} << 20;
    const bool stream_dw = stream_mode_allows(wsize * sizeof(float), stream_from, tuning);
    // Spans into prf (the calling thread's, or null).
    auto image = [&](dim_t g, dim_t n, float* out, bool acc, dim_t q0, dim_t q1, Profiler* prf,
                     bool final = false) {
        if (shifted)
            return shifted_image(g, n, 1, out, acc, false, prf, 0, npan);  // whole images (q0 = 0)
        if (in_place) return strided_image(g, n, out, acc, prf);           // whole images (q0 = 0)
        Im2col m(p, a.src + (n * p.ic + g * cg) * is);
        if (deint) {
            Span s(prf, "pack_src");
            deinterleave_w(m, 1, cg, scratch(kSubsampleSlot, static_cast<std::size_t>(cg * is)));
        }
        const float* dyp = a.diff_dst + (n * p.oc + g * kg) * cols + q0;
        const StridedA dy{dyp, cols, 1};
        const float* x = m.src;
        dim_t xs = is;  // X's (or its sampled copy's) channel stride
        if (sampled) {
            Span s(prf, "gemm");
            const dim_t row = geo.s[1] * geo.in[2], plane = geo.s[0] * geo.in[1] * geo.in[2];
            const SampledTB b{x, is, geo.out[2], geo.out[1], geo.s[2], row, plane, q0};
            gemm(tuning, kg, rows, q1 - q0, dy, b, out, rows, acc, 0, final && stream_dw);
            return;
        }
        if (subsample) {
            Span s(prf, "pack_src");
            float* sub = scratch(kSubsampleSlot, static_cast<std::size_t>(cg * cols));
            subsample_input(geo, m.src, m.n_stride, 1, cg, sub);
            x = sub;
            xs = cols;
        }
        // With whole images per thread and at most 256 positions (14x14), A's next block is
        // prefetched into L2 (GemmBlocking::prefetch_a): each image's rows come from memory.
        // Batch 32, bench filtered to res4, 3 alternating rounds (ratio to oneDNN):
        // res4a_branch2c 1.119/1.095/1.088 -> 1.055/1.052/1.032, res4b_branch2a
        // 1.115/1.098/1.095 -> 1.047/1.061/1.036 (harness: 16.3 -> 15.6 ms each). With 56x56
        // images (all layers' images prefetched) the 56x56 layers lost: res2a_branch1
        // 1.024/1.049 -> 1.069/1.133.
        const bool prefetch = by_images && cols <= 256;
        Span s(prf, "gemm");
        if (swap)  // A: X's rows in place; B: dY^T
            gemm(tuning, rows, kg, q1 - q0, StridedA{x + q0, xs, 1}, StridedB{dyp, 1, cols}, out,
                 kg, acc, 0, false, prefetch);
        else if (identity || subsample)  // B^T is the image (or its sampled copy) transposed
            gemm(tuning, kg, rows, q1 - q0, dy, StridedB{x + q0, 1, xs}, out, rows, acc, 0,
                 final && stream_dw, prefetch);
        else
            gemm(tuning, kg, rows, q1 - q0, dy, Im2colTB{&m, q0}, out, rows, acc, 0,
                 final && stream_dw);
    };
    // Where the products are summed: dW_g, or out^T (scratch) when swapped.
    float* dwt =
        swap ? scratch(kTransposedSlot, static_cast<std::size_t>(p.groups * kg * rows)) : nullptr;
    const auto target = [&](dim_t g) {
        return swap ? dwt + g * kg * rows : a.diff_wei + g * kg * rows;
    };
    const auto finish = [&] {
        if (!swap) return;
        Span s(prof, "unpack");  // out^T transposed into dW
        for (dim_t g = 0; g < p.groups; ++g)
            transpose_into(target(g), kg, kg, rows, a.diff_wei + g * kg * rows, rows, false,
                           gemm_threads(kg, rows, 16));
    };
    // Images side by side along the reduction, in one product on all threads: 1x1 layers read
    // in place (or from their sampled copy), others gathered by Im2colTB. Image by image the
    // reduction is only its positions (49 at 7x7), and each image's product loaded and stored
    // all of dW.
    if (merged) {
        // Sampled copies of at most 4 MiB at a time.
        const dim_t nb = subsample ? std::max<dim_t>(1, (1 << 20) / (cg * cols)) : p.mb;
        for (dim_t g = 0; g < p.groups; ++g)
            for (dim_t n0 = 0; n0 < p.mb; n0 += nb) {
                const dim_t nn = std::min(nb, p.mb - n0);
                const StridedA dy{a.diff_dst + (n0 * p.oc + g * kg) * cols, cols, 1, cols,
                                  p.oc * cols};
                const auto product = [&](const auto& b) {
                    Span s(prof, "gemm");
                    gemm(tuning, kg, rows, nn * cols, dy, b, a.diff_wei + g * kg * rows, rows,
                         n0 > 0);
                };
                const float* x = a.src + (n0 * p.ic + g * cg) * is;
                dim_t xs = is, xn = p.ic * is;  // channel and image strides of X or its copy
                if (subsample) {
                    float* sub = scratch(kSubsampleSlot, static_cast<std::size_t>(nn * cg * cols));
                    {
                        Span s(prof, "pack_src");  // the input sampled at the strides
                        subsample_input(geo, x, p.ic * is, nn, cg, sub);
                    }
                    x = sub;
                    xs = cols;
                    xn = cg * cols;
                }
                if (swap) {  // A: the images' channels side by side along k; B: dY^T
                    Span s(prof, "gemm");
                    gemm(tuning, rows, kg, nn * cols, StridedA{x, xs, 1, cols, xn},
                         ImagesTB{dy.p, cols, cols, p.oc * cols}, target(g), kg, n0 > 0);
                } else if (!identity && !subsample) {  // B^T: im2col^T of the images, gathered
                    const Im2col m(p, x);
                    product(Im2colTB{&m});
                } else {  // B^T: the images' channels (or sampled copies), read in place
                    product(ImagesTB{x, xs, cols, xn});
                }
            }
        finish();
        return;
    }
    const int t = omp_get_max_threads();
    // Few images of many positions, where the GEMM would split along M (each thread gathering
    // all of im2col^T): each thread takes a share of every image's positions (the reduction)
    // instead. conv1 at batch 1, 2 threads: 2.11 -> 1.68 ms; with 784 positions (28x28) it
    // measured slower, hence the 1024 positions per thread.
    // The threads split each image's tiles. (With whole images per thread, a partial dW each
    // within 4 MiB: shifted_possible caps W^T, which is at least dW's size.)
    if (shifted && !by_images) {
        Span s(prof, "gemm");
        for (dim_t g = 0; g < p.groups; ++g)
            for (dim_t n = 0; n < p.mb; ++n)
                shifted_image(g, n, 1, a.diff_wei + g * kg * rows, n > 0, true, nullptr, 0, npan);
        return;
    }
    // Whole images per thread would need a partial dW beyond 4 MiB: the threads split dW's
    // panels instead, each running every image (grouped) over its own.
    if (shifted && by_images && wsize * sizeof(float) > (4u << 20)) {
        ThreadProfilers tp(prof);
        ParallelError err;
#pragma omp parallel
        err.run([&] {
            const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
            for (dim_t g = 0; g < p.groups; ++g)
                for (dim_t n = 0; n < p.mb; n += group)
                    shifted_image(g, n, std::min(group, p.mb - n), a.diff_wei + g * kg * rows,
                                  n > 0, false, tp.mine(), npan * id / nt, npan * (id + 1) / nt);
        });
        err.rethrow();
        return;
    }
    bool by_positions = false;
    if (!by_images && t > 1 && !omp_in_parallel() && cols >= 1024 * t) {
        int tm = 1, tn = 1;
        choose_split(kg, rows, cols, microkernel_for(kg, rows, true), t, tm, tn);
        by_positions = tm > 1;
    }
    if ((by_images || by_positions) && wsize * sizeof(float) <= (4u << 20)) {
        // Each thread sums its own share (thread 0 into dW, the others into a partial dW of at
        // most 4 MiB); then the partials are added, split over the threads.
        {
            ThreadProfilers tp(prof);
            for (dim_t g = 0; g < p.groups; ++g)
                sum_over_threads(
                    t, target(g), wsize,
                    [&](int id, int nt, float* out) {
                        Profiler* mine = tp.mine();
                        if (by_images && shifted) {  // group images per call
                            const dim_t n0 = p.mb * id / nt, n1 = p.mb * (id + 1) / nt;
                            for (dim_t n = n0; n < n1; n += group)
                                shifted_image(g, n, std::min(group, n1 - n), out, n > n0, false,
                                              mine, 0, npan);
                        } else if (by_images) {
                            const dim_t n0 = p.mb * id / nt, n1 = p.mb * (id + 1) / nt;
                            for (dim_t n = n0; n < n1; ++n) image(g, n, out, n > n0, 0, cols, mine);
                        } else {
                            const dim_t q0 = cols * id / nt, q1 = cols * (id + 1) / nt;
                            for (dim_t n = 0; n < p.mb; ++n) image(g, n, out, n > 0, q0, q1, mine);
                        }
                    },
                    &tp);
        }
        finish();
        return;
    }
    for (dim_t g = 0; g < p.groups; ++g)  // the products on all threads, called from this one
        for (dim_t n = 0; n < p.mb; ++n)
            image(g, n, target(g), n > 0, 0, cols, prof, n == p.mb - 1 && !swap);
    finish();
}

}  // namespace convlab::detail
