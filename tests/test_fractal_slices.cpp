// The DaVinci forward and backward data taking a batch a slice of images at a time
// (davinci::Options::slice_images), their results written by non-temporal stores too: every
// image's result against direct, exactly on integer data, and the bits of the whole batch's call in
// bf16.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/tensor.hpp"
#include "fractal_call.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Problem;
using convlab::Tensor;
using convlab::test::fractal_call;
namespace dv = convlab::davinci;

TEST_CASE("fractal slices: a batch taken a few images at a time gives every image's result") {
    using convlab::Pass;
    // Integer data: exact in fp32, so every slicing must give direct's values on every element.
    // Taps in the lanes (conv1's shape), groups, 3-D, a strided 1x1 (backward data inserts its
    // zeros after the products), a batch of 5 that no slice size divides.
    std::mt19937 rng(620);
    for (const char* desc :
         {"mb5ic3ih23oc70oh12kh7sh2ph3", "g2mb5ic40ih9oc36oh4kh3sh2ph1",
          "mb5ic19id4ih5iw5oc18od4oh5ow5kd3kh3kw3pd1ph1pw1", "mb5ic64ih8oc40oh4kh1sh2"}) {
        const Problem p = convlab::parse_descriptor(desc);
        const Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
        const Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
        const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
        const Tensor y_ref = convlab::forward(p, x, w, nullptr, "direct");
        const Tensor dx_ref = convlab::backward_data(p, dy, w, "direct");
        const convlab::PreparedWeights fw = convlab::prepare_weights(p, Pass::Forward, w.f32());
        const convlab::PreparedWeights bw =
            convlab::prepare_weights(p, Pass::BackwardData, w.f32());
        // The results written by non-temporal stores too (whole images per thread: 4 images
        // or more at 2 threads).
        convlab::Tuning streamed;
        streamed.stream_output = convlab::Rule::Always;
        for (const dim_t images : {1, 2, 3, 0}) {
            for (const bool prep : {false, true}) {
                const convlab::Tuning tn = images == 0 ? streamed : convlab::Tuning{};
                const std::string what = std::string(desc) + " slices of " +
                                         std::to_string(images) + (prep ? ", prepared" : "");
                dv::Options o;
                o.slice_images = images;
                convlab::Profiler pf, pb;
                convlab::test::check_equal(
                    fractal_call(p, Pass::Forward, x, w, o, prep ? &fw : nullptr, pf, tn), y_ref,
                    "fwd " + what);
                convlab::test::check_equal(
                    fractal_call(p, Pass::BackwardData, dy, w, o, prep ? &bw : nullptr, pb, tn),
                    dx_ref, "bwd_data " + what);
                // The weights are packed once a call, not once a slice.
                if (!prep && images == 1) {
                    const auto count = [](const convlab::Profiler& f, std::string_view name) {
                        for (const auto& e : f.entries())
                            if (e.name == name) return e.count;
                        return 0L;
                    };
                    CHECK(count(pf, "pack_wei") == p.groups);
                    CHECK(count(pb, "fliprot") == p.groups);
                    CHECK(count(pf, "pack_src") == p.groups * p.mb);
                    CHECK(count(pb, "pack_dst") == p.groups * p.mb);
                }
            }
        }
    }
    // bf16 storage: the slices give the whole batch's bits.
    const Problem p = convlab::parse_descriptor("g2mb5ic40ih9oc36oh4kh3sh2ph1");
    const Tensor x = convlab::test::real_tensor(p.src_dims(), rng);
    const Tensor w = convlab::test::real_tensor(p.wei_dims(), rng);
    const Tensor dy = convlab::test::real_tensor(p.dst_dims(), rng);
    for (const Pass pass : {Pass::Forward, Pass::BackwardData}) {
        const Tensor& in = pass == Pass::Forward ? x : dy;
        dv::Options whole, sliced;
        whole.storage = sliced.storage = DType::bf16;
        whole.slice_images = p.mb;
        sliced.slice_images = 2;
        convlab::Profiler a, b;
        const Tensor r0 = fractal_call(p, pass, in, w, whole, nullptr, a);
        const Tensor r1 = fractal_call(p, pass, in, w, sliced, nullptr, b);
        REQUIRE(r0.numel() == r1.numel());
        dim_t differ = 0;
        for (dim_t e = 0; e < r0.numel(); ++e)
            differ += std::memcmp(r0.f32() + e, r1.f32() + e, sizeof(float)) != 0;
        CHECK(differ == 0);
    }
}
