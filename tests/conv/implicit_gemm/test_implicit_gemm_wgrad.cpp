// implicit_gemm's weight-gradient paths against `direct`: images merged along the reduction,
// several images per tile, taps read in place, dW streamed, 1x1s computed transposed (and the
// transposed 1x1 forward). Integer data: exact.
#include <doctest/doctest.h>

#include "fast_paths.hpp"

namespace {
// implicit_gemm's weight gradient under tuning equals direct's on every problem, with every
// microkernel and under each of `modes` (a switch of the path under test, by index, made by
// set_mode on a copy of tuning), where `applies` says the path is taken.
void wgrad_equals_direct(const std::vector<Problem>& probs, std::mt19937& rng, int modes,
                         const std::function<void(int, Tuning&)>& set_mode,
                         bool (*applies)(const Problem&, const Tuning&), const Tuning& tuning) {
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        for (int m = 0; m < modes; ++m) {
            Tuning tn = tuning;
            set_mode(m, tn);
            for (const Problem& p : probs) {
                const std::string d = to_descriptor(p);
                CAPTURE(d);
                CAPTURE(uks[u].isa);
                CAPTURE(m);
                CHECK(applies(p, tn));
                const Tensor src = integer_tensor(p.src_dims(), rng),
                             dy = integer_tensor(p.dst_dims(), rng);
                check_equal(backward_weight(p, src, dy, "implicit_gemm", nullptr, tn),
                            backward_weight(p, src, dy, "direct"), d);
            }
        }
    }
}
}  // namespace

TEST_CASE("implicit_gemm's weight gradient over images merged along the reduction") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(53);
    // Random 1x1 problems of 2 to 7 images, some strided (the sampled copy, in chunks when it
    // passes 4 MiB), with groups, 1-D to 3-D, positions per image that do not divide the
    // reduction blocks (images straddle them), channel counts off the tiles; forced on, with
    // every microkernel and dY's rows both copied by runs and packed. (The stride-1 3x3 layers
    // below would read the input by taps instead: switched off.)
    tn.merge_wgrad = Rule::Always;
    tn.wgrad_taps = Rule::Never;
    std::vector<Problem> probs = random_1x1s(rng, 2, 7, 300, 17);
    // One whose sampled images (1024 channels x 150 positions) take two chunks.
    probs.push_back(parse_descriptor("mb9ic1024ih30iw20oc24oh15ow10kh1kw1sh2sw2ph0pw0"));
    // Any other kernel: im2col^T of the images gathered (random strides, dilations, paddings,
    // groups, 1-D to 3-D), and 7x7 3x3 layers whose 49-position images straddle the blocks.
    for (int t = 0; t < 16; ++t) {
        Problem p = test::random_problem(rng);
        p.mb = std::uniform_int_distribution<dim_t>(2, 5)(rng);
        probs.push_back(p);
    }
    probs.push_back(parse_descriptor("mb6ic37ih7oc45oh7kh3ph1"));
    probs.push_back(parse_descriptor("mb3ic3ih20oc33oh10kh7sh2ph3"));
    wgrad_equals_direct(
        probs, rng, 2, [](int m, Tuning& t) { t.read_a = m ? Rule::Never : Rule::Auto; },
        detail::merged_wgrad_applies, tn);
    // By default: from two images of at most 64 positions.
    tn.merge_wgrad = Rule::Auto;
    CHECK(detail::merged_wgrad_applies(parse_descriptor("mb2ic40ih7oc36oh7kh1ph0"), tn));
    CHECK(detail::merged_wgrad_applies(parse_descriptor("mb4ic40ih14oc36oh7kh1sh2ph0"), tn));
    CHECK(!detail::merged_wgrad_applies(parse_descriptor("mb1ic40ih7oc36oh7kh1ph0"), tn));
    CHECK(!detail::merged_wgrad_applies(parse_descriptor("mb4ic40ih14oc36oh14kh1ph0"), tn));
    CHECK(detail::merged_wgrad_applies(parse_descriptor("mb4ic40ih7oc36oh7kh3ph1"), tn));
    CHECK(!detail::merged_wgrad_applies(parse_descriptor("mb4ic40ih9oc36oh9kh3ph1"), tn));
    // With the taps (AVX-512), a 7x7 3x3 of 4 images on 2 threads reads the input by taps
    // instead.
    int nk = 0;
    if (!detail::select_microkernel("avx512")) return;
    CHECK(std::string(detail::microkernels(nk)[0].isa) == "avx512");
    tn.wgrad_taps = Rule::Auto;
    set_num_threads(2);
    CHECK(!detail::merged_wgrad_applies(parse_descriptor("mb4ic40ih7oc36oh7kh3ph1"), tn));
    CHECK(detail::shifted_applies(parse_descriptor("mb4ic40ih7oc36oh7kh3ph1"), Pass::BackwardWeight,
                                  tn, nullptr));
    CHECK(detail::merged_wgrad_applies(parse_descriptor("mb2ic40ih7oc36oh7kh3ph1"), tn));
    set_num_threads(0);
}

TEST_CASE("implicit_gemm's shifted weight gradient runs each tile over several images") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(103);
    set_num_threads(2);
    // Whole images per thread, each tile summing a group of images (one run of positions per
    // image) before it adds to dW: groups that do not divide a thread's images (5, 7 and 9
    // images on 2 threads), reduction rows off the 12-row tiles (45, 75), output channels off
    // the panels (33, 70), groups, padding and stride 2 (planes of stride phases), a 1-D
    // problem; forced on where the default would not take the planes. (Without the shifted tiles'
    // kernels, use_shifted_wgrad, the GEMM runs them, checked the same.)
    const bool has_shifted = shifted_wgrad_kernels();
    tn.shifted = Rule::Always;
    for (const char* d : {"mb5ic5ih14oc33oh14kh3ph1", "mb7ic5ih26oc33oh26kh3ph1",
                          "mb7ic25ih9oc70oh9kh3ph1", "mb9g2ic10ih12oc66oh6kh3sh2ph1",
                          "mb5ic16ih13oc32oh13kh5ph2", "mb7ic8iw40oc40ow40kw3pw1"}) {
        const Problem p = parse_descriptor(d);
        CAPTURE(d);
        REQUIRE(p.validate().empty());
        CHECK(detail::shifted_applies(p, Pass::BackwardWeight, tn, nullptr) == has_shifted);
        CHECK(detail::shifted_wgrad_images(p, tn) > 1);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     dy = integer_tensor(p.dst_dims(), rng);
        check_equal(backward_weight(p, src, dy, "implicit_gemm", nullptr, tn),
                    backward_weight(p, src, dy, "direct"), d);
    }
    // 26x26 (728 positions a plane): groups of 2 of the threads' 3 and 4 images.
    CHECK(detail::shifted_wgrad_images(parse_descriptor("mb7ic5ih26oc33oh26kh3ph1"), tn) == 2);
    // Images of 2048 positions or more: one a tile (56x56 with its padding columns).
    tn.shifted = Rule::Auto;
    CHECK(detail::shifted_wgrad_images(parse_descriptor("mb32ic64ih56oc64oh56kh3ph1"), tn) == 1);
    // By taps (stride 1, 8 or more input channels), sized by the output's positions and the
    // unpadded input: 14x14, 2048 / 196 = 10; 7x7 with 512 channels, 2 MiB / (512 x 49 floats)
    // = 20 (sized by the planes, 12). Stride 2 keeps the planes' positions, 7 output rows of 8
    // (2048 / 56 = 36, not 2048 / 49 = 41).
    CHECK(detail::shifted_wgrad_images(parse_descriptor("mb32ic256ih14oc256oh14kh3ph1"), tn) == 10);
    CHECK(detail::shifted_wgrad_images(parse_descriptor("mb32ic512ih7oc512oh7kh3ph1"), tn) == 20);
    CHECK(detail::shifted_wgrad_images(parse_descriptor("mb64ic16ih14oc32oh7kh3sh2ph1"), tn) == 36);
    set_num_threads(0);
}

TEST_CASE("implicit_gemm's stride-1 shifted weight gradient reads the input by taps, in place") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(211);
    // Tiles of 12 input channels of one tap over only the positions whose inputs lie inside the
    // image, against the padded planes (wgrad_taps Never) and direct: channels off the 12-row tiles
    // (8, 13, 19 and 25: the last 13-19 as two tiles), kernels 3 and 5, padding 0-3 (3 with a 3-tap
    // kernel: output rows and columns that read padding only), dilation 2, groups, 1-D, several
    // images per tile (batch 5 on 2 threads) and one image on both threads over rows in two passes
    // (64x64: 4096 positions). Without the shifted tiles' kernels (use_shifted_wgrad) the GEMM runs
    // them (nothing padded, no dY^T packed), checked the same.
    const bool has_shifted = shifted_wgrad_kernels();
    tn.shifted = Rule::Always;
    int in_place = 0;
    for (const int threads : {1, 2})
        for (const char* d : {"mb5ic8ih14oc40oh14kh3ph1", "mb5ic13ih12oc33oh12kh3ph1",
                              "mb3ic19ih9oc32oh9kh3ph0", "mb5ic25ih11oc70oh11kh5ph2",
                              "mb2ic16ih10oc32oh14kh3ph3", "mb3ic12ih15oc32oh15kh3ph2dh1",
                              "mb4g2ic24ih10oc64oh10kh3ph1", "mb5ic8iw40oc40ow40kw3pw1",
                              "mb1ic8ih64oc32oh64kh3ph1", "mb1ic20ih64oc40oh64kh5ph2"}) {
            const Problem p = parse_descriptor(d);
            const std::string what = d;
            CAPTURE(what);
            CAPTURE(threads);
            REQUIRE(p.validate().empty());
            set_num_threads(threads);
            CHECK(detail::shifted_applies(p, Pass::BackwardWeight, tn, nullptr) == has_shifted);
            const Tensor src = integer_tensor(p.src_dims(), rng),
                         dy = integer_tensor(p.dst_dims(), rng);
            const Tensor want = backward_weight(p, src, dy, "direct");
            for (const int mode : {0, 2}) {
                tn.wgrad_taps = rule(mode);
                CHECK(detail::wgrad_taps_apply(p, tn) == (mode == 0));
                Profiler prof;
                check_equal(backward_weight(p, src, dy, "implicit_gemm", &prof, tn), want, d);
                // In place nothing is padded (spans are kept where images run per thread: 4 or
                // more on 2 threads).
                if (threads == 2 && p.mb >= 4)
                    CHECK((prof.seconds("pad") > 0.0) == (has_shifted && mode == 2));
                in_place += mode == 0;
            }
        }
    CHECK(in_place == 20);
    // A dW beyond 4 MiB with whole images per thread (600 x 600 x 3 taps, 1-D): the threads split
    // its panels, each over every image, instead of summing partials.
    set_num_threads(2);
    tn.wgrad_taps = Rule::Auto;
    tn.shifted = Rule::Auto;
    {
        const char* d = "mb5ic600iw6oc600ow6kw3pw1";
        const Problem p = parse_descriptor(d);
        CHECK(detail::shifted_applies(p, Pass::BackwardWeight, tn, nullptr) == has_shifted);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     dy = integer_tensor(p.dst_dims(), rng);
        Profiler prof;
        check_equal(backward_weight(p, src, dy, "implicit_gemm", &prof, tn),
                    backward_weight(p, src, dy, "direct"), d);
        CHECK((prof.seconds("pack_dst") > 0.0) == has_shifted);
        CHECK(prof.seconds("pad") == 0.0);
    }
    // Strided, or fewer than 8 input channels (conv1): the planes.
    tn.wgrad_taps = Rule::Auto;
    CHECK_FALSE(detail::wgrad_taps_apply(parse_descriptor("mb2ic16ih28oc32oh14kh3sh2ph1"), tn));
    CHECK_FALSE(detail::wgrad_taps_apply(parse_descriptor("mb2ic7ih14oc32oh14kh3ph1"), tn));
    CHECK_FALSE(detail::wgrad_taps_apply(parse_descriptor("mb2ic3ih224oc64oh112kh7sh2ph3"), tn));
    set_num_threads(0);
}

TEST_CASE("flush_tap_tiles stores a group's raw tap tiles into dW's rows on every microkernel") {
    RestoreCore restore;
    std::mt19937 rng(307);
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    // Channels 1 to 12, 1 to 25 taps (mv * ks off and on multiples of 16), 1 to 32 output
    // channels, stored and added; dW's rows ldt apart with guards around each row's run.
    for (int u = 0; u < count; ++u) {
        detail::select_microkernel(uks[u].isa);
        for (const int mv : {1, 4, 7, 12})
            for (const int ks : {1, 3, 4, 9, 25})
                for (const int nv : {1, 16, 17, 32})
                    for (const bool acc : {false, true}) {
                        CAPTURE(uks[u].isa);
                        CAPTURE(mv);
                        CAPTURE(ks);
                        CAPTURE(nv);
                        CAPTURE(acc);
                        std::uniform_real_distribution<float> val(-1.0f, 1.0f);
                        std::vector<float> buf(static_cast<std::size_t>(ks * 12 * 32));
                        for (float& x : buf) x = val(rng);
                        const dim_t ldt = mv * ks + 5;
                        std::vector<float> c(static_cast<std::size_t>(33 * ldt)), want;
                        for (float& x : c) x = val(rng);
                        want = c;
                        for (int j = 0; j < nv; ++j)
                            for (int i = 0; i < mv; ++i)
                                for (int t = 0; t < ks; ++t) {
                                    float& d = want[static_cast<std::size_t>(j * ldt + i * ks + t)];
                                    const float x =
                                        buf[static_cast<std::size_t>((t * 12 + i) * 32 + j)];
                                    d = acc ? d + x : x;
                                }
                        detail::flush_tap_tiles(buf.data(), mv, ks, c.data() + 0, ldt, nv, acc);
                        CHECK(c == want);
                    }
    }
}

TEST_CASE("implicit_gemm's 1x1 weight gradient writing dW by non-temporal stores equals direct") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(63);
    // Streaming forced where the image's product writes dW's final values (images neither
    // merged nor transposed), on 2 threads (the GEMM split between them) and on one: 1x1 read
    // in place and strided from its sampled copy, reductions over one and two KC blocks, dW's
    // rows of 64 and 48 floats (aligned tiles: streamed) and of 40 (not 64-byte multiples:
    // stored plainly), groups (the second group's dW after the first's), 3 images (the last
    // product adds to dW, then streams it), with every microkernel.
    tn.stream_output = Rule::Always;
    tn.swap_wgrad = Rule::Never;
    const std::vector<Problem> probs = {parse_descriptor("mb1ic64ih14oc96oh14kh1ph0"),
                                        parse_descriptor("mb1ic48ih18oc64oh18kh1ph0"),
                                        parse_descriptor("mb1ic64ih20oc40oh10kh1sh2ph0"),
                                        parse_descriptor("mb1ic40ih12oc50oh12kh1ph0"),
                                        parse_descriptor("g2mb1ic96ih9oc40oh9kh1ph0"),
                                        parse_descriptor("mb3ic64ih13oc48oh13kh1ph0")};
    // On 2 threads (the GEMM split between them) and on one, images never merged.
    const auto on_threads = [&](const std::vector<Problem>& ps,
                                bool (*applies)(const Problem&, const Tuning&)) {
        for (const int threads : {2, 1}) {
            set_num_threads(threads);
            wgrad_equals_direct(
                ps, rng, 1, [](int, Tuning& t) { t.merge_wgrad = Rule::Never; }, applies, tn);
        }
    };
    on_threads(probs, [](const Problem& q, const Tuning& t) {
        return !detail::swapped_wgrad(q, t) && !detail::merged_wgrad_applies(q, t);
    });
    // The products over gathered columns (Im2colTB: not 1x1, the planes' tiles off): 3x3 with
    // dW rows of 144 floats (streamed) and of 36 (not), dilated and strided, groups.
    tn.shifted = Rule::Never;
    const std::vector<Problem> gathered = {parse_descriptor("mb1ic16ih9oc64oh9kh3ph1"),
                                           parse_descriptor("mb1ic4ih11oc40oh7kh3dh1ph0"),
                                           parse_descriptor("g2mb1ic32ih10oc48oh5kh3sh2ph1"),
                                           parse_descriptor("mb2ic16ih7oc36oh7kh3ph1")};
    on_threads(gathered, [](const Problem& q, const Tuning& t) {
        return !detail::shifted_applies(q, Pass::BackwardWeight, t, nullptr) &&
               !detail::merged_wgrad_applies(q, t);
    });
    set_num_threads(0);
}

TEST_CASE("implicit_gemm's 1x1 weight gradient computed transposed") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(61);
    // dW^T = X dY^T, then transposed into dW: random 1x1 problems of 1 to 7 images, some
    // strided (the sampled copy), with groups, 1-D to 3-D, channel counts off the tiles;
    // forced on, image by image (one image, or the images shared by the threads) and with the
    // images merged along the reduction, with every microkernel.
    tn.swap_wgrad = Rule::Always;
    std::vector<Problem> probs = random_1x1s(rng, 1, 7, 300, 17);
    probs.push_back(parse_descriptor("mb1ic70ih60oc20oh60kh1ph0"));  // positions per thread
    probs.push_back(parse_descriptor("mb3ic2ih9oc2oh9kh1ph0"));
    // Image by image (merging never), then merged (merging whenever possible).
    wgrad_equals_direct(
        probs, rng, 2, [](int m, Tuning& t) { t.merge_wgrad = rule(m ? 1 : 2); },
        detail::swapped_wgrad, tn);
    // By default: 1x1 with fewer output than input channels, from 512 positions in all.
    tn.swap_wgrad = Rule::Auto;
    tn.merge_wgrad = Rule::Auto;
    CHECK(detail::swapped_wgrad(parse_descriptor("mb1ic256ih56oc64oh56kh1ph0"), tn));
    CHECK(detail::swapped_wgrad(parse_descriptor("mb1ic256ih56oc128oh28kh1sh2ph0"), tn));
    CHECK(detail::swapped_wgrad(parse_descriptor("mb32ic2048ih7oc512oh7kh1ph0"), tn));
    CHECK(!detail::swapped_wgrad(parse_descriptor("mb1ic1024ih14oc256oh14kh1ph0"), tn));
    CHECK(!detail::swapped_wgrad(parse_descriptor("mb1ic64ih56oc256oh56kh1ph0"), tn));
    CHECK(!detail::swapped_wgrad(parse_descriptor("mb1ic256ih56oc64oh56kh3ph1"), tn));
    tn.swap_wgrad = Rule::Never;
    CHECK(!detail::swapped_wgrad(parse_descriptor("mb1ic256ih56oc64oh56kh1ph0"), tn));
}

TEST_CASE("implicit_gemm's 1x1 forward computed transposed") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(67);
    // dst^T = X^T W^T, then transposed into dst, image by image: random 1x1 problems of 1 to 3
    // images, some strided (from the sampled copy), with groups, 1-D to 3-D, channel counts
    // off the tiles, forced on, with every microkernel; they record "unpack" (the
    // transposition).
    tn.swap_forward = Rule::Always;
    std::vector<Problem> probs = random_1x1s(rng, 1, 3, 3000, 60);
    probs.push_back(parse_descriptor("mb1ic70ih60oc20oh60kh1ph0"));
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        for (const Problem& p : probs) {
            const std::string d = to_descriptor(p);
            CAPTURE(d);
            CAPTURE(uks[u].isa);
            REQUIRE(p.validate().empty());
            CHECK(detail::swapped_forward(p, tn));
            const Tensor src = integer_tensor(p.src_dims(), rng),
                         w = integer_tensor(p.wei_dims(), rng);
            Profiler prof;
            check_equal(forward(p, src, w, nullptr, "implicit_gemm", &prof, nullptr, tn),
                        forward(p, src, w, nullptr, "direct"), d);
            if (p.mb == 1) CHECK(prof.seconds("unpack") > 0.0);
        }
    }
    // By default, with the AVX-512 microkernel only (with AVX2's it lost): fewer output than
    // input channels, from 196 positions (14x14), where the GEMM takes the layer (not the 1x1
    // tiles of small images at batch 4 and more). These are the rules of cores with less than 2
    // MiB of L2 (large_l2_forward Never; its own are held in test_implicit_gemm_large_l2.cpp).
    tn.swap_forward = Rule::Auto;
    tn.large_l2_forward = Rule::Never;
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        CAPTURE(uks[u].isa);
        const bool avx512 = std::string_view(uks[u].isa) == "avx512";
        if (!avx512) {
            for (const char* d : {"mb1ic256ih56oc64oh56kh1ph0", "mb32ic128ih56oc64oh56kh1ph0",
                                  "mb1ic256ih56oc128oh56kh1ph0", "mb1ic512ih28oc128oh28kh1ph0",
                                  "mb1ic1024ih14oc256oh14kh1ph0", "mb1ic256ih56oc128oh28kh1sh2ph0"})
                CHECK_MESSAGE(!detail::swapped_forward(parse_descriptor(d), tn), d);
            continue;
        }
        // 64 output channels: where the ISA's GEMM can read the image's rows in place
        // (b_in_place_applies), it does, and not transposed.
        const bool rows_in_place = uks[u].in_place_fn[0] != nullptr;
        CHECK(detail::swapped_forward(parse_descriptor("mb1ic256ih56oc64oh56kh1ph0"), tn) ==
              !rows_in_place);
        CHECK(detail::swapped_forward(parse_descriptor("mb32ic128ih56oc64oh56kh1ph0"), tn) ==
              !rows_in_place);
        CHECK(detail::swapped_forward(parse_descriptor("mb1ic256ih56oc128oh56kh1ph0"), tn));
        // 256 input channels: the 1x1 tiles.
        CHECK(!detail::swapped_forward(parse_descriptor("mb32ic256ih56oc64oh56kh1ph0"), tn));
        CHECK(detail::swapped_forward(parse_descriptor("mb1ic512ih28oc128oh28kh1ph0"), tn));
        CHECK(detail::swapped_forward(parse_descriptor("mb1ic1024ih14oc256oh14kh1ph0"), tn));
        // The 1x1 tiles run there.
        CHECK(!detail::swapped_forward(parse_descriptor("mb4ic1024ih14oc256oh14kh1ph0"), tn));
        CHECK(detail::swapped_forward(parse_descriptor("mb1ic256ih56oc128oh28kh1sh2ph0"), tn));
    }
    REQUIRE(detail::select_microkernel(uks[0].isa));
    CHECK(!detail::swapped_forward(parse_descriptor("mb1ic2048ih7oc512oh7kh1ph0"), tn));
    CHECK(!detail::swapped_forward(parse_descriptor("mb1ic64ih56oc256oh56kh1ph0"), tn));
    CHECK(!detail::swapped_forward(parse_descriptor("mb1ic512ih28oc256oh14kh1sh2ph0"), tn));
    CHECK(!detail::swapped_forward(parse_descriptor("mb1ic256ih56oc64oh56kh3ph1"), tn));
    tn.swap_forward = Rule::Never;
    CHECK(!detail::swapped_forward(parse_descriptor("mb1ic256ih56oc128oh56kh1ph0"), tn));
}
