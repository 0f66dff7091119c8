// Layers for the lessons: enough to build a small network and backpropagate through it.
//
// Each layer comes as a pair of free functions, X_forward directly followed by X_backward (as in
// llm.c): gradient outputs come first in the argument list, and every argument carries its shape
// in a comment. The classes of the [SECTION] Layer interface wrap the pairs: forward caches what
// backward needs, backward returns the gradient of the input and keeps those of the parameters.
//
// All tensors are dense row-major fp32. Convolutions go through the engine (conv.hpp); nothing
// here re-implements them.
//
// Index of sections:
//   [SECTION] Transposed convolution
//   [SECTION] Locally connected layer
//   [SECTION] ReLU
//   [SECTION] Max pooling and global max pooling
//   [SECTION] Fully connected
//   [SECTION] Softmax cross-entropy
//   [SECTION] Layer interface and Sequential
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace convlab::layers {

// [SECTION] Transposed convolution
//
// The transposed convolution of problem p is the backward data of the convolution p: it maps the
// convolution's output space to its input space. With A the matrix of the convolution
// (dst = A src), forward is y = A^T x and its backward is diff_x = A diff_y, the forward
// convolution. Its weight gradient is the convolution's backward weight with the roles of
// the two activations swapped (diff_y plays the convolution's src, x plays its diff_dst).
//
// x: (N, K, out...)   wei: (K, C/G, k...)   bias: (C) or null   y: (N, C, in...)
Tensor conv_transposed_forward(const Problem& p, const Tensor& x, const Tensor& wei,
                               const Tensor* bias, std::string_view algo = "direct");
// diff_x: (N, K, out...)   diff_wei: (K, C/G, k...)   diff_bias: (C) or null (not computed)
// diff_y: (N, C, in...)    x: (N, K, out...)          wei: (K, C/G, k...)
void conv_transposed_backward(Tensor& diff_x, Tensor& diff_wei, Tensor* diff_bias, const Problem& p,
                              const Tensor& diff_y, const Tensor& x, const Tensor& wei,
                              std::string_view algo = "direct");

// [SECTION] Locally connected layer
//
// A convolution whose weights are not shared: every output position o has its own kernel.
// Per position o (P = prod(out) positions, R = C * prod(k) taps of a window, groups must be 1):
//   Y_o (K x N) = W_o (K x R) * X_o (R x N)
// where column n of X_o is column o of image n's im2col matrix. Forward is a batch of P GEMMs;
// backward is two batches:  dW_o = dY_o X_o^T  and  dX_o = W_o^T dY_o  (then col2im).
//
// Weights (P, K, R) as returned by locally_connected_wei_dims(p); bias (K, P) or null.
std::vector<dim_t> locally_connected_wei_dims(const Problem& p);
// x: (N, C, in...)   wei: (P, K, R)   bias: (K, P) or null   y: (N, K, out...)
Tensor locally_connected_forward(const Problem& p, const Tensor& x, const Tensor& wei,
                                 const Tensor* bias);
// diff_x: (N, C, in...)   diff_wei: (P, K, R)   diff_bias: (K, P) or null (not computed)
// diff_y: (N, K, out...)  x: (N, C, in...)      wei: (P, K, R)
void locally_connected_backward(Tensor& diff_x, Tensor& diff_wei, Tensor* diff_bias,
                                const Problem& p, const Tensor& diff_y, const Tensor& x,
                                const Tensor& wei);

// [SECTION] ReLU
// y = max(x, 0). dL/dx = dL/dy where x > 0, else 0 (the subgradient at 0 is taken as 0).
// x, y, diff_x, diff_y: any dims, all equal.
Tensor relu_forward(const Tensor& x);
void relu_backward(Tensor& diff_x, const Tensor& diff_y, const Tensor& x);

// [SECTION] Max pooling and global max pooling
//
// Windows of `kernel` with `stride` per spatial axis, no padding (out = (in - k) / s + 1).
// Tie rule: the first maximum of a window in row-major scan order wins, and only it receives
// the gradient (as PyTorch and oneDNN do). `argmax` keeps the linear index into x of each
// output's winner, for backward.
struct Pool {
    std::vector<dim_t> kernel;  // one per spatial axis
    std::vector<dim_t> stride;  // one per spatial axis; empty = kernel
};
// x: (N, C, spatial...)   y: (N, C, out...)   argmax: one x index per y element
Tensor max_pool_forward(std::vector<dim_t>& argmax, const Tensor& x, const Pool& pool);
// diff_x: x's dims, zeroed then diff_y added at each argmax.   diff_y: (N, C, out...)
void max_pool_backward(Tensor& diff_x, const Tensor& diff_y, const std::vector<dim_t>& argmax,
                       const std::vector<dim_t>& x_dims);

// Global max pooling: one window over all spatial axes. x: (N, C, spatial...)   y: (N, C)
Tensor global_max_pool_forward(std::vector<dim_t>& argmax, const Tensor& x);
void global_max_pool_backward(Tensor& diff_x, const Tensor& diff_y,
                              const std::vector<dim_t>& argmax, const std::vector<dim_t>& x_dims);

// [SECTION] Fully connected
// y = x W^T + b, with x flattened to (N, F) (F = product of every dim after the first).
// x: (N, ...) F features   wei: (O, F)   bias: (O) or null   y: (N, O)
Tensor fully_connected_forward(const Tensor& x, const Tensor& wei, const Tensor* bias);
// diff_x = diff_y W (x's dims)   diff_wei = diff_y^T x (O, F)   diff_bias = sum_n diff_y (O)
void fully_connected_backward(Tensor& diff_x, Tensor& diff_wei, Tensor* diff_bias,
                              const Tensor& diff_y, const Tensor& x, const Tensor& wei);

// [SECTION] Softmax cross-entropy
// logits: (N, M); target: N class indices in [0, M).
// probs = softmax(logits) per row; loss = mean_n -log probs[n][target[n]] (computed in double,
// after subtracting the row maximum).
double softmax_cross_entropy_forward(Tensor& probs, const Tensor& logits,
                                     const std::vector<dim_t>& target);
// diff_logits = (probs - onehot(target)) / N: (N, M)
void softmax_cross_entropy_backward(Tensor& diff_logits, const Tensor& probs,
                                    const std::vector<dim_t>& target);

// [SECTION] Layer interface and Sequential

// A trainable tensor of a layer and its gradient (filled by backward).
struct Param {
    std::string name;  // "wei", "bias"
    Tensor* value = nullptr;
    Tensor* grad = nullptr;
};

class Layer {
  public:
    explicit Layer(std::string name) : name_(std::move(name)) {}
    virtual ~Layer() = default;
    Layer(const Layer&) = delete;
    Layer& operator=(const Layer&) = delete;

    const std::string& name() const { return name_; }
    virtual const char* kind() const = 0;  // "conv", "relu", ...
    // Computes y from x and caches what backward needs (the input, argmax ...).
    virtual Tensor forward(const Tensor& x) = 0;
    // Given dL/dy of the last forward, fills the parameter gradients and returns dL/dx.
    virtual Tensor backward(const Tensor& diff_y) = 0;
    virtual std::vector<Param> params() { return {}; }

  private:
    std::string name_;
};

// A layer with weights and an optional bias (empty tensor: none): keeps them, their gradients
// and the input of the last forward, and lists them as params().
class WeightedLayer : public Layer {
  public:
    WeightedLayer(std::string name, Tensor wei, Tensor bias)
        : Layer(std::move(name)), wei_(std::move(wei)), bias_(std::move(bias)) {}
    std::vector<Param> params() override;

  protected:
    const Tensor* bias_or_null() const { return bias_.empty() ? nullptr : &bias_; }
    Tensor* diff_bias_or_null() { return bias_.empty() ? nullptr : &diff_bias_; }
    Tensor wei_, bias_, diff_wei_, diff_bias_, x_;
};

// Convolution through the engine. The problem's mb is taken from the input at each call.
class Conv final : public WeightedLayer {
  public:
    Conv(std::string name, Problem p, Tensor wei, Tensor bias = {});
    const char* kind() const override { return "conv"; }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& diff_y) override;
    const Problem& problem() const { return p_; }

  private:
    Problem p_;
};

class ConvTransposed final : public WeightedLayer {
  public:
    ConvTransposed(std::string name, Problem p, Tensor wei, Tensor bias = {});
    const char* kind() const override { return "conv_transposed"; }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& diff_y) override;

  private:
    Problem p_;
};

class LocallyConnected final : public WeightedLayer {
  public:
    LocallyConnected(std::string name, Problem p, Tensor wei, Tensor bias = {});
    const char* kind() const override { return "locally_connected"; }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& diff_y) override;

  private:
    Problem p_;
};

class ReLU final : public Layer {
  public:
    using Layer::Layer;
    const char* kind() const override { return "relu"; }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& diff_y) override;

  private:
    Tensor x_;
};

class MaxPool final : public Layer {
  public:
    MaxPool(std::string name, Pool pool) : Layer(std::move(name)), pool_(std::move(pool)) {}
    const char* kind() const override { return "max_pool"; }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& diff_y) override;

  private:
    Pool pool_;
    std::vector<dim_t> argmax_, x_dims_;
};

class GlobalMaxPool final : public Layer {
  public:
    using Layer::Layer;
    const char* kind() const override { return "global_max_pool"; }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& diff_y) override;

  private:
    std::vector<dim_t> argmax_, x_dims_;
};

class FullyConnected final : public WeightedLayer {
  public:
    FullyConnected(std::string name, Tensor wei, Tensor bias = {});
    const char* kind() const override { return "fc"; }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& diff_y) override;
};

// A chain of layers ending in logits, trained with softmax cross-entropy. forward keeps every
// activation, backward every gradient, so that a lesson can show all of them.
class Sequential {
  public:
    void add(std::unique_ptr<Layer> layer);
    const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }

    // activations()[0] = x, activations()[i + 1] = output of layer i. Returns the logits.
    const Tensor& forward(const Tensor& x);
    // Softmax cross-entropy of the logits of the last forward against `target`: returns the loss
    // and keeps probs().
    double loss(const std::vector<dim_t>& target);
    // Backpropagates dL/dlogits (from the last loss()) through every layer: diffs()[i] = dL/d
    // activations()[i] (diffs()[0] is dL/dx). Parameter gradients land in each layer's params().
    void backward();

    const std::vector<Tensor>& activations() const { return acts_; }
    const std::vector<Tensor>& diffs() const { return diffs_; }
    const Tensor& probs() const { return probs_; }

  private:
    std::vector<std::unique_ptr<Layer>> layers_;
    std::vector<Tensor> acts_, diffs_;
    Tensor probs_;
    std::vector<dim_t> target_;
};

}  // namespace convlab::layers
