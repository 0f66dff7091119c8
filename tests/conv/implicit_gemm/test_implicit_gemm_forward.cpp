// implicit_gemm's forward paths against `direct`: padded stride-phase planes, W^T packed by
// panel, prepared weights, edge tiles, the input read in place, streamed rows, row lanes, 1x1
// tiles from the input's rows. Integer data: exact.
#include <doctest/doctest.h>

#include "fast_paths.hpp"

TEST_CASE("implicit_gemm's forward and weight gradient from padded stride-phase planes") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(31);
    int shifted = 0, shifted_wgrad = 0, shifted_bdata = 0;
    // Without the shifted tiles' kernels (shifted_possible) none of them runs: im2col and col2im
    // compute the same results.
    const bool has_shifted = shifted_kernels(), has_wgrad = shifted_wgrad_kernels();
    // Random 1-D and 2-D problems with strides, padding, dilation, groups and batches, the
    // shifted tiles forced wherever they apply; they record "pack_wei" (W^T), im2col does not.
    tn.shifted = Rule::Always;
    for (int t = 0; t < 60; ++t) {
        Problem p = larger_problem(rng, 1 + t % 2);
        if (t % 3 == 0)
            for (int i = 0; i < p.ndims; ++i) p.stride[i] = 1;
        if (!p.validate().empty() || p.kernel_spatial() < 2) continue;
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        Profiler prof;
        const Tensor y = forward(p, src, wei, nullptr, "implicit_gemm", &prof, nullptr, tn);
        check_equal(y, forward(p, src, wei, nullptr, "direct"), to_descriptor(p));
        shifted += prof.seconds("pack_wei") > 0.0;
        const Tensor dy = integer_tensor(p.dst_dims(), rng);
        Profiler wprof;  // the tiles' time is recorded, whichever way the threads split them
        check_equal(backward_weight(p, src, dy, "implicit_gemm", &wprof, tn),
                    backward_weight(p, src, dy, "direct"), to_descriptor(p) + " bwd_weight");
        CHECK(wprof.seconds("gemm") > 0.0);
        shifted_wgrad += detail::shifted_applies(p, Pass::BackwardWeight, tn, nullptr);
        // Stride 1: backward data as the forward of FlipRot(W) over dY (it records "fliprot").
        const Tensor w2 = integer_tensor(p.wei_dims(), rng);
        Profiler bprof;
        check_equal(backward_data(p, dy, w2, "implicit_gemm", &bprof, nullptr, tn),
                    backward_data(p, dy, w2, "direct"), to_descriptor(p) + " bwd_data");
        CHECK((bprof.seconds("fliprot") > 0.0) ==
              detail::shifted_applies(p, Pass::BackwardData, tn, nullptr));
        shifted_bdata += detail::shifted_applies(p, Pass::BackwardData, tn, nullptr);
    }
    if (has_shifted) {
        CHECK(shifted >= 30);
        CHECK(shifted_bdata >= 10);
    } else {
        CHECK(shifted == 0);
        CHECK(shifted_bdata == 0);
    }
    if (has_wgrad)
        CHECK(shifted_wgrad >= 30);
    else
        CHECK(shifted_wgrad == 0);
    // The weight gradient's thread splits: whole images per thread, then the partials added
    // (batch 4), and the tiles of each image (batches 1 and 2).
    for (const char* d : {"mb4ic16ih30oc40oh30kh3ph1", "mb1ic3ih96oc64oh48kh7sh2ph3",
                          "mb2ic3ih100oc70oh50kh7sh2ph3"}) {
        const Problem p = parse_descriptor(d);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     dy = integer_tensor(p.dst_dims(), rng);
        CHECK(detail::shifted_applies(p, Pass::BackwardWeight, tn, nullptr) == has_wgrad);
        check_equal(backward_weight(p, src, dy, "implicit_gemm", nullptr, tn),
                    backward_weight(p, src, dy, "direct"), d);
    }
    // By default only products of 32 or more output channels per group and 196 or more output
    // positions per group take it, short reductions too.
    tn.shifted = Rule::Auto;
    // The weight gradient by default from outputs 14 wide (not 7) with 32 or more channels.
    const auto wgrad_shifted = [&](const char* d) {
        return detail::shifted_applies(parse_descriptor(d), Pass::BackwardWeight, tn, nullptr);
    };
    CHECK(wgrad_shifted("mb2ic32ih14oc32oh14kh3ph1") == has_wgrad);
    CHECK_FALSE(wgrad_shifted("mb2ic32ih7oc32oh7kh3ph1"));
    CHECK_FALSE(wgrad_shifted("mb2ic32ih14oc16oh14kh3ph1"));
    const auto ran_shifted = [&](const char* d) { return forward_packed_wei(d, rng, tn); };
    // Ran them where the microkernel has them, not elsewhere.
    const auto takes_shifted = [&](const char* d) { return ran_shifted(d) == has_shifted; };
    // AVX2's narrower tiles only on rows of 28 or more outputs.
    const auto takes_wide = [&](const char* d) {
        return ran_shifted(d) == (has_shifted && !narrow_tiles());
    };
    set_num_threads(2);
    CHECK(takes_shifted("mb2ic32ih30oc40oh30kh3ph1"));
    CHECK(!ran_shifted("mb2ic32ih7oc40oh7kh3ph1"));        // 98 positions: packing W^T does not pay
    CHECK(takes_wide("mb4ic32ih7oc40oh7kh3ph1"));          // four 7x7 images
    CHECK(takes_wide("mb2ic32ih14oc40oh14kh3ph1"));        // 14 wide
    CHECK(takes_shifted("mb1ic32ih60oc32oh30kh3sh2ph1"));  // stride 2
    CHECK(takes_shifted("mb2ic8ih30oc40oh30kh3ph1"));      // K = 72, two images
    CHECK(takes_shifted("mb4ic8ih30oc40oh30kh3ph1"));      // four images, side by side
    CHECK(takes_shifted("mb1ic3ih64oc32oh32kh7sh2ph3"));   // conv1's shape: K = 147, one image
    CHECK(takes_shifted("mb4ic3ih64oc32oh32kh7sh2ph3"));   // four images
    CHECK(!ran_shifted("mb4ic3ih64oc16oh32kh7sh2ph3"));    // 16 output channels
    set_num_threads(1);
    CHECK(takes_shifted("mb4ic8ih30oc40oh30kh3ph1"));
    set_num_threads(0);
    // Backward data (auto too): stride 1, wide inputs, 32 or more input channels per group.
    const auto ran_shifted_bdata = [&](const char* d, const char* algo) {
        const Problem p = parse_descriptor(d);
        const Tensor dy = integer_tensor(p.dst_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        Profiler prof;
        check_equal(backward_data(p, dy, wei, algo, &prof, nullptr, tn),
                    backward_data(p, dy, wei, "direct"), d);
        return prof.seconds("fliprot") > 0.0;
    };
    const auto takes_shifted_bdata = [&](const char* d, const char* algo) {
        return ran_shifted_bdata(d, algo) == has_shifted;
    };
    tn.winograd = Rule::Never;  // auto's choices besides winograd
    for (const char* algo : {"implicit_gemm", "auto"}) {
        CAPTURE(algo);
        CHECK(takes_shifted_bdata("mb2ic40ih30oc32oh30kh3ph1", algo));
        CHECK(takes_shifted_bdata("mb1ic32ih30oc64oh28kh3ph0", algo));    // no padding: q pads 2
        CHECK(!ran_shifted_bdata("mb1ic32ih60oc32oh30kh3sh2ph1", algo));  // stride 2
        CHECK(!ran_shifted_bdata("mb2ic16ih30oc40oh30kh3ph1", algo));     // 16 channels
        CHECK(!ran_shifted_bdata("mb1ic32ih7oc40oh7kh3ph1", algo));       // 49 positions
        CHECK(ran_shifted_bdata("mb4ic32ih7oc40oh7kh3ph1", algo) ==       // four 7x7 images
              (has_shifted && !narrow_tiles()));
    }
}

TEST_CASE("implicit_gemm's forward of one image packs W^T panel by panel and equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(67);
    // One image of one group whose W^T is larger than its planes: each thread packs a panel
    // just before its tiles (its panels' rows reordered to (kh, ci, kw) in the same pass), so
    // the work buffers stay below W^T. Random 1-D and 2-D problems with strides, padding,
    // dilation and channel counts off the 32-channel panels, the shifted tiles forced, on 2
    // threads (a panel's tiles can be split between them) and on one. Without the shifted
    // tiles' kernels (shifted_possible), every such problem through the GEMM, which packs no
    // W^T, checked the same.
    const bool has_shifted = shifted_kernels();
    tn.shifted = Rule::Always;
    int ran = 0;
    for (int t = 0; t < 40; ++t) {
        Problem p = larger_problem(rng, 1 + t % 2);
        p.mb = 1;
        p.groups = 1;
        p.ic = 8 + t * 5 % 40;
        p.oc = 33 + t * 13 % 70;
        if (!p.validate().empty() || p.kernel_spatial() < 2 ||
            (has_shifted && !detail::shifted_applies(p, Pass::Forward, tn, nullptr)))
            continue;
        const std::size_t wt =
            static_cast<std::size_t>((p.oc + 31) / 32 * 32 * p.ic * p.kernel_spatial()) * 4;
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const Tensor want = forward(p, src, wei, nullptr, "direct");
        for (int threads : {2, 1}) {
            set_num_threads(threads);
            detail::reset_scratch_high_water();
            Profiler prof;
            check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &prof, nullptr, tn), want,
                        to_descriptor(p) + " on " + std::to_string(threads));
            CHECK((prof.seconds("pack_wei") > 0.0) == has_shifted);
            // Planes at least W^T's size: W^T packed whole first, as with several images.
            if (detail::scratch_high_water() < wt) ran += threads == 2;
        }
    }
    if (has_shifted) CHECK(ran >= 10);
    // By default it takes one 7x7 image too (res5a_branch2b's shape, 64 of its channels),
    // where W^T packed whole did not pay; two images or the backward data's FlipRot do not.
    tn.shifted = Rule::Auto;
    set_num_threads(2);
    const auto packed_by_panel = [&](const char* d) {
        const Problem p = parse_descriptor(d);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        detail::reset_scratch_high_water();
        Profiler prof;
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &prof, nullptr, tn),
                    forward(p, src, wei, nullptr, "direct"), d);
        return prof.seconds("pack_wei") > 0.0 &&
               detail::scratch_high_water() < std::size_t{64} * p.ic * 9 * 4;
    };
    CHECK(packed_by_panel("mb1ic512ih7oc64oh7kh3ph1") == (has_shifted && !narrow_tiles()));
    CHECK_FALSE(packed_by_panel("mb2ic512ih7oc64oh7kh3ph1"));
    CHECK_FALSE(detail::shifted_applies(parse_descriptor("mb1ic64ih7oc512oh7kh3ph1"),
                                        Pass::BackwardData, tn, nullptr));
    set_num_threads(0);
}

TEST_CASE("implicit_gemm with weights prepared once equals direct and packs nothing per call") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(71);
    // Random 1-D to 3-D problems with strides, padding, dilation, groups and channel counts off
    // the 32-channel panels; the forward with the shifted tiles forced and by default (1x1s take
    // the pointwise tiles), and the backward data (its stride-1 3x3s through FlipRot's panels).
    // Prepared, a call records no packing of its own; the panels are the same floats, so the
    // results match direct exactly. The panels exist only where the tiles can run: the shifted
    // tiles' kernels (shifted_possible) for the 3x3s and FlipRot, the pointwise tiles'
    // (pointwise_possible) for the 1x1s, and for the stride-2 1x1s below read in place, the
    // stride-2 row tiles' (strided_rows_apply); without them nothing is prepared.
    const bool has_shifted = shifted_kernels(), has_pointwise = pointwise_kernels(),
               has_strided_rows = strided_rows_kernels();
    int prepared_fwd = 0, prepared_bwd = 0;
    for (int t = 0; t < 60; ++t) {
        tn.shifted = rule(t % 3 == 0 ? 1 : 0);
        Problem p = larger_problem(rng, 1 + t % 3);
        if (t % 4 == 1) {  // a 1x1 with many channels: the pointwise tiles
            p.ndims = 2;
            p.groups = 1;
            p.mb = 4;
            p.ic = 32 + t;
            p.oc = 33 + t % 50;
            p.kernel = {1, 1, 1};
            p.dilation = {1, 1, 1};
            p.pad_begin = p.pad_end = {0, 0, 0};
        }
        if (t % 4 == 3) {  // stride 1, padded within the kernel: backward data through FlipRot
            p.groups = 1;
            p.ic = 32 + t % 40;
            for (int i = 0; i < p.ndims; ++i) {
                const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
                p.stride[i] = 1;
                p.pad_begin[i] = std::min(p.pad_begin[i], span);
                p.pad_end[i] = std::min(p.pad_end[i], span);
            }
        }
        if (!p.validate().empty()) continue;
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const Tensor dy = integer_tensor(p.dst_dims(), rng);
        const std::string what = to_descriptor(p) + " shifted mode " + std::to_string(t % 3 == 0);
        for (const Pass pass : {Pass::Forward, Pass::BackwardData}) {
            Profiler packing;
            const PreparedWeights w = prepare_weights(p, pass, wei.f32(), &packing, tn);
            const char* op = pass == Pass::Forward ? "pack_wei" : "fliprot";
            CHECK_MESSAGE((packing.seconds(op) > 0.0) == !w.empty(), what);
            for (int threads : {2, 1}) {
                set_num_threads(threads);
                Profiler prof, plain;
                if (pass == Pass::Forward) {
                    check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &prof, &w, tn),
                                forward(p, src, wei, nullptr, "direct"), what + " fwd");
                    forward(p, src, wei, nullptr, "implicit_gemm", &plain, nullptr, tn);
                } else {
                    check_equal(backward_data(p, dy, wei, "implicit_gemm", &prof, &w, tn),
                                backward_data(p, dy, wei, "direct"), what + " bwd_data");
                    backward_data(p, dy, wei, "implicit_gemm", &plain, nullptr, tn);
                }
                // Packed per call without them only where prepare_weights packed, which
                // packs on more problems (the tiles then pay where packing per call did not).
                if (plain.seconds(op) > 0.0) CHECK_MESSAGE(!w.empty(), what);
                CHECK_MESSAGE(prof.seconds(op) == 0.0, what);
            }
            if (!w.empty()) ++(pass == Pass::Forward ? prepared_fwd : prepared_bwd);
        }
    }
    if (has_shifted && has_pointwise) {
        CHECK(prepared_fwd >= 20);
        CHECK(prepared_bwd >= 5);
    }
    set_num_threads(0);
    // The layers that pack: a 3x3 forward, a 1x1 forward of 4 images, a 3x3's backward data;
    // with AVX2's tiles (narrow_tiles), not at 14 wide nor that 1x1, but at 28 wide.
    const bool wide = !narrow_tiles();
    for (const auto& [d, pass, tiles] :
         {std::tuple{"mb1ic64ih14oc96oh14kh3ph1", Pass::Forward, has_shifted && wide},
          std::tuple{"mb4ic64ih14oc96oh14kh1ph0", Pass::Forward, has_pointwise && wide},
          std::tuple{"mb1ic64ih14oc96oh14kh3ph1", Pass::BackwardData, has_shifted && wide},
          std::tuple{"mb1ic64ih28oc96oh28kh3ph1", Pass::Forward, has_shifted},
          std::tuple{"mb1ic64ih28oc96oh28kh3ph1", Pass::BackwardData, has_shifted}}) {
        const Problem p = parse_descriptor(d);
        const Tensor wei = integer_tensor(p.wei_dims(), rng);
        CHECK_MESSAGE(prepare_weights(p, pass, wei.f32(), nullptr, tn).empty() == !tiles, d);
    }
    // One 7x7 image's backward data: col2im (auto) or the phases (implicit_gemm) per call, the
    // FlipRot tiles with FlipRot(W) prepared.
    {
        const Problem p = parse_descriptor("mb1ic64ih7oc64oh7kh3ph1");
        const Tensor dy = integer_tensor(p.dst_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const Tensor want = backward_data(p, dy, wei, "direct");
        const PreparedWeights w = prepare_weights(p, Pass::BackwardData, wei.f32(), nullptr, tn);
        CHECK(w.empty() == !(has_shifted && wide));
        CHECK_FALSE(detail::shifted_applies(p, Pass::BackwardData, tn, nullptr));
        for (const char* algo : {"auto", "implicit_gemm"}) {
            Profiler plain, prepared;
            check_equal(backward_data(p, dy, wei, algo, &plain, nullptr, tn), want, algo);
            check_equal(backward_data(p, dy, wei, algo, &prepared, &w, tn), want, algo);
            if (has_shifted && wide)
                CHECK_MESSAGE(prepared.entries().size() == 1, algo);  // the tiles' gemm alone
            CHECK_MESSAGE(prepared.seconds("gemm") > 0.0, algo);
            CHECK_MESSAGE(plain.entries().size() > 1, algo);
        }
    }
    // One image's 1x1 forwards that the GEMM takes per call (the input read in place
    // and transposed, or sampled at the strides first) and the pointwise tiles with W^T
    // prepared: stride 2 read in place (output 24 wide with a leftover input column, and 25),
    // long reductions at 14x14 and 15x15, and outputs with fewer positions than output
    // channels (the threads split the panels: 19, 3 and 8 of them), channels on and off the
    // 32-channel panels. Where the tiles read the input in place, the GEMM's sampled copy or
    // transposition is gone, also to 7x7 and 14x14; 6 wide, or strided by 3, both sample it
    // (same records: the results tell). AVX2's tiles (narrow) only those strided by 2 and read
    // in place with at most 128 output channels. These are the rules of cores with less than 2
    // MiB of L2 (large_l2_forward Never; its own are held in test_implicit_gemm_large_l2.cpp).
    tn.large_l2_forward = Rule::Never;
    struct OneImage {
        const char* d;
        bool sampled, narrow;
    };
    for (const auto& [d, sampled, narrow] :
         {OneImage{"mb1ic40ih48oc36oh24kh1sh2ph0", false, true},
          OneImage{"mb1ic40ih49oc70oh25kh1sh2ph0", false, true},
          OneImage{"mb1ic512ih14oc64oh14kh1ph0", false, false},
          OneImage{"mb1ic520ih15oc45oh15kh1ph0", false, false},
          OneImage{"mb1ic40ih48oc600oh24kh1sh2ph0", false, false},
          OneImage{"mb1ic80ih13oc70oh7kh1sh2ph0", false, true},
          OneImage{"mb1ic36ih27oc230oh14kh1sh2ph0", false, false},
          OneImage{"mb1ic80ih11oc70oh6kh1sh2ph0", true, false},
          OneImage{"mb1ic36ih40oc230oh14kh1sh3ph0", true, false}}) {
        const Problem p = parse_descriptor(d);
        const std::string what = d;
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const Tensor want = forward(p, src, wei, nullptr, "direct");
        const PreparedWeights w = prepare_weights(p, Pass::Forward, wei.f32(), nullptr, tn);
        const bool tiles = has_pointwise && has_strided_rows && (wide || narrow);
        CHECK_MESSAGE(w.empty() == !tiles, what);
        for (int threads : {2, 1}) {
            set_num_threads(threads);
            Profiler plain, prepared;
            check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &plain, nullptr, tn), want,
                        what);
            check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &prepared, &w, tn), want,
                        what);
            // The GEMM per call, with pack_src (strided) or unpack (computed transposed,
            // swapped_forward: with the AVX-512 microkernel only).
            const bool strided = p.stride[0] != 1 || p.stride[1] != 1;
            CHECK_MESSAGE(plain.seconds("pack_wei") == 0.0, what);
            CHECK_MESSAGE(
                (plain.entries().size() > 1) == (strided || detail::swapped_forward(p, tn)), what);
            // The tiles' gemm, after the sampled copy where there is one.
            if (tiles) {
                CHECK_MESSAGE(prepared.entries().size() == (sampled ? 2u : 1u), what);
                CHECK_MESSAGE((prepared.seconds("pack_src") > 0.0) == sampled, what);
            }
            CHECK_MESSAGE(prepared.seconds("gemm") > 0.0, what);
        }
    }
    set_num_threads(0);
    // Below 4 images, more output than input channels at 64 positions or fewer: the GEMM (W
    // read in place), nothing prepared, the same result.
    for (const char* d : {"mb1ic40ih13oc70oh7kh1sh2ph0", "mb2ic40ih8oc70oh8kh1ph0"}) {
        const Problem p = parse_descriptor(d);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const PreparedWeights w = prepare_weights(p, Pass::Forward, wei.f32(), nullptr, tn);
        CHECK_MESSAGE(w.empty(), d);
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", nullptr, &w, tn),
                    forward(p, src, wei, nullptr, "direct"), d);
    }
}

TEST_CASE(
    "col2im reads W^T's rows from prepared weights where its columns lie 4 KiB apart, or "
    "(without AVX-512) in 1x1s up to 28x28") {
    Tuning tn;
    // Strided 1x1 with rows (C/G) not a multiple of 12, two groups, a 3x3 (C times 9 taps),
    // images side by side in one product (7x7), and K a multiple of 1024 (rows padded by 16).
    std::mt19937 rng(2611);
    for (const char* d :
         {"mb1ic1030ih9oc45oh5kh1sh2ph0", "mb1g2ic2060ih6oc70oh6kh1ph0", "mb1ic120ih8oc40oh8kh3ph1",
          "mb3ic1024ih7oc64oh7kh1ph0", "mb1ic1024ih3oc1024oh3kh1ph0"}) {
        const Problem p = parse_descriptor(d);
        const std::string what = d;
        const Tensor dy = integer_tensor(p.dst_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng),
                     other = integer_tensor(p.wei_dims(), rng);
        const Tensor want = backward_data(p, dy, wei, "direct");
        REQUIRE_MESSAGE(detail::col2im_reads_prepared_rows(p, tn), what);
        const PreparedWeights w = prepare_weights(p, Pass::BackwardData, wei.f32());
        dim_t ld = 0;
        CHECK_MESSAGE(w.transposed_rows(p, Pass::BackwardData, ld) != nullptr, what);
        CHECK_MESSAGE((ld >= p.ocg() && ld % 16 == 0 && ld % 1024 != 0), what);
        for (int threads : {2, 1}) {
            set_num_threads(threads);
            check_equal(backward_data(p, dy, wei, "col2im", nullptr, &w), want, what);
            // What it read are the prepared rows: with other weights given to the call (which
            // the engine does not check), the result is still that of the prepared ones.
            check_equal(backward_data(p, dy, other, "col2im", nullptr, &w), want, what + " rows");
        }
    }
    set_num_threads(0);
    // Below 1024 rows W^T's columns are read in place: nothing prepared for col2im. Without
    // AVX-512 a 1x1 up to 784 positions reads prepared rows whatever its rows (and its product
    // is then not computed transposed, as it is unprepared at 7x7 with more output than input
    // channels), strided ones only below 4 images (from 4 the pointwise tiles take them); above
    // 784 positions not.
    const bool avx512 = detail::avx512_selected();
    for (const auto& [d, rows_avx2] : {std::pair{"mb1ic1000ih5oc40oh5kh1ph0", true},
                                       std::pair{"mb1ic100ih7oc300oh7kh1ph0", true},
                                       std::pair{"mb1ic64ih28oc96oh28kh1ph0", true},
                                       std::pair{"mb1ic64ih29oc96oh29kh1ph0", false},
                                       std::pair{"mb1ic100ih13oc300oh7kh1sh2ph0", true},
                                       std::pair{"mb3ic64ih56oc96oh28kh1sh2ph0", true},
                                       std::pair{"mb4ic100ih13oc300oh7kh1sh2ph0", false},
                                       std::pair{"mb1ic64ih58oc96oh29kh1sh2ph0", false}}) {
        const Problem small = parse_descriptor(d);
        const Tensor dy = integer_tensor(small.dst_dims(), rng),
                     wei = integer_tensor(small.wei_dims(), rng);
        const bool rows = rows_avx2 && !avx512;
        dim_t ld = 0;
        CHECK_MESSAGE(detail::col2im_reads_prepared_rows(small, tn) == rows, d);
        const PreparedWeights w = prepare_weights(small, Pass::BackwardData, wei.f32());
        CHECK_MESSAGE((w.transposed_rows(small, Pass::BackwardData, ld) != nullptr) == rows, d);
        const Tensor want = backward_data(small, dy, wei, "direct");
        check_equal(backward_data(small, dy, wei, "col2im", nullptr, &w), want, d);
        if (rows)  // the prepared rows read, not the weights given to the call
            check_equal(backward_data(small, dy, integer_tensor(small.wei_dims(), rng), "col2im",
                                      nullptr, &w),
                        want, std::string(d) + " rows");
    }
    // Prepared for another problem: refused, naming "prepared".
    const Problem p = parse_descriptor("mb1ic1030ih9oc45oh5kh1sh2ph0");
    Problem q = p;
    q.oc = 46;
    const PreparedWeights for_q =
        prepare_weights(q, Pass::BackwardData, integer_tensor(q.wei_dims(), rng).f32());
    CHECK_THROWS_WITH_AS(
        backward_data(p, integer_tensor(p.dst_dims(), rng), integer_tensor(p.wei_dims(), rng),
                      "col2im", nullptr, &for_q),
        doctest::Contains("prepared: weights prepared for bwd_data of"), Error);
}

TEST_CASE("prepared weights of another problem or pass are refused, naming 'prepared'") {
    std::mt19937 rng(73);
    const Problem p = parse_descriptor("mb1ic64ih14oc96oh14kh3ph1");
    Problem other = p;
    other.oc = 64;
    const Tensor src = integer_tensor(p.src_dims(), rng), wei = integer_tensor(p.wei_dims(), rng);
    const Tensor dy = integer_tensor(p.dst_dims(), rng);
    const PreparedWeights fwd = prepare_weights(p, Pass::Forward, wei.f32());
    const PreparedWeights for_other =
        prepare_weights(other, Pass::Forward, integer_tensor(other.wei_dims(), rng).f32());
    CHECK_THROWS_WITH_AS(forward(p, src, wei, nullptr, "implicit_gemm", nullptr, &for_other),
                         doctest::Contains("prepared: weights prepared for fwd of"), Error);
    CHECK_THROWS_WITH_AS(backward_data(p, dy, wei, "implicit_gemm", nullptr, &fwd),
                         doctest::Contains("not for this call's bwd_data"), Error);
    CHECK_THROWS_WITH_AS(prepare_weights(p, Pass::BackwardWeight, wei.f32()),
                         doctest::Contains("pass: weights are prepared for fwd and bwd_data"),
                         Error);
    Problem bad = p;
    bad.stride[1] = 0;
    CHECK_THROWS_AS(prepare_weights(bad, Pass::Forward, wei.f32()), Error);
    // A name is a label, not part of the problem.
    Problem named = p;
    named.name = "res";
    check_equal(forward(named, src, wei, nullptr, "implicit_gemm", nullptr, &fwd),
                forward(p, src, wei, nullptr, "direct"), "named");
}

TEST_CASE("implicit_gemm's image-parallel paths record each thread's operations") {
    RestoreCore restore;
    std::mt19937 rng(89);
    set_num_threads(2);
    // Whole images side by side on the two threads: each thread's spans are kept apart, then
    // each operation is its mean over the threads, so the operations show (not one "gemm" for
    // the region) and add up to no more than the call's time (the threads' spans summed would
    // come to about twice it). Each path's operations where the microkernel has its tiles and
    // the default rules take them (sh: the shifted ones, shifted_possible, not AVX2's at 20 wide;
    // shw: the weight gradient's; pw: the 1x1 ones, pointwise_possible, AVX2's only strided by 2
    // in place); elsewhere the GEMM paths run instead and record their "gemm".
    struct Case {
        const char* d;
        Pass pass;
        bool tiles;  // the kernels of the path whose operations are listed
        std::vector<const char*> ops;
    };
    const bool sh = shifted_kernels() && !narrow_tiles(), shw = shifted_wgrad_kernels(),
               pw = pointwise_kernels();
    const std::vector<Case> cases{
        {"mb4ic16ih20oc40oh20kh5ph2", Pass::Forward, sh, {"pack_wei", "pad", "gemm"}},  // shifted
        {"mb4ic16ih20oc40oh20kh3ph1", Pass::Forward, sh, {"pack_wei", "gemm"}},         // in place
        {"mb4ic40ih21oc36oh7kh1sh3ph0",
         Pass::Forward,
         pw && !narrow_tiles(),
         {"pack_wei", "pack_src", "gemm"}},
        {"mb4ic40ih20oc36oh10kh1sh2ph0", Pass::Forward, pw, {"pack_wei", "gemm"}},  // in place
        {"mb4ic8ih20oc40oh20kh1ph0", Pass::Forward, true, {"gemm"}},  // GEMM, image blocks
        {"mb4ic16ih28oc40oh14kh3sh2ph1", Pass::BackwardWeight, shw, {"pad", "pack_dst", "gemm"}},
        {"mb4ic16ih20oc40oh20kh3ph1", Pass::BackwardWeight, shw, {"pack_dst", "gemm"}},  // in place
        {"mb4ic40ih20oc36oh10kh1sh2ph0", Pass::BackwardWeight, true, {"pack_src", "gemm"}},
        {"mb4ic40ih20oc16oh20kh5ph2", Pass::BackwardData, sh, {"fliprot", "pad", "gemm"}},
        {"mb4ic40ih20oc16oh20kh3ph1", Pass::BackwardData, sh, {"fliprot", "gemm"}},
        {"mb8ic16ih20oc40oh10kh3sh2ph1", Pass::BackwardData, true, {"gemm", "scatter"}},  // phases
    };
    for (const Case& c : cases) {
        const Problem p = parse_descriptor(c.d);
        const std::string what = std::string(c.d) + " " + pass_name(c.pass);
        CAPTURE(what);
        const Tensor x = integer_tensor(p.src_dims(), rng), w = integer_tensor(p.wei_dims(), rng),
                     dy = integer_tensor(p.dst_dims(), rng);
        // The 1x1 forward's rules of cores with less than 2 MiB of L2 (the others':
        // test_implicit_gemm_large_l2).
        Tuning tn;
        tn.large_l2_forward = Rule::Never;
        const auto run = [&](const char* algo, Profiler* prof) {
            return c.pass == Pass::Forward ? forward(p, x, w, nullptr, algo, prof, nullptr, tn)
                   : c.pass == Pass::BackwardWeight ? backward_weight(p, x, dy, algo, prof)
                                                    : backward_data(p, dy, w, algo, prof);
        };
        Profiler prof;
        const auto t0 = std::chrono::steady_clock::now();
        const Tensor got = run("implicit_gemm", &prof);
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        check_equal(got, run("direct", nullptr), c.d);
        for (const std::string op : c.ops) {
            CAPTURE(op);
            if (c.tiles) CHECK(prof.seconds(op) > 0.0);
        }
        if (!c.tiles) CHECK(prof.seconds("gemm") > 0.0);
        CHECK(prof.total_seconds() <= wall);
    }
    set_num_threads(0);
}

TEST_CASE("stream_rows copies every row whatever the alignment") {
    std::mt19937 rng(59);
    for (int t = 0; t < 200; ++t) {
        const auto pick = [&](dim_t lo, dim_t hi) {
            return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
        };
        // Rows shorter than a line, ending inside one, or spanning several; dst at every
        // offset within a line and rows of any leading dimension.
        const dim_t rows = pick(1, 5), len = pick(1, 70), lds = len + pick(0, 3),
                    ldd = len + pick(0, 20), off = pick(0, 15);
        const std::vector<float> src = integers(static_cast<std::size_t>(rows * lds), rng);
        std::vector<float> dst(static_cast<std::size_t>(off + rows * ldd + 16), -99.0f);
        std::vector<float> want = dst;
        for (dim_t i = 0; i < rows; ++i)
            for (dim_t e = 0; e < len; ++e)
                want[static_cast<std::size_t>(off + i * ldd + e)] =
                    src[static_cast<std::size_t>(i * lds + e)];
        detail::stream_rows(src.data(), lds, rows, len, dst.data() + off, ldd);
        CAPTURE(rows);
        CAPTURE(len);
        CAPTURE(off);
        CHECK(dst == want);  // the gaps between rows and the ends untouched
    }
}

TEST_CASE("implicit_gemm's shifted edge tiles skip the padding column and equal direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(83);
    // 3 wide, stride 1, padded by 1 along w: the first and the last tile of each output row
    // (one tile that is both up to 12 wide, then 2 or more tiles) skip the taps that read the
    // padding column, in the forward and in the stride-1 backward data (its forward problem is
    // padded by 1 too). Heights with and without padding rows, 1 to 5 taps high, groups, and
    // output channels off the 32-channel panels. The edge tiles need their kernels
    // (edge_tiles_apply), the shifted tiles theirs (shifted_possible; without them the GEMM
    // paths run, packing no W^T and no FlipRot).
    const bool has_shifted = shifted_kernels(), has_edge = edge_kernels();
    tn.shifted = Rule::Always;
    int ran = 0;
    for (dim_t w = 1; w <= 30; w += w < 14 ? 1 : 5) {
        const dim_t kh = 1 + 2 * (w % 3), h = 1 + w % 4, g = w % 4 == 3 ? 2 : 1;
        const std::string d = "mb2g" + std::to_string(g) + "ic" + std::to_string(3 * g) + "ih" +
                              std::to_string(h) + "iw" + std::to_string(w) + "oc" +
                              std::to_string(33 * g) + "oh" + std::to_string(h) + "ow" +
                              std::to_string(w) + "kh" + std::to_string(kh) + "kw3ph" +
                              std::to_string(kh / 2) + "pw1";
        CAPTURE(d);
        const Problem p = parse_descriptor(d);
        REQUIRE(p.validate().empty());
        CHECK(detail::edge_tiles_apply(p, tn) == has_edge);
        ran += forward_packed_wei(d.c_str(), rng, tn);
        const Tensor dy = integer_tensor(p.dst_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        Profiler prof;
        check_equal(backward_data(p, dy, wei, "implicit_gemm", &prof, nullptr, tn),
                    backward_data(p, dy, wei, "direct"), d + " bwd_data");
        CHECK((prof.seconds("fliprot") > 0.0) == has_shifted);
    }
    CHECK(ran == (has_shifted ? 17 : 0));
    // Not for other widths, strides, dilations or paddings along w, nor when switched off.
    for (const char* d : {"mb1ic4ih6oc32oh6kh3ph0", "mb1ic4ih6oc32oh3kh3sh2ph1",
                          "mb1ic4ih6oc32oh6kh3dh1ph2", "mb1ic4ih6oc32oh6kh5ph2"})
        CHECK_FALSE(detail::edge_tiles_apply(parse_descriptor(d), tn));
    Problem cropped = parse_descriptor("mb1ic4ih6oc32oh6kh3ph1");  // no padding on the right
    cropped.pad_end[1] = 0;
    REQUIRE(cropped.validate().empty());
    CHECK_FALSE(detail::edge_tiles_apply(cropped, tn));
    tn.edge_tiles = Rule::Never;
    CHECK_FALSE(detail::edge_tiles_apply(parse_descriptor("mb1ic4ih6oc32oh6kh3ph1"), tn));
    CHECK(forward_packed_wei("mb2ic4ih6iw13oc32oh6ow13kh3kw3ph1pw1", rng, tn) == has_shifted);
    tn.edge_tiles = Rule::Auto;
}

TEST_CASE("implicit_gemm's shifted tiles read an unpadded input in place and equal direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(107);
    set_num_threads(2);
    // Where the edge tiles apply and the rows are not strided or dilated, the tiles read the
    // input itself (no "pad"), rows trimmed to the taps inside it: widths 1 to 29 (one tile
    // that is both edges, then several), heights 1 to 4 with 0 to 2 padding rows (kh 1 with
    // padding: output rows of no taps at all), kh 1, 3, 5, groups, one image (the threads
    // split its tiles or panels) and five (whole images per thread); forward and the stride-1
    // backward data, in place and, switched off, from the padded planes. In place needs the edge
    // tiles' kernels (edge_tiles_apply); the planes ("pad"), the shifted tiles' (shifted_possible:
    // without them the GEMM paths run, packing no W^T and no FlipRot, padding nothing).
    const bool has_shifted = shifted_kernels(), has_edge = edge_kernels();
    tn.shifted = Rule::Always;
    for (dim_t w = 1; w <= 29; w += w < 14 ? 1 : 5) {
        const dim_t kh = 1 + 2 * (w % 3), h = 1 + w % 4, ph = (w / 3) % 3, g = w % 4 == 3 ? 2 : 1;
        const dim_t oh = h + 2 * ph - kh + 1, mb = w % 2 ? 5 : 1;
        if (oh < 1) continue;
        const std::string d = "mb" + std::to_string(mb) + "g" + std::to_string(g) + "ic" +
                              std::to_string(5 * g) + "ih" + std::to_string(h) + "iw" +
                              std::to_string(w) + "oc" + std::to_string(40 * g) + "oh" +
                              std::to_string(oh) + "ow" + std::to_string(w) + "kh" +
                              std::to_string(kh) + "kw3ph" + std::to_string(ph) + "pw1";
        CAPTURE(d);
        const Problem p = parse_descriptor(d);
        REQUIRE(p.validate().empty());
        const Tensor x = integer_tensor(p.src_dims(), rng), wei = integer_tensor(p.wei_dims(), rng),
                     dy = integer_tensor(p.dst_dims(), rng);
        const Tensor y = forward(p, x, wei, nullptr, "direct");
        const Tensor dx = backward_data(p, dy, wei, "direct");
        for (int mode : {0, 2}) {
            tn.unpadded_tiles = rule(mode);
            CAPTURE(mode);
            const bool in_place = mode == 0 && has_edge, planes = has_shifted && !in_place;
            CHECK(detail::unpadded_tiles_apply(p, tn) == in_place);
            Profiler pf, pb;
            check_equal(forward(p, x, wei, nullptr, "implicit_gemm", &pf, nullptr, tn), y, d);
            CHECK((pf.seconds("pack_wei") > 0.0) == has_shifted);
            CHECK((pf.seconds("pad") > 0.0) == planes);
            check_equal(backward_data(p, dy, wei, "implicit_gemm", &pb, nullptr, tn), dx,
                        d + " bwd_data");
            if (ph <= kh / 2) {  // the backward data's forward problem is padded by 1 along w too
                CHECK((pb.seconds("fliprot") > 0.0) == has_shifted);
                CHECK((pb.seconds("pad") > 0.0) == planes);
            }
        }
        tn.unpadded_tiles = Rule::Auto;
    }
    // Not where the rows are strided or dilated, nor without the edge tiles.
    CHECK(detail::unpadded_tiles_apply(parse_descriptor("mb1ic4ih6oc32oh6kh3ph1"), tn) == has_edge);
    CHECK_FALSE(detail::unpadded_tiles_apply(
        parse_descriptor("mb1ic4ih7iw6oc32oh4ow6kh3kw3sh2ph1pw1"), tn));
    CHECK_FALSE(detail::unpadded_tiles_apply(
        parse_descriptor("mb1ic4ih8iw6oc32oh8ow6kh2kw3dh1ph1pw1"), tn));
    CHECK_FALSE(detail::unpadded_tiles_apply(parse_descriptor("mb1ic4ih6oc32oh6kh5ph2"), tn));
    set_num_threads(0);
}

TEST_CASE("implicit_gemm's shifted forward with its rows streamed equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(61);
    // Whole images per thread (4 or more images, 2 threads), the shifted tiles and streamed rows
    // forced: output widths off the 12-position tiles and off whole lines, channel counts off
    // the 32-channel panels, groups (rows of dst starting anywhere within a line). Without the
    // shifted tiles' kernels (shifted_possible), every such problem through the GEMM (its
    // output streamed too), checked the same.
    const bool has_shifted = shifted_kernels();
    tn.shifted = Rule::Always;
    tn.stream_output = Rule::Always;
    set_num_threads(2);
    int ran = 0;
    for (int t = 0; t < 24; ++t) {
        Problem p = larger_problem(rng, 2);
        p.mb = 4 + t % 3;
        if (!p.validate().empty() || p.kernel_spatial() < 2 ||
            (has_shifted && !detail::shifted_applies(p, Pass::Forward, tn, nullptr)))
            continue;
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", nullptr, nullptr, tn),
                    forward(p, src, wei, nullptr, "direct"), to_descriptor(p));
        ++ran;
    }
    if (has_shifted) CHECK(ran >= 12);
    // Wide rows (several tiles each): conv1's shape, 33 channels (a panel of 1), groups.
    for (const char* d : {"mb4ic3ih64oc40oh32kh7sh2ph3", "mb5ic8ih30oc33oh30kh3ph1",
                          "g2mb4ic8ih29oc64oh29kh3ph1"}) {
        const Problem p = parse_descriptor(d);
        CHECK(detail::shifted_applies(p, Pass::Forward, tn, nullptr) == has_shifted);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", nullptr, nullptr, tn),
                    forward(p, src, wei, nullptr, "direct"), d);
    }
    // By default, with whole images per thread, outputs of 16 MiB or more: conv1 at batch 32,
    // not at batch 4 (12.8 MB). One image at a time (batch 1, or one thread), from 512 KiB:
    // conv1 (3.2 MB) and 64 -> 64 at 56x56 (784 KiB), not 128 channels at 28x28 (392 KiB).
    set_num_threads(2);
    tn.stream_output = Rule::Auto;
    CHECK(detail::streams_output(parse_descriptor("mb32ic3ih224oc64oh112kh7sh2ph3"), tn));
    CHECK_FALSE(detail::streams_output(parse_descriptor("mb4ic3ih224oc64oh112kh7sh2ph3"), tn) ==
                test::kThreaded);
    CHECK(detail::streams_output(parse_descriptor("mb1ic3ih224oc64oh112kh7sh2ph3"), tn));
    CHECK(detail::streams_output(parse_descriptor("mb1ic64ih56oc64oh56kh1ph0"), tn));
    CHECK_FALSE(detail::streams_output(parse_descriptor("mb1ic256ih56oc128oh28kh1sh2ph0"), tn));
    set_num_threads(1);
    CHECK(detail::streams_output(parse_descriptor("mb4ic3ih224oc64oh112kh7sh2ph3"), tn));
    set_num_threads(0);
    tn.stream_output = Rule::Never;
    CHECK_FALSE(detail::streams_output(parse_descriptor("mb32ic3ih224oc64oh112kh7sh2ph3"), tn));
}

TEST_CASE("implicit_gemm's shifted forward with whole output rows in the lanes equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(63);
    // Output rows of 16 to 112 positions (1 to 7 vectors), 4 output channels a tile: channel
    // counts off the 4-channel tiles and the 32-channel panels (1, 5, 33, 70), groups, strides,
    // dilation, a leftover input column, rows whose taps reach into the padding (cut, kh_lo /
    // kh_hi), 1-D; one image (rows split between the threads) and 4 (whole images per
    // thread), on 2 and 1 threads, rows stored plainly and streamed; and the backward data of a
    // stride-1 problem through FlipRot (5x5: planes, not the input in place). The lanes need
    // their kernel for the row's width (row_lanes_apply), the shifted tiles theirs
    // (shifted_possible: without them the GEMM paths run, packing no FlipRot).
    const bool has_shifted = shifted_kernels();
    tn.shifted = Rule::Always;
    tn.row_lanes = Rule::Always;
    const char* cases[] = {
        "mb1ic3ih20iw64oc5oh10ow32kh7kw7sh2sw2ph3pw3",
        "mb4ic3ih24iw224oc33oh12ow112kh7kw7sh2sw2ph3pw3",
        "mb1ic4ih9iw48oc1oh9ow48kh3kw3ph2pw2dh1dw1",
        "mb1ic6ih5iw16oc70oh5ow16kh3kw3ph2pw2dh1dw1",
        "g2mb4ic8ih6iw64oc10oh6ow64kh3kw3ph2pw2dh1dw1",
        "mb1ic5ih7iw80oc8oh7ow80kh5kw5ph2pw2",
        "mb2ic3iw97oc40ow96kw2",
        "mb1ic4ih9iw34oc36oh3ow16kh3kw3sh3sw2ph1pw0",
    };
    for (const int stream : {2, 1}) {
        tn.stream_output = rule(stream);
        for (const char* d : cases) {
            const Problem p = parse_descriptor(d);
            CHECK_MESSAGE(detail::row_lanes_apply(p, tn) == row_lanes_kernel(p), d);
            CHECK_MESSAGE(detail::shifted_applies(p, Pass::Forward, tn, nullptr) == has_shifted, d);
            const Tensor src = integer_tensor(p.src_dims(), rng),
                         wei = integer_tensor(p.wei_dims(), rng);
            const Tensor want = forward(p, src, wei, nullptr, "direct");
            for (int threads : {2, 1}) {
                set_num_threads(threads);
                check_equal(forward(p, src, wei, nullptr, "implicit_gemm", nullptr, nullptr, tn),
                            want, d);
                const PreparedWeights w = prepare_weights(p, Pass::Forward, wei.f32(), nullptr, tn);
                check_equal(forward(p, src, wei, nullptr, "implicit_gemm", nullptr, &w, tn), want,
                            d);
            }
        }
    }
    set_num_threads(2);
    const Problem b = parse_descriptor("mb2ic6ih6iw32oc9oh6ow32kh5kw5ph2pw2");
    const Tensor dy = integer_tensor(b.dst_dims(), rng), wei = integer_tensor(b.wei_dims(), rng);
    Profiler prof;
    check_equal(backward_data(b, dy, wei, "implicit_gemm", &prof, nullptr, tn),
                backward_data(b, dy, wei, "direct"), "bwd_data through FlipRot");
    CHECK((prof.seconds("fliprot") > 0.0) == has_shifted);
    // Its forward problem (C and K swapped, padded by (k - 1) d - pad = 2).
    const Problem bq = parse_descriptor("mb2ic9ih6iw32oc6oh6ow32kh5kw5ph2pw2");
    CHECK(detail::row_lanes_apply(bq, tn) == row_lanes_kernel(bq));
    // By default from 64 positions (conv1's 112), not where the tiles read the input in place
    // (a 3x3 padded by 1), nor at widths off whole vectors or past 112; Never: never.
    tn.shifted = Rule::Auto;
    tn.row_lanes = Rule::Auto;
    tn.stream_output = Rule::Auto;
    for (const char* d : {"mb32ic3ih224oc64oh112kh7sh2ph3", "mb1ic8ih64oc32oh64kh5ph2"}) {
        const Problem p = parse_descriptor(d);
        CHECK_MESSAGE(detail::row_lanes_apply(p, tn) == row_lanes_kernel(p), d);
    }
    CHECK_FALSE(detail::row_lanes_apply(parse_descriptor("mb1ic8ih48oc32oh48kh5ph2"), tn));
    {  // read in place only with the edge tiles (AVX-512); without them the lanes run
        const Problem p = parse_descriptor("mb1ic8ih112oc32oh112kh3ph1");
        CHECK(detail::row_lanes_apply(p, tn) == (row_lanes_kernel(p) && !edge_kernels()));
    }
    CHECK_FALSE(detail::row_lanes_apply(parse_descriptor("mb1ic8ih72oc32oh72kh5ph2"), tn));
    CHECK_FALSE(detail::row_lanes_apply(parse_descriptor("mb1ic8ih128oc32oh128kh5ph2"), tn));
    tn.row_lanes = Rule::Never;
    CHECK_FALSE(detail::row_lanes_apply(parse_descriptor("mb32ic3ih224oc64oh112kh7sh2ph3"), tn));
    set_num_threads(0);
}

TEST_CASE("implicit_gemm's GEMM forward writing dst by non-temporal stores equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(62);
    // Streaming forced on the GEMM paths that write dst in place (the shifted and 1x1 tiles
    // off): a 1x1 read in place (M = 64: 8 x 48 tiles; M = 80: 12 x 32), its reduction over
    // two KC blocks, a strided 1x1 from its sampled copy, a 3x3 from im2col, rows of 196
    // floats (not 64-byte multiples: stored plainly), groups (rows starting within a line).
    tn.shifted = Rule::Never;
    tn.stream_output = Rule::Always;
    for (const char* d :
         {"mb2ic64ih16oc64oh16kh1ph0", "mb2ic300ih16oc80oh16kh1ph0", "mb2ic32ih32oc48oh16kh1sh2ph0",
          "mb1ic8ih32oc64oh32kh3ph1", "mb2ic40ih14oc80oh14kh1ph0", "g2mb2ic16ih16oc40oh16kh1ph0"}) {
        const Problem p = parse_descriptor(d);
        CHECK(detail::streams_output(p, tn));
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", nullptr, nullptr, tn),
                    forward(p, src, wei, nullptr, "direct"), d);
    }
}

TEST_CASE("implicit_gemm's 1x1 forward from the input's rows equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(47);
    // Random 1x1 problems, unpadded, some strided (the input sampled first), with groups and
    // batches of 1 (threads split the tiles) and 5 (whole images per thread), channel counts
    // off the 32-channel panels and output lengths off the 12-position tiles; forced on, each
    // records "pack_wei" (W^T), which the GEMM path does not. The tiles need their kernels
    // (pointwise_possible; without them the GEMM runs every one), and by default, a stride-2
    // 1x1 with more output than input channels those that read it in place (strided_rows_apply).
    const bool has_pointwise = pointwise_kernels(), has_strided_rows = strided_rows_kernels();
    // The rules of cores with less than 2 MiB of L2 (the others': test_implicit_gemm_large_l2).
    tn.large_l2_forward = Rule::Never;
    tn.shifted = Rule::Always;
    int ran = 0;
    for (int t = 0; t < 24; ++t) {
        const Problem p = random_1x1(rng, t, t % 2 ? 5 : 1, 60, 13);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        Profiler prof;
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &prof, nullptr, tn),
                    forward(p, src, wei, nullptr, "direct"), to_descriptor(p));
        ran += prof.seconds("pack_wei") > 0.0;
    }
    CHECK(ran == (has_pointwise ? 24 : 0));
    // Images of several chunks of tiles (256 channels: 21 tiles a chunk; 66 and 17 tiles),
    // each chunk's tiles prefetching the next one's inputs; whole images per thread (4) and
    // the threads splitting an image's tiles (1), groups too.
    for (const char* d : {"mb4ic256ih28oc36oh28kh1ph0", "mb1ic256ih28oc40oh28kh1ph0",
                          "mb4ic256ih27oc36oh14kh1sh2ph0", "mb2g2ic512ih28oc72oh28kh1ph0"})
        CHECK(forward_packed_wei(d, rng, tn) == has_pointwise);
    // By default: 32 or more channels each way, 4 or more images, and outputs of at most 256
    // positions, 256 or more input channels (stride 1), or at most as many output as input
    // channels (strided). AVX2's tiles (narrow_tiles) only strided by 2 and read in place, with
    // at most 128 output channels.
    tn.shifted = Rule::Auto;
    const auto ran_pointwise = [&](const char* d) { return forward_packed_wei(d, rng, tn); };
    const bool wide_pointwise = has_pointwise && !narrow_tiles();
    CHECK(ran_pointwise("mb4ic40ih14oc36oh14kh1ph0") == wide_pointwise);
    CHECK(ran_pointwise("mb4ic40ih28oc36oh14kh1sh2ph0") == has_pointwise);
    CHECK(ran_pointwise("mb4ic256ih28oc36oh28kh1ph0") == wide_pointwise);
    CHECK(!ran_pointwise("mb4ic40ih28oc36oh28kh1ph0"));   // 784 positions, 40 input channels
    CHECK(!ran_pointwise("mb4ic255ih28oc36oh28kh1ph0"));  // 255 input channels
    CHECK(!ran_pointwise("mb2ic40ih14oc36oh14kh1ph0"));   // 2 images
    CHECK(!ran_pointwise("mb4ic16ih14oc36oh14kh1ph0"));   // 16 input channels
    // Strided to more than 256 positions: by 2 along w (read in place, strided_rows_apply), or
    // sampled with at most as many output as input channels.
    CHECK(ran_pointwise("mb4ic80ih56oc40oh28kh1sh2ph0") == has_pointwise);
    CHECK(ran_pointwise("mb4ic40ih56oc80oh28kh1sh2ph0") == (has_pointwise && has_strided_rows));
    CHECK(ran_pointwise("mb4ic40ih56oc160oh28kh1sh2ph0") ==
          (has_pointwise && has_strided_rows && !narrow_tiles()));
    CHECK(ran_pointwise("mb4ic80ih84oc40oh28kh1sh3ph0") == wide_pointwise);
    CHECK(!ran_pointwise("mb4ic40ih84oc80oh28kh1sh3ph0"));
}
