// Helpers of convlab_bench: shape files, timing, result comparison, machine description. They
// live in the benchmark runner (bench/runner, convlab/bench.hpp); this header names them in the
// bench namespace, where convlab_bench uses them.
#pragma once

#include "convlab/bench.hpp"

namespace bench {

using convlab::bench::Check;
using convlab::bench::compare;
using convlab::bench::cpu_model;
using convlab::bench::cpu_sample;
using convlab::bench::CpuSample;
using convlab::bench::fill_random;
using convlab::bench::foreign_cpu_share;
using convlab::bench::gflops;
using convlab::bench::kSlowMachine;
using convlab::bench::Layer;
using convlab::bench::load_average;
using convlab::bench::local_date;
using convlab::bench::measure;
using convlab::bench::measure_interleaved;
using convlab::bench::read_shape_file;
using convlab::bench::summarize;
using convlab::bench::time_window;
using convlab::bench::Timing;
using convlab::bench::TimingRule;
using convlab::bench::WindowSpeed;

}  // namespace bench
