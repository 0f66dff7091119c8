// Locally connected layer (layers.hpp): forward and backward as batches of GEMMs, one per output
// position, over the im2col columns of every image.
//
// Shapes (P = prod(out) positions, R = C * prod(k) taps, groups 1):
//   cols: (N, R, P)  the im2col matrix of each image (maps::im2col, one group)
//   xb:   (P, R, N)  the same columns regrouped by position: X_o = xb[o] (R x N)
//   wei:  (P, K, R)  W_o = wei[o]
//   yb:   (P, K, N)  Y_o = W_o X_o, written to y (N, K, out...) as y[n][k][o] = Y_o[k][n]
#include <Eigen/Core>
#include <vector>

#include "convlab/kernels.hpp"
#include "convlab/layers.hpp"

namespace convlab::layers {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

struct LcDims {
    dim_t n, k, r, pos;
    explicit LcDims(const Problem& p)
        : n(p.mb), k(p.oc), r(p.ic * p.kernel_spatial()), pos(p.out_spatial()) {}
};

void check_lc(const Problem& p) {
    p.check();
    if (p.groups != 1)
        throw Error("groups = " + std::to_string(p.groups) +
                    ": the locally connected layer takes groups 1");
}

void expect(const char* what, const Tensor& t, const std::vector<dim_t>& dims) {
    if (t.dims() != dims)
        throw Error(std::string(what) + " has dims " + t.shape_str() + ", expected " +
                    dims_str(dims));
}

// xb (P, R, N) from x (N, C, in...): im2col per image, then regrouped by position.
std::vector<float> columns_by_position(const Problem& p, const Tensor& x) {
    const LcDims d(p);
    std::vector<float> col(static_cast<std::size_t>(d.r * d.pos));
    std::vector<float> xb(static_cast<std::size_t>(d.pos * d.r * d.n));
    for (dim_t n = 0; n < d.n; ++n) {
        im2col_kernel(p, x.f32(), n, 0, col.data());
        for (dim_t row = 0; row < d.r; ++row)
            for (dim_t o = 0; o < d.pos; ++o) xb[(o * d.r + row) * d.n + n] = col[row * d.pos + o];
    }
    return xb;
}

}  // namespace

std::vector<dim_t> locally_connected_wei_dims(const Problem& p) {
    return {p.out_spatial(), p.oc, p.ic * p.kernel_spatial()};
}

Tensor locally_connected_forward(const Problem& p, const Tensor& x, const Tensor& wei,
                                 const Tensor* bias) {
    check_lc(p);
    expect("x", x, p.src_dims());
    expect("wei", wei, locally_connected_wei_dims(p));
    const LcDims d(p);
    if (bias) expect("bias", *bias, {d.k, d.pos});
    const std::vector<float> xb = columns_by_position(p, x);
    Tensor y(p.dst_dims());
    RowMat yo(d.k, d.n);
    for (dim_t o = 0; o < d.pos; ++o) {
        // Y_o (K x N) = W_o (K x R) * X_o (R x N)
        yo.noalias() =
            MapC(wei.f32() + o * d.k * d.r, d.k, d.r) * MapC(xb.data() + o * d.r * d.n, d.r, d.n);
        for (dim_t n = 0; n < d.n; ++n)
            for (dim_t k = 0; k < d.k; ++k)
                y.f32()[(n * d.k + k) * d.pos + o] =
                    yo(k, n) + (bias ? bias->f32()[k * d.pos + o] : 0.0f);
    }
    return y;
}

void locally_connected_backward(Tensor& diff_x, Tensor& diff_wei, Tensor* diff_bias,
                                const Problem& p, const Tensor& diff_y, const Tensor& x,
                                const Tensor& wei) {
    check_lc(p);
    expect("x", x, p.src_dims());
    expect("wei", wei, locally_connected_wei_dims(p));
    expect("diff_y", diff_y, p.dst_dims());
    const LcDims d(p);
    const std::vector<float> xb = columns_by_position(p, x);
    diff_wei = Tensor(wei.dims());
    if (diff_bias) *diff_bias = Tensor({d.k, d.pos});
    // dcol (N, R, P): the column gradients of every image, scattered back by col2im.
    std::vector<float> dcol(static_cast<std::size_t>(d.n * d.r * d.pos));
    RowMat dyo(d.k, d.n), dxo(d.r, d.n);
    for (dim_t o = 0; o < d.pos; ++o) {
        for (dim_t n = 0; n < d.n; ++n)
            for (dim_t k = 0; k < d.k; ++k) dyo(k, n) = diff_y.f32()[(n * d.k + k) * d.pos + o];
        // dW_o (K x R) = dY_o (K x N) * X_o^T (N x R)
        Map(diff_wei.f32() + o * d.k * d.r, d.k, d.r).noalias() =
            dyo * MapC(xb.data() + o * d.r * d.n, d.r, d.n).transpose();
        // dX_o (R x N) = W_o^T (R x K) * dY_o (K x N)
        dxo.noalias() = MapC(wei.f32() + o * d.k * d.r, d.k, d.r).transpose() * dyo;
        for (dim_t n = 0; n < d.n; ++n)
            for (dim_t row = 0; row < d.r; ++row) dcol[(n * d.r + row) * d.pos + o] = dxo(row, n);
        if (diff_bias)
            for (dim_t k = 0; k < d.k; ++k) diff_bias->f32()[k * d.pos + o] = dyo.row(k).sum();
    }
    diff_x = Tensor(p.src_dims());
    for (dim_t n = 0; n < d.n; ++n)
        col2im_kernel(p, dcol.data() + n * d.r * d.pos, n, 0, diff_x.f32());
}

}  // namespace convlab::layers
