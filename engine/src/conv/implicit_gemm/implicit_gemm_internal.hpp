// Internal to implicit_gemm (conv/implicit_gemm/*.cpp): the im2col gather that its packers
// apply tile by tile, the stride-phase planes of the shifted tiles, the layouts of the weights it
// packs, and the functions its files share (forward, backward data, weight gradient, the
// pointwise and shifted tiles, prepare_weights).
#pragma once

#include "omp_compat.hpp"

#include "x86.hpp"
#if CONVLAB_X86
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "algorithms.hpp"
#include "checked.hpp"
#include "convlab/kernels.hpp"
#include "geom.hpp"
#include "microkernel.hpp"
#include "parallel.hpp"
#include "thread_profile.hpp"

namespace convlab::detail {

// [SECTION] im2col gather

// Prefetches bytes [0, bytes) from `floats` floats past p: the next rows of a copy whose
// source the hardware prefetchers follow poorly. The address is formed as an integer, since
// it may lie past the end of p's array (the last rows' prefetches; they never fault).
inline void prefetch_ahead(const float* p, dim_t floats, dim_t bytes) {
    const std::uintptr_t a =
        reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(floats) * sizeof(float);
    for (dim_t b = 0; b < bytes; b += 64) __builtin_prefetch(reinterpret_cast<const void*>(a + b));
}

// out[e] = sp[e * sw] for e in [lo, hi), 0 for the rest of [0, len). With AVX-512, short
// stride-1 runs (16 or fewer) and stride-2 runs of 9 or more go 16 at a time by masked loads and
// stores (the masked-off lanes are neither read nor written; stride 2 through one permute of two
// loads); long stride-1 runs are a plain copy, which measured faster for them, and so are
// stride-2 runs of 8 or fewer: res5a_branch2a's input sampled at the strides (7 per row), batch
// 1, 2 threads, 20 interleaved runs, 0.027-0.035 -> 0.021-0.028 ms (in a slow spell of the
// machine 0.134 -> 0.060); for 14 and 28 per row the masked loads won (0.019-0.020 against
// 0.033, 0.027-0.028 against 0.041-0.043). With AVX2, stride-2 runs go 8 at a time but for
// their last 1 to 8 elements (subsample_input measures it).
#if CONVLAB_X86
__attribute__((target("avx512f,bmi2"))) inline void copy_run_avx512(const float* sp, dim_t sw,
                                                                    dim_t lo, dim_t hi, dim_t len,
                                                                    float* out) {
    const auto bits = [](dim_t a, dim_t b) {  // lanes [a, b) of 16, clamped
        a = std::clamp<dim_t>(a, 0, 16);
        b = std::clamp<dim_t>(b, a, 16);
        return static_cast<__mmask16>(((1u << b) - 1u) & ~((1u << a) - 1u));
    };
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (dim_t e0 = 0; e0 < len; e0 += 16) {
        const __mmask16 store = bits(0, len - e0), valid = bits(lo - e0, hi - e0);
        __m512 v;
        if (sw == 1) {
            v = _mm512_maskz_loadu_ps(valid, sp + e0);
        } else {
            // Lanes of the two loads: element e sits at 2e, split at lane 8 of the output.
            const __m512 a = _mm512_maskz_loadu_ps(
                static_cast<__mmask16>(_pdep_u32(valid & 0xff, 0x5555)), sp + 2 * e0);
            const __m512 b = _mm512_maskz_loadu_ps(
                static_cast<__mmask16>(_pdep_u32(valid >> 8, 0x5555)), sp + 2 * e0 + 16);
            v = _mm512_permutex2var_ps(a, even, b);
        }
        _mm512_mask_storeu_ps(out + e0, store, v);
    }
}

// Stride 2: two loads of 8, their even lanes picked by one shuffle and put in order by one
// permute. Only while the second load ends before the run's last element (no read beyond it).
// Returns the first element not written.
__attribute__((target("avx2"))) inline dim_t copy_stride2_avx2(const float* sp, dim_t e, dim_t hi,
                                                               float* out) {
    for (; e + 8 < hi; e += 8) {
        const __m256 a = _mm256_loadu_ps(sp + 2 * e), b = _mm256_loadu_ps(sp + 2 * e + 8);
        const __m256 t = _mm256_shuffle_ps(a, b, 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
        _mm256_storeu_ps(out + e,
                         _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xd8)));
    }
    return e;
}
#endif

inline void copy_run(const float* sp, dim_t sw, dim_t lo, dim_t hi, dim_t len, float* out) {
#if CONVLAB_X86
    const Isa isa = selected_isa();
    if (isa == Isa::avx512 && cpu_has_bmi2() && ((sw == 2 && len > 8) || (sw == 1 && len <= 16))) {
        copy_run_avx512(sp, sw, lo, hi, len, out);
        return;
    }
#endif
    std::fill(out, out + lo, 0.0f);
    dim_t e = lo;
    if (sw == 1) {
        std::copy(sp + lo, sp + hi, out + lo);
        e = hi;
    }
#if CONVLAB_X86
    if (sw == 2 && isa != Isa::portable) e = copy_stride2_avx2(sp, e, hi, out);
#endif
    for (; e < hi; ++e) out[e] = sp[e * sw];
    std::fill(out + hi, out + len, 0.0f);
}

// The im2col map of one group over a run of images: rows r = (ci, kd, kh, kw), columns
// j = (n, od, oh, ow); element = src image n, channel ci, at o*s + k*d - pb, or 0 in the padding.
struct Im2col {
    Geom3 g{};
    const float* src = nullptr;  // image n0, first channel of the group
    dim_t n_stride = 0;          // floats between images (C * in_size)
    dim_t in_size = 0, ks = 1, cols = 0;
    // src holds each input line de-interleaved (deinterleave_w): its even elements, then from
    // `we` on its odd ones, so that a stride-2 run along w reads contiguous floats.
    bool deint = false;
    dim_t we = 0;

    Im2col() = default;
    Im2col(const Problem& p, const float* image0)
        : g(geom3(p)),
          src(image0),
          n_stride(p.ic * p.in_spatial()),
          in_size(p.in_spatial()),
          ks(p.kernel_spatial()),
          cols(p.out_spatial()) {}

    struct Row {
        dim_t ci, off_d, off_h, off_w, w_lo, w_hi;
    };
    Row row(dim_t r) const {
        Row o{};
        o.ci = r / ks;
        dim_t t = r % ks;
        const dim_t kw = t % g.k[2];
        t /= g.k[2];
        const dim_t kh = t % g.k[1], kd = t / g.k[1];
        o.off_d = kd * g.d[0] - g.pb[0];
        o.off_h = kh * g.d[1] - g.pb[1];
        o.off_w = kw * g.d[2] - g.pb[2];
        valid_range(o.off_w, g.s[2], g.in[2], g.out[2], o.w_lo, o.w_hi);
        return o;
    }

    // Output coordinate of column j.
    struct Col {
        dim_t n, od, oh, ow;
    };
    Col col(dim_t j) const {
        Col c{};
        c.n = j / cols;
        dim_t pos = j % cols;
        c.ow = pos % g.out[2];
        pos /= g.out[2];
        c.oh = pos % g.out[1];
        c.od = pos / g.out[1];
        return c;
    }

    // Writes row r's elements at output positions (od, oh, ow0 .. ow0 + len) of image img (id0 =
    // od * s, ih0 = oh * s) to out[0 .. len): zeros outside the input, a run of the input line
    // inside (its even and odd halves when deint).
    void copy_segment(const Row& r, const float* img, dim_t id0, dim_t ih0, dim_t ow0, dim_t len,
                      float* out) const {
        const dim_t id = id0 + r.off_d, ih = ih0 + r.off_h;
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
            std::fill_n(out, len, 0.0f);
            return;
        }
        const float* line = img + r.ci * in_size + (id * g.in[1] + ih) * g.in[2];
        const dim_t lo = std::clamp(r.w_lo, ow0, ow0 + len) - ow0;
        const dim_t hi = std::clamp(r.w_hi, ow0 + lo, ow0 + len) - ow0;
        if (!deint) {
            copy_run(line + ow0 * g.s[2] + r.off_w, g.s[2], lo, hi, len, out);
            return;
        }
        // Element iw = (ow0 + e) * 2 + off_w: all of one parity, at (iw - parity) / 2 of its half.
        const dim_t iw0 = ow0 * 2 + r.off_w, par = iw0 & 1;
        copy_run(line + (par ? we : 0) + (iw0 - par) / 2, 1, lo, hi, len, out);
    }

    // Writes row r's elements for columns c, c+1 ... (len of them) to out[0 .. len), copied as
    // runs along ow.
    void gather(const Row& r, Col c, dim_t len, float* out) const {
        for (dim_t x = 0; x < len;) {
            const dim_t seg = std::min(len - x, g.out[2] - c.ow);
            copy_segment(r, src + c.n * n_stride, c.od * g.s[0], c.oh * g.s[1], c.ow, seg, out + x);
            x += seg;
            next_row(c);
        }
    }

    // Advances c to the start of the next output row (ow = 0).
    void next_row(Col& c) const {
        c.ow = 0;
        if (++c.oh == g.out[1]) {
            c.oh = 0;
            if (++c.od == g.out[0]) {
                c.od = 0;
                ++c.n;
            }
        }
    }
    void next(Col& c) const {
        if (++c.ow == g.out[2]) next_row(c);
    }

    // Element (r, c) for a row r described by its decomposition.
    float at(const Row& r, const Col& c) const {
        const dim_t id = c.od * g.s[0] + r.off_d, ih = c.oh * g.s[1] + r.off_h,
                    iw = c.ow * g.s[2] + r.off_w;
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2])
            return 0.0f;
        return src[c.n * n_stride + r.ci * in_size + (id * g.in[1] + ih) * g.in[2] + iw];
    }
};

// Decompositions of rows [k0, k0 + kc), in a per-thread buffer.
inline const Im2col::Row* rows_of(const Im2col& m, dim_t k0, dim_t kc) {
    thread_local std::vector<Im2col::Row> rows;
    rows.resize(static_cast<std::size_t>(kc));
    for (dim_t k = 0; k < kc; ++k) rows[static_cast<std::size_t>(k)] = m.row(k0 + k);
    return rows.data();
}

// B = im2col: b(k = r, j) packed into panels of nr columns, gathered as runs along ow. With
// fixed_rows, row k is fixed_rows[k] instead of the decomposition of k.
struct Im2colB {
    const Im2col* m;
    const Im2col::Row* fixed_rows = nullptr;
    dim_t k_off = 0;  // row of im2col at the product's k = 0

    // In-place rows (RowsInPlace in microkernel.hpp): a panel of nr columns within one output
    // row, stride 1 along w, every row of it inside the image.
    const Im2col::Row* block_rows(dim_t k0, dim_t kc) const {
        return fixed_rows ? fixed_rows + k_off + k0 : rows_of(*m, k_off + k0, kc);
    }
    // Panels end where an output row ends, when rows are at least half a panel wide.
    dim_t run_end(dim_t j, int nr) const {
        if (m->g.s[2] != 1 || 2 * m->g.out[2] < nr) return j + nr;
        return j + m->g.out[2] - j % m->g.out[2];
    }
    bool rows(dim_t, dim_t kc, dim_t j, int nv, const Im2col::Row* rws, const float** out) const {
        const Geom3& g = m->g;
        if (g.s[2] != 1) return false;
        const Im2col::Col c0 = m->col(j);
        if (c0.ow + nv > g.out[2]) return false;
        for (dim_t k = 0; k < kc; ++k) {
            const Im2col::Row& r = rws[k];
            const dim_t id = c0.od * g.s[0] + r.off_d, ih = c0.oh * g.s[1] + r.off_h;
            if (c0.ow < r.w_lo || c0.ow + nv > r.w_hi || id < 0 || id >= g.in[0] || ih < 0 ||
                ih >= g.in[1])
                return false;
            out[k] = m->src + c0.n * m->n_stride + r.ci * m->in_size +
                     (id * g.in[1] + ih) * g.in[2] + r.off_w + c0.ow;
        }
        return true;
    }

    void operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const {
        const Im2col::Row* rows = block_rows(k0, kc);
        const Geom3& g = m->g;
        // A panel's columns fall into runs along ow, one per output row it touches (one run in a
        // wide layer, up to five in a 7x7 one): listed once per panel, then each row k copies
        // its runs from the input lines.
        struct Run {
            const float* img;  // image n, first channel of the group
            dim_t id0, ih0;    // od * s, oh * s
            dim_t ow0, len, x;
        };
        thread_local std::vector<Run> runs;
        for (dim_t jp = 0; jp < nc; jp += nr) {
            const dim_t nv = std::min<dim_t>(nr, nc - jp);
            float* d = dst + jp * kc;
            runs.clear();
            Im2col::Col c = m->col(j0 + jp);
            for (dim_t x = 0; x < nv;) {
                const dim_t len = std::min(nv - x, g.out[2] - c.ow);
                runs.push_back(
                    {m->src + c.n * m->n_stride, c.od * g.s[0], c.oh * g.s[1], c.ow, len, x});
                x += len;
                m->next_row(c);
            }
            for (dim_t k = 0; k < kc; ++k) {
                const Im2col::Row& r = rows[k];
                float* o = d + k * nr;
                for (const Run& u : runs)
                    m->copy_segment(r, u.img, u.id0, u.ih0, u.ow0, u.len, o + u.x);
                for (dim_t e = nv; e < nr; ++e) o[e] = 0.0f;
            }
        }
    }
};

// B = im2col^T of one image: b(k = position p, j = row r).
struct Im2colTB {
    const Im2col* m;
    dim_t k_off = 0;  // position of the product's k = 0
    // Each row r of the panel is gathered along the positions into a row of tmp (runs along ow,
    // contiguous writes), then the panel is transposed out of tmp.
    void operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const {
        const Im2col::Col c0 = m->col(k_off + k0);
        thread_local std::vector<float> tmp;
        tmp.resize(static_cast<std::size_t>(nr * kc));
        for (dim_t jp = 0; jp < nc; jp += nr) {
            const dim_t nv = std::min<dim_t>(nr, nc - jp);
            for (dim_t j = 0; j < nv; ++j)
                m->gather(m->row(j0 + jp + j), c0, kc, tmp.data() + j * kc);
            pack_transposed(tmp.data(), kc, nv, kc, nr, dst + jp * kc);
        }
    }
};

// A 1x1 unpadded strided problem whose sampled positions all lie inside the input: its B is the
// input sampled at the strides (subsample_input), for nb images at most 4 MiB.
bool can_subsample(const Problem& p, dim_t nb);
// A 1x1 whose B is the input read in place, or its copy sampled at the strides (one image).
bool reads_input_1x1(const Problem& p);
// sub (nn x cg x out positions) = channels [0, cg) of images [0, nn) at src (n_stride floats
// apart) sampled at the strides.
void subsample_input(const Geom3& g, const float* src, dim_t n_stride, dim_t nn, dim_t cg,
                     float* sub);
// Stride 2 along w, not a 1x1: each input line copied de-interleaved (deinterleave_w), for nb
// images at most 4 MiB.
bool can_deinterleave(const Problem& p, dim_t nb);
// dst (nn x cg x in positions) = channels [0, cg) of images [0, nn) at m's source, each line
// de-interleaved; m then reads it (Im2col::deint).
void deinterleave_w(Im2col& m, dim_t nn, dim_t cg, float* dst);
// Images per GEMM where small images are merged into its columns.
dim_t images_per_gemm(const Problem& p);

// Independent products enough to give every thread several: run them side by side, each on
// one thread, rather than each product on all threads (a barrier per product).
inline bool images_in_parallel(dim_t products) {
    const int t = omp_get_max_threads();
    return t > 1 && !omp_in_parallel() && products >= 2 * t;
}

// Runs work(id, nt, out) on every thread, out being c for thread 0 and a partial of csize floats
// for each other thread (scratch slot 3), then adds the partials into c, split over the threads
// (recorded as "gemm" into each thread's profiler of tp, if any). For work split along a
// reduction (images, positions, im2col rows).
template <class Work>
void sum_over_threads(int threads, float* c, std::size_t csize, const Work& work,
                      ThreadProfilers* tp = nullptr) {
    std::vector<float*> part(static_cast<std::size_t>(threads), nullptr);
    // Every thread reaches the barrier whatever failed; after it, the failure (if any) is seen
    // by all of them alike, so that all skip the shared loop or none does.
    ParallelError err;
#pragma omp parallel num_threads(threads)
    {
        const int id = omp_get_thread_num(), nt = omp_get_num_threads();
        err.run([&] {
            float* out = id == 0 ? c : scratch(3, csize);
            part[static_cast<std::size_t>(id)] = out;
            work(id, nt, out);
        });
#pragma omp barrier
        if (!err.failed()) {
            Span s(tp ? tp->mine() : nullptr, "gemm");
#pragma omp for schedule(static)
            for (std::size_t e = 0; e < csize; ++e) {
                float v = c[e];
                for (int q = 1; q < nt; ++q) v += part[static_cast<std::size_t>(q)][e];
                c[e] = v;
            }
        }
    }
    err.rethrow();
}

// Whether the shifted and pointwise tiles are AVX2's (shifted_row_avx2 in
// microkernel_avx2.cpp): a tile of 12 positions x 32 channels computed as passes of at most 6
// positions x 16 channels, each rereading its inputs and storing its part of the tile transposed,
// where AVX-512 holds the whole tile in registers; a 7-wide row runs passes of 4 and 3 positions,
// whose 8 and 6 accumulators leave the FMA units partly idle. The rules measured with AVX-512 are
// narrowed for them (use_shifted, use_pointwise, pointwise_bwd_data_problem: measured on a Zen 3
// there).
inline bool narrow_tiles() {
    return !avx512_selected();
}

// Width Wh of the phase planes' rows along an axis (implicit_gemm_shifted.cpp says how).
dim_t shared_pad_width(dim_t s, dim_t d, dim_t pb, dim_t in, dim_t out, dim_t k);

// The forward computed transposed from a padded input split into stride phases ("shifted"
// tiles). Each channel's input, padded, is stored as s_h x s_w phase planes of Hh x Wh
// (space to depth: plane (ph, pw) holds padded rows s_h yy + ph and columns s_w xx + pw), with
// Hh x Wh given below. Output position p = oh * Wh + ow
// then reads tap (ci, kh, kw) at
//   plane (ci, kh dh mod s_h, kw dw mod s_w) + (kh dh / s_h) Wh + kw dw / s_w + p,
// so for every tap consecutive positions have their inputs side by side. dst^T (positions x
// K/G) = X' W_g^T runs as tiles of up to 12 positions of one output row x 32 output channels,
// whose row values are broadcast straight from the planes (MicroKernel::shifted_row_fn),
// against W_g^T packed once: nothing is gathered per panel, where im2col's packer copied every
// tap of every panel (a quarter of the 56x56 3x3 forward). The weight gradient's tiles run
// along each row's OW positions (a run per output row), and only wide outputs take it. Rows share
// their padding: a tap that reads past the end of a row reads the next row's left padding, zero
// too, so Wh is the narrowest width for which every tap a kept position reads is right
// (shared_pad_width; 3x3 padding 1: Wh = OW + 1, not OW + 2, 1.8% dropped at 56x56 rather
// than 3.4%), and each plane has one more row for the last row's reads: Hh = OH + (KH-1) dh / s_h
// + 1.
struct Shifted {
    Geom3 g;
    dim_t sh, sw, hh, wh, plane, npos, cg, ks, rows;
    std::vector<dim_t> off;  // per reduction row r = (ci, kh, kw): where its inputs start
    explicit Shifted(const Problem& p)
        : g(geom3(p)),
          sh(g.s[1]),
          sw(g.s[2]),
          hh(g.out[1] + (g.k[1] - 1) * g.d[1] / g.s[1] + 1),  // + the row the last one wraps to
          wh(narrowest_fits(p.icg(), g, hh)
                 ? shared_pad_width(sw, g.d[2], g.pb[2], g.in[2], g.out[2], g.k[2])
                 : g.out[2] + (g.k[2] - 1) * g.d[2] / sw),
          plane(sat_mul(hh, wh)),
          npos(sat_mul(g.out[1], wh)),
          cg(p.icg()),
          ks(p.kernel_spatial()),
          rows(cg * ks) {}
    // Floats of one image's planes and of the zeros after them, read by the dropped positions
    // of the last row (up to Wh + 11 past the last plane).
    dim_t size() const { return sat_add(sat_mul({cg, sh, sw, plane}), slack()); }
    // Whether planes of the narrowest width (out) are within kMaxPlanes floats: the planes are
    // never used beyond that (shifted_possible), and a width search over a kernel of 2^31 taps,
    // or planes of huge strides, would loop for hours or overflow (the widest width is used
    // then).
    static constexpr dim_t kMaxPlanes = dim_t{1} << 22;
    // So is a search of more than 2^26 steps (widths x taps x outputs; conv1's: 4 x 7 x 112).
    static bool narrowest_fits(dim_t cg, const Geom3& g, dim_t hh) {
        const dim_t widths = (g.k[2] - 1) * g.d[2] / g.s[2] + 1;
        return sat_mul({cg, g.s[1], g.s[2], hh, g.out[2]}) <= kMaxPlanes &&
               sat_mul({widths, g.k[2], g.out[2]}) <= (dim_t{1} << 26);
    }
    dim_t slack() const { return wh + 16; }
    // Reduction row (ci, kh, kw) at (kh, ci, kw) order, the forward's.
    dim_t kh_major(dim_t ci, dim_t kh, dim_t kw) const { return (kh * cg + ci) * g.k[2] + kw; }
    // off[r] for the rows in (ci, kh, kw) order, or in (kh, ci, kw) order.
    // (Nested loops, no division per row: with four or five per row, these offsets and the
    // forward's row order of 512 channels of 3x3 took 0.080 ms a call, 7% of res5a_branch2b's
    // forward at batch 1; now 0.021.)
    void make_offsets(bool by_kh = false) {
        off.resize(static_cast<std::size_t>(rows));
        // Tap kw's phase along w and its column in the phase's rows.
        std::vector<dim_t> phase_w(static_cast<std::size_t>(g.k[2])), col_w(phase_w.size());
        for (dim_t kw = 0; kw < g.k[2]; ++kw) {
            phase_w[static_cast<std::size_t>(kw)] = kw * g.d[2] % sw;
            col_w[static_cast<std::size_t>(kw)] = kw * g.d[2] / sw;
        }
        for (dim_t ci = 0, r = 0; ci < cg; ++ci)
            for (dim_t kh = 0; kh < g.k[1]; ++kh) {
                const dim_t th = kh * g.d[1], plane0 = (ci * sh + th % sh) * sw,
                            row0 = th / sh * wh;
                for (dim_t kw = 0; kw < g.k[2]; ++kw, ++r) {
                    const auto w = static_cast<std::size_t>(kw);
                    off[static_cast<std::size_t>(by_kh ? kh_major(ci, kh, kw) : r)] =
                        (plane0 + phase_w[w]) * plane + row0 + col_w[w];
                }
            }
    }
    // off[r] for the rows in (kh, ci, kw) order into the input itself (unpadded, one phase; the
    // forward's tiles that read it in place, unpadded_tiles_apply): negative where a tap lies
    // above or left of a row's first input, which the tiles skip.
    void make_input_offsets() {
        off.resize(static_cast<std::size_t>(rows));
        for (dim_t ci = 0; ci < cg; ++ci)
            for (dim_t kh = 0; kh < g.k[1]; ++kh)
                for (dim_t kw = 0; kw < g.k[2]; ++kw)
                    off[static_cast<std::size_t>(kh_major(ci, kh, kw))] =
                        ci * g.in_size() + (kh * g.d[1] - g.pb[1]) * g.in[2] + kw * g.d[2] -
                        g.pb[2];
    }
    // Share `id` of `nt` of the planes (channel, phase h, phase w) of the image whose group's
    // first channel is at x, into the planes at xp: split by planes, not channels, so that
    // conv1's 3 channels x 4 phases go 6 and 6 to two threads (by channels, 4 and 8).
    void pad(const float* x, float* xp, dim_t id, dim_t nt) const {
        const dim_t planes = cg * sh * sw;
        pad_part(x, xp, planes * id / nt, planes * (id + 1) / nt, 0, hh, id == nt - 1);
    }
    // Rows [y0, y1) of every plane, and with last the zeros after the planes.
    void pad_rows(const float* x, float* xp, dim_t y0, dim_t y1, bool last) const {
        pad_part(x, xp, 0, cg * sh * sw, y0, y1, last);
    }
    // Rows [y0, y1) of planes [q0, q1).
    void pad_part(const float* x, float* xp, dim_t q0, dim_t q1, dim_t y0, dim_t y1,
                  bool last) const {
        const dim_t in_h = g.in[1], in_w = g.in[2], is = in_h * in_w;
        for (dim_t q = q0; q < q1; ++q) {
            const dim_t ci = q / (sh * sw), ph = q / sw % sh, pw = q % sw;
            // Columns xx in [lo, hi) lie inside the input: iw = xx s_w + pw - pb.
            dim_t lo = 0, hi = 0;
            valid_range(pw - g.pb[2], sw, in_w, wh, lo, hi);
            for (dim_t yy = y0; yy < y1; ++yy) {
                float* to = xp + q * plane + yy * wh;
                const dim_t ih = yy * sh + ph - g.pb[1];
                if (ih < 0 || ih >= in_h) {
                    std::fill_n(to, wh, 0.0f);
                    continue;
                }
                // The input row 8 rows on is prefetched (with the first of the phases along w,
                // which read the same rows), as subsample_input does: conv1's input, cold at
                // every call in the bench. 6 alternating rounds of 100 calls (batch 32: 3 of
                // 10), pad medians: batch 1 0.163 -> 0.119 ms, batch 32 4.64 -> 3.35.
                if (pw == 0)
                    prefetch_ahead(x + ci * is + ih * in_w, 8 * sh * in_w,
                                   in_w * dim_t{sizeof(float)});
                copy_run(x + ci * is + ih * in_w + pw - g.pb[2], sw, lo, hi, wh, to);
            }
        }
        if (last) std::fill_n(xp + size() - slack(), slack(), 0.0f);
    }
};

bool shifted_possible(const Problem& p);
// The weight gradient from the planes (implicit_gemm_shifted.cpp).
bool use_shifted_wgrad(const Problem& p, const Tuning& t);

// The layouts of prepare_weights: what implicit_gemm packs for a problem and pass.
enum PanelLayout : int {
    kNoPanels = 0,             // it reads the weights in place
    kShiftedPanels = 1,        // forward_shifted's W^T (ShiftedPanels)
    kPointwisePanels = 2,      // forward_pointwise's W^T (pack_pointwise_panels)
    kFlipRotPanels = 3,        // backward_data_shifted's FlipRot(W)^T (ShiftedPanels with flip)
    kPointwiseFlipPanels = 4,  // backward_data_pointwise's W in panels (pack_pointwise_flip_panels)
};

// a's prepared weights in that layout, or null (none given, or prepared in another layout:
// then the call packs its own). Throws Error when they were prepared for another problem.
inline const float* prepared_layout(const Problem& p, Pass pass, const ConvArgs& a,
                                    PanelLayout layout) {
    return a.prepared ? a.prepared->packed(p, pass, layout) : nullptr;
}

// W^T of a forward_shifted problem p in panels of 32 output channels (zero beyond K/G), rows in
// the tiles' (kh, ci, kw) order (Shifted::kh_major), the panels of each group one after another.
// With flip, p is a backward data's forward problem and wei the stored weights (K and C
// swapped), read FlipRot.
struct ShiftedPanels {
    dim_t kg, cg, rows, kw_n, ks, npan;
    bool flip;
    std::vector<dim_t> to_row, flip_row;
    ShiftedPanels(const Problem& p, const Shifted& sg, bool flip_)
        : kg(p.ocg()),
          cg(sg.cg),
          rows(sg.rows),
          kw_n(sg.g.k[2]),
          ks(sg.ks),
          npan((kg + 31) / 32),
          flip(flip_) {
        const dim_t nr = 32, kh_n = sg.g.k[1];
        // Where each stored row (ci, kh, kw) goes in a panel: its (kh, ci, kw) row. With flip,
        // where stored tap k of input channel 0 goes: p's tap ks-1-k.
        if (!flip) {
            to_row.resize(static_cast<std::size_t>(rows));
            for (dim_t ci = 0, r = 0; ci < cg; ++ci)
                for (dim_t kh = 0; kh < kh_n; ++kh)
                    for (dim_t kw = 0; kw < kw_n; ++kw, ++r)
                        to_row[static_cast<std::size_t>(r)] = sg.kh_major(ci, kh, kw) * nr;
            return;
        }
        flip_row.resize(static_cast<std::size_t>(ks));
        for (dim_t k = 0; k < ks; ++k)
            flip_row[static_cast<std::size_t>(k)] =
                sg.kh_major(0, (ks - 1 - k) / kw_n, (ks - 1 - k) % kw_n) * nr;
    }
    // Floats of every group's panels.
    std::size_t size(dim_t groups) const {
        return static_cast<std::size_t>(groups * npan * 32 * rows);
    }
    // Panels [jp0, jp1) of group gi, one after another from `to`.
    void pack(const float* wei, dim_t gi, dim_t jp0, dim_t jp1, float* to) const {
        const int nr = 32;
        const auto nv = [&](dim_t jp) { return std::min<dim_t>(32, kg - jp * 32); };
        if (!flip) {
            for (dim_t jp = jp0; jp < jp1; ++jp, to += 32 * rows)
                pack_transposed(wei + (gi * kg + jp * 32) * rows, rows, nv(jp), rows, nr, to,
                                to_row.data());
            return;
        }
        // FlipRot: p's tap t of (ci, oc) is the stored weights' tap ks-1-t of output channel ci,
        // input channel oc; for each ci those of the panels' oc are contiguous, read in order,
        // each stored tap written to its row (flip_row, after ci's kw_n rows of the first kh).
        // Each ci's run lies a whole row of stored weights (K/G x taps) after the last: the
        // runs 4 ahead are prefetched, else each waited on L3 (hardware prefetchers do not
        // cross the 18 KiB between them at 512 channels). res5a_branch2b's backward data at
        // batch 1 (through the planes), bench, 2 threads: fliprot 0.65-0.72 -> 0.37-0.39 ms;
        // res4a_branch2b 0.107-0.138 -> 0.071-0.082.
        const dim_t ahead = 4,
                    bytes = (std::min(jp1 * 32, kg) - jp0 * 32) * ks * dim_t{sizeof(float)};
        for (dim_t ci = 0; ci < cg; ++ci) {
            if (ci + ahead < cg) {
                const char* next = reinterpret_cast<const char*>(
                    wei + ((gi * cg + ci + ahead) * kg + jp0 * 32) * ks);
                for (dim_t b = 0; b < bytes; b += 64) __builtin_prefetch(next + b);
            }
            for (dim_t jp = jp0; jp < jp1; ++jp)
                pack_transposed(wei + ((gi * cg + ci) * kg + jp * 32) * ks, ks, nv(jp), ks, nr,
                                to + (jp - jp0) * 32 * rows + ci * kw_n * 32, flip_row.data());
        }
    }
};

// Whether the forward (flip: the backward data through FlipRot) takes the shifted tiles, and
// those tiles on p (implicit_gemm_shifted.cpp). With flip, a.wei is the weights of the problem
// whose backward data p is (K and C swapped); prepared: the panels (ShiftedPanels) packed once by
// prepare_weights, or null (packed here).
bool use_shifted(const Problem& p, const Tuning& t, bool flip = false, bool prepared = false);
void forward_shifted(const Problem& p, const ConvArgs& a, Profiler* prof, bool flip = false,
                     const float* prepared = nullptr);

// The 1x1 (pointwise) tiles (implicit_gemm_pointwise.cpp): whether they pay on p, the size and
// packing of their panels of W_g^T (and of a 1x1 backward data's W rows), and the tiles.
bool use_pointwise(const Problem& p, const Tuning& t, bool prepared = false);
std::size_t pointwise_panels_size(const Problem& p);
void pack_pointwise_panels(const Problem& p, const float* wei, float* wt);
void pack_pointwise_flip_panels(const Problem& q, const float* wei, float* wt);
void forward_pointwise(const Problem& p, const ConvArgs& a, Profiler* prof,
                       const float* prepared = nullptr, bool flip = false);

// Backward data through the forward's tiles (implicit_gemm_pointwise.cpp): whether p's runs as
// the forward problem q by the shifted or the pointwise tiles, and those runs.
bool shifted_bwd_data_problem(const Problem& p, Problem& q, const Tuning& t, bool prepared = false);
bool pointwise_bwd_data_problem(const Problem& p, Problem& q, const Tuning& t,
                                bool prepared = false);
void backward_data_pointwise(const Problem& p, const Problem& q, const ConvArgs& a, Profiler* prof,
                             const float* prepared);
void backward_data_shifted(const Problem& q, const ConvArgs& a, Profiler* prof,
                           const float* prepared);
// What implicit_gemm packs for p's forward and backward data (prepared: the layout that
// prepare_weights packs); q receives the forward problem whose tiles compute the backward data.
PanelLayout forward_layout(const Problem& p, const Tuning& t, bool prepared = false);
PanelLayout backward_data_layout(const Problem& p, const Tuning& t, Problem* q = nullptr);

}  // namespace convlab::detail
