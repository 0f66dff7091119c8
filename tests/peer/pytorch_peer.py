#!/usr/bin/python3
"""Compares `convlab compute` with PyTorch (Debian's python3-torch) on random problems.

Every pass and every algorithm of the engine, on random 1-D/2-D/3-D problems with groups,
dilation, asymmetric padding and leftover rows, in float64 on the PyTorch side. Exit 77 (ctest's
skip) when PyTorch is not installed.

usage: pytorch_peer.py CONVLAB_BINARY [COUNT]
"""
import os
import random
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # peer not installed: skip, do not fail
    print(f"SKIP: {e}")
    sys.exit(77)

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
AXES = {1: ["w"], 2: ["h", "w"], 3: ["d", "h", "w"]}
# The inputs each pass reads (the CLI refuses the others).
READS = {
    "fwd": ["src", "wei", "bias"],
    "bwd_data": ["diff-dst", "wei"],
    "bwd_weight": ["src", "diff-dst"],
    "bwd_bias": ["diff-dst"],
}


def random_problem(rng, conv3x3=False):
    """conv3x3: 2-D, kernel 3x3, stride 1, undilated (what winograd computes)."""
    while True:
        nd = 2 if conv3x3 else rng.randint(1, 3)
        g = 1 if rng.random() < 0.3 else rng.randint(1, 3)
        ic, oc = g * rng.randint(1, 3), g * rng.randint(1, 3)
        p = dict(nd=nd, mb=rng.randint(1, 3), g=g, ic=ic, oc=oc, i=[], k=[], s=[], d=[], pb=[], pe=[])
        for _ in range(nd):
            p["i"].append(rng.randint(3, {1: 14, 2: 9, 3: 6}[nd]))
            p["k"].append(rng.randint(1, 3))
            p["s"].append(rng.randint(1, 3))
            p["d"].append(rng.choice([1, 1, 2]))
            if conv3x3:
                p["k"][-1], p["s"][-1], p["d"][-1] = 3, 1, 1
            p["pb"].append(rng.randint(0, 2))
            p["pe"].append(rng.randint(0, 2))
        ok = all(
            i + b + e >= (k - 1) * d + 1 for i, k, d, b, e in zip(p["i"], p["k"], p["d"], p["pb"], p["pe"])
        )
        if ok:
            return p


def out_size(p, a):
    keff = (p["k"][a] - 1) * p["d"][a] + 1
    return (p["i"][a] + p["pb"][a] + p["pe"][a] - keff) // p["s"][a] + 1


def descriptor(p):
    # Explicit output sizes, begin pads and our pad-end extension keys give every field.
    s = f"g{p['g']}mb{p['mb']}ic{p['ic']}"
    ax = AXES[p["nd"]]
    s += "".join(f"i{a}{v}" for a, v in zip(ax, p["i"]))
    s += f"oc{p['oc']}"
    s += "".join(f"o{a}{out_size(p, j)}" for j, a in enumerate(ax))
    for key, vals in (("k", p["k"]), ("s", p["s"]), ("p", p["pb"]), ("d", [d - 1 for d in p["d"]])):
        s += "".join(f"{key}{a}{v}" for a, v in zip(ax, vals))
    s += "".join(f"p{a}e{v}" for a, v in zip(ax, p["pe"]))
    return s


def torch_pad(p):
    pads = []
    for a in reversed(range(p["nd"])):  # F.pad takes the last axis first
        pads += [p["pb"][a], p["pe"][a]]
    return pads


def main():
    binary = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rng = random.Random(2026)
    algos = subprocess.run([binary, "algos"], capture_output=True, text=True, check=True).stdout
    passes = {}
    rules = {}  # (pass, algo) -> the rule of the problems it computes, as `convlab algos` says
    current = None
    for line in algos.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0].rstrip(":") in ("fwd", "bwd_data", "bwd_weight", "bwd_bias"):
            current = w[0].rstrip(":")
            passes[current] = []
        elif current and line.strip().startswith("applies to: "):
            rules[(current, passes[current][-1])] = line.strip()[len("applies to: "):]
        elif current and not line.startswith(" " * 8):
            passes[current].append(w[0])
    checked = failed = refused = 0
    with tempfile.TemporaryDirectory() as tmp:
        for t in range(count):
            p = random_problem(rng, conv3x3=t % 4 == 0)
            nd = p["nd"]
            x = torch.randn([p["mb"], p["ic"]] + p["i"], dtype=torch.float64, requires_grad=True)
            w = torch.randn([p["oc"], p["ic"] // p["g"]] + p["k"], dtype=torch.float64, requires_grad=True)
            b = torch.randn([p["oc"]], dtype=torch.float64, requires_grad=True)
            y = CONV[nd](F.pad(x, torch_pad(p)), w, b, stride=p["s"], dilation=p["d"], groups=p["g"])
            dy = torch.randn(y.shape, dtype=torch.float64)
            y.backward(dy)
            files = {}
            for name, tensor in (("src", x), ("wei", w), ("bias", b), ("diff-dst", dy)):
                files[name] = os.path.join(tmp, f"{name}.npy")
                np.save(files[name], tensor.detach().numpy().astype("<f4"))
            want = {"fwd": y, "bwd_data": x.grad, "bwd_weight": w.grad, "bwd_bias": b.grad}
            desc = descriptor(p)
            for pass_name, algo_list in passes.items():
                for algo in algo_list:
                    out = os.path.join(tmp, "out.npy")
                    cmd = [binary, "compute", "--problem", desc, "--pass", pass_name, "--algo", algo, "--out", out]
                    for name in READS[pass_name]:
                        cmd += [f"--{name}", files[name]]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    ref = want[pass_name].detach().numpy()
                    rule = rules.get((pass_name, algo))
                    if r.returncode == 2 and rule and rule in r.stderr:
                        refused += 1  # not one of its problems, and it said which rule
                        continue
                    if r.returncode != 0:
                        print(f"FAIL {desc} {pass_name} {algo}: exit {r.returncode}: {r.stderr.strip()}")
                        failed += 1
                        continue
                    got = np.load(out).astype(np.float64)
                    if got.shape != ref.shape:
                        print(f"FAIL {desc} {pass_name} {algo}: shape {got.shape}, want {ref.shape}")
                        failed += 1
                        continue
                    err = np.abs(got - ref)
                    tol = 1e-4 + 1e-4 * np.abs(ref)
                    if not np.all(err <= tol):
                        print(f"FAIL {desc} {pass_name} {algo}: max abs err {err.max():.3g}")
                        failed += 1
                    else:
                        checked += 1
    print(f"{checked} passed, {failed} failed, {refused} refused (not the algorithm's problems)")
    sys.exit(1 if failed or checked == 0 else 0)


if __name__ == "__main__":
    main()
