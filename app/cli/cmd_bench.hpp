// `convlab bench` as functions the rest of the program can call in-process (the demo, the app).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "convlab/bench.hpp"

namespace convlab::cli {

// Runs the quick benchmark (assets/shapes/classroom.txt, batch 1, every pass and algorithm,
// oneDNN when built with it, short timing) and writes results.csv, results.json and the charts
// (SVG, PNG, PDF) to `dir` (created when missing). Progress and a summary go to `log`.
// Returns 0 when every measurement was verified, 1 when some failed verification (they are
// marked FAIL and not plotted), 2 on an error (message on `log`).
int write_quick_timings(const std::string& dir, std::ostream& log);

// Writes results.csv, results.json and every standard chart in three formats to `dir`; returns
// the paths written. A chart these results cannot give is named on `log` with why. Throws Error.
std::vector<std::string> write_bench_outputs(const bench::Results& r, const std::string& dir,
                                             std::ostream& log);

// Per pass and algorithm (and the peer): sum of per-layer medians over verified layers, the
// layer count, and how many of the layers via_forward beats col2im. For terminals and reports.
void print_bench_summary(const bench::Results& r, std::ostream& out);

}  // namespace convlab::cli
