// The benchmark runner (library convlab_benchlib, outside the engine): times the engine's
// algorithms (and a peer library, through an interface the runner only declares) per layer, pass
// and operation, and verifies every measured configuration against a reference. The one
// benchmark loop: the app runs it on a worker thread (progress callback, cancel flag); `convlab
// bench` and convlab_bench's table run it directly. No UI code.
//
// Index:
//   [SECTION] shape files
//   [SECTION] statistics and timing
//   [SECTION] verification
//   [SECTION] machine record
//   [SECTION] peer interface
//   [SECTION] configuration and results
//   [SECTION] the runner
//   [SECTION] results files (CSV, JSON) and reading them back
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/problem.hpp"
#include "convlab/profiler.hpp"

namespace convlab::bench {

// [SECTION] shape files

// One layer of a shape file, with where it came from (for messages).
struct Layer {
    Problem problem;
    std::string descriptor;  // the text as written in the file (comments stripped)
    int line = 0;
};

// Reads a shape file (assets/shapes/README.md): one descriptor a line, '#' comments, blank lines
// ignored. Throws Error naming the file and line of a bad descriptor.
std::vector<Layer> read_shape_file(const std::string& path);

// [SECTION] statistics and timing

// How many runs a measurement makes. With reps > 0: exactly reps timed runs. Otherwise: at least
// min_reps runs and at least min_seconds of measured time, at most max_reps runs.
struct TimingRule {
    int warmup = 2;
    int reps = 0;
    int min_reps = 3;
    int max_reps = 10000;
    double min_seconds = 0.2;
};

// Median / min / max and quartiles of repeated runs, in milliseconds.
struct Stats {
    double median_ms = 0;
    double min_ms = 0;
    double max_ms = 0;
    double q1_ms = 0;  // first quartile (25%)
    double q3_ms = 0;  // third quartile (75%)
    int runs = 0;
    // Calls per timed run: 1, or where the clock ticks coarsely (the browser's) a batch of calls
    // timed as one run, whose time divided by the count is the run's time (measure_interleaved).
    int calls = 1;
    // Spread of the repeats, (q3 - q1) / median: the noise indicator (0 = perfectly steady).
    // Interquartile, because on a shared machine max is one preempted run (a 4 ms time slice).
    double spread() const { return median_ms > 0 ? (q3_ms - q1_ms) / median_ms : 0; }
};
using Timing = Stats;  // the name convlab_bench uses

// Median of an even count is the mean of the two middle values; quartiles interpolate linearly
// between order statistics (as numpy's default).
Stats summarize(std::vector<double> seconds);

template <class F>
Stats measure(const TimingRule& rule, F&& run) {
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

// The tick of `clock` (seconds; the steady clock when empty): the smallest nonzero difference of
// successive reads, over a few ticks; 0 when it did not move in 100000 reads. A few tens of
// nanoseconds on Linux (the read's own cost); 100 us in Chromium, which coarsens the page's clock.
double clock_tick(const std::function<double()>& clock = {});
// A tick above kCoarseTick is coarse: a call shorter than a tick would time as 0 or as one tick.
// measure_interleaved then times each run as a batch of calls spanning at least kBatchTicks
// ticks (kMaxBatchCalls at most), so that the tick is at most 1% of a run's time.
inline constexpr double kCoarseTick = 1e-6;
inline constexpr double kBatchTicks = 100;
inline constexpr int kMaxBatchCalls = 1 << 14;

// Several measurements side by side: a warm-up of each, then rounds in which each function that
// has not yet met the rule runs once (the first of the round rotating), so that contention that
// comes and goes on a shared machine falls on all of them alike and their ratios hold. A function
// leaves the rounds when it has met the rule on its own runs.
std::vector<Stats> measure_interleaved(const TimingRule& rule,
                                       const std::vector<std::function<void()>>& runs);

// The general form the runner uses. run(f, timed) runs function f once: first rule.warmup
// untimed calls of each (timed = false), then the rounds as above. On a coarse clock (kCoarseTick)
// each function's batch size is found after its warm-up, by untimed batches doubled from one call
// until a batch spans kBatchTicks ticks, and each of its timed runs is that many calls in a row
// (Stats::calls). after(f, seconds), when set, is called right after each timed run of f, outside
// the timed region, with the run's time per call (to collect what the run's calls recorded, e.g.
// their profiler spans, summed over the batch). clock, when set, replaces the steady clock
// (seconds; tests give a fake one so that no result depends on the machine's speed).
struct Interleaved {
    std::size_t count = 0;
    std::function<void(std::size_t f, bool timed)> run;
    std::function<void(std::size_t f, double seconds)> after;
    std::function<double()> clock;
};
std::vector<Stats> measure_interleaved(const TimingRule& rule, const Interleaved& fns);

// GFLOP/s of `flops` operations done in `ms` milliseconds (also GB/s of bytes).
inline double gflops(double flops, double ms) {
    return ms > 0 ? flops / (ms * 1e6) : 0;
}

// [SECTION] verification

// Result of comparing a computed tensor with a reference. An element passes when
// |got - ref| <= rtol * max(|ref|, rms(ref)): relative to the element, but never to less than the
// typical magnitude of the result (so that sums that cancel to near zero are not held to an
// unreachable relative bound). NaN or Inf fails; an all-zero reference fails (proves nothing).
struct Check {
    bool pass = false;
    double max_err = 0;       // max over elements of |got - ref| / max(|ref|, rms(ref))
    double max_abs = 0;       // max over elements of |got - ref|
    std::size_t bad = 0;      // elements out of tolerance
    std::size_t count = 0;    // elements compared
    double nonzero = 0;       // fraction of non-zero reference elements (trust: dense data)
    std::string note;         // why it failed, or a warning
    std::string str() const;  // "PASS 3.2e-07" / "FAIL 12/4096 1.3e-02"
};

Check compare(const float* got, const float* ref, std::size_t n, double rtol);

// Storage aligned to 64 bytes (a cache line), as the engine's Tensor and a framework's tensors
// are: the layers' buffers then start where such tensors would (a plain vector's large buffer
// starts 16 bytes past a page, so every 64-byte store to a row of it spanned two lines).
// Buffers of 1 MiB or more are mapped pages of their own, returned to the system when freed
// (from glibc's aligned_alloc the bench's batch-32 peak resident memory grew by 120 MiB).
void* line_aligned_alloc(std::size_t bytes);  // throws std::bad_alloc
void line_aligned_free(void* p, std::size_t bytes);
template <class T>
struct LineAligned {
    using value_type = T;
    LineAligned() = default;
    template <class U>
    LineAligned(const LineAligned<U>&) {}
    T* allocate(std::size_t n) { return static_cast<T*>(line_aligned_alloc(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) { line_aligned_free(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const LineAligned<U>&) const {
        return true;
    }
};
using Floats = std::vector<float, LineAligned<float>>;

// Uniform random values in [-1, 1) from a fixed seed: dense, real-valued data.
void fill_random(Floats& v, std::uint32_t seed);

// What travels with every timing: was the measured configuration's output right?
struct Verification {
    bool pass = false;
    bool checked = false;        // false: no reference could be computed (never plotted)
    double max_abs = 0;          // max |got - ref|
    double max_rel = 0;          // max |got - ref| / max(|ref|, rms(ref))
    std::string reference;       // "direct", "peer:oneDNN", "algo:im2col_gemm", "self" ...
    std::string note;            // why it failed, or why the reference is not direct
    std::string status() const;  // "PASS", "FAIL", "UNCHECKED", "REFERENCE"
};

// [SECTION] machine record

std::string cpu_model();   // "model name" of /proc/cpuinfo, or "unknown"
std::string local_date();  // "2025-01-31 14:05:09 CET"
std::string utc_date();    // "2025-01-31T13:05:09Z"
double load_average();     // 1-minute load average of /proc/loadavg, -1 when unknown

// CPU time of the whole machine and of this process, to tell how much other processes ran while
// we measured (on a shared machine they steal cores from both the engine and the peer).
struct CpuSample {
    double busy = 0;   // seconds all CPUs spent outside idle/iowait (user, nice, system, irq)
    double steal = 0;  // seconds taken by the hypervisor
    double self = 0;   // user + system seconds of this process (all threads)
    double wall = 0;   // steady clock seconds
    double tick = 0;   // seconds of one step of the machine's counters (busy, steal): 1/CLK_TCK
    bool ok = false;
};
CpuSample cpu_sample();
// Share of the machine's CPU capacity (0..1) that other processes (and steal) used between a and
// b, at least: the machine's counters step a tick (10 ms) per CPU, this process's time is exact,
// so up to one tick per CPU of "foreign" time may be counting error and is not counted (a 50 ms
// window on 2 CPUs would otherwise read 10% from nothing). Negative when unknown.
double foreign_cpu_share(const CpuSample& a, const CpuSample& b, int cpus);

// fp32 peak of this machine, measured: `threads` threads each run independent chains of vector
// FMAs on registers only (no memory traffic), in 12 rounds filling about `seconds`; the best
// round counts. GFLOP/s, counting an FMA as 2. The runner measures it before and after the run
// and keeps the higher (other processes may hold cores at either time). See Machine::peak_gflops.
// `clock` (seconds; default the steady clock) times the rounds: each lasts at least kBatchTicks
// of its ticks, so that a coarse clock (a browser's 100 us) never times a round as 0, which
// would read as an infinite peak. 0 when no round could be timed.
double measure_fp32_peak(int threads, double seconds = 0.2,
                         const std::function<double()>& clock = {});

// The machine's fp32 FMA rate now, GFLOP/s: `threads` OpenMP threads (warm, as the engine's) each
// time their own register-only FMA chains, in 4 rounds filling about `seconds`; the rounds' median
// of the threads' summed rates. A probe of a few milliseconds around each measured window: these
// virtual machines slow down for seconds to minutes at a time (a 3x3 layer and oneDNN's run of it
// both at half speed) without any process of theirs, or steal time, showing it. Rounds span
// kBatchTicks ticks of `clock` (the steady clock when empty) at least.
double probe_fp32_rate(int threads, double seconds = 0.004,
                       const std::function<double()>& clock = {});

struct Machine {
    std::string cpu = "unknown";
    int logical_cpus = 0;
    int threads = 0;  // threads used by the engine and the peer
    std::string compiler;
    std::string flags;       // compile flags of the engine (configure time)
    std::string engine_isa;  // vector ISA the engine was compiled for, and its kernels chose
    std::string version;     // engine version
    std::string commit;      // git commit at configure time ("-dirty": uncommitted changes)
    std::string date;        // UTC, ISO 8601
    std::string peer;        // the peer's description, or "none"
    int physical_cores = 0;  // "cpu cores" of /proc/cpuinfo (0 unknown)
    // fp32 peak (0 = not measured): one thread's measured FMA rate times `threads` when the
    // threads fit on distinct physical cores, else all threads measured together. Per thread,
    // because on a shared machine other processes may hold a core during any joint measurement.
    double peak_gflops = 0;
    double peak_gflops_1t = 0;  // one thread, measured
    double load_before = -1;    // 1-minute load average before the run
    double foreign_cpu = -1;    // share of the CPUs other processes used during the run (0..1)
    double median_spread = 0;   // median over measurements of (q3 - q1) / median of the repeats
    double clock_tick = 0;      // seconds of the timing clock's tick (clock_tick); 0 unknown
    // One line: "AMD EPYC (2 logical CPUs), 2 threads | GCC 12.2 -O3 -march=native | ..."
    std::string summary() const;
    std::string noise() const;  // "other processes used 12% of the CPUs; repeats spread 4%"
};

// Fills everything but peer, peak, the noise figures and threads.
Machine describe_machine();

// Measures the fp32 peak for `threads` threads into m.peak_gflops / m.peak_gflops_1t, keeping
// the higher of what m already holds (the runner calls it before and after a run).
void measure_machine_peak(Machine& m, int threads, double seconds = 0.1);

// Peak resident memory of this process so far, bytes: VmHWM of /proc/self/status, else
// getrusage's ru_maxrss; 0 when unknown.
// Dense buffers of one layer for the measurement loops (ConvLab's plain layouts).
struct Buffers {
    Floats src, wei, diff_dst;  // inputs (random, dense)
    Floats out, ref;            // output under test, reference
};
// Elements of the output of `pass`: dst, diff_src or diff_wei.
std::size_t output_size(const Problem& p, Pass pass);
// The ConvArgs of `pass` over b's inputs, writing to `out`.
ConvArgs args_for(Pass pass, Buffers& b, float* out);

std::size_t peak_rss_bytes();

// [SECTION] peer interface

// One convolution in a peer library (oneDNN ...), for the passes it was created for. The runner
// defines the interface only; the peer lives beside it (bench/onednn_peer.*).
class PeerConv {
  public:
    virtual ~PeerConv() = default;
    virtual bool has(Pass pass) const = 0;           // a primitive exists for the pass
    virtual std::string error(Pass pass) const = 0;  // why not, when !has(pass)
    virtual std::string impl(Pass pass) const = 0;   // the implementation name, e.g. "jit:avx2"
    // Plain inputs: src (N,C,..), wei (K,C/G,k..), diff_dst (N,K,out..). Not timed.
    virtual void set_inputs(const float* src, const float* wei, const float* diff_dst) = 0;
    virtual void run(Pass pass) = 0;                   // executes and waits (the timed region)
    virtual void output(Pass pass, float* plain) = 0;  // the result in the plain layout
};

struct PeerSpec {
    std::string name;         // "oneDNN" (the column name)
    std::string description;  // "oneDNN 2.6.3 (CPU runtime OpenMP, ISA avx512_core_bf16)"
    // The peer reorders its weights into a layout of its own before its timed calls (oneDNN's
    // blocked layouts); false where it reads them as given (oneDNN on NCHW/OIHW): then the
    // engine's weights are packed per call by default too (Config::prepared_weights).
    bool reorders_weights = true;
    std::function<void(int threads)> set_threads;
    std::function<std::unique_ptr<PeerConv>(const Problem&, const std::vector<Pass>&)> create;
    // Storage dtypes besides fp32 that the peer computes in (oneDNN: bf16 operands with fp32
    // accumulation), each made by create_dtype; a run with such a Config::dtype times the peer in
    // it beside the fractal algorithms and checks it against the fp32 reference with that dtype's
    // tolerance (never the reference itself). Empty: fp32 only, skipped with a note otherwise.
    std::vector<DType> dtypes;
    std::function<std::unique_ptr<PeerConv>(const Problem&, const std::vector<Pass>&, DType)>
        create_dtype;
    bool computes(DType t) const {
        return t == DType::f32 ||
               (create_dtype && std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end());
    }
};

// [SECTION] configuration and results

struct Results;

// A word of a shell command line (Config::command), single-quoted unless it is plainly safe.
std::string shell_quote(const std::string& s);

struct Config {
    std::vector<Layer> layers;
    std::optional<dim_t> batch;  // replaces every layer's mb; nullopt keeps the file's
    std::vector<Pass> passes{Pass::Forward, Pass::BackwardData, Pass::BackwardWeight};
    // Algorithm names; each is timed in every selected pass that has it ("PASS:NAME" for one
    // pass). Empty: every algorithm of the registry except direct.
    std::vector<std::string> algos;
    // Algorithms outside the registry (tests: a deliberately wrong one), selected like others.
    std::vector<Algorithm> extra_algorithms;
    int threads = 2;  // 0 = all cores
    // Storage dtype of the timed algorithms. fp16 / bf16 only for the algorithms that take a
    // storage dtype (supports_storage_dtype: the DaVinci fractal ones, C0 16, fp32
    // accumulation); every other algorithm is fp32 only, and the peer unless it computes the
    // dtype (PeerSpec::computes: oneDNN's bf16). With fp16 / bf16, an algorithm list left empty
    // (or "all") keeps the capable ones and the rest is skipped with a note in Results::notes; a
    // named fp32-only algorithm is an Error; a peer without the dtype is skipped (noted). The
    // reference of the check stays fp32 (direct loops, or an fp32 algorithm).
    DType dtype = DType::f32;
    TimingRule timing;
    // Tolerance of the check, per dtype (the one of `dtype` applies; see Check). fp16 / bf16
    // storage rounds every operand to 11 / 8 significant bits (unit roundoff u = 2^-11 / 2^-8);
    // the error of a sum relative to its rms is then about u whatever its length, and its
    // maximum over a layer's outputs about 5u (ResNet-50, batch 1: fp16 2.5e-3, bf16 2.1e-2
    // at most, the 1x1 stride-2 backward-data layers, whose many zeros halve the rms). About 8u.
    double rtol = 1e-4;
    double rtol_fp16 = 4e-3;
    double rtol_bf16 = 3e-2;
    // Reference of the check: "auto" (direct loops when the layer's FLOPs are at most
    // direct_max_flops, else the peer, else the first other selected algorithm of the pass:
    // said so in the result), "direct", "peer", or an algorithm name.
    std::string reference = "auto";
    double direct_max_flops = 4e8;
    std::optional<PeerSpec> peer;
    bool measure_peak = true;
    // fwd and bwd_data: the weights packed once per layer and pass by prepare_weights, outside
    // the timed region (noted in Results::notes), as the peer's are reordered into its blocked
    // layout before its calls; false: each timed call packs its own (its pack_wei, fliprot).
    // `convlab bench` sets it from PeerSpec::reorders_weights unless --weights is given.
    bool prepared_weights = true;
    // The fast paths' rules of every call, the reference's and prepare_weights' too (`convlab
    // bench` and convlab_bench take tuning_from_environment()).
    Tuning tuning{};
    // A pass's window of alternating rounds whose speed probe (before or after it) came out
    // below kSlowMachine is timed again, up to this many times; of the attempts, the one with
    // the highest speed is kept (Measurement::retimed counts the extra ones). The peer and the
    // algorithms share each window, so their ratios come from one machine state either way.
    // 0: never. Needs a measured peak (measure_peak).
    int retime_slow = 2;
    // All passes of a layer timed in one window of alternating rounds (the forward and the
    // backward data side by side), so that a ratio between passes (relative_time_chart) comes
    // from one machine state, as a ratio within a pass does; false: one window per pass.
    bool interleave_passes = false;
    // The peer and each algorithm timed in rounds of their own, one after another, instead of
    // alternating: each call then finds its data in the caches as its own last call left them
    // (hot), not as another's run left them (convlab_bench --alone).
    bool alone = false;
    // Keep each measurement's timed calls as spans (Measurement::trace), for write_trace; the
    // first kMaxTracedCalls calls of each, so a fast layer timed thousands of times stays small.
    bool trace = false;
    static constexpr std::size_t kMaxTracedCalls = 50;
    // The speed probe (probe_fp32_rate by default; tests give their own): FMA GFLOP/s on that
    // many threads.
    std::function<double(int threads)> speed_probe;
    // The clock of the timed runs, seconds (Interleaved::clock; tests give a coarse one, as the
    // browser's); empty: the steady clock.
    std::function<double()> clock;
    std::string shapes_file;  // for the record
    std::string command;      // the command line that reproduces the run
    struct Progress {
        std::size_t done = 0, total = 0;  // measurements
        std::string what;                 // "res2a_branch2b bwd_data col2im"
        // Everything measured so far (valid during the callback only): the app copies it to
        // draw the charts as results arrive.
        const Results* results = nullptr;
    };
    std::function<void(const Progress&)> progress;  // called from the runner's thread
    const std::atomic<bool>* cancel = nullptr;      // set to stop after the current measurement
};

// Above this share of the CPUs used by other processes while it was timed, a measurement is
// "noisy": marked so in the files and drawn distinguishably (hatched, '~') on the charts.
inline constexpr double kNoisyForeignCpu = 0.05;
// Below this share of the run's measured fp32 peak, probed just before or just after it was timed
// (probe_fp32_rate), the machine itself was slow: also "noisy".
inline constexpr double kSlowMachine = 0.9;

// One timed window with the machine's speed probed just before and just after it (`probe`, by
// default probe_fp32_rate): window() times the rounds, and the window's speed is the lower probe
// over `peak` (-1 without a peak: not probed). While that is below kSlowMachine the window runs
// again, up to `retimes` more times, unless stop() says otherwise. keep(speed) is called after
// the first attempt and after each one faster than all before it, for the caller to keep that
// attempt's figures. Returns the kept attempt's speed and how many times the window ran again.
struct WindowSpeed {
    double speed = -1;
    int retimed = 0;
};
WindowSpeed time_window(int threads, double peak, int retimes, const std::function<void()>& window,
                        const std::function<void(double speed)>& keep,
                        const std::function<double(int threads)>& probe = {},
                        const std::function<bool()>& stop = {});

// One measured (layer, pass, algorithm): the total and each operation (profiler span), with the
// verification of that configuration.
struct Measurement {
    std::size_t layer = 0;  // index in Results::layers
    Pass pass = Pass::Forward;
    std::string algorithm;  // the engine's name, or the peer's name
    bool peer = false;
    dim_t batch = 0;  // the layer's N as measured (0: unknown, files from before the column)
    int threads = 0;  // threads of the engine and the peer (0: unknown)
    DType dtype = DType::f32;  // storage dtype it ran with
    bool ran = false;          // false: it threw (error says why); never plotted
    std::string error;
    std::string impl;  // peer: its implementation name
    Verification check;
    Stats total;  // wall time of the whole call
    struct Op {
        std::string name;  // profiler span: im2col, gemm, col2im, zero-insert ...
        Stats time;        // per call (all spans of that name in one call, summed)
    };
    std::vector<Op> ops;  // in order of first use
    // The timed calls as they happened (Config::trace; at most Config::kMaxTracedCalls, the
    // first ones): each call's span and its operations' spans, for write_trace. Not kept in
    // the results files.
    struct TracedCall {
        std::chrono::steady_clock::time_point start, end;
        std::vector<Profiler::Event> ops;
    };
    std::vector<TracedCall> trace;
    double flops = 0;         // 2*N*K*(C/G)*prod(O)*prod(k): padding taps included (CK)
    double flops_no_pad = 0;  // only taps inside the input, as benchdnn counts (<= flops)
    double bytes = 0;         // tensors read and written once, fp32
    // Share of the CPUs (0..1) other processes used while this was timed (the window of its
    // pass's alternating rounds, shared with the peer and the other algorithms); -1 unknown.
    // Above kNoisyForeignCpu the time is suspect (they took cores from it): noisy().
    double foreign_cpu = -1;
    // The machine's FMA rate just before and just after that window, the lower of the two, as a
    // share of Machine::peak_gflops (probe_fp32_rate); -1 unknown (no peak measured, or a file
    // from before the column). Below kSlowMachine the machine was slow: noisy().
    double speed = -1;
    // Times its window was timed again after a speed below kSlowMachine (Config::retime_slow);
    // the figures are those of the fastest-machine attempt.
    int retimed = 0;
    bool noisy() const {
        return foreign_cpu > kNoisyForeignCpu || (speed >= 0 && speed < kSlowMachine);
    }
    double gflops() const { return bench::gflops(flops, total.median_ms); }
    double gflops_benchdnn() const { return bench::gflops(flops_no_pad, total.median_ms); }
    double gbps() const { return bench::gflops(bytes, total.median_ms); }
    // A valid time: it ran and its verification passed (or it is the direct reference itself).
    bool valid() const { return ran && check.pass; }
};

struct LayerInfo {
    std::string name;        // "resnet_50:conv1"
    std::string descriptor;  // canonical, with the batch used
};

// One (batch, threads) combination of a sweep (run_sweep) and what was measured with it.
struct SweepPoint {
    dim_t batch = 0;  // 0: each layer's own
    int threads = 0;
    double peak_gflops = 0;     // the fp32 peak for these threads (Machine::peak_gflops)
    double peak_gflops_1t = 0;  // one thread
    double foreign_cpu = -1;    // share of the CPUs others used during this combination
};

struct Results {
    Machine machine;
    std::vector<LayerInfo> layers;
    std::vector<Measurement> rows;
    std::string shapes_file;
    std::string command;
    dim_t batch = 0;  // 0: each layer's own
    DType dtype = DType::f32;
    TimingRule timing;
    double rtol = 0;  // the tolerance of the checks (the one of dtype)
    // What the run left out and why ("dtype fp16: im2col_gemm, ... are fp32 only: skipped").
    std::vector<std::string> notes;
    bool cancelled = false;
    // The combinations of a sweep, in the order they ran; empty for a single run (whose batch
    // and threads are those above). Rows tell theirs apart by Measurement::batch / threads.
    std::vector<SweepPoint> sweep;
    // Every measurement that ran was verified and passed.
    std::size_t passed() const;
    std::size_t failed() const;  // failed, unchecked or errored
    std::size_t noisy() const;   // valid measurements that are noisy()
    // "the machine's FMA rate around the timed windows: 93-101% of its peak; 4 of 120
    // measurements timed below 90% (noisy)", or "" where no speed was probed.
    std::string speed_summary() const;
    std::string verification_summary() const;  // "all 100 measurements verified (PASS) ..."
    const Measurement* find(std::size_t layer, Pass pass, const std::string& algo) const;
};

// [SECTION] the runner

// True when `algo` of `pass` can run with fp16 / bf16 storage (the DaVinci fractal algorithms:
// fwd fractal, bwd_data and bwd_weight fractal_via_forward).
bool supports_storage_dtype(Pass pass, std::string_view algo);

// The checks run() makes of the algorithm list and the reference, alone, so that a command can
// refuse them before it prints or measures anything. Error "algos: ..." / "reference: ...".
void check_selection(const Config& cfg);

// Runs the configuration. Throws Error for a bad configuration (unknown algorithm, empty shape
// list) before measuring anything; errors of single measurements are recorded in their rows.
Results run(const Config& cfg);

// Runs cfg once per combination of `batches` (nullopt: each layer's own) and `threads`, batches
// outermost, and returns every row in one Results: the machine record of the first run (its
// foreign CPU share the highest), each combination's peak and noise in Results::sweep. Progress
// counts over all combinations; a cancel ends the sweep. Errors as run().
Results run_sweep(const Config& cfg, const std::vector<std::optional<dim_t>>& batches,
                  const std::vector<int>& threads);

// A run in slices, for a caller with one thread that must keep drawing between them (the
// browser build, whose page repaints only when the app returns to it): each step() measures one
// layer's pass (a whole layer with Config::interleave_passes, or where a pass has no algorithm
// of its own) as run() measures it, checks against the same references included, and appends
// it to results(). The fp32 peak is measured before the first slice and after the last, not
// around each window, so the speed probes (Measurement::speed) stay unknown; everything else
// (verification, timing rule, notes, layers and rows in run()'s order) is as run() gives it.
class SlicedRun {
  public:
    // Throws Error for a bad configuration, as run() does, before measuring anything.
    explicit SlicedRun(Config cfg);
    bool done() const { return next_ >= slices_.size(); }
    // Measures the next slice (nothing once done). A set cancel flag ends the run before the
    // next slice (results().cancelled). Errors as run().
    void step();
    const Results& results() const { return results_; }
    std::size_t measured() const { return measured_; }  // measurements so far
    std::size_t total() const { return total_; }        // measurements of the whole run
    const std::string& what() const { return what_; }   // the last one: "conv1 fwd im2col_gemm"

  private:
    struct Slice {
        std::size_t layer = 0;
        std::vector<Pass> passes;
        std::vector<std::string> algos;  // "PASS:NAME" of those passes; empty: cfg's own
    };
    void finish();
    Config cfg_;
    std::vector<Slice> slices_;
    std::size_t next_ = 0, measured_ = 0, total_ = 0;
    std::string what_;
    Results results_;
    Machine peak_;  // the peak measured before the first slice
};

// The results of each combination on its own, as run() would have returned them (batch,
// machine.threads, peak and foreign CPU share of the combination; layer descriptors with its
// batch); a single run's results as they are.
std::vector<Results> split_sweep(const Results& r);

// The bytes a pass moves at least: its inputs read and its output written once, fp32.
double pass_bytes(const Problem& p, Pass pass);

// [SECTION] results files (CSV, JSON) and reading them back

// CSV: a plain table that spreadsheets and pandas.read_csv open as it is: one header row, then
// one row per (layer, pass, algorithm, operation), operation "total" first. The machine record,
// the command, the notes and the run's settings are in the JSON only.
void write_csv(const Results& r, std::ostream& out);
void write_json(const Results& r, std::ostream& out);
// Read back what write_csv / write_json wrote (Error on a malformed file, naming line/offset);
// read_csv gives the rows and their layers (and a machine record only from older files' '#'
// lines).
Results read_csv(std::istream& in);
Results read_json(std::istream& in);
// The timed calls of a run (Config::trace) in the Trace Event format that Perfetto and
// chrome://tracing open: one complete ("X") event per call, named after its algorithm, with its
// layer, pass and verification as args, and its operations' spans nested in it; times in
// microseconds from the run's first call, one track per (layer, pass).
void write_trace(const Results& r, std::ostream& out);

}  // namespace convlab::bench
