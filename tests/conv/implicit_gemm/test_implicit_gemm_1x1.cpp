// implicit_gemm's 1x1 paths against `direct`: the backward data by the pointwise tiles on the
// swapped problem, strided 1x1s read in place, the strided weight gradient packing B straight
// from the input. Integer data: exact.
#include <doctest/doctest.h>

#include "fast_paths.hpp"

namespace {
// Each case (tn's strided_rows Always): `applies` holds, and the pass by implicit_gemm equals
// direct's, recording `op` and no sampled copy ("pack_src"); with the rule Never it does not
// apply, the copy is recorded, and the result is the same. Where the microkernel lacks what
// `applies` needs (kernels false), it does not apply either way; without the kernels of the
// tiles that record `op` (tiles false) no `op`, and without those that read the input in place
// (in_place false) the pass samples it ("pack_src").
void strided_in_place_cases(const std::vector<const char*>& cases, Pass pass, const char* op,
                            bool (*applies)(const Problem&, const Tuning&), bool kernels,
                            bool tiles, bool in_place, std::mt19937& rng, Tuning tn) {
    for (const std::string d : cases) {
        const Problem p = parse_descriptor(d);
        CAPTURE(d);
        REQUIRE(p.validate().empty());
        CHECK(applies(p, tn) == kernels);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     other =
                         integer_tensor(pass == Pass::Forward ? p.wei_dims() : p.dst_dims(), rng);
        const auto run = [&](const char* algo, Profiler* prof) {
            return pass == Pass::Forward ? forward(p, src, other, nullptr, algo, prof, nullptr, tn)
                                         : backward_weight(p, src, other, algo, prof, tn);
        };
        const Tensor want = run("direct", nullptr);
        Profiler prof;
        check_equal(run("implicit_gemm", &prof), want, d);
        CHECK((prof.seconds(op) > 0.0) == tiles);
        CHECK((prof.seconds("pack_src") == 0.0) == in_place);
        tn.strided_rows = Rule::Never;
        CHECK(!applies(p, tn));
        Profiler sampled;
        check_equal(run("implicit_gemm", &sampled), want, d);
        CHECK(sampled.seconds("pack_src") > 0.0);
        tn.strided_rows = Rule::Always;
    }
}
}  // namespace

TEST_CASE("implicit_gemm's 1x1 backward data runs the pointwise tiles on the swapped problem") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(53);
    // Random unpadded 1x1 problems, 1-D to 3-D, every third strided (up to 3: dX written at the
    // strides, zeros between), groups, batches of 1 (the threads split an image's tiles) and 5
    // (whole images per thread), channel counts off the 32-channel panels; forced on
    // (Tuning::shifted Always), each packs W's rows as the panels per call ("fliprot") and equals
    // direct; with pointwise_bwd_data Never the phases run (no "fliprot") and
    // give the same result. The tiles need their kernels (pointwise_possible on the swapped
    // problem); without them the phases run every one and nothing is prepared.
    const bool has_pointwise = pointwise_kernels();
    tn.shifted = Rule::Always;
    int ran = 0, strided = 0;
    for (int t = 0; t < 24; ++t) {
        const Problem p = random_1x1(rng, t, t % 2 ? 5 : 1, 60, 13);
        strided += !im2col_is_identity(p);
        const std::string what = to_descriptor(p);
        const Tensor dy = integer_tensor(p.dst_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const Tensor want = backward_data(p, dy, wei, "direct");
        Profiler prof;
        check_equal(backward_data(p, dy, wei, "implicit_gemm", &prof, nullptr, tn), want, what);
        ran += prof.seconds("fliprot") > 0.0;
        CHECK_MESSAGE(detail::shifted_applies(p, Pass::BackwardData, tn, nullptr) == has_pointwise,
                      what);
        tn.pointwise_bwd_data = Rule::Never;
        Profiler phases;
        check_equal(backward_data(p, dy, wei, "implicit_gemm", &phases, nullptr, tn), want, what);
        CHECK_MESSAGE(phases.seconds("fliprot") == 0.0, what);
        CHECK_MESSAGE(!detail::shifted_applies(p, Pass::BackwardData, tn, nullptr), what);
        tn.pointwise_bwd_data = Rule::Auto;
    }
    CHECK(ran == (has_pointwise ? 24 : 0));
    CHECK(strided >= 3);
    tn.shifted = Rule::Auto;
    // By default: where the forward's rule takes the tiles on the swapped problem (K -> C), and
    // also on its wide outputs with more input than output channels, or with 4 or more images
    // and 128 or more input channels (K); one image only with the weights prepared; strided
    // 1x1s by the same rule on the output grid, padded at the start left to the phases (at the
    // end only where no sampled position reaches the padding: then as unpadded).
    const auto tiles = [&](const char* d) {
        return detail::shifted_applies(parse_descriptor(d), Pass::BackwardData, tn, nullptr);
    };
    // The tiles where the microkernel has them, not elsewhere. AVX2's (narrow_tiles) from 4
    // images with weights under 4 MiB (below, col2im reads W^T's rows prepared once).
    const bool narrow = narrow_tiles();
    const auto takes_tiles = [&](const char* d) { return tiles(d) == has_pointwise; };
    const auto takes_wide = [&](const char* d) { return tiles(d) == (has_pointwise && !narrow); };
    CHECK(takes_wide("mb4ic512ih7oc2048oh7kh1ph0"));                          // 7x7 (4 MiB)
    CHECK(takes_tiles("mb4ic128ih28oc512oh28kh1ph0"));                        // K 512 > C 128
    CHECK(takes_tiles("mb4ic64ih56oc64oh56kh1ph0"));                          // K = C
    CHECK(takes_tiles("mb4ic512ih28oc128oh28kh1ph0"));                        // 4 images, K = 128
    CHECK(tiles("mb4ic256ih56oc64oh56kh1ph0") == (has_pointwise && narrow));  // K 64 < C 256
    CHECK(!tiles("mb1ic128ih28oc512oh28kh1ph0"));          // one image, nothing prepared
    CHECK(takes_tiles("mb4ic128ih56oc512oh28kh1sh2ph0"));  // strided
    CHECK(takes_wide("mb4ic1024ih5oc1040oh3kh1sh2ph0"));   // over 4 MiB of weights, 4 images
    CHECK(!tiles("mb4ic128ih56oc512oh29kh1sh2ph1"));       // padded at the start
    CHECK(!tiles("mb4ic16ih14oc512oh14kh1ph0"));  // 16 output channels of the swapped problem
    // Prepared once (prepare_weights packs W's rows, recorded as "fliprot"): one image too,
    // and a call packs nothing; 14x14 and 7x7, a long reduction, K >= C at 56x56. Not where
    // the rule says no: K 128 < C 512 at 28x28, one image. AVX2's (packs_narrow): 4 images.
    struct PreparedCase {
        const char* d;
        bool packs, packs_narrow;
    };
    for (const auto& [d, packs_wide, packs_narrow] :
         {PreparedCase{"mb1ic512ih7oc2048oh7kh1ph0", true, false},
          PreparedCase{"mb1ic70ih14oc300oh14kh1ph0", true, false},
          PreparedCase{"mb1ic128ih28oc512oh28kh1ph0", true, false},
          PreparedCase{"mb1ic64ih20oc64oh20kh1ph0", true, false},
          PreparedCase{"mb2g2ic96ih9oc80oh9kh1ph0", true, false},
          PreparedCase{"mb1ic64ih27oc300oh14kh1sh2ph0", true, false},
          PreparedCase{"mb3ic40id5ih9iw9oc96od3oh3ow3kd1kh1kw1sd2sh3sw4ph0", true, false},
          PreparedCase{"mb4ic40ih5oc36oh3kh1sh2ph0phe1", true, true},
          PreparedCase{"mb1ic512ih28oc128oh28kh1ph0", false, false},
          PreparedCase{"mb1ic1024ih5oc1040oh3kh1sh2ph0", false, false}}) {
        const bool packs = narrow ? packs_narrow : packs_wide;
        const Problem p = parse_descriptor(d);
        const Tensor dy = integer_tensor(p.dst_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        const Tensor want = backward_data(p, dy, wei, "direct");
        Profiler packing;
        const PreparedWeights w = prepare_weights(p, Pass::BackwardData, wei.f32(), &packing, tn);
        const bool packed = packs && has_pointwise;
        CHECK_MESSAGE(w.empty() == !packed, d);
        CHECK_MESSAGE((packing.seconds("fliprot") > 0.0) == packed, d);
        for (int threads : {2, 1}) {
            set_num_threads(threads);
            for (const char* algo : {"implicit_gemm", "auto"}) {
                Profiler prof;
                check_equal(backward_data(p, dy, wei, algo, &prof, &w, tn), want,
                            std::string(d) + " " + algo);
                CHECK_MESSAGE(prof.seconds("fliprot") == 0.0, d);
                // The tiles' gemm, and where strided the scatter.
                const auto ops = im2col_is_identity(p) ? 1u : 2u;
                if (packed) CHECK_MESSAGE(prof.entries().size() == ops, d);
            }
        }
    }
    set_num_threads(0);
}

TEST_CASE("implicit_gemm's 1x1 strided by 2 along w reads the input in place and equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(97);
    set_num_threads(2);
    // The 1x1 tiles read every other float of the image's rows, a tile within an output row
    // (each row cut into runs of at most 12): output widths below, at and past the tiles (1,
    // 7, 12, 13, 14, 25, 28), odd input widths, strides 1-3 along h, 1-D, groups, one image
    // (the threads split its tiles) and five (whole images per thread), and 256 channels
    // (chunks prefetching the next chunk's input rows). No input copy ("pack_src"); with the
    // rule Never, the sampled copy gives the same result. (By default only outputs at least 7
    // wide are read in place.) The tiles need their kernels (pointwise_possible) and those that
    // read every other float (strided_rows_apply); without them the GEMM runs on the sampled copy.
    const bool has_pointwise = pointwise_kernels(), has_strided_rows = strided_rows_kernels();
    tn.shifted = Rule::Always;
    tn.strided_rows = Rule::Always;
    const std::vector<const char*> cases{
        "mb1ic40ih2iw1oc36oh2ow1kh1kw1sh1sw2ph0",
        "mb5ic40ih13iw13oc36oh7ow7kh1kw1sh2sw2ph0",
        "mb1ic33ih6iw24oc40oh3ow12kh1kw1sh2sw2ph0",
        "mb5ic24ih9iw26oc40oh3ow13kh1kw1sh3sw2ph0",
        "mb1ic40ih28iw27oc36oh14ow14kh1kw1sh2sw2ph0",
        "mb2g2ic64ih5iw50oc66oh5ow25kh1kw1sh1sw2ph0",
        "mb5ic256ih27iw56oc40oh14ow28kh1kw1sh2sw2ph0",
        "mb1ic256ih20iw56oc33oh10ow28kh1kw1sh2sw2ph0",
        "mb3ic20iw57oc40ow29kw1sw2pw0",
    };
    strided_in_place_cases(cases, Pass::Forward, "pack_wei", detail::strided_rows_apply,
                           has_strided_rows, has_pointwise, has_pointwise && has_strided_rows, rng,
                           tn);
    // Not in place: stride 1 or 3 along w, and 3-D.
    CHECK(!detail::strided_rows_apply(parse_descriptor("mb1ic8ih8oc8oh8kh1ph0"), tn));
    CHECK(!detail::strided_rows_apply(parse_descriptor("mb1ic8ih9oc8oh3kh1sh3ph0"), tn));
    CHECK(
        !detail::strided_rows_apply(parse_descriptor("mb1ic8id4ih8oc8od2oh4kh1kd1sd2sh2ph0"), tn));
    // By default, outputs 7 wide or more.
    tn.strided_rows = Rule::Auto;
    CHECK(detail::strided_rows_apply(parse_descriptor("mb4ic40ih14oc36oh7kh1sh2ph0"), tn) ==
          has_strided_rows);
    CHECK(!detail::strided_rows_apply(parse_descriptor("mb4ic40ih12oc36oh6kh1sh2ph0"), tn));
    // res3a_branch2a (fewer output than input channels: the tiles, read in place or not)
    CHECK(forward_packed_wei("mb4ic256ih56oc128oh28kh1sh2ph0", rng, tn) == has_pointwise);
    set_num_threads(0);
}

// Whole images per thread need two threads: not in the portable build (one thread).
TEST_CASE("implicit_gemm's weight gradient of a 1x1 strided by 2 along w reads the input in place" *
          doctest::skip(!test::kThreaded)) {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(101);
    set_num_threads(2);
    // Whole images per thread (4 or more images on 2 threads), each summing dY X^T with X read
    // every other float of its rows: 12-channel tiles and the last 1-11 channels, output rows
    // cut into runs (about 256 positions), 1 to 10 panels, odd widths, strides 1-3 along h,
    // 1-D and groups. No sampled copy ("pack_src"); with the rule Never it is back, same result.
    // (Images of at most 64 positions are merged by default, which samples them. With
    // sampled_wgrad_whole_images false, the sampled copy, not the product that samples the input
    // itself.) The tiles need their kernels (strided_wgrad_applies); without them the sampled copy
    // is made.
    const bool has_strided_wgrad = strided_wgrad_kernels();
    tn.strided_rows = Rule::Always;
    tn.merge_wgrad = Rule::Never;
    tn.sampled_wgrad = Rule::Auto;
    tn.sampled_wgrad_whole_images = false;
    const std::vector<const char*> cases{
        "mb4ic13ih2iw1oc36oh2ow1kh1kw1sh1sw2ph0",      "mb5ic40ih13iw13oc36oh7ow7kh1kw1sh2sw2ph0",
        "mb4ic24ih60iw24oc70oh30ow12kh1kw1sh2sw2ph0",  "mb5ic25ih9iw26oc40oh3ow13kh1kw1sh3sw2ph0",
        "mb4ic37ih28iw57oc33oh14ow29kh1kw1sh2sw2ph0",  "mb4g2ic64ih5iw50oc66oh5ow25kh1kw1sh1sw2ph0",
        "mb4ic20ih28iw56oc300oh14ow28kh1kw1sh2sw2ph0", "mb6ic20iw57oc40ow29kw1sw2pw0",
    };
    strided_in_place_cases(cases, Pass::BackwardWeight, "pack_dst", detail::strided_wgrad_applies,
                           has_strided_wgrad, has_strided_wgrad, has_strided_wgrad, rng, tn);
    // Not where an image's dY^T passes 512 KiB (res3a_branch1: 512 channels x 784 positions).
    CHECK(!detail::strided_wgrad_applies(parse_descriptor("mb4ic8ih56oc512oh28kh1sh2ph0"), tn));
    CHECK(detail::strided_wgrad_applies(parse_descriptor("mb4ic8ih56oc160oh28kh1sh2ph0"), tn) ==
          has_strided_wgrad);
    // One image per thread or fewer: the threads split the product, which samples the input.
    const Problem one = parse_descriptor("mb1ic40ih56oc36oh28kh1sh2ph0");
    const Tensor src = integer_tensor(one.src_dims(), rng),
                 dy = integer_tensor(one.dst_dims(), rng);
    Profiler prof;
    check_equal(backward_weight(one, src, dy, "implicit_gemm", &prof, tn),
                backward_weight(one, src, dy, "direct"), "mb1");
    CHECK(prof.seconds("pack_src") > 0.0);
    set_num_threads(0);
}

namespace {
// For every microkernel and each case (a valid descriptor): body(p, descriptor, src, dy, want),
// with random integer src and dY and direct's weight gradient of them.
void wgrad_cases(const std::vector<const char*>& cases, std::mt19937& rng,
                 const std::function<void(const Problem&, const std::string&, const Tensor&,
                                          const Tensor&, const Tensor&)>& body) {
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        for (const std::string d : cases) {
            const Problem p = parse_descriptor(d);
            CAPTURE(d);
            CAPTURE(uks[u].isa);
            REQUIRE(p.validate().empty());
            const Tensor src = integer_tensor(p.src_dims(), rng),
                         dy = integer_tensor(p.dst_dims(), rng);
            const Tensor want = backward_weight(p, src, dy, "direct");
            body(p, d, src, dy, want);
        }
    }
}
}  // namespace

TEST_CASE("implicit_gemm's strided 1x1 weight gradient packs B straight from the input") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(103);
    set_num_threads(2);
    // One image on both threads, dW = dY X^T not transposed (at least as many output as input
    // channels): the GEMM's B packer samples the input at the strides itself, so no sampled copy
    // ("pack_src") is made (forced on at any width); equal to direct's with every microkernel
    // (AVX-512 packs stride 2 by permutes, the others and stride 3 element by element). Output rows
    // shorter and longer than 16 (the packer's runs end at each row), channels off the panels, 1-D,
    // 3-D (strided depth planes), groups, strides 2 and 3, and 2401 and 2500 positions (reduction
    // blocks, and the threads' shares of the positions, start within an output row). With the mode
    // off, the copy is back and the result the same.
    const std::vector<const char*> cases{
        "mb1ic13ih14oc40oh7kh1sh2ph0",
        "mb1ic40ih57iw41oc47oh29ow21kh1kw1sh2sw2ph0",
        "mb1ic24ih30iw60oc33oh10ow20kh1kw1sh3sw3ph0",
        "mb1ic20ih100oc24oh50kh1sh2ph0",
        "mb1ic20ih147oc24oh49kh1sh3ph0",
        "mb1ic17iw91oc35ow46kw1sw2pw0",
        "mb1ic9id6ih10iw12oc18od3oh5ow6kd1kh1kw1sd2sh2sw2pd0ph0pw0",
        "mb1g2ic32ih20oc80oh10kh1sh2ph0",
    };
    wgrad_cases(cases, rng,
                [&](const Problem& p, const std::string& d, const Tensor& src, const Tensor& dy,
                    const Tensor& want) {
                    tn.sampled_wgrad = Rule::Always;
                    tn.sampled_wgrad_whole_images = true;
                    CHECK(detail::sampled_wgrad_applies(p, tn));
                    Profiler prof;
                    check_equal(backward_weight(p, src, dy, "implicit_gemm", &prof, tn), want, d);
                    CHECK(prof.seconds("pack_src") == 0.0);
                    tn.sampled_wgrad = Rule::Never;
                    tn.sampled_wgrad_whole_images = true;
                    CHECK(!detail::sampled_wgrad_applies(p, tn));
                    Profiler copied;
                    check_equal(backward_weight(p, src, dy, "implicit_gemm", &copied, tn), want, d);
                    CHECK(copied.seconds("pack_src") > 0.0);
                });
    // By default for output rows of 14 or more; only strided unpadded 1x1s whose sampled
    // positions lie inside the input.
    tn.sampled_wgrad = Rule::Auto;
    tn.sampled_wgrad_whole_images = true;
    CHECK(detail::sampled_wgrad_applies(parse_descriptor("mb1ic512ih28oc1024oh14kh1sh2ph0"), tn));
    CHECK(!detail::sampled_wgrad_applies(parse_descriptor("mb1ic1024ih14oc2048oh7kh1sh2ph0"), tn));
    tn.sampled_wgrad = Rule::Always;
    tn.sampled_wgrad_whole_images = true;
    CHECK(!detail::sampled_wgrad_applies(parse_descriptor("mb1ic8ih8oc8oh8kh1ph0"), tn));
    CHECK(!detail::sampled_wgrad_applies(parse_descriptor("mb1ic8ih8oc8oh4kh3sh2ph1"), tn));
    CHECK(!detail::sampled_wgrad_applies(parse_descriptor("mb1ic8ih8oc8oh5kh1sh2ph1"), tn));
    set_num_threads(0);
}

TEST_CASE(
    "implicit_gemm's strided 1x1 weight gradient with whole images per thread samples the input "
    "in each thread's product, not transposed" *
    doctest::skip(!test::kThreaded)) {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(107);
    set_num_threads(2);
    // Four or five images on two threads (whole images each): each thread's product packs B from
    // its image at the strides, with no sampled copy ("pack_src") and not transposed ("unpack"),
    // also where fewer output than input channels would transpose it (the second case);
    // sampled_wgrad_whole_images false keeps the copy (and the transposition) there. Output rows of
    // 14, 15 and 21 (no in-place tiles: those take rows of 24 or more), channels off the panels,
    // groups, 3-D, strides 2 and 3; equal to direct's with every microkernel.
    const std::vector<const char*> cases{
        "mb4ic40ih57iw41oc47oh29ow21kh1kw1sh2sw2ph0",
        "mb5ic64ih28oc24oh14kh1sh2ph0",
        "mb4g2ic32ih30oc80oh15kh1sh2ph0",
        "mb4ic9id6ih10iw42oc18od3oh5ow14kd1kh1kw1sd2sh2sw3pd0ph0pw0",
    };
    wgrad_cases(cases, rng,
                [&](const Problem& p, const std::string& d, const Tensor& src, const Tensor& dy,
                    const Tensor& want) {
                    REQUIRE(!detail::merged_wgrad_applies(p, tn));
                    REQUIRE(!detail::strided_wgrad_applies(p, tn));
                    tn.sampled_wgrad = Rule::Auto;
                    tn.sampled_wgrad_whole_images = true;
                    CHECK(detail::sampled_wgrad_applies(p, tn));
                    Profiler prof;
                    check_equal(backward_weight(p, src, dy, "implicit_gemm", &prof, tn), want, d);
                    CHECK(prof.seconds("pack_src") == 0.0);
                    CHECK(prof.seconds("unpack") == 0.0);
                    tn.sampled_wgrad = Rule::Auto;
                    tn.sampled_wgrad_whole_images = false;
                    Profiler copied;
                    check_equal(backward_weight(p, src, dy, "implicit_gemm", &copied, tn), want, d);
                    CHECK(copied.seconds("pack_src") > 0.0);
                    CHECK((copied.seconds("unpack") > 0.0) == detail::swapped_wgrad(p, tn));
                });
    CHECK(detail::swapped_wgrad(parse_descriptor("mb5ic64ih28oc24oh14kh1sh2ph0"), tn));
    set_num_threads(0);
}
