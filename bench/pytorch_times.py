#!/usr/bin/python3
"""Times PyTorch's CPU convolution, what practitioners call, on a shape set of `convlab bench`.

The bench's peer is oneDNN's primitive alone, on its own blocked layouts, the reorders outside
the timed region. PyTorch on NCHW tensors is what a user of the framework gets: its dispatch,
its choice of kernel, and any reorder it makes inside the call. This script gives that figure
for the same layers, to be read beside the bench's (which runs the engine and oneDNN).

Per layer and pass: forward (F.conv1d/2d/3d), backward data and backward weight
(aten.convolution_backward asked for that one gradient), the median of repeats after warm-up
calls, PyTorch's intra-op threads set to --threads. Each pass's result is checked once against
PyTorch in float64 (|got - ref| <= 1e-4 * max(|ref|, rms of ref), the bench's rule); a layer
that fails is reported and left out of the totals. Layers are read by `convlab describe`, the
engine's own descriptor parser; layers with unequal begin and end padding (which PyTorch's
convolution cannot express) are skipped, named.

usage: pytorch_times.py CONVLAB [--shapes FILE] [--batch N] [--threads T] [--filter TEXT]
                        [--min-time SECONDS]
Exit 0; 1 when a layer failed its check (or PyTorch's output shape is not ConvLab's); 2 on bad
arguments or no layer run; 77 when PyTorch is not installed.
"""
import argparse
import os
import re
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # peer not installed: skip, do not fail
    print(f"SKIP: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
PASSES = ("fwd", "bwd_data", "bwd_weight")
WIDTHS = (9, 9, 10)  # the columns of PASSES in the table
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def fail(msg):
    print(f"pytorch_times: {msg}", file=sys.stderr)
    sys.exit(2)


def layers(path):
    """(descriptor, name) of each layer line of a shape set."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.search(r'n"([^"]*)"', line)
            out.append((line, m.group(1) if m else line))
    return out


def describe(convlab, desc):
    """The problem as `convlab describe` prints it: batch, channels, groups and per axis
    (in, kernel, stride, dilation, pad_begin, pad_end)."""
    r = subprocess.run([convlab, "describe", "--problem", desc], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"convlab describe {desc}: {r.stderr.strip()}")
    p = {"axes": []}
    for line in r.stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "batch":
            p["mb"] = int(f[1])
        elif f[0] == "channels":  # channels in C, out K, groups G (...)
            p["ic"], p["oc"], p["g"] = (int(f[i].rstrip(",")) for i in (2, 4, 6))
        elif f[0] == "dst":  # dst (N,K,out...)
            p["dst"] = [int(x) for x in f[1].strip("()").split(",")]
        elif f[0] in ("d", "h", "w") and len(f) >= 7 and f[1].isdigit():
            p["axes"].append([int(x) for x in f[1:7]])
    if "mb" not in p or "g" not in p or "dst" not in p or not p["axes"]:
        fail(f"convlab describe {desc}: output not understood:\n{r.stdout}")
    return p


def median_ms(fn, min_time):
    for _ in range(3):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < min_time and len(times) < 1000):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e3


def cells(values, decimals):
    """One table row's per-pass cells, under the header's columns."""
    return " ".join(f"{v:{wd}.{decimals}f}" for v, wd in zip(values, WIDTHS))


def close(got, ref):
    err = (got.double() - ref).abs().max().item()
    scale = max(ref.abs().max().item(), ref.pow(2).mean().sqrt().item(), 1e-30)
    return err <= 1e-4 * scale, err / scale


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("convlab", help="the convlab binary (for its descriptor parser)")
    ap.add_argument("--shapes", default=os.path.join(HERE, "..", "assets", "shapes", "resnet50.txt"))
    ap.add_argument("--batch", type=int, help="batch of every layer (default: each line's mb)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--filter", default="", help="only layers whose name contains TEXT")
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds of repeats per pass")
    a = ap.parse_args()
    if a.batch is not None and a.batch < 1:
        fail("--batch: must be >= 1")
    if a.threads < 1:
        fail("--threads: must be >= 1")
    if not os.path.isfile(a.shapes):
        fail(f"--shapes: no file {a.shapes}")
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(7)
    print(f"# PyTorch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"mkldnn {'available' if torch.backends.mkldnn.is_available() else 'not built'}; ms per call (median)")
    print(f"{'layer':36s} " + " ".join(f"{ps:>{wd}s}" for ps, wd in zip(PASSES, WIDTHS)))
    total = dict.fromkeys(PASSES, 0.0)
    ran = failed = 0
    for desc, name in layers(a.shapes):
        if a.filter not in name:
            continue
        p = describe(a.convlab, desc)
        if any(ax[4] != ax[5] for ax in p["axes"]):
            print(f"{name:36s} skipped: unequal begin and end padding")
            continue
        mb = a.batch or p["mb"]
        nd = len(p["axes"])
        ins, ks, st, dl, pad = (list(col) for col in list(zip(*p["axes"]))[:5])
        g = p["g"]
        conv = CONV[nd]
        x = torch.randn(mb, p["ic"], *ins, generator=gen)
        w = torch.randn(p["oc"], p["ic"] // g, *ks, generator=gen)
        y = conv(x, w, None, st, pad, dl, g)
        want = [mb] + p["dst"][1:]
        if list(y.shape) != want:  # the problem read wrongly: PyTorch's output is not ConvLab's
            print(f"{name:36s} FAILED: PyTorch's output is {tuple(y.shape)}, ConvLab's {tuple(want)}")
            failed += 1
            continue
        dy = torch.randn(y.shape, generator=gen)
        zeros = [0] * nd

        def passes(x_, w_, dy_):
            """Each pass as a call on these tensors."""
            def back(mask, i):
                return torch.ops.aten.convolution_backward(dy_, x_, w_, None, st, pad, dl, False,
                                                           zeros, g, mask)[i]

            return {
                "fwd": lambda: conv(x_, w_, None, st, pad, dl, g),
                "bwd_data": lambda: back([True, False, False], 0),
                "bwd_weight": lambda: back([False, True, False], 1),
            }

        calls = passes(x, w, dy)
        refs = passes(x.double(), w.double(), dy.double())
        ms, bad = {}, []
        for ps in PASSES:
            ok, rel = close(calls[ps](), refs[ps]())
            if not ok:
                bad.append(f"{ps} off by {rel:.1e} of its scale")
            ms[ps] = median_ms(calls[ps], a.min_time)
        row = cells((ms[ps] for ps in PASSES), 3)
        if bad:
            print(f"{name:36s} {row}  FAILED check: {'; '.join(bad)} (not counted)")
            failed += 1
            continue
        print(f"{name:36s} {row}")
        ran += 1
        for ps in PASSES:
            total[ps] += ms[ps]
    if ran == 0 and failed == 0:
        fail("no layer ran (check --filter and --shapes)")
    row = cells((total[ps] for ps in PASSES), 2)
    print(f"{'total (' + str(ran) + ' layers checked)':36s} {row}")
    if failed:
        print(f"pytorch_times: {failed} layer(s) FAILED (not in the totals)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
