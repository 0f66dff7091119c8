// Every algorithm of every pass against `direct`, and `direct` against finite differences.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "convlab/conv.hpp"
#include "convlab/maps.hpp"
#include "test_util.hpp"

using namespace convlab;
using convlab::test::check_close;
using convlab::test::check_equal;
using convlab::test::integer_tensor;
using convlab::test::random_problem;
using convlab::test::real_tensor;

namespace {

struct Data {
    Tensor src, wei, bias, diff_dst;
};

Data make_data(const Problem& p, std::mt19937& rng, bool integer) {
    auto make = [&](std::vector<dim_t> d) {
        return integer ? integer_tensor(std::move(d), rng) : real_tensor(std::move(d), rng);
    };
    return {make(p.src_dims()), make(p.wei_dims()), make({p.oc}), make(p.dst_dims())};
}

Tensor run(Pass pass, const Problem& p, const Data& d, std::string_view algo,
           Profiler* prof = nullptr) {
    switch (pass) {
        case Pass::Forward:
            return forward(p, d.src, d.wei, &d.bias, algo, prof);
        case Pass::BackwardData:
            return backward_data(p, d.diff_dst, d.wei, algo, prof);
        case Pass::BackwardWeight:
            return backward_weight(p, d.src, d.diff_dst, algo, prof);
        case Pass::BackwardBias:
            return backward_bias(p, d.diff_dst, prof);
    }
    return {};
}

constexpr Pass kConvPasses[] = {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight};

}  // namespace

TEST_CASE("every algorithm equals direct exactly on 250 random problems with integer data") {
    std::mt19937 rng(20261122);
    int compared = 0, refused = 0;
    for (int t = 0; t < 250; ++t) {
        const Problem p = random_problem(rng);
        const Data d = make_data(p, rng, true);
        for (Pass pass : kConvPasses) {
            const Tensor ref = run(pass, p, d, "direct");
            for (const Algorithm* a : algorithms(pass)) {
                if (std::string_view(a->name) == "direct") continue;
                const std::string what = to_descriptor(p) + " " + pass_name(pass) + " " + a->name;
                if (!algorithm_applies(*a, p)) {
                    // It says so, naming its rule, and computes nothing.
                    CHECK_THROWS_WITH_AS(run(pass, p, d, a->name), doctest::Contains(a->rule),
                                         Error);
                    ++refused;
                    continue;
                }
                Profiler prof;
                const Tensor got = run(pass, p, d, a->name, &prof);
                if (a->exact)
                    check_equal(got, ref, what);
                else  // fractional transform constants: within rounding of the sums' size
                    check_close(got, ref, 1e-5, 1e-5 * double(p.icg() * 9 * p.mb * 16), what);
                CHECK(!prof.entries().empty());  // every algorithm records its operations
                ++compared;
            }
        }
    }
    // Every non-direct algorithm of the registry (whatever it holds) ran on every problem where
    // it applies, and refused the others.
    std::size_t fast = 0;
    for (Pass pass : kConvPasses) fast += algorithms(pass).size() - 1;
    CHECK(fast >= 8);
    CHECK(compared + refused == 250 * static_cast<int>(fast));
    CHECK(compared > refused);
}

TEST_CASE("random problems cover what the scheme must handle") {
    // The random set above must contain leftover rows, dilation, groups, depthwise, asymmetric
    // padding, batch > 1 and every dimensionality; otherwise it proves less than it claims.
    std::mt19937 rng(20261122);
    bool r = false, dil = false, grp = false, dw = false, asym = false, batch = false;
    bool nd[4] = {};
    for (int t = 0; t < 250; ++t) {
        const Problem p = random_problem(rng);
        (void)make_data(p, rng, true);  // same draw sequence as the test above
        for (int i = 0; i < p.ndims; ++i) {
            r |= p.leftover(i) > 0;
            dil |= p.dilation[i] > 1;
            asym |= p.pad_begin[i] != p.pad_end[i];
        }
        grp |= p.groups > 1 && p.groups < p.ic;
        dw |= p.groups == p.ic && p.ic > 1;
        batch |= p.mb > 1;
        nd[p.ndims] = true;
    }
    CHECK(r);
    CHECK(dil);
    CHECK(grp);
    CHECK(dw);
    CHECK(asym);
    CHECK(batch);
    CHECK((nd[1] && nd[2] && nd[3]));
}

TEST_CASE("every algorithm matches direct within tolerance on random real data") {
    std::mt19937 rng(7);
    for (int t = 0; t < 60; ++t) {
        const Problem p = random_problem(rng);
        const Data d = make_data(p, rng, false);
        for (Pass pass : kConvPasses) {
            const Tensor ref = run(pass, p, d, "direct");
            // Accumulation length of one output element bounds the rounding error.
            const double len = pass == Pass::BackwardWeight
                                   ? double(p.mb * p.out_spatial())
                                   : double(p.icg() * p.kernel_spatial() + p.ocg());
            for (const Algorithm* a : algorithms(pass)) {
                if (!algorithm_applies(*a, p)) continue;  // refusal checked above
                const Tensor got = run(pass, p, d, a->name);
                check_close(got, ref, 1e-5, 1e-5 * len,
                            to_descriptor(p) + " " + pass_name(pass) + " " + a->name);
            }
        }
    }
}

// L = sum(dst * R). Forward is linear in src and in wei, so with integer data and a step of 0.5
// (exact in fp32) the central difference equals the gradient exactly: dL/dsrc = bwd_data(R),
// dL/dwei = bwd_weight(src, R), dL/dbias = bwd_bias(R).
TEST_CASE("direct gradients equal central finite differences (in double)") {
    std::mt19937 rng(99);
    for (int t = 0; t < 25; ++t) {
        Problem p = random_problem(rng);
        p.mb = std::min<dim_t>(p.mb, 2);
        Data d = make_data(p, rng, true);
        const Tensor& R = d.diff_dst;
        auto loss = [&](const Data& x) {
            const Tensor y = forward(p, x.src, x.wei, &x.bias, "direct");
            double l = 0;
            for (dim_t i = 0; i < y.numel(); ++i) l += double(y.f32()[i]) * double(R.f32()[i]);
            return l;
        };
        const Tensor dsrc = backward_data(p, R, d.wei, "direct");
        const Tensor dwei = backward_weight(p, d.src, R, "direct");
        const Tensor dbias = backward_bias(p, R);
        auto fd_check = [&](Tensor& param, const Tensor& grad, const char* what) {
            for (dim_t i = 0; i < param.numel(); ++i) {
                const float keep = param.f32()[i];
                param.f32()[i] = keep + 0.5f;
                const double lp = loss(d);
                param.f32()[i] = keep - 0.5f;
                const double lm = loss(d);
                param.f32()[i] = keep;
                const double fd = (lp - lm) / 1.0;
                if (fd != double(grad.f32()[i])) {
                    INFO(to_descriptor(p) << " d" << what << "[" << i << "]: fd " << fd
                                          << ", backward " << grad.f32()[i]);
                    CHECK(fd == double(grad.f32()[i]));
                    return;
                }
            }
            CHECK(true);
        };
        fd_check(d.src, dsrc, "src");
        fd_check(d.wei, dwei, "wei");
        fd_check(d.bias, dbias, "bias");
    }
}

TEST_CASE("direct forward on the 2x3x3 input with a 2x2x2 filter, by hand") {
    // x[c][h][w] = 1 + 9c + 3h + w; w[0][c][kh][kw] = 1 everywhere except w[0][1][1][1] = -1.
    Problem p;
    p.ndims = 2;
    p.ic = 2;
    p.oc = 1;
    p.in = {3, 3, 1};
    p.kernel = {2, 2, 1};
    Tensor x(p.src_dims()), w(p.wei_dims());
    for (dim_t i = 0; i < x.numel(); ++i) x.f32()[i] = float(1 + i);
    w.fill(1.0f);
    w.f32()[7] = -1.0f;
    const Tensor y = forward(p, x, w, nullptr, "direct");
    // y(oh,ow) = sum of the 2x2 windows of both channels - 2 * x[1][oh+1][ow+1]
    // window sums, channel 0: (1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9) = (12, 16, 24, 28);
    // channel 1 adds 9*4 = 36 to each: (48, 52, 60, 64); x[1][1+oh][1+ow] = 14, 15, 17, 18.
    const float want[4] = {12 + 48 - 28, 16 + 52 - 30, 24 + 60 - 34, 28 + 64 - 36};
    for (int i = 0; i < 4; ++i) CHECK(y.f32()[i] == want[i]);
}

TEST_CASE("ResNet-50 conv1: backward data via_forward equals col2im, last input row non-zero") {
    // 224x224, k7, s2, p3: (224 + 6 - 7) = 223 = 111*2 + 1, so r = 1 on both axes. Forgetting r
    // in the via-forward scheme loses the last input row and column.
    const Problem p = parse_descriptor("mb1ic3ih224oc64oh112kh7sh2ph3n\"resnet_50:conv1\"");
    REQUIRE(p.leftover(0) == 1);
    REQUIRE(p.leftover(1) == 1);
    std::mt19937 rng(1);
    const Tensor dy = integer_tensor(p.dst_dims(), rng);
    const Tensor w = integer_tensor(p.wei_dims(), rng);
    Profiler prof;
    const Tensor via = backward_data(p, dy, w, "via_forward", &prof);
    const Tensor c2i = backward_data(p, dy, w, "col2im");
    check_equal(via, c2i, "conv1 bwd_data via_forward vs col2im");
    // The last row h = 223 and last column w = 223 of every channel receive gradient.
    dim_t nz_row = 0, nz_col = 0;
    for (dim_t c = 0; c < 3; ++c)
        for (dim_t i = 0; i < 224; ++i) {
            nz_row += via.f32()[(c * 224 + 223) * 224 + i] != 0.0f;
            nz_col += via.f32()[(c * 224 + i) * 224 + 223] != 0.0f;
        }
    CHECK(nz_row > 3 * 224 / 2);
    CHECK(nz_col > 3 * 224 / 2);
    for (const char* op : {"zero-insert", "pad", "fliprot", "gemm"})
        CHECK_MESSAGE(prof.seconds(op) > 0, op);
}

TEST_CASE("backward weight via_forward on ResNet-50 conv1 and a 1x1 stride-2 layer") {
    std::mt19937 rng(2);
    for (const char* desc : {"mb1ic3ih224oc64oh112kh7sh2ph3", "mb2ic16ih14oc8oh7kh1sh2"}) {
        const Problem p = parse_descriptor(desc);
        const Tensor x = integer_tensor(p.src_dims(), rng);
        const Tensor dy = integer_tensor(p.dst_dims(), rng);
        check_equal(backward_weight(p, x, dy, "via_forward"),
                    backward_weight(p, x, dy, "im2col_gemm"), desc);
    }
}

TEST_CASE("bias gradient sums dY over batch and space") {
    Problem p = parse_descriptor("mb2ic1ih3oc2oh3kh1");
    Tensor dy(p.dst_dims());
    for (dim_t i = 0; i < dy.numel(); ++i) dy.f32()[i] = float(i);
    const Tensor db = backward_bias(p, dy);
    // k = 0: images 0 and 1 hold 0..8 and 18..26; k = 1: 9..17 and 27..35.
    CHECK(db.f32()[0] == float(36 + 198));
    CHECK(db.f32()[1] == float(117 + 279));
}

TEST_CASE("tensor-level calls refuse wrong shapes, dtypes and algorithm names") {
    const Problem p = parse_descriptor("mb1ic2ih5oc3oh5kh3ph1");
    const Tensor x(p.src_dims()), w(p.wei_dims()), wrong({1, 2, 4, 5});
    CHECK_THROWS_WITH_AS(forward(p, wrong, w, nullptr, "direct"),
                         "src has shape (1,2,4,5), problem needs (1,2,5,5)", Error);
    CHECK_THROWS_WITH_AS(
        forward(p, x, w, nullptr, "nope"),
        doctest::Contains("algorithm 'nope' is not one of fwd's: direct, im2col_gemm"), Error);
    const Tensor half(p.src_dims(), DType::f16);
    CHECK_THROWS_WITH_AS(forward(p, half, w, nullptr, "direct"), "src is fp16: expected fp32",
                         Error);
    Problem bad = p;
    bad.stride[1] = 0;
    CHECK_THROWS_AS(forward(bad, x, w, nullptr, "direct"), Error);
    CHECK_THROWS_WITH_AS(parse_pass("bwd"),
                         "pass 'bwd': expected fwd, bwd_data, bwd_weight or bwd_bias", Error);
}

TEST_CASE("algorithm registry lists every pass with direct first") {
    for (Pass pass :
         {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight, Pass::BackwardBias}) {
        const auto list = algorithms(pass);
        REQUIRE(!list.empty());
        CHECK(std::string_view(list.front()->name) == "direct");
    }
    // The algorithms docs/algorithms.md names are all registered (others may be added).
    const auto has = [](Pass pass, std::string_view name) {
        for (const Algorithm* a : algorithms(pass))
            if (name == a->name) return true;
        return false;
    };
    for (const char* n : {"direct", "im2col_gemm", "fractal"})
        CHECK_MESSAGE(has(Pass::Forward, n), n);
    for (const char* n : {"direct", "col2im", "via_forward", "fractal_via_forward"})
        CHECK_MESSAGE(has(Pass::BackwardData, n), n);
    for (const char* n : {"direct", "im2col_gemm", "via_forward", "fractal_via_forward"})
        CHECK_MESSAGE(has(Pass::BackwardWeight, n), n);
    CHECK(algorithms(Pass::BackwardBias).size() == 1);
    // Names are unique within a pass, and find_algorithm finds each.
    for (const Algorithm& a : algorithms()) CHECK(&find_algorithm(a.pass, a.name) == &a);
}

TEST_CASE(
    "test suite: no TEST_CASE name holds a semicolon (ctest would split it and run nothing)") {
    // doctest_discover_tests registers one ctest test per name, and CMake splits a name at ';'
    // into several tests whose --test-case filters match no test case: they "pass" without
    // running anything. (Commas are escaped by doctest's CMake script and are fine.)
    namespace fs = std::filesystem;
    // Every `TEST_CASE(` followed by optional white space and a string literal: its name.
    const std::string open = std::string("TEST_CASE") + "(";  // not one literal: not a match
    int names = 0;
    for (const auto& e : fs::directory_iterator(fs::path(CONVLAB_SOURCE_DIR) / "tests")) {
        if (e.path().extension() != ".cpp") continue;
        std::ifstream in(e.path());
        const std::string text(std::istreambuf_iterator<char>(in), {});
        for (std::size_t at = text.find(open); at != std::string::npos;
             at = text.find(open, at + 1)) {
            std::size_t q = at + open.size();
            while (q < text.size() && std::isspace(static_cast<unsigned char>(text[q]))) ++q;
            if (q >= text.size() || text[q] != '"') continue;
            const std::size_t end = text.find('"', q + 1);
            if (end == std::string::npos) continue;
            const std::string name = text.substr(q + 1, end - q - 1);
            ++names;
            INFO(e.path().filename().string() << ": " << name);
            CHECK(name.find(';') == std::string::npos);
        }
    }
    CHECK(names > 100);
}

TEST_CASE("implicit_gemm: strides of 2^31 take only the phases holding inputs") {
    // Backward data runs one GEMM per stride phase; a phase exists per residue of the stride,
    // but only min(s, in) of them per axis hold input positions. Looping over every residue ran
    // 2^62 times on the 2-D problem (it never finished); every pass must agree with direct.
    for (const char* d : {"mb1ic1iw4oc1kw1sw2147483648", "mb1ic1iw4oc1kw3sw2147483648pw1",
                          "mb1ic2ih4iw4oc3kh1kw1sh2147483648sw2147483648",
                          "mb2ic1ih5iw3oc2kh2kw2sh2147483648sw3ph1"}) {
        CAPTURE(d);
        const Problem p = parse_descriptor(d);
        REQUIRE(p.validate().empty());
        std::mt19937 rng(7);
        const Tensor x = integer_tensor(p.src_dims(), rng);
        const Tensor w = integer_tensor(p.wei_dims(), rng);
        const Tensor dy = integer_tensor(p.dst_dims(), rng);
        check_equal(backward_data(p, dy, w, "implicit_gemm"), backward_data(p, dy, w, "direct"),
                    std::string(d) + " bwd_data");
        check_equal(forward(p, x, w, nullptr, "implicit_gemm"), forward(p, x, w, nullptr, "direct"),
                    std::string(d) + " fwd");
        check_equal(backward_weight(p, x, dy, "implicit_gemm"), backward_weight(p, x, dy, "direct"),
                    std::string(d) + " bwd_weight");
    }
}
