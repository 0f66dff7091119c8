// Layout and Tensor: every offset of small shapes against independently written formulas
// (strided, permuted, and the blocked DaVinci formats of docs/design.md), padding lanes, fp16/bf16
// conversions (exhaustive over all 65536 bit patterns), element access, copies and the size limit.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "convlab/layout.hpp"
#include "convlab/tensor.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Error;
using convlab::InnerBlock;
using convlab::Layout;
using convlab::Tensor;

using convlab::test::for_each_coord;

namespace {

dim_t ceil_div(dim_t a, dim_t b) {
    return (a + b - 1) / b;
}

dim_t prod(const std::vector<dim_t>& v) {
    dim_t p = 1;
    for (dim_t x : v) p *= x;
    return p;
}

// Logical row-major index, written out as a Horner sum.
dim_t row_major_index(const std::vector<dim_t>& dims, const std::vector<dim_t>& c) {
    dim_t l = 0;
    for (std::size_t i = 0; i < dims.size(); ++i) l = l * dims[i] + c[i];
    return l;
}

std::string join(const std::vector<dim_t>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
}

std::string coord_text(const std::vector<dim_t>& c) {
    return "(" + join(c) + ")";
}

// Checks offset(c) == formula(c) on every coordinate, that no two coordinates share an offset,
// that every offset lies in [0, storage_size), and returns which storage positions were reached.
template <class Formula>
std::vector<bool> check_offsets(const Layout& l, Formula&& formula, const std::string& what) {
    INFO(what << " " << l.str());
    const dim_t storage = l.storage_size();
    std::vector<bool> hit(static_cast<std::size_t>(std::max<dim_t>(storage, 0)), false);
    dim_t bad_formula = 0, bad_range = 0, collisions = 0, count = 0;
    std::string first_bad;
    for_each_coord(l.dims(), [&](const std::vector<dim_t>& c) {
        ++count;
        const dim_t got = l.offset(std::span<const dim_t>(c));
        const dim_t want = formula(c);
        if (got != want) {
            if (!bad_formula++)
                first_bad = "offset" + coord_text(c) + " = " + std::to_string(got) + ", formula " +
                            std::to_string(want);
            return;
        }
        if (got < 0 || got >= storage) {
            ++bad_range;
            return;
        }
        if (hit[static_cast<std::size_t>(got)]) ++collisions;
        hit[static_cast<std::size_t>(got)] = true;
    });
    INFO(first_bad);
    CHECK(count == l.numel());
    CHECK(bad_formula == 0);
    CHECK(bad_range == 0);
    CHECK(collisions == 0);
    return hit;
}

// The value stored at logical coordinate c in the padding-lane tests (exact in fp16 and bf16).
float lane_value(dim_t linear) {
    return static_cast<float>(1 + linear % 200);
}

// The DaVinci formats of docs/design.md, built as data.
Layout nc1hwc0(dim_t n, dim_t c, dim_t h, dim_t w, dim_t c0) {
    return Layout::blocked({n, c, h, w}, {0, 1, 2, 3}, {{1, c0}}, "NC1HWC0");
}
Layout fractal_z(dim_t o, dim_t i, dim_t h, dim_t w, dim_t c0) {
    return Layout::blocked({o, i, h, w}, {1, 2, 3, 0}, {{0, 16}, {1, c0}}, "FRACTAL_Z");
}

}  // namespace

// [SECTION] strided layouts

TEST_CASE("layout: row_major offsets equal the C-order formula on every coordinate") {
    const std::vector<std::vector<dim_t>> shapes = {{},
                                                    {7},
                                                    {3, 4},
                                                    {2, 3, 4, 5},
                                                    {1, 4, 1, 3},
                                                    {2, 1, 3, 2, 2},
                                                    {2, 2, 1, 2, 1, 2, 2, 1, 3},
                                                    {5, 1},
                                                    {1}};
    for (const auto& dims : shapes) {
        const Layout l = Layout::row_major(dims);
        INFO("dims " << coord_text(dims));
        CHECK(l.name() == "row_major");
        CHECK(l.dims() == dims);
        CHECK(l.rank() == static_cast<int>(dims.size()));
        CHECK(l.numel() == prod(dims));
        CHECK(l.storage_size() == prod(dims));
        CHECK(l.is_row_major());
        CHECK_FALSE(l.is_blocked());
        std::vector<dim_t> strides(dims.size());
        dim_t s = 1;
        for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
            strides[i] = s;
            s *= dims[i];
        }
        CHECK(l.outer_strides() == strides);
        check_offsets(
            l, [&](const std::vector<dim_t>& c) { return row_major_index(dims, c); }, "row_major");
    }
    CHECK(Layout::row_major({2, 3}, "X").name() == "X");
    // A dim of size zero: nothing to store.
    CHECK(Layout::row_major({3, 0, 2}).storage_size() == 0);
    CHECK(Layout::row_major({3, 0, 2}).numel() == 0);
    CHECK_THROWS_AS(Layout::row_major({2, -1}), Error);
}

TEST_CASE("layout: ncx names and str()") {
    CHECK(Layout::ncx({2, 3, 4, 5}).str() == "NCHW (2,3,4,5):(60,20,5,1)");
    CHECK(Layout::ncx({2, 3, 7}).str() == "NCW (2,3,7):(21,7,1)");
    CHECK(Layout::ncx({2, 3, 2, 4, 5}).str() == "NCDHW (2,3,2,4,5):(120,40,20,5,1)");
    CHECK(Layout::ncx({2, 3, 4, 5}).name() == "NCHW");
    CHECK(Layout::ncx({2, 3, 4, 5}).is_row_major());
    CHECK(Layout::row_major({3, 4}).str() == "row_major (3,4):(4,1)");
    // ncx is row-major: the same offsets.
    const Layout l = Layout::ncx({2, 3, 2, 4, 5});
    check_offsets(
        l, [&](const std::vector<dim_t>& c) { return row_major_index(l.dims(), c); }, "NCDHW");
}

TEST_CASE("layout: nxc (NWC, NHWC, NDHWC) offsets, names and str()") {
    {
        const dim_t N = 2, C = 3, H = 4, W = 5;
        const Layout l = Layout::nxc({N, C, H, W});
        CHECK(l.name() == "NHWC");
        CHECK(l.str() == "NHWC (2,4,5,3):(60,15,3,1)");
        CHECK(l.storage_size() == 120);
        CHECK_FALSE(l.is_row_major());
        CHECK_FALSE(l.is_blocked());
        const auto hit = check_offsets(
            l,
            [&](const std::vector<dim_t>& c) { return ((c[0] * H + c[2]) * W + c[3]) * C + c[1]; },
            "NHWC");
        CHECK(std::count(hit.begin(), hit.end(), true) == 120);  // dense: a bijection
        CHECK(l.offset({1, 2, 3, 4}) == 119);
        CHECK(l.offset({0, 1, 0, 0}) == 1);
        CHECK(l.offset({0, 0, 0, 1}) == 3);
        CHECK(l.offset({0, 0, 1, 0}) == 15);
    }
    {
        const dim_t N = 2, C = 3, W = 7;
        const Layout l = Layout::nxc({N, C, W});
        CHECK(l.name() == "NWC");
        CHECK(l.str() == "NWC (2,7,3):(21,3,1)");
        check_offsets(
            l, [&](const std::vector<dim_t>& c) { return (c[0] * W + c[2]) * C + c[1]; }, "NWC");
    }
    {
        const dim_t N = 2, C = 3, D = 2, H = 4, W = 5;
        const Layout l = Layout::nxc({N, C, D, H, W});
        CHECK(l.name() == "NDHWC");
        CHECK(l.str() == "NDHWC (2,2,4,5,3):(120,60,15,3,1)");
        check_offsets(
            l,
            [&](const std::vector<dim_t>& c) {
                return (((c[0] * D + c[2]) * H + c[3]) * W + c[4]) * C + c[1];
            },
            "NDHWC");
    }
    // With one channel NHWC stores exactly what NCHW stores.
    CHECK(Layout::nxc({2, 1, 4, 5}).is_row_major());
    CHECK_THROWS_AS(Layout::nxc({4}), Error);
}

TEST_CASE("layout: permuted offsets for every storage order of a 4-D shape") {
    const std::vector<dim_t> dims{2, 3, 4, 5};
    std::vector<int> order{0, 1, 2, 3};
    int orders = 0;
    do {
        ++orders;
        const Layout l = Layout::permuted(dims, order, "P");
        std::vector<dim_t> stride(4);
        dim_t s = 1;
        for (int k = 3; k >= 0; --k) {
            stride[order[k]] = s;
            s *= dims[order[k]];
        }
        INFO("order " << order[0] << order[1] << order[2] << order[3]);
        CHECK(l.outer_strides() == stride);
        CHECK(l.storage_size() == 120);
        const bool identity = order == std::vector<int>{0, 1, 2, 3};
        CHECK(l.is_row_major() == identity);
        std::vector<dim_t> pd, ps;
        for (int k = 0; k < 4; ++k) {
            pd.push_back(dims[order[k]]);
            ps.push_back(stride[order[k]]);
        }
        CHECK(l.str() == "P (" + join(pd) + "):(" + join(ps) + ")");
        const auto hit = check_offsets(
            l,
            [&](const std::vector<dim_t>& c) {
                dim_t off = 0;
                for (int i = 0; i < 4; ++i) off += c[i] * stride[i];
                return off;
            },
            "permuted");
        CHECK(std::count(hit.begin(), hit.end(), true) == 120);
    } while (std::next_permutation(order.begin(), order.end()));
    CHECK(orders == 24);
    // Swapping two dims of size 1 does not change the storage.
    CHECK(Layout::permuted({2, 1, 1, 3}, {0, 2, 1, 3}, "Q").is_row_major());
    CHECK_THROWS_AS(Layout::permuted(dims, {0, 1, 2}, "bad"), Error);
    CHECK_THROWS_AS(Layout::permuted(dims, {0, 1, 1, 3}, "bad"), Error);
    CHECK_THROWS_AS(Layout::permuted(dims, {0, 1, 2, 4}, "bad"), Error);
    CHECK_THROWS_AS(Layout::permuted(dims, {0, 1, 2, -1}, "bad"), Error);
}

TEST_CASE("layout: strided with explicit strides") {
    {
        const Layout l = Layout::strided({2, 3, 4}, {100, 7, 1}, "S");
        CHECK(l.storage_size() == 100 + 2 * 7 + 3 + 1);
        CHECK_FALSE(l.is_row_major());
        CHECK(l.str() == "S (2,3,4):(100,7,1)");
        check_offsets(
            l, [](const std::vector<dim_t>& c) { return c[0] * 100 + c[1] * 7 + c[2]; }, "S");
    }
    {
        // Rows padded to 8 elements.
        const Layout l = Layout::strided({3, 5}, {8, 1}, "R");
        CHECK(l.storage_size() == 21);
        CHECK_FALSE(l.is_row_major());
        const auto hit = check_offsets(
            l, [](const std::vector<dim_t>& c) { return c[0] * 8 + c[1]; }, "R");
        CHECK(std::count(hit.begin(), hit.end(), true) == 15);
    }
    {
        const Layout l = Layout::strided({2, 3, 4}, {12, 4, 1}, "D");
        CHECK(l.is_row_major());
        CHECK(l.storage_size() == 24);
    }
    {
        // Column-major: printed outermost (largest stride) first.
        const Layout l = Layout::strided({3, 4}, {1, 3}, "F");
        CHECK(l.str() == "F (4,3):(3,1)");
        CHECK_FALSE(l.is_row_major());
        CHECK(l.storage_size() == 12);
        const auto hit = check_offsets(
            l, [](const std::vector<dim_t>& c) { return c[0] + 3 * c[1]; }, "F");
        CHECK(std::count(hit.begin(), hit.end(), true) == 12);
    }
    CHECK(Layout::strided({0, 3}, {3, 1}, "E").storage_size() == 0);
    CHECK_THROWS_AS(Layout::strided({2, 3}, {1}, "bad"), Error);
    CHECK_THROWS_AS(Layout::strided({2, -3}, {3, 1}, "bad"), Error);
}

// [SECTION] blocked layouts (DaVinci formats as data)

TEST_CASE("layout: NC1HWC0 offsets equal docs/design.md's formula on every coordinate") {
    CHECK(nc1hwc0(2, 3, 4, 5, 16).str() == "NC1HWC0 (2,1,4,5,16):(320,320,80,16,1)");
    for (dim_t C0 : {16, 8})
        for (dim_t C : {1, 3, 8, 16, 17, 20, 35})
            for (auto [H, W] : {std::pair<dim_t, dim_t>{3, 4}, {1, 1}, {2, 5}}) {
                const dim_t N = 2, C1 = ceil_div(C, C0);
                const Layout l = nc1hwc0(N, C, H, W, C0);
                INFO("C0=" << C0 << " C=" << C << " H=" << H << " W=" << W);
                CHECK(l.is_blocked());
                CHECK_FALSE(l.is_row_major());
                CHECK(l.numel() == N * C * H * W);
                CHECK(l.storage_size() == N * C1 * H * W * C0);
                CHECK(l.str() == "NC1HWC0 (" + join({N, C1, H, W, C0}) + "):(" +
                                     join({C1 * H * W * C0, H * W * C0, W * C0, C0, 1}) + ")");
                const auto hit = check_offsets(
                    l,
                    [&](const std::vector<dim_t>& c) {
                        const dim_t n = c[0], ch = c[1], h = c[2], w = c[3];
                        return (((n * C1 + ch / C0) * H + h) * W + w) * C0 + ch % C0;
                    },
                    "NC1HWC0");
                // Reached storage = exactly the lanes c1*C0 + c0 < C.
                dim_t wrong = 0;
                for (dim_t o = 0; o < l.storage_size(); ++o) {
                    const dim_t c0 = o % C0, c1 = o / (C0 * W * H) % C1;
                    if (hit[static_cast<std::size_t>(o)] != (c1 * C0 + c0 < C)) ++wrong;
                }
                CHECK(wrong == 0);
            }
}

TEST_CASE("layout: NDC1HWC0 offsets (D outside C1)") {
    for (dim_t C0 : {16, 8})
        for (dim_t C : {3, 17}) {
            const dim_t N = 2, D = 3, H = 2, W = 3, C1 = ceil_div(C, C0);
            const Layout l =
                Layout::blocked({N, C, D, H, W}, {0, 2, 1, 3, 4}, {{1, C0}}, "NDC1HWC0");
            INFO("C0=" << C0 << " C=" << C);
            CHECK(l.storage_size() == N * D * C1 * H * W * C0);
            CHECK(l.str() ==
                  "NDC1HWC0 (" + join({N, D, C1, H, W, C0}) + "):(" +
                      join({D * C1 * H * W * C0, C1 * H * W * C0, H * W * C0, W * C0, C0, 1}) +
                      ")");
            check_offsets(
                l,
                [&](const std::vector<dim_t>& c) {
                    const dim_t n = c[0], ch = c[1], d = c[2], h = c[3], w = c[4];
                    return ((((n * D + d) * C1 + ch / C0) * H + h) * W + w) * C0 + ch % C0;
                },
                "NDC1HWC0");
        }
}

TEST_CASE("layout: FRACTAL_Z over weights (O, I, H, W) equals docs/design.md's formula") {
    for (dim_t C0 : {16, 8})
        for (dim_t O : {1, 5, 16, 17, 33})
            for (dim_t I : {3, 8, 16, 17})
                for (auto [H, W] : {std::pair<dim_t, dim_t>{1, 1}, {3, 2}}) {
                    // docs/design.md's names: N = Cout = O, C = Cin = I.
                    const dim_t N = O, C = I, N1 = ceil_div(N, 16), C1 = ceil_div(C, C0);
                    const Layout l = fractal_z(O, I, H, W, C0);
                    INFO("C0=" << C0 << " O=" << O << " I=" << I << " H=" << H << " W=" << W);
                    CHECK(l.storage_size() == C1 * H * W * N1 * 16 * C0);
                    CHECK(l.str() == "FRACTAL_Z (" + join({C1, H, W, N1, 16, C0}) + "):(" +
                                         join({H * W * N1 * 16 * C0, W * N1 * 16 * C0, N1 * 16 * C0,
                                               16 * C0, C0, 1}) +
                                         ")");
                    const auto hit = check_offsets(
                        l,
                        [&](const std::vector<dim_t>& c) {
                            const dim_t n = c[0], ch = c[1], h = c[2], w = c[3];
                            return ((((ch / C0) * H + h) * W + w) * N1 + n / 16) * 16 * C0 +
                                   (n % 16) * C0 + ch % C0;
                        },
                        "FRACTAL_Z");
                    // Reached storage = exactly the lanes with n < N and c < C.
                    dim_t wrong = 0;
                    for (dim_t o = 0; o < l.storage_size(); ++o) {
                        const dim_t c0 = o % C0, n0 = o / C0 % 16, n1 = o / (16 * C0) % N1;
                        const dim_t c1 = o / (16 * C0 * N1 * W * H);
                        const bool valid = n1 * 16 + n0 < N && c1 * C0 + c0 < C;
                        if (hit[static_cast<std::size_t>(o)] != valid) ++wrong;
                    }
                    CHECK(wrong == 0);
                }
}

TEST_CASE("layout: FRACTAL_Z_3D and FRACTAL_NZ") {
    for (dim_t C0 : {16, 8}) {
        {
            const dim_t N = 17, C = 5, D = 2, H = 3, W = 2;
            const dim_t N1 = ceil_div(N, 16), C1 = ceil_div(C, C0);
            const Layout l = Layout::blocked({N, C, D, H, W}, {2, 1, 3, 4, 0}, {{0, 16}, {1, C0}},
                                             "FRACTAL_Z_3D");
            INFO("FRACTAL_Z_3D C0=" << C0);
            CHECK(l.storage_size() == D * C1 * H * W * N1 * 16 * C0);
            check_offsets(
                l,
                [&](const std::vector<dim_t>& c) {
                    const dim_t n = c[0], ch = c[1], d = c[2], h = c[3], w = c[4];
                    return (((((d * C1 + ch / C0) * H + h) * W + w) * N1 + n / 16) * 16 + n % 16) *
                               C0 +
                           ch % C0;
                },
                "FRACTAL_Z_3D");
        }
        {
            // An M x K matrix: (K1, M1, 16, C0).
            const dim_t M = 21, K = 19, M1 = ceil_div(M, 16), K1 = ceil_div(K, C0);
            const Layout l = Layout::blocked({M, K}, {1, 0}, {{0, 16}, {1, C0}}, "FRACTAL_NZ");
            INFO("FRACTAL_NZ C0=" << C0);
            CHECK(l.storage_size() == K1 * M1 * 16 * C0);
            CHECK(l.str() == "FRACTAL_NZ (" + join({K1, M1, 16, C0}) + "):(" +
                                 join({M1 * 16 * C0, 16 * C0, C0, 1}) + ")");
            check_offsets(
                l,
                [&](const std::vector<dim_t>& c) {
                    const dim_t m = c[0], k = c[1];
                    return ((k / C0 * M1 + m / 16) * 16 + m % 16) * C0 + k % C0;
                },
                "FRACTAL_NZ");
        }
    }
}

TEST_CASE("layout: a dim blocked twice (oneDNN's OIhw4i16o4i)") {
    const dim_t O = 20, I = 19, H = 2, W = 3;
    const dim_t O1 = ceil_div(O, 16), I1 = ceil_div(I, 16);
    const Layout l =
        Layout::blocked({O, I, H, W}, {0, 1, 2, 3}, {{1, 4}, {0, 16}, {1, 4}}, "OIhw4i16o4i");
    CHECK(l.storage_size() == O1 * I1 * H * W * 256);
    CHECK(l.str() == "OIhw4i16o4i (" + join({O1, I1, H, W, 4, 16, 4}) + "):(" +
                         join({I1 * H * W * 256, H * W * 256, W * 256, 256, 64, 4, 1}) + ")");
    check_offsets(
        l,
        [&](const std::vector<dim_t>& c) {
            const dim_t o = c[0], i = c[1], h = c[2], w = c[3];
            return (((o / 16 * I1 + i / 16) * H + h) * W + w) * 256 + (i / 4 % 4) * 64 +
                   (o % 16) * 4 + i % 4;
        },
        "OIhw4i16o4i");
}

TEST_CASE("layout: blocked layouts of rank > 8") {
    const std::vector<dim_t> dims{2, 1, 2, 1, 2, 1, 2, 3, 2};
    const Layout l = Layout::blocked(dims, {0, 1, 2, 3, 4, 5, 6, 7, 8}, {{7, 2}}, "R9");
    std::vector<dim_t> outer = dims;
    outer[7] = 2;  // ceil(3 / 2)
    CHECK(l.storage_size() == prod(outer) * 2);
    check_offsets(
        l,
        [&](const std::vector<dim_t>& c) {
            std::vector<dim_t> oc = c;
            oc[7] = c[7] / 2;
            return row_major_index(outer, oc) * 2 + c[7] % 2;
        },
        "rank 9");
}

TEST_CASE("layout: blocked descriptors are validated") {
    CHECK_THROWS_AS(Layout::blocked({2, 3}, {0}, {}, "bad"), Error);
    CHECK_THROWS_AS(Layout::blocked({2, 3}, {0, 0}, {}, "bad"), Error);
    CHECK_THROWS_AS(Layout::blocked({2, 3}, {0, 1}, {{2, 4}}, "bad"), Error);
    CHECK_THROWS_AS(Layout::blocked({2, 3}, {0, 1}, {{-1, 4}}, "bad"), Error);
    CHECK_THROWS_AS(Layout::blocked({2, 3}, {0, 1}, {{1, 0}}, "bad"), Error);
    // A block of size 1 changes nothing but the printed form.
    const Layout l = Layout::blocked({2, 3}, {0, 1}, {{1, 1}}, "B1");
    CHECK(l.storage_size() == 6);
    check_offsets(
        l, [](const std::vector<dim_t>& c) { return c[0] * 3 + c[1]; }, "block of 1");
    CHECK(nc1hwc0(2, 3, 4, 5, 16) == nc1hwc0(2, 3, 4, 5, 16));
    CHECK_FALSE(nc1hwc0(2, 3, 4, 5, 16) == nc1hwc0(2, 3, 4, 5, 8));
}

TEST_CASE("tensor: blocked tensors hold zeros in every padding lane") {
    const std::vector<Layout> layouts = {
        nc1hwc0(2, 20, 3, 4, 16),  nc1hwc0(2, 20, 3, 4, 8),
        nc1hwc0(1, 3, 2, 2, 16),   fractal_z(17, 3, 3, 2, 16),
        fractal_z(5, 19, 2, 2, 8), Layout::strided({3, 5}, {8, 1}, "padded rows")};
    for (const Layout& l : layouts)
        for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
            INFO(l.str() << " " << std::string(convlab::dtype_name(dt)));
            Tensor t(l, dt);
            CHECK(t.layout() == l);
            CHECK(t.dims() == l.dims());
            CHECK(t.bytes() ==
                  static_cast<std::size_t>(l.storage_size()) * convlab::dtype_size(dt));
            CHECK(reinterpret_cast<std::uintptr_t>(t.raw()) % convlab::kTensorAlignment == 0);
            // Freshly allocated storage is zero everywhere.
            const auto* bytes = static_cast<const unsigned char*>(t.raw());
            CHECK(std::all_of(bytes, bytes + t.bytes(), [](unsigned char b) { return b == 0; }));
            std::vector<bool> reached(static_cast<std::size_t>(l.storage_size()), false);
            dim_t linear = 0;
            for_each_coord(l.dims(), [&](const std::vector<dim_t>& c) {
                t.set(c, lane_value(linear++));
                reached[static_cast<std::size_t>(l.offset(std::span<const dim_t>(c)))] = true;
            });
            dim_t bad_value = 0;
            linear = 0;
            for_each_coord(l.dims(), [&](const std::vector<dim_t>& c) {
                if (t.get(c) != lane_value(linear++)) ++bad_value;
            });
            CHECK(bad_value == 0);
            dim_t nonzero_pad = 0, pad_lanes = 0;
            for (dim_t o = 0; o < l.storage_size(); ++o) {
                if (reached[static_cast<std::size_t>(o)]) continue;
                ++pad_lanes;
                if (t.get_offset(o) != 0.0f || std::signbit(t.get_offset(o))) ++nonzero_pad;
            }
            CHECK(nonzero_pad == 0);
            CHECK(pad_lanes == l.storage_size() - l.numel());
            // fill() writes logical elements only; copies keep the zeros.
            t.fill(7.0f);
            Tensor copy = t;
            nonzero_pad = 0;
            dim_t sevens = 0;
            for (dim_t o = 0; o < l.storage_size(); ++o) {
                const float v = copy.get_offset(o);
                if (reached[static_cast<std::size_t>(o)])
                    sevens += v == 7.0f;
                else
                    nonzero_pad += v != 0.0f;
            }
            CHECK(nonzero_pad == 0);
            CHECK(sevens == l.numel());
        }
}

// [SECTION] fp16 / bf16

namespace {

// IEEE binary16 value of a bit pattern (finite), written from the definition.
double half_value(std::uint16_t h) {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

bool half_is_nan(std::uint16_t h) {
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}
bool bf16_is_nan(std::uint16_t b) {
    return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
}

// The nearest of two neighbouring representable values, ties to the even pattern.
std::uint16_t nearest_even(double x, double lo, std::uint16_t lo_bits, double hi,
                           std::uint16_t hi_bits) {
    const double dlo = x - lo, dhi = hi - x;
    if (dlo < dhi) return lo_bits;
    if (dhi < dlo) return hi_bits;
    return (lo_bits & 1) ? hi_bits : lo_bits;
}

}  // namespace

TEST_CASE("fp16: half_to_float and float_to_half on all 65536 bit patterns") {
    dim_t bad_value = 0, bad_round_trip = 0, bad_nan = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float f = convlab::half_to_float(h);
        const bool neg = (h & 0x8000) != 0;
        if ((h & 0x7c00) == 0x7c00) {
            if (h & 0x3ff) {
                // NaN: stays NaN with its sign both ways (payload details aside).
                const std::uint16_t back = convlab::float_to_half(f);
                if (!std::isnan(f) || std::signbit(f) != neg || !half_is_nan(back) ||
                    ((back & 0x8000) != 0) != neg)
                    ++bad_nan;
            } else {
                if (!std::isinf(f) || std::signbit(f) != neg) ++bad_value;
                if (convlab::float_to_half(f) != h) ++bad_round_trip;
            }
            continue;
        }
        if (static_cast<double>(f) != half_value(h) || std::signbit(f) != neg) {
            if (!bad_value) INFO("pattern " << i);
            ++bad_value;
        }
        if (convlab::float_to_half(f) != h) ++bad_round_trip;
    }
    CHECK(bad_value == 0);
    CHECK(bad_round_trip == 0);
    CHECK(bad_nan == 0);
}

TEST_CASE("fp16: float_to_half rounds to nearest even at every midpoint between halves") {
    dim_t bad_mid = 0, bad_below = 0, bad_above = 0, bad_sign = 0;
    for (std::uint16_t h = 0; h < 0x7c00; ++h) {
        // Between h and the next pattern (0x7c00 = inf acts as 65536 for rounding).
        const double lo = half_value(h);
        const double hi = h + 1 == 0x7c00 ? 65536.0 : half_value(static_cast<std::uint16_t>(h + 1));
        const auto mid = static_cast<float>((lo + hi) / 2);  // exact: 12 significant bits
        REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);
        const auto up = static_cast<std::uint16_t>(h + 1);
        const std::uint16_t even = (h & 1) ? up : h;
        if (convlab::float_to_half(mid) != even) ++bad_mid;
        if (convlab::float_to_half(std::nextafter(mid, 0.0f)) != h) ++bad_below;
        if (convlab::float_to_half(std::nextafter(mid, 1e30f)) != up) ++bad_above;
        if (convlab::float_to_half(-mid) != (even | 0x8000)) ++bad_sign;
    }
    CHECK(bad_mid == 0);
    CHECK(bad_below == 0);
    CHECK(bad_above == 0);
    CHECK(bad_sign == 0);
}

TEST_CASE("fp16: chosen values") {
    using convlab::float_to_half;
    const float two_m11 = std::ldexp(1.0f, -11), two_m24 = std::ldexp(1.0f, -24);
    CHECK(float_to_half(1.0f) == 0x3c00);
    CHECK(float_to_half(1.0f + two_m11) == 0x3c00);      // tie -> even (down)
    CHECK(float_to_half(1.0f + 3 * two_m11) == 0x3c02);  // tie -> even (up)
    CHECK(float_to_half(1.0f + two_m11 + std::ldexp(1.0f, -20)) == 0x3c01);
    CHECK(float_to_half(65504.0f) == 0x7bff);
    CHECK(float_to_half(65519.0f) == 0x7bff);
    CHECK(float_to_half(65520.0f) == 0x7c00);  // tie between max and 2^16 -> inf
    CHECK(float_to_half(-65520.0f) == 0xfc00);
    CHECK(float_to_half(1e6f) == 0x7c00);
    CHECK(float_to_half(std::numeric_limits<float>::max()) == 0x7c00);
    CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7c00);
    CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
    CHECK(float_to_half(0.0f) == 0x0000);
    CHECK(float_to_half(-0.0f) == 0x8000);
    // Subnormals: 2^-24 is the smallest; 2^-25 is a tie with 0 and goes to 0.
    CHECK(float_to_half(two_m24) == 0x0001);
    CHECK(float_to_half(two_m24 / 2) == 0x0000);
    CHECK(float_to_half(-two_m24 / 2) == 0x8000);
    CHECK(float_to_half(std::nextafter(two_m24 / 2, 1.0f)) == 0x0001);
    CHECK(float_to_half(3 * two_m24 / 2) == 0x0002);    // tie between 1 and 2 -> 2
    CHECK(float_to_half(5 * two_m24 / 2) == 0x0002);    // tie between 2 and 3 -> 2
    CHECK(float_to_half(1023.5f * two_m24) == 0x0400);  // largest subnormal rounds to min normal
    CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);
    CHECK(float_to_half(1e-10f) == 0x0000);
    CHECK(float_to_half(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(float_to_half(0.1f) == 0x2e66);
    CHECK(float_to_half(-2.5f) == 0xc100);
    CHECK(half_is_nan(float_to_half(std::numeric_limits<float>::quiet_NaN())));
    CHECK(half_is_nan(float_to_half(std::bit_cast<float>(0x7f800001u))));  // signalling NaN
    CHECK(half_is_nan(float_to_half(std::bit_cast<float>(0xff800001u))));
    CHECK(convlab::half_to_float(0x3555) == 0.333251953125f);
    CHECK(convlab::half_to_float(0x0001) == two_m24);
    CHECK(convlab::half_to_float(0x7bff) == 65504.0f);
}

TEST_CASE("fp16: float_to_half on random floats equals a search of the sorted halves") {
    std::vector<float> halves;  // every non-negative finite half, increasing
    for (std::uint16_t h = 0; h < 0x7c00; ++h) halves.push_back(convlab::half_to_float(h));
    REQUIRE(std::is_sorted(halves.begin(), halves.end()));
    std::mt19937 rng(20240611);
    std::uniform_int_distribution<std::uint32_t> mant(0, 0x7fffff), sign(0, 1);
    std::uniform_int_distribution<std::uint32_t> expo(95, 143);  // 2^-32 .. 2^16
    dim_t bad = 0;
    std::string first;
    for (int i = 0; i < 200000; ++i) {
        const std::uint32_t bits = (sign(rng) << 31) | (expo(rng) << 23) | mant(rng);
        const float x = std::bit_cast<float>(bits);
        const double a = std::abs(static_cast<double>(x));
        std::uint16_t want;
        if (a >= 65520.0) {
            want = 0x7c00;
        } else {
            const auto it = std::lower_bound(halves.begin(), halves.end(), static_cast<float>(a));
            const auto hi = static_cast<std::uint16_t>(it - halves.begin());
            if (it == halves.end()) {
                want = nearest_even(a, halves.back(), 0x7bff, 65536.0, 0x7c00);
            } else if (*it == static_cast<float>(a) || hi == 0) {
                want = hi;
            } else {
                const auto lo = static_cast<std::uint16_t>(hi - 1);
                want = nearest_even(a, halves[lo], lo, halves[hi], hi);
            }
        }
        if (x < 0) want = static_cast<std::uint16_t>(want | 0x8000);
        const std::uint16_t got = convlab::float_to_half(x);
        if (got != want) {
            if (!bad++) first = std::to_string(x) + " bits " + std::to_string(bits);
        }
    }
    INFO("first mismatch: " << first);
    CHECK(bad == 0);
}

TEST_CASE("bf16: all 65536 bit patterns, and round to nearest even") {
    using convlab::bf16_to_float;
    using convlab::float_to_bf16;
    dim_t bad_value = 0, bad_round_trip = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto b = static_cast<std::uint16_t>(i);
        const float f = bf16_to_float(b);
        if (std::bit_cast<std::uint32_t>(f) != i << 16) ++bad_value;
        const std::uint16_t back = float_to_bf16(f);
        if (bf16_is_nan(b)) {
            if (!bf16_is_nan(back) || (back & 0x8000) != (b & 0x8000)) ++bad_round_trip;
        } else if (back != b) {
            ++bad_round_trip;
        }
    }
    CHECK(bad_value == 0);
    CHECK(bad_round_trip == 0);

    CHECK(float_to_bf16(1.0f) == 0x3f80);
    CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);      // tie -> even (down)
    CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // tie -> even (up)
    CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);
    CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
    CHECK(float_to_bf16(std::bit_cast<float>(0x7f7f8000u)) == 0x7f80);  // tie at the top -> inf
    CHECK(float_to_bf16(std::bit_cast<float>(0x7f7f7fffu)) == 0x7f7f);
    CHECK(float_to_bf16(-0.0f) == 0x8000);
    CHECK(float_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
    CHECK(bf16_is_nan(float_to_bf16(std::numeric_limits<float>::quiet_NaN())));
    CHECK(bf16_is_nan(float_to_bf16(std::bit_cast<float>(0x7f800001u))));  // not inf
    CHECK(float_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(float_to_bf16(std::bit_cast<float>(0x00008000u)) == 0x0000);  // tie -> even
    CHECK(float_to_bf16(std::bit_cast<float>(0x00018000u)) == 0x0002);

    // Random finite floats against the nearer of the two neighbouring bf16 values.
    std::mt19937 rng(7);
    dim_t bad = 0;
    for (int i = 0; i < 200000; ++i) {
        std::uint32_t bits = static_cast<std::uint32_t>(rng());
        if ((bits & 0x7f800000u) == 0x7f800000u) bits &= 0xbfffffffu;  // keep it finite
        const float x = std::bit_cast<float>(bits);
        const auto lo = static_cast<std::uint16_t>((bits >> 16) & 0x7fffu);
        const double lo_v = std::abs(static_cast<double>(bf16_to_float(lo)));
        const double hi_v =
            lo == 0x7f7f ? std::ldexp(1.0, 128) : static_cast<double>(bf16_to_float(lo + 1u));
        std::uint16_t want = nearest_even(std::abs(static_cast<double>(x)), lo_v, lo, hi_v,
                                          static_cast<std::uint16_t>(lo + 1));
        want = static_cast<std::uint16_t>(want | (bits >> 16 & 0x8000u));
        if (float_to_bf16(x) != want) ++bad;
    }
    CHECK(bad == 0);
}

// [SECTION] Tensor

TEST_CASE("tensor: set/get through every layout and dtype") {
    const std::vector<dim_t> dims{2, 3, 4, 5};
    const std::vector<Layout> layouts = {Layout::ncx(dims),
                                         Layout::nxc(dims),
                                         Layout::permuted(dims, {3, 1, 0, 2}, "WCNH"),
                                         Layout::strided(dims, {300, 90, 20, 3}, "gappy"),
                                         nc1hwc0(2, 3, 4, 5, 8),
                                         fractal_z(2, 3, 4, 5, 16)};
    for (const Layout& l : layouts)
        for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
            INFO(l.str() << " " << std::string(convlab::dtype_name(dt)));
            Tensor t(l, dt);
            CHECK(t.dtype() == dt);
            CHECK(t.numel() == 120);
            CHECK(t.rank() == 4);
            auto value = [&](const std::vector<dim_t>& c) {
                return static_cast<float>(row_major_index(dims, c)) - 60.0f;  // exact in bf16
            };
            for_each_coord(dims, [&](const std::vector<dim_t>& c) { t.set(c, value(c)); });
            dim_t bad = 0, bad_offset = 0, bad_bits = 0;
            for_each_coord(dims, [&](const std::vector<dim_t>& c) {
                const dim_t off = l.offset(std::span<const dim_t>(c));
                if (t.get(c) != value(c)) ++bad;
                if (t.get_offset(off) != value(c)) ++bad_offset;
                // The storage holds the dtype's encoding at that offset.
                const auto* base = static_cast<const unsigned char*>(t.raw());
                if (dt == DType::f32) {
                    float v;
                    std::memcpy(&v, base + off * 4, 4);
                    bad_bits += v != value(c);
                } else {
                    std::uint16_t h;
                    std::memcpy(&h, base + off * 2, 2);
                    const std::uint16_t want = dt == DType::f16 ? convlab::float_to_half(value(c))
                                                                : convlab::float_to_bf16(value(c));
                    bad_bits += h != want;
                }
            });
            CHECK(bad == 0);
            CHECK(bad_offset == 0);
            CHECK(bad_bits == 0);
            // set_offset is the same as set.
            t.set_offset(l.offset({1, 2, 3, 4}), 42.0f);
            CHECK(t.get(std::vector<dim_t>{1, 2, 3, 4}) == 42.0f);
        }
    // Values that do not fit round to nearest even on the way in.
    Tensor h(std::vector<dim_t>{2}, DType::f16);
    const std::vector<dim_t> c0{0}, c1{1};
    h.set(c0, 1.0f + std::ldexp(1.0f, -11));
    h.set(c1, 0.1f);
    CHECK(h.get(c0) == 1.0f);
    CHECK(h.get(c1) == convlab::half_to_float(convlab::float_to_half(0.1f)));
    Tensor b(std::vector<dim_t>{1}, DType::bf16);
    b.set(c0, 1.0f + 3 * std::ldexp(1.0f, -8));
    CHECK(b.get(c0) == 1.0f + std::ldexp(1.0f, -6));
}

TEST_CASE("tensor: copies are deep, moves transfer") {
    Tensor a(nc1hwc0(1, 5, 2, 3, 8), DType::f16);
    for_each_coord(a.dims(), [&](const std::vector<dim_t>& c) {
        a.set(c, static_cast<float>(row_major_index(a.dims(), c) + 1));
    });
    Tensor b = a;
    CHECK(b.layout() == a.layout());
    CHECK(b.dtype() == DType::f16);
    CHECK(b.bytes() == a.bytes());
    CHECK(b.raw() != a.raw());
    CHECK(std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
    const std::vector<dim_t> c{0, 4, 1, 2};
    a.set(c, -3.0f);
    CHECK(b.get(c) == 30.0f);
    CHECK(a.get(c) == -3.0f);

    Tensor d(std::vector<dim_t>{3});
    d = b;  // copy assignment replaces layout, dtype and storage
    CHECK(d.layout() == b.layout());
    CHECK(d.dtype() == DType::f16);
    CHECK(std::memcmp(d.raw(), b.raw(), b.bytes()) == 0);
    Tensor& self = d;
    d = self;  // self-assignment keeps the data
    CHECK(d.get(c) == 30.0f);

    const void* storage = b.raw();
    Tensor m = std::move(b);
    CHECK(m.raw() == storage);
    CHECK(m.get(c) == 30.0f);
    Tensor n;
    n = std::move(m);
    CHECK(n.raw() == storage);
    CHECK(n.get(c) == 30.0f);

    Tensor e;
    CHECK(e.empty());
    CHECK(e.bytes() == 0);
    Tensor e2 = e;
    CHECK(e2.empty());
    Tensor z(std::vector<dim_t>{0, 3});
    CHECK(z.empty());
    CHECK(z.numel() == 0);
}

TEST_CASE("tensor: dtype names, f32 access, coord_of, shape_str, fill") {
    CHECK(convlab::dtype_size(DType::f32) == 4);
    CHECK(convlab::dtype_size(DType::f16) == 2);
    CHECK(convlab::dtype_size(DType::bf16) == 2);
    CHECK(std::string(convlab::dtype_name(DType::f32)) == "fp32");
    CHECK(std::string(convlab::dtype_name(DType::f16)) == "fp16");
    CHECK(std::string(convlab::dtype_name(DType::bf16)) == "bf16");
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
        CHECK(convlab::parse_dtype(convlab::dtype_name(dt)) == dt);
    CHECK_THROWS_AS(convlab::parse_dtype("fp64"), Error);
    CHECK_THROWS_AS(convlab::parse_dtype(""), Error);

    Tensor h(std::vector<dim_t>{2, 2}, DType::f16);
    CHECK_THROWS_AS(h.f32(), Error);
    const Tensor& ch = h;
    CHECK_THROWS_AS(ch.f32(), Error);

    Tensor t(std::vector<dim_t>{2, 3, 4});
    CHECK(t.shape_str() == "(2,3,4)");
    CHECK(convlab::dims_str(t.dims()) == "(2,3,4)");
    CHECK(convlab::product(t.dims()) == 24);
    std::vector<dim_t> c(3);
    for (dim_t i = 0; i < 24; ++i) {
        t.coord_of(i, c);
        CHECK(c == std::vector<dim_t>{i / 12, i / 4 % 3, i % 4});
    }
    t.fill(2.5f);
    CHECK(std::all_of(t.f32(), t.f32() + 24, [](float v) { return v == 2.5f; }));
    Tensor n(Layout::nxc({1, 2, 2, 2}), DType::bf16);
    n.fill(-1.0f);
    for (dim_t o = 0; o < 8; ++o) CHECK(n.get_offset(o) == -1.0f);
}

TEST_CASE("tensor: storage larger than kMaxTensorBytes is refused with an Error") {
    using convlab::kMaxTensorBytes;
    const auto max_f32 = static_cast<dim_t>(kMaxTensorBytes / 4);
    const auto max_f16 = static_cast<dim_t>(kMaxTensorBytes / 2);
    // One element over the limit, per dtype (the check must come before any allocation).
    CHECK_THROWS_AS(Tensor(std::vector<dim_t>{max_f32 + 1}), Error);
    CHECK_THROWS_AS(Tensor(std::vector<dim_t>{max_f16 + 1}, DType::f16), Error);
    CHECK_THROWS_AS(Tensor(std::vector<dim_t>{max_f16 + 1}, DType::bf16), Error);
    CHECK_THROWS_AS(Tensor(std::vector<dim_t>{dim_t{1} << 20, dim_t{1} << 20, 16}), Error);
    // The padded storage counts, not the logical size: C = 1 in blocks of 16.
    CHECK_THROWS_AS(Tensor(nc1hwc0(1, 1, dim_t{1} << 16, dim_t{1} << 16, 16), DType::f32), Error);
    try {
        Tensor t(std::vector<dim_t>{dim_t{1} << 20, dim_t{1} << 20});
        FAIL("no Error thrown");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("limit") != std::string::npos);
    }
}

TEST_CASE("tensor: shapes whose element count overflows 64 bits are refused, not wrapped") {
    // 2^32 * 2^32 = 2^64 elements: wrapped to 0 this would make an empty tensor of a huge shape.
    CHECK_THROWS_AS(Tensor(std::vector<dim_t>{dim_t{1} << 32, dim_t{1} << 32}), Error);
    CHECK_THROWS_AS(Tensor(std::vector<dim_t>{dim_t{1} << 31, dim_t{1} << 31, 4}), Error);
    CHECK_THROWS_AS(
        Tensor(nc1hwc0(dim_t{1} << 30, 1, dim_t{1} << 15, dim_t{1} << 15, 16), DType::f32), Error);
}

TEST_CASE("tensor: storage is aligned to kTensorAlignment for every dtype, size and layout") {
    // Owning storage is aligned because the fast kernels rely on it for vector loads.
    int checked = 0;
    for (convlab::DType dt : {convlab::DType::f32, convlab::DType::f16, convlab::DType::bf16})
        for (convlab::dim_t n : {1, 3, 17, 1000, 4099}) {
            std::vector<convlab::Tensor> live;  // several alive at once: not one reused block
            for (int i = 0; i < 4; ++i)
                live.emplace_back(std::vector<convlab::dim_t>{n, i + 1}, dt);
            live.emplace_back(
                convlab::Layout::blocked({2, n, 3, 3}, {0, 1, 2, 3}, {{1, 16}}, "NC1HWC0"), dt);
            for (const convlab::Tensor& t : live) {
                CHECK(reinterpret_cast<std::uintptr_t>(t.raw()) % convlab::kTensorAlignment == 0);
                ++checked;
            }
            const convlab::Tensor copy = live.back();
            CHECK(reinterpret_cast<std::uintptr_t>(copy.raw()) % convlab::kTensorAlignment == 0);
        }
    CHECK(checked == 3 * 5 * 5);
    CHECK(convlab::kTensorAlignment >= 64);
}
