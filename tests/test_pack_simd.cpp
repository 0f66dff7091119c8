// The activation pack (NCHW -> NC1HWC0) and unpack kernels, whose C0 16 / 8 / 4 runs transpose
// in registers (engine/src/maps/davinci_pack_simd.cpp), against a plain loop on every element on
// every ISA the CPU has: C0 16, 8, 4 and C0s without a vector run, channel counts around the
// multiples of C0, position counts around the vector steps, 1-D to 3-D, channel slices of a
// wider tensor (a group's), fp32 exactly and the bf16 / fp16 rounding packs bit for bit against
// the loop's result rounded by detail::round_storage.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../engine/src/core/bf16.hpp"
#include "../engine/src/gemm/microkernel.hpp"
#include "../engine/src/maps/davinci_internal.hpp"
#include "../engine/src/maps/davinci_pack_simd.hpp"
#include "convlab/davinci.hpp"
#include "convlab/index_map.hpp"
#include "microkernel_test_util.hpp"

using convlab::dim_t;
using convlab::DType;
namespace dv = convlab::davinci;
namespace detail = convlab::detail;

namespace {

using convlab::test::isas;
using convlab::test::KernelGuard;
using Dims = std::vector<dim_t>;

dim_t prod(const Dims& v) {
    dim_t p = 1;
    for (dim_t x : v) p *= x;
    return p;
}

// The pack by its definition: dst(n, d, c1, pos, ci) = src(n, c_begin + c1*C0 + ci, d, pos) for
// channels below C, 0 above; src holds ct channels.
std::vector<float> plain_pack(const Dims& dims, dim_t c0, const std::vector<float>& src, dim_t ct,
                              dim_t c_begin) {
    const dim_t n = dims[0], c = dims[1], c1s = (c + c0 - 1) / c0;
    const dim_t d = dims.size() == 5 ? dims[2] : 1,
                hw = prod(Dims(dims.begin() + 2, dims.end())) / d;
    std::vector<float> dst(static_cast<std::size_t>(n * d * c1s * hw * c0));
    for (dim_t in = 0; in < n; ++in)
        for (dim_t id = 0; id < d; ++id)
            for (dim_t c1 = 0; c1 < c1s; ++c1)
                for (dim_t i = 0; i < hw; ++i)
                    for (dim_t ci = 0; ci < c0; ++ci) {
                        const dim_t ch = c1 * c0 + ci;
                        dst[static_cast<std::size_t>((((in * d + id) * c1s + c1) * hw + i) * c0 +
                                                     ci)] =
                            ch < c ? src[static_cast<std::size_t>(
                                         ((in * ct + c_begin + ch) * d + id) * hw + i)]
                                   : 0.0f;
                    }
    return dst;
}

// Values whose rounding matters: small integers, reals, bf16 and fp16 ties, denormals, NaNs of
// both kinds, infinities, the largest finite values, zeros of both signs.
float special_value(std::mt19937& rng) {
    const std::uint32_t r = static_cast<std::uint32_t>(rng());
    const auto bits = [](std::uint32_t b) { return std::bit_cast<float>(b); };
    switch (r % 12) {
        case 0:
            return bits((r & 0x807f0000u) | 0x3f008000u);  // a bf16 tie
        case 1:
            return bits(r & 0x807fffffu);  // a denormal (or a zero)
        case 2:
            return bits(0x7f800001u | (r & 0x803fff00u));  // a signalling NaN
        case 3:
            return bits(0xffc00000u | (r & 0x3fffffu));  // a quiet NaN
        case 4:
            return r & 16 ? std::numeric_limits<float>::infinity()
                          : -std::numeric_limits<float>::max();
        case 5:
            return bits(0x7f7f8000u | (r & 0x80000000u));  // rounds to infinity in bf16
        case 6:
            return r & 16 ? -0.0f : 65520.0f;  // fp16: rounds to infinity
        case 7:
            return bits(0x38801000u | (r & 0x80000000u));  // an fp16 tie near its denormals
        default:
            return bits((r & 0xbfffffffu) | 0x30000000u);  // a random real
    }
}

// The dims of one case: (N, C, spatial...) with `pos` positions per depth slice.
Dims case_dims(dim_t n, dim_t c, dim_t pos, int rank, dim_t depth) {
    const dim_t w = pos == 3136 ? 56 : pos == 16 ? 4 : pos == 15 ? 5 : pos;
    const dim_t h = pos / w;
    if (rank == 1) return {n, c, pos};
    if (rank == 2) return {n, c, h, w};
    return {n, c, depth, h, w};
}

dim_t mismatches(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size()) return -1;
    dim_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        bad += std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i]);
    return bad;
}

}  // namespace

TEST_CASE("pack simd: the plain loop is the generic map's pack") {
    std::mt19937 rng(5);
    for (const Dims& dims : {Dims{2, 17, 3, 5}, Dims{1, 3, 7}, Dims{2, 5, 2, 3, 3}})
        for (dim_t c0 : {16, 8, 4, 5}) {
            std::vector<float> x(static_cast<std::size_t>(prod(dims)));
            for (float& v : x) v = static_cast<float>(rng() % 7) - 3.0f;
            const convlab::IndexMap m = dv::pack_activation(dims, c0);
            std::vector<float> want(static_cast<std::size_t>(m.dst().numel()), -7.0f);
            m.execute(x.data(), want.data());
            CHECK(mismatches(plain_pack(dims, c0, x, dims[1], 0), want) == 0);
        }
}

TEST_CASE("pack simd: vector runs exist for C0 16, 8, 4 under a vector ISA only") {
    KernelGuard guard;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        INFO(isa);
        const bool vec = isa != "portable";
        for (dim_t c0 : {16, 8, 4}) {
            for (DType st : {DType::f32, DType::bf16, DType::f16}) {
                const bool pack = dv::internal::pack_run(c0, st) != nullptr;
                CHECK(pack == vec);
            }
            const bool unpack = dv::internal::unpack_run(c0) != nullptr;
            CHECK(unpack == vec);
        }
        for (dim_t c0 : {1, 5, 32}) {
            const bool pack = dv::internal::pack_run(c0, DType::f32) != nullptr,
                       unpack = dv::internal::unpack_run(c0) != nullptr;
            CHECK_FALSE(pack);
            CHECK_FALSE(unpack);
        }
    }
}

TEST_CASE("pack simd: pack, rounding packs and unpack equal the plain loop on every element") {
    KernelGuard guard;
    std::mt19937 rng(2026);
    const dim_t channels[] = {1, 3, 15, 16, 17, 33, 64};
    const dim_t positions[] = {1, 15, 16, 17, 3136};
    dim_t cases = 0;
    for (const std::string& isa : isas()) {
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (dim_t c0 : {16, 8, 4, 5, 1})
            for (dim_t c : channels)
                for (dim_t pos : positions)
                    for (int rank : {1, 2, 3}) {
                        if (pos == 3136 && (rank != 2 || c0 == 1)) continue;  // kept small
                        const dim_t n = pos == 3136 ? 1 : 2;
                        const Dims dims = case_dims(n, c, pos, rank, 3);
                        // Alternately the whole tensor and a slice of a wider one.
                        const bool slice = (c + pos + rank) % 2 == 1;
                        const dim_t c_begin = slice ? 2 : 0, ct = slice ? c + 5 : c;
                        Dims wide = dims;
                        wide[1] = ct;
                        std::vector<float> x(static_cast<std::size_t>(prod(wide)));
                        for (float& v : x) v = special_value(rng);
                        INFO(isa << " c0 " << c0 << " C " << c << " positions " << pos << " "
                                 << rank << "-D slice " << slice);
                        const std::vector<float> plain = plain_pack(dims, c0, x, ct, c_begin);
                        const std::size_t size = plain.size();
                        for (DType st : {DType::f32, DType::bf16, DType::f16}) {
                            INFO(convlab::dtype_name(st));
                            std::vector<float> want = plain, got(size, 1e30f);
                            detail::round_storage(st, want.data(), static_cast<dim_t>(size));
                            if (st == DType::f32)
                                dv::pack_activation_kernel(dims, c0, x.data(), got.data(), ct,
                                                           c_begin);
                            else
                                dv::internal::pack_activation_rounded(st, dims, c0, x.data(),
                                                                      got.data(), ct, c_begin);
                            CHECK(mismatches(got, want) == 0);
                        }
                        // The unpack of another tensor's pack, garbage in its padding
                        // lanes, into x: the slice's channels and nothing else are written.
                        std::vector<float> y(x.size());
                        for (float& v : y) v = special_value(rng);
                        std::vector<float> packed = plain_pack(dims, c0, y, ct, c_begin);
                        const dim_t hw =
                            prod(Dims(dims.begin() + 2, dims.end())) / (rank == 3 ? 3 : 1);
                        const dim_t c1s = (c + c0 - 1) / c0;
                        for (std::size_t i = 0; i < size; ++i) {
                            const dim_t e = static_cast<dim_t>(i);
                            if (e / (hw * c0) % c1s * c0 + e % c0 >= c) packed[i] = 1e30f;
                        }
                        std::vector<float> want = x, got = x;
                        const dim_t inner = prod(Dims(dims.begin() + 2, dims.end()));
                        for (dim_t in = 0; in < n; ++in)
                            for (dim_t ch = c_begin; ch < c_begin + c; ++ch)
                                for (dim_t e = 0; e < inner; ++e) {
                                    const auto at =
                                        static_cast<std::size_t>((in * ct + ch) * inner + e);
                                    want[at] = y[at];
                                }
                        dv::unpack_activation_kernel(dims, c0, packed.data(), got.data(), ct,
                                                     c_begin);
                        CHECK(mismatches(got, want) == 0);
                        ++cases;
                    }
    }
    CHECK(cases > 0);
}
