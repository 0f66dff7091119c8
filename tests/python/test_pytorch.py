"""The convlab module's three passes against PyTorch in float64.

Random small problems (1-D, 2-D and 3-D; stride, padding begin and end, dilation, groups, leftover
input rows) from a fixed seed, every algorithm of each pass that computes the problem. PyTorch
computes the reference in float64 from the same float32 inputs, through autograd: asymmetric
padding as an explicit F.pad, then an unpadded convolution. A result passes when every element is
within 1e-4 of the sum of its terms' magnitudes (the same convolution on |inputs|), which an fp32
sum in any order meets and a wrong index or a missing term does not. Exit 77 without PyTorch.
"""
import random
import sys

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("python_peer_pytorch: PyTorch is not installed (python3-torch); skipped")
    sys.exit(77)

import convlab

AXES = {1: "w", 2: "hw", 3: "dhw"}


def random_problem(rng, ndims):
    """A valid descriptor and the parameters it was made from."""
    while True:
        g = rng.choice([1, 1, 2, 3])
        prm = dict(g=g, mb=rng.randint(1, 2), ic=g * rng.randint(1, 3), oc=g * rng.randint(1, 3))
        for a in AXES[ndims]:
            k = rng.randint(1, 3)
            d = rng.randint(1, 2)
            prm["k" + a] = k
            prm["s" + a] = rng.randint(1, 3)
            prm["d" + a] = d
            prm["p" + a] = rng.randint(0, min(2, (k - 1) * d))
            prm["p" + a + "e"] = rng.randint(0, min(2, (k - 1) * d))
            prm["i" + a] = rng.randint(max(1, (k - 1) * d + 1 - prm["p" + a] - prm["p" + a + "e"]),
                                       6 if ndims == 3 else 9)
        desc = "g%(g)dmb%(mb)dic%(ic)d" % prm
        desc += "".join("i%s%d" % (a, prm["i" + a]) for a in AXES[ndims])
        desc += "oc%d" % prm["oc"]
        for key in ("k", "s", "p"):
            desc += "".join("%s%s%d" % (key, a, prm[key + a]) for a in AXES[ndims])
        desc += "".join("d%s%d" % (a, prm["d" + a] - 1) for a in AXES[ndims])  # 0-based
        desc += "".join("p%se%d" % (a, prm["p" + a + "e"]) for a in AXES[ndims])
        try:
            return convlab.Problem(desc), prm
        except ValueError:
            continue  # a kernel wider than the padded input: draw again


def reference(p, prm, x, w, b, dy):
    """dst, diff_src, diff_wei and diff_bias in float64 by PyTorch's autograd."""
    nd = p.ndims
    axes = AXES[nd]
    conv = [F.conv1d, F.conv2d, F.conv3d][nd - 1]
    # F.pad takes (begin, end) pairs from the last axis backwards.
    pads = []
    for a in reversed(axes):
        pads += [prm["p" + a], prm["p" + a + "e"]]
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    kw = dict(stride=tuple(prm["s" + a] for a in axes),
              dilation=tuple(prm["d" + a] for a in axes), groups=prm["g"])
    y = conv(F.pad(xt, pads), wt, bt, **kw)
    y.backward(torch.tensor(dy, dtype=torch.float64))
    # The magnitudes of every term: the same sums on |x|, |w|, |dy|.
    ax, aw, ady = (torch.tensor(np.abs(v), dtype=torch.float64) for v in (x, w, dy))
    with torch.no_grad():
        ydst = conv(F.pad(ax, pads), aw, None, **kw)
    axr = ax.clone().requires_grad_(True)
    awr = aw.clone().requires_grad_(True)
    conv(F.pad(axr, pads), awr, None, **kw).backward(ady)
    return (y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy(),
            ydst.numpy() + np.abs(b).astype(np.float64).reshape((-1,) + (1,) * nd), axr.grad.numpy(), awr.grad.numpy())


def check(what, got, want, scale):
    assert got.dtype == np.float32, "%s: dtype %s" % (what, got.dtype)
    assert got.shape == want.shape, "%s: shape %s, PyTorch %s" % (what, got.shape, want.shape)
    err = np.abs(got.astype(np.float64) - want)
    bound = 1e-4 * scale + 1e-6
    worst = np.unravel_index(np.argmax(err - bound), err.shape) if err.size else None
    assert (err <= bound).all(), "%s: element %s is %r, PyTorch %r (bound %g)" % (
        what, worst, got[worst], want[worst], bound[worst])


def main():
    rng = random.Random(20261206)
    nrng = np.random.default_rng(20261206)
    problems = []
    for nd in [1] * 5 + [2] * 10 + [3] * 5:
        problems.append(random_problem(rng, nd))
    # Every feature must be covered, or the check proves less than it says.
    feats = {"1-D": any(p.ndims == 1 for p, _ in problems),
             "3-D": any(p.ndims == 3 for p, _ in problems),
             "groups": any(p.groups > 1 for p, _ in problems),
             "stride": any(max(p.stride) > 1 for p, _ in problems),
             "dilation": any(max(p.dilation) > 1 for p, _ in problems),
             "padding": any(max(p.pad_begin) > 0 for p, _ in problems),
             "end padding only": any(max(p.pad_end) > max(p.pad_begin) for p, _ in problems),
             "leftover rows": any(any((i + pb + pe - (k - 1) * d - 1) % s
                                      for i, pb, pe, k, d, s in zip(p.input, p.pad_begin,
                                                                    p.pad_end, p.kernel,
                                                                    p.dilation, p.stride))
                                  for p, _ in problems)}
    missing = [f for f, ok in feats.items() if not ok]
    assert not missing, "the random problems cover no %s" % ", ".join(missing)

    checked = 0
    for p, prm in problems:
        x = nrng.standard_normal(p.src_shape).astype(np.float32)
        w = nrng.standard_normal(p.wei_shape).astype(np.float32)
        b = nrng.standard_normal(p.bias_shape).astype(np.float32)
        dy = nrng.standard_normal(p.dst_shape).astype(np.float32)
        y, dx, dw, db, sy, sdx, sdw = reference(p, prm, x, w, b, dy)
        assert tuple(y.shape) == p.dst_shape, "%r: PyTorch's output %s" % (p, y.shape)
        for algo in convlab.algos("fwd", p):
            check("%r fwd %s" % (p, algo), convlab.forward(p, x, w, b, algo=algo), y, sy)
            checked += 1
        for algo in convlab.algos("bwd_data", p):
            check("%r bwd_data %s" % (p, algo), convlab.backward_data(p, dy, w, algo=algo), dx,
                  sdx)
            checked += 1
        for algo in convlab.algos("bwd_weight", p):
            check("%r bwd_weight %s" % (p, algo), convlab.backward_weight(p, x, dy, algo=algo),
                  dw, sdw)
            checked += 1
        check("%r bwd_bias" % p, convlab.backward_bias(p, dy), db,
              np.abs(dy).sum(axis=tuple(i for i in range(dy.ndim) if i != 1)))
    print("python_peer_pytorch: %d problems, %d pass/algorithm results equal PyTorch's float64"
          % (len(problems), checked))


if __name__ == "__main__":
    main()
