// DaVinci formats and the fractal algorithms (engine/include/convlab/davinci.hpp):
//  1. layouts against docs/design.md's offsets on every coordinate, padding lanes exactly where
//     the formula says, zero in a Tensor;
//  2. converters: each map against its definition as a composition (pack . NCHW map . unpack)
//     on every element, fast kernels against the generic executor with garbage in the source
//     padding lanes, round trips, padding lanes of every result zero;
//  3. fractal forward against direct (exact on integer data), random and chosen problems;
//  4. backward data and weight in fractal form against direct, the leftover-row regression,
//     fp16/bf16 storage; ResNet-50's 20 layers in a separately labelled (skipped) long test.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "convlab/davinci.hpp"
#include "convlab/index_map.hpp"
#include "convlab/layout.hpp"
#include "convlab/maps.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Error;
using convlab::Layout;
using convlab::Shape;
using convlab::Tensor;
namespace dv = convlab::davinci;

using convlab::test::for_each_coord;

namespace {

using Dims = std::vector<dim_t>;

dim_t cdiv(dim_t a, dim_t b) {
    return (a + b - 1) / b;
}

dim_t prod(const Dims& v) {
    dim_t p = 1;
    for (dim_t x : v) p *= x;
    return p;
}

std::string text(const Dims& v) {
    std::string s = "(";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + ")";
}

// Checks a blocked layout exhaustively:
//  - offset(c) == formula(c) for every logical coordinate c;
//  - storage_size() == numel of the physical shape, and the offsets are distinct;
//  - the storage positions no coordinate reaches are exactly those the physical predicate calls
//    padding (valid(physical coord) == false);
//  - a Tensor of the layout, written at every logical coordinate, holds zero in every padding
//    lane.
// Returns the number of padding lanes.
dim_t check_layout(const Layout& l, const Shape& phys,
                   const std::function<dim_t(const Dims&)>& formula,
                   const std::function<bool(const Dims&)>& valid) {
    INFO(l.str());
    REQUIRE(l.storage_size() == phys.numel());
    std::vector<char> hit(static_cast<std::size_t>(l.storage_size()), 0);
    dim_t bad = 0, dup = 0;
    Tensor t(l, DType::f32);
    dim_t v = 0;
    for_each_coord(l.dims(), [&](const Dims& c) {
        const dim_t off = l.offset(c);
        if (off != formula(c) || off < 0 || off >= l.storage_size()) {
            if (!bad) INFO("first bad offset at " << text(c));
            ++bad;
            return;
        }
        dup += hit[off];
        hit[off] = 1;
        t.set(c, static_cast<float>(++v));
    });
    CHECK(bad == 0);
    CHECK(dup == 0);
    dim_t pad = 0, mismatch = 0, nonzero = 0;
    dim_t off = 0;
    for_each_coord(phys.dims, [&](const Dims& pc) {
        const bool is_valid = valid(pc);
        if (is_valid != (hit[off] != 0)) ++mismatch;
        if (!is_valid) {
            ++pad;
            if (t.get_offset(off) != 0.0f) ++nonzero;
        }
        ++off;
    });
    CHECK(mismatch == 0);
    CHECK(nonzero == 0);
    CHECK(pad == l.storage_size() - l.numel());
    return pad;
}

const dim_t kC0s[] = {16, 8, 4, 1, 32};

}  // namespace

// [SECTION] step 1: layouts

TEST_CASE("davinci: NC1HWC0 offsets equal docs/design.md's formula, padding lanes exactly c >= C") {
    dim_t lanes = 0;
    for (dim_t c0 : kC0s)
        for (dim_t N : {1, 2})
            for (dim_t C : {1, 3, 8, 16, 17, 33})
                for (Dims hw : {Dims{1, 1}, Dims{3, 2}, Dims{2, 5}}) {
                    const dim_t H = hw[0], W = hw[1], C1 = cdiv(C, c0);
                    const Layout l = dv::nc1hwc0(N, C, H, W, c0);
                    CHECK(l.name() == "NC1HWC0");
                    const Dims dims{N, C, H, W};
                    lanes += check_layout(
                        l, dv::activation_physical(dims, c0),
                        [&](const Dims& c) {
                            return (((c[0] * C1 + c[1] / c0) * H + c[2]) * W + c[3]) * c0 +
                                   c[1] % c0;
                        },
                        [&](const Dims& p) { return p[1] * c0 + p[4] < C; });
                    CHECK(dv::activation_layout(dims, c0) == l);
                }
    CHECK(lanes > 0);
    CHECK(dv::nc1hwc0(2, 3, 4, 5).str() == "NC1HWC0 (2,1,4,5,16):(320,320,80,16,1)");
    CHECK(dv::nc1hwc0(2, 17, 4, 5, 8).str() == "NC1HWC0 (2,3,4,5,8):(480,160,40,8,1)");
    CHECK(dv::activation_physical(Dims{2, 17, 4, 5}, 8).str() == "(n=2,c1=3,h=4,w=5,c0=8)");
}

TEST_CASE("davinci: NDC1HWC0 (D outside C1) and the 1-D NC1WC0") {
    for (dim_t c0 : kC0s)
        for (dim_t C : {1, 5, 16, 20})
            for (Dims dhw : {Dims{1, 1, 1}, Dims{2, 3, 2}, Dims{3, 1, 4}}) {
                const dim_t N = 2, D = dhw[0], H = dhw[1], W = dhw[2], C1 = cdiv(C, c0);
                const Dims dims{N, C, D, H, W};
                const Layout l = dv::ndc1hwc0(N, C, D, H, W, c0);
                CHECK(l.name() == "NDC1HWC0");
                check_layout(
                    l, dv::activation_physical(dims, c0),
                    [&](const Dims& c) {
                        return ((((c[0] * D + c[2]) * C1 + c[1] / c0) * H + c[3]) * W + c[4]) * c0 +
                               c[1] % c0;
                    },
                    [&](const Dims& p) { return p[2] * c0 + p[5] < C; });
                CHECK(dv::activation_layout(dims, c0) == l);
                // 1-D
                const Dims d1{N, C, W};
                const Layout l1 = dv::activation_layout(d1, c0);
                CHECK(l1.name() == "NC1WC0");
                check_layout(
                    l1, dv::activation_physical(d1, c0),
                    [&](const Dims& c) {
                        return ((c[0] * C1 + c[1] / c0) * W + c[2]) * c0 + c[1] % c0;
                    },
                    [&](const Dims& p) { return p[1] * c0 + p[3] < C; });
            }
    CHECK(dv::ndc1hwc0(1, 20, 2, 3, 4).str() == "NDC1HWC0 (1,2,2,3,4,16):(768,384,192,64,16,1)");
}

TEST_CASE("davinci: FRACTAL_Z over (O, I, H, W) equals docs/design.md's formula") {
    for (dim_t c0 : kC0s)
        for (dim_t O : {1, 5, 16, 17, 40})
            for (dim_t I : {1, 3, 8, 17})
                for (Dims hw : {Dims{1, 1}, Dims{3, 3}, Dims{2, 1}}) {
                    const dim_t H = hw[0], W = hw[1], N1 = cdiv(O, 16);
                    const Dims dims{O, I, H, W};
                    const Layout l = dv::fractal_z(O, I, H, W, c0);
                    CHECK(l.name() == "FRACTAL_Z");
                    const Shape phys = dv::weight_physical(dims, c0);
                    CHECK(phys.dims == Dims{cdiv(I, c0) * H * W, N1, 16, c0});
                    check_layout(
                        l, phys,
                        [&](const Dims& c) {
                            const dim_t o = c[0], i = c[1], h = c[2], w = c[3];
                            return ((((i / c0) * H + h) * W + w) * N1 + o / 16) * 16 * c0 +
                                   (o % 16) * c0 + i % c0;
                        },
                        [&](const Dims& p) {
                            const dim_t c1 = p[0] / (H * W);
                            return p[1] * 16 + p[2] < O && c1 * c0 + p[3] < I;
                        });
                    CHECK(dv::weight_layout(dims, c0) == l);
                    // 1-D: (O, I, W) is FRACTAL_Z with H = 1.
                    const Dims d1{O, I, W};
                    const Layout l1 = dv::weight_layout(d1, c0);
                    const Layout l2 = dv::fractal_z(O, I, 1, W, c0);
                    for_each_coord(d1, [&](const Dims& c) {
                        REQUIRE(l1.offset(c) == l2.offset({c[0], c[1], 0, c[2]}));
                    });
                    CHECK(l1.storage_size() == dv::weight_physical(d1, c0).numel());
                }
    CHECK(dv::fractal_z(20, 3, 3, 3).str() == "FRACTAL_Z (1,3,3,2,16,16):(4608,1536,512,256,16,1)");
    CHECK(dv::weight_physical(Dims{20, 3, 3, 3}, 16).str() == "(c1hw=9,n1=2,n0=16,c0=16)");
}

TEST_CASE("davinci: FRACTAL_Z_3D (D outermost) and FRACTAL_NZ") {
    for (dim_t c0 : kC0s)
        for (dim_t O : {1, 17, 32})
            for (dim_t I : {2, 9, 16})
                for (Dims dhw : {Dims{1, 1, 1}, Dims{2, 2, 3}, Dims{3, 1, 2}}) {
                    const dim_t D = dhw[0], H = dhw[1], W = dhw[2], N1 = cdiv(O, 16),
                                C1 = cdiv(I, c0);
                    const Dims dims{O, I, D, H, W};
                    const Layout l = dv::fractal_z_3d(O, I, D, H, W, c0);
                    CHECK(l.name() == "FRACTAL_Z_3D");
                    const Shape phys = dv::weight_physical(dims, c0);
                    CHECK(phys.dims == Dims{D * C1 * H * W, N1, 16, c0});
                    CHECK(phys.names[0] == "dc1hw");
                    check_layout(
                        l, phys,
                        [&](const Dims& c) {
                            const dim_t o = c[0], i = c[1], d = c[2], h = c[3], w = c[4];
                            const dim_t row = ((d * C1 + i / c0) * H + h) * W + w;
                            return ((row * N1 + o / 16) * 16 + o % 16) * c0 + i % c0;
                        },
                        [&](const Dims& p) {
                            const dim_t c1 = p[0] / (H * W) % C1;
                            return p[1] * 16 + p[2] < O && c1 * c0 + p[3] < I;
                        });
                    CHECK(dv::weight_layout(dims, c0) == l);
                }
    for (dim_t c0 : kC0s)
        for (dim_t M : {1, 15, 16, 33})
            for (dim_t K : {1, 7, 8, 16, 19}) {
                const dim_t M1 = cdiv(M, 16);
                const Layout l = dv::fractal_nz(M, K, c0);
                CHECK(l.name() == "FRACTAL_NZ");
                const Shape phys = dv::fractal_nz_physical(M, K, c0);
                CHECK(phys.dims == Dims{cdiv(K, c0), M1, 16, c0});
                check_layout(
                    l, phys,
                    [&](const Dims& c) {
                        const dim_t m = c[0], k = c[1];
                        return (((k / c0) * M1 + m / 16) * 16 + m % 16) * c0 + k % c0;
                    },
                    [&](const Dims& p) { return p[1] * 16 + p[2] < M && p[0] * c0 + p[3] < K; });
            }
}

TEST_CASE("davinci: C0 per dtype, C0 validation and ranks") {
    CHECK(dv::c0_for(DType::f32) == 8);
    CHECK(dv::c0_for(DType::f16) == 16);
    CHECK(dv::c0_for(DType::bf16) == 16);
    CHECK_THROWS_AS(dv::nc1hwc0(1, 1, 1, 1, 0), Error);
    CHECK_THROWS_AS(dv::fractal_z(1, 1, 1, 1, 65), Error);
    CHECK_THROWS_AS(dv::activation_layout(Dims{1, 2}, 16), Error);
    CHECK_THROWS_AS(dv::weight_physical(Dims{1, 2, 3, 4, 5, 6}, 16), Error);
    // A fp16 tensor in a blocked layout: set/get round trip and padding lanes zero.
    Tensor t(dv::nc1hwc0(2, 3, 2, 2, 16), DType::f16);
    for_each_coord(t.dims(), [&](const Dims& c) { t.set(c, 1.5f); });
    dim_t ones = 0;
    for (dim_t i = 0; i < t.layout().storage_size(); ++i) ones += t.get_offset(i) == 1.5f;
    CHECK(ones == t.numel());
    CHECK(prod(t.dims()) * 16 / 3 == t.layout().storage_size());
}

// [SECTION] step 2: converters as index maps

namespace {

using Buf = std::vector<float>;
using convlab::IndexMap;
using convlab::Problem;
namespace maps = convlab::maps;

// Dense integer data in [-3, 3], never 0 (so that a wrong zero is visible).
Buf random_buf(dim_t n, std::mt19937& rng) {
    Buf b(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(1, 3);
    for (auto& v : b) v = static_cast<float>(rng() & 1 ? d(rng) : -d(rng));
    return b;
}

Buf run(const IndexMap& m, const Buf& src) {
    REQUIRE(static_cast<dim_t>(src.size()) == m.src().numel());
    Buf dst(static_cast<std::size_t>(m.dst().numel()), -7.0f);
    m.execute(src.data(), dst.data());
    return dst;
}

// Storage positions of a layout that no logical coordinate reaches.
std::vector<char> padding_mask(const Layout& l) {
    std::vector<char> pad(static_cast<std::size_t>(l.storage_size()), 1);
    for_each_coord(l.dims(), [&](const Dims& c) { pad[l.offset(c)] = 0; });
    return pad;
}

// Writes `v` into every padding lane (a source whose padding lanes are garbage).
void dirty_padding(Buf& b, const Layout& l, float v = 1000.0f) {
    const auto pad = padding_mask(l);
    for (std::size_t i = 0; i < b.size(); ++i)
        if (pad[i]) b[i] = v;
}

dim_t nonzero_padding(const Buf& b, const Layout& l) {
    const auto pad = padding_mask(l);
    dim_t n = 0;
    for (std::size_t i = 0; i < b.size(); ++i) n += pad[i] && b[i] != 0.0f;
    return n;
}

// Same shapes and the same image of every domain element.
void check_same_map(const IndexMap& a, const IndexMap& b) {
    INFO(a.name() << " vs " << b.name());
    REQUIRE(a.src().dims == b.src().dims);
    REQUIRE(a.dst().dims == b.dst().dims);
    REQUIRE(a.kind() == b.kind());
    dim_t bad = 0, first = -1;
    for (dim_t i = 0; i < a.domain().numel(); ++i)
        if (a.map(i) != b.map(i)) {
            if (first < 0) first = i;
            ++bad;
        }
    INFO("first difference at domain element " << first);
    CHECK(bad == 0);
}

void check_equal_bufs(const Buf& got, const Buf& want, const std::string& what) {
    INFO(what);
    REQUIRE(got.size() == want.size());
    dim_t bad = 0, first = -1;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i])) {
            if (first < 0) first = static_cast<dim_t>(i);
            ++bad;
        }
    INFO("first mismatch at " << first << " (" << bad << " differ)");
    CHECK(bad == 0);
}

// Random activation-like dims (N, C, spatial...) of rank 3..5.
Dims random_dims(std::mt19937& rng, dim_t max_n = 20) {
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    Dims d{pick(1, max_n), pick(1, 20)};
    const dim_t ns = pick(1, 3);
    for (dim_t i = 0; i < ns; ++i) d.push_back(pick(1, ns == 3 ? 3 : 4));
    return d;
}

dim_t random_c0(std::mt19937& rng) {
    const dim_t c0s[] = {16, 8, 16, 4, 1, 32};
    return c0s[rng() % 6];
}

Dims swap01(Dims d) {
    std::swap(d[0], d[1]);
    return d;
}

}  // namespace

TEST_CASE("davinci: pack/unpack equal the layouts, round trips, padding lanes zero, kernels") {
    std::mt19937 rng(11);
    for (int it = 0; it < 60; ++it) {
        const Dims dims = random_dims(rng);
        const dim_t c0 = random_c0(rng);
        for (bool weights : {false, true}) {
            INFO((weights ? "weights " : "activations ") << text(dims) << " c0 " << c0);
            const Layout l =
                weights ? dv::weight_layout(dims, c0) : dv::activation_layout(dims, c0);
            const IndexMap pack =
                weights ? dv::pack_weight(dims, c0) : dv::pack_activation(dims, c0);
            const IndexMap unpack =
                weights ? dv::unpack_weight(dims, c0) : dv::unpack_activation(dims, c0);
            CHECK(pack.dst().numel() == l.storage_size());
            CHECK(pack.dst() ==
                  (weights ? dv::weight_physical(dims, c0) : dv::activation_physical(dims, c0)));
            const Buf x = random_buf(prod(dims), rng);
            const Buf y = run(pack, x);
            // The pack is the layout: y[offset(c)] == x[c] for every logical c.
            dim_t bad = 0, lin = 0;
            for_each_coord(dims, [&](const Dims& c) { bad += y[l.offset(c)] != x[lin++]; });
            CHECK(bad == 0);
            CHECK(nonzero_padding(y, l) == 0);
            // The pack's function is the exact inverse of Layout::offset.
            for_each_coord(dims, [&](const Dims& c) {
                const dim_t off = l.offset(c);
                REQUIRE(pack.map(off) == Shape{dims, pack.src().names}.linear_of(c));
            });
            check_equal_bufs(run(unpack, y), x, "unpack(pack(x)) == x");
            Buf dirty = y;
            dirty_padding(dirty, l);
            check_equal_bufs(run(unpack, dirty), x, "unpack ignores padding lanes");
            check_equal_bufs(run(pack, run(unpack, dirty)), y,
                             "pack(unpack(y)) == y, lanes zeroed");
            // Fast kernels.
            Buf k(y.size(), -5.0f), u(x.size(), -5.0f);
            if (weights) {
                dv::pack_weight_kernel(dims, c0, x.data(), k.data());
                dv::unpack_weight_kernel(dims, c0, dirty.data(), u.data());
            } else {
                dv::pack_activation_kernel(dims, c0, x.data(), k.data());
                dv::unpack_activation_kernel(dims, c0, dirty.data(), u.data());
            }
            check_equal_bufs(k, y, "pack kernel == generic");
            check_equal_bufs(u, x, "unpack kernel == generic");
        }
    }
}

TEST_CASE("davinci: pack/unpack kernels on a channel slice (one group of a wider tensor)") {
    std::mt19937 rng(12);
    for (int it = 0; it < 30; ++it) {
        Dims dims = random_dims(rng, 4);
        const dim_t c0 = random_c0(rng), extra_lo = dims[1] % 3, extra_hi = 2;
        Dims wide = dims;
        wide[1] = dims[1] + extra_lo + extra_hi;
        const Buf xw = random_buf(prod(wide), rng);
        // The slice, cut out by hand.
        Buf xs;
        const dim_t sp = prod(Dims(dims.begin() + 2, dims.end()));
        for (dim_t n = 0; n < dims[0]; ++n)
            for (dim_t c = 0; c < dims[1]; ++c)
                for (dim_t s = 0; s < sp; ++s)
                    xs.push_back(xw[((n * wide[1] + extra_lo + c) * sp + s)]);
        const IndexMap pack = dv::pack_activation(dims, c0);
        const Buf want = run(pack, xs);
        Buf got(want.size(), -1.0f);
        dv::pack_activation_kernel(dims, c0, xw.data(), got.data(), wide[1], extra_lo);
        check_equal_bufs(got, want, "pack of a slice");
        Buf back = xw;
        dv::unpack_activation_kernel(dims, c0, got.data(), back.data(), wide[1], extra_lo);
        check_equal_bufs(back, xw, "unpack into the slice writes it and nothing else");
    }
}

TEST_CASE("davinci: tnc5d equals pack . tnc . unpack on every element, kernel equal") {
    std::mt19937 rng(13);
    for (int it = 0; it < 60; ++it) {
        const Dims dims = random_dims(rng, 40);
        const dim_t c0 = random_c0(rng);
        INFO(text(dims) << " c0 " << c0);
        const IndexMap m = dv::tnc5d(dims, c0);
        const IndexMap def = convlab::compose(
            dv::pack_activation(swap01(dims), c0),
            convlab::compose(maps::tnc(dims, dv::unpack_activation(dims, c0).dst().names),
                             dv::unpack_activation(dims, c0), "u"),
            "tnc5d_def");
        check_same_map(m, def);
        CHECK(m.dst().dims[dims.size() == 5 ? 2 : 1] == cdiv(dims[0], c0));  // batch padded to C0
        Buf x = run(dv::pack_activation(dims, c0), random_buf(prod(dims), rng));
        dirty_padding(x, dv::activation_layout(dims, c0));
        const Buf y = run(m, x);
        CHECK(nonzero_padding(y, dv::activation_layout(swap01(dims), c0)) == 0);
        Buf k(y.size(), -1.0f);
        dv::tnc5d_kernel(dims, c0, x.data(), k.data());
        check_equal_bufs(k, y, "tnc5d kernel");
    }
    // docs/design.md's classic form: NC1HWC0 (N=20, C=3, 2, 2) -> (C, N/16 = 2, H, W, 16).
    // Its dims named by what they hold: channels outside, the batch blocked.
    CHECK(dv::tnc5d({20, 3, 2, 2}).dst().str() == "(c=3,n1=2,h=2,w=2,n0=16)");
    CHECK(dv::tnc5d({20, 3, 2, 2, 2}).dst().str() == "(c=3,d=2,n1=2,h=2,w=2,n0=16)");
    CHECK(dv::tnc5d({20, 3, 2}).dst().str() == "(c=3,n1=2,w=2,n0=16)");
}

TEST_CASE("davinci: tncf equals pack_weight . tnc . unpack on every element, kernel equal") {
    std::mt19937 rng(14);
    for (int it = 0; it < 60; ++it) {
        const Dims dims = random_dims(rng, 40);  // (A, B, spatial...): e.g. dY (N, K, out...)
        const dim_t c0 = random_c0(rng);
        INFO(text(dims) << " c0 " << c0);
        const IndexMap m = dv::tncf(dims, c0);
        const IndexMap u = dv::unpack_activation(dims, c0);
        const IndexMap def =
            convlab::compose(dv::pack_weight(swap01(dims), c0),
                             convlab::compose(maps::tnc(dims, u.dst().names), u, "u"), "tncf_def");
        check_same_map(m, def);
        Buf x = run(dv::pack_activation(dims, c0), random_buf(prod(dims), rng));
        dirty_padding(x, dv::activation_layout(dims, c0));
        const Buf y = run(m, x);
        CHECK(nonzero_padding(y, dv::weight_layout(swap01(dims), c0)) == 0);
        Buf k(y.size(), -1.0f);
        dv::tncf_kernel(dims, c0, x.data(), k.data());
        check_equal_bufs(k, y, "tncf kernel");
        // The documented offset formula (2-D): src[(((a*B1 + b/C0)*H + h)*W + w)*C0 + b%C0].
        if (dims.size() == 4) {
            const dim_t A = dims[0], B = dims[1], H = dims[2], W = dims[3], B1 = cdiv(B, c0),
                        A1 = cdiv(A, c0);
            dim_t bad = 0;
            for_each_coord(m.dst().dims, [&](const Dims& pc) {
                const dim_t w = pc[0] % W, h = pc[0] / W % H, a1 = pc[0] / (W * H);
                const dim_t b = pc[1] * 16 + pc[2], a = a1 * c0 + pc[3];
                const dim_t want = b < B && a < A
                                       ? (((a * B1 + b / c0) * H + h) * W + w) * c0 + b % c0
                                       : IndexMap::kZero;
                bad += m.map_coord(pc.data()) != want;
                (void)A1;
            });
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("davinci: fliprot_fz (direct formula) equals unpack . flip_rot . pack on every element") {
    std::mt19937 rng(15);
    int classic = 0;
    for (int it = 0; it < 80; ++it) {
        const Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = it % 4 == 0 ? 16 : random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const IndexMap m = dv::fliprot_fz(p, c0);
        check_same_map(m, dv::fliprot_fz_composed(p, c0));
        Buf w = run(dv::pack_weight(p.wei_dims(), c0), random_buf(prod(p.wei_dims()), rng));
        dirty_padding(w, dv::weight_layout(p.wei_dims(), c0));
        const Buf y = run(m, w);
        Dims fd{p.ic, p.ocg()};
        for (int i = 0; i < p.ndims; ++i) fd.push_back(p.kernel[i]);
        CHECK(nonzero_padding(y, dv::weight_layout(fd, c0)) == 0);
        Buf k(y.size(), -1.0f);
        dv::fliprot_fz_kernel(p, c0, w.data(), k.data());
        check_equal_bufs(k, y, "fliprot_fz kernel");
        // The classic form: swap the block indices, reverse the flattened kernel index,
        // transpose every fractal; holds for C0 = 16, one group, 1-D/2-D.
        if (c0 == 16 && p.groups == 1 && p.ndims <= 2) {
            ++classic;
            const dim_t S = p.kernel_spatial();
            dim_t bad = 0;
            for_each_coord(m.dst().dims, [&](const Dims& pc) {
                const dim_t kc1 = pc[0] / S, s = pc[0] % S, nb = pc[1], ni = pc[2], ci = pc[3];
                if (nb * 16 + ni >= p.ic || kc1 * 16 + ci >= p.oc) return;
                const dim_t want =
                    (((nb * S + S - 1 - s) * m.src().dims[1] + kc1) * 16 + ci) * 16 + ni;
                bad += m.map_coord(pc.data()) != want;
            });
            CHECK(bad == 0);
        }
    }
    CHECK(classic > 5);
    // With C0 = 8 the classic block swap is wrong: C = 16, K = 16, 1x1 kernel.
    Problem p;
    p.ic = 16;
    p.oc = 16;
    const IndexMap m = dv::fliprot_fz(p, 8);
    // dst (row kc1 = 1, nb = 0, ni = 0, ci = 0): c = 0, k = 8 -> src (row c1 = 0, n1 = 0, 8, 0).
    CHECK(m.map_coord(Dims{1, 0, 0, 0}.data()) ==
          dv::WeiGeom::of(p.wei_dims(), 8).offset(0, 0, 8, 0));
}

TEST_CASE("davinci: strided5d and pad5d equal pack . (strided | pad) . unpack, kernels equal") {
    std::mt19937 rng(16);
    for (int it = 0; it < 60; ++it) {
        const Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const Dims ydims = p.dst_dims();
        const IndexMap m = dv::strided5d(p, c0);
        const IndexMap s = maps::strided(p);
        check_same_map(m,
                       convlab::compose(dv::pack_activation(s.dst().dims, c0),
                                        convlab::compose(s, dv::unpack_activation(ydims, c0), "u"),
                                        "strided5d_def"));
        Buf y = run(dv::pack_activation(ydims, c0), random_buf(prod(ydims), rng));
        dirty_padding(y, dv::activation_layout(ydims, c0));
        const Buf z = run(m, y);
        CHECK(nonzero_padding(z, dv::activation_layout(s.dst().dims, c0)) == 0);
        Buf k(z.size(), -1.0f);
        dv::strided5d_kernel(p, c0, y.data(), k.data());
        check_equal_bufs(k, z, "strided5d kernel");
        // pad5d with the backward-data pads (negative ones crop), and random pads.
        for (int r = 0; r < 2; ++r) {
            const Dims zd = s.dst().dims;
            std::vector<dim_t> pb, pe;
            for (int i = 0; i < p.ndims; ++i) {
                const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
                pb.push_back(r ? dim_t(rng() % 5) - 2 : span - p.pad_begin[i]);
                pe.push_back(r ? dim_t(rng() % 5) - 2 : span - p.pad_end[i] + p.leftover(i));
                if (zd[2 + i] + pb.back() + pe.back() < 1) pe.back() = 1 - zd[2 + i] - pb.back();
            }
            const IndexMap pm = dv::pad5d(zd, pb, pe, c0);
            const IndexMap pl = maps::pad(zd, pb, pe);
            check_same_map(
                pm, convlab::compose(dv::pack_activation(pl.dst().dims, c0),
                                     convlab::compose(pl, dv::unpack_activation(zd, c0), "u"),
                                     "pad5d_def"));
            Buf zz = z;
            dirty_padding(zz, dv::activation_layout(zd, c0));
            const Buf q = run(pm, zz);
            CHECK(nonzero_padding(q, dv::activation_layout(pl.dst().dims, c0)) == 0);
            Buf kq(q.size(), -1.0f);
            dv::pad5d_kernel(zd, pb, pe, c0, zz.data(), kq.data());
            check_equal_bufs(kq, q, "pad5d kernel");
        }
    }
}

TEST_CASE("davinci: im2col_fractal equals im2col rearranged into fractals, kernel equal") {
    std::mt19937 rng(17);
    for (int it = 0; it < 60; ++it) {
        Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        // One group's problem (im2col_fractal works per group).
        Problem q = p;
        q.ic = p.icg();
        q.oc = p.ocg();
        q.groups = 1;
        const IndexMap m = dv::im2col_fractal(p, c0);
        CHECK(m.src().dims == dv::activation_physical(q.src_dims(), c0).dims);
        const IndexMap ref = maps::im2col(q);  // (n, g = 0, row = (c, taps), col = m)
        const Layout l = dv::activation_layout(q.src_dims(), c0);
        const dim_t S = p.kernel_spatial(), M = p.out_spatial(), C1 = cdiv(q.ic, c0);
        const dim_t KHW = S / (p.ndims == 3 ? p.kernel[0] : 1);
        dim_t bad = 0;
        Dims sc(static_cast<std::size_t>(ref.src().rank()));
        for_each_coord(m.dst().dims, [&](const Dims& pc) {
            const dim_t r = pc[1], mm = pc[2] * 16 + pc[3], ci = pc[4];
            const dim_t hw = r % KHW, c1 = r / KHW % C1, dd = r / KHW / C1;
            const dim_t c = c1 * c0 + ci, tap = dd * KHW + hw;
            dim_t want = IndexMap::kZero;
            if (mm < M && c < q.ic) {
                const dim_t s = ref.map(((pc[0] * 1 + 0) * q.ic * S + c * S + tap) * M + mm);
                if (s >= 0) {
                    ref.src().coord_of(s, sc);
                    want = l.offset(sc);
                }
            }
            bad += m.map_coord(pc.data()) != want;
        });
        CHECK(bad == 0);
        Buf x = run(dv::pack_activation(q.src_dims(), c0), random_buf(prod(q.src_dims()), rng));
        dirty_padding(x, l);
        const Buf a = run(m, x);
        const dim_t per = m.dst().numel() / p.mb;
        for (dim_t n = 0; n < p.mb; ++n) {
            Buf k(static_cast<std::size_t>(per), -1.0f);
            dv::im2col_fractal_kernel(p, c0, x.data(), n, k.data());
            check_equal_bufs(k, Buf(a.begin() + n * per, a.begin() + (n + 1) * per),
                             "im2col_fractal kernel");
        }
    }
}

TEST_CASE("davinci: FRACTAL_NZ is printable, enumerable and usable by the generic executor") {
    std::mt19937 rng(18);
    for (dim_t c0 : kC0s)
        for (dim_t M : {1, 15, 16, 33})
            for (dim_t K : {1, 7, 8, 19}) {
                INFO("M " << M << " K " << K << " c0 " << c0);
                const dim_t M1 = cdiv(M, 16), K1 = cdiv(K, c0);
                const Layout l = dv::fractal_nz(M, K, c0);
                // Printable: name, physical shape and strides.
                CHECK(l.str() == "FRACTAL_NZ (" + std::to_string(K1) + "," + std::to_string(M1) +
                                     ",16," + std::to_string(c0) + "):(" +
                                     std::to_string(M1 * 16 * c0) + "," + std::to_string(16 * c0) +
                                     "," + std::to_string(c0) + ",1)");
                const Shape logical{{M, K}, {"m", "k"}};
                const Shape phys = dv::fractal_nz_physical(M, K, c0);
                const IndexMap pack = dv::blocked_pack(l, logical, phys, "fractal_nz");
                const IndexMap unpack = dv::blocked_unpack(l, logical, phys, "unpack_fractal_nz");
                // Generic executor on buffers: the value of (m, k) lands at offset(m, k), every
                // other lane is a zero; unpack reads it back, ignoring dirty lanes.
                const Buf x = random_buf(M * K, rng);
                const Buf y = run(pack, x);
                dim_t bad = 0;
                for_each_coord({M, K},
                               [&](const Dims& c) { bad += y[l.offset(c)] != x[c[0] * K + c[1]]; });
                CHECK(bad == 0);
                CHECK(nonzero_padding(y, l) == 0);
                Buf dirty = y;
                dirty_padding(dirty, l);
                check_equal_bufs(run(unpack, dirty), x, "unpack(pack(x))");
                // Enumerable: the steps of every granularity write each destination exactly
                // once, with the pair the map gives.
                for (auto g : {convlab::Granularity::Element, convlab::Granularity::Line,
                               convlab::Granularity::Tile, convlab::Granularity::Whole}) {
                    std::vector<int> seen(static_cast<std::size_t>(phys.numel()), 0);
                    dim_t wrong = 0;
                    for (dim_t st = 0; st < pack.num_steps(g); ++st)
                        pack.for_each_in_step(g, st, [&](dim_t src, dim_t dst) {
                            ++seen[static_cast<std::size_t>(dst)];
                            wrong += pack.map(dst) != src;
                        });
                    CHECK(wrong == 0);
                    CHECK(std::count(seen.begin(), seen.end(), 1) == phys.numel());
                }
                CHECK(pack.num_steps(convlab::Granularity::Line) == phys.numel() / c0);
                // Generic executor on tensors: a row-major matrix into a FRACTAL_NZ tensor (fp32
                // and fp16), and back; storage lanes outside the matrix stay zero.
                Tensor a({M, K});
                std::copy(x.begin(), x.end(), a.f32());
                const IndexMap identity(
                    "identity", IndexMap::Kind::Gather, logical, logical,
                    [K](const dim_t* c) { return c[0] * K + c[1]; }, 1);
                for (DType dt : {DType::f32, DType::f16}) {
                    Tensor nz(l, dt);
                    identity.execute(a, nz);
                    dim_t lanes_bad = 0;
                    for (dim_t o = 0; o < l.storage_size(); ++o)
                        lanes_bad += nz.get_offset(o) != y[static_cast<std::size_t>(o)];
                    CHECK(lanes_bad == 0);
                    Tensor back({M, K});
                    identity.execute(nz, back);
                    convlab::test::check_equal(back, a, "FRACTAL_NZ tensor round trip");
                }
            }
}

TEST_CASE("davinci: the fractal column matrix of an image is the FRACTAL_NZ of im2col's matrix") {
    // im2col_fractal writes A (M = out positions, K = R*C0 columns (r, ci)) per image; it must be
    // exactly the FRACTAL_NZ packing of that dense matrix.
    std::mt19937 rng(19);
    for (int it = 0; it < 25; ++it) {
        Problem p = convlab::test::random_problem(rng);
        p.groups = 1;
        p.ic = 1 + dim_t(rng() % 20);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const Buf x =
            run(dv::pack_activation(p.src_dims(), c0), random_buf(prod(p.src_dims()), rng));
        const IndexMap m = dv::im2col_fractal(p, c0);
        const Buf a = run(m, x);
        const dim_t R = m.dst().dims[1], M = p.out_spatial(), K = R * c0;
        const dim_t per = m.dst().numel() / p.mb;
        for (dim_t n = 0; n < p.mb; ++n) {
            // Dense (M, K) from the fractals through the map's own function.
            Buf dense(static_cast<std::size_t>(M * K));
            for (dim_t mm = 0; mm < M; ++mm)
                for (dim_t k = 0; k < K; ++k) {
                    const Dims pc{n, k / c0, mm / 16, mm % 16, k % c0};
                    const dim_t s = m.map_coord(pc.data());
                    dense[static_cast<std::size_t>(mm * K + k)] =
                        s < 0 ? 0.0f : x[static_cast<std::size_t>(s)];
                }
            const Layout l = dv::fractal_nz(M, K, c0);
            const Buf nz = run(dv::blocked_pack(l, Shape{{M, K}, {"m", "k"}},
                                                dv::fractal_nz_physical(M, K, c0), "nz"),
                               dense);
            check_equal_bufs(Buf(a.begin() + n * per, a.begin() + (n + 1) * per), nz,
                             "image " + std::to_string(n));
        }
    }
}

TEST_CASE("davinci: kernel slices: im2col_fractal by M-block range, tncf into one group's rows") {
    std::mt19937 rng(20);
    for (int it = 0; it < 40; ++it) {
        Problem p = convlab::test::random_problem(rng);
        p.groups = 1;
        p.ic = 1 + dim_t(rng() % 20);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        Buf x = run(dv::pack_activation(p.src_dims(), c0), random_buf(prod(p.src_dims()), rng));
        dirty_padding(x, dv::activation_layout(p.src_dims(), c0));
        const IndexMap m = dv::im2col_fractal(p, c0);
        const Buf a = run(m, x);
        const dim_t R = m.dst().dims[1], M1 = m.dst().dims[2], frac = 16 * c0;
        for (dim_t n = 0; n < p.mb; ++n) {
            const dim_t b = dim_t(rng() % M1), e = b + 1 + dim_t(rng() % (M1 - b));
            Buf k(static_cast<std::size_t>(R * (e - b) * frac), -3.0f);
            dv::im2col_fractal_kernel(p, c0, x.data(), n, k.data(), b, e);
            dim_t bad = 0;
            for (dim_t r = 0; r < R; ++r)
                for (dim_t mb = b; mb < e; ++mb)
                    for (dim_t i = 0; i < frac; ++i)
                        bad += k[static_cast<std::size_t>((r * (e - b) + mb - b) * frac + i)] !=
                               a[static_cast<std::size_t>(((n * R + r) * M1 + mb) * frac + i)];
            CHECK(bad == 0);
        }
    }
    // tncf_kernel with dst_b: the rows [b_begin, b_begin + B) of a FRACTAL_Z of (dst_b, A, ...)
    // equal the generic tncf's, every other element is left untouched.
    for (int it = 0; it < 40; ++it) {
        const Dims dims = random_dims(rng, 20);  // (A, B, spatial...)
        const dim_t c0 = random_c0(rng), B = dims[1];
        const dim_t groups = 1 + dim_t(rng() % 3), g = dim_t(rng() % groups);
        const dim_t dst_b = B * groups, b_begin = g * B;
        INFO(text(dims) << " c0 " << c0 << " group " << g << " of " << groups);
        Buf x = run(dv::pack_activation(dims, c0), random_buf(prod(dims), rng));
        dirty_padding(x, dv::activation_layout(dims, c0));
        const Buf part = run(dv::tncf(dims, c0), x);  // FRACTAL_Z of (B, A, spatial...)
        Dims full = swap01(dims);
        full[0] = dst_b;
        const dv::WeiGeom fg = dv::WeiGeom::of(full, c0), pg = dv::WeiGeom::of(swap01(dims), c0);
        Buf k(static_cast<std::size_t>(fg.size()), -4.0f);
        dv::tncf_kernel(dims, c0, x.data(), k.data(), dst_b, b_begin);
        dim_t bad = 0, untouched = 0;
        for (dim_t r = 0; r < fg.rows(); ++r)
            for (dim_t o = 0; o < fg.n1 * 16; ++o)
                for (dim_t ci = 0; ci < c0; ++ci) {
                    const float got = k[static_cast<std::size_t>(fg.offset(r, o / 16, o % 16, ci))];
                    if (o >= b_begin && o < b_begin + B) {
                        const dim_t ob = o - b_begin;
                        bad += got !=
                               part[static_cast<std::size_t>(pg.offset(r, ob / 16, ob % 16, ci))];
                    } else {
                        untouched += got == -4.0f;
                    }
                }
        CHECK(bad == 0);
        CHECK(untouched == fg.rows() * (fg.n1 * 16 - B) * c0);
    }
}

TEST_CASE(
    "davinci: by_name pad5d and strided5d are the NCHW backward-data maps in NC1HWC0 (with r)") {
    // What the app and `convlab map --map pad5d` show must be the pad the algorithm runs:
    // pack . maps::pad_for_backward_data . unpack (begin (k-1)d - pb, end (k-1)d - pe + r).
    std::mt19937 rng(21);
    int with_r = 0;
    for (int it = 0; it < 60; ++it) {
        const Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const IndexMap s = maps::strided(p), pad = maps::pad_for_backward_data(p);
        check_same_map(
            dv::by_name("strided5d", p, c0),
            convlab::compose(dv::pack_activation(s.dst().dims, c0),
                             convlab::compose(s, dv::unpack_activation(p.dst_dims(), c0), "u"),
                             "strided5d_def"));
        check_same_map(
            dv::by_name("pad5d", p, c0),
            convlab::compose(dv::pack_activation(pad.dst().dims, c0),
                             convlab::compose(pad, dv::unpack_activation(s.dst().dims, c0), "u"),
                             "pad5d_def"));
        const dv::BackwardDataPads b = dv::backward_data_pads(p);
        CHECK(b.zdims == s.dst().dims);
        for (int i = 0; i < p.ndims; ++i) with_r += p.leftover(i) > 0;
    }
    CHECK(with_r > 10);
}

TEST_CASE("davinci: by_name gives every listed map and refuses unknown or mismatched names") {
    const Problem p2 = convlab::parse_descriptor("mb2ic5ih6oc20oh3kh3sh2ph1");
    const Problem p3 = convlab::parse_descriptor("mb1ic3id4ih4oc4od2kd3kh3");
    for (const auto& n : dv::map_names()) {
        const Problem& p = n == "fractal_z_3d" ? p3 : p2;
        const IndexMap m = dv::by_name(n, p, 8);
        CHECK(m.dst().numel() > 0);
        CHECK(!m.dump(4).empty());
    }
    CHECK(dv::by_name("nc1hwc0", p3).name() == "ndc1hwc0");
    CHECK(dv::by_name("fractal_z", p2).name() == "fractal_z");
    CHECK(dv::by_name("fractal_z_3d", p3).name() == "fractal_z_3d");
    CHECK_THROWS_AS(dv::by_name("fractal_z", p3), Error);
    CHECK_THROWS_AS(dv::by_name("fractal_z_3d", p2), Error);
    CHECK_THROWS_AS(dv::by_name("nope", p2), Error);
    CHECK_THROWS_AS(dv::by_name("tnc5d", p2, 0), Error);
    // A dump names the physical coordinates.
    const std::string d = dv::by_name("nc1hwc0", p2).dump(1);
    CHECK(d.find("dst(n=0,c1=0,h=0,w=0,c0=0) <- src(n=0,c=0,h=0,w=0)") != std::string::npos);
}

// [SECTION] step 3: fractal forward convolution

namespace {

using convlab::Profiler;

// The fractal forward through the tensor-level call, against direct.
void check_forward(const Problem& p, dim_t c0, std::mt19937& rng, bool with_bias) {
    using convlab::test::integer_tensor;
    const Tensor x = integer_tensor(p.src_dims(), rng);
    const Tensor w = integer_tensor(p.wei_dims(), rng);
    const Tensor b = integer_tensor({p.oc}, rng);
    const Tensor* bp = with_bias ? &b : nullptr;
    const Tensor ref = convlab::forward(p, x, w, bp, "direct");
    const Tensor got = dv::forward(p, x, w, bp, dv::Options{c0, DType::f32});
    convlab::test::check_equal(got, ref,
                               convlab::to_descriptor(p) + " fractal c0 " + std::to_string(c0));
}

}  // namespace

TEST_CASE("davinci: fractal forward equals direct exactly on 220 random 2-D and 3-D problems") {
    std::mt19937 rng(31);
    int nd[4] = {}, grouped = 0, ragged_c = 0;
    for (int t = 0; t < 220; ++t) {
        const Problem p = convlab::test::random_problem(rng, t % 2 == 0 ? 3 : 2);
        const dim_t c0 = t % 5 == 0 ? 8 : t % 7 == 0 ? 4 : 16;
        check_forward(p, c0, rng, t % 2 == 0);
        ++nd[p.ndims];
        grouped += p.groups > 1;
        ragged_c += p.icg() % c0 != 0;
    }
    CHECK(nd[2] >= 100);
    CHECK(nd[3] >= 100);
    CHECK(grouped >= 30);
    CHECK(ragged_c >= 150);
}

TEST_CASE("davinci: fractal forward on wider channels: C and K across blocks, N = 17, 3-D") {
    std::mt19937 rng(32);
    for (const char* desc :
         {"mb17ic20ih7oc33oh7kh3ph1", "g2mb3ic40ih9oc36oh5kh3sh2ph1", "mb2ic35ih6oc17oh6kh1",
          "mb1ic3ih23oc18oh12kh7sh2ph3", "mb2ic19id5ih5iw5oc18od5oh5ow5kd3kh3kw3pd1ph1pw1",
          "g3mb2ic24id4ih5iw4oc48od2oh3ow2kd2kh3kw3sd2sh2sw2dd1dh0dw1",
          "mb1ic17iw30oc20ow13kw5sw2dw1pw2", "g17mb2ic17ih8oc34oh8kh3ph1"})
        for (dim_t c0 : {16, 8}) {
            const Problem p = convlab::parse_descriptor(desc);
            check_forward(p, c0, rng, true);
        }
}

TEST_CASE("davinci: conv_fractal on packed tensors: dirty padding lanes in, zero lanes out") {
    std::mt19937 rng(33);
    for (int t = 0; t < 30; ++t) {
        Problem p = convlab::test::random_problem(rng);
        p.groups = 1;
        p.ic = 1 + dim_t(rng() % 20);
        p.oc = 1 + dim_t(rng() % 40);
        const dim_t c0 = t % 2 ? 8 : 16;
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        using convlab::test::integer_tensor;
        const Tensor x = integer_tensor(p.src_dims(), rng);
        const Tensor w = integer_tensor(p.wei_dims(), rng);
        const Tensor ref = convlab::forward(p, x, w, nullptr, "direct");
        const Buf xv(x.f32(), x.f32() + x.numel()), wv(w.f32(), w.f32() + w.numel());
        Buf x5 = run(dv::pack_activation(p.src_dims(), c0), xv);
        Buf wz = run(dv::pack_weight(p.wei_dims(), c0), wv);
        dirty_padding(x5, dv::activation_layout(p.src_dims(), c0), 77.0f);
        dirty_padding(wz, dv::weight_layout(p.wei_dims(), c0), 55.0f);
        const Layout yl = dv::activation_layout(p.dst_dims(), c0);
        Buf y5(static_cast<std::size_t>(yl.storage_size()), -9.0f);
        dv::conv_fractal(p, c0, x5.data(), wz.data(), nullptr, y5.data());
        CHECK(nonzero_padding(y5, yl) == 0);
        const Buf want =
            run(dv::pack_activation(p.dst_dims(), c0), Buf(ref.f32(), ref.f32() + ref.numel()));
        check_equal_bufs(y5, want, "conv_fractal == pack(direct)");
    }
    Problem g;
    g.groups = 2;
    g.ic = g.oc = 2;
    CHECK_THROWS_AS(dv::conv_fractal(g, 16, nullptr, nullptr, nullptr, nullptr), Error);
}

TEST_CASE("davinci: fractal forward records pack, im2col, fractal_gemm and unpack spans") {
    std::mt19937 rng(34);
    const Problem p = convlab::parse_descriptor("g2mb2ic8ih9oc8oh9kh3ph1");
    const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
    const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
    Profiler prof;
    (void)dv::forward(p, x, w, nullptr, {}, &prof);
    for (const char* s : {"pack_src", "pack_wei", "im2col", "fractal_gemm", "unpack"}) {
        INFO(s);
        CHECK(prof.seconds(s) > 0);
    }
    // Per group and image: im2col and fractal_gemm run mb * groups times.
    for (const auto& e : prof.entries())
        if (e.name == "im2col" || e.name == "fractal_gemm") CHECK(e.count == 4);
    // The AlgoFn form (C0 = 16) gives the same.
    Tensor y(p.dst_dims());
    convlab::ConvArgs a;
    a.src = x.f32();
    a.wei = w.f32();
    a.dst = y.f32();
    dv::forward_fractal(p, a, nullptr);
    convlab::test::check_equal(y, convlab::forward(p, x, w, nullptr, "direct"), "AlgoFn form");
    // Bad input.
    CHECK_THROWS_AS(dv::forward(p, w, x, nullptr), Error);
    CHECK_THROWS_AS(dv::forward(p, x, w, nullptr, dv::Options{0, DType::f32}), Error);
}

TEST_CASE(
    "davinci: fractal forward on real data: fp32 within 1e-5, fp16/bf16 storage within 1e-2") {
    std::mt19937 rng(35);
    for (int t = 0; t < 30; ++t) {
        const Problem p = convlab::test::random_problem(rng);
        const Tensor x = convlab::test::real_tensor(p.src_dims(), rng);
        const Tensor w = convlab::test::real_tensor(p.wei_dims(), rng);
        const Tensor ref = convlab::forward(p, x, w, nullptr, "direct");
        const double len = double(p.icg() * p.kernel_spatial());
        const std::string d = convlab::to_descriptor(p);
        convlab::test::check_close(dv::forward(p, x, w, nullptr, {8, DType::f32}), ref, 1e-5,
                                   1e-5 * len, d + " fp32");
        for (DType t16 : {DType::f16, DType::bf16})
            convlab::test::check_close(dv::forward(p, x, w, nullptr, {16, t16}), ref, 1e-2,
                                       (t16 == DType::bf16 ? 1e-2 : 2e-3) * len,
                                       d + " " + convlab::dtype_name(t16));
    }
}

// [SECTION] step 4: backward passes in fractal form

namespace {

struct Grads {
    Tensor dx, dw;
};

// Both fractal backward passes against direct, exactly, on integer data.
void check_backward(const Problem& p, dim_t c0, std::mt19937& rng) {
    using convlab::test::integer_tensor;
    const Tensor x = integer_tensor(p.src_dims(), rng);
    const Tensor w = integer_tensor(p.wei_dims(), rng);
    const Tensor dy = integer_tensor(p.dst_dims(), rng);
    const std::string d = convlab::to_descriptor(p) + " c0 " + std::to_string(c0);
    const dv::Options o{c0, DType::f32};
    convlab::test::check_equal(dv::backward_data(p, dy, w, o),
                               convlab::backward_data(p, dy, w, "direct"), d + " bwd_data");
    const Tensor dw_ref = convlab::backward_weight(p, x, dy, "direct");
    convlab::test::check_equal(dv::backward_weight(p, x, dy, o), dw_ref, d + " bwd_weight");
    // The FRACTAL_Z(_3D) fp32 result is the packed reference, padding lanes zero.
    const Tensor fz = dv::backward_weight_fz(p, x, dy, o);
    CHECK(fz.layout() == dv::weight_layout(p.wei_dims(), c0));
    CHECK(fz.dtype() == DType::f32);
    const Buf got(fz.f32(), fz.f32() + fz.layout().storage_size());
    const Buf want =
        run(dv::pack_weight(p.wei_dims(), c0), Buf(dw_ref.f32(), dw_ref.f32() + dw_ref.numel()));
    check_equal_bufs(got, want, d + " bwd_weight FRACTAL_Z");
}

}  // namespace

TEST_CASE(
    "davinci: fractal_via_forward backward data and weight equal direct on 220 2-D and 3-D "
    "problems") {
    std::mt19937 rng(41);
    bool r = false, r_d1 = false, dil = false, grp = false, dw = false;
    int nd[4] = {};
    for (int t = 0; t < 220; ++t) {
        const Problem p = convlab::test::random_problem(rng, t % 2 == 0 ? 3 : 2);
        const dim_t c0 = t % 4 == 0 ? 8 : t % 9 == 0 ? 4 : 16;
        check_backward(p, c0, rng);
        for (int i = 0; i < p.ndims; ++i) {
            r |= p.leftover(i) > 0;
            r_d1 |= p.leftover(i) > 0 && p.dilation[i] == 1;
            dil |= p.dilation[i] > 1;
        }
        grp |= p.groups > 1 && p.groups < p.ic;
        dw |= p.groups == p.ic && p.ic > 1;
        ++nd[p.ndims];
    }
    CHECK((r && r_d1 && dil && grp && dw));
    CHECK(nd[2] >= 100);
    CHECK(nd[3] >= 100);
}

TEST_CASE("davinci: fractal backward passes on wider channels, N = 17 / 20 (TNC pads the batch)") {
    std::mt19937 rng(42);
    for (const char* desc :
         {"mb17ic20ih7oc33oh4kh3sh2ph1", "mb20ic18ih6oc17oh6kh3ph1dh1",
          "g2mb3ic40ih9oc36oh5kh3sh2ph1",
          "mb2ic19id5ih5iw5oc18od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",
          "mb18ic3id4ih5iw6oc5od4oh5ow6kd1kh3kw3ph1pw1", "g17mb2ic17ih8oc34oh8kh3ph1"})
        for (dim_t c0 : {16, 8}) check_backward(convlab::parse_descriptor(desc), c0, rng);
}

TEST_CASE("davinci regression: leftover rows r (ResNet-50 conv1, 1x1 stride 2, r with d = 1)") {
    // Removing r from the pads (bwd data: end (k-1)d - pe + r; bwd weight: pe - r) breaks these.
    std::mt19937 rng(43);
    const Problem conv1 = convlab::parse_descriptor("mb1ic3ih224oc64oh112kh7sh2ph3");
    REQUIRE(conv1.leftover(0) == 1);
    const Tensor dy = convlab::test::integer_tensor(conv1.dst_dims(), rng);
    const Tensor w = convlab::test::integer_tensor(conv1.wei_dims(), rng);
    Profiler prof;
    const Tensor dx = dv::backward_data(conv1, dy, w, {}, &prof);
    convlab::test::check_equal(dx, convlab::backward_data(conv1, dy, w, "col2im"),
                               "conv1 bwd_data fractal vs col2im");
    dim_t nz_row = 0, nz_col = 0;  // the last input row and column receive gradient
    for (dim_t c = 0; c < 3; ++c)
        for (dim_t i = 0; i < 224; ++i) {
            nz_row += dx.f32()[(c * 224 + 223) * 224 + i] != 0.0f;
            nz_col += dx.f32()[(c * 224 + i) * 224 + 223] != 0.0f;
        }
    CHECK(nz_row > 3 * 224 / 2);
    CHECK(nz_col > 3 * 224 / 2);
    // FlipRot(W) is packed from OIHW straight into the products' B (span fliprot): no separate
    // pack_wei or transpose_b.
    for (const char* op :
         {"pack_dst", "zero-insert", "pad", "fliprot", "im2col", "fractal_gemm", "unpack"})
        CHECK_MESSAGE(prof.seconds(op) > 0, op);
    for (const char* op : {"pack_wei", "transpose_b"}) CHECK_MESSAGE(prof.seconds(op) == 0, op);
    // Backward weight where r changes the size of the internal problem (d = 1, r = 1).
    for (const char* desc :
         {"mb2ic5ih10oc7oh4kh3sh2", "mb2ic16ih14oc8oh7kh1sh2", "mb1ic3ih24oc5oh12kh7sh2ph3"}) {
        const Problem p = convlab::parse_descriptor(desc);
        REQUIRE(p.leftover(0) == 1);
        const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
        const Tensor y = convlab::test::integer_tensor(p.dst_dims(), rng);
        Profiler pw;
        convlab::test::check_equal(dv::backward_weight(p, x, y, {}, &pw),
                                   convlab::backward_weight(p, x, y, "direct"), desc);
        for (const char* op : {"pack_src", "tnc", "tncf", "fractal_gemm", "unpack"})
            CHECK_MESSAGE(pw.seconds(op) > 0, op);
        check_backward(p, 8, rng);
    }
}

TEST_CASE(
    "davinci: fp16/bf16 storage: exact on small integers (220 2-D and 3-D problems), fp32 weight "
    "gradient") {
    std::mt19937 rng(44);
    auto rounded = [](const Tensor& t, DType d) {
        Tensor r = t;
        for (dim_t i = 0; i < r.numel(); ++i)
            r.f32()[i] = d == DType::f16
                             ? convlab::half_to_float(convlab::float_to_half(r.f32()[i]))
                             : convlab::bf16_to_float(convlab::float_to_bf16(r.f32()[i]));
        return r;
    };
    int nd[4] = {};
    for (int t = 0; t < 220; ++t) {
        const Problem p = convlab::test::random_problem(rng, t % 2 == 0 ? 3 : 2);
        ++nd[p.ndims];
        using convlab::test::integer_tensor;
        const Tensor x = integer_tensor(p.src_dims(), rng);
        const Tensor w = integer_tensor(p.wei_dims(), rng);
        const Tensor dy = integer_tensor(p.dst_dims(), rng);
        const dim_t c0 = t % 3 == 0 ? 8 : 16;
        const std::string d = convlab::to_descriptor(p) + " c0 " + std::to_string(c0);
        for (DType st : {DType::f16, DType::bf16}) {
            const dv::Options o{c0, st};
            // Integers in [-3, 3] are exact in fp16/bf16 and their sums exact in fp32: the
            // results equal direct's rounded to the storage type (dX, Y) or direct's (dW, fp32).
            convlab::test::check_equal(dv::forward(p, x, w, nullptr, o),
                                       rounded(convlab::forward(p, x, w, nullptr, "direct"), st),
                                       d + " fwd");
            convlab::test::check_equal(dv::backward_data(p, dy, w, o),
                                       rounded(convlab::backward_data(p, dy, w, "direct"), st),
                                       d + " bwd_data");
            convlab::test::check_equal(dv::backward_weight(p, x, dy, o),
                                       convlab::backward_weight(p, x, dy, "direct"),
                                       d + " bwd_weight");
        }
        if (t % 10 != 0) continue;
        // fp16 input tensors are read as fp32.
        Tensor x16(p.src_dims(), DType::f16);
        std::vector<dim_t> c(x.dims().size());
        for (dim_t i = 0; i < x.numel(); ++i) {
            x.coord_of(i, c);
            x16.set(c, x.f32()[i]);
        }
        convlab::test::check_equal(dv::backward_weight(p, x16, dy),
                                   convlab::backward_weight(p, x, dy, "direct"), d + " fp16 input");
    }
    CHECK(nd[2] >= 100);
    CHECK(nd[3] >= 100);
    // Real data: within tolerance.
    for (int t = 0; t < 10; ++t) {
        const Problem p = convlab::test::random_problem(rng);
        const Tensor dy = convlab::test::real_tensor(p.dst_dims(), rng);
        const Tensor x = convlab::test::real_tensor(p.src_dims(), rng);
        const Tensor w = convlab::test::real_tensor(p.wei_dims(), rng);
        const double len_d = double(p.ocg() * p.kernel_spatial()),
                     len_w = double(p.mb * p.out_spatial());
        const std::string d = convlab::to_descriptor(p);
        for (DType st : {DType::f32, DType::f16, DType::bf16}) {
            const double tol = st == DType::f32 ? 1e-5 : st == DType::f16 ? 2e-3 : 1e-2;
            convlab::test::check_close(dv::backward_data(p, dy, w, {8, st}),
                                       convlab::backward_data(p, dy, w, "direct"), tol, tol * len_d,
                                       d);
            convlab::test::check_close(dv::backward_weight(p, x, dy, {8, st}),
                                       convlab::backward_weight(p, x, dy, "direct"), tol,
                                       tol * len_w, d);
        }
    }
}

TEST_CASE("davinci (long): ResNet-50's 20 layers, batch 1, fractal backward passes" *
          doctest::skip()) {
    // ctest runs it as davinci_long_resnet50_fractal (label long; tests/CMakeLists.txt); by hand:
    // convlab_tests -tc="davinci (long)*" --no-skip. Integer data: exact against col2im and
    // im2col_gemm (themselves checked against direct elsewhere).
    const char* layers[] = {"mb1ic3ih224oc64oh112kh7sh2ph3",   "mb1ic64ih56oc256oh56kh1ph0",
                            "mb1ic64ih56oc64oh56kh1ph0",       "mb1ic64ih56oc64oh56kh3ph1",
                            "mb1ic256ih56oc64oh56kh1ph0",      "mb1ic256ih56oc512oh28kh1sh2ph0",
                            "mb1ic256ih56oc128oh28kh1sh2ph0",  "mb1ic128ih28oc128oh28kh3ph1",
                            "mb1ic128ih28oc512oh28kh1ph0",     "mb1ic512ih28oc128oh28kh1ph0",
                            "mb1ic512ih28oc1024oh14kh1sh2ph0", "mb1ic512ih28oc256oh14kh1sh2ph0",
                            "mb1ic256ih14oc256oh14kh3ph1",     "mb1ic256ih14oc1024oh14kh1ph0",
                            "mb1ic1024ih14oc256oh14kh1ph0",    "mb1ic1024ih14oc2048oh7kh1sh2ph0",
                            "mb1ic1024ih14oc512oh7kh1sh2ph0",  "mb1ic512ih7oc512oh7kh3ph1",
                            "mb1ic512ih7oc2048oh7kh1ph0",      "mb1ic2048ih7oc512oh7kh1ph0"};
    std::mt19937 rng(45);
    int runs = 0;
    for (const char* const& desc : layers) {
        const Problem p = convlab::parse_descriptor(desc);
        using convlab::test::integer_tensor;
        const Tensor x = integer_tensor(p.src_dims(), rng, 2);
        const Tensor w = integer_tensor(p.wei_dims(), rng, 2);
        const Tensor dy = integer_tensor(p.dst_dims(), rng, 2);
        // C0 = 16 on every layer; C0 = 8 (CANN's fp32 value) on every third one, conv1 included.
        for (dim_t c0 : {16, 8}) {
            if (c0 == 8 && (&desc - layers) % 3 != 0) continue;
            const std::string d = std::string(desc) + " c0 " + std::to_string(c0);
            convlab::test::check_equal(dv::backward_data(p, dy, w, {c0, DType::f32}),
                                       convlab::backward_data(p, dy, w, "col2im"), d + " bwd_data");
            convlab::test::check_equal(dv::backward_weight(p, x, dy, {c0, DType::f32}),
                                       convlab::backward_weight(p, x, dy, "im2col_gemm"),
                                       d + " bwd_weight");
            ++runs;
        }
    }
    CHECK(runs == 20 + 7);
}
