// col2im's blocked and transposed backward data against `direct`, and auto's choice between
// col2im and implicit_gemm for the backward data. Integer data: exact.
#include <doctest/doctest.h>

#include "fast_paths.hpp"

TEST_CASE("col2im in blocks of output rows, each thread's band of dX, equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(73);
    // Forced on small problems (1-D to 3-D, strides 1-3, stride 2 along w with dilation, uneven
    // padding, groups, 2 images; weights read in place or prepared), on 1 and 2 threads (bands
    // of each image's dX, or with 2 images and 2 groups on 2 threads whole images a thread),
    // with every microkernel: against direct, with "gemm" and "col2im" recorded.
    const char* descs[] = {"mb1ic3ih30oc8oh15kh7sh2ph3",
                           "mb2g2ic6ih49iw49oc4oh24ow23kh3kw5sh2sw2ph1pw2dh1dw1",
                           "mb1ic5iw41oc7ow14kw4sw3pw3", "mb1ic4ih12oc6oh12kh3ph1",
                           "mb1ic2id5ih6iw9oc3od3oh6ow5kd2kh3kw3sd2sh1sw2pd1ph1pw2"};
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    tn.col2im_blocks = Rule::Always;
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        for (const int threads : {1, 2}) {
            set_num_threads(threads);
            for (const char* d : descs) {
                CAPTURE(d);
                CAPTURE(uks[u].isa);
                CAPTURE(threads);
                const Problem p = parse_descriptor(d);
                REQUIRE(p.validate() == "");
                CHECK(detail::col2im_in_blocks(p, tn));
                const Tensor dy = integer_tensor(p.dst_dims(), rng),
                             w = integer_tensor(p.wei_dims(), rng);
                const Tensor want = backward_data(p, dy, w, "direct");
                Profiler prof;
                check_equal(backward_data(p, dy, w, "col2im", &prof, nullptr, tn), want, d);
                CHECK(prof.seconds("gemm") > 0.0);
                CHECK(prof.seconds("col2im") > 0.0);
                const PreparedWeights pw =
                    prepare_weights(p, Pass::BackwardData, w.f32(), nullptr, tn);
                check_equal(backward_data(p, dy, w, "col2im", nullptr, &pw, tn), want, d);
            }
        }
    }
    set_num_threads(0);
    REQUIRE(detail::select_microkernel(uks[0].isa));
    // By default: where one image's column matrix is 4 MiB or more. conv1's (7.4 MB) then never
    // exists whole: no work buffer reaches 1 MiB, where the whole matrix was one; the same dX.
    tn.col2im_blocks = Rule::Auto;
    const Problem conv1 = parse_descriptor("mb1ic3ih224oc64oh112kh7sh2ph3");
    CHECK(detail::col2im_in_blocks(conv1, tn));
    CHECK(detail::col2im_in_blocks(parse_descriptor("mb2ic64ih56oc64oh56kh3ph1"), tn));  // 7.2 MB
    CHECK(!detail::col2im_in_blocks(parse_descriptor("mb1ic3ih30oc8oh15kh7sh2ph3"), tn));
    CHECK(
        !detail::col2im_in_blocks(parse_descriptor("mb1ic256ih56oc64oh56kh1ph0"), tn));  // identity
    CHECK(!detail::col2im_in_blocks(parse_descriptor("mb1ic512ih7oc512oh7kh3ph1"), tn));  // 0.9 MB
    const Tensor dy = integer_tensor(conv1.dst_dims(), rng),
                 w = integer_tensor(conv1.wei_dims(), rng);
    detail::reset_scratch_high_water();
    const Tensor blocks = backward_data(conv1, dy, w, "col2im", nullptr, nullptr, tn);
    CHECK(detail::scratch_high_water() < (1u << 20));
    tn.col2im_blocks = Rule::Never;
    CHECK(!detail::col2im_in_blocks(conv1, tn));
    detail::reset_scratch_high_water();
    check_equal(blocks, backward_data(conv1, dy, w, "col2im", nullptr, nullptr, tn),
                "conv1, blocks against whole");
    CHECK(detail::scratch_high_water() >= 147u * 12544u * sizeof(float));
    // Forced, still not where one GEMM takes several images' columns, nor on Eigen's core.
    tn.col2im_blocks = Rule::Always;
    CHECK(!detail::col2im_in_blocks(parse_descriptor("mb4ic512ih7oc512oh7kh3ph1"), tn));
    tn.gemm_core = GemmCore::eigen;
    CHECK(!detail::col2im_in_blocks(parse_descriptor("mb1ic3ih30oc8oh15kh7sh2ph3"), tn));
}

TEST_CASE("col2im's 1x1 backward data computed transposed") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(71);
    // dX^T = dY^T W, then transposed into dX: stride-1 1x1 problems of 1 or 2 images with at
    // least 1024 positions and fewer input than output channels, groups, 1-D to 3-D, with every
    // microkernel; they record "unpack" (the transposition), the Eigen core does not take it.
    const char* descs[] = {"mb1ic64ih56oc256oh56kh1ph0", "mb2ic5ih40iw30oc17oh40ow30kh1kw1ph0pw0",
                           "mb1g2ic14ih1100oc38oh1100kh1ph0",
                           "mb2ic3id8ih12iw11oc40od8oh12ow11kd1kh1kw1pd0ph0pw0"};
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    tn.swap_bwd_data = Rule::Always;
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        for (const char* d : descs) {
            CAPTURE(d);
            CAPTURE(uks[u].isa);
            const Problem p = parse_descriptor(d);
            CHECK(detail::swapped_bwd_data(p, tn));
            const Tensor dy = integer_tensor(p.dst_dims(), rng),
                         w = integer_tensor(p.wei_dims(), rng);
            Profiler prof;
            check_equal(backward_data(p, dy, w, "col2im", &prof, nullptr, tn),
                        backward_data(p, dy, w, "direct"), d);
            CHECK(prof.seconds("unpack") > 0.0);
        }
    }
    // By default: fewer input than output channels; with the AVX-512 microkernel from 784
    // positions (28x28), not at 14x14 and 7x7; with the others at 7x7 only.
    tn.swap_bwd_data = Rule::Auto;
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        CAPTURE(uks[u].isa);
        const bool avx512 = std::string_view(uks[u].isa) == "avx512";
        CHECK(!detail::swapped_bwd_data(parse_descriptor("mb1ic256ih56oc64oh56kh1ph0"), tn));
        CHECK(detail::swapped_bwd_data(parse_descriptor("mb1ic64ih56oc256oh56kh1ph0"), tn) ==
              avx512);
        CHECK(detail::swapped_bwd_data(parse_descriptor("mb1ic128ih28oc512oh28kh1ph0"), tn) ==
              avx512);
        CHECK(!detail::swapped_bwd_data(parse_descriptor("mb1ic256ih14oc1024oh14kh1ph0"), tn));
        CHECK(detail::swapped_bwd_data(parse_descriptor("mb1ic512ih7oc2048oh7kh1ph0"), tn) ==
              !avx512);
        CHECK(!detail::swapped_bwd_data(parse_descriptor("mb1ic2048ih7oc512oh7kh1ph0"), tn));
        CHECK(!detail::swapped_bwd_data(parse_descriptor("mb1ic64ih56oc256oh56kh3ph1"), tn));
    }
    REQUIRE(detail::select_microkernel(uks[0].isa));
    tn.swap_bwd_data = Rule::Never;
    CHECK(!detail::swapped_bwd_data(parse_descriptor("mb1ic64ih56oc256oh56kh1ph0"), tn));
    tn.swap_bwd_data = Rule::Auto;
    tn.gemm_core = GemmCore::eigen;
    CHECK(!detail::swapped_bwd_data(parse_descriptor("mb1ic64ih56oc256oh56kh1ph0"), tn));
}

TEST_CASE("auto: backward data by col2im, by implicit_gemm on batched small 3x3 stride-1 layers") {
    Tuning tn;
    std::mt19937 rng(8);
    // The algorithm auto ran shows in its spans: col2im records "col2im", implicit_gemm's
    // stride phases do not.
    const auto ran_col2im = [&](const char* d) {
        const Problem p = parse_descriptor(d);
        const Tensor dy = integer_tensor(p.dst_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        Profiler prof;
        const Tensor dx = backward_data(p, dy, wei, "auto", &prof, nullptr, tn);
        check_equal(dx, backward_data(p, dy, wei, "direct"), d);
        return prof.seconds("col2im") > 0.0;
    };
    tn.winograd = Rule::Never;                         // auto's choices besides winograd
    CHECK(!ran_col2im("mb8ic16ih7oc16oh7kh3ph1"));     // batch 8, 7x7, 3x3 stride 1
    CHECK(!ran_col2im("mb8ic16ih14oc16oh14kh3ph1"));   // 14x14
    CHECK(ran_col2im("mb4ic16ih7oc16oh7kh3ph1"));      // batch 4
    CHECK(ran_col2im("mb8ic16ih28oc16oh28kh3ph1"));    // 28x28: 784 positions
    CHECK(ran_col2im("mb8ic16ih14oc16oh7kh3sh2ph1"));  // stride 2
}
