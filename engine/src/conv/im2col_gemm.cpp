// im2col + GEMM (forward, backward weight) and W^T dY + col2im (backward data). The GEMM core is
// ConvLab's blocked GEMM (microkernel.hpp) or Eigen's (the reference path), both on all threads.
// One column matrix of one image and group lives at a time, in a per-thread buffer kept between
// calls:  B (rows x cols), rows = C/G * prod(k), cols = prod(out); backward data on small images
// also holds the product of a few images merged (rows x at most 1023 floats).
//
// [SECTION] GEMM ISA
// [SECTION] forward
// [SECTION] backward data
// [SECTION] work memory
// [SECTION] backward weight
#include "omp_compat.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "algorithms.hpp"
#include "checked.hpp"
#include "geom.hpp"
#include "microkernel.hpp"
#include "parallel.hpp"
#include "thread_profile.hpp"

namespace convlab {

// [SECTION] GEMM ISA

const char* gemm_isa() {
    return detail::microkernel().isa;
}

}  // namespace convlab

namespace convlab::detail {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

// C (m x n, row-major, dense) = op(A) (m x k) * op(B) (k x n) (+ C when acc), by t's GEMM
// core (the blocked one under t's rules).
// A is stored (m x k) row-major, or (k x m) when ta; B (k x n), or (n x k) when tb.
void matmul(const Tuning& t, dim_t m, dim_t n, dim_t k, const float* a, bool ta, const float* b,
            bool tb, float* c, bool acc) {
    if (t.gemm_core == GemmCore::blocked) {
        const StridedA sa{a, ta ? 1 : k, ta ? m : 1};
        const StridedB sb{b, tb ? 1 : n, tb ? k : 1};
        sgemm(t, m, n, k, sa, sb, c, n, acc);
        return;
    }
    Map cm(c, m, n);
    const MapC am(a, ta ? k : m, ta ? m : k), bm(b, tb ? n : k, tb ? k : n);
    if (!ta && !tb) {
        if (acc)
            cm.noalias() += am * bm;
        else
            cm.noalias() = am * bm;
    } else if (ta && !tb) {
        if (acc)
            cm.noalias() += am.transpose() * bm;
        else
            cm.noalias() = am.transpose() * bm;
    } else if (!ta && tb) {
        if (acc)
            cm.noalias() += am * bm.transpose();
        else
            cm.noalias() = am * bm.transpose();
    } else {
        if (acc)
            cm.noalias() += am.transpose() * bm.transpose();
        else
            cm.noalias() = am.transpose() * bm.transpose();
    }
}

struct GemmDims {
    dim_t rows, cols, kg, cg, in_size;
    explicit GemmDims(const Problem& p)
        : rows(p.icg() * p.kernel_spatial()),
          cols(p.out_spatial()),
          kg(p.ocg()),
          cg(p.icg()),
          in_size(p.in_spatial()) {}
};

float* column_buffer(const GemmDims& d) {
    return scratch(3, static_cast<std::size_t>(d.rows * d.cols));
}

}  // namespace

void add_bias(const Problem& p, const ConvArgs& a, Profiler* prof) {
    if (!a.bias) return;
    Span s(prof, "bias");
    const dim_t cols = p.out_spatial();
#pragma omp parallel for schedule(static) if (p.mb * p.oc * cols > 65536)
    for (dim_t nk = 0; nk < p.mb * p.oc; ++nk) {
        float* y = a.dst + nk * cols;
        const float bk = a.bias[nk % p.oc];
        for (dim_t o = 0; o < cols; ++o) y[o] += bk;
    }
}

// [SECTION] forward
// dst_g (Kg x cols) = wei_g (Kg x rows) * B (rows x cols), then + bias.
void forward_im2col_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const GemmDims d(p);
    const bool identity = im2col_is_identity(p);
    float* col = identity ? nullptr : column_buffer(d);
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g) {
            const float* b = a.src + (n * p.ic + g * d.cg) * d.in_size;
            if (!identity) {
                Span s(prof, "im2col");
                im2col_kernel(p, a.src, n, g, col);
                b = col;
            }
            Span s(prof, "gemm");
            matmul(a.tuning, d.kg, d.cols, d.rows, a.wei + g * d.kg * d.rows, false, b, false,
                   a.dst + (n * p.oc + g * d.kg) * d.cols, false);
        }
    add_bias(p, a, prof);
}

// [SECTION] backward data
// B* (rows x cols) = wei_g^T (rows x Kg) * diff_dst_g (Kg x cols), then col2im adds B* into dX.
// Small images (the 7x7 and 14x14 layers in a batch) are merged: the dY of nb images side by side
// (Kg x nb*cols) makes one GEMM that streams the weights once instead of nb times; col2im then
// adds each image's block of the product into dX where it lies (no copy out).
namespace {
dim_t col2im_images_per_gemm(const Problem& p, const GemmDims& d) {
    if (d.cols >= 512) return 1;
    return std::min<dim_t>(p.mb, (512 + d.cols - 1) / d.cols);
}
}  // namespace

// A 1x1 stride-1 backward data with fewer input than output channels at 784 positions or more
// (res2a_branch1 at 56x56), on the blocked core: dX^T (positions x C/G) = dY^T W_g, dY^T read in
// place (column-contiguous), then transposed into dX. Its packed B is then W_g, not dY, whose
// values too few rows use for their packing to pay; at 14x14 and 7x7 it lost (timings:
// docs/algorithms.md, "swapped_bwd_data").
bool swapped_bwd_data(const Problem& p, const Tuning& t) {
    if (t.swap_bwd_data == Rule::Never || t.gemm_core != GemmCore::blocked ||
        !im2col_is_identity(p))
        return false;
    if (t.swap_bwd_data == Rule::Always) return true;
    if (p.icg() >= p.ocg()) return false;
    // With AVX2's 6 x 16 it pays only on the 7x7s, where W^T (4 MiB) read in place by columns
    // 8 KiB apart is the slow part, and only where W^T's rows are not prepared.
    if (!detail::avx512_selected()) return p.out_spatial() < 196;
    return p.out_spatial() >= 784;
}

// W^T (C/G x K/G per group) is the GEMM's A, its columns W's rows. Read in place, each k
// step of a tile reads 12 floats of another row of W; with rows 4 KiB and more apart (1024 or
// more of C/G times the taps: the 7x7 and 14x14 layers' 1x1 convolutions with many input
// channels) those pieces come as demand misses, the hardware prefetcher not crossing the pages.
// From weights prepared once (prepare_weights, as oneDNN reorders its own), the GEMM reads W^T
// row by row instead, 12 sequential rows a tile; not where the product is computed transposed
// (swapped_bwd_data: W_g is then its B, packed). Without AVX-512 also every stride-1 1x1 up to
// 784 positions, and the strided 1x1s up to 784 positions below 4 images, where the rows beat
// both the columns and the pointwise tiles (timings: docs/algorithms.md,
// "col2im_reads_prepared_rows").
bool col2im_reads_prepared_rows(const Problem& p, const Tuning& t) {
    if (t.gemm_core != GemmCore::blocked) return false;
    if (!detail::avx512_selected() && p.kernel_spatial() == 1 && p.out_spatial() <= 784 &&
        (im2col_is_identity(p) || p.mb < 4))
        return true;
    return p.icg() * p.kernel_spatial() >= 1024 && !swapped_bwd_data(p, t);
}

// K/G rounded to 16 floats, and away from multiples of 4 KiB (whose 12 rows of a tile would
// share one L1 set, and which the GEMM copies: rows_copied).
dim_t col2im_rows_ld(const Problem& p) {
    const dim_t ld = (p.ocg() + 15) / 16 * 16;
    return ld % 1024 == 0 ? ld + 16 : ld;
}

// A column matrix of 4 MiB or more (conv1's, 7.4 MB) is computed in blocks of whole output rows
// of about 256 KiB, each added into dX while in cache (the stride-2 rows summed into the input
// rows' halves first: col2im_rows_kernel), because written whole and read back both ran at
// memory speed (timings: docs/algorithms.md, "col2im_in_blocks").
bool col2im_in_blocks(const Problem& p, const Tuning& t) {
    if (t.col2im_blocks == Rule::Never || t.gemm_core != GemmCore::blocked || im2col_is_identity(p))
        return false;
    const GemmDims d(p);
    if (col2im_images_per_gemm(p, d) > 1) return false;
    return t.col2im_blocks == Rule::Always ||
           static_cast<std::size_t>(d.rows * d.cols) * sizeof(float) >= (4u << 20);
}

void backward_data_col2im(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const GemmDims d(p);
    // W_g^T: W's columns read in place, or its rows prepared once (col2im_reads_prepared_rows).
    dim_t wld = 0;
    const Tuning& tuning = a.tuning;
    const float* wt = a.prepared && col2im_reads_prepared_rows(p, tuning)
                          ? a.prepared->transposed_rows(p, Pass::BackwardData, wld)
                          : nullptr;
    const auto w_t = [&](dim_t g) {
        return wt ? StridedA{wt + g * d.rows * wld, wld, 1}
                  : StridedA{a.wei + g * d.kg * d.rows, 1, d.rows};
    };
    const bool identity = im2col_is_identity(p);
    const dim_t nb = col2im_images_per_gemm(p, d);
    const bool blocks = col2im_in_blocks(p, tuning);
    float* col = identity || nb > 1 || blocks ? nullptr : column_buffer(d);
    if (nb <= 1 && !wt && swapped_bwd_data(p, tuning)) {
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g) {
                const float* t = nullptr;
                {
                    Span s(prof, "gemm");  // dX_g = W_g^T dY_g, computed transposed
                    t = product_transposed(
                        tuning, d.rows, d.cols, d.kg,
                        StridedA{a.wei + g * d.kg * d.rows, 1, d.rows},
                        StridedB{a.diff_dst + (n * p.oc + g * d.kg) * d.cols, d.cols, 1});
                }
                Span s(prof, "unpack");
                transpose_into(t, d.rows, d.rows, d.cols,
                               a.diff_src + (n * p.ic + g * d.cg) * d.in_size, d.cols, false,
                               gemm_threads(d.rows, d.cols, 16));
            }
        return;
    }
    if (blocks) {
        // Image n, group g: the input rows [r0, r1) of dX (all channels of the group) zeroed,
        // then the output rows whose taps reach them (col2im_row_touches) in blocks of about
        // 256 KiB of the column matrix: the block's GEMM on this thread, then col2im adds the
        // block's taps that land in [r0, r1).
        const Geom3 geo = geom3(p);
        const dim_t ow = geo.out[2], rows_out = geo.out[0] * geo.out[1];
        const dim_t rows_in = geo.in[0] * geo.in[1];
        const dim_t per = std::clamp<dim_t>(65536 / (d.rows * ow), 1, rows_out);
        const auto band = [&](dim_t n, dim_t g, dim_t r0, dim_t r1, Profiler* mine) {
            const float* dy = a.diff_dst + (n * p.oc + g * d.kg) * d.cols;
            float* image = a.diff_src + (n * p.ic + g * d.cg) * d.in_size;
            float* blk = scratch(3, static_cast<std::size_t>(d.rows * per * ow));
            {
                Span s(mine, "col2im");  // the band zeroed
                for (dim_t c = 0; c < d.cg; ++c)
                    std::fill(image + c * d.in_size + r0 * geo.in[2],
                              image + c * d.in_size + r1 * geo.in[2], 0.0f);
            }
            for (dim_t q = 0; q < rows_out;) {
                if (!col2im_row_touches(p, q, r0, r1)) {
                    ++q;
                    continue;
                }
                dim_t q1 = q + 1;
                while (q1 < rows_out && q1 - q < per && col2im_row_touches(p, q1, r0, r1)) ++q1;
                const dim_t cols = (q1 - q) * ow;
                {
                    Span s(mine, "gemm");
                    sgemm(tuning, d.rows, cols, d.kg, w_t(g), StridedB{dy + q * ow, d.cols, 1}, blk,
                          cols, false);
                }
                Span s(mine, "col2im");
                col2im_rows_kernel(p, blk, cols, q, q1, r0, r1, n, g, a.diff_src);
                q = q1;
            }
        };
        ThreadProfilers tp(prof);
        const int threads = omp_get_max_threads();
        if (threads > 1 && !omp_in_parallel() && p.mb * p.groups >= 2 * threads) {
            // Two or more images a thread: whole images each, no rows computed twice. conv1 at
            // batch 32, 3 alternating rounds, against bands of each image (ms): 79.9/88.2/82.4
            // -> 76.4/89.2/69.5 (oneDNN's 146/160/133 and 155/158/124 in the same runs).
            ParallelError err;
#pragma omp parallel for schedule(dynamic)
            for (dim_t t = 0; t < p.mb * p.groups; ++t)
                err.run([&] { band(t / p.groups, t % p.groups, 0, rows_in, tp.mine()); });
            err.rethrow();
            return;
        }
        // Each thread a band of dX's input rows: rows near a band's edge are computed by both
        // threads (conv1: 3 of 56).
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g) {
                ParallelError err;
#pragma omp parallel
                err.run([&] {
                    const dim_t id = omp_get_thread_num(), nt = omp_get_num_threads();
                    band(n, g, rows_in * id / nt, rows_in * (id + 1) / nt, tp.mine());
                });
                err.rethrow();
            }
        return;
    }
    if (nb <= 1) {
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g) {
                float* out = identity ? a.diff_src + (n * p.ic + g * d.cg) * d.in_size : col;
                {
                    Span s(prof, "gemm");
                    const float* dy = a.diff_dst + (n * p.oc + g * d.kg) * d.cols;
                    if (wt)
                        sgemm(tuning, d.rows, d.cols, d.kg, w_t(g), StridedB{dy, d.cols, 1}, out,
                              d.cols, false);
                    else
                        matmul(a.tuning, d.rows, d.cols, d.kg, a.wei + g * d.kg * d.rows, true, dy,
                               false, out, false);
                }
                if (!identity) {
                    Span s(prof, "col2im");
                    // Each (n, g) owns its channels: zeroed inside col2im's loop, then accumulated.
                    col2im_kernel(p, col, n, g, a.diff_src, true);
                }
            }
        return;
    }
    // The blocked core reads the images' dY side by side in place (ImagesB); Eigen's gets them
    // copied into one matrix.
    const bool blocked = tuning.gemm_core == GemmCore::blocked;
    float* dy = blocked ? nullptr : scratch(4, static_cast<std::size_t>(d.kg * nb * d.cols));
    float* prod = scratch(5, static_cast<std::size_t>(d.rows * nb * d.cols));
    const auto cols_bytes = static_cast<std::size_t>(d.cols) * sizeof(float);
    for (dim_t n0 = 0; n0 < p.mb; n0 += nb) {
        const dim_t nn = std::min(nb, p.mb - n0), wide = nn * d.cols;
        for (dim_t g = 0; g < p.groups; ++g) {
            const float* dy0 = a.diff_dst + (n0 * p.oc + g * d.kg) * d.cols;
            if (blocked) {
                Span s(prof, "gemm");
                gemm(tuning, d.rows, wide, d.kg, w_t(g), ImagesB{dy0, p.oc * d.cols, d.cols}, prod,
                     wide, false);
            } else {
                {
                    Span s(prof, "pack");
                    for (dim_t k = 0; k < d.kg; ++k)
                        for (dim_t i = 0; i < nn; ++i)
                            std::memcpy(dy + k * wide + i * d.cols, dy0 + (i * p.oc + k) * d.cols,
                                        cols_bytes);
                }
                Span s(prof, "gemm");
                matmul(a.tuning, d.rows, wide, d.kg, a.wei + g * d.kg * d.rows, true, dy, false,
                       prod, false);
            }
            for (dim_t i = 0; i < nn; ++i) {
                const dim_t n = n0 + i;
                if (identity) {  // the product's block of image n is dX itself
                    Span s(prof, "unpack");
                    float* out = a.diff_src + (n * p.ic + g * d.cg) * d.in_size;
                    for (dim_t r = 0; r < d.rows; ++r)
                        std::memcpy(out + r * d.cols, prod + r * wide + i * d.cols, cols_bytes);
                } else {  // col2im reads image n's block in place (rows wide apart)
                    Span s(prof, "col2im");
                    col2im_kernel(p, prod + i * d.cols, n, g, a.diff_src, true, wide);
                }
            }
        }
    }
}

// [SECTION] work memory
// One column matrix (none where im2col is the identity), and the GEMM's product computed
// transposed (sgemm may: its C's size) and each thread's packing.
dim_t im2col_gemm_work(const Problem& p, Pass pass) {
    const dim_t rows = sat_mul(p.icg(), p.kernel_spatial()), cols = p.out_spatial();
    const dim_t col = im2col_is_identity(p) ? 0 : sat_mul(rows, cols);
    const dim_t c = pass == Pass::BackwardWeight ? sat_mul(p.ocg(), rows) : sat_mul(p.ocg(), cols);
    return sat_add(sat_mul(sat_add(col, c), dim_t{sizeof(float)}),
                   sat_mul(omp_get_max_threads(), per_thread_bytes(p, kGemmPackBytes, col)));
}

// backward_data_col2im's buffers on the path it takes for p: the column matrix or the product
// computed transposed (one image, one group), the blocks of each thread (blocks), or the merged
// images' product (and Eigen's copy of their dY); each with the GEMM's transposed product.
dim_t col2im_work(const Problem& p, const Tuning& t) {
    const GemmDims d(p);
    const dim_t rows = sat_mul(p.icg(), p.kernel_spatial()), cols = p.out_spatial();
    const dim_t threads = omp_get_max_threads();
    const dim_t nb = col2im_images_per_gemm(p, d);
    dim_t floats = 0;
    if (col2im_in_blocks(p, t)) {
        const Geom3 geo = geom3(p);
        const dim_t ow = geo.out[2], rows_out = geo.out[0] * geo.out[1];
        const dim_t per =
            std::clamp<dim_t>(65536 / std::max<dim_t>(sat_mul(rows, ow), 1), 1, rows_out);
        floats = sat_mul({2, threads, rows, per, ow});
    } else if (nb <= 1) {
        floats = sat_mul({2, rows, cols});
    } else {
        const dim_t wide = sat_mul(nb, cols);
        floats = sat_add(sat_mul({2, rows, wide}), sat_mul(p.ocg(), wide));
    }
    return sat_add(sat_mul(floats, dim_t{sizeof(float)}),
                   sat_mul(threads, per_thread_bytes(p, kGemmPackBytes, floats)));
}

// [SECTION] backward weight
// diff_wei_g (Kg x rows) = sum_n diff_dst_g(n) (Kg x cols) * B(n)^T (cols x rows).
void backward_weight_im2col_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const GemmDims d(p);
    const bool identity = im2col_is_identity(p);
    float* col = identity ? nullptr : column_buffer(d);
    for (dim_t g = 0; g < p.groups; ++g) {
        for (dim_t n = 0; n < p.mb; ++n) {
            const float* b = a.src + (n * p.ic + g * d.cg) * d.in_size;
            if (!identity) {
                Span s(prof, "im2col");
                im2col_kernel(p, a.src, n, g, col);
                b = col;
            }
            Span s(prof, "gemm");
            matmul(a.tuning, d.kg, d.rows, d.cols, a.diff_dst + (n * p.oc + g * d.kg) * d.cols,
                   false, b, true, a.diff_wei + g * d.kg * d.rows, n > 0);
        }
    }
}

}  // namespace convlab::detail
