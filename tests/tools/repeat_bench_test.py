#!/usr/bin/python3
"""Checks bench/repeat_bench.py.

1. Its summary of synthetic runs, whose answers are worked out by hand below: each run's
   totals over the layers verified on both sides, the median and range of the runs' ratios,
   and the pooled ratio (each layer's median over the runs, summed).
2. Which rows of a results.csv it reads.
3. Two real runs of the classroom shapes' forward: each run's total in the summary is
   recomputed here from that run's results.csv, without the script's code.

usage: repeat_bench_test.py CONVLAB WORKDIR. Exit 0 when every check holds, 1 otherwise.
"""
import csv
import importlib.util
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "repeat_bench.py")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def load_module():
    spec = importlib.util.spec_from_file_location("repeat_bench", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def synthetic(mod):
    # Engine "auto" against peer "oneDNN" on layers a and b in three runs; layer c has no peer
    # row in run 1 (it failed there), so it counts nowhere; run 3's peer row of a is noisy.
    def run(a, b, pa, pb, noisy=False, c=None):
        mine = {(0, "a"): (a, False), (1, "b"): (b, False)}
        if c is not None:
            mine[(2, "c")] = (c, False)
        return {("fwd", "auto"): mine,
                ("fwd", "oneDNN"): {(0, "a"): (pa, noisy), (1, "b"): (pb, False)}}

    runs = [run(1.0, 3.0, 2.0, 2.0, c=9.0), run(1.2, 2.0, 2.0, 2.0), run(5.0, 1.0, 2.0, 2.0, True)]
    text = "\n".join(mod.summarise(runs, "oneDNN"))
    print(text)
    # Run ratios 4/4, 3.2/4, 6/4; pooled: a's median 1.2, b's 2.0, over the peer's 2 + 2.
    check("run 1:     4.000 /     4.000 ms = 1.000x  (2 layers, 0 noisy)" in text, "run 1 total")
    check("run 2:     3.200 /     4.000 ms = 0.800x  (2 layers, 0 noisy)" in text, "run 2 total")
    check("run 3:     6.000 /     4.000 ms = 1.500x  (2 layers, 1 noisy)" in text,
          "run 3 total and its noisy row")
    check("median 1.000x, 0.800-1.500, at or below 1 in 2 of 3" in text, "runs' ratios")
    check("pooled (each layer's median over the runs, 2 layers): 3.200 / 4.000 ms = 0.800x" in text,
          "pooled ratio")
    # Without a peer: the engine's totals alone, every verified layer.
    text = "\n".join(mod.summarise([{("fwd", "auto"): {(0, "a"): (1.0, False)}},
                                    {("fwd", "auto"): {(0, "a"): (3.0, False)}}], None))
    check("run 2:     3.000 ms  (1 layers, 0 noisy)" in text and "1 layers): 2.000 ms" in text,
          "engine alone (no peer)")


def results_file(mod, work):
    # read_run keeps verified rows (PASS, and REFERENCE: the peer as the reference, at batch 32)
    # and leaves out failed ones.
    path = os.path.join(work, "results.csv")
    os.makedirs(work, exist_ok=True)
    with open(path, "w") as f:
        f.write("# a header comment\n")
        f.write("layer_index,layer,pass,algorithm,peer,operation,median_ms,noisy,verified\n")
        f.write("0,a,fwd,oneDNN,true,total,2.0,false,REFERENCE\n")
        f.write("0,a,fwd,auto,false,total,1.5,true,PASS\n")
        f.write("0,a,fwd,auto,false,gemm,1.0,false,PASS\n")
        f.write("1,b,fwd,auto,false,total,9.0,false,FAIL\n")
    rows, peer = mod.read_run(path)
    check(peer == "oneDNN" and rows[("fwd", "oneDNN")] == {("0", "a"): (2.0, False)} and
          rows[("fwd", "auto")] == {("0", "a"): (1.5, True)},
          "results.csv: REFERENCE and PASS totals kept, FAIL and operations left out")


def real(convlab, work):
    out = os.path.join(work, "repeat")
    r = subprocess.run([sys.executable, SCRIPT, convlab, "--runs", "2", "--out", out, "--quick",
                        "--passes", "fwd", "--algos", "auto", "--min-time", "0.01"],
                       capture_output=True, text=True)
    print(r.stdout + r.stderr)
    check(r.returncode == 0, f"two quick runs exit 0 (got {r.returncode})")
    for i in (1, 2):
        engine, peer = {}, {}
        with open(os.path.join(out, f"run{i}", "results.csv")) as f:
            for row in csv.DictReader(l for l in f if not l.startswith("#")):
                if row["operation"] == "total" and row["verified"] in ("PASS", "REFERENCE"):
                    (peer if row["peer"] == "true" else engine)[row["layer"]] = float(
                        row["median_ms"])
        both = [l for l in engine if not peer or l in peer]
        e = sum(engine[l] for l in both)
        m = re.search(rf"run {i}: +([0-9.]+)(?: / +([0-9.]+))? ms", r.stdout)
        check(m is not None and len(both) == 6, f"run {i}: a total over the 6 classroom layers")
        if m:
            check(abs(float(m.group(1)) - e) < 0.0015, f"run {i}: engine total {e:.4f} ms")
            if peer:
                p = sum(peer[l] for l in both)
                check(m.group(2) is not None and abs(float(m.group(2)) - p) < 0.0015,
                      f"run {i}: peer total {p:.4f} ms")
    check(os.path.exists(os.path.join(out, "summary.txt")), "summary.txt written")
    log = os.path.join(out, "run2", "bench.log")
    check(os.path.exists(log) and "verification:" in open(log).read(),
          "each run's printed summary kept (runK/bench.log)")
    # Bad input is refused with status 2, naming the field.
    r = subprocess.run([sys.executable, SCRIPT, convlab, "--runs", "0", "--out", out],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "--runs" in r.stderr, "--runs 0 refused, naming --runs")
    r = subprocess.run([sys.executable, SCRIPT, convlab, "--runs", "1", "--out",
                        "/proc/repeat_bench_test", "--quick"], capture_output=True, text=True)
    check(r.returncode == 2 and "--out" in r.stderr and "Traceback" not in r.stderr,
          "an unwritable --out refused, naming --out")
    r = subprocess.run([sys.executable, SCRIPT, os.path.join(work, "no_such_binary"), "--runs",
                        "1", "--out", out], capture_output=True, text=True)
    check(r.returncode == 2 and "CONVLAB" in r.stderr and "Traceback" not in r.stderr,
          "a missing binary refused, naming CONVLAB")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    mod = load_module()
    synthetic(mod)
    results_file(mod, sys.argv[2])
    real(sys.argv[1], sys.argv[2])
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
