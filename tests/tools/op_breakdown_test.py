#!/usr/bin/python3
"""Checks bench/op_breakdown.py on synthetic results.csv files whose answers are worked out by
hand below: the baseline (per layer the fastest of the others, DaVinci algorithms left out),
the totals and ratio, the order of the worst layers, their operations and "other", the pooling
of two runs, and the refusals of bad arguments.

usage: op_breakdown_test.py WORKDIR. Exit 0 when every check holds, 1 otherwise.
"""
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "op_breakdown.py")
failures = []

COLUMNS = ["layer_index", "layer", "descriptor", "pass", "algorithm", "peer", "operation",
           "median_ms", "verified"]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow(r)


def row(i, layer, algo, op, ms, peer="false", verified="PASS", pas="fwd"):
    return [i, layer, "mb1ic1ih4oc1kh3", pas, algo, peer, op, ms, verified]


def run(workdir, *args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                       cwd=workdir)
    return p.returncode, p.stdout, p.stderr


def main():
    workdir = sys.argv[1]
    os.makedirs(workdir, exist_ok=True)
    # Layer a: fractal 3.0 (gemm 2.0, im2col 0.5, so other 0.5); im2col_gemm 1.0, implicit 1.5:
    # best 1.0, excess 2.0. Layer b: fractal 2.0 (gemm 1.9), best implicit 1.5, excess 0.5.
    # Layer c: fractal 1.0, no other verified (a FAIL row and a peer row only): not counted.
    # fractal_via_forward (DaVinci) would be the best on a: it is never a baseline.
    one = os.path.join(workdir, "one.csv")
    write(one, [
        row(0, "a", "fractal", "total", 3.0), row(0, "a", "fractal", "fractal_gemm", 2.0),
        row(0, "a", "fractal", "im2col", 0.5),
        row(0, "a", "im2col_gemm", "total", 1.0), row(0, "a", "implicit_gemm", "total", 1.5),
        row(0, "a", "fractal_via_forward", "total", 0.1),
        row(1, "b", "fractal", "total", 2.0), row(1, "b", "fractal", "fractal_gemm", 1.9),
        row(1, "b", "im2col_gemm", "total", 2.5), row(1, "b", "implicit_gemm", "total", 1.5),
        row(2, "c", "fractal", "total", 1.0), row(2, "c", "im2col_gemm", "total", 0.2,
                                                  verified="FAIL"),
        row(2, "c", "oneDNN", "total", 0.3, peer="true"),
    ])
    rc, out, err = run(workdir, one, "--algo", "fwd:fractal")
    print(out, err)
    check(rc == 0, "exit 0")
    check("against the best of im2col_gemm, implicit_gemm, 2 layers" in out,
          "the baseline: the other engine algorithms, not the DaVinci ones; layer c left out")
    check("| 2 | 5.000 | 2.500 | 2.00x |" in out, "totals 3 + 2 against 1 + 1.5")
    lines = [l for l in out.splitlines() if l.startswith("| a |") or l.startswith("| b |")]
    check(len(lines) == 2 and lines[0].startswith("| a |"), "the larger excess first")
    check(lines and "| a | 3.000 | 1.000 (im2col_gemm) | 3.00x | 2.000 | 80% |" in lines[0],
          "layer a: best im2col_gemm, excess 2.0 of 2.5")
    check(lines and "fractal_gemm 2.000 (67%), im2col 0.500 (17%), other 0.500 (17%)" in lines[0],
          "layer a's operations, largest first, and the rest as other")
    check(len(lines) == 2 and "| b | 2.000 | 1.500 (implicit_gemm) | 1.33x | 0.500 | 20% |"
          in lines[1], "layer b: best implicit_gemm")
    check(len(lines) == 2 and "fractal_gemm 1.900 (95%), other 0.100 (5%)" in lines[1],
          "layer b's other")
    rc, out, _ = run(workdir, one, "--algo", "fwd:fractal", "--against", "im2col_gemm",
                     "--top", "1")
    check(rc == 0 and "| 2 | 5.000 | 3.500 | 1.43x |" in out, "--against im2col_gemm: 1 + 2.5")
    check(out.count("| a |") + out.count("| b |") == 1, "--top 1 lists one layer")
    # A second run: a's fractal 5.0 and 1.0 -> median of [3.0, 5.0] = 4.0 with two runs.
    two = os.path.join(workdir, "two.csv")
    write(two, [row(0, "a", "fractal", "total", 5.0), row(0, "a", "im2col_gemm", "total", 1.0),
                row(1, "b", "fractal", "total", 2.0), row(1, "b", "implicit_gemm", "total", 1.5)])
    rc, out, _ = run(workdir, one, two, "--algo", "fwd:fractal")
    check(rc == 0 and "| 2 | 6.000 | 2.500 | 2.40x |" in out,
          "two runs pooled: per layer the median over the runs (a 4.0, b 2.0)")
    # Refusals: one line naming the argument, exit 2.
    for args, says in [(["--algo", "fractal"], "must be PASS:NAME"),
                       (["--algo", "up:fractal"], "the pass must be"),
                       (["--algo", "fwd:nope"], "no verified fwd:nope rows"),
                       (["--algo", "fwd:fractal", "--against", "nope"], "no layer where"),
                       (["--algo", "fwd:fractal", "--top", "0"], "must be at least 1")]:
        rc, _, err = run(workdir, one, *args)
        check(rc == 2 and says in err and err.startswith("op_breakdown: "),
              f"{' '.join(args)}: exit 2, '{says}'")
    bad = os.path.join(workdir, "bad.csv")
    with open(bad, "w", encoding="utf-8") as f:
        f.write("a,b\n1,2\n")
    rc, _, err = run(workdir, bad, "--algo", "fwd:fractal")
    check(rc == 2 and "not a results.csv" in err, "a CSV of other columns is refused")
    rc, _, err = run(workdir, os.path.join(workdir, "missing.csv"), "--algo", "fwd:fractal")
    check(rc == 2 and "cannot be read" in err, "a missing file is refused")
    print(f"{len(failures)} failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
