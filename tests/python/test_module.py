"""The convlab module: problems, algorithm lists, index maps against `convlab map` (json pairs and
the .npy index), the DaVinci packers against their layouts written in numpy, zero-copy use of
arrays, and ValueError on every bad input.

Usage: test_module.py [CONVLAB_BINARY]   (without the binary the command-line checks are skipped)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import convlab

CLI = sys.argv[1] if len(sys.argv) > 1 else None


def cli_json(name, desc, c0=None):
    args = [CLI, "map", "--map", name, "--problem", desc, "--format", "json"]
    if c0 is not None:
        args += ["--c0", str(c0)]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


class ProblemTest(unittest.TestCase):
    def test_fields(self):
        p = convlab.Problem("mb1ic2ih3oc1kh2")
        self.assertEqual((p.ndims, p.mb, p.ic, p.oc, p.g), (2, 1, 2, 1, 1))
        self.assertEqual((p.ih, p.iw, p.kh, p.kw, p.oh, p.ow), (3, 3, 2, 2, 2, 2))
        self.assertEqual((p.id, p.kd, p.od, p.sd, p.pd, p.dd), (1, 1, 1, 1, 0, 0))
        self.assertEqual(p.src_shape, (1, 2, 3, 3))
        self.assertEqual(p.wei_shape, (1, 2, 2, 2))
        self.assertEqual(p.dst_shape, (1, 1, 2, 2))
        self.assertEqual(p, convlab.Problem(p.descriptor))

        q = convlab.Problem("g2mb2ic4id5ih6iw7oc6kd3kh3kw2sd2sh1sw3pd1ph0pw2dd0dh1dw0pwe1")
        self.assertEqual(q.ndims, 3)
        self.assertEqual(q.groups, 2)
        self.assertEqual(q.input, (5, 6, 7))
        self.assertEqual(q.kernel, (3, 3, 2))
        self.assertEqual(q.stride, (2, 1, 3))
        self.assertEqual(q.dilation, (1, 2, 1))
        self.assertEqual((q.dd, q.dh, q.dw), (0, 1, 0))  # benchdnn's 0-based dilation
        self.assertEqual(q.pad_begin, (1, 0, 2))
        self.assertEqual((q.pde, q.phe, q.pwe), (q.pad_end[0], q.pad_end[1], 1))
        # out = (in + pb + pe - ((k - 1) d + 1)) // s + 1 per axis
        want = tuple((i + pb + pe - ((k - 1) * d + 1)) // s + 1
                     for i, pb, pe, k, d, s in zip(q.input, q.pad_begin, q.pad_end, q.kernel,
                                                   q.dilation, q.stride))
        self.assertEqual(q.output, want)
        self.assertEqual(q.dst_shape, (2, 6) + want)
        self.assertEqual(q.wei_shape, (6, 2, 3, 3, 2))

        r = convlab.Problem("mb1ic3iw9oc2kw3sw2")
        self.assertEqual((r.ndims, r.ih, r.kh, r.oh, r.iw, r.ow), (1, 1, 1, 1, 9, 4))
        self.assertEqual(r.src_shape, (1, 3, 9))
        self.assertTrue(repr(r).startswith("convlab.Problem('mb1ic3iw9oc2"), repr(r))
        self.assertEqual(eval(repr(r), {"convlab": convlab}), r)

    def test_bad_descriptors(self):
        for desc, needle in [("mb1ic2ih3oc1kh9", "kernel"), ("mb0ic2ih3oc1kh2", "mb"),
                             ("g3mb1ic4ih3oc3kh1", "groups"), ("mb1ic2ih3oc1kh2sh0", "sh must be >= 1"),
                             ("nonsense", "")]:
            with self.assertRaises(ValueError, msg=desc) as e:
                convlab.Problem(desc)
            self.assertIn(needle, str(e.exception))


class AlgosTest(unittest.TestCase):
    def test_lists(self):
        every = convlab.algos()
        self.assertEqual(sorted(every), ["bwd_bias", "bwd_data", "bwd_weight", "fwd"])
        fwd = convlab.algos("fwd")
        self.assertEqual(fwd, every["fwd"])
        for name in ("direct", "im2col_gemm", "auto", "winograd"):
            self.assertIn(name, fwd)
        self.assertIn("col2im", convlab.algos("bwd_data"))
        # winograd computes 3x3 stride-1 2-D problems only.
        self.assertIn("winograd", convlab.algos("fwd", convlab.Problem("mb1ic2ih6oc2kh3")))
        self.assertNotIn("winograd", convlab.algos("fwd", convlab.Problem("mb1ic2ih6oc2kh2")))
        with self.assertRaises(ValueError) as e:
            convlab.algos("sideways")
        self.assertIn("expected fwd, bwd_data, bwd_weight or bwd_bias", str(e.exception))


class PassesTest(unittest.TestCase):
    def setUp(self):
        self.p = convlab.Problem("g2mb2ic4ih5iw6oc2kh3kw2sh2ph1")
        rng = np.random.default_rng(1)
        self.x = rng.integers(-3, 4, self.p.src_shape).astype(np.float32)
        self.w = rng.integers(-3, 4, self.p.wei_shape).astype(np.float32)
        self.dy = rng.integers(-3, 4, self.p.dst_shape).astype(np.float32)

    def test_algorithms_agree_exactly_on_integers(self):
        # Small integers: sums are exact in fp32, so every exact algorithm gives direct's bits.
        ref = convlab.forward(self.p, self.x, self.w, algo="direct")
        self.assertEqual(ref.shape, self.p.dst_shape)
        self.assertGreater(np.abs(ref).sum(), 0)
        for algo in convlab.algos("fwd", self.p):
            np.testing.assert_array_equal(convlab.forward(self.p, self.x, self.w, algo=algo), ref,
                                          err_msg=algo)
        ref = convlab.backward_data(self.p, self.dy, self.w, algo="direct")
        for algo in convlab.algos("bwd_data", self.p):
            np.testing.assert_array_equal(convlab.backward_data(self.p, self.dy, self.w, algo=algo),
                                          ref, err_msg=algo)
        ref = convlab.backward_weight(self.p, self.x, self.dy, algo="direct")
        for algo in convlab.algos("bwd_weight", self.p):
            np.testing.assert_array_equal(
                convlab.backward_weight(self.p, self.x, self.dy, algo=algo), ref, err_msg=algo)

    def test_out_is_written_in_place_and_strided_inputs_are_read(self):
        out = np.full(self.p.dst_shape, np.nan, dtype=np.float32)
        r = convlab.forward(self.p, self.x, self.w, algo="direct", out=out)
        self.assertTrue(np.shares_memory(r, out))
        np.testing.assert_array_equal(out, convlab.forward(self.p, self.x, self.w, algo="direct"))
        # A transposed view (not C-contiguous) gives the same result as its contiguous copy.
        xt = np.ascontiguousarray(self.x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
        self.assertFalse(xt.flags.c_contiguous)
        np.testing.assert_array_equal(convlab.forward(self.p, xt, self.w), out)
        b = np.arange(self.p.oc, dtype=np.float32)
        np.testing.assert_array_equal(convlab.forward(self.p, self.x, self.w, b),
                                      out + b.reshape(1, -1, 1, 1))
        db = convlab.backward_bias(self.p, self.dy)
        np.testing.assert_array_equal(db, self.dy.sum(axis=(0, 2, 3)))

    def test_bad_arrays_raise_value_error_naming_the_argument(self):
        p, x, w, dy = self.p, self.x, self.w, self.dy
        shared = np.zeros(x.size, np.float32)
        cases = [
            (lambda: convlab.forward(p, x.astype(np.float64), w),
             "src: dtype float64, expected float32"),
            (lambda: convlab.forward(p, x, w[:, :, :2]),
             "wei: shape (2, 2, 2, 2), the problem needs (2, 2, 3, 2) (K, C/G, kernel...)"),
            (lambda: convlab.forward(p, x[0], w), "src: shape (4, 5, 6), the problem needs"),
            (lambda: convlab.forward(p, x, w, np.zeros(3, np.float32)), "bias: shape (3,)"),
            (lambda: convlab.backward_data(p, dy.astype(np.float16), w), "diff_dst: dtype float16"),
            (lambda: convlab.backward_weight(p, x, dy[:1]), "diff_dst: shape (1, 2, 3, 5)"),
            (lambda: convlab.forward(p, x, w, algo="fastest"), "fastest"),
            (lambda: convlab.forward(convlab.Problem("mb1ic2ih6oc2kh2"),
                                     np.zeros((1, 2, 6, 6), np.float32),
                                     np.zeros((2, 2, 2, 2), np.float32), algo="winograd"),
             "does not apply"),
            (lambda: convlab.forward(p, x, w, out=np.zeros(p.dst_shape, np.float64)),
             "out: dtype float64"),
            (lambda: convlab.forward(p, x, w, out=np.zeros((1, 2), np.float32)), "out: shape"),
            (lambda: convlab.forward(p, x, w, out=x), "out: shape"),
            (lambda: convlab.forward(p, shared[: x.size].reshape(p.src_shape), w,
                                     out=shared[: dy.size].reshape(p.dst_shape)),
             "out: shares memory with src"),
        ]
        for i, (call, needle) in enumerate(cases):
            with self.assertRaises(ValueError, msg="case %d" % i) as e:
                call()
            self.assertIn(needle, str(e.exception), msg="case %d" % i)
        ro = np.zeros(p.dst_shape, np.float32)
        ro.flags.writeable = False
        with self.assertRaises(ValueError):
            convlab.forward(p, x, w, out=ro)
        with self.assertRaises(TypeError):
            convlab.forward(p, x.tolist(), w)


# Maps whose gather index is checked against the command line, with the problems they run on.
CLI_MAPS = [
    ("im2col", "g2mb2ic4ih5iw4oc2kh2kw3sh2ph1pw1dw1", None),
    ("im2col", "mb1ic3iw9oc2kw3sw2pw2", None),
    ("im2col", "mb1ic2id3ih4iw3oc1kd2kh2kw2pd1", None),
    ("pad", "mb1ic2ih7oc3kh3sh2ph1", None),
    ("winograd", "mb1ic2ih7oc1kh3ph1", None),
    ("nc1hwc0", "mb2ic5ih3iw2oc3kh1kw1", 4),
    ("fractal_z", "mb1ic5ih3oc18kh2", 8),
    ("tnc", "mb3ic2ih2oc2kh1", 2),
    ("im2col_fractal", "mb1ic3ih4oc2kh2", 2),
]


class MapTest(unittest.TestCase):
    def test_im2col_by_hand(self):
        p = convlab.Problem("mb1ic1ih3oc1kh2ph1")
        m = convlab.map("im2col", p)
        self.assertEqual(m.kind, "gather")
        self.assertEqual(m.src_shape, (1, 1, 3, 3))
        self.assertEqual(m.dst_shape, (1, 1, 4, 16))
        idx = m.gather_index()
        self.assertEqual((idx.dtype, idx.shape), (np.int64, m.dst_shape))
        # row = (kh, kw), col = (oh, ow); ih = oh - 1 + kh, iw = ow - 1 + kw; -1 outside.
        for kh in range(2):
            for kw in range(2):
                for oh in range(4):
                    for ow in range(4):
                        ih, iw = oh - 1 + kh, ow - 1 + kw
                        want = ih * 3 + iw if 0 <= ih < 3 and 0 <= iw < 3 else -1
                        self.assertEqual(idx[0, 0, kh * 2 + kw, oh * 4 + ow], want)
        # The gather index gathers: the same as executing the map.
        src = np.arange(1, 10, dtype=np.float32).reshape(m.src_shape)
        np.testing.assert_array_equal(np.where(idx < 0, 0, src.ravel()[idx]), m(src))
        self.assertEqual(m.formula((0, 0, 3, 5)), "dst(n=0,g=0,row=3,col=5) <- src(n=0,c=0,h=1,w=1)")
        self.assertEqual(m.formula(0), "dst(n=0,g=0,row=0,col=0) <- 0")
        self.assertEqual(m.formula(np.int64(3 * 16 + 5)), m.formula((0, 0, 3, 5)))
        self.assertEqual(m.formula(np.array([0, 0, 3, 5])), m.formula((0, 0, 3, 5)))
        self.assertEqual(m.source((0, 0, 3, 5)), (0, 0, 1, 1))
        self.assertIsNone(m.source((0, 0, 0, 0)))

    def test_pairs_and_reduce_maps(self):
        p = convlab.Problem("mb1ic2ih4oc1kh3ph1")
        g = convlab.map("im2col", p)
        r = convlab.map("col2im", p)
        self.assertEqual(r.kind, "reduce")
        pairs = g.pairs()
        self.assertEqual((pairs.dtype, pairs.shape), (np.int64, (g.gather_index().size, 2)))
        rebuilt = np.full(g.dst_shape, -99, np.int64).ravel()
        rebuilt[pairs[:, 1]] = pairs[:, 0]
        np.testing.assert_array_equal(rebuilt.reshape(g.dst_shape), g.gather_index())
        # col2im is im2col seen from the other side.
        np.testing.assert_array_equal(r.scatter_index(), g.gather_index())
        with self.assertRaises(ValueError) as e:
            r.gather_index()
        self.assertIn("scatter_index()", str(e.exception))
        with self.assertRaises(ValueError):
            g.scatter_index()
        self.assertIn(" += src(", r.formula((0, 0, 4, 5)))
        # numpy.add.at with the scatter index is col2im.
        cols = np.arange(np.prod(r.src_shape), dtype=np.float32).reshape(r.src_shape)
        idx = r.scatter_index().ravel()
        img = np.zeros(int(np.prod(r.dst_shape)), np.float32)
        np.add.at(img, idx[idx >= 0], cols.ravel()[idx >= 0])
        np.testing.assert_array_equal(img.reshape(r.dst_shape), r(cols))

    def test_gather_index_equals_the_command_line(self):
        if not CLI:
            self.skipTest("no convlab binary given")
        for name, desc, c0 in CLI_MAPS:
            with self.subTest(map=name, problem=desc):
                m = convlab.map(name, convlab.Problem(desc), c0=c0)
                j = cli_json(name, desc, c0)
                self.assertEqual(tuple(j["dst"]["dims"]), m.dst_shape)
                self.assertEqual(j["dst"]["names"], m.dst_names)
                pairs = np.array(j["pairs"], dtype=np.int64)
                np.testing.assert_array_equal(m.pairs(), pairs)
                want = np.full(int(np.prod(m.dst_shape)), -99, np.int64)
                want[pairs[:, 1]] = pairs[:, 0]
                np.testing.assert_array_equal(m.gather_index(), want.reshape(m.dst_shape))
        # And the command line's own .npy index, read by numpy.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "idx.npy")
            subprocess.run([CLI, "map", "--map", "im2col", "--problem", CLI_MAPS[0][1], "--format",
                            "npy", "--out", path], check=True, capture_output=True)
            np.testing.assert_array_equal(
                np.load(path), convlab.map("im2col", convlab.Problem(CLI_MAPS[0][1])).gather_index())

    def test_every_map_name_of_the_command_line(self):
        p = convlab.Problem("mb2ic3ih6oc2kh3ph1")
        names = convlab.maps()
        for name in ("im2col", "col2im", "strided", "pad", "fliprot", "tnc", "winograd", "nc1hwc0",
                     "unpack_nc1hwc0", "fractal_z", "unpack_fractal_z", "tnc5d", "tncf",
                     "fliprot_fz", "strided5d", "pad5d", "im2col_fractal"):
            self.assertIn(name, names)
            m = convlab.map(name, p)
            idx = m.gather_index() if m.kind == "gather" else m.scatter_index()
            self.assertEqual(idx.shape, m.dst_shape if m.kind == "gather" else m.src_shape)
            codomain = np.prod(m.src_shape if m.kind == "gather" else m.dst_shape)
            self.assertTrue(((idx >= -1) & (idx < codomain)).all(), name)
        # With c0, tnc and fliprot are the DaVinci maps, as on the command line.
        self.assertEqual(convlab.map("tnc", p, c0=4).name, "tnc5d")
        self.assertEqual(convlab.map("fliprot", p, c0=4).name, "fliprot_fz")

    def test_bad_map_arguments(self):
        p = convlab.Problem("mb1ic2ih4oc1kh3")
        m = convlab.map("im2col", p)
        cases = [
            (lambda: convlab.map("im3col", p), "map 'im3col': unknown; maps: im2col"),
            (lambda: convlab.map("im2col", p, c0=8), "c0 is taken by the DaVinci maps only"),
            (lambda: convlab.map("nc1hwc0", p, c0=0), "C0 must be in [1, 64]"),
            (lambda: convlab.map("winograd", convlab.Problem("mb1ic2ih4oc1kh2")), "winograd"),
            (lambda: m.formula((0, 0, 99, 0)), "coord: row = 99 outside the destination"),
            (lambda: m.formula((0, 0)), "coord: 2 values"),
            (lambda: m.formula(10 ** 6), "coord: linear index 1000000 outside"),
            (lambda: m.formula("row 3"), "coord: expected a tuple of 4 integers"),
            (lambda: m.formula(2 ** 70), "coord: linear index %d outside" % 2 ** 70),
            (lambda: m(np.zeros((1, 2, 4, 5), np.float32)), "src: shape (1, 2, 4, 5)"),
        ]
        for i, (call, needle) in enumerate(cases):
            with self.assertRaises(ValueError, msg="case %d" % i) as e:
                call()
            self.assertIn(needle, str(e.exception), msg="case %d" % i)


def nc1hwc0_numpy(x, c0):
    """NC1HWC0 written in numpy: C padded to C1*C0, split, C0 moved innermost (D before C1)."""
    n, c = x.shape[:2]
    c1 = -(-c // c0)
    xp = np.zeros((n, c1 * c0) + x.shape[2:], np.float32)
    xp[:, :c] = x
    xp = xp.reshape((n, c1, c0) + x.shape[2:])
    if x.ndim == 5:  # (n, c1, c0, d, h, w) -> (n, d, c1, h, w, c0)
        return xp.transpose(0, 3, 1, 4, 5, 2)
    return np.moveaxis(xp, 2, -1)


def fractal_z_numpy(w, c0):
    """FRACTAL_Z(_3D) written in numpy: (KD*C1*KH*KW, N1, 16, C0), O padded to N1*16."""
    o, i = w.shape[:2]
    k = w.shape[2:]
    if len(k) == 1:
        k = (1,) + k
    kd, kh, kw = (1,) * (3 - len(k)) + tuple(k)
    n1, c1 = -(-o // 16), -(-i // c0)
    wp = np.zeros((n1 * 16, c1 * c0, kd, kh, kw), np.float32)
    wp[:o, :i] = w.reshape(o, i, kd, kh, kw)
    wp = wp.reshape(n1, 16, c1, c0, kd, kh, kw)
    return wp.transpose(4, 2, 5, 6, 0, 1, 3).reshape(kd * c1 * kh * kw, n1, 16, c0)


class DaVinciTest(unittest.TestCase):
    def test_packers_against_numpy_and_the_maps(self):
        rng = np.random.default_rng(7)
        for shape, c0 in [((2, 5, 3, 4), 4), ((1, 3, 7), 16), ((2, 9, 2, 3, 2), 8),
                          ((1, 16, 2, 2), 16)]:
            with self.subTest(shape=shape, c0=c0):
                x = rng.standard_normal(shape).astype(np.float32)
                packed = convlab.to_nc1hwc0(x, c0)
                np.testing.assert_array_equal(packed, nc1hwc0_numpy(x, c0))
                np.testing.assert_array_equal(convlab.from_nc1hwc0(packed, shape[1]), x)
        # The packer is the nc1hwc0 map's gather.
        p = convlab.Problem("mb2ic5ih3iw4oc2kh1kw1")
        x = rng.standard_normal(p.src_shape).astype(np.float32)
        idx = convlab.map("nc1hwc0", p, c0=4).gather_index()
        np.testing.assert_array_equal(convlab.to_nc1hwc0(x, 4),
                                      np.where(idx < 0, 0, x.ravel()[idx]))
        for shape, c0 in [((18, 5, 3, 2), 8), ((3, 2, 3), 16), ((17, 3, 2, 2, 3), 2)]:
            with self.subTest(shape=shape, c0=c0):
                w = rng.standard_normal(shape).astype(np.float32)
                packed = convlab.to_fractal_z(w, c0)
                np.testing.assert_array_equal(packed, fractal_z_numpy(w, c0))
                np.testing.assert_array_equal(convlab.from_fractal_z(packed, shape), w)

    def test_bad_packer_arguments(self):
        x = np.zeros((1, 5, 3, 3), np.float32)
        cases = [
            (lambda: convlab.to_nc1hwc0(np.zeros((5, 3), np.float32)),
             "x: shape (5, 3), expected (N, C, W), (N, C, H, W) or (N, C, D, H, W)"),
            (lambda: convlab.to_nc1hwc0(x.astype(np.int32)), "x: dtype int32"),
            (lambda: convlab.to_nc1hwc0(x, 0), "C0 must be in [1, 64]"),
            (lambda: convlab.from_nc1hwc0(convlab.to_nc1hwc0(x, 4), 9),
             "channels = 9: the packed array has C1 = 2 blocks of C0 = 4"),
            (lambda: convlab.from_fractal_z(np.zeros((4, 1, 16, 16), np.float32), (1, 2)),
             "shape: (1, 2)"),
            (lambda: convlab.from_fractal_z(np.zeros((4, 1, 16, 16), np.float32), (1, 2, 3, 3)),
             "packed: shape (4, 1, 16, 16), the problem needs (9, 1, 16, 16)"),
        ]
        for i, (call, needle) in enumerate(cases):
            with self.assertRaises(ValueError, msg="case %d" % i) as e:
                call()
            self.assertIn(needle, str(e.exception), msg="case %d" % i)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=1)
