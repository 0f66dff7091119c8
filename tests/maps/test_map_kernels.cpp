// The fast kernels (engine/src/maps/kernels.cpp) against the generic executor of their maps,
// element by element, over every group and image, with sentinels where a kernel must not write.
#include <doctest/doctest.h>

#include "map_reference.hpp"

using namespace maps_test;

// [SECTION] fast kernels against the generic executor

namespace {

std::vector<Problem> kernel_problems() {
    std::vector<Problem> ps = random_problems(808, 100);
    // Identity im2col (1x1, stride 1, no padding), small and large, with dilation too.
    ps.push_back(make_problem(2, 2, 3, 5, 1, {4, 5}, {1, 1}));
    ps.push_back(make_problem(1, 1, 4, 4, 2, {7}, {1}, {1}, {0}, {0}, {3}));
    ps.push_back(make_problem(2, 2, 64, 64, 1, {20, 20}, {1, 1}));
    // Larger than the kernels' parallel thresholds.
    ps.push_back(make_problem(2, 2, 64, 64, 1, {24, 24}, {3, 3}, {1, 1}, {1, 1}, {1, 1}));
    ps.push_back(make_problem(2, 2, 64, 32, 2, {21, 20}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {2, 1}));
    ps.push_back(
        make_problem(3, 1, 16, 16, 1, {10, 10, 10}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}));
    ps.push_back(make_problem(1, 2, 64, 64, 1, {600}, {5}, {2}, {2}, {1}));
    ps.push_back(make_problem(2, 2, 8, 64, 1, {40, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 1}));
    ps.push_back(make_problem(2, 1, 128, 16, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}));
    return ps;
}

}  // namespace

TEST_CASE("kernels: im2col_kernel and col2im_kernel equal the generic maps for every (n, g)") {
    std::mt19937 rng(809);
    int identities = 0;
    for (const Problem& p : kernel_problems()) {
        INFO(describe(p));
        REQUIRE(p.validate() == "");
        const dim_t rows = p.icg() * p.kernel_spatial(), os = p.out_spatial();
        const dim_t per = rows * os;
        const Dims cd{p.mb, p.groups, rows, os};
        const Buf x = iota(prod(src_dims(p)));
        const Buf gen = run(maps::im2col(p), x);
        bool identity = true;
        for (int i = 0; i < p.ndims; ++i)
            identity = identity && p.kernel[i] == 1 && p.stride[i] == 1 && p.pad_begin[i] == 0 &&
                       p.pad_end[i] == 0;
        CHECK(convlab::im2col_is_identity(p) == identity);
        identities += identity;
        Buf fast(gen.size(), kSentinel);
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g) {
                Buf col(static_cast<std::size_t>(per), kSentinel);  // must be overwritten
                convlab::im2col_kernel(p, x.data(), n, g, col.data());
                std::copy(col.begin(), col.end(), fast.begin() + (n * p.groups + g) * per);
                if (identity) {
                    // The column matrix is the group's channels of image n.
                    const auto first = x.begin() + (n * p.ic + g * p.icg()) * p.in_spatial();
                    CHECK(std::equal(col.begin(), col.end(), first));
                }
            }
        check_same(fast, gen, cd, "im2col_kernel");

        // col2im accumulates into what the caller put there.
        const Buf col = ints(prod(cd), rng);
        const Buf back = run(maps::col2im(p), col);
        Buf base(back.size());
        for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(i % 5) - 2.0f;
        Buf dx = base;
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g)
                convlab::col2im_kernel(p, col.data() + (n * p.groups + g) * per, n, g, dx.data());
        Buf want(back.size());
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = base[i] + back[i];
        check_same(dx, want, src_dims(p), "col2im_kernel");
    }
    CHECK(identities >= 3);
}

TEST_CASE("kernels: col2im_kernel with zero_first overwrites every element of the group") {
    // zero_first: the group's channels of image n hold exactly the generic map's result, whatever
    // they held before (sentinels here), and the other channels and images are untouched. A 1x1
    // kernel without padding writes each input row once (a row an output row lands on, its
    // elements every s floats, zeros between; 8 at a time with AVX2 at stride 2, then 1 to 8
    // left); the others go through the general nest. col_ld wider than the row reads one image
    // of a product holding several side by side.
    std::mt19937 rng(813);
    std::vector<Problem> ps = kernel_problems();
    ps.push_back(make_problem(2, 2, 5, 3, 1, {12, 42}, {1, 1}, {2, 2}));  // 21 a row
    ps.push_back(make_problem(2, 1, 4, 6, 2, {9, 32}, {1, 1}, {2, 2}));   // 5 rows of 16
    ps.push_back(make_problem(2, 1, 3, 2, 1, {7, 35}, {1, 1}, {3, 2}));   // leftover row, 18
    ps.push_back(make_problem(1, 2, 3, 4, 1, {40}, {1}, {3}));
    ps.push_back(make_problem(3, 1, 2, 3, 1, {5, 6, 19}, {1, 1, 1}, {2, 3, 2}));
    ps.push_back(make_problem(2, 1, 70, 8, 1, {6, 34}, {1, 1}, {2, 2}));  // channels in parallel
    ps.push_back(make_problem(2, 1, 3, 8, 1, {30, 30}, {7, 7}, {2, 2}, {3, 3}, {2, 2}));
    int once = 0;
    for (const Problem& p : ps) {
        INFO(describe(p));
        REQUIRE(p.validate() == "");
        const dim_t rows = p.icg() * p.kernel_spatial(), os = p.out_spatial(), is = p.in_spatial();
        bool unpadded_1x1 = true;
        for (int i = 0; i < p.ndims; ++i)
            unpadded_1x1 = unpadded_1x1 && p.kernel[i] == 1 && p.pad_begin[i] == 0;
        once += unpadded_1x1 && !convlab::im2col_is_identity(p);
        const Dims cd{p.mb, p.groups, rows, os};
        const Buf col = ints(prod(cd), rng);
        const Buf want = run(maps::col2im(p), col);
        for (const dim_t ld : {os, os + 3}) {
            // The column matrix of (n, g) at col_ld = ld: its rows ld floats apart.
            Buf dx(want.size(), kSentinel);
            for (dim_t n = 0; n < p.mb; ++n)
                for (dim_t g = 0; g < p.groups; ++g) {
                    Buf wide(static_cast<std::size_t>(rows * ld), kSentinel);
                    for (dim_t r = 0; r < rows; ++r)
                        std::copy_n(col.begin() + ((n * p.groups + g) * rows + r) * os, os,
                                    wide.begin() + r * ld);
                    Buf before = dx;
                    convlab::col2im_kernel(p, wide.data(), n, g, dx.data(), true, ld);
                    // Only image n's channels of group g changed.
                    std::size_t outside = 0;
                    for (std::size_t i = 0; i < dx.size(); ++i) {
                        const dim_t img = static_cast<dim_t>(i) / (p.ic * is);
                        const dim_t grp = static_cast<dim_t>(i) / is % p.ic / p.icg();
                        outside += (img != n || grp != g) && dx[i] != before[i];
                    }
                    CHECK(outside == 0);
                }
            check_same(dx, want, src_dims(p), "col2im_kernel zero_first");
        }
    }
    CHECK(once >= 6);
}

TEST_CASE("kernels: col2im_rows_kernel by bands of input rows and blocks of output rows") {
    // backward_data_col2im in blocks: each band of dX's input rows (id * IH + ih) adds the taps
    // that land in it from the output rows that reach it (col2im_row_touches), a block of up to
    // 2 output rows at a time, the columns of a block rows os apart. The bands together add what
    // col2im_kernel adds, exactly (integer values); stride 2 along w sums each input row's
    // halves first (conv1-like problems below, with dilation and uneven padding too).
    std::mt19937 rng(811);
    std::vector<Problem> ps = kernel_problems();
    ps.push_back(make_problem(2, 1, 3, 8, 1, {30, 30}, {7, 7}, {2, 2}, {3, 3}, {2, 2}));
    ps.push_back(make_problem(2, 2, 4, 6, 2, {17, 19}, {3, 5}, {1, 2}, {0, 3}, {2, 1}, {2, 2}));
    ps.push_back(make_problem(1, 1, 2, 3, 1, {40}, {4}, {2}, {5}, {4}));
    ps.push_back(
        make_problem(3, 1, 2, 3, 1, {5, 6, 9}, {2, 3, 3}, {2, 1, 2}, {1, 1, 1}, {1, 0, 2}));
    int stride2 = 0;
    for (const Problem& p : ps) {
        INFO(describe(p));
        REQUIRE(p.validate() == "");
        const dim_t rows = p.icg() * p.kernel_spatial(), os = p.out_spatial();
        const dim_t ow = p.out(p.ndims - 1), rows_out = os / ow;
        const dim_t rows_in = p.in_spatial() / p.in[p.ndims - 1];
        stride2 += p.stride[p.ndims - 1] == 2 && p.kernel[p.ndims - 1] > 1;
        const Buf col = ints(rows * os, rng);
        Buf base(static_cast<std::size_t>(prod(src_dims(p))));
        for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(i % 7) - 3.0f;
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g) {
                Buf want = base, got = base;
                convlab::col2im_kernel(p, col.data(), n, g, want.data());
                for (dim_t b = 0; b < 3; ++b) {
                    const dim_t r0 = rows_in * b / 3, r1 = rows_in * (b + 1) / 3;
                    for (dim_t q = 0; q < rows_out;) {
                        if (!convlab::col2im_row_touches(p, q, r0, r1)) {
                            ++q;
                            continue;
                        }
                        const dim_t q1 = std::min(q + 2, rows_out);
                        convlab::col2im_rows_kernel(p, col.data() + q * ow, os, q, q1, r0, r1, n, g,
                                                    got.data());
                        q = q1;
                    }
                }
                check_same(got, want, src_dims(p), "col2im_rows_kernel");
            }
    }
    CHECK(stride2 >= 3);
}

TEST_CASE("kernels: strided, pad, flip_rot, tnc and tnc_diff_wei kernels equal the maps") {
    for (const Problem& p : kernel_problems()) {
        INFO(describe(p));
        const Dims zd = cat({p.mb, p.oc}, z_sizes(p));
        {
            const Buf dy = iota(prod(dst_dims(p)));
            Buf z(static_cast<std::size_t>(prod(zd)), kSentinel);
            convlab::strided_kernel(p, dy.data(), z.data());
            check_same(z, run(maps::strided(p), dy), zd, "strided_kernel");
        }
        {
            Dims pb, pe;
            for (int i = 0; i < p.ndims; ++i) {
                const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
                pb.push_back(span - p.pad_begin[i]);
                pe.push_back(span - p.pad_end[i] + p.leftover(i));
            }
            const Buf z = iota(prod(zd));
            const IndexMap m = maps::pad_for_backward_data(p);
            Buf y(static_cast<std::size_t>(m.dst().numel()), kSentinel);
            convlab::pad_kernel(zd, pb, pe, z.data(), y.data());
            check_same(y, run(m, z), m.dst().dims, "pad_kernel (backward data)");
        }
        {
            const Buf w = iota(prod(wei_dims(p)));
            Buf f(w.size(), kSentinel);
            convlab::flip_rot_kernel(p, w.data(), f.data());
            check_same(f, run(maps::flip_rot(p), w), maps::flip_rot(p).dst().dims,
                       "flip_rot_kernel");
            Buf back(w.size(), kSentinel);
            convlab::tnc_diff_wei_kernel(p, w.data(), back.data());  // w as (C, K/G, k) data
            check_same(back, run(maps::tnc_diff_wei(p), w), wei_dims(p), "tnc_diff_wei_kernel");
        }
        for (const Dims& dims : {src_dims(p), dst_dims(p)}) {
            const Buf x = iota(prod(dims));
            Buf t(x.size(), kSentinel);
            convlab::tnc_kernel(dims, x.data(), t.data());
            std::vector<std::string> names;
            for (std::size_t i = 0; i < dims.size(); ++i) names.push_back("a" + std::to_string(i));
            const IndexMap m = maps::tnc(dims, names);
            check_same(t, run(m, x), m.dst().dims, "tnc_kernel " + text(dims));
        }
    }
}

TEST_CASE("kernels: pad_kernel with random pads, negative ones cropping") {
    std::mt19937 rng(909);
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    int tested = 0;
    for (int t = 0; t < 200; ++t) {
        const int ns = 1 + t % 3;
        Dims dims{pick(1, 3), pick(1, 4)}, pb, pe;
        bool empty = false;
        for (int i = 0; i < ns; ++i) {
            dims.push_back(pick(1, 7));
            pb.push_back(pick(-4, 3));
            pe.push_back(pick(-4, 3));
            empty = empty || dims.back() + pb.back() + pe.back() < 1;
        }
        if (empty) continue;
        INFO("dims " << text(dims) << " pb " << text(pb) << " pe " << text(pe));
        const IndexMap m = maps::pad(dims, pb, pe);
        const Buf x = iota(prod(dims));
        Buf y(static_cast<std::size_t>(m.dst().numel()), kSentinel);
        convlab::pad_kernel(dims, pb, pe, x.data(), y.data());
        check_same(y, run(m, x), m.dst().dims, "pad_kernel");
        ++tested;
    }
    // Large enough for the parallel path: 2*64 planes of 30x30.
    const Dims dims{2, 64, 28, 28}, pb{2, -1}, pe{0, 3};
    const IndexMap m = maps::pad(dims, pb, pe);
    const Buf x = iota(prod(dims));
    Buf y(static_cast<std::size_t>(m.dst().numel()), kSentinel);
    convlab::pad_kernel(dims, pb, pe, x.data(), y.data());
    check_same(y, run(m, x), m.dst().dims, "pad_kernel large");
    CHECK(tested > 100);
}
