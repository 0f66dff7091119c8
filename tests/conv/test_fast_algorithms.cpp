// The GEMM-based algorithms (im2col_gemm, col2im, via_forward, implicit_gemm) with every
// microkernel and both GEMM cores against `direct` on random and ResNet-50 problems, and the
// work buffers they hold. Integer data: exact.
#include <doctest/doctest.h>

#include "fast_paths.hpp"

TEST_CASE("fast algorithms equal direct on larger random problems, 1-D to 3-D") {
    RestoreCore restore;
    std::mt19937 rng(4242);
    int compared = 0;
    for (int t = 0; t < 36; ++t) {
        const Problem p = larger_problem(rng, 1 + t % 3);
        compared += check_problem(p, rng, gemm_isa());
    }
    CHECK(compared == 36 * 11);
}

TEST_CASE("fast algorithms equal direct with every microkernel and with Eigen's GEMM") {
    Tuning tn;
    RestoreCore restore;
    std::mt19937 rng(99);
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    std::vector<Problem> probs;
    for (int t = 0; t < 6; ++t) probs.push_back(larger_problem(rng, 1 + t % 3));
    for (int u = 0; u <= count; ++u) {
        if (u < count) {
            REQUIRE(detail::select_microkernel(uks[u].isa));
            tn.gemm_core = GemmCore::blocked;
        } else {
            tn.gemm_core = GemmCore::eigen;
        }
        const std::string tag = u < count ? uks[u].isa : "eigen";
        for (const Problem& p : probs) CHECK(check_problem(p, rng, tag, tn) == 11);
        // Row-major operands (forward weights, backward-weight dY) both packed and in place.
        for (const Rule mode : {Rule::Never, Rule::Auto}) {
            Tuning rows = tn;
            rows.read_a = mode;
            for (const Problem& p : probs)
                CHECK(check_problem(p, rng,
                                    tag + (mode == Rule::Never ? " A packed" : " A in place"),
                                    rows) == 11);
        }
    }
}

TEST_CASE("fast algorithms equal direct on scaled-down ResNet-50 layers (leftover rows, 1x1 s2)") {
    std::mt19937 rng(50);
    // conv1 shape with r = 1, a 1x1 stride-2 layer on an even input (r = 1), a 3x3 layer whose
    // output is 7x7 (images merged into one GEMM), batch 4 of the last, and two with output rows
    // wider than a register tile (whole-row copies into the packed panels, 12x32 and 4x64).
    for (const char* d :
         {"mb1ic3ih40oc20oh20kh7sh2ph3", "mb2ic24ih14oc40oh7kh1sh2ph0", "mb1ic32ih7oc36oh7kh3ph1",
          "mb4ic32ih7oc36oh7kh3ph1", "mb1ic5ih70oc14oh70kh3ph1", "mb1ic3ih80oc16oh40kh7sh2ph3",
          // image blocks side by side on the threads (forward, backward data implicit_gemm)
          "mb5ic5ih34oc7kh3ph1", "mb5ic3ih66oc8kh7sh2ph3", "g2mb4ic6ih32oc4kh3ph1",
          // over 2048 positions, M split: the weight gradient splits each image's positions
          // over the threads (batch 1 and 2; 1x1 with odd positions per thread)
          "mb1ic3ih100oc64oh50kh7sh2ph3", "mb2ic3ih96oc64oh48kh7sh2ph3", "mb1ic24ih67oc64kh1",
          // strided 1x1 forward from the input sampled once: images merged, 3-D, stride 3
          "mb8ic16ih28oc24oh14kh1sh2ph0", "mb2ic8id6ih6iw6oc12od3oh3ow3kd1kh1kw1sd2sh2sw2",
          "mb1ic5ih9oc7oh3kh1sh3ph0",
          // rows sampled 8 at a time (AVX2) with 1 to 8 left over: 21, 16 and 9 per row
          "mb1ic8ih42oc12oh21kh1sh2ph0", "mb2ic4ih32oc6oh16kh1sh2ph0", "mb1ic6ih18oc40oh9kh1sh2ph0",
          // one image, M split: the forward splits im2col's rows (the reduction) over threads
          "mb1ic128ih7oc64oh7kh3ph1", "mb1ic128ih14oc96oh14kh3ph1"}) {
        const Problem p = parse_descriptor(d);
        CHECK(check_problem(p, rng, "resnet") == 11);
    }
    // The last input row of conv1's shape gets a non-zero gradient (leftover r = 1).
    const Problem p = parse_descriptor("mb1ic3ih40oc20oh20kh7sh2ph3");
    const Tensor dy = integer_tensor(p.dst_dims(), rng), wei = integer_tensor(p.wei_dims(), rng);
    const Tensor dx = backward_data(p, dy, wei, "via_forward");
    CHECK(density(dx) > 0.5);
}

TEST_CASE("blocked weight transposes (flip_rot, tnc_diff_wei) equal their maps across 16 blocks") {
    std::mt19937 rng(16);
    for (const char* d :
         {"mb1ic35ih5oc40oh5kh3ph1", "g2mb1ic34ih4oc66oh4kh1", "mb1ic17iw6oc33ow4kw3",
          "g3mb1ic51id3ih3iw3oc18od3oh3ow3kd1kh2kw2ph1pw1"}) {
        const Problem p = parse_descriptor(d);
        REQUIRE(p.validate().empty());
        const auto w = integers(static_cast<std::size_t>(product(p.wei_dims())), rng);
        const IndexMap fr = maps::flip_rot(p);
        std::vector<float> want(static_cast<std::size_t>(fr.dst().numel()), -1.0f);
        std::vector<float> got(want.size(), -2.0f);
        fr.execute(w.data(), want.data());
        flip_rot_kernel(p, w.data(), got.data());
        CHECK_MESSAGE(got == want, d);
        // tnc_diff_wei reads (C, K/G, k) stacked per group: the same element count.
        const IndexMap tw = maps::tnc_diff_wei(p);
        std::vector<float> want2(static_cast<std::size_t>(tw.dst().numel()), -1.0f);
        std::vector<float> got2(want2.size(), -2.0f);
        tw.execute(w.data(), want2.data());
        tnc_diff_wei_kernel(p, w.data(), got2.data());
        CHECK_MESSAGE(got2 == want2, d);
    }
}

TEST_CASE("implicit_gemm's image blocks split evenly over the threads, and equal direct") {
    set_num_threads(2);
    // At most the cap, at least two blocks per thread, and down to half the cap a block count
    // that the two threads share evenly (one thread, the portable build: as given).
    if (test::kThreaded) {
        CHECK(detail::balanced_images(5, 32) == 4);   // 7 blocks -> 8
        CHECK(detail::balanced_images(10, 32) == 8);  // 4 blocks of 8
        CHECK(detail::balanced_images(7, 30) == 5);   // 5 blocks of 7 or 6 -> 6 of 5
        CHECK(detail::balanced_images(3, 30) == 3);   // 10 blocks
        CHECK(detail::balanced_images(5, 3) == 5);    // too few images to share: as given
        CHECK(detail::balanced_images(3, 9) == 2);    // at most 9 / 4 images; 5 or 9 blocks: kept
    } else {
        CHECK(detail::balanced_images(5, 32) == 5);
    }
    // 24 images of 14x14 with 1024 output channels: 5 images a product by the cap, 4 taken.
    std::mt19937 rng(8080);
    for (const char* d : {"mb24ic4ih14oc1024oh14kh1ph0", "mb24ic4ih28oc1024oh14kh1sh2ph0"}) {
        const Problem p = parse_descriptor(d);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng);
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm"),
                    forward(p, src, wei, nullptr, "direct"), d);
    }
    set_num_threads(1);
    CHECK(detail::balanced_images(5, 32) == 5);
    set_num_threads(0);
}

// [SECTION] work buffers of implicit_gemm
// "No column matrix larger than a few MiB": every scratch request (packed tiles, the merged
// output of small images, the phase results of backward data) is recorded; implicit_gemm's
// largest stays within 4 MiB on ResNet-50's conv1 (whose column matrix is 147 x 12544 floats,
// 7.4 MB per image) and on a layer with 2048 output channels and 7x7 images at batch 16 (merged
// images capped). im2col_gemm on conv1 is measured too: the instrument sees its column matrix.
TEST_CASE("implicit_gemm holds no work buffer above 4 MiB (conv1, 2048-channel 7x7 batch 16)") {
    constexpr std::size_t kLimit = 4u << 20;
    std::mt19937 rng(7);
    for (const char* d : {"mb2ic3ih224oc64oh112kh7sh2ph3", "mb16ic16ih7oc2048oh7kh1ph0",
                          "mb16ic2048ih7oc16oh7kh3ph1"}) {
        const Problem p = parse_descriptor(d);
        INFO(d);
        const Tensor src = integer_tensor(p.src_dims(), rng),
                     wei = integer_tensor(p.wei_dims(), rng),
                     dy = integer_tensor(p.dst_dims(), rng);
        detail::reset_scratch_high_water();
        const Tensor y = forward(p, src, wei, nullptr, "implicit_gemm");
        CHECK(detail::scratch_high_water() <= kLimit);
        detail::reset_scratch_high_water();
        const Tensor dx = backward_data(p, dy, wei, "implicit_gemm");
        CHECK(detail::scratch_high_water() <= kLimit);
        detail::reset_scratch_high_water();
        const Tensor dw = backward_weight(p, src, dy, "implicit_gemm");
        CHECK(detail::scratch_high_water() <= kLimit);
        CHECK(density(y) > 0.5);
        CHECK(density(dx) > 0.5);
        CHECK(density(dw) > 0.5);
    }
    const Problem conv1 = parse_descriptor("mb1ic3ih224oc64oh112kh7sh2ph3");
    const Tensor src = integer_tensor(conv1.src_dims(), rng),
                 wei = integer_tensor(conv1.wei_dims(), rng);
    detail::reset_scratch_high_water();
    const Tensor y = forward(conv1, src, wei, nullptr, "im2col_gemm");
    CHECK(detail::scratch_high_water() >= std::size_t{147} * 12544 * sizeof(float));
}

// implicit_gemm's forward of descriptor d on random integers, checked against direct: whether
// it packed W^T ("pack_wei": the shifted and the 1x1 row tiles do, the GEMM paths do not).
TEST_CASE("release_scratch frees every thread's work buffers, and a benchmark run ends with none") {
    std::mt19937 rng(71);
    const Problem p = parse_descriptor("mb4ic32ih30oc40oh30kh3ph1");
    const Tensor src = integer_tensor(p.src_dims(), rng), wei = integer_tensor(p.wei_dims(), rng),
                 dy = integer_tensor(p.dst_dims(), rng);
    const Tensor want = backward_weight(p, src, dy, "direct");
    set_num_threads(2);
    detail::release_scratch();  // what earlier tests left
    CHECK(detail::scratch_bytes_held() == 0);
    // Whole images per thread: both threads hold buffers of their own.
    check_equal(backward_weight(p, src, dy, "implicit_gemm"), want, "before");
    const std::size_t held = detail::scratch_bytes_held();
    CHECK(held >= std::size_t{2} * 40 * 30 * 30 * sizeof(float));  // dY^T rows on each thread
    detail::release_scratch();
    CHECK(detail::scratch_bytes_held() == 0);
    // Allocated again by the next call, which computes the same.
    check_equal(backward_weight(p, src, dy, "implicit_gemm"), want, "after");
    CHECK(detail::scratch_bytes_held() == held);
    // A benchmark run frees them when it ends (here after the algorithms ran on 2 threads).
    bench::Config cfg;
    bench::Layer l;
    l.descriptor = "mb4ic32ih30oc40oh30kh3ph1";
    l.problem = p;
    cfg.layers = {l};
    cfg.threads = 2;
    cfg.timing.warmup = 0;
    cfg.timing.reps = 1;
    cfg.measure_peak = false;
    const bench::Results r = bench::run(cfg);
    CHECK(r.failed() == 0);
    CHECK(r.passed() > 3);
    CHECK(detail::scratch_bytes_held() == 0);
    set_num_threads(0);
}
