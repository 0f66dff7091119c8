// Problem: derived sizes, validation messages, and the benchdnn-style descriptor.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "convlab/problem.hpp"

using convlab::dim_t;
using convlab::Error;
using convlab::parse_descriptor;
using convlab::Problem;
using convlab::to_descriptor;

namespace {

// A 2-D problem with the same geometry on both axes.
Problem square(dim_t mb, dim_t ic, dim_t oc, dim_t in, dim_t k, dim_t s, dim_t pb, dim_t pe,
               dim_t dil = 1, dim_t groups = 1) {
    Problem p;
    p.ndims = 2;
    p.mb = mb;
    p.ic = ic;
    p.oc = oc;
    p.groups = groups;
    for (int i = 0; i < 2; ++i) {
        p.in[i] = in;
        p.kernel[i] = k;
        p.stride[i] = s;
        p.dilation[i] = dil;
        p.pad_begin[i] = pb;
        p.pad_end[i] = pe;
    }
    return p;
}

// The message of the Error that parse_descriptor throws ("" when it does not throw).
std::string parse_error(const std::string& desc) {
    try {
        parse_descriptor(desc);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// A random valid problem: 1-D/2-D/3-D, groups, dilation, asymmetric padding, names.
Problem random_problem(std::mt19937& rng) {
    auto pick = [&rng](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    static const char* const names[] = {
        "",           "",       "conv", "resnet_50:conv1", "a\"quoted\"one", "back\\slash",
        "with space", "n\"x\"", "_"};
    for (;;) {
        Problem p;
        p.ndims = static_cast<int>(pick(1, 3));
        p.groups = pick(1, 3) == 1 ? pick(2, 4) : 1;
        p.mb = pick(1, 4);
        p.ic = p.groups * pick(1, 4);
        p.oc = p.groups * pick(1, 4);
        p.name = names[pick(0, 8)];
        for (int i = 0; i < p.ndims; ++i) {
            if (i > 0 && pick(0, 2) == 0) {  // often a copy of the previous axis (square shapes)
                p.in[i] = p.in[i - 1];
                p.kernel[i] = p.kernel[i - 1];
                p.stride[i] = p.stride[i - 1];
                p.dilation[i] = p.dilation[i - 1];
                p.pad_begin[i] = p.pad_begin[i - 1];
                p.pad_end[i] = p.pad_end[i - 1];
                continue;
            }
            p.in[i] = pick(1, 20);
            p.kernel[i] = pick(1, 5);
            p.stride[i] = pick(0, 1) ? 1 : pick(1, 4);
            p.dilation[i] = pick(0, 2) ? 1 : pick(1, 3);
            p.pad_begin[i] = pick(0, 1) ? 0 : pick(0, 4);
            p.pad_end[i] = pick(0, 1) ? p.pad_begin[i] : pick(0, 5);
        }
        if (p.validate().empty()) return p;
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Derived sizes

TEST_CASE("problem: ResNet-50 conv1 has output 112 and one leftover row") {
    const Problem p = square(1, 3, 64, 224, 7, 2, 3, 3);
    CHECK(p.validate() == "");
    for (int i = 0; i < 2; ++i) {
        CHECK(p.kernel_extent(i) == 7);
        CHECK(p.padded_in(i) == 230);
        CHECK(p.out(i) == 112);
        CHECK(p.leftover(i) == 1);
    }
    CHECK(p.out_spatial() == 112 * 112);
    CHECK(p.in_spatial() == 224 * 224);
    CHECK(p.kernel_spatial() == 49);
    CHECK(p.flops() == doctest::Approx(2.0 * 64 * 3 * 112 * 112 * 49));
}

TEST_CASE("problem: 1x1 stride 2 on an even input leaves one row") {
    const Problem p = square(1, 256, 512, 56, 1, 2, 0, 0);
    CHECK(p.out(0) == 28);
    CHECK(p.leftover(0) == 1);
}

TEST_CASE("problem: dilation widens the kernel") {
    Problem p = square(1, 1, 1, 9, 3, 1, 0, 0, 3);
    CHECK(p.kernel_extent(0) == 7);
    CHECK(p.out(0) == 3);
    CHECK(p.leftover(1) == 0);
}

TEST_CASE("problem: flops of a small case computed by hand") {
    // N 2, K 4, C 3, out 4x4, kernel 3x3: 2 * 2 * 4 * 3 * 16 * 9 = 6912.
    const Problem p = square(2, 3, 4, 7, 3, 2, 1, 1);
    CHECK(p.out(0) == 4);
    CHECK(p.flops() == 6912.0);
    // Grouped: C/groups input channels per output channel: 2 * 1 * 6 * (4/2) * 25 * 9 = 5400.
    const Problem g = square(1, 4, 6, 5, 3, 1, 1, 1, 1, 2);
    CHECK(g.icg() == 2);
    CHECK(g.ocg() == 3);
    CHECK(g.flops() == 5400.0);
}

TEST_CASE("problem: tensor dims follow ndims") {
    const Problem p = square(2, 4, 6, 7, 3, 2, 1, 1, 1, 2);
    CHECK(p.src_dims() == std::vector<dim_t>{2, 4, 7, 7});
    CHECK(p.wei_dims() == std::vector<dim_t>{6, 2, 3, 3});
    CHECK(p.dst_dims() == std::vector<dim_t>{2, 6, 4, 4});

    Problem q;
    q.ndims = 1;
    q.mb = 3;
    q.ic = 2;
    q.oc = 5;
    q.in = {10, 1, 1};
    q.kernel = {4, 1, 1};
    CHECK(q.src_dims() == std::vector<dim_t>{3, 2, 10});
    CHECK(q.wei_dims() == std::vector<dim_t>{5, 2, 4});
    CHECK(q.dst_dims() == std::vector<dim_t>{3, 5, 7});
    CHECK(q.in_spatial() == 10);
    CHECK(q.out_spatial() == 7);

    Problem r;
    r.ndims = 3;
    r.in = {4, 5, 6};
    r.kernel = {1, 2, 3};
    CHECK(r.src_dims() == std::vector<dim_t>{1, 1, 4, 5, 6});
    CHECK(r.wei_dims() == std::vector<dim_t>{1, 1, 1, 2, 3});
    CHECK(r.dst_dims() == std::vector<dim_t>{1, 1, 4, 4, 4});
    CHECK(r.in_spatial() == 120);
    CHECK(r.kernel_spatial() == 6);
    CHECK(r.out_spatial() == 64);
}

TEST_CASE("problem: axis names") {
    Problem p;
    p.ndims = 1;
    CHECK(std::string(p.axis_name(0)) == "w");
    p.ndims = 2;
    CHECK(std::string(p.axis_name(0)) == "h");
    CHECK(std::string(p.axis_name(1)) == "w");
    p.ndims = 3;
    CHECK(std::string(p.axis_name(0)) == "d");
    CHECK(std::string(p.axis_name(1)) == "h");
    CHECK(std::string(p.axis_name(2)) == "w");
    CHECK(std::string(p.axis_name(3)) == "?");
    CHECK(std::string(p.axis_name(-1)) == "?");
}

// ---------------------------------------------------------------------------------------------
// Validation

TEST_CASE("validate: every rule has its message") {
    const Problem ok = square(1, 6, 8, 9, 3, 1, 1, 1);
    REQUIRE(ok.validate() == "");
    auto msg = [](const Problem& p) { return p.validate(); };
    Problem p;

    p = ok, p.ndims = 4;
    CHECK(msg(p) == "ndims = 4: ndims must be 1, 2 or 3");
    p = ok, p.ndims = 0;
    CHECK(msg(p) == "ndims = 0: ndims must be 1, 2 or 3");
    p = ok, p.mb = 0;
    CHECK(msg(p) == "mb = 0: mb must be >= 1");
    p = ok, p.ic = -3;
    CHECK(msg(p) == "ic = -3: ic must be >= 1");
    p = ok, p.oc = 0;
    CHECK(msg(p) == "oc = 0: oc must be >= 1");
    p = ok, p.groups = 0;
    CHECK(msg(p) == "groups = 0: groups must be >= 1");
    p = ok, p.mb = (dim_t{1} << 31) + 1;
    CHECK(msg(p) == "mb = 2147483649: mb must be <= 2^31 (2147483648)");
    p = ok, p.groups = 4;
    CHECK(msg(p) == "ic = 6, groups = 4: groups must divide ic");
    p = ok, p.groups = 3;
    CHECK(msg(p) == "oc = 8, groups = 3: groups must divide oc");
    p = ok, p.in[1] = 0;
    CHECK(msg(p) == "in[1] = 0: input size must be >= 1");
    p = ok, p.in[0] = (dim_t{1} << 31) + 1;
    CHECK(msg(p) == "in[0] = 2147483649: input size must be <= 2^31 (2147483648)");
    p = ok, p.kernel[1] = 0;
    CHECK(msg(p) == "kernel[1] = 0: kernel size must be >= 1");
    p = ok, p.stride[1] = 0;
    CHECK(msg(p) == "stride[1] = 0: stride must be >= 1");
    p = ok, p.stride[0] = dim_t{1} << 40;
    CHECK(msg(p) == "stride[0] = 1099511627776: stride must be <= 2^31 (2147483648)");
    p = ok, p.dilation[0] = 0;
    CHECK(msg(p) == "dilation[0] = 0: dilation must be >= 1");
    p = ok, p.pad_begin[0] = -1;
    CHECK(msg(p) == "pad_begin[0] = -1: padding must be >= 0");
    p = ok, p.pad_end[1] = -2;
    CHECK(msg(p) == "pad_end[1] = -2: padding must be >= 0");
    p = ok, p.pad_end[1] = (dim_t{1} << 31) + 1;
    CHECK(msg(p) == "pad_end[1] = 2147483649: padding must be <= 2^31 (2147483648)");
    p = ok, p.pad_begin[0] = -(dim_t{1} << 31) - 1;
    CHECK(p.validate(true) == "pad_begin[0] = -2147483649: padding must be >= -2^31 (2147483648)");
    p = square(1, 1, 1, 5, 7, 1, 2, 2, 2);
    CHECK(msg(p) ==
          "kernel[0] = 7 with dilation 2 spans 13 > padded input 9 (in 5 + pad_begin 2 + "
          "pad_end 2)");
    p = square(1, 1, 1, 5, 7, 1, 1, 1);  // 7 fits in 5 + 1 + 1
    CHECK(msg(p) == "");
    p.in[1] = 4;
    CHECK(msg(p) ==
          "kernel[1] = 7 with dilation 1 spans 7 > padded input 6 (in 4 + pad_begin 1 + "
          "pad_end 1)");
    p = square(1, 1, 1, 17, 2, 1, 1, dim_t{1} << 31, 3);
    CHECK(msg(p) == "out(0) = 2147483663: output size must be <= 2^31 (2147483648)");
    p.pad_end[0] = (dim_t{1} << 31) - 15;
    CHECK(p.out(0) == dim_t{1} << 31);
    CHECK(msg(p) == "out(1) = 2147483663: output size must be <= 2^31 (2147483648)");
}

TEST_CASE("validate: the element limits keep absurd problems out") {
    const dim_t big = dim_t{1} << 20;
    Problem p = square(1, 1, 1, big, 1, 1, 0, 0);
    p.ic = 32;  // src 32 * 2^40 elements
    CHECK(p.validate() == "src would hold 35184372088832 elements: more than the 2^34 limit");
    p = square(1, 1, 1, 1, 1, 1, 0, 0);
    p.ic = dim_t{1} << 20;
    p.oc = dim_t{1} << 15;  // wei 2^35
    CHECK(p.validate() == "wei would hold 34359738368 elements: more than the 2^34 limit");
    p = square(4, 1, 1, 1, 1, 1, 0, 0);
    p.oc = dim_t{1} << 20;
    p.pad_end = {(dim_t{1} << 7) - 1, (dim_t{1} << 7) - 1, 0};  // dst 4 * 2^20 * 2^14 = 2^36
    CHECK(p.validate() == "dst would hold 68719476736 elements: more than the 2^34 limit");
    p = square(dim_t{1} << 31, dim_t{1} << 31, 1, dim_t{1} << 31, 1, 1, 0, 0);
    CHECK(p.validate() == "src would hold more than 2^63 elements: more than the 2^34 limit");
    // Exactly 2^34 is allowed.
    p = square(1, 1, 1, dim_t{1} << 17, 1, 1, 0, 0);
    CHECK(p.validate() == "");
}

TEST_CASE("validate: the first broken rule wins, in field order") {
    Problem p = square(0, 6, 8, 0, 0, 0, -1, -1);
    CHECK(p.validate() == "mb = 0: mb must be >= 1");
    p.mb = 1;
    CHECK(p.validate() == "in[0] = 0: input size must be >= 1");
    p.in = {5, 5, 1};
    CHECK(p.validate() == "kernel[0] = 0: kernel size must be >= 1");
    p.kernel = {3, 3, 1};
    CHECK(p.validate() == "stride[0] = 0: stride must be >= 1");
    p.stride = {1, 1, 1};
    CHECK(p.validate() == "pad_begin[0] = -1: padding must be >= 0");
    p.pad_begin = {0, 0, 0};
    CHECK(p.validate() == "pad_end[0] = -1: padding must be >= 0");
    p.pad_end = {0, 0, 0};
    CHECK(p.validate() == "");
}

TEST_CASE("validate: crops only with allow_crop, and still the kernel must fit") {
    Problem p = square(1, 1, 1, 8, 3, 1, 0, 0);
    p.pad_end[0] = -2;
    p.pad_begin[1] = -1;
    CHECK(p.validate() == "pad_end[0] = -2: padding must be >= 0");
    CHECK(p.validate(true) == "");
    CHECK(p.out(0) == 4);
    p.pad_end[1] = -5;
    CHECK(p.validate(true) ==
          "kernel[1] = 3 with dilation 1 spans 3 > padded input 2 (in 8 + pad_begin -1 + pad_end "
          "-5)");
}

TEST_CASE("validate: axes beyond ndims are not checked") {
    Problem p;
    p.ndims = 1;
    p.in = {5, 0, -7};
    p.stride = {1, 0, 0};
    CHECK(p.validate() == "");
    p.ndims = 2;
    CHECK(p.validate() == "in[1] = 0: input size must be >= 1");
}

TEST_CASE("check throws Error with validate's message") {
    Problem p = square(1, 6, 8, 9, 3, 1, 1, 1);
    CHECK_NOTHROW(p.check());
    p.stride[1] = 0;
    CHECK_THROWS_WITH_AS(p.check(), "stride[1] = 0: stride must be >= 1", Error);
    p.stride[1] = 1;
    p.pad_end[0] = -1;
    CHECK_THROWS_WITH_AS(p.check(), "pad_end[0] = -1: padding must be >= 0", Error);
    CHECK_NOTHROW(p.check(true));
}

// ---------------------------------------------------------------------------------------------
// Parsing

TEST_CASE("parse: 2-D square descriptor") {
    const Problem p = parse_descriptor("mb2ic3ih7oc4oh4kh3sh2ph1");
    CHECK(p == square(2, 3, 4, 7, 3, 2, 1, 1));
    CHECK(p.ndims == 2);
    CHECK(p.out(0) == 4);
    CHECK(p.out(1) == 4);
    CHECK(p.leftover(0) == 0);
    CHECK(p.in[2] == 1);
    CHECK(p.pad_end[2] == 0);
    CHECK(p.name.empty());
    // '_' is ignored between entries, and entries may come in any order.
    CHECK(parse_descriptor("mb2_ic3_ih7_oc4_oh4_kh3_sh2_ph1") == p);
    CHECK(parse_descriptor("ph1sh2kh3oh4oc4ih7ic3mb2") == p);
    CHECK(parse_descriptor("  mb2ic3ih7oc4oh4kh3sh2ph1\n") == p);
}

TEST_CASE("parse: 3-D descriptor with groups, dilation and a name") {
    const Problem p = parse_descriptor("g2mb1ic4id5ih6iw7oc6kd3kh3kw3dd1n\"name\"");
    CHECK(p.ndims == 3);
    CHECK(p.groups == 2);
    CHECK(p.mb == 1);
    CHECK(p.ic == 4);
    CHECK(p.oc == 6);
    CHECK(p.in == convlab::SpatialDims{5, 6, 7});
    CHECK(p.kernel == convlab::SpatialDims{3, 3, 3});
    CHECK(p.stride == convlab::SpatialDims{1, 1, 1});
    CHECK(p.dilation == convlab::SpatialDims{2, 1, 1});  // dd1 is 0-based: dilation 2
    CHECK(p.pad_begin == convlab::SpatialDims{0, 0, 0});
    CHECK(p.pad_end == convlab::SpatialDims{0, 0, 0});
    CHECK(p.name == "name");
    CHECK(p.out(0) == 1);
    CHECK(p.out(1) == 4);
    CHECK(p.out(2) == 5);
    CHECK(p.dst_dims() == std::vector<dim_t>{1, 6, 1, 4, 5});
}

TEST_CASE("parse: 1-D descriptor") {
    const Problem p = parse_descriptor("ic3iw8oc5ow4kw3pw1sw2");
    CHECK(p.ndims == 1);
    CHECK(p.mb == 2);
    CHECK(p.in[0] == 8);
    CHECK(p.kernel[0] == 3);
    CHECK(p.stride[0] == 2);
    CHECK(p.pad_begin[0] == 1);
    CHECK(p.pad_end[0] == 1);
    CHECK(p.out(0) == 4);
    CHECK(p.leftover(0) == 1);
    CHECK(p.in[1] == 1);
    CHECK(p.in[2] == 1);
    CHECK(p.src_dims() == std::vector<dim_t>{2, 3, 8});
    // Without oc the descriptor is incomplete, as in benchdnn.
    CHECK(parse_error("ic3iw8ow4kw3pw1sw2") ==
          "missing 'oc' (output channels) in descriptor 'ic3iw8ow4kw3pw1sw2'");
}

TEST_CASE("parse: ResNet-50 conv1 pads symmetrically and keeps a leftover row") {
    for (const char* d : {"ic3ih224oc64oh112kh7sh2ph3", "ic3ih224oc64kh7sh2ph3"}) {
        CAPTURE(d);
        const Problem p = parse_descriptor(d);
        CHECK(p.pad_begin[0] == 3);
        CHECK(p.pad_end[0] == 3);
        CHECK(p.out(0) == 112);
        CHECK(p.leftover(0) == 1);
        CHECK(p.pad_end[1] == 3);
        CHECK(p.leftover(1) == 1);
    }
    // Without ph, benchdnn computes the pad from oh: (111*2 - 224 + 7) / 2 = 2, and the end
    // padding implied by oh is then 3: the same output, but no leftover row.
    const Problem p = parse_descriptor("ic3ih224oc64oh112kh7sh2");
    CHECK(p.pad_begin[0] == 2);
    CHECK(p.pad_end[0] == 3);
    CHECK(p.out(0) == 112);
    CHECK(p.leftover(0) == 0);
}

TEST_CASE("parse: 1x1 stride 2 on an even input is a leftover row, not a crop") {
    // Implied end padding (28-1)*2 + 1 - 56 - 0 = -1: end padding 0 reproduces oh 28.
    for (const char* d :
         {"ic256ih56oc512oh28kh1sh2", "ic256ih56oc512oh28kh1sh2ph0", "ic256ih56oc512kh1sh2"}) {
        CAPTURE(d);
        const Problem p = parse_descriptor(d);
        CHECK(p.pad_begin[0] == 0);
        CHECK(p.pad_end[0] == 0);
        CHECK(p.out(0) == 28);
        CHECK(p.leftover(0) == 1);
    }
}

TEST_CASE("parse: defaults") {
    const Problem p = parse_descriptor("ic3ih5oc4kh3");
    CHECK(p.mb == 2);
    CHECK(p.groups == 1);
    CHECK(p.ndims == 2);
    CHECK(p.in == convlab::SpatialDims{5, 5, 1});
    CHECK(p.kernel == convlab::SpatialDims{3, 3, 1});
    CHECK(p.stride == convlab::SpatialDims{1, 1, 1});
    CHECK(p.dilation == convlab::SpatialDims{1, 1, 1});
    CHECK(p.pad_begin == convlab::SpatialDims{0, 0, 0});
    CHECK(p.pad_end == convlab::SpatialDims{0, 0, 0});
    CHECK(p.name == "");
    CHECK(p.out(0) == 3);
}

TEST_CASE("parse: square and cubic propagation copies whole axes") {
    // 2-D: w copies h (input, output, kernel, stride, padding, dilation).
    Problem p = parse_descriptor("ic1ih9oc1kh3sh2ph1dh1");
    CHECK(p.in[1] == 9);
    CHECK(p.kernel[1] == 3);
    CHECK(p.stride[1] == 2);
    CHECK(p.pad_begin[1] == 1);
    CHECK(p.pad_end[1] == 1);
    CHECK(p.dilation[1] == 2);
    // 3-D: h copies d, w copies h.
    p = parse_descriptor("ic1id6oc1kd3sd2");
    CHECK(p.ndims == 3);
    CHECK(p.in == convlab::SpatialDims{6, 6, 6});
    CHECK(p.kernel == convlab::SpatialDims{3, 3, 3});
    CHECK(p.stride == convlab::SpatialDims{2, 2, 2});
    // 3-D with only w given: h copies d.
    p = parse_descriptor("ic1id6iw8oc1kd3kw2");
    CHECK(p.in == convlab::SpatialDims{6, 6, 8});
    CHECK(p.kernel == convlab::SpatialDims{3, 3, 2});
    // An axis with keys of its own takes benchdnn's defaults, not the previous axis' values.
    p = parse_descriptor("ic1ih9iw8oc1kh3kw3sh2ph1dh1");
    CHECK(p.stride[1] == 1);
    CHECK(p.pad_begin[1] == 0);
    CHECK(p.pad_end[1] == 0);
    CHECK(p.dilation[1] == 1);
}

TEST_CASE("parse: padding from the output size") {
    // No p: benchdnn's symmetric pad from o: ((5-1)*1 - 5 + 3) / 2 = 1.
    Problem p = parse_descriptor("ic1ih5oc1oh5kh3");
    CHECK(p.pad_begin[0] == 1);
    CHECK(p.pad_end[0] == 1);
    // The output size implies an asymmetric end padding: 5 + 1 + 0 - 3 + 1 = 4.
    p = parse_descriptor("ic1ih5oc1oh4kh3ph1");
    CHECK(p.pad_begin[0] == 1);
    CHECK(p.pad_end[0] == 0);
    CHECK(p.out(0) == 4);
    // o larger than symmetric padding gives: end padding (9-1) + 3 - 5 - 1 = 5.
    p = parse_descriptor("ic1ih5oc1oh9kh3ph1");
    CHECK(p.pad_end[0] == 5);
    // Computed pad (8 + 3 - 5) / 2 = 3 gives exactly 9 symmetrically.
    p = parse_descriptor("ic1ih5oc1oh9kh3");
    CHECK(p.pad_begin[0] == 3);
    CHECK(p.pad_end[0] == 3);
    // A computed pad that would be negative is clamped at 0: ((2-1)*1 - 5 + 1) / 2 < 0.
    p = parse_descriptor("ic1ih5oc1oh2kh1sh3");
    CHECK(p.pad_begin[0] == 0);
    CHECK(p.pad_end[0] == 0);
    CHECK(p.leftover(0) == 1);
    // Dilation enters k_eff: k_eff 5, (3-1)*1 - 7 + 5 = 0.
    p = parse_descriptor("ic1ih7oc1oh3kh3dh1");
    CHECK(p.pad_begin[0] == 0);
    CHECK(p.pad_end[0] == 0);
}

TEST_CASE("parse: explicit end padding keys") {
    Problem p = parse_descriptor("ic1ih5oc1kh3ph1phe2");
    CHECK(p.pad_begin[0] == 1);
    CHECK(p.pad_end[0] == 2);
    CHECK(p.pad_end[1] == 2);
    CHECK(p.out(0) == 6);
    p = parse_descriptor("ic1id5ih6iw7oc1kd3kh3kw3pde1phe2pwe3");
    CHECK(p.pad_end == convlab::SpatialDims{1, 2, 3});
    CHECK(p.pad_begin == convlab::SpatialDims{0, 0, 0});
    p = parse_descriptor("ic1iw5oc1ow6kw3pw0pwe3");
    CHECK(p.pad_begin[0] == 0);
    CHECK(p.pad_end[0] == 3);
    CHECK(p.out(0) == 6);
    // An output size and an explicit end padding that agree.
    p = parse_descriptor("ic1iw5oc1ow8kw3pwe3");
    CHECK(p.pad_begin[0] == 2);  // ((8-1) - 5 + 3) / 2
    CHECK(p.pad_end[0] == 3);
}

TEST_CASE("parse: names") {
    CHECK(parse_descriptor("ic1ih5oc1kh3n\"resnet_50:conv1\"").name == "resnet_50:conv1");
    CHECK(parse_descriptor("ic1ih5oc1kh3n\"\"").name == "");
    CHECK(parse_descriptor("ic1ih5oc1kh3n\"a\\\"b\\\\c\"").name == "a\"b\\c");
    // benchdnn's unquoted form: the rest of the descriptor is the name.
    CHECK(parse_descriptor("ic1ih5oc1kh3nplain_name").name == "plain_name");
    CHECK(parse_descriptor("ic1ih5oc1kh3n\"x\"__").name == "x");
}

TEST_CASE("parse: every error names the key and the rule") {
    struct Case {
        const char* desc;
        const char* message;
    };
    const Case cases[] = {
        {"", "empty descriptor: it needs at least ic, oc, an input size and a kernel"},
        {"ic3ih5oc4kh3xx2",
         "unknown key 'xx' at position 12 (keys: g mb ic id ih iw oc od oh ow kd kh kw sd sh "
         "sw pd ph pw pde phe pwe dd dh dw n\"name\")"},
        {"ic3IH5oc4kh3", "unknown key 'IH' at position 3"},
        {"ic3ih5oc4kh3sh2pde1",
         "'pde' at position 15 is for axis d, but without 'id' the "
         "descriptor is 2-D"},
        {"ic3ih5 oc4kh3", "unexpected character ' ' at position 6"},
        {"ic3ih5oc4kh3;", "unexpected character ';' at position 12"},
        {"12ic3ih5oc4kh3", "number without a key at position 0"},
        {"ic3ihoc4kh3", "missing number after key 'ih' at position 3"},
        {"ic3ih5oc4kh3shx2", "missing number after key 'sh' at position 12"},
        {"ic3ih5oc4kh3q", "unknown key 'q' at position 12"},
        {"ic3ih5oc4kh", "missing number after key 'kh' at position 9"},
        {"ic3ih5oc4kh3ph-1", "'ph' at position 12 has a negative value"},
        {"ic3ih5oc4kh3sh99999999999999999999999",
         "'sh' = 99999999999999999999999 at position 12 is too large: descriptor numbers must "
         "be <= 2^31 (2147483648)"},
        {"ic3ih2147483649oc4kh3", "'ih' = 2147483649 at position 3 is too large"},
        {"ic3ih5oc4kh3ic4", "key 'ic' given twice (positions 0 and 12)"},
        {"ic3ih5oc4kh3n\"abc", "name starting at position 12 has no closing quote"},
        {"ic3ih5oc4kh3n\"abc\\\"", "name starting at position 12 has no closing quote"},
        {"ic3ih5oc4kh3n\"abc\"kh3", "unexpected text after the name at position 18"},
        {"g0ic3ih5oc4kh3", "'g' = 0 at position 0: g must be >= 1"},
        {"mb0ic3ih5oc4kh3", "'mb' = 0 at position 0: mb must be >= 1"},
        {"ic0ih5oc4kh3", "'ic' = 0 at position 0: ic must be >= 1"},
        {"ic3ih5oc0kh3", "'oc' = 0 at position 6: oc must be >= 1"},
        {"ic3ih0oc4kh3", "'ih' = 0 at position 3: ih must be >= 1"},
        {"ic3ih5oc4oh0kh3", "'oh' = 0 at position 9: oh must be >= 1"},
        {"ic3ih5oc4kh0", "'kh' = 0 at position 9: kh must be >= 1"},
        {"ic3ih5oc4kh3sh0", "'sh' = 0 at position 12: sh must be >= 1"},
        {"ih5oc4kh3", "missing 'ic' (input channels)"},
        {"ic3ih5kh3", "missing 'oc' (output channels)"},
        {"ic3oc4kh3", "missing spatial size: give 'id' (3-D), 'ih' (2-D) or 'iw' (1-D)"},
        {"ic3ih5oc4kh3kw3ow2",
         "missing spatial size 'iw': axis w has keys ('ow' at position 15) but no input size"},
        {"ic3ih5oc4", "missing kernel size 'kh': axis h needs one"},
        {"ic3ih5iw6oc4kh3", "missing kernel size 'kw': axis w needs one"},
        {"ic3ih5oc4kh3kd2",
         "'kd' at position 12 is for axis d, but without 'id' the descriptor "
         "is 2-D"},
        {"ic3iw5oc4kw3sh2",
         "'sh' at position 12 is for axis h, but without 'ih' the descriptor "
         "is 1-D"},
        {"ic3ih7oc4oh2kh3sh2ph1",
         "'oh' = 2 would need a crop: with 'ih' 7, 'kh' 3 (dilation 1), 'sh' 2 and 'ph' 1, the "
         "end padding it implies is -3 and end padding 0 does not give it either; descriptors "
         "cannot crop"},
        {"ic3ih5oc4oh5kh3phe0",
         "'oh' = 5 contradicts the other keys of axis h, which give 4 ('ih' 5, 'kh' 3, dilation "
         "1, 'sh' 1, padding 1 + 0)"},
        {"ic1ih1oc1oh2147483648kh1sh2147483648",
         "the padding implied by 'oh' = 2147483648 is 2305843008139952128: padding must be <= "
         "2^31 (2147483648)"},
        // Rules of validate(), through check().
        {"g4ic6ih5oc8kh3", "ic = 6, groups = 4: groups must divide ic"},
        {"g2ic6ih5oc7kh3", "oc = 7, groups = 2: groups must divide oc"},
        {"ic3ih5oc4kh7",
         "kernel[0] = 7 with dilation 1 spans 7 > padded input 5 (in 5 + pad_begin 0 + pad_end "
         "0)"},
        {"ic3ih5oc4kh3dh2",
         "kernel[0] = 3 with dilation 3 spans 7 > padded input 5 (in 5 + pad_begin 0 + pad_end "
         "0)"},
        {"ic3ih5oc4kh3dh2147483648", "dilation[0] = 2147483649: dilation must be <= 2^31"},
        {"ic3ih65536oc4kh1", "src would hold 25769803776 elements: more than the 2^34 limit"},
        {"mb1ic1ih1oc1oh2147483648kh1",
         "dst would hold 4611686018427387904 elements: more than the 2^34 limit"},
    };
    for (const auto& c : cases) {
        const std::string desc = c.desc;
        const std::string got = parse_error(desc);
        CAPTURE(desc);
        CAPTURE(got);
        CHECK(contains(got, c.message));
        CHECK(contains(got, " in descriptor '" + desc + "'"));
    }
}

TEST_CASE("parse: error messages show long or odd descriptors safely") {
    const std::string junk = "ic3ih5oc4kh3" + std::string(500, '_') + "\x01";
    const std::string got = parse_error(junk);
    CHECK(contains(got, "unexpected character '\\x01' at position 512"));
    CHECK(contains(got, "..."));
    CHECK(got.size() < 400);
}

// ---------------------------------------------------------------------------------------------
// Printing

TEST_CASE("to_descriptor: canonical forms") {
    CHECK(to_descriptor(square(2, 3, 4, 7, 3, 2, 1, 1)) == "mb2ic3ih7oc4oh4kh3sh2ph1");
    CHECK(to_descriptor(square(1, 3, 64, 224, 7, 2, 3, 3)) == "mb1ic3ih224oc64oh112kh7sh2ph3");
    CHECK(to_descriptor(square(1, 256, 512, 56, 1, 2, 0, 0)) == "mb1ic256ih56oc512oh28kh1sh2");
    // Groups, dilation (0-based), name.
    Problem p = square(1, 4, 6, 9, 3, 1, 0, 0, 2, 2);
    p.name = "x";
    CHECK(to_descriptor(p) == "g2mb1ic4ih9oc6oh5kh3dh1n\"x\"");
    p.name = "say \"hi\" \\o/";
    CHECK(to_descriptor(p) == "g2mb1ic4ih9oc6oh5kh3dh1n\"say \\\"hi\\\" \\\\o/\"");
    // Non-square: the w axis is printed whole.
    p = square(1, 1, 1, 9, 3, 1, 0, 0);
    p.in[1] = 8;
    CHECK(to_descriptor(p) == "mb1ic1ih9iw8oc1oh7ow6kh3kw3");
    p.stride[0] = 2;
    CHECK(to_descriptor(p) == "mb1ic1ih9iw8oc1oh4ow6kh3kw3sh2sw1");
    // 3-D: h equal to d is left out, w is printed.
    Problem q;
    q.ndims = 3;
    q.in = {5, 5, 7};
    q.kernel = {3, 3, 3};
    CHECK(to_descriptor(q) == "mb1ic1id5iw7oc1od3ow5kd3kw3");
    // 1-D.
    Problem r;
    r.ndims = 1;
    r.in = {8, 1, 1};
    r.kernel = {3, 1, 1};
    r.stride = {2, 1, 1};
    r.pad_begin = {1, 0, 0};
    r.pad_end = {1, 0, 0};
    CHECK(to_descriptor(r) == "mb1ic1iw8oc1ow4kw3sw2pw1");
}

TEST_CASE("to_descriptor: end padding keys only when the output size does not imply them") {
    // Output 5 implies end padding 2 after an explicit ph0 (without p, parse would pad 1 + 1).
    Problem p = square(1, 1, 1, 5, 3, 1, 0, 2);
    CHECK(to_descriptor(p) == "mb1ic1ih5oc1oh5kh3ph0");
    // End padding 1 with stride 2 leaves output 2, which end padding 0 gives as well.
    p = square(1, 1, 1, 5, 3, 2, 0, 1);
    CHECK(p.out(0) == 2);
    CHECK(to_descriptor(p) == "mb1ic1ih5oc1oh2kh3sh2phe1");
    // Implied by the output size: no extension key.
    p = square(1, 1, 1, 5, 3, 1, 1, 0);
    CHECK(to_descriptor(p) == "mb1ic1ih5oc1oh4kh3ph1");
    // Per axis: only w needs the key.
    p = square(1, 1, 1, 5, 3, 2, 1, 1);
    p.pad_end[1] = 2;
    CHECK(to_descriptor(p) == "mb1ic1ih5iw5oc1oh3ow3kh3kw3sh2sw2ph1pw1pwe2");
}

TEST_CASE("to_descriptor: invalid problems print without crashing") {
    Problem p = square(1, 1, 1, 5, 3, 0, 0, 0);
    const std::string s = to_descriptor(p);
    CHECK(s == "mb1ic1ih5iw5oc1kh3kw3sh0sw0ph0pw0phe0pwe0dh0dw0");
    CHECK_THROWS_AS(parse_descriptor(s), Error);
    p = square(1, 1, 1, 5, 3, 1, 0, -1);
    CHECK(to_descriptor(p) == "mb1ic1ih5iw5oc1kh3kw3sh1sw1ph0pw0phe-1pwe-1dh0dw0");
    p.ndims = 7;
    CHECK(!to_descriptor(p).empty());
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST_CASE("round trip: hundreds of random valid problems") {
    std::mt19937 rng(20240611);
    int asymmetric = 0, dilated = 0, grouped = 0, by_ndims[4] = {};
    for (int n = 0; n < 3000; ++n) {
        const Problem p = random_problem(rng);
        const std::string s = to_descriptor(p);
        CAPTURE(s);
        Problem q;
        REQUIRE_NOTHROW(q = parse_descriptor(s));
        CHECK(q == p);
        CHECK(to_descriptor(q) == s);
        for (int i = 0; i < p.ndims; ++i) {
            asymmetric += p.pad_begin[i] != p.pad_end[i];
            dilated += p.dilation[i] != 1;
        }
        grouped += p.groups > 1;
        ++by_ndims[p.ndims];
    }
    // The generator must actually exercise what the round trip is about.
    CHECK(asymmetric > 500);
    CHECK(dilated > 500);
    CHECK(grouped > 500);
    CHECK(by_ndims[1] > 500);
    CHECK(by_ndims[2] > 500);
    CHECK(by_ndims[3] > 500);
}

TEST_CASE("round trip: printing a parsed descriptor is a fixed point") {
    const char* const descs[] = {
        "mb2ic3ih7oc4oh4kh3sh2ph1",
        "g2mb1ic4id5ih6iw7oc6kd3kh3kw3dd1n\"name\"",
        "ic3iw8oc5ow4kw3pw1sw2",
        "ic3ih224oc64oh112kh7sh2ph3",
        "ic256ih56oc512oh28kh1sh2",
        "ic1ih5oc1kh3ph1phe2",
        "ic1ih5oc1oh9kh3",
        "ic1id6iw8oc1kd3kw2sd2pd1",
        "mb32_ic768ih17iw17oc128oh17ow17kh1kw7ph0pw3n\"googlenet_v3:conv\"",
        "ic1ih5oc1kh3nplain",
    };
    for (const char* d : descs) {
        CAPTURE(d);
        const Problem p = parse_descriptor(d);
        const std::string once = to_descriptor(p);
        CHECK(parse_descriptor(once) == p);
        CHECK(to_descriptor(parse_descriptor(once)) == once);
    }
}

TEST_CASE("round trip: random descriptor strings parse to a fixed point or throw Error") {
    static const char* const junk[] = {"g",  "mb", "ic", "id", "ih", "iw",  "oc",  "od",  "oh",
                                       "ow", "kd", "kh", "kw", "sd", "sh",  "sw",  "pd",  "ph",
                                       "pw", "dd", "dh", "dw", "_",  "pde", "phe", "pwe", "x"};
    std::mt19937 rng(7);
    auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto num = [&pick](int lo, int hi) { return std::to_string(pick(lo, hi)); };
    int parsed = 0, failed = 0;
    for (int n = 0; n < 6000; ++n) {
        // Entries of a plausible descriptor (some axes left to propagation), in random order,
        // with an occasional junk entry.
        std::vector<std::string> entries{"ic" + num(1, 4), "oc" + num(1, 4)};
        if (pick(0, 2) == 0) entries.push_back("mb" + num(1, 3));
        if (pick(0, 3) == 0) entries.push_back("g" + num(1, 2));
        const int first = pick(0, 2);
        for (int a = first; a < 3; ++a) {
            if (a > first && pick(0, 1)) continue;
            const std::string l(1, "dhw"[a]);
            if (a == first || pick(0, 9)) entries.push_back("i" + l + num(1, 16));
            if (a == first || pick(0, 9)) entries.push_back("k" + l + num(1, 4));
            if (pick(0, 2) == 0) entries.push_back("s" + l + num(1, 3));
            if (pick(0, 2) == 0) entries.push_back("p" + l + num(0, 3));
            if (pick(0, 3) == 0) entries.push_back("d" + l + num(0, 2));
            if (pick(0, 3) == 0) entries.push_back("o" + l + num(1, 16));
            if (pick(0, 5) == 0) entries.push_back("p" + l + "e" + num(0, 3));
        }
        if (pick(0, 15) == 0) entries.push_back(junk[pick(0, 26)] + num(0, 12));
        std::shuffle(entries.begin(), entries.end(), rng);
        std::string s;
        for (const auto& e : entries) s += (pick(0, 5) == 0 ? "_" : "") + e;
        if (pick(0, 4) == 0) s += "n\"r\"";
        CAPTURE(s);
        Problem p;
        try {
            p = parse_descriptor(s);
        } catch (const Error& e) {
            CHECK(std::string(e.what()).find(" in descriptor '") != std::string::npos);
            ++failed;
            continue;
        }
        ++parsed;
        CHECK(p.validate() == "");
        const std::string once = to_descriptor(p);
        CHECK(parse_descriptor(once) == p);
        CHECK(to_descriptor(parse_descriptor(once)) == once);
    }
    CHECK(parsed > 1000);
    CHECK(failed > 500);
}
