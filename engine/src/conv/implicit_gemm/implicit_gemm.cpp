// implicit_gemm: the im2col GEMMs without a column matrix in memory. The blocked GEMM core
// (microkernel.hpp) asks its B packer for one KC x NC block at a time; the packers gather
// that block straight from the activations (the im2col map, applied tile by tile), so the only
// buffers are the packed tiles that fit in cache, and, at most 4 MiB each, an input reordered
// once (strided 1x1: sampled at the strides; stride 2: de-interleaved along w) and the partial
// products of threads that split a reduction.
//
// This file: the forward and backward data GEMMs, the work memory and the prepared weights. Beside
// it: implicit_gemm_gather.cpp (the input sampled or de-interleaved; the im2col packers are in
// implicit_gemm_internal.hpp), implicit_gemm_shifted.cpp (the tiles from stride-phase planes),
// implicit_gemm_pointwise.cpp (the 1x1 tiles, backward data through the forward's tiles, the
// rules of the fast paths) and implicit_gemm_wgrad.cpp (the weight gradient).
//
// [SECTION] forward            dst_g = W_g * B, batch merged into the columns when images are small
// [SECTION] backward data      stride phases, one GEMM per phase (no col2im, no zero insertion)
// [SECTION] work memory
// [SECTION] prepared weights
#include "omp_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "implicit_gemm_internal.hpp"
#include "prepare_args.hpp"

namespace convlab::detail {

// [SECTION] forward

// A 1x1 forward with fewer output than input channels, an image per product (the bottlenecks'
// first 1x1s; at batch 4 and more the 14x14 and 7x7 ones and the strided ones take the 1x1
// tiles, use_pointwise): dst^T (positions x K/G) = X^T W_g^T, X^T (the image, or its copy
// sampled at the strides) read in place, column-contiguous, then transposed into dst. Its
// packed B is W^T, not the image, whose values the K/G rows used too few times for their
// packing to pay; 7x7 outputs lost, and strided ones below 784 positions; where the GEMM reads
// the image's rows in place (b_in_place_applies) nothing is packed either way. Only with the
// AVX-512 microkernel: with AVX2's 6 x 16 it lost (timings: docs/algorithms.md,
// "swapped_forward").
bool swapped_forward(const Problem& p, const Tuning& t) {
    if (t.swap_forward == Rule::Never || !reads_input_1x1(p) || use_pointwise(p, t)) return false;
    if (t.swap_forward == Rule::Always) return true;
    if (!avx512_selected()) return false;
    // With 2 MiB of L2 per core or more, below 4 images the plain GEMM (W read in place) beat it
    // (timings: docs/algorithms.md, "large_l2_forward").
    if (p.mb < 4 && large_l2_forward(t)) return false;
    const dim_t kg = p.ocg(), rows = p.icg(), cols = p.out_spatial();
    if (b_in_place_applies(microkernel_for(kg, cols, true), GemmBlocking{},
                           StridedA{nullptr, rows, 1}, StridedB{nullptr, cols, 1}, kg, rows, t))
        return false;
    return p.ocg() < p.icg() && p.out_spatial() >= (im2col_is_identity(p) ? 196 : 784);
}

// dst_g (Kg x nb*cols) = W_g (Kg x rows) * im2col (rows x nb*cols); nb > 1 goes through a
// buffer of nb images' outputs and is scattered to (N, K, out...).
void forward_implicit_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const Tuning& tuning = a.tuning;
    PanelLayout layout = forward_layout(p, tuning, true);
    const float* prepared = prepared_layout(p, Pass::Forward, a, layout);
    if (!prepared) layout = forward_layout(p, tuning);
    if (layout == kPointwisePanels) {
        forward_pointwise(p, a, prof, prepared);
        add_bias(p, a, prof);
        return;
    }
    if (layout == kShiftedPanels) {
        forward_shifted(p, a, prof, false, prepared);
        add_bias(p, a, prof);
        return;
    }
    const dim_t kg = p.ocg(), cg = p.icg(), rows = cg * p.kernel_spatial();
    const dim_t cols = p.out_spatial(), is = p.in_spatial();
    const dim_t nb = balanced_images(images_per_gemm(p), p.mb);
    const bool identity = im2col_is_identity(p);
    // 1x1 kernel, no padding, strided (ResNet's stride-2 projections): B is the input sampled
    // at the strides, copied once per image block (C/G x out positions, the size of B itself,
    // at most 4 MiB), then read as a 1x1 stride-1 problem, where im2col's packer would gather
    // every panel element by element with the stride.
    const Geom3 geo = geom3(p);
    const bool subsample = can_subsample(p, nb);
    const bool swap = (identity || subsample) && swapped_forward(p, tuning);
    // Stride 2 along w: the input de-interleaved once per image block (can_deinterleave).
    const bool deint = !subsample && !identity && can_deinterleave(p, nb);
    const dim_t blocks = (p.mb + nb - 1) / nb;
    const bool parallel_blocks = images_in_parallel(blocks * p.groups);
    // An output of 16 MiB or more is written by non-temporal stores where the GEMM writes it
    // in place (GemmBlocking::stream_c): its lines are not read from memory first. Batch 32,
    // 2 threads, 3 alternating rounds: 64 -> 256 at 56x56 16.9-17.8 -> 16.2-16.9 ms, 128 ->
    // 512 at 28x28 16.3-16.7 -> 15.6-16.4, 64 -> 64 at 56x56 5.0-5.3 -> 4.8-5.1; res3a_branch1
    // (from its sampled copy) tied.
    const bool stream = streams_output(p, tuning);
    // A batch input of 8 MiB and more comes from memory, image by image: the GEMM prefetches
    // each image's next block of rows while it computes one (GemmBlocking::prefetch_b): its
    // packing, a quarter of 64 -> 64 at 56x56, read them before any tile. Batch 32, 3
    // alternating rounds: 64 -> 64 at 56x56 4.99-5.07 -> 4.72-4.93 ms, 64 -> 256 16.30-16.58
    // -> 16.09-16.41. (Where the image is in cache, batch 1 and backward data's dY, it cost up
    // to 1.5%.)
    const bool batch_from_memory =
        static_cast<std::size_t>(p.mb * p.ic * is) * sizeof(float) >= (8u << 20);
    // One image whose product the GEMM would split along M (every thread gathering all of
    // im2col): the threads split the reduction (im2col's rows) instead, each gathering its own
    // rows into a partial product (thread 0 into dst, the others into at most 4 MiB each), then
    // the partials are added.
    const int nthreads = omp_get_max_threads();
    bool split_k = false;
    if (!identity && !subsample && !parallel_blocks && nthreads > 1 && !omp_in_parallel() &&
        rows >= 512 * nthreads &&
        static_cast<std::size_t>(kg * cols) * sizeof(float) <= (4u << 20)) {
        int tm = 1, tn = 1;
        choose_split(kg, cols, rows, microkernel_for(kg, cols, true), nthreads, tm, tn);
        split_k = tm > 1;
    }
    auto gemm_split_k = [&](const StridedA& w, const Im2col& im, float* c) {
        sum_over_threads(nthreads, c, static_cast<std::size_t>(kg * cols),
                         [&](int id, int nt, float* out) {
                             const dim_t k0 = rows * id / nt, k1 = rows * (id + 1) / nt;
                             gemm(tuning, kg, cols, k1 - k0, StridedA{w.p + k0, w.rs, 1},
                                  Im2colB{&im, nullptr, k0}, out, cols, false);
                         });
    };
    // Images (blocks of nb) and groups; prf is the calling thread's on the image-parallel path.
    auto block = [&](dim_t n0, dim_t g, Profiler* prf) {
        const dim_t nn = std::min(nb, p.mb - n0);
        Im2col m(p, a.src + (n0 * p.ic + g * cg) * is);
        if (deint) {
            Span s(prf, "pack_src");  // the input de-interleaved along w
            deinterleave_w(m, nn, cg,
                           scratch(kSubsampleSlot, static_cast<std::size_t>(nb * cg * is)));
        }
        const StridedA w{a.wei + g * kg * rows, rows, 1};
        float* dst0 = a.dst + (n0 * p.oc + g * kg) * cols;
        float* buf = nn > 1 ? scratch(3, static_cast<std::size_t>(kg * nb * cols)) : nullptr;
        // dst_g = W_g X computed transposed (X's channels xs apart), then transposed into dst.
        const auto swapped = [&](const float* x, dim_t xs) {
            const float* t = nullptr;
            {
                Span s(prf, "gemm");
                t = product_transposed(tuning, kg, cols, rows, w, StridedB{x, xs, 1});
            }
            Span s(prf, "unpack");
            transpose_into(t, kg, kg, cols, dst0, cols, false, gemm_threads(kg, cols, 16));
        };
        if (subsample) {
            float* sub = scratch(kSubsampleSlot, static_cast<std::size_t>(nb * cg * cols));
            {
                Span s(prf, "pack_src");  // the input sampled at the strides
                subsample_input(geo, m.src, m.n_stride, nn, cg, sub);
            }
            if (nn == 1 && swap) return swapped(sub, cols);
            Span s(prf, "gemm");
            if (nn == 1)
                gemm(tuning, kg, cols, rows, w, StridedB{sub, cols, 1}, dst0, cols, false, 0,
                     stream);
            else
                gemm(tuning, kg, nn * cols, rows, w, ImagesB{sub, cg * cols, cols}, buf, nn * cols,
                     false);
        } else if (nn == 1 && swap) {
            swapped(m.src, is);
        } else {
            Span s(prf, "gemm");
            if (nn == 1 && identity)  // 1x1, stride 1, no padding: B is the image itself
                gemm(tuning, kg, cols, rows, w, StridedB{m.src, is, 1}, dst0, cols, false, 0,
                     stream, false, batch_from_memory);
            else if (nn == 1 && split_k)
                gemm_split_k(w, m, dst0);
            else if (nn == 1)
                gemm(tuning, kg, cols, rows, w, Im2colB{&m}, dst0, cols, false, 0, stream);
            else if (identity)
                gemm(tuning, kg, nn * cols, rows, w, ImagesB{m.src, m.n_stride, is}, buf, nn * cols,
                     false);
            else
                gemm(tuning, kg, nn * cols, rows, w, Im2colB{&m}, buf, nn * cols, false);
        }
        if (nn > 1) {
            Span s(prf, "unpack");
#pragma omp parallel for schedule(static) if (kg * nn * cols > 65536)
            for (dim_t k = 0; k < kg; ++k)
                for (dim_t i = 0; i < nn; ++i) {
                    const float* from = buf + (k * nn + i) * cols;
                    float* to = dst0 + (i * p.oc + k) * cols;
                    for (dim_t e = 0; e < cols; ++e) to[e] = from[e];
                }
        }
    };
    if (parallel_blocks) {
        // Enough (image block, group) pairs for every thread: one parallel region, each thread
        // whole products on one core (no barrier per product).
        ThreadProfilers tp(prof);
        ParallelError err;
#pragma omp parallel for schedule(dynamic)
        for (dim_t t = 0; t < blocks * p.groups; ++t)
            err.run([&] { block((t / p.groups) * nb, t % p.groups, tp.mine()); });
        err.rethrow();
    } else {
        for (dim_t n0 = 0; n0 < p.mb; n0 += nb)
            for (dim_t g = 0; g < p.groups; ++g) block(n0, g, prof);
    }
    add_bias(p, a, prof);
}

// [SECTION] backward data
// Stride phases (Composable Kernel's decomposition): input positions i with (i + pb) mod s = rho
// receive exactly the taps k with (k*d) mod s = rho (none when the phase is not reachable, e.g.
// gcd(s, d) > 1), from output o = q + (i0 + pb - k*d)/s, where i = i0 + s*q. Per phase and per
// axis that is a stride-1 correlation of dY, so a phase is one GEMM:
//   dX_phase (C/G x Q) = W_phase^T (C/G x K/G*T) * B (K/G*T x Q),  B((co, t), q) = dY(co, q +
//   off_t)
// with B gathered tile by tile; the phases partition dX, so every element is written once.
// Narrow products are widened two ways:
// - phases merged: when C/G is below the microkernel's MR (conv1: C = 3, four phases), the
//   phases stack as rows of one GEMM, (phase, ci) x (co, u) with u over the union of the phases'
//   offsets per axis; A holds W where u is a tap of that phase, else 0. One 12-row panel then
//   does the work of four 3-row ones;
// - images merged: small phases (Q < 1024) take several images as columns, as the forward does.
// A 1x1 stride-1 unpadded problem is dX_g = W_g^T dY_g straight into dX (no gather, no scatter).
namespace {
struct Phase {
    dim_t i0[3] = {0, 0, 0}, q[3] = {0, 0, 0};
    std::vector<dim_t> taps[3], off[3];
    dim_t size() const { return q[0] * q[1] * q[2]; }
    dim_t ntaps() const {
        return static_cast<dim_t>(taps[0].size() * taps[1].size() * taps[2].size());
    }
};

// Phases computed by one GEMM: rows (phase, ci), columns over the grid q[] (the largest of the
// phases' own q per axis; a phase scatters only its own q), B rows (co, u), u over offs[].
struct PhaseGroup {
    std::vector<const Phase*> phases;
    std::vector<dim_t> offs[3];
    dim_t q[3] = {0, 0, 0};
    dim_t size() const { return q[0] * q[1] * q[2]; }
    dim_t nu() const {
        return static_cast<dim_t>(offs[0].size() * offs[1].size() * offs[2].size());
    }
    void add(const Phase& ph) {
        phases.push_back(&ph);
        for (int x = 0; x < 3; ++x) {
            q[x] = std::max(q[x], ph.q[x]);
            for (dim_t o : ph.off[x])
                if (std::find(offs[x].begin(), offs[x].end(), o) == offs[x].end())
                    offs[x].push_back(o);
        }
    }
    dim_t index(int x, dim_t o) const {
        const auto& v = offs[x];
        return static_cast<dim_t>(std::find(v.begin(), v.end(), o) - v.begin());
    }
};
}  // namespace

void backward_data_implicit_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const Tuning& tuning = a.tuning;
    const PanelLayout layout = backward_data_layout(p, tuning);
    const float* prepared = prepared_layout(p, Pass::BackwardData, a, layout);
    if (Problem q; shifted_bwd_data_problem(p, q, tuning, prepared != nullptr))
        return backward_data_shifted(q, a, prof, prepared);
    if (Problem q; pointwise_bwd_data_problem(p, q, tuning, prepared != nullptr))
        return backward_data_pointwise(p, q, a, prof,
                                       layout == kPointwiseFlipPanels ? prepared : nullptr);
    const Geom3 g = geom3(p);
    const dim_t kg = p.ocg(), cg = p.icg(), ks = p.kernel_spatial(), is = p.in_spatial();
    const dim_t os = p.out_spatial();
    if (im2col_is_identity(p) && os >= 1024) {
        Span sp(prof, "gemm");
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t grp = 0; grp < p.groups; ++grp)
                gemm(tuning, cg, is, kg, StridedA{a.wei + grp * kg * cg, 1, cg},
                     StridedB{a.diff_dst + (n * p.oc + grp * kg) * os, os, 1},
                     a.diff_src + (n * p.ic + grp * cg) * is, is, false);
        return;
    }
    // The phases: only those holding input positions, at most min(s, in) per axis. A loop over
    // every rho in [0, s) per axis ran s_d * s_h * s_w times (2^62 for strides of 2^31, for a
    // 4x4 input); the reachable ones are taken in the same ascending order of rho.
    std::vector<dim_t> rhos[3];
    for (int x = 0; x < 3; ++x) {
        const dim_t s = g.s[x];
        for (dim_t i0 = 0; i0 < std::min(s, g.in[x]); ++i0)
            rhos[x].push_back(((i0 + g.pb[x]) % s + s) % s);
        std::sort(rhos[x].begin(), rhos[x].end());
    }
    std::vector<Phase> phases;
    for (const dim_t r0 : rhos[0])
        for (const dim_t r1 : rhos[1])
            for (const dim_t r2 : rhos[2]) {
                const dim_t rho[3] = {r0, r1, r2};
                Phase ph;
                for (int x = 0; x < 3; ++x) {
                    const dim_t s = g.s[x];
                    ph.i0[x] = ((rho[x] - g.pb[x]) % s + s) % s;
                    ph.q[x] = ph.i0[x] < g.in[x] ? (g.in[x] - ph.i0[x] + s - 1) / s : 0;
                    for (dim_t k = 0; k < g.k[x]; ++k)
                        if ((k * g.d[x]) % s == rho[x]) {
                            ph.taps[x].push_back(k);
                            ph.off[x].push_back((ph.i0[x] + g.pb[x] - k * g.d[x]) / s);
                        }
                }
                if (ph.size() > 0) phases.push_back(std::move(ph));
            }
    // dX positions i = i0 + s*q of phase ph, for the images [n0, n0 + nn) of group grp, from
    // rows [row0, row0 + cg) of c (columns (image, grid q of the GEMM)), or zeros without c.
    auto scatter = [&](const Phase& ph, dim_t n0, dim_t nn, dim_t grp, const float* c, dim_t row0,
                       const dim_t* gq, dim_t ldc, Profiler* prf) {
        Span sp(prf, "scatter");
        const dim_t gs = gq[0] * gq[1] * gq[2];
#pragma omp parallel for collapse(2) schedule(static) if (nn * cg * ph.size() > 65536)
        for (dim_t i = 0; i < nn; ++i)
            for (dim_t ci = 0; ci < cg; ++ci) {
                float* img = a.diff_src + ((n0 + i) * p.ic + grp * cg + ci) * is;
                const float* row = c ? c + (row0 + ci) * ldc + i * gs : nullptr;
                for (dim_t qd = 0; qd < ph.q[0]; ++qd)
                    for (dim_t qh = 0; qh < ph.q[1]; ++qh) {
                        float* line =
                            img +
                            ((ph.i0[0] + qd * g.s[0]) * g.in[1] + ph.i0[1] + qh * g.s[1]) *
                                g.in[2] +
                            ph.i0[2];
                        const float* from = row ? row + (qd * gq[1] + qh) * gq[2] : nullptr;
                        if (g.s[2] == 1 && from) {
                            std::copy(from, from + ph.q[2], line);
                        } else {
                            for (dim_t qw = 0; qw < ph.q[2]; ++qw)
                                line[qw * g.s[2]] = from ? from[qw] : 0.0f;
                        }
                    }
            }
    };
    // Groups: phases without taps get zeros; the others are merged while their rows fill less
    // than one microkernel panel, else one GEMM each.
    const dim_t mr = microkernel().mr;
    std::vector<PhaseGroup> groups;
    for (const Phase& ph : phases) {
        if (ph.ntaps() == 0) {
            for (dim_t n = 0; n < p.mb; ++n)
                for (dim_t grp = 0; grp < p.groups; ++grp)
                    scatter(ph, n, 1, grp, nullptr, 0, ph.q, 0, prof);
            continue;
        }
        if (groups.empty() || cg >= mr ||
            static_cast<dim_t>(groups.back().phases.size() + 1) * cg > mr)
            groups.emplace_back();
        groups.back().add(ph);
    }
    for (const PhaseGroup& pg : groups) {
        const dim_t np = static_cast<dim_t>(pg.phases.size()), m = np * cg, nu = pg.nu();
        const dim_t kp = kg * nu, qs = pg.size();
        // Images per GEMM: enough columns to fill the tiles, the output buffer at most 4 MiB.
        const dim_t nb = balanced_images(
            qs >= 1024
                ? 1
                : std::clamp<dim_t>(std::min<dim_t>(2048 / qs, (1 << 20) / (m * qs)), 1, p.mb),
            p.mb);
        // Rows (co, u): the dY channel and the per-axis offsets of u.
        std::vector<Im2col::Row> rows(static_cast<std::size_t>(kp));
        for (dim_t co = 0; co < kg; ++co)
            for (std::size_t u0 = 0; u0 < pg.offs[0].size(); ++u0)
                for (std::size_t u1 = 0; u1 < pg.offs[1].size(); ++u1)
                    for (std::size_t u2 = 0; u2 < pg.offs[2].size(); ++u2) {
                        const dim_t u = static_cast<dim_t>(
                            (u0 * pg.offs[1].size() + u1) * pg.offs[2].size() + u2);
                        Im2col::Row& r = rows[static_cast<std::size_t>(co * nu + u)];
                        r.ci = co;
                        r.off_d = pg.offs[0][u0];
                        r.off_h = pg.offs[1][u1];
                        r.off_w = pg.offs[2][u2];
                        valid_range(r.off_w, 1, g.out[2], pg.q[2], r.w_lo, r.w_hi);
                    }
        // Flat kernel index and column u of each tap of each phase.
        struct Tap {
            dim_t k, u;
        };
        std::vector<std::vector<Tap>> taps(static_cast<std::size_t>(np));
        for (dim_t pi = 0; pi < np; ++pi) {
            const Phase& ph = *pg.phases[static_cast<std::size_t>(pi)];
            for (std::size_t t0 = 0; t0 < ph.taps[0].size(); ++t0)
                for (std::size_t t1 = 0; t1 < ph.taps[1].size(); ++t1)
                    for (std::size_t t2 = 0; t2 < ph.taps[2].size(); ++t2)
                        taps[static_cast<std::size_t>(pi)].push_back(
                            {(ph.taps[0][t0] * g.k[1] + ph.taps[1][t1]) * g.k[2] + ph.taps[2][t2],
                             (pg.index(0, ph.off[0][t0]) * static_cast<dim_t>(pg.offs[1].size()) +
                              pg.index(1, ph.off[1][t1])) *
                                     static_cast<dim_t>(pg.offs[2].size()) +
                                 pg.index(2, ph.off[2][t2])});
        }
        // The same per column u of each phase: its tap's k, or -1.
        std::vector<std::vector<int>> tap_of(static_cast<std::size_t>(np),
                                             std::vector<int>(static_cast<std::size_t>(nu), -1));
        for (dim_t pi = 0; pi < np; ++pi)
            for (const Tap& t : taps[static_cast<std::size_t>(pi)])
                tap_of[static_cast<std::size_t>(pi)][static_cast<std::size_t>(t.u)] =
                    static_cast<int>(t.k);
        // Whether the phases take all ks taps between them (and nu, ks <= 16): W's taps are
        // then packed by permute_runs (see "pack" below).
        std::size_t ntaps = 0;
        for (const auto& tp : taps) ntaps += tp.size();
        const bool runs = nu <= 16 && ks <= 16 && dim_t(ntaps) >= ks;
        Im2col mg;
        for (int x = 0; x < 3; ++x) {
            mg.g.in[x] = g.out[x];
            mg.g.out[x] = pg.q[x];
            mg.g.s[x] = 1;
            mg.g.k[x] = 1;
            mg.g.d[x] = 1;
        }
        mg.in_size = os;
        mg.n_stride = p.oc * os;
        mg.cols = qs;
        // B is dY itself: one phase whose single tap reads dY at offset 0 over all of it.
        const bool b_is_dy = np == 1 && nu == 1 && pg.offs[0][0] == 0 && pg.offs[1][0] == 0 &&
                             pg.offs[2][0] == 0 && qs == os && pg.q[2] == g.out[2] &&
                             pg.q[1] == g.out[1];
        // The GEMM writes dX in place: one phase covering dX (stride 1), one image at a time.
        const bool c_is_dx = np == 1 && qs == is && nb == 1;
        float* wa = scratch(4, static_cast<std::size_t>(m * kp));
        for (dim_t grp = 0; grp < p.groups; ++grp) {
            // A (m x kp): A[(pi, ci)][co*nu + u] = W[grp*kg + co][ci][k of tap u of phase pi],
            // 0 where u is no tap of pi. One 1x1 phase needs no copy: A is W_g^T, read in place.
            StridedA wt{a.wei + grp * kg * cg, 1, cg};
            if (!(ks == 1 && np == 1)) {
                Span sp(prof, "pack");
                // In tiles of 8 input x 8 output channels (8 rows of A, each filled front to
                // back across the tiles). Where the group's phases take all ks taps between them
                // (runs; nu and ks at most 16), each (ci, co) run of W's taps is permuted into
                // its nu columns at once, zeros where u is no tap of the phase; otherwise (a
                // stride-2 phase takes 1-4 of 9 taps) the taps are copied one by one. Row by
                // row and a float at a time, each (ci, co) read a line C/G * ks floats from the
                // last, all of them in a few cache sets. 512 -> 512 3x3 at 7x7, batch 1, 2
                // threads, harness, 3 interleaved rounds: "pack" 1.4-2.8 -> 0.70-1.09 ms (tiles
                // of 4 to 32 ci by 4 to 16 co measured 0.64-1.7, 8 x 8 the fastest).
                if (np > 1 && !runs) std::fill(wa, wa + m * kp, 0.0f);
#pragma omp parallel for collapse(2) schedule(static) if (kg * m * nu > 65536)
                for (dim_t pi = 0; pi < np; ++pi)
                    for (dim_t c0 = 0; c0 < cg; c0 += 8) {
                        const auto& tp = taps[static_cast<std::size_t>(pi)];
                        const int* idx = tap_of[static_cast<std::size_t>(pi)].data();
                        for (dim_t cb = 0; cb < kg; cb += 8) {
                            const dim_t cn = std::min<dim_t>(8, kg - cb);
                            for (dim_t ci = c0; ci < std::min(c0 + 8, cg); ++ci) {
                                float* d = wa + (pi * cg + ci) * kp + cb * nu;
                                const float* w = a.wei + ((grp * kg + cb) * cg + ci) * ks;
                                if (runs) {
                                    permute_runs(w, cg * ks, static_cast<int>(ks), idx,
                                                 static_cast<int>(nu), cn, d, nu);
                                    continue;
                                }
                                for (dim_t co = 0; co < cn; ++co)
                                    for (const Tap& t : tp)
                                        d[co * nu + t.u] = w[co * cg * ks + t.k];
                            }
                        }
                    }
                wt = StridedA{wa, kp, 1};
            }
            // One block of images; prf is the calling thread's on the image-parallel path.
            auto images = [&](dim_t n0, Profiler* prf) {
                const dim_t nn = std::min(nb, p.mb - n0);
                Im2col mi = mg;
                mi.src = a.diff_dst + (n0 * p.oc + grp * kg) * os;
                float* cb = c_is_dx ? nullptr : scratch(3, static_cast<std::size_t>(m * nb * qs));
                float* out = c_is_dx ? a.diff_src + (n0 * p.ic + grp * cg) * is : cb;
                {
                    Span sp(prf, "gemm");
                    if (b_is_dy && nn == 1)
                        gemm(tuning, m, qs, kp, wt, StridedB{mi.src, os, 1}, out, qs, false);
                    else
                        gemm(tuning, m, nn * qs, kp, wt, Im2colB{&mi, rows.data()}, out, nn * qs,
                             false);
                }
                if (!c_is_dx)
                    for (dim_t pi = 0; pi < np; ++pi)
                        scatter(*pg.phases[static_cast<std::size_t>(pi)], n0, nn, grp, cb, pi * cg,
                                pg.q, nn * qs, prf);
            };
            const dim_t blocks = (p.mb + nb - 1) / nb;
            if (images_in_parallel(blocks)) {
                ThreadProfilers tp(prof);  // gemm and scatter, side by side on the threads
                ParallelError err;
#pragma omp parallel for schedule(dynamic)
                for (dim_t b = 0; b < blocks; ++b) err.run([&] { images(b * nb, tp.mine()); });
                err.rethrow();
            } else {
                for (dim_t n0 = 0; n0 < p.mb; n0 += nb) images(n0, prof);
            }
        }
    }
}

// [SECTION] work memory

// A bound of every path's buffers rather than each path's own: most of them are held within
// 4 MiB (the planes, sampled inputs, merged images' products, packed dY^T); the others are one
// image's input or output (with its channels rounded up to panels of 32), a thread's partial
// dW, and the packed weights (W^T or FlipRot(W)^T in panels). The phases of a strided backward
// data are listed once (a few vectors each).
dim_t implicit_gemm_work(const Problem& p, Pass pass) {
    const dim_t threads = omp_get_max_threads();
    const dim_t cg = p.icg(), kg = p.ocg(), ks = p.kernel_spatial();
    const dim_t round_c = (cg + 31) / 32 * 32, round_k = (kg + 31) / 32 * 32;
    const dim_t w_pad =
        sat_mul({p.groups, std::max(sat_mul(round_k, cg), sat_mul(round_c, kg)), ks});
    dim_t padded = 1;
    for (int i = 0; i < p.ndims; ++i) padded = sat_mul(padded, p.padded_in(i));
    // Planes (padded, split into stride phases) are used within 4 MiB only.
    const dim_t planes = std::min(sat_mul({p.groups, round_c, padded}), dim_t{1} << 20);
    const dim_t image_in = sat_mul({p.groups, round_c, p.in_spatial()});
    const dim_t image_out = sat_mul({p.groups, round_k, p.out_spatial()});
    // Per thread: an image in and out, a partial dW, and the buffers held within 4 MiB each and
    // the GEMM's packing (those at most a multiple of the tensors and planes: per_thread_bytes).
    const dim_t mine = sat_add(
        sat_mul(sat_add(sat_add(image_in, image_out), w_pad / p.groups), dim_t{sizeof(float)}),
        per_thread_bytes(p, (dim_t{24} << 20) + kGemmPackBytes, planes));
    dim_t bytes = sat_add(sat_mul(threads, mine), sat_mul({2, w_pad, dim_t{sizeof(float)}}));
    if (pass == Pass::BackwardData) {
        dim_t phases = 1;
        for (int i = 0; i < p.ndims; ++i) phases = sat_mul(phases, std::min(p.stride[i], p.in[i]));
        bytes = sat_add(bytes, sat_mul(phases, 256));
    }
    return bytes;
}

}  // namespace convlab::detail

namespace convlab {

void PreparedWeights::check(const Problem& p, Pass pass) const {
    Problem mine = problem_, theirs = p;
    mine.name.clear();
    theirs.name.clear();
    if (pass != pass_ || !(mine == theirs))
        throw Error(std::string("prepared: weights prepared for ") + pass_name(pass_) + " of " +
                    to_descriptor(mine) + ", not for this call's " + pass_name(pass) + " of " +
                    to_descriptor(theirs));
}

const float* PreparedWeights::packed(const Problem& p, Pass pass, int layout) const {
    check(p, pass);
    return layout == layout_ && size_ ? data_.get() : nullptr;
}

const float* PreparedWeights::winograd(const Problem& p, Pass pass) const {
    check(p, pass);
    return wino_size_ ? wino_.get() : nullptr;
}

const float* PreparedWeights::transposed_rows(const Problem& p, Pass pass, dim_t& ld) const {
    check(p, pass);
    ld = rows_ld_;
    return rows_size_ ? rows_.get() : nullptr;
}

PreparedWeights prepare_weights(const Problem& p, Pass pass, const float* wei, Profiler* prof,
                                const Tuning& tuning) {
    using namespace detail;
    detail::check_prepare_args(p, pass, wei);
    PreparedWeights w;
    w.problem_ = p;
    w.pass_ = pass;
    davinci::prepare_fractal(w, wei, prof);
    Problem q = p;  // the problem whose tiles read the panels: for backward data its forward
    const PanelLayout layout = pass == Pass::Forward ? forward_layout(p, tuning, true)
                                                     : backward_data_layout(p, tuning, &q);
    w.layout_ = layout;
    // n floats, 64-byte aligned, owned by the returned pointer.
    const auto aligned = [&](std::size_t n) {
        float* data =
            static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
        if (!data)
            throw Error("prepared: " + std::to_string(n * sizeof(float)) +
                        " bytes of packed weights do not fit in memory");
        return std::pair{data, std::shared_ptr<const float[]>(
                                   data, [](const float* f) { std::free(const_cast<float*>(f)); })};
    };
    if (winograd_applies(p)) {
        const std::size_t n = winograd_weights_size(p);
        auto [data, owner] = aligned(n);
        prepare_winograd_weights(p, pass, wei, data, prof);
        w.wino_ = std::move(owner);
        w.wino_size_ = n;
    }
    if (pass == Pass::BackwardData && col2im_reads_prepared_rows(p, tuning)) {
        // W_g^T row by row for col2im (col2im_reads_prepared_rows), the rows' ends zero.
        const dim_t rows = p.icg() * p.kernel_spatial(), kg = p.ocg(), ld = col2im_rows_ld(p);
        const auto n = static_cast<std::size_t>(p.groups * rows * ld);
        auto [data, owner] = aligned(n);
        Span s(prof, "pack_wei");
        for (dim_t gi = 0; gi < p.groups; ++gi) {
            float* to = data + gi * rows * ld;
            transpose_into(wei + gi * kg * rows, rows, rows, kg, to, ld, false,
                           gemm_threads(rows, kg, 16));
            for (dim_t r = 0; r < rows; ++r) std::fill(to + r * ld + kg, to + (r + 1) * ld, 0.0f);
        }
        w.rows_ = std::move(owner);
        w.rows_size_ = n;
        w.rows_ld_ = ld;
    }
    if (layout == kNoPanels) return w;
    const auto allocate = [&](std::size_t n) {
        auto [data, owner] = aligned(n);
        w.data_ = std::move(owner);
        w.size_ = n;
        return data;
    };
    if (layout == kPointwisePanels) {
        float* data = allocate(pointwise_panels_size(p));
        Span s(prof, "pack_wei");
        pack_pointwise_panels(p, wei, data);
        return w;
    }
    if (layout == kPointwiseFlipPanels) {
        float* data = allocate(pointwise_panels_size(q));
        Span s(prof, "fliprot");
        pack_pointwise_flip_panels(q, wei, data);
        return w;
    }
    const Shifted sg(q);
    const ShiftedPanels panels(q, sg, layout == kFlipRotPanels);
    float* data = allocate(panels.size(p.groups));
    Span s(prof, layout == kFlipRotPanels ? "fliprot" : "pack_wei");
    const dim_t npan = panels.npan, rows = panels.rows;
#pragma omp parallel for collapse(2) schedule(static) if (npan * rows * 32 >= 65536)
    for (dim_t gi = 0; gi < p.groups; ++gi)
        for (dim_t jp = 0; jp < npan; ++jp)
            panels.pack(wei, gi, jp, jp + 1, data + (gi * npan + jp) * 32 * rows);
    return w;
}

}  // namespace convlab
