// Index maps: every map exhaustively against formulas written out independently
// (map_reference.hpp), the via-forward schemes end to end against direct loops, the lecture's 8x4
// column matrix by hand, step enumeration, names, shapes and construction.
#include <doctest/doctest.h>

#include "map_reference.hpp"

using namespace maps_test;

// [SECTION] every map against its formula

TEST_CASE("maps: im2col and col2im equal the formula on every element") {
    for (const Problem& p : random_problems(101, 54)) {
        INFO(describe(p));
        const IndexMap m = maps::im2col(p);
        const Dims cd{p.mb, p.groups, p.icg() * p.kernel_spatial(), p.out_spatial()};
        CHECK(m.kind() == IndexMap::Kind::Gather);
        CHECK(m.src().dims == src_dims(p));
        CHECK(m.dst().dims == cd);
        CHECK(m.dst().names == std::vector<std::string>{"n", "g", "row", "col"});
        CHECK(m.line_axis() == 2);
        const Buf x = iota(prod(src_dims(p)));
        check_same(run(m, x), ref_im2col(p, x), cd, "im2col");

        const IndexMap r = maps::col2im(p);
        CHECK(r.kind() == IndexMap::Kind::Reduce);
        CHECK(r.src().dims == cd);
        CHECK(r.dst().dims == src_dims(p));
        CHECK(r.name() == "col2im");
        // col2im is im2col's function seen from the other side.
        dim_t differ = 0;
        for (dim_t i = 0; i < prod(cd); ++i) differ += r.map(i) != m.map(i);
        CHECK(differ == 0);
        Buf col = iota(prod(cd));
        for (auto& v : col) v = static_cast<float>(std::fmod(v, 97.0f));
        const Buf img = run(r, col);
        check_same(img, ref_col2im(p, col), src_dims(p), "col2im");
        // Adjoint: <im2col(x), col> == <x, col2im(col)>.
        const Buf xc = run(m, x);
        double lhs = 0, rhs = 0;
        for (std::size_t i = 0; i < col.size(); ++i) lhs += double(xc[i]) * col[i];
        for (std::size_t i = 0; i < x.size(); ++i) rhs += double(x[i]) * img[i];
        CHECK(lhs == rhs);
    }
}

TEST_CASE("maps: strided (zero insertion) equals the formula") {
    for (const Problem& p : random_problems(202, 54)) {
        INFO(describe(p));
        const IndexMap m = maps::strided(p);
        const Dims zd = cat({p.mb, p.oc}, z_sizes(p));
        CHECK(m.src().dims == dst_dims(p));
        CHECK(m.dst().dims == zd);
        CHECK(m.src().names[1] == "k");
        const Buf dy = iota(prod(dst_dims(p)));
        check_same(run(m, dy), ref_strided(p, dy), zd, "strided");
    }
}

TEST_CASE("maps: pad, with negative pads cropping") {
    std::mt19937 rng(303);
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    int tested = 0, crops = 0, refused = 0;
    for (int t = 0; t < 150; ++t) {
        const int ns = static_cast<int>(pick(1, 3));
        Dims dims{pick(1, 2), pick(1, 3)}, pb, pe;
        bool empty = false;
        for (int i = 0; i < ns; ++i) {
            dims.push_back(pick(1, 6));
            pb.push_back(pick(-3, 3));
            pe.push_back(pick(-3, 3));
            empty = empty || dims.back() + pb.back() + pe.back() < 1;
        }
        INFO("dims " << text(dims) << " pb " << text(pb) << " pe " << text(pe));
        if (empty) {
            CHECK_THROWS_AS(maps::pad(dims, pb, pe), Error);
            ++refused;
            continue;
        }
        const IndexMap m = maps::pad(dims, pb, pe);
        const Dims od = padded_dims(dims, pb, pe);
        CHECK(m.src().dims == dims);
        CHECK(m.dst().dims == od);
        const Buf x = iota(prod(dims));
        check_same(run(m, x), ref_pad(dims, pb, pe, x), od, "pad");
        ++tested;
        crops += std::any_of(pb.begin(), pb.end(), [](dim_t v) { return v < 0; }) ||
                 std::any_of(pe.begin(), pe.end(), [](dim_t v) { return v < 0; });
    }
    CHECK(tested > 50);
    CHECK(crops > 30);
    CHECK(refused > 0);

    // The pad of the via-forward backward data: begin (k-1)d - pb, end (k-1)d - pe + r.
    for (const Problem& p : random_problems(304, 54)) {
        INFO(describe(p));
        Dims pb, pe;
        for (int i = 0; i < p.ndims; ++i) {
            const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
            const dim_t r = (p.in[i] + p.pad_begin[i] + p.pad_end[i] - span - 1) % p.stride[i];
            pb.push_back(span - p.pad_begin[i]);
            pe.push_back(span - p.pad_end[i] + r);
        }
        const Dims zd = cat({p.mb, p.oc}, z_sizes(p));
        const IndexMap m = maps::pad_for_backward_data(p);
        CHECK(m.src().dims == zd);
        CHECK(m.dst().dims == padded_dims(zd, pb, pe));
        const Buf z = iota(prod(zd));
        check_same(run(m, z), ref_pad(zd, pb, pe, z), padded_dims(zd, pb, pe), "pad bwd data");
    }
}

TEST_CASE("maps: flip_rot, tnc and tnc_diff_wei equal their formulas") {
    for (const Problem& p : random_problems(404, 54)) {
        INFO(describe(p));
        {
            const IndexMap m = maps::flip_rot(p);
            const Dims fd = cat({p.ic, p.ocg()}, k_sizes(p));
            CHECK(m.src().dims == wei_dims(p));
            CHECK(m.dst().dims == fd);
            const Buf w = iota(prod(wei_dims(p)));
            check_same(run(m, w), ref_flip_rot(p, w), fd, "flip_rot");
        }
        {
            const IndexMap m = maps::tnc_src(p);
            Dims td = src_dims(p);
            std::swap(td[0], td[1]);
            CHECK(m.src().dims == src_dims(p));
            CHECK(m.dst().dims == td);
            CHECK(m.dst().names[0] == "c");
            CHECK(m.dst().names[1] == "n");
            const Buf x = iota(prod(src_dims(p)));
            check_same(run(m, x), ref_tnc(src_dims(p), x), td, "tnc_src");
        }
        {
            const IndexMap m = maps::tnc_diff_dst(p);
            Dims td = dst_dims(p);
            std::swap(td[0], td[1]);
            CHECK(m.src().dims == dst_dims(p));
            CHECK(m.dst().dims == td);
            const Buf y = iota(prod(dst_dims(p)));
            check_same(run(m, y), ref_tnc(dst_dims(p), y), td, "tnc_diff_dst");
        }
        {
            const IndexMap m = maps::tnc_diff_wei(p);
            const Dims sd = cat({p.ic, p.ocg()}, k_sizes(p));
            CHECK(m.src().dims == sd);
            CHECK(m.dst().dims == wei_dims(p));
            const Buf s = iota(prod(sd));
            check_same(run(m, s), ref_tnc_diff_wei(p, s), wei_dims(p), "tnc_diff_wei");
            // tnc_diff_wei undoes flip_rot's per-group channel swap: together they only
            // reverse the kernel.
            const IndexMap both = convlab::compose(m, maps::flip_rot(p), "fliprot_tnc");
            const Buf w = iota(prod(wei_dims(p)));
            Buf want(w.size());
            const Dims wd = wei_dims(p);
            for_each_coord(wd, [&](const Dims& c) {
                Dims r = c;
                for (int i = 0; i < p.ndims; ++i) r[2 + i] = p.kernel[i] - 1 - c[2 + i];
                want[lin(wd, c)] = w[lin(wd, r)];
            });
            check_same(run(both, w), want, wd, "tnc_diff_wei . flip_rot");
        }
    }
    // tnc on arbitrary ranks.
    std::mt19937 rng(405);
    for (int t = 0; t < 40; ++t) {
        Dims dims;
        std::vector<std::string> names;
        const int rank = 2 + t % 4;
        for (int i = 0; i < rank; ++i) {
            dims.push_back(std::uniform_int_distribution<dim_t>(1, 5)(rng));
            names.push_back("a" + std::to_string(i));
        }
        const IndexMap m = maps::tnc(dims, names);
        Dims td = dims;
        std::swap(td[0], td[1]);
        CHECK(m.dst().dims == td);
        CHECK(m.dst().names[0] == "a1");
        const Buf x = iota(prod(dims));
        check_same(run(m, x), ref_tnc(dims, x), td, "tnc " + text(dims));
    }
    CHECK_THROWS_AS(maps::tnc({3}, {"a"}), Error);
    CHECK_THROWS_AS(maps::tnc({3, 4}, {"a"}), Error);
}

TEST_CASE("maps: compose equals running the two maps one after the other") {
    for (const Problem& p : random_problems(505, 54)) {
        INFO(describe(p));
        const IndexMap st = maps::strided(p), pd = maps::pad_for_backward_data(p);
        const IndexMap c = convlab::compose(pd, st, "strided_pad");
        CHECK(c.name() == "strided_pad");
        CHECK(c.kind() == IndexMap::Kind::Gather);
        CHECK(c.src() == st.src());
        CHECK(c.dst() == pd.dst());
        CHECK(c.line_axis() == pd.line_axis());
        const Buf dy = iota(prod(dst_dims(p)));
        const Buf two = run(pd, run(st, dy));
        check_same(run(c, dy), two, pd.dst().dims, "compose vs sequence");
        // ... and the formula: dY(n,k,o) lands at o*s + ((k-1)d - pb) when inside.
        Buf want(two.size(), 0.0f);
        const Dims dd = dst_dims(p), od = pd.dst().dims;
        for_each_coord(dd, [&](const Dims& cc) {
            Dims t = cc;
            for (int i = 0; i < p.ndims; ++i) {
                t[2 + i] =
                    cc[2 + i] * p.stride[i] + (p.kernel[i] - 1) * p.dilation[i] - p.pad_begin[i];
                if (t[2 + i] < 0 || t[2 + i] >= od[2 + i]) return;
            }
            want[lin(od, t)] = dy[lin(dd, cc)];
        });
        check_same(run(c, dy), want, od, "compose vs formula");
        // TNC twice is the identity.
        const IndexMap t1 = maps::tnc_diff_dst(p);
        const IndexMap t2 = maps::tnc(t1.dst().dims, t1.dst().names);
        const IndexMap id = convlab::compose(t2, t1, "tnc_tnc");
        CHECK(id.dst().dims == dst_dims(p));
        dim_t not_id = 0;
        for (dim_t i = 0; i < id.dst().numel(); ++i) not_id += id.map(i) != i;
        CHECK(not_id == 0);
    }
    // Errors: a reduce, and mismatched middle shapes.
    const Problem p = make_problem(2, 2, 3, 4, 1, {5, 5}, {3, 3});
    CHECK_THROWS_AS(convlab::compose(maps::col2im(p), maps::im2col(p), "x"), Error);
    CHECK_THROWS_AS(convlab::compose(maps::im2col(p), maps::strided(p), "x"), Error);
}

// [SECTION] the via-forward schemes

TEST_CASE("maps: the via-forward problems reproduce the input and kernel sizes") {
    std::vector<Problem> ps = random_problems(606, 60);
    ps.push_back(make_problem(2, 1, 3, 64, 1, {224, 224}, {7, 7}, {2, 2}, {3, 3}, {3, 3}));
    ps.push_back(make_problem(2, 1, 8, 8, 1, {56, 56}, {1, 1}, {2, 2}));
    for (const Problem& p : ps) {
        INFO(describe(p));
        const Problem q = maps::backward_data_as_forward(p);
        CHECK(q.validate(true) == "");
        CHECK(q.ndims == p.ndims);
        CHECK(q.mb == p.mb);
        CHECK(q.ic == p.oc);
        CHECK(q.oc == p.ic);
        CHECK(q.groups == p.groups);
        const Problem w = maps::backward_weight_as_forward(p);
        CHECK(w.validate(true) == "");
        CHECK(w.mb == p.icg());
        CHECK(w.ic == p.mb);
        CHECK(w.oc == p.ocg());
        CHECK(w.groups == 1);
        const IndexMap pd = maps::pad_for_backward_data(p);
        for (int i = 0; i < p.ndims; ++i) {
            CHECK(q.out(i) == p.in[i]);
            CHECK(q.stride[i] == 1);
            CHECK(q.dilation[i] == p.dilation[i]);
            CHECK(q.kernel[i] == p.kernel[i]);
            CHECK(q.in[i] == pd.dst().dims[2 + i]);
            CHECK(w.out(i) == p.kernel[i]);
            CHECK(w.in[i] == p.in[i]);
            CHECK(w.kernel[i] == p.out(i));
            CHECK(w.stride[i] == p.dilation[i]);
            CHECK(w.dilation[i] == p.stride[i]);
        }
    }
    // ResNet-50 conv1: r = 1, so the pad end of dY is (7-1) - 3 + 1 = 4.
    const Problem conv1 = make_problem(2, 1, 3, 64, 1, {224, 224}, {7, 7}, {2, 2}, {3, 3}, {3, 3});
    REQUIRE(conv1.out(0) == 112);
    const IndexMap pd = maps::pad_for_backward_data(conv1);
    CHECK(pd.src().dims == Dims{1, 64, 223, 223});
    CHECK(pd.dst().dims == Dims{1, 64, 230, 230});
}

TEST_CASE("maps: via-forward backward data and weight equal direct loops") {
    std::vector<Problem> ps = random_problems(707, 45);
    // Leftover rows (r = 1) like ResNet conv1 and the 1x1 stride-2 layers, small.
    ps.push_back(make_problem(2, 2, 3, 4, 1, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}));
    ps.push_back(make_problem(2, 2, 4, 6, 2, {8, 7}, {1, 1}, {2, 2}));
    ps.push_back(make_problem(1, 1, 2, 2, 1, {9}, {3}, {3}, {0}, {2}, {2}));
    std::mt19937 rng(708);
    for (const Problem& p : ps) {
        INFO(describe(p));
        const Buf x = ints(prod(src_dims(p)), rng), w = ints(prod(wei_dims(p)), rng),
                  dy = ints(prod(dst_dims(p)), rng);
        Buf dx_ref, dw_ref;
        conv_bwd(p, x, w, dy, dx_ref, dw_ref);

        // dX: Strided(dY), pad, FlipRot(W), forward conv with stride 1.
        const Problem q = maps::backward_data_as_forward(p);
        const IndexMap st = maps::strided(p), pd = maps::pad_for_backward_data(p),
                       fr = maps::flip_rot(p);
        REQUIRE(pd.src().dims == st.dst().dims);
        REQUIRE(pd.dst().dims == src_dims(q));
        REQUIRE(fr.dst().dims == wei_dims(q));
        const Buf dx = conv_fwd(q, run(pd, run(st, dy)), run(fr, w));
        check_same(dx, dx_ref, src_dims(p), "dX via forward");

        // dW: per group, forward conv of TNC(X) with TNC(dY) as the kernel, then TNC back.
        const Problem r = maps::backward_weight_as_forward(p);
        const Buf xt = run(maps::tnc_src(p), x), yt = run(maps::tnc_diff_dst(p), dy);
        const dim_t cg = p.icg(), kg = p.ocg(), ks = p.kernel_spatial();
        const dim_t xs = cg * p.mb * p.in_spatial(), ys = kg * p.mb * p.out_spatial();
        REQUIRE(prod(src_dims(r)) == xs);
        REQUIRE(prod(wei_dims(r)) == ys);
        REQUIRE(prod(dst_dims(r)) == cg * kg * ks);
        Buf stacked;
        for (dim_t g = 0; g < p.groups; ++g) {
            const Buf xg(xt.begin() + g * xs, xt.begin() + (g + 1) * xs);
            const Buf yg(yt.begin() + g * ys, yt.begin() + (g + 1) * ys);
            const Buf part = conv_fwd(r, xg, yg);
            stacked.insert(stacked.end(), part.begin(), part.end());
        }
        check_same(run(maps::tnc_diff_wei(p), stacked), dw_ref, wei_dims(p), "dW via forward");
    }
}

// [SECTION] the lecture's worked example

TEST_CASE("maps: the matrix-implementation example (2x3x3 input, 2x2x2 filter) by hand") {
    // C = 2, H = W = 3, kernel 2x2, stride 1, no padding, batch 1: x[c][h][w] = 1 + c*9 + h*3 + w.
    const Problem p = make_problem(2, 1, 2, 1, 1, {3, 3}, {2, 2});
    REQUIRE(p.validate() == "");
    const Buf x = iota(18);  // exactly 1 + c*9 + h*3 + w in row-major order
    // Rows (c, kh, kw), columns (oh, ow) = (0,0) (0,1) (1,0) (1,1): x[c][oh+kh][ow+kw].
    const float want[8][4] = {
        {1, 2, 4, 5},      // c0 kh0 kw0
        {2, 3, 5, 6},      // c0 kh0 kw1
        {4, 5, 7, 8},      // c0 kh1 kw0
        {5, 6, 8, 9},      // c0 kh1 kw1
        {10, 11, 13, 14},  // c1 kh0 kw0
        {11, 12, 14, 15},  // c1 kh0 kw1
        {13, 14, 16, 17},  // c1 kh1 kw0
        {14, 15, 17, 18},  // c1 kh1 kw1
    };
    const IndexMap m = maps::im2col(p);
    REQUIRE(m.dst().dims == Dims{1, 1, 8, 4});
    const Buf gen = run(m, x);
    Buf fast(32, kSentinel);
    convlab::im2col_kernel(p, x.data(), 0, 0, fast.data());
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 4; ++c) {
            INFO("row " << r << " col " << c);
            CHECK(gen[r * 4 + c] == want[r][c]);
            CHECK(fast[r * 4 + c] == want[r][c]);
        }
    // col2im of an all-ones matrix counts how many windows cover each pixel.
    const Buf ones(32, 1.0f);
    const Buf cover = run(maps::col2im(p), ones);
    const Buf want_cover = {1, 2, 1, 2, 4, 2, 1, 2, 1, 1, 2, 1, 2, 4, 2, 1, 2, 1};
    check_same(cover, want_cover, {1, 2, 3, 3}, "coverage");
    Buf fast_cover(18, 0.0f);
    convlab::col2im_kernel(p, ones.data(), 0, 0, fast_cover.data());
    check_same(fast_cover, want_cover, {1, 2, 3, 3}, "coverage (kernel)");
}

// [SECTION] step enumeration

TEST_CASE("maps: step enumeration of every map") {
    for (const Problem& p : random_problems(1001, 12)) {
        for (const IndexMap& m : all_maps(p)) {
            INFO(describe(p) << " map " << m.name());
            const Shape& dom = m.domain();
            const dim_t n = dom.numel(), line = dom.dims[m.line_axis()];
            CHECK(m.num_steps(Granularity::Element) == n);
            CHECK(m.num_steps(Granularity::Line) == n / line);
            CHECK(m.num_steps(Granularity::Whole) == 1);
            const auto want = expected_pairs(m);
            REQUIRE(static_cast<dim_t>(want.size()) == n);

            std::vector<std::pair<dim_t, dim_t>> elem, lines;
            bool one_each = true, line_sizes = true;
            for (dim_t s = 0; s < n; ++s) {
                const auto e = step_pairs(m, Granularity::Element, s);
                one_each = one_each && e.size() == 1;
                elem.insert(elem.end(), e.begin(), e.end());
            }
            for (dim_t s = 0; s < n / line; ++s) {
                const auto l = step_pairs(m, Granularity::Line, s);
                line_sizes = line_sizes && static_cast<dim_t>(l.size()) == line;
                lines.insert(lines.end(), l.begin(), l.end());
            }
            CHECK(one_each);
            CHECK(line_sizes);
            CHECK(elem == want);
            CHECK(lines == want);

            // Tile: at most kTileLines whole lines along the axis walked outside the line axis
            // (the highest other axis), all within one index of the remaining axes.
            int mid_axis = -1;
            for (int a = 0; a < dom.rank(); ++a)
                if (a != m.line_axis()) mid_axis = a;
            const dim_t mid = mid_axis < 0 ? 1 : dom.dims[static_cast<std::size_t>(mid_axis)];
            CHECK(m.mid_extent() == mid);
            CHECK(m.num_steps(Granularity::Tile) ==
                  n / (line * mid) * ((mid + convlab::kTileLines - 1) / convlab::kTileLines));
            std::vector<std::pair<dim_t, dim_t>> tiles;
            bool tile_sizes = true, one_block = true;
            std::vector<dim_t> c0(static_cast<std::size_t>(dom.rank())), c(c0.size());
            for (dim_t s = 0; s < m.num_steps(Granularity::Tile); ++s) {
                const auto t = step_pairs(m, Granularity::Tile, s);
                const auto sz = static_cast<dim_t>(t.size());
                tile_sizes =
                    tile_sizes && sz % line == 0 && sz >= line && sz <= convlab::kTileLines * line;
                for (std::size_t i = 0; i < t.size(); ++i) {
                    const dim_t d = m.kind() == IndexMap::Kind::Gather ? t[i].second : t[i].first;
                    dom.coord_of(d, i == 0 ? std::span<dim_t>(c0) : std::span<dim_t>(c));
                    if (i == 0) continue;
                    for (int a = 0; a < dom.rank(); ++a)
                        if (a != m.line_axis() && a != mid_axis)
                            one_block = one_block && c[static_cast<std::size_t>(a)] ==
                                                         c0[static_cast<std::size_t>(a)];
                    if (mid_axis >= 0)
                        one_block =
                            one_block &&
                            c[static_cast<std::size_t>(mid_axis)] / convlab::kTileLines ==
                                c0[static_cast<std::size_t>(mid_axis)] / convlab::kTileLines;
                }
                tiles.insert(tiles.end(), t.begin(), t.end());
            }
            CHECK(tile_sizes);
            CHECK(one_block);
            CHECK(tiles == want);
            CHECK(step_pairs(m, Granularity::Whole, 0) == want);
            for (Granularity g :
                 {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole}) {
                CHECK(step_pairs(m, g, -1).empty());
                CHECK(step_pairs(m, g, m.num_steps(g)).empty());
            }

            // Executing every step (any granularity) is executing the map.
            const Buf src = iota(m.src().numel());
            const Buf full = run(m, src);
            const bool gather = m.kind() == IndexMap::Kind::Gather;
            for (Granularity g :
                 {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole}) {
                Buf dst(full.size(), 0.0f);
                m.execute_steps(g, m.num_steps(g), src.data(), dst.data());
                check_same(dst, full, m.dst().dims,
                           std::string("all steps, ") + convlab::granularity_name(g));
                Buf clamp(full.size(), 0.0f);
                m.execute_steps(g, m.num_steps(g) + 5, src.data(), clamp.data());
                CHECK(clamp == full);
            }
            // After k steps exactly the first k pairs have been applied.
            for (Granularity g : {Granularity::Element, Granularity::Line}) {
                const dim_t k = m.num_steps(g) / 2, per = g == Granularity::Line ? line : 1;
                const float untouched = gather ? kSentinel : 0.0f;
                Buf dst(full.size(), untouched), expect(full.size(), untouched);
                m.execute_steps(g, k, src.data(), dst.data());
                for (dim_t i = 0; i < k * per; ++i) {
                    const auto [s, d] = want[i];
                    if (gather)
                        expect[d] = s < 0 ? 0.0f : src[s];
                    else if (d >= 0)
                        expect[d] += src[s];
                }
                check_same(dst, expect, m.dst().dims,
                           std::string("partial, ") + convlab::granularity_name(g));
            }
        }
    }
}

TEST_CASE("maps: im2col Line steps each fill exactly one column") {
    for (const Problem& p : random_problems(1101, 15)) {
        INFO(describe(p));
        const IndexMap m = maps::im2col(p);
        const dim_t rows = p.icg() * p.kernel_spatial(), cols = p.out_spatial();
        REQUIRE(m.num_steps(Granularity::Line) == p.mb * p.groups * cols);
        dim_t bad = 0;
        for (dim_t s = 0; s < m.num_steps(Granularity::Line); ++s) {
            // Walk order (n, g, col, row): step s is column s % cols of (n, g) = s / cols.
            const dim_t col = s % cols, g = s / cols % p.groups, n = s / cols / p.groups;
            const auto pairs = step_pairs(m, Granularity::Line, s);
            if (static_cast<dim_t>(pairs.size()) != rows) {
                ++bad;
                continue;
            }
            for (dim_t r = 0; r < rows; ++r) {
                const dim_t want_dst = ((n * p.groups + g) * rows + r) * cols + col;
                if (pairs[r].second != want_dst || pairs[r].first != m.map(want_dst)) ++bad;
            }
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("maps: sources_of and destinations_of agree with map()") {
    int tested = 0;
    for (const Problem& p : random_problems(1201, 30)) {
        for (const IndexMap& m : all_maps(p)) {
            if (m.src().numel() * m.dst().numel() > 3000000) continue;
            INFO(describe(p) << " map " << m.name());
            ++tested;
            std::vector<std::vector<dim_t>> to_dst(m.src().numel()), to_src(m.dst().numel());
            for (dim_t d = 0; d < m.domain().numel(); ++d) {
                const dim_t o = m.map(d);
                if (o < 0) continue;
                if (m.kind() == IndexMap::Kind::Gather) {
                    to_src[d].push_back(o);
                    to_dst[o].push_back(d);
                } else {
                    to_dst[d].push_back(o);
                    to_src[o].push_back(d);
                }
            }
            dim_t bad_src = 0, bad_dst = 0;
            for (dim_t d = 0; d < m.dst().numel(); ++d) bad_src += m.sources_of(d) != to_src[d];
            for (dim_t s = 0; s < m.src().numel(); ++s)
                bad_dst += m.destinations_of(s) != to_dst[s];
            CHECK(bad_src == 0);
            CHECK(bad_dst == 0);
        }
    }
    CHECK(tested > 100);
}

// [SECTION] names, shapes and construction

TEST_CASE("maps: names, by_name, granularities, shapes and map construction") {
    const Problem p = make_problem(2, 2, 4, 6, 2, {6, 5}, {3, 2}, {2, 1}, {1, 0}, {0, 1});
    const std::vector<std::string> known{"im2col",  "col2im", "strided", "pad",
                                         "fliprot", "tnc",    "winograd"};
    // The registry's NCHW maps begin with these (a map added to the registry follows them).
    const std::vector<std::string> names = maps::names();
    REQUIRE(names.size() >= known.size());
    CHECK(std::vector<std::string>(names.begin(), names.begin() + 7) == known);
    const Buf x = iota(prod(src_dims(p)));
    for (const auto& name : known) {
        INFO(name);
        if (name == "winograd") {  // p is strided: refused, naming the rule
            CHECK_THROWS_WITH_AS(maps::by_name(name, p), doctest::Contains("stride 1"), Error);
            continue;
        }
        const IndexMap m = maps::by_name(name, p);
        CHECK(m.name() == name);
    }
    const Problem w3 = convlab::parse_descriptor("mb2ic3ih9iw7oc4kh3kw3ph1pw1");
    const Buf xw = iota(prod(src_dims(w3)));
    CHECK(run(maps::by_name("winograd", w3), xw) == run(maps::winograd_tiles(w3), xw));
    // by_name returns the same maps as the named functions.
    CHECK(run(maps::by_name("im2col", p), x) == run(maps::im2col(p), x));
    CHECK(maps::by_name("pad", p).dst() == maps::pad_for_backward_data(p).dst());
    CHECK(maps::by_name("tnc", p).src() == maps::tnc_src(p).src());
    try {
        maps::by_name("transpose", p);
        FAIL("no Error for an unknown map");
    } catch (const Error& e) {
        const std::string what = e.what();
        CHECK(what.find("transpose") != std::string::npos);
        for (const auto& name : known) CHECK(what.find(name) != std::string::npos);
    }

    for (Granularity g :
         {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole})
        CHECK(convlab::parse_granularity(convlab::granularity_name(g)) == g);
    CHECK(std::string(convlab::granularity_name(Granularity::Line)) == "line");
    CHECK(convlab::parse_granularity("row") == Granularity::Line);
    CHECK(convlab::parse_granularity("column") == Granularity::Line);
    CHECK(convlab::parse_granularity("tile") == Granularity::Tile);
    CHECK_THROWS_AS(convlab::parse_granularity("tiles"), Error);

    const Shape s{{2, 3, 4, 5}, {"n", "c", "h", "w"}};
    CHECK(s.str() == "(n=2,c=3,h=4,w=5)");
    CHECK(s.numel() == 120);
    CHECK(s.rank() == 4);
    Dims c(4);
    dim_t bad = 0;
    for (dim_t i = 0; i < 120; ++i) {
        s.coord_of(i, c);
        bad += c != Dims{i / 60, i / 20 % 3, i / 5 % 4, i % 5};
        bad += s.linear_of(c) != i;
    }
    CHECK(bad == 0);

    // Activation names per dimensionality.
    CHECK(maps::im2col(make_problem(1, 1, 1, 1, 1, {4}, {2})).src().names ==
          std::vector<std::string>{"n", "c", "w"});
    CHECK(maps::im2col(p).src().names == std::vector<std::string>{"n", "c", "h", "w"});
    CHECK(maps::im2col(make_problem(3, 1, 1, 1, 1, {4, 4, 4}, {2, 2, 2})).src().names ==
          std::vector<std::string>{"n", "c", "d", "h", "w"});
    CHECK(maps::flip_rot(p).dst().names == std::vector<std::string>{"c", "k", "kh", "kw"});

    const Shape a{{3}, {"i"}}, b{{3, 2}, {"i", "j"}};
    auto fn = [](const dim_t* cc) { return cc[0]; };
    CHECK_THROWS_AS(IndexMap("x", IndexMap::Kind::Gather, a, Shape{{3, 2}, {"i"}}, fn, 0), Error);
    CHECK_THROWS_AS(IndexMap("x", IndexMap::Kind::Gather, a, b, fn, 2), Error);
    CHECK_THROWS_AS(IndexMap("x", IndexMap::Kind::Gather, a, b, fn, -1), Error);
    const IndexMap g("pick_row", IndexMap::Kind::Gather, a, b, fn, 1);
    CHECK(run(g, {1, 2, 3}) == Buf{1, 1, 2, 2, 3, 3});
    const IndexMap r = g.transposed("sum_rows");
    CHECK(r.kind() == IndexMap::Kind::Reduce);
    CHECK(r.src() == b);
    CHECK(r.dst() == a);
    CHECK(r.domain() == b);
    CHECK(r.codomain() == a);
    CHECK(run(r, {1, 2, 3, 4, 5, 6}) == Buf{3, 7, 11});
    const IndexMap back = r.transposed("again");
    CHECK(back.kind() == IndexMap::Kind::Gather);
    CHECK(run(back, {1, 2, 3}) == run(g, {1, 2, 3}));
}

TEST_CASE("maps: a reduce into an fp16/bf16 tensor accumulates in fp32 (docs/design.md)") {
    // Three sources sum into one destination. In fp32: 2048 + 1 + 1 = 2050, exact in fp16; rounding
    // after every addition instead gives 2048 (2049 is a tie that goes to 2048, twice). bf16: 258
    // against 256.
    const Shape three{{3}, {"i"}}, one{{1}, {"j"}};
    const IndexMap sum(
        "sum", IndexMap::Kind::Reduce, three, one, [](const dim_t*) -> dim_t { return 0; }, 0);
    for (auto [dt, big] : {std::pair{DType::f16, 2048.0f}, std::pair{DType::bf16, 256.0f}}) {
        INFO(std::string(convlab::dtype_name(dt)));
        Tensor src(Dims{3});
        src.f32()[0] = big;
        src.f32()[1] = 1.0f;
        src.f32()[2] = 1.0f;
        Tensor dst(Layout::row_major({1}), dt);
        sum.execute(src, dst);
        CHECK(dst.get(Dims{0}) == big + 2.0f);
    }
}

TEST_CASE("maps: winograd_tiles gathers the 6x6 patch of every 4x4 output tile") {
    using convlab::Problem;
    std::mt19937 rng(66);
    int outputs = 0;
    for (const char* d : {"mb2ic3ih9iw11oc2kh3kw3ph1pw1", "g1mb1ic2ih5iw6oc2kh3kw3ph0pw2",
                          "mb1ic1ih3iw3oc1kh3kw3ph0pw0", "mb1ic2ih8iw8oc3kh3kw3ph3pw0phe1pwe3"}) {
        const Problem p = convlab::parse_descriptor(d);
        const convlab::IndexMap m = convlab::maps::winograd_tiles(p);
        INFO(d);
        REQUIRE(m.dst().dims ==
                std::vector<dim_t>{p.mb, p.ic, (p.out(0) + 3) / 4, (p.out(1) + 3) / 4, 6, 6});
        const convlab::Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
        const convlab::Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
        std::vector<float> tiles(static_cast<std::size_t>(m.dst().numel()));
        m.execute(x.f32(), tiles.data());
        // Every output is the 3x3 correlation of its tile's patch at its place in the tile.
        const convlab::Tensor y = convlab::forward(p, x, w, nullptr, "direct");
        const dim_t th = m.dst().dims[2], tw = m.dst().dims[3];
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t k = 0; k < p.oc; ++k)
                for (dim_t oy = 0; oy < p.out(0); ++oy)
                    for (dim_t ox = 0; ox < p.out(1); ++ox) {
                        double sum = 0;
                        for (dim_t c = 0; c < p.ic; ++c)
                            for (dim_t r = 0; r < 3; ++r)
                                for (dim_t s = 0; s < 3; ++s) {
                                    const dim_t t =
                                        ((((n * p.ic + c) * th + oy / 4) * tw + ox / 4) * 6 +
                                         oy % 4 + r) *
                                            6 +
                                        ox % 4 + s;
                                    sum += double(tiles[static_cast<std::size_t>(t)]) *
                                           w.f32()[((k * p.ic + c) * 3 + r) * 3 + s];
                                }
                        CHECK(sum == y.f32()[((n * p.oc + k) * p.out(0) + oy) * p.out(1) + ox]);
                        ++outputs;
                    }
    }
    CHECK(outputs > 300);
    // Stride 2, a 5x5 kernel, 1-D: refused, naming the rule.
    for (const char* d : {"mb1ic1ih8oc1kh3sh2ph1", "mb1ic1ih8oc1kh5ph2", "mb1ic1iw8oc1kw3pw1"})
        CHECK_THROWS_WITH_AS(convlab::maps::winograd_tiles(convlab::parse_descriptor(d)),
                             doctest::Contains("needs 2-D, kernel 3x3, stride 1"), Error);
}
