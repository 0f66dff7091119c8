// The narrow fractal products (engine/src/conv/fractal_narrow.cpp) against plain loops on every
// element, on every ISA, over listed rows; and backward data by fractal_via_forward, whose forward
// writes at most 4 channels per group there (ResNet-50's conv1: 3), against direct exactly on
// integer data: 1 to 4 input channels a group, strides 1 to 3, 1-D to 3-D, groups, padding,
// dilation, batch 1 and 17, C0 16 and 8.
#include <doctest/doctest.h>

#include <algorithm>
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

// Small integers: every sum of products is exact in fp32, whatever the order.
std::vector<float> ints(dim_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> d(-4, 4);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = static_cast<float>(d(rng));
    return v;
}

}  // namespace

TEST_CASE("fractal narrow: the product equals plain loops on every element, every ISA") {
    KernelGuard guard;
    std::mt19937 rng(71);
    dim_t cases = 0, vector_cases = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const dim_t c0 : {16, 8, 32, 5, 4})
            for (const dim_t kn : {1, 2, 3, 4})
                for (const dim_t rows : {0, 1, 3, 17, 64})
                    for (const bool acc : {false, true}) {
                        // A: 80 fractals, rows listed out of order and some twice; B: 70 rows.
                        const dim_t frac = 16 * c0, brows = 70, ldc = kn + 3;
                        const auto a = ints(80 * frac, rng);
                        const auto b = ints(brows * kn * c0, rng);
                        std::vector<const float*> al;
                        std::vector<dim_t> idx;
                        for (dim_t r = 0; r < rows; ++r) {
                            al.push_back(a.data() + ((r * 37 + 11) % 80) * frac);
                            idx.push_back((r * 23 + 5) % brows);
                        }
                        const auto c_in = ints(16 * ldc, rng);
                        std::vector<float> c = c_in;
                        dv::fractal_product_narrow(c0, kn, rows, al.data(), idx.data(), b.data(),
                                                   c.data(), ldc, acc);
                        dim_t bad = 0, touched = 0;
                        for (dim_t i = 0; i < 16; ++i)
                            for (dim_t j = 0; j < ldc; ++j) {
                                const auto at = static_cast<std::size_t>(i * ldc + j);
                                if (j >= kn) {
                                    touched += c[at] != c_in[at];
                                    continue;
                                }
                                float want = acc ? c_in[at] : 0.0f;
                                for (dim_t r = 0; r < rows; ++r)
                                    for (dim_t k = 0; k < c0; ++k)
                                        want +=
                                            al[static_cast<std::size_t>(r)][i * c0 + k] *
                                            b[static_cast<std::size_t>(
                                                (idx[static_cast<std::size_t>(r)] * kn + j) * c0 +
                                                k)];
                                bad += c[at] != want;
                            }
                        INFO(isa << " c0 " << c0 << " kn " << kn << " rows " << rows << " acc "
                                 << acc);
                        CHECK(bad == 0);
                        CHECK(touched == 0);
                        ++cases;
                        vector_cases += dv::fractal_narrow_vector(c0, kn);
                    }
        // The vector kernels: C0 16 and 32 under AVX-512, 8, 16 and 32 under both.
        INFO(isa);
        if (isa == "avx512" || isa == "avx2") {
            CHECK(dv::fractal_narrow_vector(16, 3));
            CHECK(dv::fractal_narrow_vector(8, 4));
            CHECK_FALSE(dv::fractal_narrow_vector(5, 3));
        } else {
            CHECK_FALSE(dv::fractal_narrow_vector(16, 3));
        }
    }
    CHECK(cases >= 200);
    if (isas().size() > 1) CHECK(vector_cases >= 120);
    CHECK_THROWS_AS(
        dv::fractal_product_narrow(16, 5, 0, nullptr, nullptr, nullptr, nullptr, 16, false),
        convlab::Error);
}

TEST_CASE("fractal narrow: rows cut to a range of positions equal plain loops, every ISA") {
    KernelGuard guard;
    std::mt19937 rng(76);
    dim_t cases = 0, vector_cases = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const dim_t c0 : {16, 32, 8})
            for (const dim_t kn : {1, 3, 4})
                for (const dim_t rows : {1, 5, 40})
                    for (const bool acc : {false, true}) {
                        // Row r holds positions [lo, hi) of the 16, read from a source of exactly
                        // hi - lo positions (a read outside would leave the buffer).
                        const dim_t brows = 50;
                        const auto b = ints(brows * kn * c0, rng);
                        std::vector<std::vector<float>> src;
                        std::vector<const float*> al;
                        std::vector<dim_t> idx, lo, hi;
                        for (dim_t r = 0; r < rows; ++r) {
                            const dim_t l = (r * 5) % 16, h = std::min<dim_t>(16, l + 1 + r % 11);
                            src.push_back(ints((h - l) * c0, rng));
                            al.push_back(src.back().data());
                            lo.push_back(l);
                            hi.push_back(h);
                            idx.push_back((r * 7 + 3) % brows);
                        }
                        const auto c_in = ints(16 * 16, rng);
                        std::vector<float> c = c_in;
                        dv::fractal_product_narrow_cut(c0, kn, rows, al.data(), lo.data(),
                                                       hi.data(), idx.data(), b.data(), c.data(),
                                                       16, acc);
                        dim_t bad = 0;
                        for (dim_t i = 0; i < 16; ++i)
                            for (dim_t j = 0; j < 16; ++j) {
                                const auto at = static_cast<std::size_t>(i * 16 + j);
                                if (j >= kn) {
                                    bad += c[at] != c_in[at];
                                    continue;
                                }
                                float want = acc ? c_in[at] : 0.0f;
                                for (dim_t r = 0; r < rows; ++r) {
                                    const auto ru = static_cast<std::size_t>(r);
                                    if (i < lo[ru] || i >= hi[ru]) continue;
                                    for (dim_t k = 0; k < c0; ++k)
                                        want += al[ru][(i - lo[ru]) * c0 + k] *
                                                b[static_cast<std::size_t>((idx[ru] * kn + j) * c0 +
                                                                           k)];
                                }
                                bad += c[at] != want;
                            }
                        INFO(isa << " c0 " << c0 << " kn " << kn << " rows " << rows << " acc "
                                 << acc);
                        CHECK(bad == 0);
                        ++cases;
                        vector_cases += dv::fractal_narrow_cuts(c0, kn);
                    }
        // Masked loads: AVX-512 only, C0 16 and 32.
        INFO(isa);
        CHECK(dv::fractal_narrow_cuts(16, 3) == (isa == "avx512"));
        CHECK_FALSE(dv::fractal_narrow_cuts(8, 3));
    }
    CHECK(cases >= 54);
    if (isas().front() == "avx512") CHECK(vector_cases >= 24);
}

TEST_CASE("fractal narrow: narrow_b makes B's columns contiguous") {
    std::mt19937 rng(72);
    for (const dim_t c0 : {16, 8, 5})
        for (const dim_t kn : {1, 3, 4}) {
            const dim_t rows = 7, b_step = 3 * 16 * c0;  // a row's fractals 3 column blocks apart
            const auto bt = ints(rows * b_step, rng);
            std::vector<float> dst(static_cast<std::size_t>(rows * kn * c0), -99.0f);
            dv::narrow_b(rows, c0, kn, bt.data(), b_step, dst.data());
            dim_t bad = 0;
            for (dim_t r = 0; r < rows; ++r)
                for (dim_t j = 0; j < kn; ++j)
                    for (dim_t k = 0; k < c0; ++k)
                        bad += dst[static_cast<std::size_t>((r * kn + j) * c0 + k)] !=
                               bt[static_cast<std::size_t>(r * b_step + k * 16 + j)];
            CHECK_MESSAGE(bad == 0, "c0 " << c0 << " kn " << kn);
        }
}

TEST_CASE("fractal narrow: backward data with at most 4 channels a group equals direct, exact") {
    KernelGuard guard;
    // conv1's shape at 56 x 56 (3 channels, 7x7, stride 2, pad 3, K 64: four C0 blocks of dY);
    // 1, 2 and 4 channels; strides 1, 2 and 3; groups of 4, 3, 2 and 1 channels; 3-D; 1-D;
    // batch 17; dilation; asymmetric padding; outputs not a multiple of 16; long lines.
    const char* descs[] = {
        "mb1ic3ih56oc64oh28kh7sh2ph3", "mb17ic1ih9oc20oh9kh3ph1", "mb1ic2ih10oc33oh4kh3sh3ph1",
        "g2mb3ic8ih9oc6oh5kh3sh2ph1", "mb2ic4id5ih5iw5oc20od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
        "mb17ic3iw30oc17ow14kw3sw2", "g3mb1ic9ih11oc12oh4kh5sh3ph2", "mb1ic4ih16oc40oh16kh3ph1",
        "mb2ic2ih12oc20kh3dh1ph2", "g4mb2ic4ih13oc8kh3sh2ph1phe0",
        "mb1ic3id7ih6iw5oc5kd2kh3kw2sd3sh2sw1pd1ph0pw1",
        // Long lines: runs of several whole fractals in one line read in
        // place (conv1's width, stride 2 and 3, stride 1 in 1-D).
        "mb1ic3ih12iw224oc64kh7kw7sh2sw2ph3pw3", "mb1ic2ih7iw150oc24kh3kw5sh1sw3ph1pw2",
        "mb2ic4iw120oc24kw5pw2"};
    std::mt19937 rng(73);
    dim_t runs = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const char* desc : descs) {
            const Problem p = convlab::parse_descriptor(desc);
            REQUIRE(p.icg() <= dv::kNarrowMax);
            const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
            Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
            // Runs of zeros in dY: fractals of zeros among the ones the products list.
            for (dim_t i = 0; i < dy.numel(); ++i)
                if (i / 200 % 3 == 1) dy.f32()[i] = 0.0f;
            const Tensor want = convlab::backward_data(p, dy, w, "direct");
            for (const dim_t c0 : {16, 8}) {
                convlab::test::check_equal(
                    dv::backward_data(p, dy, w, dv::Options{c0, DType::f32}), want,
                    std::string(desc) + " c0 " + std::to_string(c0) + " " + isa);
                ++runs;
            }
        }
    }
    CHECK(runs >= 22);
}

TEST_CASE("fractal narrow: random problems of at most 4 channels a group, forward and backward") {
    KernelGuard guard;
    std::mt19937 rng(74);
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (int t = 0; t < 24; ++t) {
            Problem p = convlab::test::random_problem(rng);
            p.mb = t % 4 == 0 ? 17 : 1 + t % 3;
            // random_problem gives at most 3 channels a group: the forward's outputs are narrow
            // too where K / G <= 4.
            const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
            const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
            const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
            const dv::Options o{t % 2 ? 8 : 16, DType::f32};
            const std::string d =
                convlab::to_descriptor(p) + " c0 " + std::to_string(o.c0) + " " + isa;
            convlab::test::check_equal(dv::backward_data(p, dy, w, o),
                                       convlab::backward_data(p, dy, w, "direct"), d + " bwd_data");
            convlab::test::check_equal(dv::forward(p, x, w, nullptr, o),
                                       convlab::forward(p, x, w, nullptr, "direct"), d + " fwd");
        }
    }
}

TEST_CASE("fractal narrow: bf16 and fp16 backward data of conv1's shape within tolerance") {
    KernelGuard guard;
    std::mt19937 rng(75);
    const Problem p = convlab::parse_descriptor("mb2ic3ih30oc40oh15kh7sh2ph3");
    const Tensor w = convlab::test::real_tensor(p.wei_dims(), rng);
    const Tensor dy = convlab::test::real_tensor(p.dst_dims(), rng);
    const Tensor want = convlab::backward_data(p, dy, w, "direct");
    const double len = double(p.ocg() * p.kernel_spatial());
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const DType st : {DType::bf16, DType::f16})
            convlab::test::check_close(dv::backward_data(p, dy, w, dv::Options{16, st}), want, 1e-2,
                                       1e-2 * len, isa + " " + convlab::dtype_name(st));
    }
}
