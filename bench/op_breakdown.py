#!/usr/bin/python3
"""Where an algorithm's time goes: its layers against the best of other algorithms, by operation.

Reads the results.csv of one or more `convlab bench` runs (several runs are pooled as
repeat_bench.py pools them: per layer, the median over the runs of each median). For the
algorithm PASS:NAME it prints, as markdown tables:

- the totals over the layers where it and a baseline were verified: its time, the baseline's
  (per layer the fastest of the --against algorithms), and the ratio;
- the --top layers with the largest excess over the baseline: both times, the ratio, the
  excess and its share of the whole excess, and the algorithm's operations on that layer (the
  spans the engine times: im2col, fractal_gemm, unpack ...), largest first, each with its share
  of the layer's time; "other" is the part of the total no operation covers.

usage: op_breakdown.py RESULTS.csv [RESULTS.csv ...] --algo PASS:NAME [--against A,B] [--top N]
--against defaults to every other engine algorithm of the pass except the DaVinci ones
(fractal...), that is the engine's best NCHW algorithm. Exit 0; 2 on bad arguments, unreadable
files, or no layer measured on both sides.
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict


def fail(msg):
    print(f"op_breakdown: {msg}", file=sys.stderr)
    sys.exit(2)


def read_runs(paths):
    """{(pass, algorithm): {layer: [total_ms per run]}} and {(pass, algorithm, layer): {op:
    [ms per run]}}, engine rows verified PASS only, in layer order of the first file."""
    totals = defaultdict(lambda: defaultdict(list))
    ops = defaultdict(lambda: defaultdict(list))
    order = []
    for path in paths:
        try:
            with open(path, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            fail(f"{path}: cannot be read as a results.csv ({e})")
        need = {"layer", "pass", "algorithm", "peer", "operation", "median_ms", "verified"}
        if rows and not need <= set(rows[0]):
            fail(f"{path}: not a results.csv of convlab bench (columns {sorted(need)} needed)")
        for r in rows:
            if r["peer"] == "true" or r["verified"] != "PASS":
                continue
            try:
                ms = float(r["median_ms"])
            except ValueError:
                fail(f"{path}: median_ms '{r['median_ms']}' is not a number")
            key = (r["pass"], r["algorithm"])
            if r["layer"] not in order:
                order.append(r["layer"])
            if r["operation"] == "total":
                totals[key][r["layer"]].append(ms)
            else:
                ops[(r["pass"], r["algorithm"], r["layer"])][r["operation"]].append(ms)
    return totals, ops, order


def breakdown(totals, ops, order, pas, algo, against, top):
    """The report's lines."""
    mine = {l: statistics.median(v) for l, v in totals.get((pas, algo), {}).items()}
    if not mine:
        fail(f"no verified {pas}:{algo} rows in the files")
    if against is None:
        against = sorted(a for (p, a) in totals if p == pas and a != algo
                         and not a.startswith("fractal"))
    base = {}
    for layer in mine:
        best = None
        for a in against:
            runs = totals.get((pas, a), {}).get(layer)
            if runs:
                t = statistics.median(runs)
                if best is None or t < best[0]:
                    best = (t, a)
        if best:
            base[layer] = best
    layers = [l for l in order if l in mine and l in base]
    if not layers:
        fail(f"no layer where {pas}:{algo} and one of {', '.join(against) or '(none)'} "
             "were both verified")
    t_mine = sum(mine[l] for l in layers)
    t_base = sum(base[l][0] for l in layers)
    out = [f"{pas} {algo} against the best of {', '.join(against)}, {len(layers)} layers:",
           "",
           "| layers | {} ms | best of the others, ms | ratio |".format(algo),
           "| ---: | ---: | ---: | ---: |",
           f"| {len(layers)} | {t_mine:.3f} | {t_base:.3f} | {t_mine / t_base:.2f}x |",
           ""]
    excess = {l: mine[l] - base[l][0] for l in layers}
    whole = sum(max(e, 0.0) for e in excess.values())
    worst = sorted(layers, key=lambda l: -excess[l])[:top]
    out += ["| layer | {} ms | best ms (algorithm) | ratio | excess ms | share of the excess | "
            "{}'s operations, ms (share of its time) |".format(algo, algo),
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for l in worst:
        o = {k: statistics.median(v) for k, v in ops.get((pas, algo, l), {}).items()}
        parts = sorted(o.items(), key=lambda kv: -kv[1])
        rest = mine[l] - sum(o.values())
        if rest > 0.005 * mine[l]:
            parts.append(("other", rest))
        text = ", ".join(f"{k} {v:.3f} ({100 * v / mine[l]:.0f}%)" for k, v in parts)
        share = f"{100 * max(excess[l], 0.0) / whole:.0f}%" if whole > 0 else "-"
        out.append(f"| {l} | {mine[l]:.3f} | {base[l][0]:.3f} ({base[l][1]}) | "
                   f"{mine[l] / base[l][0]:.2f}x | {excess[l]:.3f} | {share} | {text} |")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="results.csv of convlab bench runs")
    ap.add_argument("--algo", required=True, help="PASS:NAME, e.g. bwd_data:fractal_via_forward")
    ap.add_argument("--against", help="comma-separated algorithm names of the same pass")
    ap.add_argument("--top", type=int, default=5, help="layers listed (default 5)")
    a = ap.parse_args(argv)
    if ":" not in a.algo:
        fail(f"--algo '{a.algo}': must be PASS:NAME (fwd, bwd_data or bwd_weight)")
    pas, algo = a.algo.split(":", 1)
    if pas not in ("fwd", "bwd_data", "bwd_weight"):
        fail(f"--algo '{a.algo}': the pass must be fwd, bwd_data or bwd_weight")
    if a.top < 1:
        fail(f"--top {a.top}: must be at least 1")
    against = [x for x in a.against.split(",") if x] if a.against else None
    totals, ops, order = read_runs(a.results)
    print("\n".join(breakdown(totals, ops, order, pas, algo, against, a.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
