// Helpers of convlab_bench: shape files, timing, result comparison, machine description.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "convlab/problem.hpp"

namespace bench {

// One layer of a shape file, with where it came from (for messages).
struct Layer {
    convlab::Problem problem;
    std::string descriptor;  // the text as written in the file (comments stripped)
    int line = 0;
};

// Reads a shape file (assets/shapes/README.md): one descriptor a line, '#' comments, blank lines
// ignored. Throws convlab::Error naming the file and line of a bad descriptor.
std::vector<Layer> read_shape_file(const std::string& path);

// How many runs a measurement makes. With reps > 0: exactly reps timed runs. Otherwise: at least
// min_reps runs and at least min_seconds of measured time, at most max_reps runs.
struct TimingRule {
    int warmup = 2;
    int reps = 0;
    int min_reps = 3;
    int max_reps = 10000;
    double min_seconds = 0.2;
};

struct Timing {
    double median_ms = 0;
    double min_ms = 0;
    double max_ms = 0;
    int runs = 0;
};

Timing summarize(std::vector<double> seconds);

template <class F>
Timing measure(const TimingRule& rule, F&& run) {
    using Clock = std::chrono::steady_clock;
    for (int i = 0; i < rule.warmup; ++i) run();
    std::vector<double> seconds;
    double total = 0;
    for (;;) {
        const auto t0 = Clock::now();
        run();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        seconds.push_back(s);
        total += s;
        const int n = static_cast<int>(seconds.size());
        if (rule.reps > 0) {
            if (n >= rule.reps) break;
        } else if ((n >= rule.min_reps && total >= rule.min_seconds) || n >= rule.max_reps) {
            break;
        }
    }
    return summarize(std::move(seconds));
}

// Result of comparing a computed tensor with a reference. An element passes when
// |got - ref| <= rtol * max(|ref|, rms(ref)): relative to the element, but never to less than the
// typical magnitude of the result (so that sums that cancel to near zero are not held to an
// unreachable relative bound). NaN or Inf fails.
struct Check {
    bool pass = false;
    double max_err = 0;       // max over elements of |got - ref| / max(|ref|, rms(ref))
    std::size_t bad = 0;      // elements out of tolerance
    std::size_t count = 0;    // elements compared
    double nonzero = 0;       // fraction of non-zero reference elements (trust: dense data)
    std::string note;         // why it failed, or a warning
    std::string str() const;  // "PASS 3.2e-07" / "FAIL 12/4096 1.3e-02"
};

Check compare(const float* got, const float* ref, std::size_t n, double rtol);

// Uniform random values in [-1, 1) from a fixed seed: dense, real-valued data.
void fill_random(std::vector<float>& v, std::uint32_t seed);

std::string cpu_model();   // "model name" of /proc/cpuinfo, or "unknown"
std::string local_date();  // "2025-01-31 14:05:09 CET"
double load_average();     // 1-minute load average of /proc/loadavg, -1 when unknown

// CPU time of the whole machine and of this process, to tell how much other processes ran while
// we measured (on a shared machine they steal cores from both the engine and oneDNN).
struct CpuSample {
    double busy = 0;   // seconds all CPUs spent outside idle/iowait (user, nice, system, irq)
    double steal = 0;  // seconds taken by the hypervisor
    double self = 0;   // user + system seconds of this process (all threads)
    double wall = 0;   // steady clock seconds
    bool ok = false;
};
CpuSample cpu_sample();
// Share of the machine's CPU capacity (0..1) that other processes (and steal) used between a and
// b; negative when unknown.
double foreign_cpu_share(const CpuSample& a, const CpuSample& b, int cpus);

// GFLOP/s of `flops` operations done in `ms` milliseconds.
inline double gflops(double flops, double ms) {
    return ms > 0 ? flops / (ms * 1e6) : 0;
}

}  // namespace bench
