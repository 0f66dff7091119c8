// The fractal algorithms' bf16 products (vdpbf16ps where the CPU has AVX512_BF16), the fp32 ->
// bf16 conversions of their packs on every path, the B operands packed from OIHW in one pass, the
// tiles' streamed writes, and the fractal layout of prepare_weights (and its argument checks):
// each against the reference on every element (fp32 and small integers exactly; real bf16 data
// within the tolerances of the emulated bf16 storage), on every ISA the CPU has.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../engine/src/conv/fractal_kernel.hpp"
#include "../engine/src/core/bf16.hpp"
#include "../engine/src/gemm/microkernel.hpp"
#include "../engine/src/maps/davinci_internal.hpp"
#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/maps.hpp"
#include "convlab/tensor.hpp"
#include "fractal_call.hpp"
#include "microkernel_test_util.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Problem;
using convlab::Tensor;
using convlab::test::fractal_call;
namespace dv = convlab::davinci;
namespace detail = convlab::detail;

namespace {

using convlab::test::isas;
using convlab::test::KernelGuard;

bool cpu_has_bf16() {
    KernelGuard guard;
    return detail::select_microkernel("avx512") && dv::fractal_bf16_native(16);
}

float bf16_round(float v) {
    return convlab::bf16_to_float(convlab::float_to_bf16(v));
}

// The kernel's flags as /proc/cpuinfo lists them (Linux), independently of the engine's cpuid:
// 1 with avx512_bf16, 0 without, -1 where there is no such file.
int cpuinfo_has_bf16() {
    std::ifstream in("/proc/cpuinfo");
    if (!in) return -1;
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("flags", 0) == 0) return line.find(" avx512_bf16") != std::string::npos;
    return -1;
}

Tensor rounded(const Tensor& t) {
    Tensor r = t;
    for (dim_t i = 0; i < r.numel(); ++i) r.f32()[i] = bf16_round(r.f32()[i]);
    return r;
}

}  // namespace

TEST_CASE("fractal bf16: the dispatch follows the CPU and CONVLAB_ISA's cap") {
    KernelGuard guard;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        const bool native = dv::fractal_bf16_native(16);
        INFO(isa);
        // Only under AVX-512 and only with AVX512_BF16; never for an odd or unsupported kr.
        if (isa != "avx512") CHECK_FALSE(native);
        if (isa == "avx512" && cpuinfo_has_bf16() >= 0) CHECK(native == (cpuinfo_has_bf16() == 1));
        CHECK_FALSE(dv::fractal_bf16_native(5));
        CHECK_FALSE(dv::fractal_bf16_native(6));
        CHECK(std::string(dv::fractal_bf16_isa(16)) == (native ? "avx512_bf16" : isa));
        // The pairs' rule: never with Never or without the instruction, always with Always, and
        // with Auto where the instruction's measured rate makes 1.25x the fp32 multiply-adds.
        const double rate = dv::fractal_bf16_rate();
        CHECK((rate > 0) == native);
        CHECK_FALSE(dv::fractal_bf16_pairs(16, convlab::Rule::Never));
        CHECK(dv::fractal_bf16_pairs(16, convlab::Rule::Always) == native);
        CHECK(dv::fractal_bf16_pairs(16, convlab::Rule::Auto) == (native && rate >= 0.625));
        CHECK_FALSE(dv::fractal_bf16_pairs(5, convlab::Rule::Always));
        double public_rate = -1;
        CHECK(dv::bf16_pairs(convlab::Rule::Auto, &public_rate) ==
              dv::fractal_bf16_pairs(16, convlab::Rule::Auto));
        CHECK(public_rate == rate);
        if (!native) {
            std::uint16_t a[16 * 16] = {}, b[16 * 16] = {};
            float c[16 * 16] = {};
            CHECK_THROWS_AS(dv::fractal_product_bf16(16, 1, a, 0, b, 0, c, 16, false),
                            convlab::Error);
        }
    }
}

namespace {

// Whether the engine holds its x86 kernels (a CONVLAB_PORTABLE build holds none; the tests are
// compiled without that define, so they ask the engine).
bool built_with_x86() {
    const std::vector<std::string> v = isas();
    return std::find(v.begin(), v.end(), "avx2") != v.end() ||
           std::find(v.begin(), v.end(), "avx512") != v.end();
}

const detail::Bf16Path kPaths[] = {detail::Bf16Path::portable, detail::Bf16Path::avx2,
                                   detail::Bf16Path::avx512, detail::Bf16Path::avx512_bf16};

// fp32 bit patterns that reach every branch of the rounding: each upper half (every sign and
// exponent: zeros, denormals, normals, infinities, NaNs of every upper payload) with lower halves
// below, at and above the tie and at both ends; then random patterns, whose runs of 32 mix
// denormals (1 in 256) with other values.
std::vector<float> bf16_cases() {
    std::vector<float> v;
    const std::uint32_t lows[] = {0x0000, 0x0001, 0x4000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff};
    for (std::uint32_t hi = 0; hi < 0x10000; ++hi)
        for (const std::uint32_t lo : lows) v.push_back(std::bit_cast<float>(hi << 16 | lo));
    std::mt19937 rng(617);
    for (int i = 0; i < 200000; ++i)
        v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
    return v;
}

// f(i, m) over [0, n) cut into pieces of 1, 2, ..., 70, 1, 2, ... elements: every tail length
// and start alignment of the vector loops.
template <class F>
void for_pieces(dim_t n, const F& f) {
    for (dim_t i = 0, len = 1; i < n; i += len, len = len % 70 + 1) f(i, std::min(len, n - i));
}

// body(path) on every conversion path that runs on this CPU; on the others round(path) (a
// conversion of that path) must throw. Returns the paths run.
template <class Round, class Body>
int on_running_paths(const Round& round, const Body& body) {
    int paths = 0;
    for (const detail::Bf16Path path : kPaths) {
        INFO(detail::bf16_path_name(path));
        if (!detail::bf16_path_runs(path)) {
            CHECK_THROWS_AS(round(path), convlab::Error);
            continue;
        }
        ++paths;
        body(path);
    }
    return paths;
}

}  // namespace

TEST_CASE("fractal bf16: the conversions' path follows the CPU and CONVLAB_ISA's cap") {
    KernelGuard guard;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        INFO(isa);
        detail::Bf16Path want = detail::Bf16Path::portable;
        if (isa == "avx2") want = detail::Bf16Path::avx2;
        if (isa == "avx512")
            want =
                cpuinfo_has_bf16() == 1 ? detail::Bf16Path::avx512_bf16 : detail::Bf16Path::avx512;
        if (isa != "avx512" || cpuinfo_has_bf16() >= 0) CHECK(detail::bf16_path() == want);
        CHECK(detail::bf16_path_runs(detail::bf16_path()));
    }
    // The native path is tested where the CPU has it and the engine was built with its x86
    // kernels (a portable build runs the portable path alone on any CPU).
    if (cpuinfo_has_bf16() >= 0)
        CHECK(detail::bf16_path_runs(detail::Bf16Path::avx512_bf16) ==
              (built_with_x86() && cpuinfo_has_bf16() == 1));
    if (!built_with_x86())
        for (const detail::Bf16Path path : kPaths)
            CHECK(detail::bf16_path_runs(path) == (path == detail::Bf16Path::portable));
}

TEST_CASE("fractal bf16: the vector conversions equal float_to_bf16 on every element, every path") {
    const std::vector<float> in = bf16_cases();
    const auto n = static_cast<dim_t>(in.size());
    std::vector<std::uint16_t> want16(in.size());
    std::vector<std::uint32_t> want32(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        want16[i] = convlab::float_to_bf16(in[i]);
        want32[i] = std::bit_cast<std::uint32_t>(convlab::bf16_to_float(want16[i]));
    }
    std::vector<float> one(1);
    const int paths = on_running_paths(
        [&](detail::Bf16Path path) { detail::round_bf16(in.data(), one.data(), 1, path); },
        [&](detail::Bf16Path path) {
            // Whole (round_bf16 split between threads), then in pieces.
            std::vector<std::uint16_t> b16(in.size(), 0x5555);
            std::vector<float> r(in.size()), inplace = in;
            detail::to_bf16(in.data(), b16.data(), n, path);
            detail::round_bf16(in.data(), r.data(), n, path);
            dim_t bad16 = 0, bad32 = 0;
            for (std::size_t i = 0; i < in.size(); ++i) {
                bad16 += b16[i] != want16[i];
                bad32 += std::bit_cast<std::uint32_t>(r[i]) != want32[i];
            }
            std::fill(b16.begin(), b16.end(), 0x5555);
            for_pieces(n, [&](dim_t i, dim_t m) {
                detail::to_bf16(in.data() + i, b16.data() + i, m, path);
                detail::round_bf16(inplace.data() + i, inplace.data() + i, m, path);
            });
            for (std::size_t i = 0; i < in.size(); ++i) {
                bad16 += b16[i] != want16[i];
                bad32 += std::bit_cast<std::uint32_t>(inplace[i]) != want32[i];
            }
            CHECK(bad16 == 0);
            CHECK(bad32 == 0);
        });
    CHECK(paths >= 1);
    if (built_with_x86() && cpuinfo_has_bf16() == 1) CHECK(paths == 4);
    if (!built_with_x86()) CHECK(paths == 1);  // portable: the element-by-element path alone
}

TEST_CASE("fractal fp16: the vector round trip equals float_to_half on every element, every path") {
    // bf16_cases, and for every pair of neighbouring finite fp16 values their midpoint (a tie,
    // exact in fp32) and the floats on either side of it, subnormals and the overflow to
    // infinity at 65520 included.
    std::vector<float> in = bf16_cases();
    for (std::uint32_t h = 0; h < 0x7c00; ++h)
        for (const std::uint32_t sign : {0u, 0x8000u}) {
            const float f = convlab::half_to_float(static_cast<std::uint16_t>(h | sign));
            const float g =
                h == 0x7bff ? std::copysign(65536.0f, f)
                            : convlab::half_to_float(static_cast<std::uint16_t>((h + 1) | sign));
            const float mid = (f + g) / 2;
            in.insert(in.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 2 * g)});
        }
    const auto n = static_cast<dim_t>(in.size());
    std::vector<float> one(1);
    const int paths = on_running_paths(
        [&](detail::Bf16Path path) { detail::round_f16(in.data(), one.data(), 1, path); },
        [&](detail::Bf16Path path) {
            // Whole (split between threads), then in place in pieces.
            std::vector<float> whole(in.size()), inplace = in;
            detail::round_f16(in.data(), whole.data(), n, path);
            for_pieces(n, [&](dim_t i, dim_t m) {
                detail::round_f16(inplace.data() + i, inplace.data() + i, m, path);
            });
            dim_t bad = 0;
            for (std::size_t i = 0; i < in.size(); ++i) {
                const auto want = std::bit_cast<std::uint32_t>(
                    convlab::half_to_float(convlab::float_to_half(in[i])));
                bad += std::bit_cast<std::uint32_t>(whole[i]) != want;
                bad += std::bit_cast<std::uint32_t>(inplace[i]) != want;
            }
            CHECK(bad == 0);
        });
    CHECK(paths >= 1);
}

namespace {

// The fp32 bits of v rounded to storage type t and widened back, element by element (the scalar
// rules float_to_bf16 / float_to_half).
std::uint32_t storage_bits(DType t, float v) {
    if (t == DType::bf16) return std::uint32_t{convlab::float_to_bf16(v)} << 16;
    if (t == DType::f16) v = convlab::half_to_float(convlab::float_to_half(v));
    return std::bit_cast<std::uint32_t>(v);
}

const DType kStorages[] = {DType::f32, DType::f16, DType::bf16};

}  // namespace

TEST_CASE(
    "fractal storage: the rounding copy equals the scalar rules on every element, every ISA") {
    KernelGuard guard;
    const std::vector<float> in = bf16_cases();
    const auto n = static_cast<dim_t>(in.size());
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const DType t : kStorages) {
            INFO(isa << " " << convlab::dtype_name(t));
            const detail::StorageCopy copy = detail::storage_copy(t);
            // Whole, then in pieces of 1 to 70 elements (every tail and start alignment).
            std::vector<float> whole(in.size(), 7.0f), pieces(in.size(), 7.0f);
            copy(in.data(), whole.data(), n);
            for_pieces(n, [&](dim_t i, dim_t m) { copy(in.data() + i, pieces.data() + i, m); });
            dim_t bad = 0;
            for (std::size_t i = 0; i < in.size(); ++i) {
                const std::uint32_t want = storage_bits(t, in[i]);
                bad += std::bit_cast<std::uint32_t>(whole[i]) != want;
                bad += std::bit_cast<std::uint32_t>(pieces[i]) != want;
            }
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("fractal storage: the rounding pack equals pack then round_storage on every element") {
    KernelGuard guard;
    std::mt19937 rng(619);
    const auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    // Bit patterns of every kind: the rounding's special cases (NaN, infinities, denormals,
    // ties, the largest finite values), zeros of both signs and random patterns.
    const std::vector<float> cases = bf16_cases();
    const auto value = [&] {
        return cases[static_cast<std::size_t>(pick(0, static_cast<dim_t>(cases.size()) - 1))];
    };
    dim_t checked = 0;
    for (int t = 0; t < 40; ++t) {
        // 4-D and 5-D activations, C off the multiples of C0, odd sizes, a channel slice of a
        // wider tensor (a group's), and sizes above the pack's threshold of parallel work.
        const bool big = t % 8 == 7;
        std::vector<dim_t> dims{pick(1, 3), pick(1, big ? 70 : 37)};
        if (t % 3 == 2) dims.push_back(pick(1, 5));
        dims.push_back(pick(1, big ? 40 : 13));
        dims.push_back(pick(1, big ? 40 : 13));
        const dim_t c0 = std::array<dim_t, 5>{16, 8, 4, 5, 32}[static_cast<std::size_t>(t % 5)];
        const dim_t extra = pick(0, 2), c_begin = pick(0, extra), ct = dims[1] + extra;
        std::vector<dim_t> wide = dims;
        wide[1] = ct;
        std::vector<float> x(static_cast<std::size_t>(
            std::accumulate(wide.begin(), wide.end(), dim_t{1}, std::multiplies<>())));
        for (float& v : x) v = value();
        const auto size = static_cast<std::size_t>(dv::ActGeom::of(dims, c0).size());
        for (const std::string& isa : isas()) {
            REQUIRE(detail::select_microkernel(isa.c_str()));
            for (const DType st : kStorages) {
                INFO("dims " << dims.size() << "-D C " << dims[1] << " c0 " << c0 << " " << isa
                             << " " << convlab::dtype_name(st));
                std::vector<float> want(size, 7.0f), got(size, 7.0f);
                dv::pack_activation_kernel(dims, c0, x.data(), want.data(), ct, c_begin);
                detail::round_storage(st, want.data(), static_cast<dim_t>(size));
                dv::internal::pack_activation_rounded(st, dims, c0, x.data(), got.data(), ct,
                                                      c_begin);
                CHECK(std::memcmp(got.data(), want.data(), size * sizeof(float)) == 0);
                ++checked;
            }
        }
    }
    CHECK(checked >= 40 * 3);
}

namespace {

// Data whose rounding matters: reals in [-1, 1), with one element in 8 a tie of bf16 (lower half
// 0x8000) and one in 16 a denormal.
Tensor rounding_tensor(std::vector<dim_t> dims, std::mt19937& rng) {
    Tensor t = convlab::test::real_tensor(std::move(dims), rng);
    float* p = t.f32();
    for (dim_t i = 0; i < t.numel(); ++i) {
        const std::uint32_t r = static_cast<std::uint32_t>(rng());
        if (r % 8 == 0)
            p[i] = std::bit_cast<float>((std::bit_cast<std::uint32_t>(p[i]) & ~0xffffu) | 0x8000u);
        if (r % 16 == 1) p[i] = std::bit_cast<float>((r >> 9) | (r & 0x80000000u));
    }
    return t;
}

Tensor rounded_to(DType st, const Tensor& t) {
    Tensor r = t;
    for (dim_t i = 0; i < r.numel(); ++i)
        r.f32()[i] = std::bit_cast<float>(storage_bits(st, r.f32()[i]));
    return r;
}

}  // namespace

// The packs round as they write (the activations of the forward and the weight gradient, dY of
// both backward passes and the weight gradient's dY fractals): with the products in fp32 (fp16
// storage, or bf16 without vdpbf16ps), a pass in 16-bit storage gives the bits of the fp32 pass
// on the inputs rounded beforehand (its output rounded too, but the weight gradient's).
TEST_CASE("fractal storage: fp16 / bf16 passes equal fp32 passes on inputs rounded beforehand") {
    KernelGuard guard;
    std::mt19937 rng(621);
    std::vector<Problem> problems;
    for (const char* desc : {"mb2ic20ih9oc33oh5kh3sh2ph1", "g2mb3ic40ih9oc36oh4kh3sh2ph1dh1",
                             "mb3ic19id5ih5iw5oc20od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
                             "mb2ic5iw40oc7ow18kw5sw2dw1pw2", "mb2ic6ih7oc5oh4kh1sh2"})
        problems.push_back(convlab::parse_descriptor(desc));
    for (int t = 0; t < 12; ++t) problems.push_back(convlab::test::random_problem(rng));
    dim_t runs = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const DType st : {DType::f16, DType::bf16}) {
            // vdpbf16ps sums pairs in its own order: only the fp32 products are comparable, which
            // bf16_pairs Never keeps.
            for (const Problem& p : problems)
                for (const dim_t c0 : {16, 8, 5}) {
                    INFO(convlab::to_descriptor(p)
                         << " c0 " << c0 << " " << isa << " " << convlab::dtype_name(st));
                    const Tensor x = rounding_tensor(p.src_dims(), rng);
                    const Tensor w = rounding_tensor(p.wei_dims(), rng);
                    const Tensor dy = rounding_tensor(p.dst_dims(), rng);
                    const Tensor xr = rounded_to(st, x), wr = rounded_to(st, w),
                                 dyr = rounded_to(st, dy);
                    const dv::Options o{c0, st, convlab::Rule::Never}, f32{c0, DType::f32};
                    const auto same = [](const Tensor& a, const Tensor& b) {
                        return a.dims() == b.dims() &&
                               std::memcmp(a.f32(), b.f32(),
                                           static_cast<std::size_t>(a.numel()) * sizeof(float)) ==
                                   0;
                    };
                    CHECK(same(dv::forward(p, x, w, nullptr, o),
                               rounded_to(st, dv::forward(p, xr, wr, nullptr, f32))));
                    CHECK(same(dv::backward_data(p, dy, w, o),
                               rounded_to(st, dv::backward_data(p, dyr, wr, f32))));
                    CHECK(same(dv::backward_weight(p, x, dy, o),
                               dv::backward_weight(p, xr, dyr, f32)));
                    ++runs;
                }
        }
    }
    CHECK(runs >= static_cast<dim_t>(problems.size()) * 3);
}

TEST_CASE("fractal bf16: bf16_bits gives the upper half of every value rounded to bf16") {
    KernelGuard guard;
    std::vector<float> v;
    std::vector<std::uint16_t> want;
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        v.push_back(bf16_round(std::bit_cast<float>(b << 16)));
        want.push_back(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v.back()) >> 16));
    }
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        INFO(isa);
        std::vector<std::uint16_t> got(v.size());
        dv::bf16_bits(v.data(), got.data(), static_cast<dim_t>(v.size()));
        CHECK(got == want);
    }
}

TEST_CASE("fractal write: a tile's columns stored as rows and rounded, on every ISA") {
    KernelGuard guard;
    std::mt19937 rng(43);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    // Values at the roundings' edges among the random ones: NaN with a payload, infinities, fp16
    // overflow and subnormals, bf16 ties (odd and even), a float subnormal, signed zero.
    const float edge[] = {std::bit_cast<float>(0x7fa00001u),
                          -INFINITY,
                          INFINITY,
                          70000.0f,
                          -65520.0f,
                          3.0e-6f,
                          6.0e-8f,
                          std::bit_cast<float>(0x3f808000u),
                          std::bit_cast<float>(0x3f818000u),
                          1.0e-40f,
                          -0.0f};
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        // Streamed (non-temporal stores where a row fills a line: rows 32 floats apart from a
        // line's start, not 21) or stored.
        for (const auto& [stride, stream] :
             {std::pair<dim_t, bool>{21, false}, {32, true}, {21, true}})
            for (const DType storage : {DType::f32, DType::bf16, DType::f16})
                for (const dim_t cols : {16, 1, 3, 15})
                    for (const bool with_bias : {false, true}) {
                        std::vector<float> acc(256), bias(16),
                            room(static_cast<std::size_t>(16 * stride + 16), 7.0f);
                        // The rows from a line's start.
                        float* out = room.data() +
                                     (64 - reinterpret_cast<std::uintptr_t>(room.data()) % 64) %
                                         64 / sizeof(float);
                        for (float& v : acc) v = u(rng);
                        for (std::size_t e = 0; e < std::size(edge); ++e)
                            acc[e * 23 % 256] = edge[e];
                        for (float& v : bias) v = u(rng);
                        dv::fractal_write_columns(acc.data(), cols,
                                                  with_bias ? bias.data() : nullptr, storage, out,
                                                  stride, stream);
                        detail::stream_fence();
                        dim_t bad = 0;
                        for (dim_t j = 0; j < 16; ++j)
                            for (dim_t i = 0; i < stride; ++i) {
                                float want = 7.0f;
                                if (j < cols && i < 16) {
                                    // No bias: the value as it is (-0 stays -0, a signalling
                                    // NaN is not quieted by an add).
                                    want = acc[static_cast<std::size_t>(i * 16 + j)];
                                    if (with_bias) want += bias[static_cast<std::size_t>(j)];
                                    detail::round_storage(storage, &want, 1);
                                }
                                // Bits: NaNs included.
                                bad += std::bit_cast<std::uint32_t>(out[j * stride + i]) !=
                                       std::bit_cast<std::uint32_t>(want);
                            }
                        CHECK_MESSAGE(bad == 0, isa << " storage " << int(storage) << " cols "
                                                    << cols << " bias " << with_bias << " stride "
                                                    << stride << " stream " << stream);
                    }
    }
}

TEST_CASE("fractal product: listed rows give the bits of the strided call over those rows") {
    KernelGuard guard;
    std::mt19937 rng(41);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const dim_t kr : {4, 8, 16, 32, 5}) {
            const dim_t frac = 16 * kr, rows = 37, b_step = 3 * frac;  // B: 3 column blocks a row
            std::vector<float> a_all(static_cast<std::size_t>(rows * frac)),
                b(static_cast<std::size_t>(rows * b_step));
            for (float& v : a_all) v = u(rng);
            for (float& v : b) v = u(rng);
            // Every third row listed, A fractals in reverse order in memory.
            std::vector<const float*> al;
            std::vector<dim_t> idx;
            std::vector<float> a_cat, b_cat;  // the listed rows' A and B, contiguous
            for (dim_t r = 0; r < rows; r += 3) {
                al.push_back(a_all.data() + (rows - 1 - r) * frac);
                idx.push_back(r);
                a_cat.insert(a_cat.end(), al.back(), al.back() + frac);
                b_cat.insert(b_cat.end(), b.begin() + r * b_step, b.begin() + (r + 1) * b_step);
            }
            const auto n = static_cast<dim_t>(idx.size());
            for (const bool acc : {false, true}) {
                std::vector<float> want(512, 0.5f), got(512, 0.5f);
                dv::fractal_product2(kr, n, a_cat.data(), frac, b_cat.data() + frac, b_step, frac,
                                     want.data(), 256, acc);
                dv::fractal_product2_list(kr, n, al.data(), idx.data(), b.data() + frac, b_step,
                                          frac, got.data(), 256, acc);
                CHECK_MESSAGE(want == got, isa << " kr " << kr << " pair");
                std::vector<float> want1(256, 0.25f), got1(256, 0.25f);
                dv::fractal_product(kr, 16, n, a_cat.data(), frac, b_cat.data(), b_step, 16,
                                    want1.data(), 16, acc);
                dv::fractal_product_list(kr, n, al.data(), idx.data(), b.data(), b_step,
                                         got1.data(), acc);
                CHECK_MESSAGE(want1 == got1, isa << " kr " << kr);
            }
        }
    }
}

TEST_CASE("fractal bf16: fractal_product_bf16 equals plain fp32 loops on every element") {
    if (!cpu_has_bf16()) {
        MESSAGE("no AVX512_BF16 on this CPU: the bf16 products are not run");
        return;
    }
    KernelGuard guard;
    REQUIRE(detail::select_microkernel("avx512"));
    std::mt19937 rng(611);
    int cases = 0;
    for (const dim_t kr : {4, 8, 16, 32})
        for (const dim_t rows : {0, 1, 3, 17})
            for (const bool acc : {false, true})
                for (const bool integers : {true, false}) {
                    const dim_t a_step = 16 * kr + 6, b_step = 16 * kr + 10, ldc = 19;
                    std::uniform_int_distribution<int> di(-4, 4);
                    std::uniform_real_distribution<float> dr(-1.0f, 1.0f);
                    const auto value = [&] {
                        return integers ? static_cast<float>(di(rng)) : bf16_round(dr(rng));
                    };
                    // A and B as fp32 (row-major 16 x kr; kr x 16) and their bf16 forms.
                    std::vector<float> af(static_cast<std::size_t>((rows + 1) * a_step)),
                        bf(static_cast<std::size_t>((rows + 1) * kr * 16));
                    std::vector<std::uint16_t> a16(af.size()),
                        b16(static_cast<std::size_t>((rows + 1) * b_step));
                    for (std::size_t i = 0; i < af.size(); ++i) af[i] = value();
                    for (std::size_t i = 0; i < bf.size(); ++i) bf[i] = value();
                    dv::bf16_bits(af.data(), a16.data(), static_cast<dim_t>(af.size()));
                    for (dim_t r = 0; r <= rows; ++r)
                        for (dim_t k = 0; k < kr; ++k)
                            for (dim_t j = 0; j < 16; ++j)
                                b16[static_cast<std::size_t>(r * b_step + (k / 2) * 32 + 2 * j +
                                                             k % 2)] =
                                    convlab::float_to_bf16(
                                        bf[static_cast<std::size_t>((r * kr + k) * 16 + j)]);
                    std::vector<float> c_in(16 * ldc);
                    for (float& v : c_in) v = value();
                    std::vector<float> c = c_in;
                    dv::fractal_product_bf16(kr, rows, a16.data(), a_step, b16.data(), b_step,
                                             c.data(), ldc, acc);
                    dim_t bad = 0, touched = 0;
                    double worst = 0;
                    for (dim_t i = 0; i < 16; ++i)
                        for (dim_t j = 0; j < ldc; ++j) {
                            const auto at = static_cast<std::size_t>(i * ldc + j);
                            if (j >= 16) {
                                touched += c[at] != c_in[at];
                                continue;
                            }
                            double want = acc ? c_in[at] : 0.0, mag = std::abs(want);
                            for (dim_t r = 0; r < rows; ++r)
                                for (dim_t k = 0; k < kr; ++k) {
                                    const double t =
                                        double(
                                            af[static_cast<std::size_t>(r * a_step + i * kr + k)]) *
                                        double(bf[static_cast<std::size_t>((r * kr + k) * 16 + j)]);
                                    want += t;
                                    mag += std::abs(t);
                                }
                            if (integers)
                                bad += double(c[at]) != want;
                            else
                                worst =
                                    std::max(worst, std::abs(double(c[at]) - want) / (mag + 1e-30));
                        }
                    INFO("kr " << kr << " rows " << rows << " acc " << acc << " integers "
                               << integers);
                    CHECK(bad == 0);
                    CHECK(touched == 0);
                    // fp32 accumulation of exact products: far below 1e-4 of the terms' magnitude.
                    CHECK(worst < 1e-4);
                    ++cases;
                }
    CHECK(cases == 64);
}

TEST_CASE("fractal bf16: B packed from OIHW in one pass equals pack, FlipRot and transpose") {
    std::mt19937 rng(612);
    for (const char* desc :
         {"mb1ic20ih5oc33oh5kh3ph1", "mb1ic5id3ih4iw4oc17od2oh2ow2kd2kh3kw3",
          "mb1ic35iw9oc16ow5kw5", "g2mb3ic40ih9oc36oh4kh3sh2ph1dh1", "mb1ic16ih3oc40oh3kh1"})
        for (const dim_t c0 : {16, 8, 32, 4}) {
            const Problem p = convlab::parse_descriptor(desc);
            Problem p1 = p;
            p1.ic = p.icg();
            p1.oc = p.ocg();
            p1.groups = 1;
            const std::vector<dim_t> wd = p1.wei_dims();
            const Tensor w = convlab::test::real_tensor(wd, rng);
            const dim_t frac = 16 * c0;
            INFO(desc << " c0 " << c0);
            // Forward: pack_weight_pairs = pack_weight_transposed in bf16 pairs.
            const dim_t size = dv::WeiGeom::of(wd, c0).size();
            std::vector<float> bt(static_cast<std::size_t>(size));
            std::vector<std::uint16_t> pairs(static_cast<std::size_t>(size), 0x7fff);
            dv::pack_weight_transposed(wd, c0, w.f32(), bt.data());
            dv::pack_weight_pairs(wd, c0, w.f32(), pairs.data());
            dim_t bad = 0;
            for (dim_t f = 0; f < size / frac; ++f)
                for (dim_t k = 0; k < c0; ++k)
                    for (dim_t j = 0; j < 16; ++j)
                        bad += pairs[static_cast<std::size_t>(f * frac + (k / 2) * 32 + 2 * j +
                                                              k % 2)] !=
                               convlab::float_to_bf16(
                                   bt[static_cast<std::size_t>(f * frac + k * 16 + j)]);
            CHECK(bad == 0);
            // Backward data: pack_weight_fliprot_transposed = fliprot_fz_kernel of the group's
            // FRACTAL_Z with every fractal transposed, and its pairs.
            const std::vector<dim_t> fd = convlab::maps::backward_data_as_forward(p1).wei_dims();
            const dim_t fsize = dv::WeiGeom::of(fd, c0).size();
            std::vector<float> fz(static_cast<std::size_t>(size)),
                flipped(static_cast<std::size_t>(fsize)), got(static_cast<std::size_t>(fsize));
            std::vector<std::uint16_t> fpairs(static_cast<std::size_t>(fsize), 0x7fff);
            dv::pack_weight_kernel(wd, c0, w.f32(), fz.data());
            dv::fliprot_fz_kernel(p1, c0, fz.data(), flipped.data());
            dv::pack_weight_fliprot_transposed(p1, c0, w.f32(), got.data());
            dv::pack_weight_fliprot_pairs(p1, c0, w.f32(), fpairs.data());
            dim_t bad_t = 0, bad_p = 0;
            for (dim_t f = 0; f < fsize / frac; ++f)
                for (dim_t j = 0; j < 16; ++j)
                    for (dim_t k = 0; k < c0; ++k) {
                        const float want = flipped[static_cast<std::size_t>(f * frac + j * c0 + k)];
                        bad_t += got[static_cast<std::size_t>(f * frac + k * 16 + j)] != want;
                        bad_p +=
                            fpairs[static_cast<std::size_t>(f * frac + (k / 2) * 32 + 2 * j +
                                                            k % 2)] != convlab::float_to_bf16(want);
                    }
            CHECK(bad_t == 0);
            CHECK(bad_p == 0);
        }
    std::vector<std::uint16_t> none(16 * 5 * 9);
    const std::vector<dim_t> odd{3, 5, 3, 3};
    CHECK_THROWS_AS(dv::pack_weight_pairs(odd, 5, nullptr, none.data()), convlab::Error);
}

namespace {

// The three fractal passes with bf16 storage against direct: exact on small integers (their
// products and sums are exact in bf16 x bf16 -> fp32), within the emulated storage's tolerance on
// real data; returns the forward's result on real data (to compare ISAs).
Tensor check_bf16(const Problem& p, dim_t c0, std::mt19937& rng, const std::string& isa) {
    using convlab::test::integer_tensor;
    using convlab::test::real_tensor;
    // The pairs wherever the CPU has them (the caller compares them with the emulation).
    const dv::Options o{c0, DType::bf16, convlab::Rule::Always};
    const std::string d = convlab::to_descriptor(p) + " c0 " + std::to_string(c0) + " " + isa;
    {
        const Tensor x = integer_tensor(p.src_dims(), rng);
        const Tensor w = integer_tensor(p.wei_dims(), rng);
        const Tensor dy = integer_tensor(p.dst_dims(), rng);
        convlab::test::check_equal(dv::forward(p, x, w, nullptr, o),
                                   rounded(convlab::forward(p, x, w, nullptr, "direct")),
                                   d + " fwd");
        convlab::test::check_equal(dv::backward_data(p, dy, w, o),
                                   rounded(convlab::backward_data(p, dy, w, "direct")),
                                   d + " bwd_data");
        convlab::test::check_equal(dv::backward_weight(p, x, dy, o),
                                   convlab::backward_weight(p, x, dy, "direct"), d + " bwd_weight");
    }
    const Tensor x = real_tensor(p.src_dims(), rng);
    const Tensor w = real_tensor(p.wei_dims(), rng);
    const Tensor dy = real_tensor(p.dst_dims(), rng);
    const double len_f = double(p.icg() * p.kernel_spatial()),
                 len_d = double(p.ocg() * p.kernel_spatial()),
                 len_w = double(p.mb * p.out_spatial());
    Tensor y = dv::forward(p, x, w, nullptr, o);
    convlab::test::check_close(y, convlab::forward(p, x, w, nullptr, "direct"), 1e-2, 1e-2 * len_f,
                               d + " fwd real");
    convlab::test::check_close(dv::backward_data(p, dy, w, o),
                               convlab::backward_data(p, dy, w, "direct"), 1e-2, 1e-2 * len_d,
                               d + " bwd_data real");
    convlab::test::check_close(dv::backward_weight(p, x, dy, o),
                               convlab::backward_weight(p, x, dy, "direct"), 1e-2, 1e-2 * len_w,
                               d + " bwd_weight real");
    return y;
}

}  // namespace

TEST_CASE("fractal bf16: native and emulated bf16 equal direct on random 1-D, 2-D, 3-D problems") {
    KernelGuard guard;
    const bool native = cpu_has_bf16();
    // 3-D, groups, C off the multiples of 16, batches of 17 and 3 (not multiples of 16), a
    // reduction of several row blocks (C 300), K 520 (33 channel blocks).
    const char* descs[] = {"mb17ic20ih7oc33oh4kh3sh2ph1",
                           "g2mb3ic40ih9oc36oh4kh3sh2ph1dh1",
                           "mb2ic19id5ih5iw5oc40od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
                           "mb5ic35iw40oc70ow18kw5sw2dw1pw2",
                           "mb2ic300ih5oc40oh5kh3ph1",
                           "mb3ic5ih9oc520oh9kh3ph1"};
    std::vector<Tensor> first;
    dim_t differ = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(613);  // the same data on every ISA
        std::vector<Tensor> ys;
        for (const char* desc : descs)
            for (const dim_t c0 : {16, 8, 32, 5})
                ys.push_back(check_bf16(convlab::parse_descriptor(desc), c0, rng, isa));
        for (int t = 0; t < 30; ++t) {
            Problem p = convlab::test::random_problem(rng);
            p.mb = 1 + t % 19;
            ys.push_back(check_bf16(p, t % 3 == 0 ? 8 : 16, rng, isa));
        }
        if (first.empty()) {
            first = std::move(ys);
        } else {
            for (std::size_t i = 0; i < ys.size(); ++i)
                for (dim_t e = 0; e < ys[i].numel(); ++e)
                    differ += ys[i].f32()[e] != first[i].f32()[e];
        }
    }
    // The native products add pairs in another order (and flush denormals): on real data some
    // results differ from the emulation's in their last bits, which shows the native path ran.
    if (native && isas().size() > 1) CHECK(differ > 0);
}

TEST_CASE("fractal forward: groups of at most 4 channels run in 4-lane fractals, exact") {
    using convlab::parse_descriptor;
    // The C0 the forward computes with: 4 for at most 4 channels a group when asked for 16.
    CHECK(dv::forward_c0(parse_descriptor("mb1ic3ih8oc4kh3"), 16) == 4);
    CHECK(dv::forward_c0(parse_descriptor("mb1ic4ih8oc4kh3"), 16) == 4);
    CHECK(dv::forward_c0(parse_descriptor("mb1ic5ih8oc4kh3"), 16) == 16);
    CHECK(dv::forward_c0(parse_descriptor("g2mb1ic8ih8oc4kh3"), 16) == 4);
    CHECK(dv::forward_c0(parse_descriptor("g2mb1ic10ih8oc4kh3"), 16) == 16);
    CHECK(dv::forward_c0(parse_descriptor("mb1ic3ih8oc4kh3"), 8) == 8);
    CHECK_THROWS_AS(dv::forward_c0(parse_descriptor("mb1ic3ih8oc4kh3"), 0), convlab::Error);
    // Integer data: every product and sum is exact in fp32, so the 4-lane fractals must give
    // direct's values on every element. conv1's shape (3 channels, 7x7, stride 2), K off the
    // multiples of 4 and 16, groups of 2 channels, 3-D, 1-D, batches of 17 and 3, a bias.
    KernelGuard guard;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        std::mt19937 rng(29);
        for (const char* desc : {"mb2ic3ih23oc70oh12kh7sh2ph3", "g3mb17ic6ih5oc9oh5kh3ph1",
                                 "mb2ic4id5ih5iw5oc20od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
                                 "mb3ic1iw30oc17ow14kw3sw2", "mb1ic2ih40oc33oh20kh5sh2ph2"}) {
            const Problem p = parse_descriptor(desc);
            REQUIRE(dv::forward_c0(p, 16) == 4);
            const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
            const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
            const Tensor b = convlab::test::integer_tensor({p.oc}, rng);
            convlab::test::check_equal(dv::forward(p, x, w, &b, dv::Options{}),
                                       convlab::forward(p, x, w, &b, "direct"),
                                       std::string(desc) + " " + isa);
        }
    }
}

TEST_CASE("fractal prepare_weights: the fractal layout is packed once and read instead") {
    std::mt19937 rng(614);
    for (const char* desc : {"mb2ic20ih7oc33oh7kh3ph1", "g2mb3ic40ih9oc36oh4kh3sh2ph1dh1",
                             "mb1ic19id4ih5iw5oc18od4oh5ow5kd3kh3kw3pd1ph1pw1",
                             "mb3ic64ih8oc40oh4kh1sh2", "mb1ic300ih5oc40oh5kh3ph1"}) {
        const Problem p = convlab::parse_descriptor(desc);
        INFO(desc);
        const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
        const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
        const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
        convlab::Profiler pf, pb;
        const convlab::PreparedWeights fw =
            convlab::prepare_weights(p, convlab::Pass::Forward, w.f32(), &pf);
        const convlab::PreparedWeights bw =
            convlab::prepare_weights(p, convlab::Pass::BackwardData, w.f32(), &pb);
        REQUIRE(fw.fractal(p, convlab::Pass::Forward) != nullptr);
        REQUIRE(bw.fractal(p, convlab::Pass::BackwardData) != nullptr);
        CHECK(fw.bytes() >= std::size_t(dv::prepared_fractal_size(p, convlab::Pass::Forward)) * 4);
        CHECK(pf.seconds("pack_wei_fractal") > 0);
        CHECK(pb.seconds("fliprot_fractal") > 0);
        // The calls read them: no weight packing inside (no pack_wei / fliprot span), the same
        // results as direct.
        convlab::Profiler cf, cb;
        convlab::test::check_equal(convlab::forward(p, x, w, nullptr, "fractal", &cf, &fw),
                                   convlab::forward(p, x, w, nullptr, "direct"), "fwd prepared");
        convlab::test::check_equal(
            convlab::backward_data(p, dy, w, "fractal_via_forward", &cb, &bw),
            convlab::backward_data(p, dy, w, "direct"), "bwd_data prepared");
        CHECK(cf.seconds("pack_wei") == 0);
        CHECK(cb.seconds("fliprot") == 0);
        CHECK(cf.seconds("fractal_gemm") > 0);
        // Without them the calls pack their own (one pass from OIHW).
        convlab::Profiler nf, nb;
        (void)convlab::forward(p, x, w, nullptr, "fractal", &nf);
        (void)convlab::backward_data(p, dy, w, "fractal_via_forward", &nb);
        CHECK(nf.seconds("pack_wei") > 0);
        CHECK(nb.seconds("fliprot") > 0);
        // Prepared for another problem or pass: refused.
        Problem other = p;
        other.mb += 1;
        const Tensor x2 = convlab::test::integer_tensor(other.src_dims(), rng);
        CHECK_THROWS_AS(convlab::forward(other, x2, w, nullptr, "fractal", nullptr, &fw),
                        convlab::Error);
        CHECK_THROWS_AS(convlab::backward_data(p, dy, w, "fractal_via_forward", nullptr, &fw),
                        convlab::Error);
    }
}

TEST_CASE(
    "fractal prepare_weights: refuses the pass and null weights as convlab::prepare_weights") {
    using convlab::Pass;
    std::mt19937 rng(618);
    const Problem p = convlab::parse_descriptor("mb1ic20ih7oc33oh7kh3ph1");
    const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
    for (const DType dt : {DType::f32, DType::bf16}) {
        CHECK_THROWS_WITH_AS(dv::prepare_weights(p, Pass::BackwardWeight, w.f32(), dt),
                             "pass: weights are prepared for fwd and bwd_data, not bwd_weight",
                             convlab::Error);
        CHECK_THROWS_WITH_AS(dv::prepare_weights(p, Pass::Forward, nullptr, dt),
                             "wei: null weights", convlab::Error);
    }
    CHECK_THROWS_WITH_AS(convlab::prepare_weights(p, Pass::BackwardWeight, w.f32()),
                         "pass: weights are prepared for fwd and bwd_data, not bwd_weight",
                         convlab::Error);
    CHECK_THROWS_WITH_AS(convlab::prepare_weights(p, Pass::BackwardData, nullptr),
                         "wei: null weights", convlab::Error);
    Problem bad = p;
    bad.stride[1] = 0;
    CHECK_THROWS_WITH_AS(dv::prepare_weights(bad, Pass::Forward, w.f32(), DType::bf16),
                         doctest::Contains("stride"), convlab::Error);
}

TEST_CASE("fractal prepare_weights: fp16 / bf16 weights prepared once give the per-call bits") {
    KernelGuard guard;
    using convlab::Pass;
    std::mt19937 rng(616);
    // 3-D, groups, C off the multiples of 16, batch 17, conv1's 3 channels with a leftover row,
    // a strided 1x1, and random problems (1-D to 3-D, depthwise, dilation).
    std::vector<Problem> problems;
    for (const char* desc : {"mb17ic20ih7oc33oh4kh3sh2ph1", "g2mb3ic40ih9oc36oh4kh3sh2ph1dh1",
                             "mb2ic19id5ih5iw5oc40od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
                             "mb17ic3ih12oc18kh7sh2ph3", "mb3ic64ih8oc40oh4kh1sh2"})
        problems.push_back(convlab::parse_descriptor(desc));
    for (int t = 0; t < 12; ++t) {
        Problem p = convlab::test::random_problem(rng);
        p.mb = 1 + t % 19;
        problems.push_back(p);
    }
    int pairs_seen = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const Problem& p : problems) {
            const Tensor x = convlab::test::real_tensor(p.src_dims(), rng);
            const Tensor w = convlab::test::real_tensor(p.wei_dims(), rng);
            const Tensor dy = convlab::test::real_tensor(p.dst_dims(), rng);
            for (const DType dt : {DType::f16, DType::bf16})
                for (const Pass pass : {Pass::Forward, Pass::BackwardData}) {
                    const bool fwd = pass == Pass::Forward;
                    const std::string what = convlab::to_descriptor(p) + " " + isa + " " +
                                             convlab::dtype_name(dt) + " " +
                                             convlab::pass_name(pass);
                    INFO(what);
                    // The pairs wherever the CPU has them, so that their preparation runs.
                    const auto rule = convlab::Rule::Always;
                    const dv::Options o{16, dt, rule};
                    convlab::Profiler pp, with, without;
                    const convlab::PreparedWeights pw =
                        dv::prepare_weights(p, pass, w.f32(), dt, &pp, rule);
                    CHECK(pp.seconds(fwd ? "pack_wei_fractal" : "fliprot_fractal") > 0);
                    // bf16 pairs where the CPU multiplies them, except for products into at
                    // most 4 channels (the forward's K/G, backward data's C/G), which take
                    // the fp32 narrow products.
                    const dim_t c0 =
                        fwd && !dv::tap_lanes(p, 16, nullptr) ? dv::forward_c0(p, 16) : 16;
                    const dim_t out = fwd ? p.ocg() : p.icg();
                    const bool pairs = dt == DType::bf16 && dv::fractal_bf16_pairs(c0, rule) &&
                                       !(out <= 4 && dv::fractal_narrow_runs(c0, out));
                    CHECK((pw.fractal_pairs(p, pass) != nullptr) == pairs);
                    CHECK((pw.fractal(p, pass, dt) != nullptr) == !pairs);
                    CHECK(pw.fractal(p, pass) == nullptr);  // not an fp32 B
                    pairs_seen += pairs;
                    const Tensor& in = fwd ? x : dy;
                    const Tensor got = fractal_call(p, pass, in, w, o, &pw, with);
                    const Tensor want = fractal_call(p, pass, in, w, o, nullptr, without);
                    convlab::test::check_equal(got, want, what + " prepared");
                    // The prepared call packs no weights; the other packs its own.
                    const char* pack = fwd ? "pack_wei" : "fliprot";
                    CHECK(with.seconds(pack) == 0);
                    CHECK(without.seconds(pack) > 0);
                    // Both are the convolution, within the storage's tolerance.
                    const double len = double((fwd ? p.icg() : p.ocg()) * p.kernel_spatial());
                    convlab::test::check_close(got,
                                               fwd ? convlab::forward(p, x, w, nullptr, "direct")
                                                   : convlab::backward_data(p, dy, w, "direct"),
                                               1e-2, 1e-2 * len, what + " against direct");
                    // fp32 weights given to a half-precision call are not read: it packs.
                    const convlab::PreparedWeights f32 = convlab::prepare_weights(p, pass, w.f32());
                    convlab::Profiler other;
                    convlab::test::check_equal(fractal_call(p, pass, in, w, o, &f32, other), want,
                                               what + " fp32-prepared");
                    CHECK(other.seconds(pack) > 0);
                }
        }
    }
    if (cpu_has_bf16()) CHECK(pairs_seen > 0);
    // fp32 storage: the layout is convlab::prepare_weights' fractal one.
    const Problem p = problems.front();
    const Tensor w = convlab::test::real_tensor(p.wei_dims(), rng);
    const convlab::PreparedWeights a = dv::prepare_weights(p, Pass::Forward, w.f32(), DType::f32);
    const convlab::PreparedWeights b = convlab::prepare_weights(p, Pass::Forward, w.f32());
    const dim_t n = dv::prepared_fractal_size(p, Pass::Forward);
    REQUIRE(a.fractal(p, Pass::Forward) != nullptr);
    REQUIRE(b.fractal(p, Pass::Forward) != nullptr);
    dim_t differ = 0;
    for (dim_t i = 0; i < n; ++i)
        differ += a.fractal(p, Pass::Forward)[i] != b.fractal(p, Pass::Forward)[i];
    CHECK(differ == 0);
    CHECK_THROWS_AS(dv::prepare_weights(p, Pass::BackwardWeight, w.f32(), DType::bf16),
                    convlab::Error);
}

TEST_CASE("fractal_via_forward: strided 1x1 backward data inserts the zeros after the products") {
    std::mt19937 rng(615);
    // Strides 2 and 3, leftover rows (10 = 3*3 + 1), pad_end > 0, 1-D, 3-D, groups.
    for (const char* desc :
         {"mb2ic20ih9oc33oh5kh1sh2", "mb2ic3ih10oc4oh4kh1sh3", "mb1ic6ih7oc5oh4kh1sh2phe1",
          "mb3ic17iw11oc9ow6kw1sw2", "mb1ic5id5ih5iw5oc7od3oh3ow3kd1kh1kw1sd2sh2sw2",
          "g2mb2ic8ih8oc6oh4kh1sh2"}) {
        const Problem p = convlab::parse_descriptor(desc);
        INFO(desc);
        const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
        const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
        for (const dim_t c0 : {16, 8, 5}) {
            convlab::Profiler prof;
            convlab::test::check_equal(dv::backward_data(p, dy, w, {c0, DType::f32}, &prof),
                                       convlab::backward_data(p, dy, w, "direct"),
                                       std::string(desc) + " c0 " + std::to_string(c0));
            // No pad of the zero-inserted dY: the products ran on dY's positions only.
            CHECK(prof.seconds("pad") == 0);
            CHECK(prof.seconds("zero-insert") > 0);
            CHECK(prof.seconds("fractal_gemm") > 0);
        }
    }
    // With padding at the start the products run on the zero-inserted dY, read through the
    // insertion and the pad (no copy of either).
    const Problem padded = convlab::parse_descriptor("mb1ic4ih9oc4oh5kh1sh2ph1");
    const Tensor dy = convlab::test::integer_tensor(padded.dst_dims(), rng);
    const Tensor w = convlab::test::integer_tensor(padded.wei_dims(), rng);
    convlab::Profiler prof;
    convlab::test::check_equal(dv::backward_data(padded, dy, w, {}, &prof),
                               convlab::backward_data(padded, dy, w, "direct"), "padded 1x1");
    CHECK(prof.seconds("pad") == 0);
    CHECK(prof.seconds("zero-insert") == 0);
    CHECK(prof.seconds("im2col") > 0);
}

namespace {

// Problem p's group 0 as a problem of one group.
Problem one_group_of(const Problem& p) {
    Problem q = p;
    q.ic = p.icg();
    q.oc = p.ocg();
    q.groups = 1;
    return q;
}

// im2col_fractal_block in blocks of cm M blocks against im2col_fractal_kernel of the whole
// source: each row of a fractal marked as read equals the kernel's row of the same output
// position (plan.position; zeros past the last), and every row of one marked as not read is
// zeros there; im2col_fractal_block_bf16 marks the same fractals and writes the upper halves of
// their elements. Returns the fractals not read.
// With in_place (not null) the block is built leaving fractals in the source, each read where
// the block says it is; *in_place counts those, every one checked to lie in the source.
dim_t check_block(const Problem& q, dim_t c0, const dv::ColSource& src, const float* full_src,
                  dim_t cm, const std::string& what, dim_t* in_place = nullptr) {
    const dv::ColPlan plan(q, src);
    const dim_t rows = dv::WeiGeom::of(q.wei_dims(), c0).rows(), frac = 16 * c0;
    const dim_t m1 = convlab::davinci::blocks_of(q.out_spatial(), 16);
    std::vector<float> want(static_cast<std::size_t>(rows * m1 * frac));
    std::vector<float> got(static_cast<std::size_t>(rows * cm * frac));
    std::vector<unsigned char> nz(static_cast<std::size_t>(rows * cm)), nz16(nz.size());
    std::vector<std::uint16_t> got16(got.size());
    std::vector<const float*> where(static_cast<std::size_t>(rows * cm));
    const dv::ActGeom& sg = src.g;
    const float* src_end = src.x5 + sg.size();
    dim_t skipped = 0, bad = 0, bad16 = 0;
    for (dim_t n = 0; n < q.mb; ++n) {
        dv::im2col_fractal_kernel(q, c0, full_src, n, want.data());
        for (dim_t mb0 = 0; mb0 < m1; mb0 += cm) {
            const dim_t c = std::min(cm, m1 - mb0);
            std::fill(got.begin(), got.end(), std::nanf(""));
            dv::im2col_fractal_block(plan, c0, n, mb0, c, got.data(), nz.data(),
                                     in_place ? where.data() : nullptr);
            // The bf16 block: the same fractals marked, each element the upper half of the fp32
            // block's (its bf16 value when the source holds bf16 values), none left in place.
            std::fill(got16.begin(), got16.end(), std::uint16_t{0x5555});
            dv::im2col_fractal_block_bf16(plan, c0, n, mb0, c, got16.data(), nz16.data());
            for (dim_t f = 0; f < rows * c; ++f) {
                const auto fi = static_cast<std::size_t>(f);
                bad16 += nz16[fi] != nz[fi];
                if (!nz[fi]) continue;
                const float* v = in_place ? where[fi] : got.data() + f * frac;
                if (in_place && v != got.data() + f * frac && (v < src.x5 || v + frac > src_end))
                    continue;  // counted as bad above
                for (dim_t e = 0; e < frac; ++e)
                    bad16 += got16[static_cast<std::size_t>(f * frac + e)] !=
                             std::bit_cast<std::uint32_t>(v[e]) >> 16;
            }
            for (dim_t r = 0; r < rows; ++r)
                for (dim_t mb = 0; mb < c; ++mb) {
                    const float* g = got.data() + (r * c + mb) * frac;
                    const bool read = nz[static_cast<std::size_t>(r * c + mb)];
                    if (in_place) {
                        const float* a = where[static_cast<std::size_t>(r * c + mb)];
                        if (a != g) {
                            ++*in_place;
                            bad += !read || a < src.x5 || a + frac > src_end;
                            if (a < src.x5 || a + frac > src_end) continue;
                            g = a;
                        }
                    }
                    skipped += !read;
                    for (dim_t i = 0; i < 16; ++i) {
                        const dim_t mm = (mb0 + mb) * 16 + i;
                        if (mm >= q.out_spatial()) {
                            for (dim_t l = 0; l < c0; ++l) bad += read && g[i * c0 + l] != 0.0f;
                            continue;
                        }
                        dim_t od, oh, ow;
                        plan.position(mm, od, oh, ow);
                        const dim_t at = (od * plan.g.out[1] + oh) * plan.g.out[2] + ow;
                        const float* w = want.data() + (r * m1 + at / 16) * frac + (at % 16) * c0;
                        for (dim_t l = 0; l < c0; ++l)
                            bad += read ? !(g[i * c0 + l] == w[l]) : w[l] != 0.0f;
                    }
                }
        }
    }
    INFO(what);
    CHECK(bad == 0);
    CHECK(bad16 == 0);
    return skipped;
}

}  // namespace

TEST_CASE("fractal im2col: the block from dY through insertion and pad equals the copies' im2col") {
    std::mt19937 rng(617);
    std::vector<Problem> problems;
    for (const char* desc : {"mb1ic3ih24oc5oh12kh7sh2ph3", "mb2ic20ih9oc33oh5kh3sh2ph1",
                             "mb17ic19id5ih5iw5oc20od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
                             "mb2ic5iw40oc7ow18kw5sw2dw1pw2", "g2mb3ic40ih9oc36oh4kh3sh2ph1dh1",
                             "mb1ic6ih7oc5oh4kh1sh2phe1", "mb1ic4ih9oc4oh5kh1sh2ph1"})
        problems.push_back(convlab::parse_descriptor(desc));
    for (int t = 0; t < 40; ++t) problems.push_back(convlab::test::random_problem(rng));
    dim_t skipped_bwd = 0, in_place = 0;
    for (const Problem& p : problems)
        for (const dim_t c0 : {16, 8, 5}) {
            const std::string what = convlab::to_descriptor(p) + " c0 " + std::to_string(c0);
            const Problem p1 = one_group_of(p);
            // Backward data: dY packed, then (the reference) zero-inserted and padded.
            const Problem q = convlab::maps::backward_data_as_forward(p1);
            const dv::BackwardDataPads pads = dv::backward_data_pads(p1);
            const std::vector<dim_t> yd = p1.dst_dims();
            const Tensor dy = convlab::test::integer_tensor(yd, rng);
            const dv::ActGeom yg = dv::ActGeom::of(yd, c0);
            std::vector<float> y5(static_cast<std::size_t>(yg.size())),
                z5(static_cast<std::size_t>(dv::ActGeom::of(pads.zdims, c0).size())),
                q5(static_cast<std::size_t>(dv::ActGeom::of(q.src_dims(), c0).size()));
            dv::pack_activation_kernel(yd, c0, dy.f32(), y5.data());
            dv::strided5d_kernel(p1, c0, y5.data(), z5.data());
            dv::pad5d_kernel(pads.zdims, pads.begin, pads.end, c0, z5.data(), q5.data());
            dv::ColSource s;
            s.x5 = y5.data();
            s.g = yg;
            for (int i = 0; i < p.ndims; ++i) {
                s.ins[3 - p.ndims + i] = p.stride[i];
                s.off[3 - p.ndims + i] = pads.begin[static_cast<std::size_t>(i)];
            }
            for (const dim_t cm : {1, 3, 64})
                skipped_bwd += check_block(q, c0, s, q5.data(), cm, what + " bwd_data");
            // Forward: the packed input as it is.
            const Tensor x = convlab::test::integer_tensor(p1.src_dims(), rng);
            std::vector<float> x5(
                static_cast<std::size_t>(dv::ActGeom::of(p1.src_dims(), c0).size()));
            dv::pack_activation_kernel(p1.src_dims(), c0, x.f32(), x5.data());
            (void)check_block(p1, c0, dv::plain_source(p1, c0, x5.data()), x5.data(), 5,
                              what + " fwd");
            // Sources packed by pack_activation_kernel: their padding lanes hold zeros, so
            // whole C0 blocks are copied or read in place.
            dv::ColSource clean = dv::plain_source(p1, c0, x5.data());
            clean.zero_padding = s.zero_padding = true;
            (void)check_block(p1, c0, clean, x5.data(), 3, what + " fwd in place", &in_place);
            (void)check_block(q, c0, s, q5.data(), 3, what + " bwd_data in place", &in_place);
        }
    // The fractals of inserted zeros and padding are left out.
    CHECK(skipped_bwd > 0);
    CHECK(in_place > 0);
    // A 1x1 kernel of stride 1 without padding reads its fractals as they are in the source:
    // every whole fractal of a whole C0 block is left in place (here 2 channel blocks of 16 x 3
    // M blocks of 16 positions, of 49), the last M block (1 position) copied.
    {
        const Problem p = convlab::parse_descriptor("mb2ic32ih7oc5kh1");
        const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
        std::vector<float> x5(static_cast<std::size_t>(dv::ActGeom::of(p.src_dims(), 16).size()));
        dv::pack_activation_kernel(p.src_dims(), 16, x.f32(), x5.data());
        dim_t whole = 0;
        (void)check_block(p, 16, dv::plain_source(p, 16, x5.data()), x5.data(), 4, "1x1", &whole);
        CHECK(whole == 2 * 2 * 3);
    }
    // Along an axis read through a zero insertion the outputs go phase by phase: on conv1's
    // backward data (stride 2) the rows of one fractal at one tap are all data or all zeros.
    const Problem conv1 = one_group_of(convlab::parse_descriptor("mb1ic3ih224oc64oh112kh7sh2ph3"));
    const Problem q1 = convlab::maps::backward_data_as_forward(conv1);
    dv::ColSource s;
    s.g = dv::ActGeom::of(conv1.dst_dims(), 16);
    s.ins[1] = s.ins[2] = 2;
    s.off[1] = s.off[2] = dv::backward_data_pads(conv1).begin[0];
    const dv::ColPlan plan(q1, s);
    CHECK(plan.permuted);
    dim_t od, oh, ow;
    plan.position(1, od, oh, ow);
    CHECK((od == 0 && oh == 0 && ow == 2));
    plan.position(112, od, oh, ow);
    CHECK((od == 0 && oh == 0 && ow == 1));
    plan.position(224, od, oh, ow);
    CHECK((od == 0 && oh == 2 && ow == 0));
    const dim_t* tw = plan.tab.data() + plan.at[2];  // tap kw = 0
    dim_t mixed = 0, zeros = 0;  // fractals of data and zeros; fractals of zeros only
    for (dim_t f = 0; f < 224 / 16; ++f) {
        dim_t z = 0;
        for (dim_t i = 0; i < 16; ++i) z += tw[f * 16 + i] < 0;
        mixed += z > 0 && z < 16;
        zeros += z == 16;
    }
    CHECK(mixed == 1);  // where the pad meets the data
    CHECK(zeros == 7);  // the even outputs at kw = 0 read inserted zeros only
}
