// Layers (layers.hpp): every backward against central finite differences of its own forward,
// with the loss L = sum(r * y) accumulated in double; forwards against direct loops.
//
// Linear layers (transposed convolution, locally connected, fully connected) get integer data:
// their outputs are exact in fp32 and a central difference of a linear function is exact for any
// step, so the analytic gradient must equal the numeric one exactly. ReLU and max pooling get
// distinct values 0.5 apart and a step of 0.125, which never crosses a kink: exact as well.
// Softmax cross-entropy is smooth and checked with a small step in double.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "convlab/layers.hpp"
#include "test_util.hpp"

using namespace convlab;
using namespace convlab::layers;

namespace {

// sum(r * y) in double.
double dot(const Tensor& y, const Tensor& r) {
    REQUIRE(y.dims() == r.dims());
    double s = 0;
    for (dim_t i = 0; i < y.numel(); ++i) s += double(y.f32()[i]) * double(r.f32()[i]);
    return s;
}

// dL/dt by central differences: t is perturbed in place by +-h (and restored). The denominator is
// the perturbation actually stored in fp32.
std::vector<double> numeric_grad(Tensor& t, float h, const std::function<double()>& loss) {
    std::vector<double> g(static_cast<std::size_t>(t.numel()));
    for (dim_t i = 0; i < t.numel(); ++i) {
        const float v = t.f32()[i];
        t.f32()[i] = v + h;
        const double up = loss();
        const double step_up = double(t.f32()[i]);
        t.f32()[i] = v - h;
        const double down = loss();
        const double step_down = double(t.f32()[i]);
        t.f32()[i] = v;
        g[i] = (up - down) / (step_up - step_down);
    }
    return g;
}

void check_grad(const Tensor& analytic, const std::vector<double>& numeric, double tol,
                const std::string& what, double min_density = 0.3) {
    REQUIRE(static_cast<std::size_t>(analytic.numel()) == numeric.size());
    dim_t bad = -1;
    for (dim_t i = 0; i < analytic.numel() && bad < 0; ++i)
        if (!(std::abs(double(analytic.f32()[i]) - numeric[i]) <= tol)) bad = i;
    INFO(what);
    if (bad >= 0)
        INFO("element " << bad << ": analytic " << analytic.f32()[bad] << ", numeric "
                        << numeric[bad]);
    CHECK(bad < 0);
    CHECK(test::density(analytic) > min_density);  // a gradient of zeros proves little
}

// Distinct values k * 0.5 (k != 0), shuffled: no ties, no zeros, gaps of 0.5.
Tensor distinct_tensor(std::vector<dim_t> dims, std::mt19937& rng) {
    Tensor t(std::move(dims));
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) {
        const float k = float(i) - float(v.size() / 2);
        v[i] = 0.5f * (k >= 0 ? k + 1 : k);
    }
    std::shuffle(v.begin(), v.end(), rng);
    std::copy(v.begin(), v.end(), t.f32());
    return t;
}

}  // namespace

TEST_CASE("layers: transposed convolution equals the scatter of every input by the kernel") {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 20; ++trial) {
        const Problem p = test::random_problem(rng);
        CAPTURE(to_descriptor(p));
        const Tensor x = test::integer_tensor(p.dst_dims(), rng);
        const Tensor w = test::integer_tensor(p.wei_dims(), rng);
        const Tensor b = test::integer_tensor({p.ic}, rng);
        const Tensor y = conv_transposed_forward(p, x, w, &b, "col2im");
        // Direct definition: every input element x[n][k][o] adds x * w[k][c][t] at
        // y[n][g*Cg + c][o*s - pb + t*d], per axis.
        Tensor want(p.src_dims());
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t c = 0; c < p.ic; ++c)
                for (dim_t i = 0; i < p.in_spatial(); ++i)
                    want.f32()[(n * p.ic + c) * p.in_spatial() + i] = b.f32()[c];
        std::vector<dim_t> xc(x.dims().size()), wc(w.dims().size()), yc(want.dims().size());
        for (dim_t xi = 0; xi < x.numel(); ++xi) {
            x.coord_of(xi, xc);
            const dim_t g = xc[1] / p.ocg();
            for (dim_t wi = 0; wi < product(p.wei_dims()) / p.oc; ++wi) {
                wc[0] = xc[1];
                dim_t rest = wi;
                for (int a = static_cast<int>(wc.size()) - 1; a >= 1; --a) {
                    wc[a] = rest % w.dims()[a];
                    rest /= w.dims()[a];
                }
                yc[0] = xc[0];
                yc[1] = g * p.icg() + wc[1];
                bool inside = true;
                for (int a = 0; a < p.ndims; ++a) {
                    yc[2 + a] =
                        xc[2 + a] * p.stride[a] - p.pad_begin[a] + wc[2 + a] * p.dilation[a];
                    inside = inside && yc[2 + a] >= 0 && yc[2 + a] < p.in[a];
                }
                if (inside) want.set(yc, want.get(yc) + x.get(xc) * w.get(wc));
            }
        }
        test::check_equal(y, want, "conv_transposed_forward");
    }
}

TEST_CASE("layers: transposed convolution backward matches finite differences") {
    std::mt19937 rng(12);
    for (int trial = 0; trial < 5; ++trial) {
        const Problem p = test::random_problem(rng, 2);
        CAPTURE(to_descriptor(p));
        Tensor x = test::integer_tensor(p.dst_dims(), rng);
        Tensor w = test::integer_tensor(p.wei_dims(), rng);
        Tensor b = test::integer_tensor({p.ic}, rng);
        const Tensor r = test::integer_tensor(p.src_dims(), rng);
        auto loss = [&] { return dot(conv_transposed_forward(p, x, w, &b), r); };
        Tensor dx, dw, db;
        conv_transposed_backward(dx, dw, &db, p, r, x, w);
        check_grad(dx, numeric_grad(x, 1.0f, loss), 0.0, "diff_x", 0.0);
        // Random problems with wide padding leave taps that see only zeros: density > 0 only.
        check_grad(dw, numeric_grad(w, 1.0f, loss), 0.0, "diff_wei", 0.0);
        check_grad(db, numeric_grad(b, 1.0f, loss), 0.0, "diff_bias", -1.0);
    }
}

TEST_CASE("layers: locally connected forward equals direct loops, backward finite differences") {
    std::mt19937 rng(13);
    for (int trial = 0; trial < 7; ++trial) {
        Problem p = test::random_problem(rng, trial % 3 + 1);
        p.groups = 1;
        if (!p.validate().empty()) continue;
        CAPTURE(to_descriptor(p));
        Tensor x = test::integer_tensor(p.src_dims(), rng);
        Tensor w = test::integer_tensor(locally_connected_wei_dims(p), rng);
        Tensor b = test::integer_tensor({p.oc, p.out_spatial()}, rng);
        const Tensor y = locally_connected_forward(p, x, w, &b);
        // Direct: y[n][k][o] = b[k][o] + sum_{c,t} w[o][k][c*T + t] x[n][c][o*s - pb + t*d].
        Tensor want(p.dst_dims());
        const dim_t T = p.kernel_spatial(), P = p.out_spatial(), R = p.ic * T;
        std::vector<dim_t> xc(static_cast<std::size_t>(2 + p.ndims));
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t k = 0; k < p.oc; ++k)
                for (dim_t o = 0; o < P; ++o) {
                    double s = b.f32()[k * P + o];
                    for (dim_t c = 0; c < p.ic; ++c)
                        for (dim_t t = 0; t < T; ++t) {
                            dim_t orest = o, trest = t;
                            bool inside = true;
                            for (int a = p.ndims - 1; a >= 0; --a) {
                                const dim_t oa = orest % p.out(a), ta = trest % p.kernel[a];
                                orest /= p.out(a);
                                trest /= p.kernel[a];
                                const dim_t ia =
                                    oa * p.stride[a] - p.pad_begin[a] + ta * p.dilation[a];
                                inside = inside && ia >= 0 && ia < p.in[a];
                                xc[2 + a] = ia;
                            }
                            if (!inside) continue;
                            xc[0] = n;
                            xc[1] = c;
                            s += double(w.f32()[(o * p.oc + k) * R + c * T + t]) * x.get(xc);
                        }
                    want.f32()[(n * p.oc + k) * P + o] = static_cast<float>(s);
                }
        test::check_equal(y, want, "locally_connected_forward");

        const Tensor r = test::integer_tensor(p.dst_dims(), rng);
        auto loss = [&] { return dot(locally_connected_forward(p, x, w, &b), r); };
        Tensor dx, dw, db;
        locally_connected_backward(dx, dw, &db, p, r, x, w);
        check_grad(dw, numeric_grad(w, 1.0f, loss), 0.0, "diff_wei", 0.0);
        check_grad(db, numeric_grad(b, 1.0f, loss), 0.0, "diff_bias", -1.0);
        // diff_x can be sparse when padding is wide; compare without the density rule.
        const std::vector<double> ndx = numeric_grad(x, 1.0f, loss);
        for (dim_t i = 0; i < dx.numel(); ++i) REQUIRE(double(dx.f32()[i]) == ndx[i]);
    }
}

TEST_CASE("layers: a locally connected layer with equal weights at every position is a conv") {
    Problem p = parse_descriptor("mb2ic3ih6oc4kh3ph1");
    std::mt19937 rng(14);
    const Tensor x = test::integer_tensor(p.src_dims(), rng);
    const Tensor wc = test::integer_tensor(p.wei_dims(), rng);
    Tensor w(locally_connected_wei_dims(p));
    for (dim_t o = 0; o < p.out_spatial(); ++o)
        std::copy(wc.f32(), wc.f32() + wc.numel(), w.f32() + o * wc.numel());
    test::check_equal(locally_connected_forward(p, x, w, nullptr),
                      forward(p, x, wc, nullptr, "direct"), "shared weights");
}

TEST_CASE("layers: ReLU, max pooling, global max pooling backward match finite differences") {
    std::mt19937 rng(15);
    Tensor x = distinct_tensor({2, 3, 5, 6}, rng);
    {
        const Tensor r = test::integer_tensor(x.dims(), rng);
        Tensor dx;
        relu_backward(dx, r, x);
        check_grad(dx, numeric_grad(x, 0.125f, [&] { return dot(relu_forward(x), r); }), 0.0,
                   "relu");
    }
    for (const Pool& pool : {Pool{{2, 2}, {}}, Pool{{3, 2}, {1, 2}}, Pool{{2, 3}, {2, 1}}}) {
        std::vector<dim_t> am;
        const Tensor y = max_pool_forward(am, x, pool);
        const Tensor r = test::integer_tensor(y.dims(), rng);
        Tensor dx;
        max_pool_backward(dx, r, am, x.dims());
        auto loss = [&] {
            std::vector<dim_t> a;
            return dot(max_pool_forward(a, x, pool), r);
        };
        const std::vector<double> n = numeric_grad(x, 0.125f, loss);
        for (dim_t i = 0; i < dx.numel(); ++i) REQUIRE(double(dx.f32()[i]) == n[i]);
        // Forward: every output is the maximum of its window.
        for (dim_t o = 0; o < y.numel(); ++o) CHECK(y.f32()[o] == x.f32()[am[o]]);
    }
    {
        std::vector<dim_t> am;
        const Tensor y = global_max_pool_forward(am, x);
        CHECK(y.dims() == std::vector<dim_t>{2, 3});
        for (dim_t i = 0; i < 6; ++i)
            CHECK(y.f32()[i] == *std::max_element(x.f32() + i * 30, x.f32() + i * 30 + 30));
        const Tensor r = test::integer_tensor(y.dims(), rng);
        Tensor dx;
        global_max_pool_backward(dx, r, am, x.dims());
        auto loss = [&] {
            std::vector<dim_t> a;
            return dot(global_max_pool_forward(a, x), r);
        };
        const std::vector<double> n = numeric_grad(x, 0.125f, loss);
        for (dim_t i = 0; i < dx.numel(); ++i) REQUIRE(double(dx.f32()[i]) == n[i]);
    }
}

TEST_CASE("layers: max pooling gives a tie to the first maximum in row-major order") {
    Tensor x({1, 1, 2, 2});
    x.fill(1.0f);
    std::vector<dim_t> am;
    max_pool_forward(am, x, Pool{{2, 2}, {}});
    CHECK(am == std::vector<dim_t>{0});
    Tensor dx, dy({1, 1, 1, 1});
    dy.fill(3.0f);
    max_pool_backward(dx, dy, am, x.dims());
    CHECK(dx.f32()[0] == 3.0f);
    CHECK(dx.f32()[1] == 0.0f);
    CHECK(dx.f32()[3] == 0.0f);
}

TEST_CASE("layers: fully connected and softmax cross-entropy match finite differences") {
    std::mt19937 rng(16);
    Tensor x = test::integer_tensor({3, 2, 2, 2}, rng);
    Tensor w = test::integer_tensor({5, 8}, rng);
    Tensor b = test::integer_tensor({5}, rng);
    const Tensor r = test::integer_tensor({3, 5}, rng);
    auto loss = [&] { return dot(fully_connected_forward(x, w, &b), r); };
    Tensor dx, dw, db;
    fully_connected_backward(dx, dw, &db, r, x, w);
    check_grad(dx, numeric_grad(x, 1.0f, loss), 0.0, "fc diff_x");
    check_grad(dw, numeric_grad(w, 1.0f, loss), 0.0, "fc diff_wei");
    check_grad(db, numeric_grad(b, 1.0f, loss), 0.0, "fc diff_bias");

    Tensor z = test::real_tensor({3, 5}, rng);
    const std::vector<dim_t> target{4, 0, 2};
    Tensor probs, dz;
    const double l0 = softmax_cross_entropy_forward(probs, z, target);
    // Independent value in double: mean of log(sum exp z) - z[t].
    double want = 0;
    for (dim_t n = 0; n < 3; ++n) {
        double s = 0;
        for (dim_t j = 0; j < 5; ++j) s += std::exp(double(z.f32()[n * 5 + j]));
        want += std::log(s) - double(z.f32()[n * 5 + target[n]]);
    }
    CHECK(l0 == doctest::Approx(want / 3).epsilon(1e-12));
    softmax_cross_entropy_backward(dz, probs, target);
    check_grad(dz,
               numeric_grad(z, 1e-3f,
                            [&] {
                                Tensor pr;
                                return softmax_cross_entropy_forward(pr, z, target);
                            }),
               2e-5, "softmax diff_logits");
    Tensor pr;
    CHECK_THROWS_AS(softmax_cross_entropy_forward(pr, z, {0, 5, 1}), Error);
}

TEST_CASE("layers: a Sequential network backpropagates to finite differences of its loss") {
    std::mt19937 rng(17);
    const Problem p = parse_descriptor("mb2ic2ih6oc3kh3");
    layers::Sequential net;
    net.add(std::make_unique<Conv>("conv", p, test::real_tensor(p.wei_dims(), rng),
                                   test::real_tensor({p.oc}, rng)));
    net.add(std::make_unique<ReLU>("relu"));
    net.add(std::make_unique<MaxPool>("pool", Pool{{2, 2}, {}}));
    net.add(std::make_unique<FullyConnected>("fc", test::real_tensor({4, 12}, rng),
                                             test::real_tensor({4}, rng)));
    Tensor x = test::real_tensor(p.src_dims(), rng);
    const std::vector<dim_t> target{3, 1};
    net.forward(x);
    net.loss(target);
    net.backward();
    REQUIRE(net.activations().size() == 5);
    REQUIRE(net.diffs().size() == 5);
    auto loss = [&] {
        net.forward(x);
        return net.loss(target);
    };
    // Analytic gradients first (forward/backward below overwrite them).
    const Tensor dx = net.diffs()[0];
    std::vector<Tensor> grads;
    std::vector<Param> params;
    for (auto& l : net.layers())
        for (const Param& q : l->params()) {
            grads.push_back(*q.grad);
            params.push_back(q);
        }
    // Relative to the gradient's size: fp32 forward noise / (2h) ~ 1e-4.
    check_grad(dx, numeric_grad(x, 1e-2f, loss), 2e-3, "dL/dx");
    for (std::size_t i = 0; i < params.size(); ++i)
        check_grad(grads[i], numeric_grad(*params[i].value, 1e-2f, loss), 2e-3,
                   "dL/d " + params[i].name);
}
