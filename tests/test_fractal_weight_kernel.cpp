// The weight gradient's own kernels (conv/fractal_weight_kernel.*): the products that stop at the
// reduction's last valid position and the taps' tiles written to OIHW, each against plain loops
// on every element, and the weight gradient that runs on them (fractal_via_forward in OIHW and
// FRACTAL_Z) against direct: fp32 exactly on small-integer data, on every ISA the CPU has.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../engine/src/conv/fractal_kernel.hpp"
#include "../engine/src/conv/fractal_weight_kernel.hpp"
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
namespace detail = convlab::detail;

namespace {

using convlab::test::isas;
using convlab::test::KernelGuard;

constexpr dim_t kFrac = 256;

std::vector<float> integers(std::size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> d(-3, 3);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(d(rng));
    return v;
}

// The gradient in OIHW by fractal_via_forward (NaN first: an element no tile reaches fails).
Tensor oihw(const Problem& p, const Tensor& x, const Tensor& dy, const dv::Options& o,
            convlab::Profiler* prof = nullptr) {
    Tensor dw(p.wei_dims());
    std::fill(dw.f32(), dw.f32() + dw.numel(), std::nanf(""));
    convlab::ConvArgs a;
    a.src = x.f32();
    a.diff_dst = dy.f32();
    a.diff_wei = dw.f32();
    dv::backward_weight_fractal_via_forward(p, a, prof, o);
    return dw;
}

// FRACTAL_Z (NaN first) against the packing of want, padding lanes and channels included.
void check_fz(const Problem& p, const Tensor& x, const Tensor& dy, const Tensor& want, dim_t c0,
              const std::string& what) {
    const std::size_t n = static_cast<std::size_t>(dv::WeiGeom::of(p.wei_dims(), c0).size());
    std::vector<float> fz(n, std::nanf("")), ref(n);
    dv::backward_weight_fractal_fz(p, x.f32(), dy.f32(), fz.data(), nullptr,
                                   dv::Options{c0, DType::f32});
    dv::pack_weight_kernel(p.wei_dims(), c0, want.f32(), ref.data());
    dim_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += !(fz[i] == ref[i]);
    INFO(what);
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("fractal weight kernel: weight_product equals plain loops over the valid positions") {
    KernelGuard guard;
    std::mt19937 rng(901);
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        // AVX-512 reads no position past len: NaN there would reach the result. The other ISAs
        // run whole fractals, whose padding holds zeros (as the weight gradient's packs do).
        const float pad = isa == "avx512" ? std::nanf("") : 0.0f;
        for (dim_t len : {1, 2, 15, 16, 17, 31, 32, 33, 48, 49, 64, 100, 128, 129, 196, 272}) {
            for (bool two : {false, true})
                for (bool acc : {false, true}) {
                    const dim_t frac = (len + 15) / 16, a_step = kFrac + 16, b_step = kFrac + 32;
                    const dim_t b_next = two ? frac * b_step + 48 : -1, ldc = 40, c_next = 20;
                    std::vector<float> a = integers(std::size_t(frac * a_step), rng);
                    std::vector<float> b =
                        integers(std::size_t(frac * b_step + (two ? b_next : 0)), rng);
                    // Positions past len: padding.
                    for (dim_t q = len; q < frac * 16; ++q)
                        for (dim_t i = 0; i < 16; ++i) {
                            a[std::size_t((q / 16) * a_step + i * 16 + q % 16)] = pad;
                            for (dim_t t = 0; t < (two ? 2 : 1); ++t)
                                b[std::size_t((q / 16) * b_step + (q % 16) * 16 + i + t * b_next)] =
                                    pad;
                        }
                    std::vector<float> c = integers(std::size_t(16 * ldc), rng), want = c;
                    for (dim_t t = 0; t < (two ? 2 : 1); ++t)
                        for (dim_t i = 0; i < 16; ++i)
                            for (dim_t j = 0; j < 16; ++j) {
                                float s = acc ? want[std::size_t(t * c_next + i * ldc + j)] : 0.0f;
                                for (dim_t q = 0; q < len; ++q)
                                    s += a[std::size_t((q / 16) * a_step + i * 16 + q % 16)] *
                                         b[std::size_t(t * b_next + (q / 16) * b_step +
                                                       (q % 16) * 16 + j)];
                                want[std::size_t(t * c_next + i * ldc + j)] = s;
                            }
                    dv::weight_product(len, a.data(), a_step, b.data(), b_step, b_next, c.data(),
                                       c_next, ldc, acc);
                    dim_t bad = 0;
                    for (std::size_t i = 0; i < c.size(); ++i) bad += !(c[i] == want[i]);
                    INFO(isa << " len " << len << " two " << two << " acc " << acc);
                    CHECK(bad == 0);
                }
        }
    }
}

TEST_CASE("fractal weight kernel: weight_taps_to_oihw writes every run and nothing else") {
    KernelGuard guard;
    std::mt19937 rng(902);
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (dim_t c0 : {16, 8})
            for (dim_t tn : {1, 2, 9, 15, 16, 17, 25, 33})
                for (dim_t ov : {16, 5})
                    for (dim_t valid : {c0, dim_t{3}}) {
                        const dim_t taps = tn + 2, t0 = 1, o_stride = 3 * c0 * taps + 7;
                        std::vector<std::vector<float>> tiles;
                        std::vector<const float*> tp;
                        for (dim_t t = 0; t < tn; ++t)
                            tiles.push_back(integers(std::size_t(16 * c0), rng));
                        for (const auto& t : tiles) tp.push_back(t.data());
                        std::vector<float> out(std::size_t(16 * o_stride), std::nanf("")),
                            want = out;
                        for (dim_t o = 0; o < ov; ++o)
                            for (dim_t ci = 0; ci < valid; ++ci)
                                for (dim_t t = 0; t < tn; ++t)
                                    want[std::size_t(o * o_stride + ci * taps + t0 + t)] =
                                        tp[std::size_t(t)][std::size_t(o * c0 + ci)];
                        dv::weight_taps_to_oihw(tp.data(), tn, c0, ov, valid, out.data() + t0,
                                                o_stride, taps);
                        dim_t bad = 0;
                        for (std::size_t i = 0; i < out.size(); ++i)
                            bad += std::isnan(want[i]) ? !std::isnan(out[i]) : !(out[i] == want[i]);
                        INFO(isa << " c0 " << c0 << " tn " << tn << " ov " << ov << " valid "
                                 << valid);
                        CHECK(bad == 0);
                    }
    }
}

TEST_CASE("fractal weight kernel: the weight gradient equals direct on every element, fp32") {
    KernelGuard guard;
    // More than 4 channels a group (FRACTAL_Z, not _C04): outputs of 49 positions (7x7: the last
    // fractal holds one), 1x1 strided, C and K off the multiples of 16, batches 3, 5 and 17, taps
    // past 16 (5x5, 7x7), groups, 3-D, 1-D, dilation, and reductions in several blocks (C 512 x
    // 9 taps: 14 fractals a block) whose last ends inside a fractal.
    const char* const problems[] = {
        "mb1ic512ih7oc40oh7kh3ph1",
        "mb5ic512ih7oc16oh7kh3ph1",
        "mb1ic20ih7oc33oh7kh3ph1",
        "mb3ic24ih5oc20oh5kh5ph2",
        "mb1ic6ih11oc18oh6kh7sh2ph3",
        "mb17ic18ih6oc20oh6kh3ph1",
        "g2mb2ic40ih7oc36oh7kh3ph1",
        "g3mb1ic15ih7oc6oh7kh3ph1",
        "mb2ic20id5ih5iw5oc18od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
        "mb1ic64ih14oc48oh7kh1sh2",
        "mb1ic40ih7oc20oh7kh1",
        "mb2ic48ih7oc40oh7kh1",
        "mb3ic20iw30oc17ow28kw3",
        "mb1ic17ih9oc16oh5kh3dh1",
        // 1x1 at stride 1 with whole fractals per image: the input fractals read in place, a
        // block spanning images (batch 5, 16 fractals an image; 12 an image in blocks of 8).
        "mb3ic40ih8oc20oh8kh1",
        "mb5ic64ih16oc16oh16kh1",
        "mb3ic20ih12iw16oc520oh12ow16kh1kw1",
        "mb2ic24iw32oc20ow32kw1",
        "g2mb2ic40ih8oc36oh8kh1",
        // At most 4 channels a group (FRACTAL_Z_C04 at C0 16): rows of 16 / (C/G) taps, the
        // last partly filled (49 taps: 10 rows of 5 with 3 channels, 7 of 8 with 2, 4 of 16
        // with 1), lane 15 unused with 3 channels.
        "mb2ic3ih15oc20oh8kh7sh2ph3",
        "mb3ic2ih12oc17oh12kh5ph2",
        "mb2ic1ih20oc16oh7kh7sh2ph3dh1",
        "g2mb1ic6ih11oc40oh6kh7sh2ph3",
        "mb17ic3ih9oc24oh9kh3ph1",
    };
    dim_t single = 0, several = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(903);
        std::vector<Problem> ps;
        for (const char* d : problems) ps.push_back(convlab::parse_descriptor(d));
        // Random problems (1-D to 3-D, groups, stride, dilation, padding) widened to 5 to 21
        // channels a group.
        while (ps.size() < std::size(problems) + 16) {
            Problem p = convlab::test::random_problem(rng);
            const dim_t widen = 5 + static_cast<dim_t>(ps.size() % 3) * 3;
            p.ic *= widen;
            p.oc *= widen;
            p.mb = 1 + static_cast<dim_t>(ps.size()) % 5;
            if (p.validate().empty()) ps.push_back(p);
        }
        for (const Problem& p : ps) {
            const std::string d = convlab::to_descriptor(p) + " " + isa;
            const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
            const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
            const Tensor want = convlab::backward_weight(p, x, dy, "direct");
            for (dim_t c0 : {16, 8, 32}) {
                const std::string dc = d + " c0 " + std::to_string(c0);
                convlab::test::check_equal(oihw(p, x, dy, dv::Options{c0, DType::f32}), want,
                                           dc + " oihw");
                check_fz(p, x, dy, want, c0, dc + " fractal_z");
            }
            const dim_t blocks = dv::fractal_weight_blocks(p, 16);
            single += blocks == 1;
            several += blocks > 1;
        }
    }
    CHECK(single > 0);
    CHECK(several > 0);
}

TEST_CASE(
    "fractal weight kernel: 1x1 at stride 1 without padding packs its input from the source") {
    KernelGuard guard;
    const struct {
        const char* desc;
        bool from_src;
    } cases[] = {
        {"mb3ic40ih8oc20oh8kh1", true},
        {"mb3ic20ih12iw16oc520oh12ow16kh1kw1", true},  // blocks of 8 fractals across images
        {"mb2ic24iw32oc20ow32kw1", true},
        {"mb1ic40ih7oc20oh7kh1", true},  // 49 positions
        {"mb3ic20id2ih3iw5oc20od2oh3ow5kd1kh1kw1", true},
        {"g2mb2ic40ih7oc36oh7kh1", true},
        {"mb1ic40ih16oc20oh8kh1sh2", true},  // strides: every sw-th position of a line
        {"mb2ic20ih10iw11oc24oh4ow4kh1kw1sh3sw3", true},
        {"mb3ic24iw15oc20ow8kw1sw2", true},
        {"mb2ic40ih9iw9oc20oh9ow5kh1kw1sw2", true},
        {"mb2ic40ih9iw9oc20oh5ow9kh1kw1sh2", true},
        {"mb3ic20id5ih4iw6oc20od3oh2ow3kd1kh1kw1sd2sh2sw2", true},
        {"mb33ic20ih7oc520oh4kh1sh2", true},   // several blocks across lines and images
        {"mb1ic40ih14oc20oh16kh1ph1", false},  // padding
        {"mb1ic40ih8oc20oh8kh3ph1", false},    // 3x3
    };
    const auto rounded_to = [](DType st, const Tensor& t) {
        Tensor r = t;
        for (dim_t i = 0; i < r.numel(); ++i) {
            float& v = r.f32()[i];
            v = st == DType::bf16 ? convlab::bf16_to_float(convlab::float_to_bf16(v))
                                  : convlab::half_to_float(convlab::float_to_half(v));
        }
        return r;
    };
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(904);
        for (const auto& c : cases) {
            const Problem p = convlab::parse_descriptor(c.desc);
            const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
            const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
            const Tensor want = convlab::backward_weight(p, x, dy, "direct");
            for (dim_t c0 : {16, 8, 32, 5}) {
                for (DType st : {DType::f32, DType::bf16}) {
                    convlab::Profiler prof;
                    INFO(std::string(c.desc) << " " << isa << " c0 " << c0 << " "
                                             << std::string(convlab::dtype_name(st)));
                    convlab::test::check_equal(oihw(p, x, dy, dv::Options{c0, st}, &prof), want,
                                               c.desc);
                    bool pack_src = false;
                    for (const auto& e : prof.entries())
                        pack_src = pack_src || (e.name == "pack_src" && e.count > 0);
                    CHECK(pack_src == !c.from_src);
                }
                // Real data in 16-bit storage: the pack rounds as it writes, the bits of the fp32
                // pass on inputs rounded beforehand where the products are fp32 ones.
                const Tensor xr = convlab::test::real_tensor(p.src_dims(), rng);
                const Tensor dyr = convlab::test::real_tensor(p.dst_dims(), rng);
                for (DType st : {DType::f16, DType::bf16}) {
                    if (st == DType::bf16 && dv::fractal_bf16_native(16)) continue;
                    const Tensor got = oihw(p, xr, dyr, dv::Options{c0, st});
                    const Tensor ref = oihw(p, rounded_to(st, xr), rounded_to(st, dyr),
                                            dv::Options{c0, DType::f32});
                    INFO(std::string(c.desc) << " " << isa << " c0 " << c0 << " real "
                                             << std::string(convlab::dtype_name(st)));
                    CHECK(std::memcmp(got.f32(), ref.f32(),
                                      static_cast<std::size_t>(got.numel()) * sizeof(float)) == 0);
                }
            }
        }
    }
}
