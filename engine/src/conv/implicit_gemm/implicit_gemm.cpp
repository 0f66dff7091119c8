// implicit_gemm: the im2col GEMMs without a column matrix in memory. The blocked GEMM core
// (microkernel.hpp) asks its B packer for one KC x NC block at a time; the packers below gather
// that block straight from the activations (the im2col map, applied tile by tile), so the only
// buffers are the packed tiles that fit in cache, and, at most 4 MiB each, an input reordered
// once (strided 1x1: sampled at the strides; stride 2: de-interleaved along w) and the partial
// products of threads that split a reduction.
//
// [SECTION] im2col gather      B(r, j) = im2col(r, j), columns j = (n, od, oh, ow) over a batch
// [SECTION] forward            dst_g = W_g * B, batch merged into the columns when images are small
// [SECTION] backward data      stride phases, one GEMM per phase (no col2im, no zero insertion)
// [SECTION] backward weight    dW_g = sum_n dY_g(n) * B(n)^T (the packer gathers B^T)
#include "omp_compat.hpp"

#include "x86.hpp"
#if CONVLAB_X86
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms.hpp"
#include "checked.hpp"
#include "convlab/kernels.hpp"
#include "geom.hpp"
#include "microkernel.hpp"
#include "parallel.hpp"
#include "thread_profile.hpp"

namespace convlab::detail {

namespace {

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
__attribute__((target("avx512f,bmi2"))) void copy_run_avx512(const float* sp, dim_t sw, dim_t lo,
                                                             dim_t hi, dim_t len, float* out) {
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
__attribute__((target("avx2"))) dim_t copy_stride2_avx2(const float* sp, dim_t e, dim_t hi,
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
const Im2col::Row* rows_of(const Im2col& m, dim_t k0, dim_t kc) {
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
bool can_subsample(const Problem& p, dim_t nb) {
    if (p.kernel_spatial() != 1 || im2col_is_identity(p)) return false;
    if (static_cast<std::size_t>(nb * p.icg() * p.out_spatial()) * sizeof(float) > (4u << 20))
        return false;
    const Geom3 g = geom3(p);
    for (int x = 0; x < 3; ++x)
        if (g.pb[x] != 0 || (g.out[x] - 1) * g.s[x] >= g.in[x]) return false;
    return true;
}

// A 1x1 whose B is the input read in place, or its copy sampled at the strides (one image).
bool reads_input_1x1(const Problem& p) {
    return im2col_is_identity(p) || can_subsample(p, 1);
}

// sub (nn x cg x out positions) = channels [0, cg) of images [0, nn) at src (n_stride floats
// apart) sampled at the strides.
void subsample_input(const Geom3& g, const float* src, dim_t n_stride, dim_t nn, dim_t cg,
                     float* sub) {
    const dim_t is = g.in_size(), os = g.out_size();
    // The source of the line 8 lines on is prefetched while this one is copied (prefetch_ahead).
    // The bench calls a layer every 2 ms or so, and on the Zen 3 its input is back in memory by
    // then, whatever ran in between: a harness sampling res3a_branch1's 3.2 MB input on 2 threads,
    // only spinning between copies, took 0.06 ms back to back, 0.11 after 1 ms of spinning and 0.41
    // after 2 ms. Bench, 6 alternating rounds of 100 calls (batch 32: 3 of 10), pack_src medians:
    // res3a_branch1 at batch 1, scalar 0.50 ms, vectorised 0.39, and with the prefetch (4, 8 or 16
    // lines ahead) 0.32-0.33; at batch 32 15.9 -> 11.6 -> 10.2 (16 ahead: 10.0). With 28 or 14
    // floats a line (res4a, res5a) tied (4.9-6.0 ms, 2.1-2.3).
    constexpr dim_t kAhead = 8;
    const dim_t run_bytes = ((g.out[2] - 1) * g.s[2] + 1) * dim_t{sizeof(float)};
    // Both threads from 8192 elements: res5a at batch 1 (50176) left one thread waiting.
#pragma omp parallel for collapse(2) schedule(static) if (nn * cg * os > 8192)
    for (dim_t i = 0; i < nn; ++i)
        for (dim_t c = 0; c < cg; ++c) {
            const float* from = src + i * n_stride + c * is;
            float* to = sub + (i * cg + c) * os;
            for (dim_t od = 0; od < g.out[0]; ++od)
                for (dim_t oh = 0; oh < g.out[1]; ++oh) {
                    const float* line = from + (od * g.s[0] * g.in[1] + oh * g.s[1]) * g.in[2];
                    prefetch_ahead(line, kAhead * g.s[1] * g.in[2], run_bytes);
                    copy_run(line, g.s[2], 0, g.out[2], g.out[2],
                             to + (od * g.out[1] + oh) * g.out[2]);
                }
        }
}

// Stride 2 along w (conv1), not a 1x1 (subsample_input takes those): each input line is
// copied de-interleaved, even elements then odd ones, so that the packers copy runs instead of
// gathering every other float. For nb images at most 4 MiB.
bool can_deinterleave(const Problem& p, dim_t nb) {
    const Geom3 g = geom3(p);
    return g.s[2] == 2 && p.kernel_spatial() > 1 &&
           static_cast<std::size_t>(nb * p.icg() * p.in_spatial()) * sizeof(float) <= (4u << 20);
}

// dst (nn x cg x in positions) = channels [0, cg) of images [0, nn) at src (n_stride floats
// apart), each line de-interleaved; m then reads it (Im2col::deint).
void deinterleave_w(Im2col& m, dim_t nn, dim_t cg, float* dst) {
    const Geom3& g = m.g;
    const dim_t is = g.in_size(), w = g.in[2], we = (w + 1) / 2, lines = g.in[0] * g.in[1];
#pragma omp parallel for collapse(2) schedule(static) if (nn * cg * is > 65536)
    for (dim_t i = 0; i < nn; ++i)
        for (dim_t c = 0; c < cg; ++c)
            for (dim_t l = 0; l < lines; ++l) {
                const float* from = m.src + i * m.n_stride + c * is + l * w;
                float* to = dst + (i * cg + c) * is + l * w;
                for (dim_t e = 0; e < we; ++e) to[e] = from[2 * e];
                for (dim_t e = 0; e < w / 2; ++e) to[we + e] = from[2 * e + 1];
            }
    m.src = dst;
    m.n_stride = cg * is;
    m.deint = true;
    m.we = we;
}

// Images per GEMM: small images (deep layers, the via_forward reductions) are merged so that
// the GEMM has enough columns to fill its tiles; the merged output (K/G x images*cols) stays
// within 4 MiB. From 512 positions one image fills them nearly: there the merged output stays
// within 1 MiB (the L2 of a core), since copying it back to (N, K, out...) from beyond L2 cost
// more than the edge tiles saved (res3a_branch2c, 28x28 and K = 512, batch 32, 2 threads,
// alternating: 16.8 -> 15.6 ms; K = 128 keeps two images).
dim_t images_per_gemm(const Problem& p) {
    const dim_t cols = p.out_spatial();
    if (cols >= 1024) return 1;
    const dim_t cap = cols >= 512 ? (1 << 18) : (1 << 20);
    return std::clamp<dim_t>(std::min<dim_t>(2048 / cols, cap / (p.ocg() * cols)), 1, p.mb);
}

// Independent products enough to give every thread several: run them side by side, each on
// one thread, rather than each product on all threads (a barrier per product).
bool images_in_parallel(dim_t products) {
    const int t = omp_get_max_threads();
    return t > 1 && !omp_in_parallel() && products >= 2 * t;
}

}  // namespace

// Images per product capped so that a batch of at least two images per thread splits into
// equal blocks (32 images, 2 threads: 4 blocks of 8, not 10 + 10 + 10 + 2), and then, down to
// half the cap, into a number of blocks that the threads share evenly: 5 images a product made
// 7 blocks of 32 images, one thread computing 17 or 20 images while the other computed 15 or 12
// (the 14x14 1x1s with 1024 output channels at batch 32), 4 makes 8. The Zen 3, bench, batch 32,
// 3 alternating rounds, ratio to oneDNN's median: res4a_branch1's forward 1.336/1.332/1.415 ->
// 1.294/1.288/1.301, res4a_branch2c's 1.275/1.295/1.327 -> 1.253/1.227/1.282.
dim_t balanced_images(dim_t nb, dim_t mb) {
    const dim_t t = omp_get_max_threads();
    if (t <= 1 || omp_in_parallel() || mb < 2 * t) return nb;
    nb = std::clamp<dim_t>(mb / (2 * t), 1, nb);
    for (dim_t b = nb; 2 * b >= nb; --b)
        if (((mb + b - 1) / b) % t == 0) return b;
    return nb;
}

namespace {
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
int g_shifted_mode = 0;       // 0: when it pays, 1: whenever possible (tests), 2: never
int g_row_lanes_mode = 0;     // 0: when it pays, 1: whenever possible (tests), 2: never
int g_stream_mode = 0;        // set_stream_output
int g_edge_mode = 0;          // set_edge_tiles: 0 skip the padding column's taps, 2 never
int g_unpadded_mode = 0;      // set_unpadded_tiles: 0 read the input in place where it can, 2 never
int g_strided_rows_mode = 0;  // set_strided_rows: 0 in place where it pays, 1 always, 2 never
int g_wgrad_taps_mode = 0;    // set_wgrad_taps: 0 where it applies, 2 never
int g_sampled_wgrad_mode = 0;  // set_sampled_wgrad: 0 where it pays, 1 always, 2 never, 3 not
                               // with whole images per thread
int g_pointwise_bwd_mode = 0;  // set_pointwise_bwd_data: 0 where it pays, 2 never

// Whether the shifted and pointwise tiles are AVX2's (shifted_row_avx2 in
// microkernel_avx2.cpp): a tile of 12 positions x 32 channels computed as passes of at most 6
// positions x 16 channels, each rereading its inputs and storing its part of the tile transposed,
// where AVX-512 holds the whole tile in registers; a 7-wide row runs passes of 4 and 3 positions,
// whose 8 and 6 accumulators leave the FMA units partly idle. The rules measured with AVX-512 are
// narrowed for them (use_shifted, use_pointwise, pointwise_bwd_data_problem: measured on a Zen 3
// there).
bool narrow_tiles() {
    return !avx512_selected();
}

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

// The weight gradient's tiles: wide enough that the dropped padding columns cost less than the
// gathers they save: outputs at least 14 wide, with 32 or more output channels per group.
// res4a_branch2b (3x3, 14x14; 2 of its 16 plane columns dropped) against im2col^T gathered, 2
// threads, min of 2-3 alternating medians: batch 1 1.31 -> 1.24 ms, batch 4 6.03 -> 5.29,
// batch 32 44.9 -> 38.6. At 7x7 (res5a_branch2b) it tied: 1.40 / 1.39, 48.2 / 48.4.
bool shifted_pays(const Problem& p) {
    return geom3(p).out[2] >= 14 && p.ocg() >= 32;
}

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
bool use_shifted_wgrad(const Problem& p) {
    if (g_shifted_mode == 2 || !microkernel().row_runs_fn[0][12] || !shifted_possible(p))
        return false;
    const Shifted sg(p);
    const dim_t npan = (p.ocg() + 31) / 32;
    if (static_cast<std::size_t>(npan * 32 * sg.npos) * sizeof(float) > (4u << 20)) return false;
    // Read by taps with whole images per thread (grouped, a tile over several): any width, and
    // a dW of any size (beyond 4 MiB the threads split its panels, no partials). res5a_branch2b
    // (7x7, 512 channels), harness, 2 threads, against the merged GEMM: batch 32 37.4 -> 30.8
    // ms, batch 8 9.33 -> 7.80, batch 4 4.63 -> 4.38; 256 channels at batch 32 10.4 -> 8.0. At
    // batch 1 (one image a tile of 42 positions) it lost, 1.19 -> 1.69.
    if (wgrad_taps_apply(p) && images_in_parallel(p.mb) && p.ocg() >= 32) return true;
    if (static_cast<std::size_t>(p.oc * p.icg() * p.kernel_spatial()) * sizeof(float) > (4u << 20))
        return false;
    return g_shifted_mode == 1 || shifted_pays(p);
}

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
const float* prepared_layout(const Problem& p, Pass pass, const ConvArgs& a, PanelLayout layout) {
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
// channels (res5a_branch2b) at batch 1, harness, 2 threads, 3 interleaved rounds against the
// GEMM, medians 1.34-1.40 -> 1.19-1.30 ms (min 1.21-1.34 -> 1.07-1.12). Not with flip (the
// backward data's FlipRot), whose packing costs more: 0.60-0.78 ms of that layer's 1.64-1.83,
// against col2im's 1.2; unless FlipRot(W) was prepared once (prepare_weights): then
// res5a_branch2b's backward data at batch 1, harness, 2 threads, 3 rounds, took 0.854-0.857 ms
// against col2im's 1.162-1.165 (14x14, 256 channels: 0.926-0.928 against 0.994-0.995).
bool use_shifted(const Problem& p, bool flip = false, bool prepared = false) {
    if (g_shifted_mode == 2 || !shifted_possible(p)) return false;
    if (g_shifted_mode == 1) return true;
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
void forward_shifted(const Problem& p, const ConvArgs& a, Profiler* prof, bool flip = false,
                     const float* prepared = nullptr) {
    const MicroKernel& uk = microkernel();
    Shifted sg(p);
    const Geom3& g = sg.g;
    const dim_t kg = p.ocg(), cg = sg.cg, rows = sg.rows, kh_n = g.k[1];
    const dim_t oh_n = g.out[1], ow_n = g.out[2], cols = oh_n * ow_n;
    const dim_t wh = sg.wh, per_kh = rows / kh_n;
    const dim_t npan = (kg + 31) / 32, is = g.in[1] * g.in[2];
    // Whole output rows in the lanes (row_lanes_apply: conv1's 112), 4 channels at a time.
    const bool lanes = row_lanes_apply(p);
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
    const bool in_place = unpadded_tiles_apply(p);
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
    const bool edges = edge_tiles_apply(p);
    // The input channels of image n, group gi.
    const auto image = [&](dim_t n, dim_t gi) { return a.src + (n * p.ic + gi * cg) * is; };
    // Share id of nt of the planes of image n, group gi into the planes at xp.
    const auto pad = [&](dim_t n, dim_t gi, float* xp, dim_t id, dim_t nt) {
        sg.pad(image(n, gi), xp, id, nt);
    };
    // Tiles [t0, t1) of image n, group gi, panel jp (its W^T at w). With rowbuf (whole rows of
    // tiles, t0 and t1 multiples of segs), each output row of the panel's channels is computed
    // into rowbuf (32 x OW) and then streamed to dst (stream_rows).
    const bool stream_lanes = lanes && streams_output(p);
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
        const bool stream = streams_output(p) && !lanes;  // (the lanes' tiles stream their own)
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

// 1x1 forward computed transposed, as the shifted tiles are: dst^T (positions x K/G) =
// X^T W_g^T in tiles of up to 12 positions of one image x 32 output channels, where the tile's
// 12 values of input channel ci are broadcast straight from the image's row ci (off[ci] =
// ci * positions), against W_g^T packed once. Nothing is gathered per panel and no merged
// images' products are copied back; strided 1x1s read the input sampled at the strides.
// set_shifted's mode applies: 1 takes it wherever it can run, 2 never.
//
// It pays where the GEMM would merge images (outputs of at most 256 positions) or sample the
// input, with 4 or more images to share the packing of W^T; on wide stride-1 outputs with 256
// or more input channels (the next chunk's inputs prefetched); on 1x1s strided by 2 read in
// place; and, with W^T prepared once, below 4 images on 14x14 and smaller outputs, strided
// 28x28 outputs and reductions of 512 or more (timings: docs/algorithms.md, "pointwise tiles").
// Whether the pointwise tiles can run p at all (set_shifted's mode 2: never), and whether they
// are forced (mode 1).
bool pointwise_possible(const Problem& p, bool& forced) {
    forced = false;
    if (g_shifted_mode == 2 || !microkernel().shifted_row_fn[1] || !reads_input_1x1(p))
        return false;
    const dim_t npan = (p.ocg() + 31) / 32;
    if (static_cast<std::size_t>(p.groups * npan * 32 * p.icg()) * sizeof(float) > (16u << 20))
        return false;
    forced = g_shifted_mode == 1;
    return forced || (p.ocg() >= 32 && p.icg() >= 32);
}

bool use_pointwise(const Problem& p, bool prepared = false) {
    bool forced = false;
    if (!pointwise_possible(p, forced)) return false;
    if (forced) return true;
    // AVX2 (narrow_tiles): only a 1x1 strided by 2 read in place with at most 128 output
    // channels. Zen 3, as in use_shifted, GEMM -> tiles (ms): res3a_branch2a (256 -> 128, to
    // 28x28) batch 1 0.78 -> 0.68, batch 32 40.8 -> 31.5; the other 14 of ResNet-50's 1x1 layers
    // tied or lost, 0.59-1.01x at batch 1 (res5a_branch1 2.48 -> 4.20), 0.32-1.03x at batch 32
    // (res5a_branch1 57.0 -> 180.6).
    if (narrow_tiles()) return strided_rows_apply(p) && p.ocg() <= 128 && (prepared || p.mb >= 4);
    if (p.mb < 4)
        return prepared && (p.out_spatial() <= 256 || strided_rows_apply(p) ||
                            (im2col_is_identity(p) && p.icg() >= 512));
    return p.out_spatial() <= 256 || strided_rows_apply(p) ||
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

// prepared: pack_pointwise_panels's, done once by prepare_weights, or null (packed here). With
// flip, p is a 1x1 backward data's forward problem q and a.wei the stored weights (K and C
// swapped), packed by pack_pointwise_flip_panels (prepared: that layout).
void forward_pointwise(const Problem& p, const ConvArgs& a, Profiler* prof,
                       const float* prepared = nullptr, bool flip = false) {
    const MicroKernel& uk = microkernel();
    const dim_t kg = p.ocg(), cg = p.icg(), cols = p.out_spatial(), is = p.in_spatial();
    const dim_t npan = (kg + 31) / 32;
    const Geom3 geo = geom3(p);
    // Strided by 2 along w (2-D and 1-D): the tiles read the image in place, every other
    // float of its rows, a tile within an output row; other strides sample the input first.
    const bool in_place = strided_rows_apply(p);
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

// p with its input and output channels swapped: the forward problem whose output is p's
// backward data, before its sizes and padding are set.
Problem channels_swapped(const Problem& p) {
    Problem q = p;
    q.ic = p.oc;
    q.oc = p.ic;
    return q;
}

// Backward data of a stride-1 problem is a forward correlation of dY with the flipped weights
// (FlipRot, as in via_forward), padded by (k-1)d - pad on each side: the forward problem q
// (C <-> K), for the shifted tiles when they pay on q (with prepared: FlipRot(W) packed once).
// False where a pad exceeds (k-1)d (q would crop) or a stride is not 1.
bool shifted_bwd_data_problem(const Problem& p, Problem& q, bool prepared = false) {
    q = channels_swapped(p);
    for (int i = 0; i < p.ndims; ++i) {
        const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
        if (p.stride[i] != 1 || p.pad_begin[i] > span || p.pad_end[i] > span) return false;
        q.in[i] = p.out(i);
        q.pad_begin[i] = span - p.pad_begin[i];
        q.pad_end[i] = span - p.pad_end[i];
    }
    return use_shifted(q, true, prepared);
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
bool pointwise_bwd_data_problem(const Problem& p, Problem& q, bool prepared = false) {
    if (g_pointwise_bwd_mode == 2 || !reads_input_1x1(p)) return false;
    const auto weight_bytes =
        static_cast<std::size_t>(p.groups * p.ocg() * p.icg()) * sizeof(float);
    if (!im2col_is_identity(p)) {  // strided (can_subsample)
        if (static_cast<std::size_t>(p.ic * p.out_spatial()) * sizeof(float) > (4u << 20))
            return false;  // one image's buffer, every group
        if (p.mb < 4 && g_shifted_mode != 1 && weight_bytes > (4u << 20)) return false;
    }
    q = channels_swapped(p);
    for (int i = 0; i < p.ndims; ++i) {
        q.in[i] = p.out(i);
        q.stride[i] = 1;
        q.pad_end[i] = 0;  // an end padding no sampled position reaches (can_subsample)
    }
    bool forced = false;
    if (!pointwise_possible(q, forced)) return false;
    if (forced) return true;
    // AVX2 (narrow_tiles): from 4 images, weights under 4 MiB, where the Zen 3 gained on most
    // 1x1 layers and lost on those with 4 MiB of weights and more (timings: docs/algorithms.md,
    // "pointwise backward data with AVX2").
    if (narrow_tiles()) return p.mb >= 4 && weight_bytes < (4u << 20);
    if (use_pointwise(q, prepared)) return true;
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
    forward_shifted(q, f, prof, true, prepared);
}

// What implicit_gemm packs for p's forward and backward data (the dispatch of
// forward_implicit_gemm and backward_data_implicit_gemm).
// With prepared, the layout prepare_weights packs (where the tiles pay on more problems).
//
// Of the forwards that the pointwise tiles take with W^T prepared below 4 images, those with
// more output than input channels at 64 positions or fewer (7x7) go to the GEMM instead, which
// reads W in place, because their 4-8 MiB of panels come from memory each call for 5 tiles
// (timings: docs/algorithms.md, "pointwise_forward").
bool pointwise_forward(const Problem& p, bool prepared) {
    if (!use_pointwise(p, prepared)) return false;
    if (g_shifted_mode == 1 || p.mb >= 4 || !prepared) return true;
    return !(p.ocg() > p.icg() && p.out_spatial() <= 64);
}

PanelLayout forward_layout(const Problem& p, bool prepared = false) {
    return pointwise_forward(p, prepared) ? kPointwisePanels
           : use_shifted(p)               ? kShiftedPanels
                                          : kNoPanels;
}

// (Where prepare_weights packs FlipRot(W), the shifted tiles pay on more problems.) q, when
// given, receives the forward problem whose tiles compute it.
PanelLayout backward_data_layout(const Problem& p, Problem* q = nullptr) {
    Problem fq;
    if (shifted_bwd_data_problem(p, fq, true)) {
        if (q) *q = fq;
        return kFlipRotPanels;
    }
    if (pointwise_bwd_data_problem(p, fq, true)) {
        if (q) *q = fq;
        return kPointwiseFlipPanels;
    }
    if (q) *q = p;
    return kNoPanels;
}

}  // namespace

void set_shifted(int mode) {
    g_shifted_mode = mode;
}

void set_stream_output(int mode) {
    g_stream_mode = mode;
}
namespace {
// Whether an output of `bytes` is written by non-temporal stores where its rule streams from
// `from` bytes on: set_stream_output's mode 1 always, 2 never.
bool stream_mode_allows(std::size_t bytes, std::size_t from) {
    return g_stream_mode != 2 && (g_stream_mode == 1 || bytes >= from);
}
}  // namespace
// The shifted forward with whole images per thread writes its output rows by non-temporal
// stores (stream_rows) once the output is 16 MiB or more, because a 12-position tile writes 48
// bytes of each 64-byte line, so every line was read from memory before being written. One
// image at a time, an output of 512 KiB or more streams too, because another layer's run
// between two calls leaves its lines out of cache (timings: docs/algorithms.md,
// "streams_output").
bool streams_output(const Problem& p) {
    return stream_mode_allows(
        static_cast<std::size_t>(p.mb * p.oc * p.out_spatial()) * sizeof(float),
        images_in_parallel(p.mb * p.groups) ? std::size_t{16} << 20 : std::size_t{512} << 10);
}

void set_edge_tiles(int mode) {
    g_edge_mode = mode;
}
void set_strided_rows(int mode) {
    g_strided_rows_mode = mode;
}
namespace {
// What both passes' stride-2 in-place tiles need: a 1x1 read in place, strided by 2 along w,
// 2-D or 1-D, with outputs at least min_width wide (any width in mode 1; never in mode 2).
bool strided_by_two_in_place(const Problem& p, dim_t min_width) {
    const Geom3 g = geom3(p);
    return g_strided_rows_mode != 2 && reads_input_1x1(p) && g.s[2] == 2 && g.out[0] == 1 &&
           g.in[0] == 1 && (g.out[2] >= min_width || g_strided_rows_mode == 1);
}
}  // namespace
// forward_pointwise reads a 1x1 strided by 2 along w in place (see there), for outputs at least
// 7 wide (2-D and 1-D), because with the next tile's inputs prefetched (shifted_row_s2_pf_fn)
// it beat the sampled copy (timings: docs/algorithms.md, "strided_rows_apply"). The mode: 0
// where it applies, 2 never (the input sampled first), 1 at any width.
bool strided_rows_apply(const Problem& p) {
    return microkernel().shifted_row_s2_fn[1] && strided_by_two_in_place(p, 7);
}
void set_pointwise_bwd_data(int mode) {
    g_pointwise_bwd_mode = mode;
}
void set_sampled_wgrad(int mode) {
    g_sampled_wgrad_mode = mode;
}
// A strided 1x1 weight gradient dW = dY X^T computed on all threads (few images), not
// transposed: the GEMM's B packer (SampledTB) reads X^T's panels straight from the input at the
// strides, where the sampled copy was written first (each thread sampling its channels) and then
// packed from. Its runs end at each output row, so it pays only for rows of 14 or more, and
// with whole images per thread (batch 32) the copy stays (timings: docs/algorithms.md,
// "sampled_wgrad_applies"). Mode 0: rows of 14 or more, 1: any (tests), 2: never.
bool sampled_wgrad_applies(const Problem& p) {
    return g_sampled_wgrad_mode != 2 && can_subsample(p, 1) &&
           (g_sampled_wgrad_mode == 1 || geom3(p).out[2] >= 14);
}
// The weight gradient's counterpart (backward_weight_implicit_gemm), where an image's dY^T (in
// panels of 32 channels) is within 512 KiB, for outputs at least 24 wide. Alternating, batch 32, 2
// threads, 3 rounds of medians against the sampled copy: res3a_branch2a (256 -> 128, 28x28 out,
// dY^T 392 KiB) 11.6/11.7/11.7 -> 10.5/10.5/10.4 ms; res3a_branch1 (256 -> 512, dY^T 1.5 MiB, its
// panels taken in blocks of 512 KiB) lost, 34.0-34.4 -> 37.4-41.5; 14x14 outputs tied (512 -> 256)
// or lost (512 -> 1024, 33.1-34.7 -> 37.6).
bool strided_wgrad_applies(const Problem& p) {
    const dim_t npan = (p.ocg() + 31) / 32;
    return microkernel().row_runs_fn[1][1] && strided_by_two_in_place(p, 24) &&
           static_cast<std::size_t>(npan * 32 * p.out_spatial()) * sizeof(float) <= (512u << 10);
}
void set_wgrad_taps(int mode) {
    g_wgrad_taps_mode = mode;
}
// Stride 1 with 8 or more input channels per group (a tile's 12 rows are channels of one tap).
bool wgrad_taps_apply(const Problem& p) {
    const Geom3 g = geom3(p);
    return g_wgrad_taps_mode != 2 && g.s[1] == 1 && g.s[2] == 1 && p.icg() >= 8;
}
void set_unpadded_tiles(int mode) {
    g_unpadded_mode = mode;
}
// forward_shifted reads the input in place (see there): its edge tiles apply, the rows are
// not strided, dilated or split into depth planes.
bool unpadded_tiles_apply(const Problem& p) {
    const Geom3 g = geom3(p);
    return g_unpadded_mode != 2 && edge_tiles_apply(p) && g.s[1] == 1 && g.d[1] == 1 &&
           g.k[0] == 1 && g.in[0] == 1;
}
// forward_shifted's edge tiles skip the taps on the padding column (see there).
bool edge_tiles_apply(const Problem& p) {
    const Geom3 g = geom3(p);
    return g_edge_mode != 2 && microkernel().shifted_edge_fn[2][1] && g.k[2] == 3 && g.d[2] == 1 &&
           g.s[2] == 1 && g.pb[2] == 1 && g.out[2] == g.in[2];
}

void set_row_lanes(int mode) {
    g_row_lanes_mode = mode;
}
// Output rows of 16 V positions, V <= kRowLanesMax, from padded planes (not the input in place,
// whose padding columns the row tiles do not skip); by default from 64 positions (16 or more
// accumulators), because conv1 gained at batch 8 and 32 and longer reductions tied (timings:
// docs/algorithms.md, "row_lanes_apply").
bool row_lanes_apply(const Problem& p) {
    const Geom3 g = geom3(p);
    const dim_t v = g.out[2] / 16;
    if (g_row_lanes_mode == 2 || g.out[2] % 16 != 0 || v < 1 || v > kRowLanesMax ||
        !microkernel().row_lanes_fn[v] || unpadded_tiles_apply(p))
        return false;
    return g_row_lanes_mode == 1 || v >= 4;
}

bool shifted_applies(const Problem& p, Pass pass, const ConvArgs* a) {
    Problem q;
    if (pass == Pass::BackwardData && a && prepared_layout(p, pass, *a, backward_data_layout(p)))
        return true;  // FlipRot(W) prepared: the layout exists only where the tiles run
    return pass == Pass::Forward ? use_shifted(p)
           : pass == Pass::BackwardWeight
               ? use_shifted_wgrad(p)
               : shifted_bwd_data_problem(p, q) || pointwise_bwd_data_problem(p, q);
}

// [SECTION] forward
namespace {
int g_swap_fwd = 0;  // 0: when it pays, 1: whenever possible (tests), 2: never
}  // namespace

void set_swap_forward(int mode) {
    g_swap_fwd = mode;
}

// A 1x1 forward with fewer output than input channels, an image per product (the bottlenecks'
// first 1x1s; at batch 4 and more the 14x14 and 7x7 ones and the strided ones take the 1x1
// tiles, use_pointwise): dst^T (positions x K/G) = X^T W_g^T, X^T (the image, or its copy
// sampled at the strides) read in place, column-contiguous, then transposed into dst. Its
// packed B is W^T, not the image, whose values the K/G rows used too few times for their
// packing to pay; 7x7 outputs lost, and strided ones below 784 positions; where the GEMM reads
// the image's rows in place (b_in_place_applies) nothing is packed either way. Only with the
// AVX-512 microkernel: with AVX2's 6 x 16 it lost (timings: docs/algorithms.md,
// "swapped_forward").
bool swapped_forward(const Problem& p) {
    if (g_swap_fwd == 2 || !reads_input_1x1(p) || use_pointwise(p)) return false;
    if (g_swap_fwd == 1) return true;
    if (!avx512_selected()) return false;
    const dim_t kg = p.ocg(), rows = p.icg(), cols = p.out_spatial();
    if (b_in_place_applies(microkernel_for(kg, cols, true), GemmBlocking{},
                           StridedA{nullptr, rows, 1}, StridedB{nullptr, cols, 1}, kg, rows))
        return false;
    return p.ocg() < p.icg() && p.out_spatial() >= (im2col_is_identity(p) ? 196 : 784);
}

// dst_g (Kg x nb*cols) = W_g (Kg x rows) * im2col (rows x nb*cols); nb > 1 goes through a
// buffer of nb images' outputs and is scattered to (N, K, out...).
void forward_implicit_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    PanelLayout layout = forward_layout(p, true);
    const float* prepared = prepared_layout(p, Pass::Forward, a, layout);
    if (!prepared) layout = forward_layout(p);
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
    const bool swap = (identity || subsample) && swapped_forward(p);
    // Stride 2 along w: the input de-interleaved once per image block (can_deinterleave).
    const bool deint = !subsample && !identity && can_deinterleave(p, nb);
    const dim_t blocks = (p.mb + nb - 1) / nb;
    const bool parallel_blocks = images_in_parallel(blocks * p.groups);
    // An output of 16 MiB or more is written by non-temporal stores where the GEMM writes it
    // in place (GemmBlocking::stream_c): its lines are not read from memory first. Batch 32,
    // 2 threads, 3 alternating rounds: 64 -> 256 at 56x56 16.9-17.8 -> 16.2-16.9 ms, 128 ->
    // 512 at 28x28 16.3-16.7 -> 15.6-16.4, 64 -> 64 at 56x56 5.0-5.3 -> 4.8-5.1; res3a_branch1
    // (from its sampled copy) tied.
    const bool stream = streams_output(p);
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
                             gemm(kg, cols, k1 - k0, StridedA{w.p + k0, w.rs, 1},
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
                t = product_transposed(kg, cols, rows, w, StridedB{x, xs, 1});
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
                gemm(kg, cols, rows, w, StridedB{sub, cols, 1}, dst0, cols, false, 0, stream);
            else
                gemm(kg, nn * cols, rows, w, ImagesB{sub, cg * cols, cols}, buf, nn * cols, false);
        } else if (nn == 1 && swap) {
            swapped(m.src, is);
        } else {
            Span s(prf, "gemm");
            if (nn == 1 && identity)  // 1x1, stride 1, no padding: B is the image itself
                gemm(kg, cols, rows, w, StridedB{m.src, is, 1}, dst0, cols, false, 0, stream, false,
                     batch_from_memory);
            else if (nn == 1 && split_k)
                gemm_split_k(w, m, dst0);
            else if (nn == 1)
                gemm(kg, cols, rows, w, Im2colB{&m}, dst0, cols, false, 0, stream);
            else if (identity)
                gemm(kg, nn * cols, rows, w, ImagesB{m.src, m.n_stride, is}, buf, nn * cols, false);
            else
                gemm(kg, nn * cols, rows, w, Im2colB{&m}, buf, nn * cols, false);
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
    const PanelLayout layout = backward_data_layout(p);
    const float* prepared = prepared_layout(p, Pass::BackwardData, a, layout);
    if (Problem q; shifted_bwd_data_problem(p, q, prepared != nullptr))
        return backward_data_shifted(q, a, prof, prepared);
    if (Problem q; pointwise_bwd_data_problem(p, q, prepared != nullptr))
        return backward_data_pointwise(p, q, a, prof,
                                       layout == kPointwiseFlipPanels ? prepared : nullptr);
    const Geom3 g = geom3(p);
    const dim_t kg = p.ocg(), cg = p.icg(), ks = p.kernel_spatial(), is = p.in_spatial();
    const dim_t os = p.out_spatial();
    if (im2col_is_identity(p) && os >= 1024) {
        Span sp(prof, "gemm");
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t grp = 0; grp < p.groups; ++grp)
                gemm(cg, is, kg, StridedA{a.wei + grp * kg * cg, 1, cg},
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
                        gemm(m, qs, kp, wt, StridedB{mi.src, os, 1}, out, qs, false);
                    else
                        gemm(m, nn * qs, kp, wt, Im2colB{&mi, rows.data()}, out, nn * qs, false);
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

// [SECTION] backward weight
// Whether the weight gradient runs over its images merged along the reduction: where an image has
// at most 64 positions, because image by image each short product loads and stores all of dW;
// at 28x28 and 56x56 each thread's images summed in its own dW pay instead (timings:
// docs/algorithms.md, "merge_images_wgrad").
namespace {
int g_merge_wgrad = 0;  // 0: when it pays, 1: whenever possible (tests), 2: never
int g_swap_wgrad = 0;   // the same for swapped_wgrad

bool merge_images_wgrad(const Problem& p) {
    if (p.mb < 2 || g_merge_wgrad == 2) return false;
    return g_merge_wgrad == 1 || p.out_spatial() <= 64;
}
}  // namespace

void set_merge_wgrad(int mode) {
    g_merge_wgrad = mode;
}

void set_swap_wgrad(int mode) {
    g_swap_wgrad = mode;
}

bool merged_wgrad_applies(const Problem& p) {
    return !use_shifted_wgrad(p) && merge_images_wgrad(p);
}

// 1x1 layers with fewer output than input channels (the bottlenecks' first 1x1s) and enough
// positions summed: the product computed transposed, dW^T (C/G x K/G) = X dY^T, and then
// transposed into dW. Its packed B is then dY^T, each of its values used by C/G rows, where
// X^T's were used by only K/G. With few positions (a 7x7 or 14x14 image at batch 1)
// transposing dW would cost as much as it saves (timings: docs/algorithms.md, "swapped_wgrad").
bool swapped_wgrad(const Problem& p) {
    if (g_swap_wgrad == 2 || !reads_input_1x1(p)) return false;
    return g_swap_wgrad == 1 || (p.ocg() < p.icg() && p.mb * p.out_spatial() >= 512);
}

// Positions per pass of the shifted weight-gradient tiles (a run of dY^T: 256 KiB per panel).
constexpr dim_t kShiftedWgradRun = 2048;

// Images per call of the shifted weight gradient with whole images per thread: up to
// kShiftedWgradRun positions, each tile running over all of them (row_runs_fn, a run per output
// row) before it adds its 12 x 32 values to dW, and the images' input (the planes, or with taps
// the input read in place) and dY^T within 2 MiB each. Positions are the planes' (with their
// padding columns), or with taps the output's; more images a call means more multiply-adds per
// store of a tile (timings: docs/algorithms.md, "shifted_wgrad_images").
dim_t shifted_wgrad_images(const Problem& p) {
    const Shifted sg(p);
    const dim_t npan = (p.ocg() + 31) / 32;
    const bool taps = wgrad_taps_apply(p);
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
    const bool shifted = use_shifted_wgrad(p);
    Shifted sg(p);
    const dim_t npan = (kg + 31) / 32, ow_n = sg.g.out[2];
    const dim_t group = shifted ? shifted_wgrad_images(p) : 1;
    // Stride 1 (wgrad_taps_apply): the tiles read the input itself, 12 input channels of one tap
    // each (ctiles: [c0, c0 + mv), the last 13-19 as two), over only the positions whose inputs
    // lie inside it; no planes are padded and no padding is multiplied.
    const bool taps = shifted && wgrad_taps_apply(p);
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
    const bool merged = !shifted && merge_images_wgrad(p);  // merged_wgrad_applies
    const std::size_t wsize = static_cast<std::size_t>(kg * rows);
    const bool in_place =
        by_images && wsize * sizeof(float) <= (4u << 20) && !merged && strided_wgrad_applies(p);
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
    const bool sampled_images =
        by_images && subsample && !merged && g_sampled_wgrad_mode != 3 && sampled_wgrad_applies(p);
    // Transposed (swap): out^T (rows x Kg) = X dY_g^T, then dW_g = out^T transposed.
    const bool swap = !in_place && !sampled_images && swapped_wgrad(p);
    const bool sampled =
        subsample && !swap && (!by_images || sampled_images) && sampled_wgrad_applies(p);
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
    // 1.05-1.10). set_stream_output's mode applies. The gathered products too (Im2colTB):
    // res5a_branch2b at batch 1 (a 9 MiB dW, a reduction of 49), harness alternating the modes
    // with 4 MiB touched between calls, 2 runs: 1.48/1.52 -> 1.35/1.38 ms; bench against
    // oneDNN, 4 rounds alternating builds: 0.857/1.056/0.852/0.956 -> 0.842/0.798/0.844/0.936.
    const bool stream_dw = stream_mode_allows(wsize * sizeof(float), std::size_t{1} << 20);
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
            gemm(kg, rows, q1 - q0, dy, b, out, rows, acc, 0, final && stream_dw);
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
            gemm(rows, kg, q1 - q0, StridedA{x + q0, xs, 1}, StridedB{dyp, 1, cols}, out, kg, acc,
                 0, false, prefetch);
        else if (identity || subsample)  // B^T is the image (or its sampled copy) transposed
            gemm(kg, rows, q1 - q0, dy, StridedB{x + q0, 1, xs}, out, rows, acc, 0,
                 final && stream_dw, prefetch);
        else
            gemm(kg, rows, q1 - q0, dy, Im2colTB{&m, q0}, out, rows, acc, 0, final && stream_dw);
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
                    gemm(kg, rows, nn * cols, dy, b, a.diff_wei + g * kg * rows, rows, n0 > 0);
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
                    gemm(rows, kg, nn * cols, StridedA{x, xs, 1, cols, xn},
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

PreparedWeights prepare_weights(const Problem& p, Pass pass, const float* wei, Profiler* prof) {
    using namespace detail;
    p.check();
    if (pass != Pass::Forward && pass != Pass::BackwardData)
        throw Error(std::string("pass: weights are prepared for fwd and bwd_data, not ") +
                    pass_name(pass));
    if (!wei) throw Error("wei: null weights");
    PreparedWeights w;
    w.problem_ = p;
    w.pass_ = pass;
    davinci::prepare_fractal(w, wei, prof);
    Problem q = p;  // the problem whose tiles read the panels: for backward data its forward
    const PanelLayout layout =
        pass == Pass::Forward ? forward_layout(p, true) : backward_data_layout(p, &q);
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
    if (pass == Pass::BackwardData && col2im_reads_prepared_rows(p)) {
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
