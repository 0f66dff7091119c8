// The fractal forward of few channels with taps in the lanes (Ascend's C04): the plan of its
// virtual problem, the weights W' (every tap of W exactly once), and the forward against direct on
// every element (exact on integer data, every ISA, with and without prepared weights; bf16 and
// fp16 storage within the storage's rounding).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "../engine/src/conv/fractal_kernel.hpp"
#include "../engine/src/core/bf16.hpp"
#include "../engine/src/gemm/microkernel.hpp"
#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/profiler.hpp"
#include "convlab/tensor.hpp"
#include "microkernel_test_util.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Problem;
using convlab::Tensor;
namespace dv = convlab::davinci;
using convlab::test::isas;
using convlab::test::KernelGuard;

namespace {

// The plan for desc asked for C0 c0: taken or not, and its lanes and step.
struct Plan {
    bool taken;
    dim_t t_lanes, step;
};
Plan plan(const char* desc, dim_t c0 = 16) {
    dv::TapLanes tl;
    const bool on = dv::tap_lanes(convlab::parse_descriptor(desc), c0, &tl);
    return {on, on ? tl.t_lanes : 0, on ? tl.step : 0};
}

// Problems whose forward takes taps in the lanes: kernel widths 5, 6, 7 and 9, dilation along w,
// strides 1 to 3, asymmetric padding, 1-D, 3-D, groups of 1 to 4 channels, batches of 17 and 3,
// outputs off the multiples of 16.
const char* const kProblems[] = {"mb2ic3ih23oc70oh12kh7sh2ph3",
                                 "mb1ic1ih9iw30oc17oh9ow26kh3kw5ph1",
                                 "g2mb3ic8ih11iw19oc6oh11ow8kh2kw6sw2ph1pw2",
                                 "mb17ic4ih6iw25oc5oh6ow9kh1kw9sw3pw4",
                                 "mb1ic2ih10iw33oc20oh10ow21kh3kw7dw2ph1pw3",
                                 "mb3ic3iw50oc9ow16kw7sw3pw1",
                                 "mb2ic2id4ih5iw14oc8od4oh5ow10kd2kh3kw5pd1ph1pw0",
                                 "g3mb2ic6ih9iw40oc9oh5ow19kh3kw7sh2sw2ph1pw2"};

}  // namespace

TEST_CASE("fractal forward, taps in the lanes: the plan of the virtual problem") {
    // t_lanes taps of 4 lanes a group, groups `step` apart ending on the kernel's last tap.
    CHECK(plan("mb1ic3ih224oc64oh112kh7sh2ph3").taken);
    CHECK(plan("mb1ic3ih224oc64oh112kh7sh2ph3").t_lanes == 4);
    CHECK(plan("mb1ic3ih224oc64oh112kh7sh2ph3").step == 3);
    CHECK(plan("mb1ic3ih20oc4oh16kh5").step == 1);
    CHECK(plan("mb1ic3ih20oc4oh15kh6").step == 2);
    CHECK(plan("mb1ic3ih20oc4oh12kh9").t_lanes == 3);
    CHECK(plan("mb1ic3ih20oc4oh12kh9").step == 3);
    CHECK(plan("g2mb1ic8ih20oc4oh14kh7").taken);
    // No group of taps tiles 11 without reading past the kernel; narrow kernels, 5 channels a
    // group and other C0s keep the 4-lane (or C0-lane) fractals.
    CHECK_FALSE(plan("mb1ic3ih20oc4oh10kh11").taken);
    CHECK_FALSE(plan("mb1ic3ih20oc4oh18kh3").taken);
    CHECK_FALSE(plan("mb1ic5ih20oc4oh14kh7").taken);
    CHECK_FALSE(plan("g2mb1ic10ih20oc4oh14kh7").taken);
    CHECK_FALSE(plan("mb1ic3ih20oc4oh14kh7", 8).taken);
    CHECK_FALSE(plan("mb1ic3ih20oc4oh14kh7", 4).taken);
    // The virtual problem gives the problem's outputs, with 4 lanes a tap and no pad along w.
    for (const char* desc : kProblems) {
        const Problem p = convlab::parse_descriptor(desc);
        dv::TapLanes tl;
        REQUIRE(dv::tap_lanes(p, 16, &tl));
        INFO(desc);
        for (int i = 0; i < p.ndims; ++i) CHECK(tl.v.out(i) == p.out(i));
        const int wa = p.ndims - 1;
        CHECK(tl.v.pad_begin[wa] == 0);
        CHECK(tl.groups * tl.t_lanes >= p.kernel[wa]);
        // Strided along w: the groups folded into channel blocks, 1 wide and unstrided, so
        // every fractal of consecutive outputs is read in place.
        CHECK(tl.folded == (p.stride[wa] > 1));
        if (tl.folded) {
            CHECK(tl.v.ic == 16 * tl.groups);
            CHECK(tl.v.kernel[wa] == 1);
            CHECK(tl.v.stride[wa] == 1);
            CHECK(tl.v.in[wa] == p.out(wa));
        } else {
            CHECK(tl.v.ic == 4 * tl.t_lanes);
            CHECK(tl.v.kernel[wa] == tl.groups);
        }
    }
}

TEST_CASE("fractal forward, taps in the lanes: W' holds every tap of W once, at its lane") {
    for (const char* desc : {"mb1ic3ih20oc5oh14kh7", "mb1ic2ih20oc3oh16kh5", "mb1ic4ih20oc2oh12kh9",
                             "mb1ic1id6ih6iw20oc2od4oh4ow15kd3kh3kw6", "mb1ic3ih20oc5oh10kh7sh2ph3",
                             "mb1ic2ih9iw31oc3oh9ow8kh1kw9sw3pw1"}) {
        const Problem p = convlab::parse_descriptor(desc);
        dv::TapLanes tl;
        REQUIRE(dv::tap_lanes(p, 16, &tl));
        INFO(desc);
        // W with distinct values 1, 2, ...: each must land once in W', at lane t*4 + c of group
        // j with j*step + t its tap (group j: kernel column j, or folded channel block j), and
        // nothing else is non-zero.
        std::vector<float> w(static_cast<std::size_t>(p.oc * p.ic * p.kernel_spatial()));
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(i + 1);
        const Problem& v = tl.v;
        std::vector<float> wv(static_cast<std::size_t>(v.oc * v.ic * v.kernel_spatial()), -1.0f);
        dv::tap_lanes_weights(p, tl, w.data(), wv.data());
        const int wa = p.ndims - 1;
        const dim_t kw = p.kernel[wa], kv = v.kernel[wa], outer = p.kernel_spatial() / kw;
        std::vector<int> seen(w.size(), 0);
        dim_t bad = 0;
        for (dim_t k = 0; k < v.oc; ++k)
            for (dim_t l = 0; l < v.ic; ++l)
                for (dim_t r = 0; r < outer; ++r)
                    for (dim_t j = 0; j < kv; ++j) {
                        const float x = wv[std::size_t(((k * v.ic + l) * outer + r) * kv + j)];
                        if (x == 0.0f) continue;
                        const dim_t grp = tl.folded ? l / 16 : j;
                        const dim_t t = l % 16 / 4, c = l % 4, tap = grp * tl.step + t;
                        const auto at = std::size_t(((k * p.ic + c) * outer + r) * kw + tap);
                        if (c >= p.ic || tap >= kw || x != w[at]) {
                            ++bad;
                            continue;
                        }
                        ++seen[at];
                    }
        CHECK(bad == 0);
        dim_t once = 0;
        for (int s : seen) once += s == 1;
        CHECK(once == dim_t(w.size()));
    }
}

TEST_CASE("fractal forward, taps in the lanes: equal to direct on every element") {
    KernelGuard guard;
    for (const std::string& isa : isas()) {
        REQUIRE(convlab::detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(71);
        for (const char* desc : kProblems) {
            const Problem p = convlab::parse_descriptor(desc);
            REQUIRE(dv::tap_lanes(p, 16, nullptr));
            const std::string d = std::string(desc) + " " + isa;
            // Integer data: exact in fp32 whatever the order of the sums, so every element must
            // be direct's; a bias too.
            const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
            const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
            const Tensor b = convlab::test::integer_tensor({p.oc}, rng);
            const Tensor ref = convlab::forward(p, x, w, &b, "direct");
            convlab::test::check_equal(dv::forward(p, x, w, &b, dv::Options{}), ref, d);
            // Weights prepared once (W' packed by prepare_weights): read, not packed again.
            const convlab::PreparedWeights pw =
                convlab::prepare_weights(p, convlab::Pass::Forward, w.f32());
            REQUIRE(pw.fractal(p, convlab::Pass::Forward) != nullptr);
            convlab::Profiler pr;
            convlab::test::check_equal(convlab::forward(p, x, w, &b, "fractal", &pr, &pw), ref,
                                       d + " prepared");
            CHECK(pr.seconds("pack_wei") == 0);
            CHECK(pr.seconds("fractal_gemm") > 0);
        }
    }
}

TEST_CASE("fractal forward, taps in the lanes: bf16 and fp16 storage") {
    KernelGuard guard;
    for (const std::string& isa : isas()) {
        REQUIRE(convlab::detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(72);
        for (const char* desc : {kProblems[0], kProblems[3], kProblems[6], kProblems[7]})
            for (const DType t : {DType::bf16, DType::f16}) {
                const Problem p = convlab::parse_descriptor(desc);
                const std::string d =
                    std::string(desc) + " " + isa + (t == DType::bf16 ? " bf16" : " fp16");
                const dv::Options o{16, t};
                // Small integers are exact in both storages and in their products' fp32 sums:
                // direct's results rounded to the storage.
                const Tensor xi = convlab::test::integer_tensor(p.src_dims(), rng);
                const Tensor wi = convlab::test::integer_tensor(p.wei_dims(), rng);
                Tensor ref = convlab::forward(p, xi, wi, nullptr, "direct");
                convlab::detail::round_storage(t, ref.f32(), ref.numel());
                convlab::test::check_equal(dv::forward(p, xi, wi, nullptr, o), ref, d);
                // Real data: within the storage's rounding of the inputs and the result.
                const Tensor x = convlab::test::real_tensor(p.src_dims(), rng);
                const Tensor w = convlab::test::real_tensor(p.wei_dims(), rng);
                const double len = double(p.icg() * p.kernel_spatial());
                convlab::test::check_close(dv::forward(p, x, w, nullptr, o),
                                           convlab::forward(p, x, w, nullptr, "direct"), 1e-2,
                                           1e-2 * len, d + " real");
            }
    }
}
