// DaVinci formats (engine/include/convlab/davinci.hpp), their layouts and converters:
//  1. layouts against docs/design.md's offsets on every coordinate, padding lanes exactly where
//     the formula says, zero in a Tensor;
//  2. converters: each map against its definition as a composition (pack . NCHW map . unpack)
//     on every element, fast kernels against the generic executor with garbage in the source
//     padding lanes, round trips, padding lanes of every result zero.
// The fractal algorithms are tests/conv/test_davinci_conv.cpp's.
#include <doctest/doctest.h>

#include "davinci_test_util.hpp"

using namespace davinci_test;

// [SECTION] step 1: layouts

TEST_CASE("davinci: NC1HWC0 offsets equal docs/design.md's formula, padding lanes exactly c >= C") {
    dim_t lanes = 0;
    for (dim_t c0 : kC0s)
        for (dim_t N : {1, 2})
            for (dim_t C : {1, 3, 8, 16, 17, 33})
                for (Dims hw : {Dims{1, 1}, Dims{3, 2}, Dims{2, 5}}) {
                    const dim_t H = hw[0], W = hw[1], C1 = cdiv(C, c0);
                    const Layout l = dv::nc1hwc0(N, C, H, W, c0);
                    CHECK(l.name() == "NC1HWC0");
                    const Dims dims{N, C, H, W};
                    lanes += check_layout(
                        l, dv::activation_physical(dims, c0),
                        [&](const Dims& c) {
                            return (((c[0] * C1 + c[1] / c0) * H + c[2]) * W + c[3]) * c0 +
                                   c[1] % c0;
                        },
                        [&](const Dims& p) { return p[1] * c0 + p[4] < C; });
                    CHECK(dv::activation_layout(dims, c0) == l);
                }
    CHECK(lanes > 0);
    CHECK(dv::nc1hwc0(2, 3, 4, 5).str() == "NC1HWC0 (2,1,4,5,16):(320,320,80,16,1)");
    CHECK(dv::nc1hwc0(2, 17, 4, 5, 8).str() == "NC1HWC0 (2,3,4,5,8):(480,160,40,8,1)");
    CHECK(dv::activation_physical(Dims{2, 17, 4, 5}, 8).str() == "(n=2,c1=3,h=4,w=5,c0=8)");
}

TEST_CASE("davinci: NDC1HWC0 (D outside C1) and the 1-D NC1WC0") {
    for (dim_t c0 : kC0s)
        for (dim_t C : {1, 5, 16, 20})
            for (Dims dhw : {Dims{1, 1, 1}, Dims{2, 3, 2}, Dims{3, 1, 4}}) {
                const dim_t N = 2, D = dhw[0], H = dhw[1], W = dhw[2], C1 = cdiv(C, c0);
                const Dims dims{N, C, D, H, W};
                const Layout l = dv::ndc1hwc0(N, C, D, H, W, c0);
                CHECK(l.name() == "NDC1HWC0");
                check_layout(
                    l, dv::activation_physical(dims, c0),
                    [&](const Dims& c) {
                        return ((((c[0] * D + c[2]) * C1 + c[1] / c0) * H + c[3]) * W + c[4]) * c0 +
                               c[1] % c0;
                    },
                    [&](const Dims& p) { return p[2] * c0 + p[5] < C; });
                CHECK(dv::activation_layout(dims, c0) == l);
                // 1-D
                const Dims d1{N, C, W};
                const Layout l1 = dv::activation_layout(d1, c0);
                CHECK(l1.name() == "NC1WC0");
                check_layout(
                    l1, dv::activation_physical(d1, c0),
                    [&](const Dims& c) {
                        return ((c[0] * C1 + c[1] / c0) * W + c[2]) * c0 + c[1] % c0;
                    },
                    [&](const Dims& p) { return p[1] * c0 + p[3] < C; });
            }
    CHECK(dv::ndc1hwc0(1, 20, 2, 3, 4).str() == "NDC1HWC0 (1,2,2,3,4,16):(768,384,192,64,16,1)");
}

TEST_CASE("davinci: FRACTAL_Z over (O, I, H, W) equals docs/design.md's formula") {
    for (dim_t c0 : kC0s)
        for (dim_t O : {1, 5, 16, 17, 40})
            for (dim_t I : {1, 3, 8, 17})
                for (Dims hw : {Dims{1, 1}, Dims{3, 3}, Dims{2, 1}}) {
                    const dim_t H = hw[0], W = hw[1], N1 = cdiv(O, 16);
                    const Dims dims{O, I, H, W};
                    const Layout l = dv::fractal_z(O, I, H, W, c0);
                    CHECK(l.name() == "FRACTAL_Z");
                    const Shape phys = dv::weight_physical(dims, c0);
                    CHECK(phys.dims == Dims{cdiv(I, c0) * H * W, N1, 16, c0});
                    check_layout(
                        l, phys,
                        [&](const Dims& c) {
                            const dim_t o = c[0], i = c[1], h = c[2], w = c[3];
                            return ((((i / c0) * H + h) * W + w) * N1 + o / 16) * 16 * c0 +
                                   (o % 16) * c0 + i % c0;
                        },
                        [&](const Dims& p) {
                            const dim_t c1 = p[0] / (H * W);
                            return p[1] * 16 + p[2] < O && c1 * c0 + p[3] < I;
                        });
                    CHECK(dv::weight_layout(dims, c0) == l);
                    // 1-D: (O, I, W) is FRACTAL_Z with H = 1.
                    const Dims d1{O, I, W};
                    const Layout l1 = dv::weight_layout(d1, c0);
                    const Layout l2 = dv::fractal_z(O, I, 1, W, c0);
                    for_each_coord(d1, [&](const Dims& c) {
                        REQUIRE(l1.offset(c) == l2.offset({c[0], c[1], 0, c[2]}));
                    });
                    CHECK(l1.storage_size() == dv::weight_physical(d1, c0).numel());
                }
    CHECK(dv::fractal_z(20, 3, 3, 3).str() == "FRACTAL_Z (1,3,3,2,16,16):(4608,1536,512,256,16,1)");
    CHECK(dv::weight_physical(Dims{20, 3, 3, 3}, 16).str() == "(c1hw=9,n1=2,n0=16,c0=16)");
}

TEST_CASE("davinci: FRACTAL_Z_3D (D outermost) and FRACTAL_NZ") {
    for (dim_t c0 : kC0s)
        for (dim_t O : {1, 17, 32})
            for (dim_t I : {2, 9, 16})
                for (Dims dhw : {Dims{1, 1, 1}, Dims{2, 2, 3}, Dims{3, 1, 2}}) {
                    const dim_t D = dhw[0], H = dhw[1], W = dhw[2], N1 = cdiv(O, 16),
                                C1 = cdiv(I, c0);
                    const Dims dims{O, I, D, H, W};
                    const Layout l = dv::fractal_z_3d(O, I, D, H, W, c0);
                    CHECK(l.name() == "FRACTAL_Z_3D");
                    const Shape phys = dv::weight_physical(dims, c0);
                    CHECK(phys.dims == Dims{D * C1 * H * W, N1, 16, c0});
                    CHECK(phys.names[0] == "dc1hw");
                    check_layout(
                        l, phys,
                        [&](const Dims& c) {
                            const dim_t o = c[0], i = c[1], d = c[2], h = c[3], w = c[4];
                            const dim_t row = ((d * C1 + i / c0) * H + h) * W + w;
                            return ((row * N1 + o / 16) * 16 + o % 16) * c0 + i % c0;
                        },
                        [&](const Dims& p) {
                            const dim_t c1 = p[0] / (H * W) % C1;
                            return p[1] * 16 + p[2] < O && c1 * c0 + p[3] < I;
                        });
                    CHECK(dv::weight_layout(dims, c0) == l);
                }
    for (dim_t c0 : kC0s)
        for (dim_t M : {1, 15, 16, 33})
            for (dim_t K : {1, 7, 8, 16, 19}) {
                const dim_t M1 = cdiv(M, 16);
                const Layout l = dv::fractal_nz(M, K, c0);
                CHECK(l.name() == "FRACTAL_NZ");
                const Shape phys = dv::fractal_nz_physical(M, K, c0);
                CHECK(phys.dims == Dims{cdiv(K, c0), M1, 16, c0});
                check_layout(
                    l, phys,
                    [&](const Dims& c) {
                        const dim_t m = c[0], k = c[1];
                        return (((k / c0) * M1 + m / 16) * 16 + m % 16) * c0 + k % c0;
                    },
                    [&](const Dims& p) { return p[1] * 16 + p[2] < M && p[0] * c0 + p[3] < K; });
            }
}

TEST_CASE("davinci: C0 per dtype, C0 validation and ranks") {
    CHECK(dv::c0_for(DType::f32) == 8);
    CHECK(dv::c0_for(DType::f16) == 16);
    CHECK(dv::c0_for(DType::bf16) == 16);
    CHECK_THROWS_AS(dv::nc1hwc0(1, 1, 1, 1, 0), Error);
    CHECK_THROWS_AS(dv::fractal_z(1, 1, 1, 1, 65), Error);
    CHECK_THROWS_AS(dv::activation_layout(Dims{1, 2}, 16), Error);
    CHECK_THROWS_AS(dv::weight_physical(Dims{1, 2, 3, 4, 5, 6}, 16), Error);
    // A fp16 tensor in a blocked layout: set/get round trip and padding lanes zero.
    Tensor t(dv::nc1hwc0(2, 3, 2, 2, 16), DType::f16);
    for_each_coord(t.dims(), [&](const Dims& c) { t.set(c, 1.5f); });
    dim_t ones = 0;
    for (dim_t i = 0; i < t.layout().storage_size(); ++i) ones += t.get_offset(i) == 1.5f;
    CHECK(ones == t.numel());
    CHECK(prod(t.dims()) * 16 / 3 == t.layout().storage_size());
}

TEST_CASE("davinci: pack/unpack equal the layouts, round trips, padding lanes zero, kernels") {
    std::mt19937 rng(11);
    for (int it = 0; it < 60; ++it) {
        const Dims dims = random_dims(rng);
        const dim_t c0 = random_c0(rng);
        for (bool weights : {false, true}) {
            INFO((weights ? "weights " : "activations ") << text(dims) << " c0 " << c0);
            const Layout l =
                weights ? dv::weight_layout(dims, c0) : dv::activation_layout(dims, c0);
            const IndexMap pack =
                weights ? dv::pack_weight(dims, c0) : dv::pack_activation(dims, c0);
            const IndexMap unpack =
                weights ? dv::unpack_weight(dims, c0) : dv::unpack_activation(dims, c0);
            CHECK(pack.dst().numel() == l.storage_size());
            CHECK(pack.dst() ==
                  (weights ? dv::weight_physical(dims, c0) : dv::activation_physical(dims, c0)));
            const Buf x = random_buf(prod(dims), rng);
            const Buf y = run(pack, x);
            // The pack is the layout: y[offset(c)] == x[c] for every logical c.
            dim_t bad = 0, lin = 0;
            for_each_coord(dims, [&](const Dims& c) { bad += y[l.offset(c)] != x[lin++]; });
            CHECK(bad == 0);
            CHECK(nonzero_padding(y, l) == 0);
            // The pack's function is the exact inverse of Layout::offset.
            for_each_coord(dims, [&](const Dims& c) {
                const dim_t off = l.offset(c);
                REQUIRE(pack.map(off) == Shape{dims, pack.src().names}.linear_of(c));
            });
            check_equal_bufs(run(unpack, y), x, "unpack(pack(x)) == x");
            Buf dirty = y;
            dirty_padding(dirty, l);
            check_equal_bufs(run(unpack, dirty), x, "unpack ignores padding lanes");
            check_equal_bufs(run(pack, run(unpack, dirty)), y,
                             "pack(unpack(y)) == y, lanes zeroed");
            // Fast kernels.
            Buf k(y.size(), -5.0f), u(x.size(), -5.0f);
            if (weights) {
                dv::pack_weight_kernel(dims, c0, x.data(), k.data());
                dv::unpack_weight_kernel(dims, c0, dirty.data(), u.data());
            } else {
                dv::pack_activation_kernel(dims, c0, x.data(), k.data());
                dv::unpack_activation_kernel(dims, c0, dirty.data(), u.data());
            }
            check_equal_bufs(k, y, "pack kernel == generic");
            check_equal_bufs(u, x, "unpack kernel == generic");
        }
    }
}

TEST_CASE("davinci: pack/unpack kernels on a channel slice (one group of a wider tensor)") {
    std::mt19937 rng(12);
    for (int it = 0; it < 30; ++it) {
        Dims dims = random_dims(rng, 4);
        const dim_t c0 = random_c0(rng), extra_lo = dims[1] % 3, extra_hi = 2;
        Dims wide = dims;
        wide[1] = dims[1] + extra_lo + extra_hi;
        const Buf xw = random_buf(prod(wide), rng);
        // The slice, cut out by hand.
        Buf xs;
        const dim_t sp = prod(Dims(dims.begin() + 2, dims.end()));
        for (dim_t n = 0; n < dims[0]; ++n)
            for (dim_t c = 0; c < dims[1]; ++c)
                for (dim_t s = 0; s < sp; ++s)
                    xs.push_back(xw[((n * wide[1] + extra_lo + c) * sp + s)]);
        const IndexMap pack = dv::pack_activation(dims, c0);
        const Buf want = run(pack, xs);
        Buf got(want.size(), -1.0f);
        dv::pack_activation_kernel(dims, c0, xw.data(), got.data(), wide[1], extra_lo);
        check_equal_bufs(got, want, "pack of a slice");
        Buf back = xw;
        dv::unpack_activation_kernel(dims, c0, got.data(), back.data(), wide[1], extra_lo);
        check_equal_bufs(back, xw, "unpack into the slice writes it and nothing else");
    }
}

TEST_CASE("davinci: tnc5d equals pack . tnc . unpack on every element, kernel equal") {
    std::mt19937 rng(13);
    for (int it = 0; it < 60; ++it) {
        const Dims dims = random_dims(rng, 40);
        const dim_t c0 = random_c0(rng);
        INFO(text(dims) << " c0 " << c0);
        const IndexMap m = dv::tnc5d(dims, c0);
        const IndexMap def = convlab::compose(
            dv::pack_activation(swap01(dims), c0),
            convlab::compose(maps::tnc(dims, dv::unpack_activation(dims, c0).dst().names),
                             dv::unpack_activation(dims, c0), "u"),
            "tnc5d_def");
        check_same_map(m, def);
        CHECK(m.dst().dims[dims.size() == 5 ? 2 : 1] == cdiv(dims[0], c0));  // batch padded to C0
        Buf x = run(dv::pack_activation(dims, c0), random_buf(prod(dims), rng));
        dirty_padding(x, dv::activation_layout(dims, c0));
        const Buf y = run(m, x);
        CHECK(nonzero_padding(y, dv::activation_layout(swap01(dims), c0)) == 0);
        Buf k(y.size(), -1.0f);
        dv::tnc5d_kernel(dims, c0, x.data(), k.data());
        check_equal_bufs(k, y, "tnc5d kernel");
    }
    // docs/design.md's classic form: NC1HWC0 (N=20, C=3, 2, 2) -> (C, N/16 = 2, H, W, 16).
    // Its dims named by what they hold: channels outside, the batch blocked.
    CHECK(dv::tnc5d({20, 3, 2, 2}).dst().str() == "(c=3,n1=2,h=2,w=2,n0=16)");
    CHECK(dv::tnc5d({20, 3, 2, 2, 2}).dst().str() == "(c=3,d=2,n1=2,h=2,w=2,n0=16)");
    CHECK(dv::tnc5d({20, 3, 2}).dst().str() == "(c=3,n1=2,w=2,n0=16)");
}

TEST_CASE("davinci: tncf equals pack_weight . tnc . unpack on every element, kernel equal") {
    std::mt19937 rng(14);
    for (int it = 0; it < 60; ++it) {
        const Dims dims = random_dims(rng, 40);  // (A, B, spatial...): e.g. dY (N, K, out...)
        const dim_t c0 = random_c0(rng);
        INFO(text(dims) << " c0 " << c0);
        const IndexMap m = dv::tncf(dims, c0);
        const IndexMap u = dv::unpack_activation(dims, c0);
        const IndexMap def =
            convlab::compose(dv::pack_weight(swap01(dims), c0),
                             convlab::compose(maps::tnc(dims, u.dst().names), u, "u"), "tncf_def");
        check_same_map(m, def);
        Buf x = run(dv::pack_activation(dims, c0), random_buf(prod(dims), rng));
        dirty_padding(x, dv::activation_layout(dims, c0));
        const Buf y = run(m, x);
        CHECK(nonzero_padding(y, dv::weight_layout(swap01(dims), c0)) == 0);
        Buf k(y.size(), -1.0f);
        dv::tncf_kernel(dims, c0, x.data(), k.data());
        check_equal_bufs(k, y, "tncf kernel");
        // The documented offset formula (2-D): src[(((a*B1 + b/C0)*H + h)*W + w)*C0 + b%C0].
        if (dims.size() == 4) {
            const dim_t A = dims[0], B = dims[1], H = dims[2], W = dims[3], B1 = cdiv(B, c0),
                        A1 = cdiv(A, c0);
            dim_t bad = 0;
            for_each_coord(m.dst().dims, [&](const Dims& pc) {
                const dim_t w = pc[0] % W, h = pc[0] / W % H, a1 = pc[0] / (W * H);
                const dim_t b = pc[1] * 16 + pc[2], a = a1 * c0 + pc[3];
                const dim_t want = b < B && a < A
                                       ? (((a * B1 + b / c0) * H + h) * W + w) * c0 + b % c0
                                       : IndexMap::kZero;
                bad += m.map_coord(pc.data()) != want;
                (void)A1;
            });
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("davinci: fliprot_fz (direct formula) equals unpack . flip_rot . pack on every element") {
    std::mt19937 rng(15);
    int classic = 0;
    for (int it = 0; it < 80; ++it) {
        const Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = it % 4 == 0 ? 16 : random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const IndexMap m = dv::fliprot_fz(p, c0);
        check_same_map(m, dv::fliprot_fz_composed(p, c0));
        Buf w = run(dv::pack_weight(p.wei_dims(), c0), random_buf(prod(p.wei_dims()), rng));
        dirty_padding(w, dv::weight_layout(p.wei_dims(), c0));
        const Buf y = run(m, w);
        Dims fd{p.ic, p.ocg()};
        for (int i = 0; i < p.ndims; ++i) fd.push_back(p.kernel[i]);
        CHECK(nonzero_padding(y, dv::weight_layout(fd, c0)) == 0);
        Buf k(y.size(), -1.0f);
        dv::fliprot_fz_kernel(p, c0, w.data(), k.data());
        check_equal_bufs(k, y, "fliprot_fz kernel");
        // The classic form: swap the block indices, reverse the flattened kernel index,
        // transpose every fractal; holds for C0 = 16, one group, 1-D/2-D.
        if (c0 == 16 && p.groups == 1 && p.ndims <= 2) {
            ++classic;
            const dim_t S = p.kernel_spatial();
            dim_t bad = 0;
            for_each_coord(m.dst().dims, [&](const Dims& pc) {
                const dim_t kc1 = pc[0] / S, s = pc[0] % S, nb = pc[1], ni = pc[2], ci = pc[3];
                if (nb * 16 + ni >= p.ic || kc1 * 16 + ci >= p.oc) return;
                const dim_t want =
                    (((nb * S + S - 1 - s) * m.src().dims[1] + kc1) * 16 + ci) * 16 + ni;
                bad += m.map_coord(pc.data()) != want;
            });
            CHECK(bad == 0);
        }
    }
    CHECK(classic > 5);
    // With C0 = 8 the classic block swap is wrong: C = 16, K = 16, 1x1 kernel.
    Problem p;
    p.ic = 16;
    p.oc = 16;
    const IndexMap m = dv::fliprot_fz(p, 8);
    // dst (row kc1 = 1, nb = 0, ni = 0, ci = 0): c = 0, k = 8 -> src (row c1 = 0, n1 = 0, 8, 0).
    CHECK(m.map_coord(Dims{1, 0, 0, 0}.data()) ==
          dv::WeiGeom::of(p.wei_dims(), 8).offset(0, 0, 8, 0));
}

TEST_CASE("davinci: strided5d and pad5d equal pack . (strided | pad) . unpack, kernels equal") {
    std::mt19937 rng(16);
    for (int it = 0; it < 60; ++it) {
        const Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const Dims ydims = p.dst_dims();
        const IndexMap m = dv::strided5d(p, c0);
        const IndexMap s = maps::strided(p);
        check_same_map(m,
                       convlab::compose(dv::pack_activation(s.dst().dims, c0),
                                        convlab::compose(s, dv::unpack_activation(ydims, c0), "u"),
                                        "strided5d_def"));
        Buf y = run(dv::pack_activation(ydims, c0), random_buf(prod(ydims), rng));
        dirty_padding(y, dv::activation_layout(ydims, c0));
        const Buf z = run(m, y);
        CHECK(nonzero_padding(z, dv::activation_layout(s.dst().dims, c0)) == 0);
        Buf k(z.size(), -1.0f);
        dv::strided5d_kernel(p, c0, y.data(), k.data());
        check_equal_bufs(k, z, "strided5d kernel");
        // pad5d with the backward-data pads (negative ones crop), and random pads.
        for (int r = 0; r < 2; ++r) {
            const Dims zd = s.dst().dims;
            std::vector<dim_t> pb, pe;
            for (int i = 0; i < p.ndims; ++i) {
                const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
                pb.push_back(r ? dim_t(rng() % 5) - 2 : span - p.pad_begin[i]);
                pe.push_back(r ? dim_t(rng() % 5) - 2 : span - p.pad_end[i] + p.leftover(i));
                if (zd[2 + i] + pb.back() + pe.back() < 1) pe.back() = 1 - zd[2 + i] - pb.back();
            }
            const IndexMap pm = dv::pad5d(zd, pb, pe, c0);
            const IndexMap pl = maps::pad(zd, pb, pe);
            check_same_map(
                pm, convlab::compose(dv::pack_activation(pl.dst().dims, c0),
                                     convlab::compose(pl, dv::unpack_activation(zd, c0), "u"),
                                     "pad5d_def"));
            Buf zz = z;
            dirty_padding(zz, dv::activation_layout(zd, c0));
            const Buf q = run(pm, zz);
            CHECK(nonzero_padding(q, dv::activation_layout(pl.dst().dims, c0)) == 0);
            Buf kq(q.size(), -1.0f);
            dv::pad5d_kernel(zd, pb, pe, c0, zz.data(), kq.data());
            check_equal_bufs(kq, q, "pad5d kernel");
        }
    }
}

TEST_CASE("davinci: im2col_fractal equals im2col rearranged into fractals, kernel equal") {
    std::mt19937 rng(17);
    for (int it = 0; it < 60; ++it) {
        Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        // One group's problem (im2col_fractal works per group).
        Problem q = p;
        q.ic = p.icg();
        q.oc = p.ocg();
        q.groups = 1;
        const IndexMap m = dv::im2col_fractal(p, c0);
        CHECK(m.src().dims == dv::activation_physical(q.src_dims(), c0).dims);
        const IndexMap ref = maps::im2col(q);  // (n, g = 0, row = (c, taps), col = m)
        const Layout l = dv::activation_layout(q.src_dims(), c0);
        const dim_t S = p.kernel_spatial(), M = p.out_spatial(), C1 = cdiv(q.ic, c0);
        const dim_t KHW = S / (p.ndims == 3 ? p.kernel[0] : 1);
        dim_t bad = 0;
        Dims sc(static_cast<std::size_t>(ref.src().rank()));
        for_each_coord(m.dst().dims, [&](const Dims& pc) {
            const dim_t r = pc[1], mm = pc[2] * 16 + pc[3], ci = pc[4];
            const dim_t hw = r % KHW, c1 = r / KHW % C1, dd = r / KHW / C1;
            const dim_t c = c1 * c0 + ci, tap = dd * KHW + hw;
            dim_t want = IndexMap::kZero;
            if (mm < M && c < q.ic) {
                const dim_t s = ref.map(((pc[0] * 1 + 0) * q.ic * S + c * S + tap) * M + mm);
                if (s >= 0) {
                    ref.src().coord_of(s, sc);
                    want = l.offset(sc);
                }
            }
            bad += m.map_coord(pc.data()) != want;
        });
        CHECK(bad == 0);
        Buf x = run(dv::pack_activation(q.src_dims(), c0), random_buf(prod(q.src_dims()), rng));
        dirty_padding(x, l);
        const Buf a = run(m, x);
        const dim_t per = m.dst().numel() / p.mb;
        for (dim_t n = 0; n < p.mb; ++n) {
            Buf k(static_cast<std::size_t>(per), -1.0f);
            dv::im2col_fractal_kernel(p, c0, x.data(), n, k.data());
            check_equal_bufs(k, Buf(a.begin() + n * per, a.begin() + (n + 1) * per),
                             "im2col_fractal kernel");
        }
    }
}

TEST_CASE("davinci: FRACTAL_NZ is printable, enumerable and usable by the generic executor") {
    std::mt19937 rng(18);
    for (dim_t c0 : kC0s)
        for (dim_t M : {1, 15, 16, 33})
            for (dim_t K : {1, 7, 8, 19}) {
                INFO("M " << M << " K " << K << " c0 " << c0);
                const dim_t M1 = cdiv(M, 16), K1 = cdiv(K, c0);
                const Layout l = dv::fractal_nz(M, K, c0);
                // Printable: name, physical shape and strides.
                CHECK(l.str() == "FRACTAL_NZ (" + std::to_string(K1) + "," + std::to_string(M1) +
                                     ",16," + std::to_string(c0) + "):(" +
                                     std::to_string(M1 * 16 * c0) + "," + std::to_string(16 * c0) +
                                     "," + std::to_string(c0) + ",1)");
                const Shape logical{{M, K}, {"m", "k"}};
                const Shape phys = dv::fractal_nz_physical(M, K, c0);
                const IndexMap pack = dv::blocked_pack(l, logical, phys, "fractal_nz");
                const IndexMap unpack = dv::blocked_unpack(l, logical, phys, "unpack_fractal_nz");
                // Generic executor on buffers: the value of (m, k) lands at offset(m, k), every
                // other lane is a zero; unpack reads it back, ignoring dirty lanes.
                const Buf x = random_buf(M * K, rng);
                const Buf y = run(pack, x);
                dim_t bad = 0;
                for_each_coord({M, K},
                               [&](const Dims& c) { bad += y[l.offset(c)] != x[c[0] * K + c[1]]; });
                CHECK(bad == 0);
                CHECK(nonzero_padding(y, l) == 0);
                Buf dirty = y;
                dirty_padding(dirty, l);
                check_equal_bufs(run(unpack, dirty), x, "unpack(pack(x))");
                // Enumerable: the steps of every granularity write each destination exactly
                // once, with the pair the map gives.
                for (auto g : {convlab::Granularity::Element, convlab::Granularity::Line,
                               convlab::Granularity::Tile, convlab::Granularity::Whole}) {
                    std::vector<int> seen(static_cast<std::size_t>(phys.numel()), 0);
                    dim_t wrong = 0;
                    for (dim_t st = 0; st < pack.num_steps(g); ++st)
                        pack.for_each_in_step(g, st, [&](dim_t src, dim_t dst) {
                            ++seen[static_cast<std::size_t>(dst)];
                            wrong += pack.map(dst) != src;
                        });
                    CHECK(wrong == 0);
                    CHECK(std::count(seen.begin(), seen.end(), 1) == phys.numel());
                }
                CHECK(pack.num_steps(convlab::Granularity::Line) == phys.numel() / c0);
                // Generic executor on tensors: a row-major matrix into a FRACTAL_NZ tensor (fp32
                // and fp16), and back; storage lanes outside the matrix stay zero.
                Tensor a({M, K});
                std::copy(x.begin(), x.end(), a.f32());
                const IndexMap identity(
                    "identity", IndexMap::Kind::Gather, logical, logical,
                    [K](const dim_t* c) { return c[0] * K + c[1]; }, 1);
                for (DType dt : {DType::f32, DType::f16}) {
                    Tensor nz(l, dt);
                    identity.execute(a, nz);
                    dim_t lanes_bad = 0;
                    for (dim_t o = 0; o < l.storage_size(); ++o)
                        lanes_bad += nz.get_offset(o) != y[static_cast<std::size_t>(o)];
                    CHECK(lanes_bad == 0);
                    Tensor back({M, K});
                    identity.execute(nz, back);
                    convlab::test::check_equal(back, a, "FRACTAL_NZ tensor round trip");
                }
            }
}

TEST_CASE("davinci: the fractal column matrix of an image is the FRACTAL_NZ of im2col's matrix") {
    // im2col_fractal writes A (M = out positions, K = R*C0 columns (r, ci)) per image; it must be
    // exactly the FRACTAL_NZ packing of that dense matrix.
    std::mt19937 rng(19);
    for (int it = 0; it < 25; ++it) {
        Problem p = convlab::test::random_problem(rng);
        p.groups = 1;
        p.ic = 1 + dim_t(rng() % 20);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const Buf x =
            run(dv::pack_activation(p.src_dims(), c0), random_buf(prod(p.src_dims()), rng));
        const IndexMap m = dv::im2col_fractal(p, c0);
        const Buf a = run(m, x);
        const dim_t R = m.dst().dims[1], M = p.out_spatial(), K = R * c0;
        const dim_t per = m.dst().numel() / p.mb;
        for (dim_t n = 0; n < p.mb; ++n) {
            // Dense (M, K) from the fractals through the map's own function.
            Buf dense(static_cast<std::size_t>(M * K));
            for (dim_t mm = 0; mm < M; ++mm)
                for (dim_t k = 0; k < K; ++k) {
                    const Dims pc{n, k / c0, mm / 16, mm % 16, k % c0};
                    const dim_t s = m.map_coord(pc.data());
                    dense[static_cast<std::size_t>(mm * K + k)] =
                        s < 0 ? 0.0f : x[static_cast<std::size_t>(s)];
                }
            const Layout l = dv::fractal_nz(M, K, c0);
            const Buf nz = run(dv::blocked_pack(l, Shape{{M, K}, {"m", "k"}},
                                                dv::fractal_nz_physical(M, K, c0), "nz"),
                               dense);
            check_equal_bufs(Buf(a.begin() + n * per, a.begin() + (n + 1) * per), nz,
                             "image " + std::to_string(n));
        }
    }
}

TEST_CASE("davinci: kernel slices: im2col_fractal by M-block range, tncf into one group's rows") {
    std::mt19937 rng(20);
    for (int it = 0; it < 40; ++it) {
        Problem p = convlab::test::random_problem(rng);
        p.groups = 1;
        p.ic = 1 + dim_t(rng() % 20);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        Buf x = run(dv::pack_activation(p.src_dims(), c0), random_buf(prod(p.src_dims()), rng));
        dirty_padding(x, dv::activation_layout(p.src_dims(), c0));
        const IndexMap m = dv::im2col_fractal(p, c0);
        const Buf a = run(m, x);
        const dim_t R = m.dst().dims[1], M1 = m.dst().dims[2], frac = 16 * c0;
        for (dim_t n = 0; n < p.mb; ++n) {
            const dim_t b = dim_t(rng() % M1), e = b + 1 + dim_t(rng() % (M1 - b));
            Buf k(static_cast<std::size_t>(R * (e - b) * frac), -3.0f);
            dv::im2col_fractal_kernel(p, c0, x.data(), n, k.data(), b, e);
            dim_t bad = 0;
            for (dim_t r = 0; r < R; ++r)
                for (dim_t mb = b; mb < e; ++mb)
                    for (dim_t i = 0; i < frac; ++i)
                        bad += k[static_cast<std::size_t>((r * (e - b) + mb - b) * frac + i)] !=
                               a[static_cast<std::size_t>(((n * R + r) * M1 + mb) * frac + i)];
            CHECK(bad == 0);
        }
    }
    // tncf_kernel with dst_b: the rows [b_begin, b_begin + B) of a FRACTAL_Z of (dst_b, A, ...)
    // equal the generic tncf's, every other element is left untouched.
    for (int it = 0; it < 40; ++it) {
        const Dims dims = random_dims(rng, 20);  // (A, B, spatial...)
        const dim_t c0 = random_c0(rng), B = dims[1];
        const dim_t groups = 1 + dim_t(rng() % 3), g = dim_t(rng() % groups);
        const dim_t dst_b = B * groups, b_begin = g * B;
        INFO(text(dims) << " c0 " << c0 << " group " << g << " of " << groups);
        Buf x = run(dv::pack_activation(dims, c0), random_buf(prod(dims), rng));
        dirty_padding(x, dv::activation_layout(dims, c0));
        const Buf part = run(dv::tncf(dims, c0), x);  // FRACTAL_Z of (B, A, spatial...)
        Dims full = swap01(dims);
        full[0] = dst_b;
        const dv::WeiGeom fg = dv::WeiGeom::of(full, c0), pg = dv::WeiGeom::of(swap01(dims), c0);
        Buf k(static_cast<std::size_t>(fg.size()), -4.0f);
        dv::tncf_kernel(dims, c0, x.data(), k.data(), dst_b, b_begin);
        dim_t bad = 0, untouched = 0;
        for (dim_t r = 0; r < fg.rows(); ++r)
            for (dim_t o = 0; o < fg.n1 * 16; ++o)
                for (dim_t ci = 0; ci < c0; ++ci) {
                    const float got = k[static_cast<std::size_t>(fg.offset(r, o / 16, o % 16, ci))];
                    if (o >= b_begin && o < b_begin + B) {
                        const dim_t ob = o - b_begin;
                        bad += got !=
                               part[static_cast<std::size_t>(pg.offset(r, ob / 16, ob % 16, ci))];
                    } else {
                        untouched += got == -4.0f;
                    }
                }
        CHECK(bad == 0);
        CHECK(untouched == fg.rows() * (fg.n1 * 16 - B) * c0);
    }
}

TEST_CASE(
    "davinci: by_name pad5d and strided5d are the NCHW backward-data maps in NC1HWC0 (with r)") {
    // What the app and `convlab map --map pad5d` show must be the pad the algorithm runs:
    // pack . maps::pad_for_backward_data . unpack (begin (k-1)d - pb, end (k-1)d - pe + r).
    std::mt19937 rng(21);
    int with_r = 0;
    for (int it = 0; it < 60; ++it) {
        const Problem p = convlab::test::random_problem(rng);
        const dim_t c0 = random_c0(rng);
        INFO(convlab::to_descriptor(p) << " c0 " << c0);
        const IndexMap s = maps::strided(p), pad = maps::pad_for_backward_data(p);
        check_same_map(
            dv::by_name("strided5d", p, c0),
            convlab::compose(dv::pack_activation(s.dst().dims, c0),
                             convlab::compose(s, dv::unpack_activation(p.dst_dims(), c0), "u"),
                             "strided5d_def"));
        check_same_map(
            dv::by_name("pad5d", p, c0),
            convlab::compose(dv::pack_activation(pad.dst().dims, c0),
                             convlab::compose(pad, dv::unpack_activation(s.dst().dims, c0), "u"),
                             "pad5d_def"));
        const dv::BackwardDataPads b = dv::backward_data_pads(p);
        CHECK(b.zdims == s.dst().dims);
        for (int i = 0; i < p.ndims; ++i) with_r += p.leftover(i) > 0;
    }
    CHECK(with_r > 10);
}

TEST_CASE("davinci: by_name gives every listed map and refuses unknown or mismatched names") {
    const Problem p2 = convlab::parse_descriptor("mb2ic5ih6oc20oh3kh3sh2ph1");
    const Problem p3 = convlab::parse_descriptor("mb1ic3id4ih4oc4od2kd3kh3");
    for (const auto& n : dv::map_names()) {
        const Problem& p = n == "fractal_z_3d" ? p3 : p2;
        const IndexMap m = dv::by_name(n, p, 8);
        CHECK(m.dst().numel() > 0);
        CHECK(!m.dump(4).empty());
    }
    CHECK(dv::by_name("nc1hwc0", p3).name() == "ndc1hwc0");
    CHECK(dv::by_name("fractal_z", p2).name() == "fractal_z");
    CHECK(dv::by_name("fractal_z_3d", p3).name() == "fractal_z_3d");
    CHECK_THROWS_AS(dv::by_name("fractal_z", p3), Error);
    CHECK_THROWS_AS(dv::by_name("fractal_z_3d", p2), Error);
    CHECK_THROWS_AS(dv::by_name("nope", p2), Error);
    CHECK_THROWS_AS(dv::by_name("tnc5d", p2, 0), Error);
    // A dump names the physical coordinates.
    const std::string d = dv::by_name("nc1hwc0", p2).dump(1);
    CHECK(d.find("dst(n=0,c1=0,h=0,w=0,c0=0) <- src(n=0,c=0,h=0,w=0)") != std::string::npos);
}
