#!/usr/bin/python3
"""Runs `convlab bench` several times and summarises the engine/peer ratio over the runs.

These virtual machines change speed for minutes at a time, and the engine and oneDNN do not
slow down alike (a layer whose data spill from L2 loses more in a slow spell than one that is
compute-bound). One run's ratio then moves by a few percent from run to run; a claim of "at or
below the peer" needs several runs. This script makes them with one command and reads their
results.csv files:

- per run, pass and engine algorithm: the total of the per-layer medians over the layers
  verified on both sides (engine and peer), the peer's total over the same layers, the ratio,
  and how many of those measurements the bench flagged noisy;
- over the runs: the median of the runs' ratios, their range, how many came out at or below 1,
  and the pooled ratio: per layer the median over the runs of its medians, summed.

usage: repeat_bench.py CONVLAB --runs N --out DIR [convlab bench options, without --out]
Each run is `CONVLAB bench OPTIONS --out DIR/runK`, its printed summary (speed probes,
verification, peak resident memory) kept in DIR/runK/bench.log; this script's summary is printed
and written to DIR/summary.txt. Exit 0; 1 when a run's bench exited 1 (a measurement failed verification or
did not run; its rows that passed still count); 2 on bad arguments, a bench that exited 2, or
runs without a single verified row.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
from collections import defaultdict

PASSES = ("fwd", "bwd_data", "bwd_weight")


def fail(msg):
    print(f"repeat_bench: {msg}", file=sys.stderr)
    sys.exit(2)


def read_run(path):
    """{(pass, algorithm): {layer: (median_ms, noisy)}} and the peer's name, from the verified
    'total' rows of one results.csv (failed or not run: left out)."""
    rows = defaultdict(dict)
    peer = None
    with open(path) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            # A peer that served as the reference is marked REFERENCE (checked against itself).
            if r["operation"] != "total" or r["verified"] not in ("PASS", "REFERENCE"):
                continue
            if r["peer"] == "true":
                peer = r["algorithm"]
            key = (r["pass"], r["algorithm"])
            rows[key][(r["layer_index"], r["layer"])] = (float(r["median_ms"]), r["noisy"] == "true")
    return rows, peer


def summarise(runs, peer):
    """The summary's lines: per pass and engine algorithm, each run and the pooled totals."""

    def totals(e, p, w=9):  # "E / P ms = Rx" against the peer, "E ms" without one
        return f"{e:{w}.3f} / {p:{w}.3f} ms = {e / p:.3f}x" if peer else f"{e:{w}.3f} ms"

    out = []
    keys = sorted({k for run in runs for k in run},
                  key=lambda k: (PASSES.index(k[0]) if k[0] in PASSES else 9, k[1]))
    for ps, algo in keys:
        if algo == peer:
            continue
        out.append(f"{ps} {algo}" + (f" / {peer}" if peer else ""))
        ratios = []
        per_layer = defaultdict(lambda: ([], []))  # layer: (engine ms over runs, peer ms)
        for i, run in enumerate(runs, 1):
            mine = run.get((ps, algo), {})
            theirs = run.get((ps, peer), {}) if peer else {}
            layers = [l for l in mine if not peer or l in theirs]
            if not layers:
                out.append(f"  run {i}: no layer verified" + (" on both sides" if peer else ""))
                continue
            for l in layers:
                per_layer[l][0].append(mine[l][0])
                per_layer[l][1].append(theirs[l][0] if peer else 0.0)
            e = sum(mine[l][0] for l in layers)
            p = sum(theirs[l][0] for l in layers) if peer else 0.0
            noisy = sum(mine[l][1] + (theirs[l][1] if peer else 0) for l in layers)
            if peer:
                ratios.append(e / p)
            out.append(f"  run {i}: {totals(e, p)}  ({len(layers)} layers, {noisy} noisy)")
        if ratios:
            at_or_below = sum(r <= 1.0 for r in ratios)
            out.append(f"  runs' ratios: median {statistics.median(ratios):.3f}x, "
                       f"{min(ratios):.3f}-{max(ratios):.3f}, at or below 1 in {at_or_below} of "
                       f"{len(ratios)}")
        # Pooled: the layers measured in every run, each its median over the runs.
        full = [l for l, (m, _) in per_layer.items() if len(m) == len(runs)]
        if full:
            e = sum(statistics.median(per_layer[l][0]) for l in full)
            p = sum(statistics.median(per_layer[l][1]) for l in full)
            out.append(f"  pooled (each layer's median over the runs, {len(full)} layers): "
                       f"{totals(e, p, 0)}")
    return out


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="repeat_bench.py CONVLAB --runs N --out DIR [convlab bench options]")
    ap.add_argument("convlab", help="the convlab binary")
    ap.add_argument("--runs", type=int, required=True, help="runs of the bench, back to back")
    ap.add_argument("--out", required=True, help="directory of the runs (DIR/runK) and summary")
    a, bench_args = ap.parse_known_args()
    if a.runs < 1:
        fail("--runs: must be >= 1")
    if "--out" in bench_args or any(x.startswith("--out=") for x in bench_args):
        fail("--out: give it once, to this script (each run writes DIR/runK)")
    if "--replot" in bench_args:
        fail("--replot: measures nothing; run convlab bench --replot on a run's results.json")
    if not (os.path.isfile(a.convlab) and os.access(a.convlab, os.X_OK)):
        fail(f"CONVLAB: {a.convlab}: not an executable file")
    try:
        os.makedirs(a.out, exist_ok=True)
        probe = os.path.join(a.out, "summary.txt")
        open(probe, "a").close()
    except OSError as e:
        fail(f"--out: {a.out}: cannot write there ({e.strerror})")
    runs, peers, status = [], set(), 0
    for i in range(1, a.runs + 1):
        run_dir = os.path.join(a.out, f"run{i}")
        cmd = [a.convlab, "bench", *bench_args, "--out", run_dir]
        print(f"run {i} of {a.runs}: {' '.join(cmd)}", flush=True)
        try:
            os.makedirs(run_dir, exist_ok=True)
            with open(os.path.join(run_dir, "bench.log"), "w") as log:  # its summary lines
                r = subprocess.run(cmd, stdout=log)
        except OSError as e:
            fail(f"run {i}: {e}")
        if r.returncode == 2:
            fail(f"run {i}: convlab bench exited 2 (bad input; its message is above)")
        if r.returncode not in (0, 1):
            fail(f"run {i}: convlab bench exited {r.returncode}")
        status = max(status, r.returncode)
        results = os.path.join(run_dir, "results.csv")
        if not os.path.exists(results):
            fail(f"run {i}: no {results}")
        rows, peer = read_run(results)
        runs.append(rows)
        if peer:
            peers.add(peer)
    if len(peers) > 1:
        fail(f"the runs name different peers: {', '.join(sorted(peers))}")
    if not any(runs):
        fail("no verified measurement in any run")
    lines = summarise(runs, next(iter(peers)) if peers else None)
    if status == 1:
        lines.append("some measurements failed verification or did not run: see each run's "
                     "results.csv (verified column); the totals above leave them out")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(f"{a.runs} runs of: convlab bench {' '.join(bench_args)}\n{text}")
    return status


if __name__ == "__main__":
    sys.exit(main())
