// implicit_gemm's 1x1 forward under the rules of cores with 2 MiB of L2 per core or more
// (Tuning::large_l2_forward): below 4 images the pointwise tiles only on unstrided outputs of 65
// to 256 positions and strided ones of 784 or more with fewer output than input channels, from 4
// images unstrided ones of at most 784 positions and strided ones of 196 or more with fewer
// output than input channels, and no swapped forward; every re-routed layer against `direct`, exact
// on integer data, with every microkernel.
#include <doctest/doctest.h>

#include "fast_paths.hpp"

TEST_CASE("implicit_gemm's 1x1 forward with 2 MiB of L2: the GEMM below 4 images on most layers") {
    RestoreCore restore;
    std::mt19937 rng(2207);
    Tuning large, small;
    large.large_l2_forward = Rule::Always;
    small.large_l2_forward = Rule::Never;
    // Each case: whether the large-L2 rules run the pointwise tiles with W^T prepared (where the
    // ISA has the tiles' kernels) and whether the 1-2 MiB rules do. 1-D to 3-D, groups, channel
    // counts off the 32-channel panels, 1 and 3 images, strided by 2 read in place and by 3
    // sampled, outputs of 49 to 784 positions.
    struct Case {
        const char* d;
        bool tiles_large, tiles_small;
    };
    const Case cases[] = {
        {"mb1ic130ih14oc70oh14kh1ph0", true, true},                 // 196 positions: the tiles
        {"mb1ic520ih15oc45oh15kh1ph0", true, true},                 // 225
        {"mb1g2ic80ih14oc100oh14kh1ph0", true, true},               // groups of 40 -> 50
        {"mb3ic40id4ih7iw7oc40od4oh7ow7kd1kh1kw1ph0", true, true},  // 3-D, 196
        {"mb1ic40ih48oc600oh24kh1sh2ph0", false, true},             // strided by 2, in place
        {"mb1ic100ih56oc40oh28kh1sh2ph0", true, true},              // strided to 784, fewer out
        {"mb1ic40ih56oc70oh28kh1sh2ph0", false, true},              // strided to 784, more out
        {"mb1ic80ih13oc70oh7kh1sh2ph0", false, true},               // strided to 7x7
        {"mb3ic36ih27oc230oh14kh1sh2ph0", false, true},             // strided to 14x14
        {"mb1ic100ih7oc40oh7kh1ph0", false, true},                  // 49 positions
        {"mb1ic520ih28oc45oh28kh1ph0", false, true},                // 784, a long reduction
        {"mb1ic36iw200oc40ow100kw1sw2pw0", false, true},            // 1-D, strided by 2
        // 4 images: the tiles, but unstrided to more than 784 positions, and strided with more
        // output than input channels (the projections) or to fewer than 196 positions, the GEMM.
        {"mb4ic40ih48oc100oh24kh1sh2ph0", false, true},
        {"mb4ic100ih28oc40oh14kh1sh2ph0", true, true},   // strided to 196, fewer out
        {"mb4ic100ih26oc40oh13kh1sh2ph0", false, true},  // strided to 169
        {"mb5ic40ih14oc100oh14kh1ph0", true, true},      // unstrided
        {"mb4ic256ih30oc36oh30kh1ph0", false, true},     // unstrided to 900: the GEMM
    };
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    int rerouted = 0;
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        CAPTURE(uks[u].isa);
        const bool avx512 = detail::avx512_selected();
        CHECK(detail::large_l2_forward(large) == avx512);
        CHECK(!detail::large_l2_forward(small));
        for (const auto& [d, tiles_large, tiles_small] : cases) {
            const Problem p = parse_descriptor(d);
            CAPTURE(d);
            REQUIRE(p.validate().empty());
            const bool on_small = detail::pointwise_forward_applies(p, small, true);
            const bool on_large = detail::pointwise_forward_applies(p, large, true);
            if (avx512 && pointwise_kernels() && strided_rows_kernels()) {
                CHECK(on_small == tiles_small);
                CHECK(on_large == tiles_large);
            }
            if (!avx512) CHECK(on_large == on_small);  // AVX2 and portable: the same rules
            if (on_large != on_small) ++rerouted;
            const Tensor src = integer_tensor(p.src_dims(), rng),
                         wei = integer_tensor(p.wei_dims(), rng);
            const Tensor want = forward(p, src, wei, nullptr, "direct");
            for (const Tuning& tn : {large, small}) {
                const PreparedWeights w = prepare_weights(p, Pass::Forward, wei.f32(), nullptr, tn);
                CHECK(w.empty() == !detail::pointwise_forward_applies(p, tn, true));
                for (int threads : {2, 1}) {
                    set_num_threads(threads);
                    for (const char* algo : {"implicit_gemm", "auto"}) {
                        check_equal(forward(p, src, wei, nullptr, algo, nullptr, &w, tn), want, d);
                        check_equal(forward(p, src, wei, nullptr, algo, nullptr, nullptr, tn), want,
                                    d);
                    }
                }
            }
            set_num_threads(0);
        }
    }
    if (pointwise_kernels() && strided_rows_kernels()) CHECK(rerouted >= 7);
    // The swapped forward: not below 4 images under the large-L2 rules (the plain GEMM, W read
    // in place), from its sampled copy and stride 1; the same result.
    REQUIRE(detail::select_microkernel(uks[0].isa));
    const bool avx512 = detail::avx512_selected();
    for (const char* d : {"mb1ic512ih28oc128oh28kh1ph0", "mb1ic256ih56oc128oh28kh1sh2ph0",
                          "mb1ic300ih20oc100oh20kh1ph0"}) {
        const Problem p = parse_descriptor(d);
        CAPTURE(d);
        CHECK(detail::swapped_forward(p, small) == avx512);
        CHECK(!detail::swapped_forward(p, large));
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const Tensor want = forward(p, src, wei, nullptr, "direct");
        for (const Tuning& tn : {large, small}) {
            Profiler prof;
            check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &prof, nullptr, tn), want,
                        d);
            CHECK((prof.seconds("unpack") > 0.0) == detail::swapped_forward(p, tn));
        }
    }
    // From 4 images the swapped forward's own rule (the tiles take this one).
    CHECK(detail::swapped_forward(parse_descriptor("mb4ic300ih20oc100oh20kh1ph0"), large) ==
          detail::swapped_forward(parse_descriptor("mb4ic300ih20oc100oh20kh1ph0"), small));
}
