// Layers for the lessons (layers.hpp): forward and backward of each, side by side.
//
// Index of sections:
//   [SECTION] Helpers
//   [SECTION] Transposed convolution
//   [SECTION] ReLU
//   [SECTION] Max pooling and global max pooling
//   [SECTION] Fully connected
//   [SECTION] Softmax cross-entropy
//   [SECTION] Layer classes and Sequential
// The locally connected layer (batched GEMM with Eigen) lives in layers_lc.cpp.
#include "convlab/layers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convlab::layers {

// [SECTION] Helpers

namespace {

void expect_dims(const char* what, const Tensor& t, const std::vector<dim_t>& dims) {
    if (t.dims() != dims)
        throw Error(std::string(what) + " has dims " + t.shape_str() + ", expected " +
                    dims_str(dims));
}

void expect_rank_at_least(const char* what, const Tensor& t, int rank) {
    if (t.rank() < rank)
        throw Error(std::string(what) + " has rank " + std::to_string(t.rank()) +
                    ", expected >= " + std::to_string(rank));
}

// The problem with its batch taken from an activation's first dim.
Problem with_batch(Problem p, dim_t mb) {
    p.mb = mb;
    p.check();
    return p;
}

// Sum over batch and space of (N, C, spatial...) into (C).
Tensor channel_sums(const Tensor& t) {
    const dim_t n = t.dims()[0], c = t.dims()[1], sp = t.numel() / (n * c);
    Tensor out({c});
    for (dim_t ic = 0; ic < c; ++ic) {
        double s = 0;
        for (dim_t in = 0; in < n; ++in)
            for (dim_t i = 0; i < sp; ++i) s += t.f32()[(in * c + ic) * sp + i];
        out.f32()[ic] = static_cast<float>(s);
    }
    return out;
}

}  // namespace

// [SECTION] Transposed convolution

Tensor conv_transposed_forward(const Problem& p, const Tensor& x, const Tensor& wei,
                               const Tensor* bias, std::string_view algo) {
    // y = A^T x: the convolution's backward data with x in the role of diff_dst.
    Tensor y = backward_data(p, x, wei, algo);
    if (bias) {
        expect_dims("bias", *bias, {p.ic});
        const dim_t sp = p.in_spatial();
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t c = 0; c < p.ic; ++c)
                for (dim_t i = 0; i < sp; ++i) y.f32()[(n * p.ic + c) * sp + i] += bias->f32()[c];
    }
    return y;
}

void conv_transposed_backward(Tensor& diff_x, Tensor& diff_wei, Tensor* diff_bias, const Problem& p,
                              const Tensor& diff_y, const Tensor& x, const Tensor& wei,
                              std::string_view algo) {
    // diff_x = A diff_y: the forward convolution of diff_y.
    diff_x = forward(p, diff_y, wei, nullptr, algo);
    // y[n][c][i] = sum x[n][k][o] wei[k][c][t] over i = o*s - pb + t*d, so
    // dL/dwei[k][c][t] = sum diff_y[n][c][i] x[n][k][o]: the convolution's backward weight with
    // src = diff_y and diff_dst = x.
    diff_wei = backward_weight(p, diff_y, x, algo);
    if (diff_bias) *diff_bias = channel_sums(diff_y);
}

// [SECTION] ReLU

Tensor relu_forward(const Tensor& x) {
    Tensor y(x.dims());
    for (dim_t i = 0; i < x.numel(); ++i) y.f32()[i] = std::max(x.f32()[i], 0.0f);
    return y;
}

void relu_backward(Tensor& diff_x, const Tensor& diff_y, const Tensor& x) {
    expect_dims("diff_y", diff_y, x.dims());
    diff_x = Tensor(x.dims());
    for (dim_t i = 0; i < x.numel(); ++i)
        diff_x.f32()[i] = x.f32()[i] > 0.0f ? diff_y.f32()[i] : 0.0f;
}

// [SECTION] Max pooling and global max pooling

Tensor max_pool_forward(std::vector<dim_t>& argmax, const Tensor& x, const Pool& pool) {
    expect_rank_at_least("x", x, 3);
    const int nd = x.rank() - 2;
    if (static_cast<int>(pool.kernel.size()) != nd)
        throw Error("pool kernel has " + std::to_string(pool.kernel.size()) +
                    " sizes, expected one per spatial axis (" + std::to_string(nd) + ")");
    std::vector<dim_t> stride = pool.stride.empty() ? pool.kernel : pool.stride;
    if (static_cast<int>(stride.size()) != nd)
        throw Error("pool stride has " + std::to_string(stride.size()) +
                    " sizes, expected one per spatial axis (" + std::to_string(nd) + ")");
    std::vector<dim_t> out_dims{x.dims()[0], x.dims()[1]};
    for (int a = 0; a < nd; ++a) {
        const dim_t in = x.dims()[2 + a];
        if (pool.kernel[a] < 1 || stride[a] < 1)
            throw Error("pool kernel[" + std::to_string(a) + "] and stride must be >= 1");
        if (pool.kernel[a] > in)
            throw Error("pool kernel[" + std::to_string(a) +
                        "] = " + std::to_string(pool.kernel[a]) + " exceeds the input size " +
                        std::to_string(in));
        out_dims.push_back((in - pool.kernel[a]) / stride[a] + 1);
    }
    Tensor y(out_dims);
    argmax.assign(static_cast<std::size_t>(y.numel()), 0);
    std::vector<dim_t> oc(out_dims.size()), kc(static_cast<std::size_t>(nd)), xc(x.dims().size());
    const dim_t taps = product(pool.kernel);
    for (dim_t o = 0; o < y.numel(); ++o) {
        y.coord_of(o, oc);
        float best = -std::numeric_limits<float>::infinity();
        dim_t best_i = -1;
        // Taps in row-major order; strict > keeps the first maximum (the tie rule).
        for (dim_t t = 0; t < taps; ++t) {
            dim_t rest = t;
            for (int a = nd - 1; a >= 0; --a) {
                kc[a] = rest % pool.kernel[a];
                rest /= pool.kernel[a];
            }
            xc[0] = oc[0];
            xc[1] = oc[1];
            for (int a = 0; a < nd; ++a) xc[2 + a] = oc[2 + a] * stride[a] + kc[a];
            dim_t lin = 0;
            for (std::size_t a = 0; a < xc.size(); ++a) lin = lin * x.dims()[a] + xc[a];
            const float v = x.f32()[lin];
            if (best_i < 0 || v > best) {
                best = v;
                best_i = lin;
            }
        }
        y.f32()[o] = best;
        argmax[o] = best_i;
    }
    return y;
}

void max_pool_backward(Tensor& diff_x, const Tensor& diff_y, const std::vector<dim_t>& argmax,
                       const std::vector<dim_t>& x_dims) {
    if (static_cast<dim_t>(argmax.size()) != diff_y.numel())
        throw Error("max_pool_backward: diff_y has " + std::to_string(diff_y.numel()) +
                    " elements but forward kept " + std::to_string(argmax.size()));
    diff_x = Tensor(x_dims);
    // Only the winner of each window gets the gradient; windows that overlap add up.
    for (dim_t o = 0; o < diff_y.numel(); ++o) diff_x.f32()[argmax[o]] += diff_y.f32()[o];
}

Tensor global_max_pool_forward(std::vector<dim_t>& argmax, const Tensor& x) {
    expect_rank_at_least("x", x, 3);
    const dim_t n = x.dims()[0], c = x.dims()[1], sp = x.numel() / (n * c);
    Tensor y({n, c});
    argmax.assign(static_cast<std::size_t>(n * c), 0);
    for (dim_t i = 0; i < n * c; ++i) {
        dim_t best = i * sp;
        for (dim_t j = 1; j < sp; ++j)
            if (x.f32()[i * sp + j] > x.f32()[best]) best = i * sp + j;  // first maximum wins
        y.f32()[i] = x.f32()[best];
        argmax[i] = best;
    }
    return y;
}

void global_max_pool_backward(Tensor& diff_x, const Tensor& diff_y,
                              const std::vector<dim_t>& argmax, const std::vector<dim_t>& x_dims) {
    max_pool_backward(diff_x, diff_y, argmax, x_dims);
}

// [SECTION] Fully connected

Tensor fully_connected_forward(const Tensor& x, const Tensor& wei, const Tensor* bias) {
    expect_rank_at_least("x", x, 2);
    const dim_t n = x.dims()[0], f = x.numel() / n;
    if (wei.rank() != 2 || wei.dims()[1] != f)
        throw Error("fc wei has dims " + wei.shape_str() + ", expected (O, " + std::to_string(f) +
                    ") for an input of " + std::to_string(f) + " features");
    const dim_t o = wei.dims()[0];
    if (bias) expect_dims("fc bias", *bias, {o});
    Tensor y({n, o});
    for (dim_t in = 0; in < n; ++in)
        for (dim_t io = 0; io < o; ++io) {
            double s = bias ? bias->f32()[io] : 0.0;
            for (dim_t i = 0; i < f; ++i)
                s += double(x.f32()[in * f + i]) * double(wei.f32()[io * f + i]);
            y.f32()[in * o + io] = static_cast<float>(s);
        }
    return y;
}

void fully_connected_backward(Tensor& diff_x, Tensor& diff_wei, Tensor* diff_bias,
                              const Tensor& diff_y, const Tensor& x, const Tensor& wei) {
    const dim_t n = x.dims()[0], f = x.numel() / n, o = wei.dims()[0];
    expect_dims("diff_y", diff_y, {n, o});
    diff_x = Tensor(x.dims());
    diff_wei = Tensor(wei.dims());
    for (dim_t in = 0; in < n; ++in)  // diff_x = diff_y W
        for (dim_t i = 0; i < f; ++i) {
            double s = 0;
            for (dim_t io = 0; io < o; ++io)
                s += double(diff_y.f32()[in * o + io]) * double(wei.f32()[io * f + i]);
            diff_x.f32()[in * f + i] = static_cast<float>(s);
        }
    for (dim_t io = 0; io < o; ++io)  // diff_wei = diff_y^T x
        for (dim_t i = 0; i < f; ++i) {
            double s = 0;
            for (dim_t in = 0; in < n; ++in)
                s += double(diff_y.f32()[in * o + io]) * double(x.f32()[in * f + i]);
            diff_wei.f32()[io * f + i] = static_cast<float>(s);
        }
    if (diff_bias) {
        *diff_bias = Tensor({o});
        for (dim_t io = 0; io < o; ++io) {
            double s = 0;
            for (dim_t in = 0; in < n; ++in) s += diff_y.f32()[in * o + io];
            diff_bias->f32()[io] = static_cast<float>(s);
        }
    }
}

// [SECTION] Softmax cross-entropy

double softmax_cross_entropy_forward(Tensor& probs, const Tensor& logits,
                                     const std::vector<dim_t>& target) {
    if (logits.rank() != 2)
        throw Error("logits have dims " + logits.shape_str() + ", expected (N, M)");
    const dim_t n = logits.dims()[0], m = logits.dims()[1];
    if (static_cast<dim_t>(target.size()) != n)
        throw Error("target has " + std::to_string(target.size()) +
                    " labels, expected one per image (" + std::to_string(n) + ")");
    probs = Tensor({n, m});
    double loss = 0;
    for (dim_t in = 0; in < n; ++in) {
        if (target[in] < 0 || target[in] >= m)
            throw Error("target[" + std::to_string(in) + "] = " + std::to_string(target[in]) +
                        ": a class index must be in [0, " + std::to_string(m) + ")");
        const float* z = logits.f32() + in * m;
        const double zmax = *std::max_element(z, z + m);
        double sum = 0;
        for (dim_t j = 0; j < m; ++j) sum += std::exp(double(z[j]) - zmax);
        for (dim_t j = 0; j < m; ++j)
            probs.f32()[in * m + j] = static_cast<float>(std::exp(double(z[j]) - zmax) / sum);
        // -log softmax(z)[t] = log(sum) - (z[t] - zmax)
        loss += std::log(sum) - (double(z[target[in]]) - zmax);
    }
    return loss / double(n);
}

void softmax_cross_entropy_backward(Tensor& diff_logits, const Tensor& probs,
                                    const std::vector<dim_t>& target) {
    const dim_t n = probs.dims()[0], m = probs.dims()[1];
    diff_logits = Tensor({n, m});
    for (dim_t in = 0; in < n; ++in)
        for (dim_t j = 0; j < m; ++j)
            diff_logits.f32()[in * m + j] =
                (probs.f32()[in * m + j] - (j == target[in] ? 1.0f : 0.0f)) / float(n);
}

// [SECTION] Layer classes and Sequential

std::vector<Param> WeightedLayer::params() {
    std::vector<Param> v{{"wei", &wei_, &diff_wei_}};
    if (!bias_.empty()) v.push_back({"bias", &bias_, &diff_bias_});
    return v;
}

Conv::Conv(std::string name, Problem p, Tensor wei, Tensor bias)
    : WeightedLayer(std::move(name), std::move(wei), std::move(bias)), p_(std::move(p)) {
    p_.check();
    expect_dims("wei", wei_, p_.wei_dims());
    if (!bias_.empty()) expect_dims("bias", bias_, {p_.oc});
}
Tensor Conv::forward(const Tensor& x) {
    x_ = x;
    return convlab::forward(with_batch(p_, x.dims()[0]), x, wei_, bias_or_null(), "direct");
}
Tensor Conv::backward(const Tensor& diff_y) {
    const Problem p = with_batch(p_, x_.dims()[0]);
    diff_wei_ = backward_weight(p, x_, diff_y, "direct");
    diff_bias_ = backward_bias(p, diff_y);
    return backward_data(p, diff_y, wei_, "direct");
}
ConvTransposed::ConvTransposed(std::string name, Problem p, Tensor wei, Tensor bias)
    : WeightedLayer(std::move(name), std::move(wei), std::move(bias)), p_(std::move(p)) {
    p_.check();
    expect_dims("wei", wei_, p_.wei_dims());
    if (!bias_.empty()) expect_dims("bias", bias_, {p_.ic});
}
Tensor ConvTransposed::forward(const Tensor& x) {
    x_ = x;
    return conv_transposed_forward(with_batch(p_, x.dims()[0]), x, wei_, bias_or_null());
}
Tensor ConvTransposed::backward(const Tensor& diff_y) {
    Tensor diff_x;
    conv_transposed_backward(diff_x, diff_wei_, diff_bias_or_null(), with_batch(p_, x_.dims()[0]),
                             diff_y, x_, wei_);
    return diff_x;
}
LocallyConnected::LocallyConnected(std::string name, Problem p, Tensor wei, Tensor bias)
    : WeightedLayer(std::move(name), std::move(wei), std::move(bias)), p_(std::move(p)) {
    p_.check();
    expect_dims("wei", wei_, locally_connected_wei_dims(p_));
    if (!bias_.empty()) expect_dims("bias", bias_, {p_.oc, p_.out_spatial()});
}
Tensor LocallyConnected::forward(const Tensor& x) {
    x_ = x;
    return locally_connected_forward(with_batch(p_, x.dims()[0]), x, wei_, bias_or_null());
}
Tensor LocallyConnected::backward(const Tensor& diff_y) {
    Tensor diff_x;
    locally_connected_backward(diff_x, diff_wei_, diff_bias_or_null(), with_batch(p_, x_.dims()[0]),
                               diff_y, x_, wei_);
    return diff_x;
}
Tensor ReLU::forward(const Tensor& x) {
    x_ = x;
    return relu_forward(x);
}
Tensor ReLU::backward(const Tensor& diff_y) {
    Tensor diff_x;
    relu_backward(diff_x, diff_y, x_);
    return diff_x;
}

Tensor MaxPool::forward(const Tensor& x) {
    x_dims_ = x.dims();
    return max_pool_forward(argmax_, x, pool_);
}
Tensor MaxPool::backward(const Tensor& diff_y) {
    Tensor diff_x;
    max_pool_backward(diff_x, diff_y, argmax_, x_dims_);
    return diff_x;
}

Tensor GlobalMaxPool::forward(const Tensor& x) {
    x_dims_ = x.dims();
    return global_max_pool_forward(argmax_, x);
}
Tensor GlobalMaxPool::backward(const Tensor& diff_y) {
    Tensor diff_x;
    global_max_pool_backward(diff_x, diff_y, argmax_, x_dims_);
    return diff_x;
}

FullyConnected::FullyConnected(std::string name, Tensor wei, Tensor bias)
    : WeightedLayer(std::move(name), std::move(wei), std::move(bias)) {
    if (wei_.rank() != 2) throw Error("fc wei has dims " + wei_.shape_str() + ", expected (O, F)");
    if (!bias_.empty()) expect_dims("fc bias", bias_, {wei_.dims()[0]});
}
Tensor FullyConnected::forward(const Tensor& x) {
    x_ = x;
    return fully_connected_forward(x, wei_, bias_or_null());
}
Tensor FullyConnected::backward(const Tensor& diff_y) {
    Tensor diff_x;
    fully_connected_backward(diff_x, diff_wei_, diff_bias_or_null(), diff_y, x_, wei_);
    return diff_x;
}
void Sequential::add(std::unique_ptr<Layer> layer) {
    layers_.push_back(std::move(layer));
}

const Tensor& Sequential::forward(const Tensor& x) {
    acts_.clear();
    diffs_.clear();
    acts_.push_back(x);
    for (auto& l : layers_) {
        Tensor y = l->forward(acts_.back());
        acts_.push_back(std::move(y));
    }
    return acts_.back();
}

double Sequential::loss(const std::vector<dim_t>& target) {
    if (acts_.empty()) throw Error("Sequential::loss before forward");
    target_ = target;
    const Tensor& logits = acts_.back();
    if (logits.rank() != 2)
        throw Error("the last layer gives dims " + logits.shape_str() +
                    "; softmax cross-entropy needs logits (N, M): end with fc");
    return softmax_cross_entropy_forward(probs_, logits, target);
}

void Sequential::backward() {
    if (probs_.empty()) throw Error("Sequential::backward before loss");
    diffs_.assign(acts_.size(), Tensor{});
    softmax_cross_entropy_backward(diffs_.back(), probs_, target_);
    for (std::size_t i = layers_.size(); i-- > 0;) diffs_[i] = layers_[i]->backward(diffs_[i + 1]);
}

}  // namespace convlab::layers
