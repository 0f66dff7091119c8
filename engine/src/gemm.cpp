// im2col + GEMM (forward, backward weight) and W^T dY + col2im (backward data), with Eigen's
// GEMM on both cores. One column matrix of one image and group lives at a time:
//   B (rows x cols), rows = C/G * prod(k), cols = prod(out).
#include <Eigen/Core>
#include <vector>

#include "algorithms.hpp"

namespace convlab::detail {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

struct GemmDims {
    dim_t rows, cols, kg, cg, in_size;
    explicit GemmDims(const Problem& p)
        : rows(p.icg() * p.kernel_spatial()),
          cols(p.out_spatial()),
          kg(p.ocg()),
          cg(p.icg()),
          in_size(p.in_spatial()) {}
};

}  // namespace

// dst_g (Kg x cols) = wei_g (Kg x rows) * B (rows x cols), then + bias.
void forward_im2col_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const GemmDims d(p);
    const bool identity = im2col_is_identity(p);
    std::vector<float> col(identity ? 0 : static_cast<std::size_t>(d.rows * d.cols));
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g) {
            const float* b = a.src + (n * p.ic + g * d.cg) * d.in_size;
            if (!identity) {
                Span s(prof, "im2col");
                im2col_kernel(p, a.src, n, g, col.data());
                b = col.data();
            }
            Span s(prof, "gemm");
            Map y(a.dst + (n * p.oc + g * d.kg) * d.cols, d.kg, d.cols);
            y.noalias() = MapC(a.wei + g * d.kg * d.rows, d.kg, d.rows) * MapC(b, d.rows, d.cols);
        }
    if (a.bias) {
        Span s(prof, "bias");
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t k = 0; k < p.oc; ++k) {
                float* y = a.dst + (n * p.oc + k) * d.cols;
                const float bk = a.bias[k];
                for (dim_t o = 0; o < d.cols; ++o) y[o] += bk;
            }
    }
}

// B* (rows x cols) = wei_g^T (rows x Kg) * diff_dst_g (Kg x cols), then col2im adds B* into dX.
void backward_data_col2im(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const GemmDims d(p);
    const bool identity = im2col_is_identity(p);
    std::vector<float> col(identity ? 0 : static_cast<std::size_t>(d.rows * d.cols));
    if (!identity) {
        Span s(prof, "zero");
        std::fill(a.diff_src, a.diff_src + p.mb * p.ic * d.in_size, 0.0f);
    }
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g) {
            float* out = identity ? a.diff_src + (n * p.ic + g * d.cg) * d.in_size : col.data();
            {
                Span s(prof, "gemm");
                Map b(out, d.rows, d.cols);
                b.noalias() = MapC(a.wei + g * d.kg * d.rows, d.kg, d.rows).transpose() *
                              MapC(a.diff_dst + (n * p.oc + g * d.kg) * d.cols, d.kg, d.cols);
            }
            if (!identity) {
                Span s(prof, "col2im");
                col2im_kernel(p, col.data(), n, g, a.diff_src);
            }
        }
}

// diff_wei_g (Kg x rows) = sum_n diff_dst_g(n) (Kg x cols) * B(n)^T (cols x rows).
void backward_weight_im2col_gemm(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const GemmDims d(p);
    const bool identity = im2col_is_identity(p);
    std::vector<float> col(identity ? 0 : static_cast<std::size_t>(d.rows * d.cols));
    for (dim_t g = 0; g < p.groups; ++g) {
        Map dw(a.diff_wei + g * d.kg * d.rows, d.kg, d.rows);
        for (dim_t n = 0; n < p.mb; ++n) {
            const float* b = a.src + (n * p.ic + g * d.cg) * d.in_size;
            if (!identity) {
                Span s(prof, "im2col");
                im2col_kernel(p, a.src, n, g, col.data());
                b = col.data();
            }
            Span s(prof, "gemm");
            MapC dy(a.diff_dst + (n * p.oc + g * d.kg) * d.cols, d.kg, d.cols);
            if (n == 0)
                dw.noalias() = dy * MapC(b, d.rows, d.cols).transpose();
            else
                dw.noalias() += dy * MapC(b, d.rows, d.cols).transpose();
        }
    }
}

}  // namespace convlab::detail
