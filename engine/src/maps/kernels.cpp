#include "convlab/kernels.hpp"

#include "omp_compat.hpp"

#include "x86.hpp"
#if CONVLAB_X86
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "geom.hpp"

namespace convlab {

using detail::Geom3;
using detail::valid_range;

bool im2col_is_identity(const Problem& p) {
    for (int i = 0; i < p.ndims; ++i)
        if (p.kernel[i] != 1 || p.stride[i] != 1 || p.pad_begin[i] != 0 || p.pad_end[i] != 0)
            return false;
    return true;
}

// s[2 i] += l[i] for i < n: col2im's rows of stride 2 along w (conv1), vectorised (even lanes
// loaded, added and stored back by permutes; the plain loop ran a scalar load-add-store each).
static void add_every_other(float* __restrict s, const float* __restrict l, dim_t n) {
#pragma omp simd
    for (dim_t i = 0; i < n; ++i) s[2 * i] += l[i];
}

// One row of the column matrix, row = (ci, kd, kh, kw), against its channel's plane img, for
// output rows q in [q0, q1) (q = od * OH + oh; the line of q at c + (q - q0) * OW): im2col
// writes the lines from img (zeros where the taps land in the padding), col2im adds them into
// img, only into the input rows ih in [ih0, ih1) whose row index id * IH + ih lies in [r0, r1).
template <bool kCol2im>
static void nest_row(const Geom3& g, dim_t row, float* img, float* c, dim_t q0, dim_t q1, dim_t ih0,
                     dim_t ih1, dim_t r0, dim_t r1) {
    dim_t r = row % g.k_size();
    const dim_t kw = r % g.k[2];
    r /= g.k[2];
    const dim_t kh = r % g.k[1], kd = r / g.k[1];
    const dim_t off_d = kd * g.d[0] - g.pb[0], off_h = kh * g.d[1] - g.pb[1],
                off_w = kw * g.d[2] - g.pb[2];
    dim_t w_lo, w_hi;
    valid_range(off_w, g.s[2], g.in[2], g.out[2], w_lo, w_hi);
    for (dim_t q = q0; q < q1; ++q) {
        const dim_t od = q / g.out[1], oh = q % g.out[1];
        const dim_t id = od * g.s[0] + off_d, ih = oh * g.s[1] + off_h;
        const dim_t at = id * g.in[1] + ih;
        float* line = c + (q - q0) * g.out[2];
        if (id < 0 || id >= g.in[0] || ih < ih0 || ih >= ih1 || at < r0 || at >= r1) {
            if constexpr (!kCol2im) std::fill(line, line + g.out[2], 0.0f);
            continue;
        }
        float* src = img + at * g.in[2];
        if constexpr (!kCol2im) {
            std::fill(line, line + w_lo, 0.0f);
            std::fill(line + w_hi, line + g.out[2], 0.0f);
        }
        const dim_t sw = g.s[2];
        if (sw == 1) {
            float* s1 = src + (w_lo + off_w);  // in range: w_lo + off_w >= 0
            float* l1 = line + w_lo;
            for (dim_t i = 0; i < w_hi - w_lo; ++i) {
                if constexpr (kCol2im)
                    s1[i] += l1[i];
                else
                    l1[i] = s1[i];
            }
        } else if (sw == 2 && !kCol2im) {
            // A constant stride lets the compiler vectorise the gather (conv1 and the 1x1
            // stride-2 layers: 0.45 -> 0.26 ms for conv1's column matrix).
            const float* s2 = src + (w_lo * 2 + off_w);
            float* l2 = line + w_lo;
            for (dim_t i = 0; i < w_hi - w_lo; ++i) l2[i] = s2[2 * i];
        } else if (sw == 2) {
            add_every_other(src + (w_lo * 2 + off_w), line + w_lo, w_hi - w_lo);
        } else {
            for (dim_t ow = w_lo; ow < w_hi; ++ow) {
                if constexpr (kCol2im)
                    src[ow * sw + off_w] += line[ow];
                else
                    line[ow] = src[ow * sw + off_w];
            }
        }
    }
}

// row[i * s] = l[i] for i in [0, n), zeros at the other floats of [0, len): one line of a
// 1x1's col2im (col2im_writes_once). len >= (n - 1) * s + 1.
#if CONVLAB_X86
// Stride 2, from element i: 8 elements into 16 floats, each interleaved with zeros, halves put
// in order. Returns the first element not written.
__attribute__((target("avx2"))) static dim_t spread_line2_avx2(const float* l, dim_t i, dim_t n,
                                                               float* row, dim_t len) {
    const __m256 z = _mm256_setzero_ps();
    for (; i + 8 <= n && 2 * i + 16 <= len; i += 8) {
        const __m256 v = _mm256_loadu_ps(l + i);
        const __m256 lo = _mm256_unpacklo_ps(v, z), hi = _mm256_unpackhi_ps(v, z);
        _mm256_storeu_ps(row + 2 * i, _mm256_permute2f128_ps(lo, hi, 0x20));
        _mm256_storeu_ps(row + 2 * i + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
    return i;
}
#endif

static void spread_line(const float* l, dim_t n, dim_t s, float* row, dim_t len) {
    dim_t i = 0;
    if (s == 1) {
        std::copy(l, l + n, row);
        i = n;
    }
#if CONVLAB_X86
    if (s == 2 && detail::selected_isa() != detail::Isa::portable)
        i = spread_line2_avx2(l, i, n, row, len);
#endif
    const dim_t done = i * s;  // floats of row written so far
    std::fill(row + done, row + len, 0.0f);
    for (; i < n; ++i) row[i * s] = l[i];
}

// A 1x1 kernel without padding scatters each column element to its own input element
// (o * s), so col2im into zeroed planes writes each input row once, whole: the rows some output
// row lands on get its elements every s floats and zeros between (spread_line), the others
// zeros. The general nest zeroed each plane, then added every output row into it. Backward
// data at batch 1, bench, 5 alternating rounds of 100 calls, col2im medians: res3a_branch1
// 0.310/0.318 -> 0.248/0.253 ms, res4a_branch1 0.176/0.170 -> 0.152/0.148. Written by
// non-temporal stores (rows 32-byte aligned) res3a_branch1's took 0.198, not kept: 0.05 ms for
// a dX the layer before would then read from memory.
static bool col2im_writes_once(const Geom3& g) {
    for (int i = 0; i < 3; ++i)
        if (g.k[i] != 1 || g.pb[i] != 0) return false;
    return true;
}

// Rows [ih0, ih1), at every depth, of one channel's plane img, from that channel's row c of
// the column matrix (its output positions: a 1x1 has one row per channel).
static void col2im_once_rows(const Geom3& g, const float* c, float* img, dim_t ih0, dim_t ih1) {
    dim_t w_lo, w_hi;
    valid_range(0, g.s[2], g.in[2], g.out[2], w_lo, w_hi);
    for (dim_t id = 0; id < g.in[0]; ++id)
        for (dim_t ih = ih0; ih < ih1; ++ih) {
            float* row = img + (id * g.in[1] + ih) * g.in[2];
            const dim_t od = id / g.s[0], oh = ih / g.s[1];
            if (id % g.s[0] != 0 || od >= g.out[0] || ih % g.s[1] != 0 || oh >= g.out[1]) {
                std::fill(row, row + g.in[2], 0.0f);
                continue;
            }
            spread_line(c + (od * g.out[1] + oh) * g.out[2] + w_lo, w_hi - w_lo, g.s[2], row,
                        g.in[2]);
        }
}

// im2col and col2im share one loop nest (darknet-style) and differ only in the inner operation:
// read-or-zero against +=. Rows are (ci, kd, kh, kw); columns (od, oh, ow).
template <bool kCol2im>
static void im2col_nest(const Problem& p, float* image, float* col, bool zero_first = false,
                        dim_t col_ld = 0) {
    const Geom3 g = detail::geom3(p);
    const dim_t cg = p.icg(), ks = g.k_size(), os = g.out_size(), is = g.in_size();
    const dim_t ld = col_ld > 0 ? col_ld : os;
    // col2im: rows of the same ci write the same channel, so the threads split the channels,
    // and with fewer than 4 a thread, each channel's input rows (ih) in bands as well: a task
    // adds only the output rows whose taps land in its band, which no other task writes.
    // conv1's 3 channels on 2 threads had gone 2 + 1; with bands and its stride-2 rows
    // vectorised (add_every_other), its col2im at batch 1 in the bench, 3 rounds alternating
    // builds: 0.85/0.61/0.74 -> 0.65/0.57/0.60 ms. Threads from 32768 column elements in either
    // direction (col2im counted only its channels' planes and ran res5a_branch2b's 512 x 9 x 49
    // on one thread: 0.34 ms of 1.78).
    // (Bands in a multiple of the threads: 3 channels x 4 bands on 2 threads; none where the
    // loop runs on one thread, each band rescanning every row.)
    const dim_t threads = omp_get_max_threads();
    const bool parallel = cg * ks * os > 32768;
    dim_t bands = 1;
    if (kCol2im && parallel && threads > 1 && !omp_in_parallel() && cg < 4 * threads) {
        bands = (4 * threads + cg - 1) / cg;
        while ((cg * bands) % threads != 0) ++bands;
        bands = std::min(bands, g.in[1]);
    }
    const dim_t outer = kCol2im ? cg * bands : cg * ks;
    const bool once = kCol2im && zero_first && col2im_writes_once(g);
    const dim_t rows_out = g.out[0] * g.out[1], rows_in = g.in[0] * g.in[1];
#pragma omp parallel for schedule(static) if (parallel)
    for (dim_t t = 0; t < outer; ++t) {
        const dim_t chan = kCol2im ? t / bands : 0, band = kCol2im ? t % bands : 0;
        const dim_t ih0 = g.in[1] * band / bands, ih1 = g.in[1] * (band + 1) / bands;
        const dim_t row_begin = kCol2im ? chan * ks : t,
                    row_end = kCol2im ? (chan + 1) * ks : t + 1;
        if (once) {
            col2im_once_rows(g, col + chan * ld, image + chan * is, ih0, ih1);
            continue;
        }
        if (kCol2im && zero_first)
            for (dim_t id = 0; id < g.in[0]; ++id)
                std::fill(image + chan * is + (id * g.in[1] + ih0) * g.in[2],
                          image + chan * is + (id * g.in[1] + ih1) * g.in[2], 0.0f);
        for (dim_t row = row_begin; row < row_end; ++row)
            nest_row<kCol2im>(g, row, image + row / ks * is, col + row * ld, 0, rows_out, ih0, ih1,
                              0, rows_in);
    }
}

void im2col_kernel(const Problem& p, const float* src, dim_t n, dim_t g, float* col) {
    const dim_t is = p.in_spatial();
    // The nest is shared with col2im, which writes the image; im2col only reads it.
    float* image = const_cast<float*>(src) + (n * p.ic + g * p.icg()) * is;
    im2col_nest<false>(p, image, col);
}

void col2im_kernel(const Problem& p, const float* col, dim_t n, dim_t g, float* diff_src,
                   bool zero_first, dim_t col_ld) {
    const dim_t is = p.in_spatial();
    im2col_nest<true>(p, diff_src + (n * p.ic + g * p.icg()) * is, const_cast<float*>(col),
                      zero_first, col_ld);
}

bool col2im_row_touches(const Problem& p, dim_t q, dim_t r0, dim_t r1) {
    const Geom3 g = detail::geom3(p);
    const dim_t od = q / g.out[1], oh = q % g.out[1];
    for (dim_t kd = 0; kd < g.k[0]; ++kd) {
        const dim_t id = od * g.s[0] + kd * g.d[0] - g.pb[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (dim_t kh = 0; kh < g.k[1]; ++kh) {
            const dim_t ih = oh * g.s[1] + kh * g.d[1] - g.pb[1];
            const dim_t at = id * g.in[1] + ih;
            if (ih >= 0 && ih < g.in[1] && at >= r0 && at < r1) return true;
        }
    }
    return false;
}

// col2im_rows_kernel for stride 2 along w: the KW rows of one (ci, kd, kh) land on the same
// input row for each output row q, at every other float, those of kw * dw - pad_w even on the
// even floats and the others on the odd ones. They are summed into the row's two halves first
// (e, o: contiguous adds), then added into it at once, where each row by itself added every
// other float (add_every_other), reading and writing the whole input row KW times.
static void col2im_rows_stride2(const Problem& p, const Geom3& geo, const float* col, dim_t col_ld,
                                dim_t q0, dim_t q1, dim_t r0, dim_t r1, float* image) {
    const dim_t ks = geo.k_size(), is = geo.in_size(), kw_n = geo.k[2], iw = geo.in[2];
    const dim_t half = (iw + 1) / 2;
    thread_local std::vector<float> halves;  // each half's first run is copied in, not added
    if (halves.size() < static_cast<std::size_t>(2 * half))
        halves.resize(static_cast<std::size_t>(2 * half));
    float* e = halves.data();
    float* o = e + half;
    for (dim_t base = 0; base < p.icg() * ks; base += kw_n) {  // rows (ci, kd, kh, 0)
        const dim_t ci = base / ks, r = base % ks / kw_n;
        const dim_t kh = r % geo.k[1], kd = r / geo.k[1];
        const dim_t off_d = kd * geo.d[0] - geo.pb[0], off_h = kh * geo.d[1] - geo.pb[1];
        for (dim_t q = q0; q < q1; ++q) {
            const dim_t id = q / geo.out[1] * geo.s[0] + off_d,
                        ih = q % geo.out[1] * geo.s[1] + off_h;
            const dim_t at = id * geo.in[1] + ih;
            if (id < 0 || id >= geo.in[0] || ih < 0 || ih >= geo.in[1] || at < r0 || at >= r1)
                continue;
            dim_t lo[2] = {half, half}, hi[2] = {0, 0};  // the halves' touched ranges
            for (dim_t kw = 0; kw < kw_n; ++kw) {
                const dim_t off_w = kw * geo.d[2] - geo.pb[2];
                dim_t w_lo, w_hi;
                valid_range(off_w, 2, iw, geo.out[2], w_lo, w_hi);
                if (w_lo >= w_hi) continue;
                const dim_t x0 = 2 * w_lo + off_w, par = x0 & 1, j0 = x0 / 2, len = w_hi - w_lo;
                float* h = par ? o : e;
                const float* l = col + (base + kw) * col_ld + (q - q0) * geo.out[2] + w_lo;
                if (lo[par] >= hi[par]) {  // first run of this half: a copy
                    std::copy(l, l + len, h + j0);
                    lo[par] = j0;
                    hi[par] = j0 + len;
                    continue;
                }
                // Zeros between the runs so far and this one, then the sum.
                if (j0 < lo[par]) std::fill(h + j0, h + lo[par], 0.0f);
                if (j0 + len > hi[par]) std::fill(h + hi[par], h + j0 + len, 0.0f);
                lo[par] = std::min(lo[par], j0);
                hi[par] = std::max(hi[par], j0 + len);
                for (dim_t i = 0; i < len; ++i) h[j0 + i] += l[i];
            }
            float* dst = image + ci * is + at * iw;
            if (lo[0] < hi[0]) add_every_other(dst + 2 * lo[0], e + lo[0], hi[0] - lo[0]);
            if (lo[1] < hi[1]) add_every_other(dst + 2 * lo[1] + 1, o + lo[1], hi[1] - lo[1]);
        }
    }
}

void col2im_rows_kernel(const Problem& p, const float* col, dim_t col_ld, dim_t q0, dim_t q1,
                        dim_t r0, dim_t r1, dim_t n, dim_t g, float* diff_src) {
    const Geom3 geo = detail::geom3(p);
    const dim_t ks = geo.k_size(), is = geo.in_size();
    float* image = diff_src + (n * p.ic + g * p.icg()) * is;
    if (geo.s[2] == 2 && geo.k[2] > 1)
        return col2im_rows_stride2(p, geo, col, col_ld, q0, q1, r0, r1, image);
    for (dim_t row = 0; row < p.icg() * ks; ++row)
        nest_row<true>(geo, row, image + row / ks * is, const_cast<float*>(col) + row * col_ld, q0,
                       q1, 0, geo.in[1], r0, r1);
}

void strided_kernel(const Problem& p, const float* diff_dst, float* z) {
    const Geom3 g = detail::geom3(p);
    dim_t zd[3];
    for (int a = 0; a < 3; ++a) zd[a] = (g.out[a] - 1) * g.s[a] + 1;
    const dim_t planes = p.mb * p.oc, zs = zd[0] * zd[1] * zd[2], os = g.out_size();
#pragma omp parallel for schedule(static) if (planes * zs > 65536)
    for (dim_t pl = 0; pl < planes; ++pl) {
        float* zp = z + pl * zs;
        const float* yp = diff_dst + pl * os;
        std::fill(zp, zp + zs, 0.0f);
        for (dim_t od = 0; od < g.out[0]; ++od)
            for (dim_t oh = 0; oh < g.out[1]; ++oh) {
                float* zl = zp + (od * g.s[0] * zd[1] + oh * g.s[1]) * zd[2];
                const float* yl = yp + (od * g.out[1] + oh) * g.out[2];
                for (dim_t ow = 0; ow < g.out[2]; ++ow) zl[ow * g.s[2]] = yl[ow];
            }
    }
}

void pad_kernel(std::span<const dim_t> dims, std::span<const dim_t> pad_begin,
                std::span<const dim_t> pad_end, const float* src, float* dst) {
    const int ns = static_cast<int>(dims.size()) - 2;
    dim_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
    for (int i = 0; i < ns; ++i) {
        in[3 - ns + i] = dims[2 + i];
        pb[3 - ns + i] = pad_begin[i];
        out[3 - ns + i] = dims[2 + i] + pad_begin[i] + pad_end[i];
    }
    const dim_t planes = dims[0] * dims[1];
    const dim_t is = in[0] * in[1] * in[2], os = out[0] * out[1] * out[2];
    dim_t w_lo, w_hi;  // destination w range that reads the source
    detail::valid_range(-pb[2], 1, in[2], out[2], w_lo, w_hi);
#pragma omp parallel for schedule(static) if (planes * os > 65536)
    for (dim_t pl = 0; pl < planes; ++pl) {
        const float* sp = src + pl * is;
        float* dp = dst + pl * os;
        for (dim_t d = 0; d < out[0]; ++d)
            for (dim_t h = 0; h < out[1]; ++h) {
                float* line = dp + (d * out[1] + h) * out[2];
                const dim_t sd = d - pb[0], sh = h - pb[1];
                if (sd < 0 || sd >= in[0] || sh < 0 || sh >= in[1]) {
                    std::fill(line, line + out[2], 0.0f);
                    continue;
                }
                const float* sl = sp + (sd * in[1] + sh) * in[2];
                std::fill(line, line + w_lo, 0.0f);
                std::copy(sl + (w_lo - pb[2]), sl + (w_hi - pb[2]), line + w_lo);
                std::fill(line + w_hi, line + out[2], 0.0f);
            }
    }
}

// Both weight transposes below swap the two channel dims of each group in 16 x 16 blocks, so
// that reads and writes stay within a few cache lines even when K/G * prod(k) is large.
namespace {
constexpr dim_t kBlock = 16;
template <bool kFlip>
void swap_channels(dim_t groups, dim_t rows, dim_t cols, dim_t ks, const float* src, float* dst) {
    // src per group: (rows, cols, ks)   dst per group: (cols, rows, ks), kernel reversed if kFlip.
    const dim_t rb = (rows + kBlock - 1) / kBlock, cb = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) schedule(static) if (groups * rows * cols * ks > 65536)
    for (dim_t g = 0; g < groups; ++g)
        for (dim_t b = 0; b < rb * cb; ++b) {
            const dim_t r0 = (b / cb) * kBlock, c0 = (b % cb) * kBlock;
            const dim_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
            const float* sg = src + g * rows * cols * ks;
            float* dg = dst + g * rows * cols * ks;
            for (dim_t c = c0; c < c1; ++c)
                for (dim_t r = r0; r < r1; ++r) {
                    const float* s = sg + (r * cols + c) * ks;
                    float* d = dg + (c * rows + r) * ks;
                    for (dim_t k = 0; k < ks; ++k) d[k] = kFlip ? s[ks - 1 - k] : s[k];
                }
        }
}
}  // namespace

void flip_rot_kernel(const Problem& p, const float* wei, float* dst) {
    // Reversing every spatial axis reverses the row-major flattened kernel index.
    swap_channels<true>(p.groups, p.ocg(), p.icg(), p.kernel_spatial(), wei, dst);
}

void tnc_kernel(std::span<const dim_t> dims, const float* src, float* dst) {
    dim_t inner = 1;
    for (std::size_t i = 2; i < dims.size(); ++i) inner *= dims[i];
    const dim_t a = dims[0], b = dims[1];
#pragma omp parallel for schedule(static) if (a * b * inner > 65536)
    for (dim_t j = 0; j < b; ++j)
        for (dim_t i = 0; i < a; ++i) {
            float* d = dst + (j * a + i) * inner;
            const float* s = src + (i * b + j) * inner;
            for (dim_t k = 0; k < inner; ++k) d[k] = s[k];
        }
}

void tnc_diff_wei_kernel(const Problem& p, const float* src, float* dst) {
    swap_channels<false>(p.groups, p.icg(), p.ocg(), p.kernel_spatial(), src, dst);
}

}  // namespace convlab
