#include "convlab/kernels.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

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
#pragma omp parallel for schedule(static) if (parallel)
    for (dim_t t = 0; t < outer; ++t) {
        const dim_t chan = kCol2im ? t / bands : 0, band = kCol2im ? t % bands : 0;
        const dim_t ih0 = g.in[1] * band / bands, ih1 = g.in[1] * (band + 1) / bands;
        const dim_t row_begin = kCol2im ? chan * ks : t,
                    row_end = kCol2im ? (chan + 1) * ks : t + 1;
        if (kCol2im && zero_first)
            for (dim_t id = 0; id < g.in[0]; ++id)
                std::fill(image + chan * is + (id * g.in[1] + ih0) * g.in[2],
                          image + chan * is + (id * g.in[1] + ih1) * g.in[2], 0.0f);
        for (dim_t row = row_begin; row < row_end; ++row) {
            const dim_t ci = row / ks;
            dim_t r = row % ks;
            const dim_t kw = r % g.k[2];
            r /= g.k[2];
            const dim_t kh = r % g.k[1], kd = r / g.k[1];
            float* img = image + ci * is;
            float* c = col + row * ld;
            const dim_t off_d = kd * g.d[0] - g.pb[0], off_h = kh * g.d[1] - g.pb[1],
                        off_w = kw * g.d[2] - g.pb[2];
            dim_t w_lo, w_hi;
            valid_range(off_w, g.s[2], g.in[2], g.out[2], w_lo, w_hi);
            for (dim_t od = 0; od < g.out[0]; ++od) {
                const dim_t id = od * g.s[0] + off_d;
                for (dim_t oh = 0; oh < g.out[1]; ++oh) {
                    const dim_t ih = oh * g.s[1] + off_h;
                    float* line = c + (od * g.out[1] + oh) * g.out[2];
                    if (id < 0 || id >= g.in[0] || ih < ih0 || ih >= ih1) {
                        if constexpr (!kCol2im) std::fill(line, line + g.out[2], 0.0f);
                        continue;
                    }
                    float* src = img + (id * g.in[1] + ih) * g.in[2];
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
                        // A constant stride lets the compiler vectorise the gather (conv1 and the
                        // 1x1 stride-2 layers: 0.45 -> 0.26 ms for conv1's column matrix).
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
        }
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
