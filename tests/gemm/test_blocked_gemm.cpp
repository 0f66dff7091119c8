// ConvLab's blocked GEMM against a naive product: every microkernel, transpose, edge size,
// cache block and thread split, with C streamed or B read in place. Integer data: exact.
#include <doctest/doctest.h>

#include "fast_paths.hpp"

TEST_CASE("blocked GEMM equals a naive product on every microkernel, transpose and edge size") {
    RestoreCore restore;
    std::mt19937 rng(77);
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    REQUIRE(count >= 1);
    CHECK(std::string_view(uks[count - 1].isa) == "portable");
    // Sizes around the tiles (MR 4/6/12, NR 16/32) and the cache blocks (MC 96, KC 256, NC 1536),
    // large enough for the split over threads.
    const dim_t shapes[][3] = {{1, 1, 1},
                               {3, 5, 2},
                               {12, 32, 16},
                               {13, 33, 17},
                               {7, 70, 257},
                               {97, 31, 300},
                               {25, 1600, 9},
                               {130, 1540, 40},
                               {64, 49, 513},
                               {200, 100, 64},
                               {5, 3000, 3},
                               {3, 200, 300},
                               {4, 65, 20},
                               {2, 1700, 7},
                               {1, 129, 260},
                               {30, 70, 1024},
                               {13, 40, 2048},
                               // 17-column edge tiles (16 + 1 of a 32-column panel): k not a
                               // multiple of 16, partial row panels, a second NC block
                               {30, 81, 37},
                               {12, 17, 300},
                               {25, 49, 4},
                               {40, 1553, 19},
                               // N = 49 (6 x 49 tiles with A row-major, read in place or
                               // packed): partial row panels, k with a masked tail, two KC
                               // blocks (accumulated: a single panel of columns takes KC =
                               // 1024), rows 4 KiB apart read in place
                               {31, 49, 300},
                               {6, 49, 17},
                               {37, 49, 1024},
                               {31, 49, 1300},
                               {25, 30, 1100},
                               // A of 2 MiB or more and N <= 256: with A column-contiguous
                               // (ta), the product transposed (sgemm_transposes), partial 16 x 16
                               // blocks
                               {1100, 49, 500},
                               {530, 70, 1000},
                               // 7 x 48 tiles (M < 64 that they fill best): whole and partial
                               // row panels
                               {49, 96, 100},
                               {41, 96, 300},
                               // 6 x 16's last panels of 1 to 5 rows read in place (64 leaves
                               // 4, 128 leaves 2), with a second KC block
                               {33, 70, 300},
                               {128, 50, 40},
                               // B's rows 1024 floats and more apart, packed in bands of 4 rows
                               // (6 x 16): a short band, a partial last panel, two KC blocks
                               {45, 1100, 262}};
    for (int u = 0; u < count * 2; ++u) {
        // Each microkernel with row-major A read from its rows (where the ISA has a kernel for
        // it; copied when the stride is a multiple of 4 KiB, k = 1024 below) and packed.
        REQUIRE(detail::select_microkernel(uks[u / 2].isa));
        Tuning tn;
        tn.read_a = u % 2 ? Rule::Never : Rule::Auto;
        INFO("A " << (u % 2 ? "packed" : "read from its rows"));
        INFO("narrow 4x64 kernel in use for m <= 4: "
             << (std::string_view(detail::microkernel_for(3, 64).isa) == "avx512" &&
                 detail::microkernel_for(3, 64).mr == 4));
        // With AVX-512, 8 x 48 takes the shapes it fills better than 12 x 32 (below: 16 x 96
        // and 64 x 200), 6 x 64 N = 49 with A row-major, 7 x 48 M = 49, 12 x 32 the others.
        if (std::string_view(uks[u / 2].isa) == "avx512") {
            CHECK(detail::microkernel_for(16, 96).mr == 8);
            CHECK(detail::microkernel_for(64, 200).mr == 8);
            CHECK(detail::microkernel_for(64, 49).mr == 12);
            CHECK(detail::microkernel_for(64, 49, true).mr == 6);
            CHECK(detail::microkernel_for(64, 49, true).nr == 64);
            CHECK(detail::microkernel_for(64, 50, true).mr != 6);
            CHECK(detail::microkernel_for(49, 4608).mr == 7);
            CHECK(detail::microkernel_for(49, 4608).nr == 48);
            CHECK(detail::microkernel_for(196, 4608).mr == 12);
            CHECK(detail::microkernel_for(41, 96).mr == 7);
        }
        const auto col_major = [](dim_t m) { return detail::StridedA{nullptr, 1, m}; };
        // The transposed products run where the machine's L2 makes them pay; here on every
        // machine (Always), so that they are checked wherever the tests run.
        tn.transposed_products = Rule::Never;
        CHECK_FALSE(detail::sgemm_transposes(1100, 49, 500, col_major(1100), tn));
        tn.transposed_products = Rule::Auto;
        CHECK(detail::sgemm_transposes(1100, 49, 500, col_major(1100), tn) ==
              detail::transposed_products_pay());
        tn.transposed_products = Rule::Always;
        CHECK(detail::sgemm_transposes(1100, 49, 500, col_major(1100), tn));
        CHECK(detail::sgemm_transposes(530, 70, 1000, col_major(530), tn));
        CHECK_FALSE(detail::sgemm_transposes(1100, 257, 500, col_major(1100), tn));
        CHECK_FALSE(detail::sgemm_transposes(1100, 49, 500, detail::StridedA{nullptr, 500, 1}, tn));
        CHECK(detail::sgemm_transposes(512, 49, 1024, col_major(512), tn));  // 2 MiB
        CHECK_FALSE(detail::sgemm_transposes(512, 49, 512, col_major(512), tn));
        for (const auto& s : shapes)
            for (int tr = 0; tr < 4; ++tr)
                for (bool acc : {false, true}) {
                    INFO(uks[u / 2].isa);
                    check_gemm(s[0], s[1], s[2], tr & 1, tr & 2, acc, rng, tn);
                }
    }
}

TEST_CASE("blocked GEMM's reduction block: longer for few columns, not for A's far columns") {
    RestoreCore restore;
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        INFO(uks[u].isa);
        const auto kc = [](dim_t m, dim_t n, dim_t k, const detail::StridedA& a) {
            return detail::reduction_block(detail::microkernel_for(m, n, detail::row_major(a)), a,
                                           n, k);
        };
        const auto rows = [](dim_t k) { return detail::StridedA{nullptr, k, 1}; };
        CHECK(kc(512, 49, 2048, rows(2048)) == 1024);  // one 64-column panel: 256 KiB
        CHECK(kc(1024, 196, 512, rows(512)) == 512);   // 208 or 224 columns: 1024 passes 512 KiB
        CHECK(kc(512, 784, 512, rows(512)) == 256);
        CHECK(kc(512, 49, 200, rows(200)) == 256);  // the whole reduction in one block anyway
        // W^T in backward data, columns 4 KiB apart: its next block is prefetched within 1 MiB.
        CHECK(kc(1024, 49, 2048, detail::StridedA{nullptr, 1, 1024}) == 256);
        CHECK(kc(1024, 49, 2048, detail::StridedA{nullptr, 1, 512}) == 1024);
    }
}

TEST_CASE("blocked GEMM's column blocks: GemmBlocking's NC where it fits L2, else equal panels") {
    const dim_t nc = detail::GemmBlocking{}.nc;
    const long kib = 1024;
    const auto cols = [](dim_t kc, int nr, dim_t panels, dim_t rows, long l2) {
        return detail::l2_block_columns(kc, nr, panels, rows, l2);
    };
    // 512 KiB of L2 (AMD Zen 3), KC 256, 6 x 16, 64 rows of A: 24 panels fill 3/4 of it.
    CHECK(cols(256, 16, 24, 64, 512 * kib) == nc);
    CHECK(cols(256, 16, 25, 64, 512 * kib) == 400);   // one block, 2% over
    CHECK(cols(256, 16, 49, 64, 512 * kib) == 400);   // 784 columns: 400 + 384
    CHECK(cols(256, 16, 98, 64, 512 * kib) == 400);   // 1568: 4 blocks
    CHECK(cols(256, 16, 98, 128, 512 * kib) == 400);  // A's share 128 KiB: a quarter of L2
    CHECK(cols(256, 16, 98, 129, 512 * kib) == nc);   // more: A would be read once per block
    CHECK(cols(64, 16, 196, 64, 512 * kib) == nc);    // 64 x 1536 fits
    CHECK(cols(256, 16, 196, 64, 2048 * kib) == nc);  // 2 MiB: 1536 fits
    CHECK(cols(256, 32, 49, 64, 1024 * kib) == 800);  // 1 MiB, 12 x 32
    CHECK(cols(256, 16, 196, 64, 0) == nc);           // L2 unknown
    CHECK(cols(256, 16, 196, 64, -1) == nc);
    CHECK(cols(4096, 16, 10, 4, 512 * kib) == 16);  // a panel alone is larger
    // Every case: whole panels, no more than NC, each block within 27/32 of L2 (or one panel),
    // and as few blocks as that allows, as equal as whole panels go.
    for (const long l2 : {256 * kib, 512 * kib, 1024 * kib})
        for (const dim_t kc : {dim_t{16}, dim_t{100}, dim_t{256}})
            for (const dim_t rows : {dim_t{6}, dim_t{64}, dim_t{512}})
                for (const int nr : {16, 32})
                    for (dim_t panels = 1; panels <= 300; ++panels) {
                        const dim_t c = cols(kc, nr, panels, rows, l2);
                        INFO("l2 " << l2 << " kc " << kc << " rows " << rows << " nr " << nr
                                   << " panels " << panels);
                        REQUIRE(c % nr == 0);
                        REQUIRE(c >= nr);
                        CHECK(c <= nc);
                        // Panels within 3/4 of L2, and within 27/32.
                        const dim_t fit = std::max<dim_t>(1, 3 * l2 / 4 / (kc * nr * 4));
                        const dim_t slack = fit + fit / 8;
                        if (c == nc) {
                            CHECK((rows * kc * 4 > l2 / 4 || std::min(panels, nc / nr) <= fit ||
                                   nc / nr <= slack));
                            continue;
                        }
                        CHECK(rows * kc * 4 <= l2 / 4);
                        const dim_t per = c / nr, blocks = (panels + per - 1) / per;
                        CHECK((per == 1 || c * kc * 4 <= 27 * l2 / 32));
                        CHECK(blocks == (panels + slack - 1) / slack);
                        CHECK(panels - (blocks - 1) * per >= per - blocks);  // the last not short
                    }
}

TEST_CASE("blocked GEMM equals a naive product whatever its column block NC") {
    RestoreCore restore;
    std::mt19937 rng(79);
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    // Two KC blocks (300 = 256 + 44) and column counts that leave a partial last panel and a
    // short last block: gemm_block with NC of one panel, a few, l2_block_columns's 400 and
    // GemmBlocking's 1536.
    const dim_t m = 13, k = 300;
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        const detail::MicroKernel& uk = detail::microkernel();
        for (const dim_t n : {dim_t{1000}, dim_t{1601}})
            for (const dim_t nc : {dim_t{uk.nr}, dim_t{3 * uk.nr}, dim_t{400}, dim_t{1536}})
                for (const bool acc : {false, true}) {
                    const auto a = integers(static_cast<std::size_t>(m * k), rng);
                    const auto b = integers(static_cast<std::size_t>(k * n), rng);
                    auto c = integers(static_cast<std::size_t>(m * n), rng);
                    const auto want = naive_product(m, n, k, a, b, false, false, acc, c);
                    detail::GemmBlocking bl;
                    bl.nc = nc / uk.nr * uk.nr;
                    detail::gemm_block(uk, bl, Tuning{}, 0, m, 0, n, k,
                                       detail::StridedA{a.data(), k, 1},
                                       detail::StridedB{b.data(), n, 1}, c.data(), n, acc);
                    dim_t bad = 0;
                    for (std::size_t e = 0; e < c.size(); ++e) bad += c[e] != want[e];
                    INFO(uk.isa << " n " << n << " nc " << bl.nc << " acc " << acc);
                    CHECK(bad == 0);
                }
    }
}

TEST_CASE("blocked GEMM's split: A read in place beside a gathered B splits B's columns") {
    // The 1x1 weight gradient of res3a_branch1 at batch 1 (dY 512 x 784 read in place, B the
    // input sampled at the strides): counted as packed, each thread took half of A's rows and
    // gathered all of B; at a quarter (GathersB), the threads split B's columns.
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    REQUIRE(count > 0);
    const detail::MicroKernel& uk = uks[0];
    if (uk.mr != 12 || uk.nr != 32) {  // the figures below are the 12 x 32 kernel's
        MESSAGE("skipped: the best microkernel here is not 12 x 32");
        return;
    }
    int tm = 0, tn = 0;
    detail::choose_split(512, 256, 784, uk, 2, tm, tn, 1.0);
    CHECK(tm == 2);
    CHECK(tn == 1);
    detail::choose_split(512, 256, 784, uk, 2, tm, tn, 0.25);
    CHECK(tm == 1);
    CHECK(tn == 2);
    // Many columns: splitting them still wins either way; one thread: no split.
    detail::choose_split(64, 3136, 512, uk, 2, tm, tn, 1.0);
    CHECK(tn == 2);
    detail::choose_split(512, 256, 784, uk, 1, tm, tn, 0.25);
    CHECK(tm * tn == 1);
    // Only the sampled packer gathers.
    CHECK(detail::GathersB<detail::SampledTB>);
    CHECK_FALSE(detail::GathersB<detail::StridedB>);
}

TEST_CASE("blocked GEMM's edge tiles: every width of a last column panel") {
    RestoreCore restore;
    std::mt19937 rng(78);
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    // The last panel of a block holds n % 32 columns (n % NR for the other kernels); AVX-512
    // runs it by a narrower tile (detail::MicroKernel::edge_fn). A row-major (read from its
    // rows, or copied at k = 1024) and column-contiguous or packed; a partial row panel (m 25).
    for (int u = 0; u < count * 2; ++u) {
        REQUIRE(detail::select_microkernel(uks[u / 2].isa));
        Tuning tn;
        tn.read_a = u % 2 ? Rule::Never : Rule::Auto;
        for (dim_t r = 1; r < 32; ++r)
            for (const auto& [m, n, k] :
                 {std::array<dim_t, 3>{25, 32 + r, 37}, std::array<dim_t, 3>{12, r, 300},
                  std::array<dim_t, 3>{24, 64 + r, 1024}})
                for (bool ta : {false, true}) {
                    INFO(uks[u / 2].isa << (u % 2 ? " A packed" : " A read from its rows"));
                    check_gemm(m, n, k, ta, false, r % 2 == 1, rng, tn);
                }
    }
}

TEST_CASE("gemm's A prefetch visits every cache line of the next block, in its shares") {
    // A row-major (runs along k) and column-contiguous (runs along i), at offsets that start
    // runs inside a line; after `shares` steps every line of the block was visited, each run's
    // lines once (neighbouring runs may share a line).
    std::mt19937 rng(91);
    std::vector<float> buf(1 << 16);
    for (int t = 0; t < 200; ++t) {
        const bool rows = t % 2 == 0;
        const dim_t ld = std::uniform_int_distribution<dim_t>(40, 300)(rng);
        const dim_t mc = std::uniform_int_distribution<dim_t>(1, 40)(rng);
        const dim_t kc = std::uniform_int_distribution<dim_t>(1, 120)(rng);
        const dim_t i0 = std::uniform_int_distribution<dim_t>(0, 7)(rng);
        const dim_t k0 = std::uniform_int_distribution<dim_t>(0, 9)(rng);
        const dim_t shares = std::uniform_int_distribution<dim_t>(1, 30)(rng);
        const detail::StridedA a = rows ? detail::StridedA{buf.data() + t % 16, ld, 1}
                                        : detail::StridedA{buf.data() + t % 16, 1, ld};
        std::set<std::uintptr_t> want;
        std::size_t per_run = 0;  // the runs' lines, counted run by run
        const auto line = [](const float* x) {
            return reinterpret_cast<std::uintptr_t>(x) & ~std::uintptr_t{63};
        };
        for (dim_t r = 0; r < (rows ? mc : kc); ++r) {
            const float* run = rows ? a.p + (i0 + r) * a.rs + k0 : a.p + i0 + (k0 + r) * a.cs;
            const dim_t len = rows ? kc : mc;
            per_run += (line(run + len - 1) - line(run)) / 64 + 1;
            for (dim_t e = 0; e < len; ++e) want.insert(line(run + e));
        }
        detail::PrefetchA pf(a, i0, mc, k0, kc, shares);
        std::vector<std::uintptr_t> got;
        for (dim_t s = 0; s < shares; ++s)
            pf.step([&](const void* l) { got.push_back(reinterpret_cast<std::uintptr_t>(l)); });
        INFO("rows " << rows << " ld " << ld << " block " << mc << "x" << kc << " at " << i0 << ","
                     << k0 << " shares " << shares);
        CHECK(got.size() == per_run);
        CHECK(std::set<std::uintptr_t>(got.begin(), got.end()) == want);
        const std::size_t before = got.size();
        pf.step([&](const void* l) { got.push_back(reinterpret_cast<std::uintptr_t>(l)); });
        CHECK(got.size() == before);  // nothing after the last share
    }
    // Images along k (a.ks) are not prefetched.
    detail::PrefetchA none(detail::StridedA{buf.data(), 64, 1, 8, 1024}, 0, 4, 0, 16, 2);
    int visited = 0;
    for (int s = 0; s < 4; ++s) none.step([&](const void*) { ++visited; });
    CHECK(visited == 0);
}

TEST_CASE("blocked GEMM writing C by non-temporal stores equals a naive product") {
    RestoreCore restore;
    std::mt19937 rng(79);
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    // 8 x 48 (m = 64) and 12 x 32 tiles, one and several KC blocks (only the last streamed,
    // after adding the earlier ones), partial row panels and edge columns (stored plainly), C
    // 64-byte aligned and one float off (stored plainly), ldc not a multiple of 16 (the same).
    const dim_t shapes[][3] = {{64, 200, 64},  {64, 1600, 300}, {96, 160, 40},
                               {100, 64, 520}, {13, 80, 17},    {64, 50, 30}};
    // Kernels with streamed stores: AVX-512's 12 x 32 and 8 x 48, A packed and read in place.
    if (std::string_view(uks[0].isa) == "avx512") {
        const bool packed = detail::microkernel_for(96, 160).stream_fn[0] != nullptr;
        const bool rows = detail::microkernel_for(64, 200).stream_fn[1] != nullptr;
        CHECK(packed);
        CHECK(rows);
    }
    for (int u = 0; u < count * 2; ++u) {
        REQUIRE(detail::select_microkernel(uks[u / 2].isa));
        Tuning tn;
        tn.read_a = u % 2 ? Rule::Never : Rule::Auto;
        for (const auto& [m, n, k] : shapes)
            for (int misalign = 0; misalign < 2; ++misalign)
                for (bool acc : {false, true}) {
                    const dim_t bad = gemm_mismatches(m, n, k, acc, true, misalign, rng, tn);
                    INFO(uks[u / 2].isa << (u % 2 ? " A packed" : " A read from its rows") << " m "
                                        << m << " n " << n << " k " << k << " misaligned "
                                        << misalign << " acc " << acc);
                    CHECK(bad == 0);
                }
    }
}

TEST_CASE("blocked GEMM reading B's rows in place equals a naive product") {
    RestoreCore restore;
    std::mt19937 rng(80);
    int count = 0;
    const detail::MicroKernel* uks = detail::microkernels(count);
    // Where it runs by itself: few row panels over a short reduction, more of them where B
    // comes from memory (prefetch_b); never with A packed or B's columns strided.
    const auto applies = [](dim_t m, dim_t k, bool from_memory, dim_t bcs = 1,
                            const Tuning& tn = {}) {
        const detail::MicroKernel& uk = detail::microkernel_for(m, 3136, true);
        detail::GemmBlocking bl;
        bl.prefetch_b = from_memory;
        return detail::b_in_place_applies(uk, bl, detail::StridedA{nullptr, k, 1},
                                          detail::StridedB{nullptr, bcs == 1 ? 3136 : 1, bcs}, m, k,
                                          tn);
    };
    if (std::string_view(uks[0].isa) == "avx512") {
        CHECK(applies(64, 64, false));
        CHECK(applies(64, 256, false));
        CHECK_FALSE(applies(64, 512, false));
        CHECK_FALSE(applies(256, 64, false));
        CHECK(applies(256, 64, true));
        CHECK_FALSE(applies(512, 128, true));
        CHECK_FALSE(applies(64, 64, false, 64));
        Tuning packed, never, always;
        packed.read_a = Rule::Never;
        never.b_in_place = Rule::Never;
        always.b_in_place = Rule::Always;
        CHECK_FALSE(applies(64, 64, false, 1, packed));
        CHECK_FALSE(applies(64, 64, false, 1, never));
        CHECK(applies(512, 128, false, 1, always));
        CHECK_FALSE(applies(514, 64, false, 1, always));  // a last row panel of 10 (12 x 32)
    }
    // 12 x 32 and 8 x 48 tiles (m = 64 and 16 x 96 take 8 x 48), whole row panels and a last
    // one of 4 or 8 rows (or of 2, packed), a last partial column panel (packed), reductions
    // above KC, accumulation, C streamed (aligned or one float off), one and two threads.
    const dim_t shapes[][3] = {{64, 3136, 64}, {64, 200, 64}, {96, 160, 40},
                               {100, 70, 300}, {16, 96, 7},   {28, 33, 17},
                               {20, 64, 513},  {38, 100, 5},  {256, 400, 64}};
    for (int u = 0; u < count; ++u) {
        REQUIRE(detail::select_microkernel(uks[u].isa));
        for (const Rule mode : {Rule::Always, Rule::Auto})
            for (const auto& [m, n, k] : shapes)
                for (int variant = 0; variant < 4; ++variant) {
                    const bool acc = variant & 1, stream = variant & 2;
                    Tuning tn;
                    tn.b_in_place = mode;
                    const dim_t bad = gemm_mismatches(m, n, k, acc, stream, variant == 3, rng, tn);
                    INFO(uks[u].isa << " m " << m << " n " << n << " k " << k << " acc " << acc
                                    << " stream " << stream << " forced "
                                    << (mode == Rule::Always));
                    CHECK(bad == 0);
                }
    }
}

TEST_CASE("gemm_isa names the microkernel in use") {
    const std::string isa = gemm_isa();
    CHECK((isa == "avx512" || isa == "avx2" || isa == "portable"));
}
