// The B operands of the fractal products packed from OIHW weights in one pass: the forward's
// FRACTAL_Z with each fractal turned C0 x 16, backward data's FlipRot(W) in the same form
// (which pack_weight, fliprot_fz and transpose_b made in three passes), either in fp32 or in bf16
// pairs for vdpbf16ps; and their layout prepared once per weight (prepare_weights), as the NCHW
// algorithms' panels are.
#include "omp_compat.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bf16.hpp"
#include "convlab/maps.hpp"
#include "fractal_kernel.hpp"
#include "prepare_args.hpp"

namespace convlab::davinci {

namespace {

// B of geometry g (O' = 16-row blocks, I' = C0-lane blocks, taps) from the source value of
// (o, i, tap) at src[o*so + i*si + (flip ? S-1-tap : tap)]: one (nb, c1) block at a time, its
// fractals (taps x 16 x C0, in L1 or L2) zeroed, then each (o, i) run of taps read in order.
// Put(fractal, k, j, v) stores W(nb*16 + j, c1*C0 + k) of the fractal.
template <class T, class Put>
void pack_b(const WeiGeom& g, const float* src, dim_t so, dim_t si, bool flip, T* dst, Put put) {
    const dim_t taps = g.taps(), frac = kN0 * g.c0;
#pragma omp parallel for collapse(2) schedule(static) if (g.size() > 65536)
    for (dim_t nb = 0; nb < g.n1; ++nb)
        for (dim_t c1 = 0; c1 < g.i1; ++c1) {
            const dim_t valid = std::min(g.c0, g.i - c1 * g.c0);
            for (dim_t kd = 0; kd < g.d; ++kd)
                for (dim_t kh = 0; kh < g.h; ++kh)
                    for (dim_t kw = 0; kw < g.w; ++kw) {
                        T* f = dst + g.offset(g.row(kd, c1, kh, kw), nb, 0, 0);
                        std::fill(f, f + frac, T{});
                    }
            for (dim_t j = 0; j < kN0 && nb * kN0 + j < g.o; ++j)
                for (dim_t k = 0; k < valid; ++k) {
                    const float* in = src + (nb * kN0 + j) * so + (c1 * g.c0 + k) * si;
                    dim_t tap = 0;
                    for (dim_t kd = 0; kd < g.d; ++kd)
                        for (dim_t kh = 0; kh < g.h; ++kh)
                            for (dim_t kw = 0; kw < g.w; ++kw, ++tap) {
                                T* f = dst + g.offset(g.row(kd, c1, kh, kw), nb, 0, 0);
                                put(f, k, j, in[flip ? taps - 1 - tap : tap]);
                            }
                }
        }
}

const auto put_f32 = [](float* f, dim_t k, dim_t j, float v) { f[k * kN0 + j] = v; };
const auto put_pairs = [](std::uint16_t* f, dim_t k, dim_t j, float v) {
    f[(k / 2) * 2 * kN0 + 2 * j + k % 2] = float_to_bf16(v);
};

void check_even(const char* what, dim_t c0) {
    if (c0 % 2)
        throw Error(std::string(what) + ": c0 = " + std::to_string(c0) +
                    ": bf16 pairs need an even C0");
}

// FlipRot(W)'s geometry for one group: (C/G, K/G, k...).
WeiGeom fliprot_geom(const Problem& p1, dim_t c0) {
    return WeiGeom::of(maps::backward_data_as_forward(p1).wei_dims(), c0);
}

}  // namespace

void pack_weight_pairs(std::span<const dim_t> dims, dim_t c0, const float* src,
                       std::uint16_t* dst) {
    check_even("pack_weight_pairs", c0);
    const WeiGeom g = WeiGeom::of(dims, c0);
    pack_b(g, src, g.i * g.taps(), g.taps(), false, dst, put_pairs);
}

void pack_weight_fliprot_transposed(const Problem& p1, dim_t c0, const float* wei, float* dst) {
    const WeiGeom g = fliprot_geom(p1, c0);
    // W (K, C, taps): FlipRot(W)(c, kc, tap) = W[(kc*C + c)*S + S-1-tap].
    pack_b(g, wei, g.taps(), g.o * g.taps(), true, dst, put_f32);
}

void pack_weight_fliprot_pairs(const Problem& p1, dim_t c0, const float* wei, std::uint16_t* dst) {
    check_even("pack_weight_fliprot_pairs", c0);
    const WeiGeom g = fliprot_geom(p1, c0);
    pack_b(g, wei, g.taps(), g.o * g.taps(), true, dst, put_pairs);
}

namespace {

Problem one_group_of(const Problem& p) {
    Problem q = p;
    q.ic = p.icg();
    q.oc = p.ocg();
    q.groups = 1;
    return q;
}

// The C0 of the prepared B: the one the pass computes with when asked for C0 16.
dim_t prepared_c0(const Problem& p, Pass pass) {
    return pass == Pass::Forward && !tap_lanes(p, kC0, nullptr) ? forward_c0(p, kC0) : kC0;
}

// Floats of one group's prepared B (a forward with taps in the lanes: its virtual problem's).
dim_t group_size(const Problem& p, Pass pass) {
    const Problem p1 = one_group_of(p);
    const dim_t c0 = prepared_c0(p, pass);
    TapLanes tl;
    if (pass == Pass::Forward && tap_lanes(p, kC0, &tl))
        return WeiGeom::of(tl.v.wei_dims(), c0).size();
    return pass == Pass::Forward ? WeiGeom::of(p1.wei_dims(), c0).size()
                                 : fliprot_geom(p1, c0).size();
}

}  // namespace

dim_t prepared_fractal_size(const Problem& p, Pass pass) {
    return p.groups * group_size(p, pass);
}

namespace {

// The fractal layout of w (its problem and pass set) for storage: bf16 pairs where the products
// are vdpbf16ps (fractal_multiplies_pairs), else fp32 floats rounded to the storage dtype, which is
// what the calls without prepared weights pack on every call.
void fill_fractal(const Problem& p, Pass pass, const float* wei, Profiler* prof, DType storage,
                  Rule bf16_pairs, std::shared_ptr<const float[]>& out, std::size_t& out_size,
                  bool& pairs) {
    if (pass == Pass::BackwardData &&
        !maps::backward_data_as_forward(one_group_of(p)).validate(true).empty())
        return;  // fractal_via_forward refuses this problem; nothing to prepare
    const dim_t c0 = prepared_c0(p, pass);
    pairs = fractal_multiplies_pairs(p, pass, storage, c0, bf16_pairs);
    const dim_t per_group = group_size(p, pass);
    const auto n = static_cast<std::size_t>(p.groups * per_group);
    // Pairs take two bytes an element: (n + 1) / 2 floats.
    const std::size_t floats = pairs ? (n + 1) / 2 : n;
    auto* data =
        static_cast<float*>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64));
    if (!data)
        throw Error("prepared: " + std::to_string(floats * sizeof(float)) +
                    " bytes of fractal weights do not fit in memory");
    out = std::shared_ptr<const float[]>(data,
                                         [](const float* f) { std::free(const_cast<float*>(f)); });
    out_size = floats;
    const Problem p1 = one_group_of(p);
    const dim_t wslice = p1.oc * p1.ic * p.kernel_spatial();
    // Its own span: "pack_wei" and "fliprot" in a preparation's profile are implicit_gemm's
    // panels, which tell whether implicit_gemm reads the weights in place (empty()).
    Span s(prof, pass == Pass::Forward ? "pack_wei_fractal" : "fliprot_fractal");
    auto* b16 = reinterpret_cast<std::uint16_t*>(data);
    // A forward with taps in the lanes packs its virtual problem's weights W'.
    TapLanes tl;
    const bool lanes = pass == Pass::Forward && tap_lanes(p, kC0, &tl);
    std::vector<float> wv(
        lanes ? static_cast<std::size_t>(tl.v.oc * tl.v.ic * tl.v.kernel_spatial()) : 0);
    const std::vector<dim_t> wd = lanes ? tl.v.wei_dims() : p1.wei_dims();
    for (dim_t g = 0; g < p.groups; ++g) {
        const float* src = wei + g * wslice;
        if (lanes) {
            tap_lanes_weights(p1, tl, src, wv.data());
            src = wv.data();
        }
        if (pairs && pass == Pass::Forward)
            pack_weight_pairs(wd, c0, src, b16 + g * per_group);
        else if (pairs)
            pack_weight_fliprot_pairs(p1, c0, src, b16 + g * per_group);
        else if (pass == Pass::Forward)
            pack_weight_transposed(wd, c0, src, data + g * per_group);
        else
            pack_weight_fliprot_transposed(p1, c0, src, data + g * per_group);
    }
    const auto m = static_cast<dim_t>(n);
    if (!pairs && storage == DType::bf16) {
        detail::round_bf16(data, data, m);
    } else if (!pairs && storage == DType::f16) {
        detail::round_f16(data, data, m);
    }
}

}  // namespace

void prepare_fractal(PreparedWeights& w, const float* wei, Profiler* prof) {
    fill_fractal(w.problem_, w.pass_, wei, prof, DType::f32, Rule::Auto, w.fractal_,
                 w.fractal_size_, w.fractal_pairs_);
    w.fractal_storage_ = DType::f32;
}

PreparedWeights prepare_weights(const Problem& p, Pass pass, const float* wei, DType storage,
                                Profiler* prof, Rule bf16_pairs) {
    detail::check_prepare_args(p, pass, wei);
    PreparedWeights w;
    w.problem_ = p;
    w.pass_ = pass;
    fill_fractal(p, pass, wei, prof, storage, bf16_pairs, w.fractal_, w.fractal_size_,
                 w.fractal_pairs_);
    w.fractal_storage_ = storage;
    return w;
}

}  // namespace convlab::davinci

namespace convlab {

const float* PreparedWeights::fractal(const Problem& p, Pass pass, DType storage) const {
    check(p, pass);
    return fractal_size_ && !fractal_pairs_ && fractal_storage_ == storage ? fractal_.get()
                                                                           : nullptr;
}

const std::uint16_t* PreparedWeights::fractal_pairs(const Problem& p, Pass pass) const {
    check(p, pass);
    return fractal_size_ && fractal_pairs_ ? reinterpret_cast<const std::uint16_t*>(fractal_.get())
                                           : nullptr;
}

}  // namespace convlab
