// implicit_gemm's pointwise tiles (1x1 forwards computed transposed, and the backward data of
// 1x1 and stride-1 problems through the forward's tiles), and the rules of its fast paths.
#include "omp_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "implicit_gemm_internal.hpp"

namespace convlab::detail {

namespace {
// 1x1 forward computed transposed, as the shifted tiles are: dst^T (positions x K/G) =
// X^T W_g^T in tiles of up to 12 positions of one image x 32 output channels, where the tile's
// 12 values of input channel ci are broadcast straight from the image's row ci (off[ci] =
// ci * positions), against W_g^T packed once. Nothing is gathered per panel and no merged
// images' products are copied back; strided 1x1s read the input sampled at the strides.
// Tuning::shifted applies: Always takes it wherever it can run, Never not at all.
//
// It pays where the GEMM would merge images (outputs of at most 256 positions) or sample the
// input, with 4 or more images to share the packing of W^T; on wide stride-1 outputs with 256
// or more input channels (the next chunk's inputs prefetched); on 1x1s strided by 2 read in
// place; and, with W^T prepared once, below 4 images on 14x14 and smaller outputs, strided
// 28x28 outputs and reductions of 512 or more (timings: docs/algorithms.md, "pointwise tiles").
// Whether the pointwise tiles can run p at all (t.shifted Never: not), and whether they are
// forced (Always).
bool pointwise_possible(const Problem& p, const Tuning& t, bool& forced) {
    forced = false;
    if (t.shifted == Rule::Never || !microkernel().shifted_row_fn[1] || !reads_input_1x1(p))
        return false;
    const dim_t npan = (p.ocg() + 31) / 32;
    if (static_cast<std::size_t>(p.groups * npan * 32 * p.icg()) * sizeof(float) > (16u << 20))
        return false;
    forced = t.shifted == Rule::Always;
    return forced || (p.ocg() >= 32 && p.icg() >= 32);
}
}  // namespace

bool use_pointwise(const Problem& p, const Tuning& t, bool prepared) {
    bool forced = false;
    if (!pointwise_possible(p, t, forced)) return false;
    if (forced) return true;
    // AVX2 (narrow_tiles): only a 1x1 strided by 2 read in place with at most 128 output
    // channels. Zen 3, as in use_shifted, GEMM -> tiles (ms): res3a_branch2a (256 -> 128, to
    // 28x28) batch 1 0.78 -> 0.68, batch 32 40.8 -> 31.5; the other 14 of ResNet-50's 1x1 layers
    // tied or lost, 0.59-1.01x at batch 1 (res5a_branch1 2.48 -> 4.20), 0.32-1.03x at batch 32
    // (res5a_branch1 57.0 -> 180.6).
    if (narrow_tiles())
        return strided_rows_apply(p, t) && p.ocg() <= 128 && (prepared || p.mb >= 4);
    if (p.mb < 4)
        return prepared && (p.out_spatial() <= 256 || strided_rows_apply(p, t) ||
                            (im2col_is_identity(p) && p.icg() >= 512));
    return p.out_spatial() <= 256 || strided_rows_apply(p, t) ||
           (im2col_is_identity(p) ? p.icg() >= 256 : p.ocg() <= p.icg());
}

// W_g^T of a 1x1 problem in panels of 32 output channels (zero beyond K/G), those of group gi
// from wt + gi * npan * 32 * C/G.
std::size_t pointwise_panels_size(const Problem& p) {
    return static_cast<std::size_t>(p.groups * (p.ocg() + 31) / 32 * 32 * p.icg());
}

void pack_pointwise_panels(const Problem& p, const float* wei, float* wt) {
    const dim_t kg = p.ocg(), cg = p.icg(), npan = (kg + 31) / 32;
#pragma omp parallel for schedule(static) if (p.groups * npan > 1 && kg * cg >= 65536)
    for (dim_t q = 0; q < p.groups * npan; ++q) {
        const dim_t gi = q / npan, jp = q % npan;
        pack_transposed(wei + (gi * kg + jp * 32) * cg, cg, std::min<dim_t>(32, kg - jp * 32), cg,
                        32, wt + q * 32 * cg);
    }
}

// The panels of forward_pointwise for q, the forward problem whose output is the backward data
// of a 1x1 problem (C and K swapped): q's weights are W^T, so its panels of W_q^T (32 of q's
// output channels, the original input channels, by K/G rows) are runs of W's rows, copied.
void pack_pointwise_flip_panels(const Problem& q, const float* wei, float* wt) {
    const dim_t kg = q.ocg(), cg = q.icg(), npan = (kg + 31) / 32;  // kg = C/G, cg = K/G
#pragma omp parallel for schedule(static) if (q.groups * npan > 1 && kg * cg >= 65536)
    for (dim_t qi = 0; qi < q.groups * npan; ++qi) {
        const dim_t gi = qi / npan, jp = qi % npan, nv = std::min<dim_t>(32, kg - jp * 32);
        float* panel = wt + qi * 32 * cg;
        for (dim_t k = 0; k < cg; ++k) {
            const float* row = wei + (gi * cg + k) * kg + jp * 32;
            std::copy(row, row + nv, panel + k * 32);
            std::fill(panel + k * 32 + nv, panel + k * 32 + 32, 0.0f);
        }
    }
}

namespace {
// p's panels for forward_pointwise packed by this call, into the calling thread's scratch
// ("pack_wei"; with flip, a 1x1 backward data's, W's rows: "fliprot").
const float* pack_pointwise_per_call(const Problem& p, const float* wei, bool flip,
                                     Profiler* prof) {
    float* packed = scratch(kPackedWeiSlot, pointwise_panels_size(p));
    Span s(prof, flip ? "fliprot" : "pack_wei");  // a 1x1's FlipRot is W^T
    if (flip)
        pack_pointwise_flip_panels(p, wei, packed);
    else
        pack_pointwise_panels(p, wei, packed);
    return packed;
}
}  // namespace

// prepared: pack_pointwise_panels's, done once by prepare_weights, or null (packed here). With
// flip, p is a 1x1 backward data's forward problem q and a.wei the stored weights (K and C
// swapped), packed by pack_pointwise_flip_panels (prepared: that layout).
void forward_pointwise(const Problem& p, const ConvArgs& a, Profiler* prof, const float* prepared,
                       bool flip) {
    const MicroKernel& uk = microkernel();
    const dim_t kg = p.ocg(), cg = p.icg(), cols = p.out_spatial(), is = p.in_spatial();
    const dim_t npan = (kg + 31) / 32;
    const Geom3 geo = geom3(p);
    // Strided by 2 along w (2-D and 1-D): the tiles read the image in place, every other
    // float of its rows, a tile within an output row; other strides sample the input first.
    const bool in_place = strided_rows_apply(p, a.tuning);
    const bool subsample = !im2col_is_identity(p) && !in_place;
    // Tiles: the positions cut into segs runs of at most kShiftedRowMax (in place: each output
    // row into per_row), in chunks of tiles whose inputs (C/G x chunk positions, 256 KiB) stay
    // in cache while the panels pass.
    const dim_t ow = geo.out[2], per_row = (ow + kShiftedRowMax - 1) / kShiftedRowMax;
    const dim_t segs =
        in_place ? geo.out[1] * per_row : (cols + kShiftedRowMax - 1) / kShiftedRowMax;
    // In place, a chunk is whole output rows whose input rows (each 2 OW - 1 floats, about
    // 2.3-2.9 times the lines of its sampled values at ow = 14-28) come to 256 KiB.
    const dim_t row_lines = (2 * ow - 1) * dim_t{4} / 64 + 2;
    const dim_t chunk = in_place ? std::max<dim_t>(1, 4096 / (cg * row_lines)) * per_row
                                 : std::max<dim_t>(1, 65536 / (cg * kShiftedRowMax));
    const dim_t xs = in_place ? is : cols;        // the input rows' channel stride
    const dim_t row_step = geo.s[1] * geo.in[2];  // in place: between output rows, in the input
    std::vector<dim_t> off(static_cast<std::size_t>(cg));
    for (dim_t ci = 0; ci < cg; ++ci) off[static_cast<std::size_t>(ci)] = ci * xs;
    const float* wt = prepared ? prepared : pack_pointwise_per_call(p, a.wei, flip, prof);
    // Tiles [t0, t1) of image n, group gi, whose input rows (C/G x cols) are at x. The next
    // chunk's inputs are prefetched into L2 while a chunk's tiles run: each tile reads 48 bytes
    // of each of C/G rows, more streams than the hardware prefetchers follow. 256 -> 64 channels
    // at 56x56, batch 32, 2 threads: 20.7 -> 18.2 ms.
    //
    // The output lines the next panel's tiles write (or, after the last panel, the next
    // chunk's first panel) are prefetched for writing in the same way: a tile writes 48 bytes
    // of a line of each of its 32 channels, each line read from memory first, and at the end
    // of a tile those 32 to 64 misses came at once. Batch 32, 2 threads, 3 alternating rounds:
    // 256 -> 1024 at 14x14 17.3-18.0 -> 16.1-16.4 ms; other layers tied.
    // Tile t: len positions, whose inputs start at x + in and outputs (channel 0) at d + out.
    struct Tile {
        dim_t in, out, len;
    };
    const auto tile = [&](dim_t t) {
        if (in_place) {
            const dim_t r = t / per_row, q = t % per_row;
            const dim_t w0 = ow * q / per_row;
            return Tile{r * row_step + 2 * w0, r * ow + w0, ow * (q + 1) / per_row - w0};
        }
        const dim_t p0 = cols * t / segs;
        return Tile{p0, p0, cols * (t + 1) / segs - p0};
    };
    // Read from the image itself (not its sampled copy, which is in cache), the first panel's
    // tiles prefetch the next tile's inputs as they go, a reduction row at a time
    // (MicroKernel::shifted_row_pf_fn): the chunk's prefetch, bursts of about 100 lines per
    // tile, left the first panel's tiles waiting on lines of memory. Batch 32, 2 threads,
    // harness, 2 rounds (ms): 256 -> 64 at 56x56 17.2/17.1 -> 16.1/16.2, 512 -> 128 at 28x28
    // 15.9/15.8 -> 15.3/15.2, 256 -> 128 strided by 2 in place 8.73/8.79 -> 8.35/8.41, 1024 ->
    // 256 at 14x14 15.3/15.2 -> 15.0/15.0; 2048 -> 512 at 7x7 (15.36/15.31 -> 15.37/15.37) and
    // batch 1 tied.
    const bool pf_next = !subsample && uk.shifted_row_pf_fn[1] && uk.shifted_row_s2_pf_fn[1];
    // Tiles [t0, t1) of image n, group gi, panels [jp0, jp1).
    const auto tiles = [&](dim_t n, dim_t gi, const float* x, dim_t t0, dim_t t1, dim_t jp0,
                           dim_t jp1) {
        float* dst = a.dst + (n * p.oc + gi * kg) * cols;
        for (dim_t c0 = t0; c0 < t1; c0 += chunk) {
            const dim_t c1 = std::min(c0 + chunk, t1), c2 = std::min(c1 + chunk, t1);
            const dim_t q0 = tile(c0).out, q1 = tile(c1).out, q2 = tile(c2).out;
            const dim_t shares = (jp1 - jp0) * (c1 - c0);
            PrefetchA next;
            if (!in_place)
                next = PrefetchA(StridedA{x, 1, cols}, q1, q2 - q1, 0, cg, shares);
            else if (c2 > c1)  // the input rows of the next chunk's output rows, every channel
                next = PrefetchA::runs(x + c1 / per_row * row_step, is, cg, row_step,
                                       (c2 - 1) / per_row - c1 / per_row + 1, 2 * ow - 1, shares);
            for (dim_t jp = jp0; jp < jp1; ++jp) {
                const float* w = wt + (gi * npan + jp) * 32 * cg;
                float* d = dst + jp * 32 * cols;
                const int nv = static_cast<int>(std::min<dim_t>(32, kg - jp * 32));
                // The next panel's lines of this chunk's positions, or after the last panel
                // the first panel's of the next chunk (none after the last chunk: q2 = q1).
                const bool last = jp + 1 == jp1;
                const dim_t jn = last ? jp0 : jp + 1, qa = last ? q1 : q0, qb = last ? q2 : q1;
                PrefetchA out_next =
                    PrefetchA::runs(dst + jn * 32 * cols + qa, cols,
                                    std::min<dim_t>(32, kg - jn * 32), 0, 1, qb - qa, c1 - c0);
                for (dim_t t = c0; t < c1; ++t) {
                    next.step_into_l2();
                    out_next.step_for_write();
                    const Tile at = tile(t);
                    if (jp == jp0 && pf_next && t + 1 < t1) {
                        (in_place ? uk.shifted_row_s2_pf_fn : uk.shifted_row_pf_fn)[at.len](
                            cg, x + at.in, off.data(), w, d + at.out, cols, nv,
                            tile(t + 1).in - at.in);
                        continue;
                    }
                    (in_place ? uk.shifted_row_s2_fn : uk.shifted_row_fn)[at.len](
                        cg, x + at.in, off.data(), w, d + at.out, cols, nv);
                }
            }
        }
    };
    // The input rows of image n, group gi: the image itself, or sampled at the strides into
    // the calling thread's buffer ("pack_src" in prf).
    const auto input = [&](dim_t n, dim_t gi, Profiler* prf) {
        const float* x = a.src + (n * p.ic + gi * cg) * is;
        if (!subsample) return x;
        Span s(prf, "pack_src");
        float* sub = scratch(kSubsampleSlot, static_cast<std::size_t>(cg * cols));
        subsample_input(geo, x, 0, 1, cg, sub);
        return static_cast<const float*>(sub);
    };
    if (images_in_parallel(p.mb * p.groups)) {
        ThreadProfilers tp(prof);
        ParallelError err;
#pragma omp parallel for schedule(dynamic)
        for (dim_t q = 0; q < p.mb * p.groups; ++q)
            err.run([&] {
                Profiler* mine = tp.mine();
                const float* x = input(q / p.groups, q % p.groups, mine);
                Span s(mine, "gemm");
                tiles(q / p.groups, q % p.groups, x, 0, segs, 0, npan);
            });
        err.rethrow();
        return;
    }
    // One image at a time: the threads split its tiles, each reading all of W^T, or where W^T
    // is the larger (more output channels than positions: 14x14 and smaller), its panels, each
    // reading all of the input. Batch 1, W^T prepared, harness, 2 threads, 2 rounds, tiles ->
    // panels (ms): 2048 -> 512 at 7x7 0.56-0.58 -> 0.47 (its 5 tiles split 2 + 3), 512 -> 2048
    // at 7x7 0.60 -> 0.46, 1024 -> 256 at 14x14 0.50 -> 0.46, 512 -> 256 strided to 14x14
    // 0.269 -> 0.258; 28x28 outputs tied or lost (256 -> 128 strided, 0.245 -> 0.252).
    const int threads = omp_get_max_threads();
    const bool by_panels = npan >= threads && npan * 32 > cols;
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t gi = 0; gi < p.groups; ++gi) {
            const float* x = input(n, gi, prof);
            Span s(prof, "gemm");
            // (Called inside a parallel region, one thread: backward_data_pointwise's images.)
            ParallelError err;
#pragma omp parallel if (!omp_in_parallel())
            err.run([&] {
                const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
                if (by_panels)
                    tiles(n, gi, x, 0, segs, npan * id / nt, npan * (id + 1) / nt);
                else
                    tiles(n, gi, x, segs * id / nt, segs * (id + 1) / nt, 0, npan);
            });
            err.rethrow();
        }
}

namespace {
// p with its input and output channels swapped: the forward problem whose output is p's
// backward data, before its sizes and padding are set.
Problem channels_swapped(const Problem& p) {
    Problem q = p;
    q.ic = p.oc;
    q.oc = p.ic;
    return q;
}
}  // namespace

// Backward data of a stride-1 problem is a forward correlation of dY with the flipped weights
// (FlipRot, as in via_forward), padded by (k-1)d - pad on each side: the forward problem q
// (C <-> K), for the shifted tiles when they pay on q (with prepared: FlipRot(W) packed once).
// False where a pad exceeds (k-1)d (q would crop) or a stride is not 1.
bool shifted_bwd_data_problem(const Problem& p, Problem& q, const Tuning& t, bool prepared) {
    q = channels_swapped(p);
    for (int i = 0; i < p.ndims; ++i) {
        const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
        if (p.stride[i] != 1 || p.pad_begin[i] > span || p.pad_end[i] > span) return false;
        q.in[i] = p.out(i);
        q.pad_begin[i] = span - p.pad_begin[i];
        q.pad_end[i] = span - p.pad_end[i];
    }
    return use_shifted(q, t, true, prepared);
}

// Backward data of an unpadded stride-1 1x1 problem p is the forward 1x1 problem q (C and K
// swapped) of dY with W^T: computed by forward_pointwise's tiles where they pay on q (with
// prepared, as for a forward whose weights were prepared), whose panels of W_q^T are W's rows.
// The tiles pay where the forward's rule would take them on q, and more, as the phases' GEMM
// (W^T read as columns) is slower than the forward's: on q's wide outputs with more input than
// output channels, and from 4 images on those with 128 or more input channels; without
// prepared weights only from 4 images. A strided 1x1 (unpadded) the same, q on the output grid,
// its result written to dX at the strides (backward_data_pointwise); one with more than 4 MiB
// of weights stays with col2im below 4 images (timings: docs/algorithms.md, "pointwise
// backward data").
bool pointwise_bwd_data_problem(const Problem& p, Problem& q, const Tuning& t, bool prepared) {
    if (t.pointwise_bwd_data == Rule::Never || !reads_input_1x1(p)) return false;
    const auto weight_bytes =
        static_cast<std::size_t>(p.groups * p.ocg() * p.icg()) * sizeof(float);
    if (!im2col_is_identity(p)) {  // strided (can_subsample)
        if (static_cast<std::size_t>(p.ic * p.out_spatial()) * sizeof(float) > (4u << 20))
            return false;  // one image's buffer, every group
        if (p.mb < 4 && t.shifted != Rule::Always && weight_bytes > (4u << 20)) return false;
    }
    q = channels_swapped(p);
    for (int i = 0; i < p.ndims; ++i) {
        q.in[i] = p.out(i);
        q.stride[i] = 1;
        q.pad_end[i] = 0;  // an end padding no sampled position reaches (can_subsample)
    }
    bool forced = false;
    if (!pointwise_possible(q, t, forced)) return false;
    if (forced) return true;
    // AVX2 (narrow_tiles): from 4 images, weights under 4 MiB, where the Zen 3 gained on most
    // 1x1 layers and lost on those with 4 MiB of weights and more (timings: docs/algorithms.md,
    // "pointwise backward data with AVX2").
    if (narrow_tiles()) return p.mb >= 4 && weight_bytes < (4u << 20);
    if (use_pointwise(q, t, prepared)) return true;
    if (q.mb < 4 && !prepared) return false;
    return q.icg() >= q.ocg() || (q.mb >= 4 && q.icg() >= 128);
}

// dX = forward(q) of dY with W^T (pointwise_bwd_data_problem); p strided: written at the
// strides, zeros between ("scatter").
void backward_data_pointwise(const Problem& p, const Problem& q, const ConvArgs& a, Profiler* prof,
                             const float* prepared) {
    ConvArgs f;
    f.src = a.diff_dst;
    f.wei = a.wei;
    f.dst = a.diff_src;
    f.tuning = a.tuning;
    if (im2col_is_identity(p)) return forward_pointwise(q, f, prof, prepared, true);
    // Packed once for all the images below.
    if (!prepared) prepared = pack_pointwise_per_call(q, a.wei, true, prof);
    const Geom3 g = geom3(p);
    const dim_t os = p.out_spatial(), is = p.in_spatial();
    const auto image = static_cast<std::size_t>(p.ic * os);
    // Channel c of image n (of dX) from plane v of its buffer: at the strides, zeros between.
    const auto put = [&](dim_t n, dim_t c, const float* v) {
        float* plane = a.diff_src + (n * p.ic + c) * is;
        for (dim_t d = 0; d < g.in[0]; ++d)
            for (dim_t h = 0; h < g.in[1]; ++h) {
                float* line = plane + (d * g.in[1] + h) * g.in[2];
                if (d % g.s[0] != 0 || h % g.s[1] != 0) {
                    std::fill(line, line + g.in[2], 0.0f);
                    continue;
                }
                const float* from = v + ((d / g.s[0]) * g.out[1] + h / g.s[1]) * g.out[2];
                if (g.s[2] == 1) {
                    std::copy(from, from + g.out[2], line);
                    continue;
                }
                std::fill(line, line + g.in[2], 0.0f);
                for (dim_t o = 0; o < g.out[2]; ++o) line[o * g.s[2]] = from[o];
            }
    };
    // Images side by side on the threads: each computes an image into a buffer of its own (its
    // tiles on one thread) and puts it in place while it is in cache, no barrier between.
    if (images_in_parallel(p.mb)) {
        ThreadProfilers tp(prof);
        ParallelError err;
#pragma omp parallel for schedule(dynamic)
        for (dim_t n = 0; n < p.mb; ++n)
            err.run([&] {
                Profiler* mine = tp.mine();
                float* buf = scratch(kTransposedSlot, image);
                Problem qb = q;
                qb.mb = 1;
                ConvArgs fi = f;
                fi.src = a.diff_dst + n * p.oc * os;
                fi.dst = buf;
                forward_pointwise(qb, fi, mine, prepared, true);
                Span s(mine, "scatter");
                for (dim_t c = 0; c < p.ic; ++c) put(n, c, buf + c * os);
            });
        err.rethrow();
        return;
    }
    // Few images: blocks of them through one buffer (at most 4 MiB), the threads sharing each.
    const dim_t nb = std::clamp<dim_t>(static_cast<dim_t>((std::size_t{1} << 20) / image), 1, p.mb);
    float* buf = scratch(kTransposedSlot, image * static_cast<std::size_t>(nb));
    for (dim_t n0 = 0; n0 < p.mb; n0 += nb) {
        const dim_t nn = std::min(nb, p.mb - n0);
        Problem qb = q;
        qb.mb = nn;
        f.src = a.diff_dst + n0 * p.oc * os;
        f.dst = buf;
        forward_pointwise(qb, f, prof, prepared, true);
        Span s(prof, "scatter");
#pragma omp parallel for collapse(2) schedule(static) if (nn * p.ic * is > 65536)
        for (dim_t i = 0; i < nn; ++i)
            for (dim_t c = 0; c < p.ic; ++c) put(n0 + i, c, buf + (i * p.ic + c) * os);
    }
}

// dX = forward(q) of dY with FlipRot(W), from the planes; FlipRot is applied while packing
// (recorded as "fliprot").
void backward_data_shifted(const Problem& q, const ConvArgs& a, Profiler* prof,
                           const float* prepared) {
    ConvArgs f;
    f.src = a.diff_dst;
    f.wei = a.wei;
    f.dst = a.diff_src;
    f.tuning = a.tuning;
    forward_shifted(q, f, prof, true, prepared);
}

namespace {
// What implicit_gemm packs for p's forward and backward data (the dispatch of
// forward_implicit_gemm and backward_data_implicit_gemm).
// With prepared, the layout prepare_weights packs (where the tiles pay on more problems).
//
// Of the forwards that the pointwise tiles take with W^T prepared below 4 images, those with
// more output than input channels at 64 positions or fewer (7x7) go to the GEMM instead, which
// reads W in place, because their 4-8 MiB of panels come from memory each call for 5 tiles
// (timings: docs/algorithms.md, "pointwise_forward").
//
// With 2 MiB of L2 per core or more (large_l2_forward), below 4 images the tiles only on
// unstrided outputs of 65 to 256 positions (14x14) and strided ones of 784 or more with fewer
// output than input channels, because elsewhere the GEMM reading W in place beat them on such a
// core; from 4 images unstrided ones only of at most 784 positions (28x28) and strided ones only
// of 196 or more with fewer output than input channels, because on 56x56 outputs, the
// projections and the strided 7x7 outputs the GEMM (over the sampled copy) beat them (timings:
// docs/algorithms.md, "large_l2_forward").
bool pointwise_forward(const Problem& p, const Tuning& t, bool prepared) {
    if (!use_pointwise(p, t, prepared)) return false;
    if (t.shifted == Rule::Always) return true;
    const bool strided = !im2col_is_identity(p);
    if (p.mb >= 4) {
        if (!large_l2_forward(t)) return true;
        return strided ? p.out_spatial() >= 196 && p.ocg() < p.icg() : p.out_spatial() <= 784;
    }
    if (!prepared) return true;
    if (large_l2_forward(t))
        return strided ? p.out_spatial() >= 784 && p.ocg() < p.icg()
                       : p.out_spatial() > 64 && p.out_spatial() <= 256;
    return !(p.ocg() > p.icg() && p.out_spatial() <= 64);
}
}  // namespace

bool pointwise_forward_applies(const Problem& p, const Tuning& t, bool prepared) {
    return forward_layout(p, t, prepared) == kPointwisePanels;
}

bool large_l2_forward(const Tuning& t) {
    return t.large_l2_forward != Rule::Never && avx512_selected() &&
           (t.large_l2_forward == Rule::Always || large_l2());
}

PanelLayout forward_layout(const Problem& p, const Tuning& t, bool prepared) {
    return pointwise_forward(p, t, prepared) ? kPointwisePanels
           : use_shifted(p, t)               ? kShiftedPanels
                                             : kNoPanels;
}

// (Where prepare_weights packs FlipRot(W), the shifted tiles pay on more problems.) q, when
// given, receives the forward problem whose tiles compute it.
PanelLayout backward_data_layout(const Problem& p, const Tuning& t, Problem* q) {
    Problem fq;
    if (shifted_bwd_data_problem(p, fq, t, true)) {
        if (q) *q = fq;
        return kFlipRotPanels;
    }
    if (pointwise_bwd_data_problem(p, fq, t, true)) {
        if (q) *q = fq;
        return kPointwiseFlipPanels;
    }
    if (q) *q = p;
    return kNoPanels;
}

// The shifted forward with whole images per thread writes its output rows by non-temporal
// stores (stream_rows) once the output is 16 MiB or more, because a 12-position tile writes 48
// bytes of each 64-byte line, so every line was read from memory before being written. One
// image at a time, an output of 512 KiB or more streams too, because another layer's run
// between two calls leaves its lines out of cache (timings: docs/algorithms.md,
// "streams_output").
bool streams_output(const Problem& p, const Tuning& t) {
    return stream_mode_allows(
        static_cast<std::size_t>(p.mb * p.oc * p.out_spatial()) * sizeof(float),
        images_in_parallel(p.mb * p.groups) ? std::size_t{16} << 20 : std::size_t{512} << 10, t);
}

namespace {
// What both passes' stride-2 in-place tiles need: a 1x1 read in place, strided by 2 along w,
// 2-D or 1-D, with outputs at least min_width wide (any width with t.strided_rows Always; never
// with Never).
bool strided_by_two_in_place(const Problem& p, dim_t min_width, const Tuning& t) {
    const Geom3 g = geom3(p);
    return t.strided_rows != Rule::Never && reads_input_1x1(p) && g.s[2] == 2 && g.out[0] == 1 &&
           g.in[0] == 1 && (g.out[2] >= min_width || t.strided_rows == Rule::Always);
}
}  // namespace
// forward_pointwise reads a 1x1 strided by 2 along w in place (see there), for outputs at least
// 7 wide (2-D and 1-D), because with the next tile's inputs prefetched (shifted_row_s2_pf_fn)
// it beat the sampled copy (timings: docs/algorithms.md, "strided_rows_apply").
bool strided_rows_apply(const Problem& p, const Tuning& t) {
    return microkernel().shifted_row_s2_fn[1] && strided_by_two_in_place(p, 7, t);
}
// A strided 1x1 weight gradient dW = dY X^T computed on all threads (few images), not
// transposed: the GEMM's B packer (SampledTB) reads X^T's panels straight from the input at the
// strides, where the sampled copy was written first (each thread sampling its channels) and then
// packed from. Its runs end at each output row, so it pays only for rows of 14 or more, and
// with whole images per thread (batch 32) the copy stays (timings: docs/algorithms.md,
// "sampled_wgrad_applies"). Always: any rows (tests).
bool sampled_wgrad_applies(const Problem& p, const Tuning& t) {
    return t.sampled_wgrad != Rule::Never && can_subsample(p, 1) &&
           (t.sampled_wgrad == Rule::Always || geom3(p).out[2] >= 14);
}
// The weight gradient's counterpart (backward_weight_implicit_gemm), where an image's dY^T (in
// panels of 32 channels) is within 512 KiB, for outputs at least 24 wide. Alternating, batch 32, 2
// threads, 3 rounds of medians against the sampled copy: res3a_branch2a (256 -> 128, 28x28 out,
// dY^T 392 KiB) 11.6/11.7/11.7 -> 10.5/10.5/10.4 ms; res3a_branch1 (256 -> 512, dY^T 1.5 MiB, its
// panels taken in blocks of 512 KiB) lost, 34.0-34.4 -> 37.4-41.5; 14x14 outputs tied (512 -> 256)
// or lost (512 -> 1024, 33.1-34.7 -> 37.6).
bool strided_wgrad_applies(const Problem& p, const Tuning& t) {
    const dim_t npan = (p.ocg() + 31) / 32;
    return microkernel().row_runs_fn[1][1] && strided_by_two_in_place(p, 24, t) &&
           static_cast<std::size_t>(npan * 32 * p.out_spatial()) * sizeof(float) <= (512u << 10);
}
// Stride 1 with 8 or more input channels per group (a tile's 12 rows are channels of one tap).
bool wgrad_taps_apply(const Problem& p, const Tuning& t) {
    const Geom3 g = geom3(p);
    return t.wgrad_taps != Rule::Never && g.s[1] == 1 && g.s[2] == 1 && p.icg() >= 8;
}
// forward_shifted reads the input in place (see there): its edge tiles apply, the rows are
// not strided, dilated or split into depth planes.
bool unpadded_tiles_apply(const Problem& p, const Tuning& t) {
    const Geom3 g = geom3(p);
    return t.unpadded_tiles != Rule::Never && edge_tiles_apply(p, t) && g.s[1] == 1 &&
           g.d[1] == 1 && g.k[0] == 1 && g.in[0] == 1;
}
// forward_shifted's edge tiles skip the taps on the padding column (see there).
bool edge_tiles_apply(const Problem& p, const Tuning& t) {
    const Geom3 g = geom3(p);
    return t.edge_tiles != Rule::Never && microkernel().shifted_edge_fn[2][1] && g.k[2] == 3 &&
           g.d[2] == 1 && g.s[2] == 1 && g.pb[2] == 1 && g.out[2] == g.in[2];
}

// Output rows of 16 V positions, V <= kRowLanesMax, from padded planes (not the input in place,
// whose padding columns the row tiles do not skip); by default from 64 positions (16 or more
// accumulators), because conv1 gained at batch 8 and 32 and longer reductions tied (timings:
// docs/algorithms.md, "row_lanes_apply").
bool row_lanes_apply(const Problem& p, const Tuning& t) {
    const Geom3 g = geom3(p);
    const dim_t v = g.out[2] / 16;
    if (t.row_lanes == Rule::Never || g.out[2] % 16 != 0 || v < 1 || v > kRowLanesMax ||
        !microkernel().row_lanes_fn[v] || unpadded_tiles_apply(p, t))
        return false;
    return t.row_lanes == Rule::Always || v >= 4;
}

bool shifted_applies(const Problem& p, Pass pass, const Tuning& t, const ConvArgs* a) {
    Problem q;
    if (pass == Pass::BackwardData && a && prepared_layout(p, pass, *a, backward_data_layout(p, t)))
        return true;  // FlipRot(W) prepared: the layout exists only where the tiles run
    return pass == Pass::Forward ? use_shifted(p, t)
           : pass == Pass::BackwardWeight
               ? use_shifted_wgrad(p, t)
               : shifted_bwd_data_problem(p, q, t) || pointwise_bwd_data_problem(p, q, t);
}

}  // namespace convlab::detail
