// The fractal microkernel (engine/src/conv/fractal_kernel.hpp) on every ISA the CPU has,
// against plain loops on every element; the fractal forward and the weight gradient with the
// batch packed as the reduction's tail (fractal_weight.cpp) against direct on every element, on
// every ISA, over problems that span several reduction blocks, cross image boundaries inside a
// fractal, and have batches, channels and C0 off the multiples of 16.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../engine/src/conv/fractal_kernel.hpp"
#include "../engine/src/gemm/microkernel.hpp"
#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/tensor.hpp"
#include "microkernel_test_util.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Problem;
using convlab::Tensor;
namespace dv = convlab::davinci;
namespace detail = convlab::detail;

namespace {

using convlab::test::isas;
using convlab::test::KernelGuard;

// Small integers: every sum of products is exact in fp32, whatever the order or fusing.
std::vector<float> ints(std::size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> d(-4, 4);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(d(rng));
    return v;
}

}  // namespace

TEST_CASE("fractal kernel: fractal_product equals plain loops on every element, every ISA") {
    KernelGuard guard;
    std::mt19937 rng(61);
    int cases = 0, vector_cases = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const dim_t kr : {1, 3, 4, 8, 16, 32})
            for (const dim_t w : {1, 5, 8, 16, 32, 48})
                for (const dim_t rows : {0, 1, 3, 17})
                    for (const bool acc : {false, true}) {
                        const dim_t ldb = w + (kr % 2), ldc = w + 3;
                        const dim_t a_step = 16 * kr + 5, b_step = kr * ldb + 7;
                        const auto a = ints(static_cast<std::size_t>(rows * a_step + 16 * kr), rng);
                        const auto b =
                            ints(static_cast<std::size_t>(rows * b_step + kr * ldb), rng);
                        const auto c_in = ints(static_cast<std::size_t>(16 * ldc), rng);
                        std::vector<float> c = c_in;
                        dv::fractal_product(kr, w, rows, a.data(), a_step, b.data(), b_step, ldb,
                                            c.data(), ldc, acc);
                        dim_t bad = 0, touched = 0;
                        for (dim_t i = 0; i < 16; ++i)
                            for (dim_t j = 0; j < ldc; ++j) {
                                const auto at = static_cast<std::size_t>(i * ldc + j);
                                if (j >= w) {
                                    touched += c[at] != c_in[at];
                                    continue;
                                }
                                float want = acc ? c_in[at] : 0.0f;
                                for (dim_t r = 0; r < rows; ++r)
                                    for (dim_t k = 0; k < kr; ++k)
                                        want +=
                                            a[static_cast<std::size_t>(r * a_step + i * kr + k)] *
                                            b[static_cast<std::size_t>(r * b_step + k * ldb + j)];
                                bad += c[at] != want;
                            }
                        INFO(isa << " kr " << kr << " w " << w << " rows " << rows << " acc "
                                 << acc);
                        CHECK(bad == 0);
                        CHECK(touched == 0);
                        ++cases;
                        vector_cases += w % 16 == 0 && (kr == 4 || kr == 8 || kr == 16 || kr == 32);
                    }
    }
    CHECK(cases >= 288);
    CHECK(vector_cases >= 64);
}

namespace {

// Forward and both fractal backward passes against direct, exactly on integer data.
void check_all(const Problem& p, dim_t c0, std::mt19937& rng, const std::string& isa) {
    using convlab::test::integer_tensor;
    const Tensor x = integer_tensor(p.src_dims(), rng);
    const Tensor w = integer_tensor(p.wei_dims(), rng);
    const Tensor dy = integer_tensor(p.dst_dims(), rng);
    const dv::Options o{c0, DType::f32};
    const std::string d = convlab::to_descriptor(p) + " c0 " + std::to_string(c0) + " " + isa;
    convlab::test::check_equal(dv::forward(p, x, w, nullptr, o),
                               convlab::forward(p, x, w, nullptr, "direct"), d + " fwd");
    convlab::test::check_equal(dv::backward_data(p, dy, w, o),
                               convlab::backward_data(p, dy, w, "direct"), d + " bwd_data");
    const Tensor dw_ref = convlab::backward_weight(p, x, dy, "direct");
    convlab::test::check_equal(dv::backward_weight(p, x, dy, o), dw_ref, d + " bwd_weight");
}

}  // namespace

TEST_CASE(
    "fractal kernel: weight gradient with the batch as the reduction's tail equals direct, "
    "every ISA") {
    KernelGuard guard;
    std::mt19937 rng(62);
    // oc 520: 33 channel blocks, so a reduction block holds 8 fractals and these problems span
    // several blocks (N*out = 243, 9 x 9 outputs: fractals straddle images); batch 3, 5 and 17;
    // C 5 / 20 / 35 off the multiples of C0; groups with K/G off 16; 3-D; stride and dilation;
    // C 300 (forward) and K 400 (backward data): reductions of more than one row block.
    const char* descs[] = {"mb3ic5ih9oc520oh9kh3ph1",
                           "mb17ic20ih7oc33oh4kh3sh2ph1",
                           "g2mb5ic40ih9oc36oh4kh3sh2ph1dh1",
                           "mb2ic19id5ih5iw5oc40od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
                           "g3mb2ic12id4ih5iw6oc300od4oh5ow6kd1kh3kw3ph1pw1",
                           "mb5ic35iw40oc70ow18kw5sw2dw1pw2",
                           "mb1ic3ih23oc18oh12kh7sh2ph3",
                           "mb2ic300ih5oc40oh5kh3ph1",
                           "mb1ic24ih6oc400oh6kh3ph1"};
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const char* desc : descs)
            for (dim_t c0 : {16, 32, 8, 5})
                check_all(convlab::parse_descriptor(desc), c0, rng, isa);
    }
}

TEST_CASE("fractal kernel: random 1-D, 2-D and 3-D problems, every ISA, C0 16 and 32") {
    KernelGuard guard;
    std::mt19937 rng(63);
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (int t = 0; t < 40; ++t) {
            Problem p = convlab::test::random_problem(rng);
            p.mb = 1 + t % 19;  // batches up to 19: never a multiple of 16 but 16 itself
            check_all(p, t % 3 == 0 ? 32 : 16, rng, isa);
        }
    }
}

TEST_CASE("fractal kernel: the weight gradient's work memory holds no padded batch") {
    // ResNet-50 res2a_branch2b at batch 1: the buffers are the packed input, dY's fractals, one
    // block of input fractals (at most 2^20 floats) and the FRACTAL_Z result; the TNC scheme
    // held the batch padded to 16 (TNC(X): 16 x the input).
    const Problem p = convlab::parse_descriptor("mb1ic64ih56oc64oh56kh3ph1");
    const dim_t input = 64 * 56 * 56, dy = 64 * 56 * 56, fz = 36 * 4 * 16 * 16;
    const dim_t bytes = convlab::work_bytes(
        convlab::find_algorithm(convlab::Pass::BackwardWeight, "fractal_via_forward"), p, 16);
    CHECK(bytes >= dim_t{4} * (input + dy + fz));
    CHECK(bytes <= dim_t{4} * (input + dy + (dim_t{1} << 20) + fz));
}

TEST_CASE("fractal kernel: pack_weight_transposed is pack_weight with every fractal transposed") {
    std::mt19937 rng(64);
    for (const char* desc : {"mb1ic20ih5oc33oh5kh3ph1", "mb1ic5id3ih4iw4oc17od2oh2ow2kd2kh3kw3",
                             "mb1ic35iw9oc16ow5kw5", "mb1ic16ih3oc16oh3kh1"})
        for (const dim_t c0 : {16, 8, 32, 5}) {
            const Problem p = convlab::parse_descriptor(desc);
            const std::vector<dim_t> wd = p.wei_dims();
            const Tensor w = convlab::test::integer_tensor(wd, rng);
            const dim_t size = dv::WeiGeom::of(wd, c0).size();
            std::vector<float> fz(static_cast<std::size_t>(size)),
                bt(static_cast<std::size_t>(size), -7.0f);
            dv::pack_weight_kernel(wd, c0, w.f32(), fz.data());
            dv::pack_weight_transposed(wd, c0, w.f32(), bt.data());
            dim_t bad = 0;
            for (dim_t f = 0; f < size / (16 * c0); ++f)
                for (dim_t j = 0; j < 16; ++j)
                    for (dim_t k = 0; k < c0; ++k)
                        bad += bt[static_cast<std::size_t>((f * c0 + k) * 16 + j)] !=
                               fz[static_cast<std::size_t>((f * 16 + j) * c0 + k)];
            INFO(desc << " c0 " << c0);
            CHECK(bad == 0);
        }
}

namespace {

// backward_weight_fractal_via_forward, whose products write the tiles to OIHW themselves, on one
// problem: against direct on every element (integers exactly, in fp32 and bf16 storage; real
// data within fp32's or the bf16 storage's tolerance) and bit for bit against FRACTAL_Z then
// unpack on real data. The result starts as NaN, so an element no tile reaches fails both.
// Returns the reduction blocks of p.
dim_t check_oihw(const Problem& p, dim_t c0, DType storage, std::mt19937& rng,
                 const std::string& isa) {
    using convlab::test::integer_tensor;
    using convlab::test::real_tensor;
    const dv::Options o{c0, storage, convlab::Rule::Always};
    const std::vector<dim_t> wd = p.wei_dims();
    const std::string d = convlab::to_descriptor(p) + " c0 " + std::to_string(c0) +
                          (storage == DType::bf16 ? " bf16 " : " fp32 ") + isa;
    const auto oihw = [&](const Tensor& x, const Tensor& dy, convlab::Profiler* prof) {
        Tensor dw(wd);
        std::fill(dw.f32(), dw.f32() + dw.numel(), std::nanf(""));
        convlab::ConvArgs a;
        a.src = x.f32();
        a.diff_dst = dy.f32();
        a.diff_wei = dw.f32();
        dv::backward_weight_fractal_via_forward(p, a, prof, o);
        return dw;
    };
    {
        const Tensor x = integer_tensor(p.src_dims(), rng);
        const Tensor dy = integer_tensor(p.dst_dims(), rng);
        convlab::Profiler prof;
        convlab::test::check_equal(oihw(x, dy, &prof), convlab::backward_weight(p, x, dy, "direct"),
                                   d + " integers");
        CHECK_MESSAGE(prof.seconds("unpack") == 0, d);
        CHECK_MESSAGE(prof.seconds("fractal_gemm") > 0, d);
    }
    const Tensor x = real_tensor(p.src_dims(), rng);
    const Tensor dy = real_tensor(p.dst_dims(), rng);
    const Tensor got = oihw(x, dy, nullptr);
    const double len = double(p.mb * p.out_spatial()), tol = storage == DType::bf16 ? 1e-2 : 1e-5;
    convlab::test::check_close(got, convlab::backward_weight(p, x, dy, "direct"), tol, tol * len,
                               d + " real");
    std::vector<float> fz(static_cast<std::size_t>(dv::WeiGeom::of(wd, c0).size()));
    dv::backward_weight_fractal_fz(p, x.f32(), dy.f32(), fz.data(), nullptr, o);
    Tensor want(wd);
    dv::unpack_weight_kernel(wd, c0, fz.data(), want.f32());
    convlab::test::check_equal(got, want, d + " against FRACTAL_Z then unpack");
    return dv::fractal_weight_blocks(p, c0);
}

}  // namespace

TEST_CASE(
    "fractal kernel: the weight gradient's tiles written to OIHW by the products equal direct and "
    "FRACTAL_Z then unpack, every ISA") {
    KernelGuard guard;
    std::mt19937 rng(65);
    // blocks: 1 = one reduction block (every tile final when its product returns), 2 = several
    // (tiles accumulated across blocks), 0 = either, at C0 16.
    const struct {
        const char* desc;
        dim_t blocks;
    } cases[] = {
        // 1x1: whole tiles (pairs written in place), C and K off the multiples of 16 (edge
        // tiles through a buffer), several blocks (accumulated in OIHW; batch 17, not a multiple
        // of 16; 33 channel blocks), groups (each group's rows of OIHW; 16 channels, and 8 / 20).
        {"mb1ic64ih7oc48oh7kh1", 1},
        {"mb1ic100ih14oc200oh7kh1sh2", 1},
        {"mb17ic32ih12oc64oh12kh1", 2},
        {"mb3ic40ih9oc520oh9kh1", 2},
        {"g4mb2ic64ih7oc64oh7kh1", 1},
        {"g3mb40ic24ih9oc60oh9kh1", 2},
        // Taps: one block and several (batch 40, 33 channel blocks), 3-D with kd > 1 (FRACTAL_Z_3D
        // rows of a tap run not consecutive), 1-D, groups, dilation and stride.
        {"mb1ic20ih7oc33oh7kh3ph1", 1},
        {"mb40ic8ih10oc24oh10kh3ph1", 2},
        {"mb3ic5ih9oc520oh9kh3ph1", 2},
        {"mb2ic19id5ih5iw5oc40od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1", 1},
        {"mb3ic5id4ih5iw6oc520od4oh5ow6kd2kh3kw3ph1pw1", 2},
        {"mb5ic35iw40oc70ow18kw5sw2dw1pw2", 0},
        {"g2mb5ic40ih9oc36oh4kh3sh2ph1dh1", 0},
        {"g3mb2ic12id4ih5iw6oc300od4oh5ow6kd1kh3kw3ph1pw1", 0},
        {"mb1ic3ih23oc18oh12kh7sh2ph3", 1},
    };
    dim_t single = 0, several = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const auto& c : cases) {
            const Problem p = convlab::parse_descriptor(c.desc);
            // Every C0 on the first ISA; on the others the pairs of tiles (16) and one odd C0.
            for (const dim_t c0 : {16, 5, 8, 32, 1})
                for (const DType st : {DType::f32, DType::bf16}) {
                    if (isa != isas().front() && c0 != 16 && c0 != 5) continue;
                    const dim_t blocks = check_oihw(p, c0, st, rng, isa);
                    if (c0 != 16) continue;
                    INFO(std::string(c.desc));
                    if (c.blocks == 1) CHECK(blocks == 1);
                    if (c.blocks == 2) CHECK(blocks > 1);
                    single += blocks == 1;
                    several += blocks > 1;
                }
        }
        for (int t = 0; t < 30; ++t) {
            Problem p = convlab::test::random_problem(rng);
            p.mb = 1 + t % 19;
            (void)check_oihw(p, t % 3 == 0 ? 8 : 16, t % 2 ? DType::bf16 : DType::f32, rng, isa);
        }
    }
    CHECK(single > 0);
    CHECK(several > 0);
}
