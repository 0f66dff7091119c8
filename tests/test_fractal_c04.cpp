// The weight gradient of groups of at most 4 input channels as FRACTAL_Z_C04 (fractal_weight.cpp):
// four taps x 4 channels in each 16-lane input fractal. Against direct on every element, in OIHW
// (fractal_via_forward) and FRACTAL_Z (padding lanes and channels included): fp32 exactly on
// small-integer data, bf16 / fp16 storage within the storage's tolerance on real data and as the
// fp32 pass on inputs rounded beforehand; on every ISA the CPU has. And which problems take it.
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

constexpr dim_t kC0 = dv::kC0;

// Channels per group 1 to 4: kernels 1x1, 3x3, 7x7 (conv1 and its stride 2, pad 3), 2x5, 3-D
// 3x3x3, 1-D; stride, dilation, padding, groups (depthwise too); tap counts that are and are not
// multiples of 4 (1, 9, 10, 27, 49, 5); batches 1, 17, 20 and 33; K off the multiples of 16.
// mb20 ... ow11: a reduction block of 1024 positions (K 64) ends 1 position into a line, before
// the first that the kernel's left taps read inside the input.
const char* const kProblems[] = {
    "mb1ic3ih23oc70oh12kh7sh2ph3",
    "mb17ic3ih15oc20oh8kh7sh2ph3",
    "mb33ic3ih20oc64oh10kh7sh2ph3",
    "mb33ic2ih9oc16oh9kh3ph1",
    "mb20ic3ih9iw21oc64oh5ow11kh7kw7sh2sw2ph3pw3",
    "mb2ic1ih8oc5oh8kh1",
    "mb17ic4ih6oc33oh3kh1sh2",
    "mb3ic4ih10iw12oc24oh9ow4kh2kw5sw2",
    "mb1ic4ih9iw11oc18oh5ow4kh2kw5sh2sw3ph1pw2dh1",
    "mb2ic3id6ih6iw6oc18od4oh4ow4kd3kh3kw3",
    "mb1ic4id5ih5iw5oc20od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
    "mb3ic2iw40oc17ow18kw5sw2dw1pw2",
    "mb17ic1iw30oc16ow28kw3",
    "g3mb17ic6ih9oc9oh9kh3ph1",
    "g2mb2ic8ih9oc36oh4kh3sh2ph1dh1",
    "g4mb2ic4ih7oc8oh7kh3ph1",
    "g2mb1ic6ih11oc40oh6kh7sh2ph3",
};

// The gradient in OIHW by fractal_via_forward (result NaN first: an element no tile reaches
// fails) and in FRACTAL_Z (NaN first as well: every lane, padding included, is written).
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
std::vector<float> fractal_z(const Problem& p, const Tensor& x, const Tensor& dy,
                             const dv::Options& o) {
    std::vector<float> fz(static_cast<std::size_t>(dv::WeiGeom::of(p.wei_dims(), o.c0).size()),
                          std::nanf(""));
    dv::backward_weight_fractal_fz(p, x.f32(), dy.f32(), fz.data(), nullptr, o);
    return fz;
}

// Every element of fz equal to the FRACTAL_Z packing of want (zeros in the padding).
void check_fz(const Problem& p, const std::vector<float>& fz, const Tensor& want,
              const std::string& what) {
    std::vector<float> ref(fz.size());
    dv::pack_weight_kernel(p.wei_dims(), kC0, want.f32(), ref.data());
    dim_t bad = 0;
    for (std::size_t i = 0; i < fz.size(); ++i) bad += !(fz[i] == ref[i]);
    INFO(what);
    CHECK(bad == 0);
}
bool has_span(const convlab::Profiler& prof, const char* name) {
    for (const auto& e : prof.entries())
        if (e.name == name && e.count > 0) return true;
    return false;
}

// The fp32 bits of t rounded to st and widened back.
Tensor rounded_to(DType st, const Tensor& t) {
    Tensor r = t;
    for (dim_t i = 0; i < r.numel(); ++i) {
        float& v = r.f32()[i];
        if (st == DType::bf16)
            v = convlab::bf16_to_float(convlab::float_to_bf16(v));
        else if (st == DType::f16)
            v = convlab::half_to_float(convlab::float_to_half(v));
    }
    return r;
}

}  // namespace

TEST_CASE("fractal c04: groups of at most 4 channels take FRACTAL_Z_C04, 5 or C0 8 do not") {
    using convlab::parse_descriptor;
    std::mt19937 rng(404);
    const struct {
        const char* desc;
        dim_t c0;
        bool c04;
    } cases[] = {
        {"mb1ic3ih23oc70oh12kh7sh2ph3", 16, true},   // conv1-like
        {"mb1ic4ih9oc16oh9kh3ph1", 16, true},        // 4 channels
        {"g2mb1ic8ih9oc16oh9kh3ph1", 16, true},      // 4 a group
        {"mb1ic1iw20oc16ow18kw3", 16, true},         // 1-D, 1 channel
        {"mb1ic5ih9oc16oh9kh3ph1", 16, false},       // 5 channels
        {"g2mb1ic10ih9oc16oh9kh3ph1", 16, false},    // 5 a group
        {"mb1ic3ih23oc70oh12kh7sh2ph3", 4, false},   // C0 4 asked for
        {"mb1ic3ih23oc70oh12kh7sh2ph3", 8, false},   // C0 8: four taps would not fill 16 lanes
        {"mb1ic3ih23oc70oh12kh7sh2ph3", 32, false},  // C0 32
    };
    for (const auto& c : cases) {
        const Problem p = parse_descriptor(c.desc);
        const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
        const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
        convlab::Profiler prof;
        const std::string d = std::string(c.desc) + " c0 " + std::to_string(c.c0);
        convlab::test::check_equal(oihw(p, x, dy, dv::Options{c.c0, DType::f32}, &prof),
                                   convlab::backward_weight(p, x, dy, "direct"), d);
        INFO(d);
        // The tiles of FRACTAL_Z_C04 reach the result through their scatter.
        CHECK(has_span(prof, "scatter") == c.c04);
        for (const char* op : {"pack_src", "tncf", "tnc", "fractal_gemm"})
            CHECK_MESSAGE(has_span(prof, op), op);
    }
}

TEST_CASE("fractal c04: the weight gradient equals direct on every element, fp32, every ISA") {
    KernelGuard guard;
    dim_t single = 0, several = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(405);
        std::vector<Problem> problems;
        for (const char* desc : kProblems) problems.push_back(convlab::parse_descriptor(desc));
        // Random problems (1-D to 3-D, groups, dilation, asymmetric padding) of at most 4
        // channels a group.
        while (problems.size() < std::size(kProblems) + 24) {
            Problem p = convlab::test::random_problem(rng);
            p.mb = 1 + static_cast<dim_t>(problems.size()) % 19;
            if (p.icg() <= 4) problems.push_back(p);
        }
        for (const Problem& p : problems) {
            const std::string d = convlab::to_descriptor(p) + " " + isa;
            const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
            const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
            const Tensor want = convlab::backward_weight(p, x, dy, "direct");
            convlab::Profiler prof;
            convlab::test::check_equal(oihw(p, x, dy, dv::Options{}, &prof), want, d + " oihw");
            CHECK_MESSAGE(has_span(prof, "scatter"), d);
            check_fz(p, fractal_z(p, x, dy, dv::Options{}), want, d + " fractal_z");
            const dim_t blocks = dv::fractal_weight_blocks(p, kC0);
            single += blocks == 1;
            several += blocks > 1;
        }
    }
    // Reductions in one block (every tile final after it) and in several (accumulated).
    CHECK(single > 0);
    CHECK(several > 0);
}

TEST_CASE("fractal c04: bf16 and fp16 storage equal direct within the storage's tolerance") {
    KernelGuard guard;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(406);
        for (const char* desc : kProblems)
            for (const DType st : {DType::bf16, DType::f16}) {
                const Problem p = convlab::parse_descriptor(desc);
                const dv::Options o{kC0, st};
                const std::string d =
                    std::string(desc) + " " + isa + " " + (st == DType::bf16 ? "bf16" : "fp16");
                // Small integers are exact in both storages and their products exact in fp32.
                {
                    const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
                    const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
                    const Tensor want = convlab::backward_weight(p, x, dy, "direct");
                    convlab::test::check_equal(oihw(p, x, dy, o), want, d + " integers");
                    check_fz(p, fractal_z(p, x, dy, o), want, d + " integers fractal_z");
                }
                const Tensor x = convlab::test::real_tensor(p.src_dims(), rng);
                const Tensor dy = convlab::test::real_tensor(p.dst_dims(), rng);
                const double len = double(p.mb * p.out_spatial());
                const Tensor got = oihw(p, x, dy, o);
                convlab::test::check_close(got, convlab::backward_weight(p, x, dy, "direct"), 1e-2,
                                           1e-2 * len, d + " real");
                // The packs round as they write: with fp32 products (fp16, or bf16 without
                // vdpbf16ps) the bits of the fp32 pass on inputs rounded beforehand.
                if (st == DType::f16 || !dv::fractal_bf16_native(16)) {
                    const Tensor xr = rounded_to(st, x), dyr = rounded_to(st, dy);
                    convlab::test::check_equal(got, oihw(p, xr, dyr, dv::Options{}),
                                               d + " against fp32 on rounded inputs");
                }
            }
    }
}
