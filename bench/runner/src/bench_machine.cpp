// Benchmark helpers that do not run convolutions: shape files, statistics, comparison, random
// data, and the machine record (CPU, compiler, commit, load, measured fp32 peak). Index:
//   [SECTION] shape files
//   [SECTION] statistics
//   [SECTION] comparison and random data
//   [SECTION] machine record
//   [SECTION] fp32 peak
// The FMA loops of the peak use AVX-512 or AVX2 intrinsics on x86-64 (compiled per function for
// their ISA, chosen at run time by cpuid), scalar FMAs elsewhere and in the portable build.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CONVLAB_PORTABLE)
#define CONVLAB_BENCH_X86 1
#include <immintrin.h>
#else
#define CONVLAB_BENCH_X86 0
#endif
#if defined(_OPENMP)
#include <omp.h>
#else
static int omp_get_thread_num() {
    return 0;  // without OpenMP the peak's parallel region runs on the calling thread
}
#endif
// Large buffers come from mmap where the system has it (page-aligned, returned to the system
// on free), else from aligned_alloc.
#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#define CONVLAB_HAVE_MMAP 1
#endif
#include <sys/resource.h>
#include <unistd.h>
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <new>
#include <random>
#include <sstream>
#include <thread>

#include "convlab/bench.hpp"
#include "convlab/output_file.hpp"
#include "convlab/runtime.hpp"

#ifndef CONVLAB_VERSION
#define CONVLAB_VERSION "dev"
#endif
#ifndef CONVLAB_COMPILER
#define CONVLAB_COMPILER "unknown compiler"
#endif
#ifndef CONVLAB_CXX_FLAGS
#define CONVLAB_CXX_FLAGS "unknown flags"
#endif
#if __has_include("convlab_commit.h")
#include "convlab_commit.h"  // generated at build time (engine/bench_commit.cmake)
#endif
#ifndef CONVLAB_GIT_COMMIT
#define CONVLAB_GIT_COMMIT "unknown"
#endif

namespace convlab::bench {

namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

// Drops a '#' comment that starts outside a double-quoted name.
std::string strip_comment(const std::string& s) {
    bool quoted = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '"') quoted = !quoted;
        if (s[i] == '#' && !quoted) return s.substr(0, i);
    }
    return s;
}

std::string percent(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", x * 100);
    return buf;
}

}  // namespace

// [SECTION] shape files

std::vector<Layer> read_shape_file(const std::string& path) {
    // A shape file is a list of descriptors: a few hundred bytes a layer. A larger file, a
    // directory or a special file is refused before anything is read.
    constexpr std::uintmax_t kMaxShapeFileBytes = std::uintmax_t{16} << 20;
    std::istringstream in(read_input_file(path, kMaxShapeFileBytes, "a shape file"));
    std::vector<Layer> layers;
    std::string raw;
    int line = 0;
    while (std::getline(in, raw)) {
        ++line;
        const std::string text = trim(strip_comment(raw));
        if (text.empty()) continue;
        Layer layer;
        layer.line = line;
        layer.descriptor = text;
        try {
            layer.problem = parse_descriptor(text);
        } catch (const Error& e) {
            throw Error(path + ":" + std::to_string(line) + ": " + e.what());
        }
        if (layer.problem.name.empty()) layer.problem.name = "line" + std::to_string(line);
        layers.push_back(std::move(layer));
    }
    if (layers.empty()) throw Error("shape file '" + path + "' holds no layer");
    return layers;
}

// [SECTION] statistics

Stats summarize(std::vector<double> seconds) {
    Stats t;
    if (seconds.empty()) return t;
    std::sort(seconds.begin(), seconds.end());
    const std::size_t n = seconds.size();
    const double med = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
    const auto quantile = [&](double q) {
        const double pos = q * static_cast<double>(n - 1);
        const auto lo = static_cast<std::size_t>(pos);
        const std::size_t hi = std::min(lo + 1, n - 1);
        return seconds[lo] + (pos - static_cast<double>(lo)) * (seconds[hi] - seconds[lo]);
    };
    t.q1_ms = quantile(0.25) * 1e3;
    t.q3_ms = quantile(0.75) * 1e3;
    t.median_ms = med * 1e3;
    t.min_ms = seconds.front() * 1e3;
    t.max_ms = seconds.back() * 1e3;
    t.runs = static_cast<int>(n);
    return t;
}

namespace {

double steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

double clock_tick(const std::function<double()>& clock) {
    const std::function<double()> read = clock ? clock : steady_seconds;
    // Five ticks: one difference may be stretched by a preemption, the smallest of five is not.
    constexpr int kTicks = 5;
    constexpr int kMaxReads = 100000;
    double tick = 0;
    int seen = 0;
    double last = read();
    for (int i = 0; i < kMaxReads && seen < kTicks; ++i) {
        const double now = read();
        if (now > last) {
            tick = seen == 0 ? now - last : std::min(tick, now - last);
            ++seen;
        }
        last = now;
    }
    return tick;
}

std::vector<Stats> measure_interleaved(const TimingRule& rule, const Interleaved& fns) {
    const std::function<double()> clock = fns.clock ? fns.clock : steady_seconds;
    const std::size_t count = fns.count;
    for (std::size_t f = 0; f < count; ++f)
        for (int i = 0; i < rule.warmup; ++i) fns.run(f, false);
    // Calls per timed run: one, or on a coarse clock each function's batch spanning kBatchTicks
    // ticks, so that a call shorter than a tick is not timed as 0 (a median of 0 is no time). A
    // batch size counts when two batches in a row span them: one alone may have been stretched
    // by something else (the page busy, a memory growth), and too small a batch times as 0.
    std::vector<int> calls(count, 1);
    if (const double tick = clock_tick(clock); tick > kCoarseTick) {
        const auto spans = [&](std::size_t f, int k) {
            const double t0 = clock();
            for (int i = 0; i < k; ++i) fns.run(f, false);
            return clock() - t0 >= kBatchTicks * tick;
        };
        for (std::size_t f = 0; f < count; ++f) {
            int k = 1;
            while (k < kMaxBatchCalls && !(spans(f, k) && spans(f, k))) k *= 2;
            calls[f] = k;
        }
    }
    std::vector<std::vector<double>> seconds(count);
    std::vector<double> total(count, 0.0);
    const auto met = [&](std::size_t f) {
        const int n = static_cast<int>(seconds[f].size());
        if (rule.reps > 0) return n >= rule.reps;
        return (n >= rule.min_reps && total[f] >= rule.min_seconds) || n >= rule.max_reps;
    };
    for (std::size_t round = 0;; ++round) {
        bool any = false;
        for (std::size_t i = 0; i < count; ++i) {
            const std::size_t f = (round + i) % count;
            if (met(f)) continue;
            any = true;
            const double t0 = clock();
            for (int c = 0; c < calls[f]; ++c) fns.run(f, true);
            const double s = clock() - t0;
            seconds[f].push_back(s / calls[f]);
            total[f] += s;
            if (fns.after) fns.after(f, s / calls[f]);
        }
        if (!any) break;
    }
    std::vector<Stats> out;
    out.reserve(count);
    for (std::size_t f = 0; f < count; ++f) {
        out.push_back(summarize(std::move(seconds[f])));
        out.back().calls = calls[f];
    }
    return out;
}

std::vector<Stats> measure_interleaved(const TimingRule& rule,
                                       const std::vector<std::function<void()>>& runs) {
    Interleaved fns;
    fns.count = runs.size();
    fns.run = [&runs](std::size_t f, bool) { runs[f](); };
    return measure_interleaved(rule, fns);
}

// [SECTION] comparison and random data

Check compare(const float* got, const float* ref, std::size_t n, double rtol) {
    Check c;
    c.count = n;
    double sumsq = 0;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double r = ref[i];
        if (std::isfinite(r)) sumsq += r * r;
        if (r != 0) ++nonzero;
    }
    const double rms = n ? std::sqrt(sumsq / static_cast<double>(n)) : 0;
    c.nonzero = n ? static_cast<double>(nonzero) / static_cast<double>(n) : 0;
    std::size_t nonfinite = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double g = got[i];
        const double r = ref[i];
        if (!std::isfinite(g) || !std::isfinite(r)) {
            ++nonfinite;
            ++c.bad;
            continue;
        }
        const double scale = std::max(std::fabs(r), rms);
        const double abs = std::fabs(g - r);
        const double err = scale > 0 ? abs / scale : abs;
        c.max_abs = std::max(c.max_abs, abs);
        c.max_err = std::max(c.max_err, err);
        if (err > rtol) ++c.bad;
    }
    c.pass = c.bad == 0 && n > 0;
    if (nonfinite) c.note = std::to_string(nonfinite) + " non-finite";
    if (n == 0) c.note = "empty";
    if (c.pass && nonzero == 0) {
        c.pass = false;  // an all-zero reference proves nothing
        c.note = "reference all zero";
    }
    return c;
}

std::string Check::str() const {
    char buf[96];
    if (pass) {
        std::snprintf(buf, sizeof buf, "PASS %.1e", max_err);
    } else {
        std::snprintf(buf, sizeof buf, "FAIL %zu/%zu %.1e", bad, count, max_err);
    }
    std::string s = buf;
    if (!note.empty()) s += " (" + note + ")";
    return s;
}

std::string Verification::status() const {
    if (!checked) return "UNCHECKED";
    if (reference == "self") return "REFERENCE";
    return pass ? "PASS" : "FAIL";
}

void* line_aligned_alloc(std::size_t bytes) {
#ifdef CONVLAB_HAVE_MMAP
    if (bytes >= (1u << 20)) {
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        return p;
    }
#endif
    void* p = std::aligned_alloc(64, std::max<std::size_t>(64, (bytes + 63) / 64 * 64));
    if (!p) throw std::bad_alloc();
    return p;
}

void line_aligned_free(void* p, std::size_t bytes) {
    if (!p) return;
#ifdef CONVLAB_HAVE_MMAP
    if (bytes >= (1u << 20)) {
        munmap(p, bytes);
        return;
    }
#else
    (void)bytes;
#endif
    std::free(p);
}

void fill_random(Floats& v, std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& x : v) x = dist(gen);
}

// [SECTION] machine record

std::string cpu_model() {
#ifdef __EMSCRIPTEN__
    // A page has no /proc/cpuinfo and a browser does not name the CPU: the record names what
    // measured instead, the WebAssembly engine in this browser (its user agent).
    const char* agent = emscripten_run_script_string("navigator.userAgent");
    return std::string("browser, WebAssembly (") +
           (agent && *agent ? agent : "unknown user agent") + ")";
#else
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return trim(line.substr(colon + 1));
        }
    }
    return "unknown";
#endif
}

double load_average() {
    std::ifstream in("/proc/loadavg");
    double load = -1;
    if (!(in >> load)) return -1;
    return load;
}

CpuSample cpu_sample() {
    CpuSample s;
    s.wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    std::ifstream in("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
        cpu != "cpu") {
        return s;
    }
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    if (tick <= 0) return s;
    s.tick = 1 / tick;
    s.busy = (user + nice + system + irq + softirq) / tick;
    s.steal = steal / tick;
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return s;
    auto sec = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + 1e-6 * static_cast<double>(tv.tv_usec);
    };
    s.self = sec(ru.ru_utime) + sec(ru.ru_stime);
    s.ok = true;
    return s;
}

double foreign_cpu_share(const CpuSample& a, const CpuSample& b, int cpus) {
    if (!a.ok || !b.ok || cpus <= 0) return -1;
    const double wall = b.wall - a.wall;
    if (wall <= 0) return -1;
    const double foreign = (b.busy - a.busy) - (b.self - a.self) + (b.steal - a.steal);
    const double error = std::max(a.tick, b.tick) * cpus;  // the counters' steps
    return std::min(1.0, std::max(0.0, foreign - error) / (wall * cpus));
}

std::string local_date() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm);
    return buf;
}

std::string utc_date() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

Machine describe_machine() {
    Machine m;
    m.cpu = cpu_model();
    m.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
    {
        std::ifstream in("/proc/cpuinfo");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("cpu cores", 0) == 0) {
                const auto colon = line.find(':');
                if (colon != std::string::npos)
                    m.physical_cores = std::atoi(line.c_str() + colon + 1);
                break;
            }
        }
    }
    m.compiler = CONVLAB_COMPILER;
    m.flags = trim(CONVLAB_CXX_FLAGS);
    std::string isa;
#if defined(__AVX512F__)
    isa += " avx512f";
#endif
#if defined(__AVX2__)
    isa += " avx2";
#endif
#if defined(__FMA__)
    isa += " fma";
#endif
    // What the compiler may use everywhere, then the kernels chosen at run time.
    m.engine_isa = (isa.empty() ? "baseline" : isa.substr(1)) + ", kernels " + kernel_isa();
    m.version = CONVLAB_VERSION;
    m.commit = CONVLAB_GIT_COMMIT;
    m.date = utc_date();
    m.load_before = load_average();
    m.clock_tick = clock_tick();
    return m;
}

std::string Machine::summary() const {
    std::ostringstream s;
    s << cpu << " (" << logical_cpus << " logical CPUs), " << threads << " thread"
      << (threads == 1 ? "" : "s") << " | " << compiler << " " << flags << " (" << engine_isa
      << ") | ConvLab " << version << " @ " << commit << " | " << date;
    if (!peer.empty() && peer != "none") s << " | peer " << peer;
    if (peak_gflops > 0) {
        char buf[128];
        std::snprintf(buf, sizeof buf,
                      " | fp32 peak %.1f GFLOP/s (measured FMA loop, %.1f per thread)", peak_gflops,
                      peak_gflops_1t);
        s << buf;
    }
    return s.str();
}

std::string Machine::noise() const {
    std::string s;
    if (foreign_cpu >= 0) {
        s = "other processes used " + percent(foreign_cpu) + " of the CPUs during the run";
        if (foreign_cpu > 0.05) s += " (timings disturbed)";
    } else {
        s = "CPU share of other processes unknown";
    }
    s += "; repeats' interquartile spread (q3-q1)/median " + percent(median_spread) +
         " (median over measurements)";
    if (load_before >= 0) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "; load average before %.2f", load_before);
        s += buf;
    }
    return s;
}

// [SECTION] fp32 peak

namespace {

// Independent accumulator chains, enough to cover the FMA latency (4 cycles) times the FMA
// ports (2) of current cores; each iteration is kChains vector FMAs on registers only. The
// vector width is the widest the CPU has (chosen at run time: the build may be for any x86-64).
constexpr int kChains = 10;

#if CONVLAB_BENCH_X86
__attribute__((target("avx512f"))) float fma_chains_avx512(long iters) {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    alignas(64) float f[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside its header
    float s = 0;
    for (int i = 0; i < kChains; ++i) {
        _mm512_store_ps(f, acc[i]);
        for (float x : f) s += x;
    }
    return s;
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(long iters) {
    __m256 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    alignas(32) float f[8];
    float s = 0;
    for (int i = 0; i < kChains; ++i) {
        _mm256_store_ps(f, acc[i]);
        for (float x : f) s += x;
    }
    return s;
}
#endif

float fma_chains_scalar(long iters) {
    float acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = 0.001f * static_cast<float>(i);
    for (long it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) acc[i] = std::fma(acc[i], 0.999999f, 1e-7f);
    float s = 0;
    for (int i = 0; i < kChains; ++i) s += acc[i];
    return s;
}

// Lanes of the widest FMA the CPU has: 16 (AVX-512), 8 (AVX2 + FMA), else 1.
int chain_lanes() {
    static const int lanes = [] {
#if CONVLAB_BENCH_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) return 16;
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
#endif
        return 1;
    }();
    return lanes;
}

// Runs `iters` iterations; returns a value that depends on every chain (so nothing is elided).
float fma_chains(long iters) {
#if CONVLAB_BENCH_X86
    if (chain_lanes() == 16) return fma_chains_avx512(iters);
    if (chain_lanes() == 8) return fma_chains_avx2(iters);
#endif
    return fma_chains_scalar(iters);
}

// `threads`, or every logical CPU for 0 (or less).
int threads_or_all(int threads) {
    return threads > 0 ? threads
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// fp32 operations of `iters` iterations of fma_chains (an FMA counts as 2).
double chain_flops(long iters) {
    return 2.0 * chain_lanes() * kChains * static_cast<double>(iters);
}

// Iterations of fma_chains lasting about `seconds` on this thread (at least 4096), calibrated
// from a run of at least a quarter of that, timed by `read`.
long chain_iterations(double seconds, const std::function<double()>& read) {
    long iters = 1 << 12;
    for (;;) {
        const double t0 = read();
        volatile float sink = fma_chains(iters);
        (void)sink;
        const double s = read() - t0;
        if (s > seconds / 4 || iters > std::numeric_limits<long>::max() / 4)  // no overflow
            return std::max(
                static_cast<long>(static_cast<double>(iters) * seconds / std::max(s, 1e-9)),
                1L << 12);
        iters *= 4;
    }
}

}  // namespace

double measure_fp32_peak(int threads, double seconds, const std::function<double()>& clock) {
    threads = threads_or_all(threads);
    const std::function<double()> read = clock ? clock : steady_seconds;
    // Many short rounds, best one kept: on a shared machine some round finds the cores free.
    constexpr int kRounds = 12;
    // A round spans kBatchTicks ticks at least; one timed shorter than a tick (the calibration
    // run was slower than the rounds) is not counted rather than read as an infinite rate.
    const double tick = clock_tick(read);
    const double round_s = std::max(seconds / kRounds, kBatchTicks * tick);
    // Calibrated on one thread: iterations for about round_s.
    const long iters = chain_iterations(round_s, read);
    // All threads run the same count; a round lasts from the start to the last one done.
    double best = 0;
    for (int round = 0; round < kRounds; ++round) {
        std::vector<std::thread> pool;
        std::vector<float> sinks(static_cast<std::size_t>(threads));
        const double t0 = read();
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] { sinks[static_cast<std::size_t>(t)] = fma_chains(iters); });
        for (auto& th : pool) th.join();
        const double s = read() - t0;
        if (s >= tick && s > 0) best = std::max(best, chain_flops(iters) * threads / s * 1e-9);
        volatile float sink = sinks[0];
        (void)sink;
    }
    return best;
}

double probe_fp32_rate(int threads, double seconds, const std::function<double()>& clock) {
    threads = threads_or_all(threads);
    constexpr int kRounds = 4;
    // A round spans kBatchTicks ticks at least: the browser's clock ticks every 100 us, and
    // rounds of 1 ms timed on it were off by a tenth (the steady clock's tick, tens of
    // nanoseconds, is measured once).
    static const double steady_tick = clock_tick();
    const double tick = clock ? clock_tick(clock) : steady_tick;
    const std::function<double()> read = clock ? clock : steady_seconds;
    const long iters = chain_iterations(std::max(seconds / kRounds, kBatchTicks * tick), read);
    std::vector<double> rounds;
    std::vector<double> rate(static_cast<std::size_t>(threads));
    for (int round = 0; round < kRounds; ++round) {
        // Each thread times its own chains: the region's start and end are not counted.
#pragma omp parallel num_threads(threads)
        {
            // The chains are pure: without the empty asm statements GCC computes them outside
            // the two clock reads (a rate of millions of GFLOP/s).
            const double t0 = read();
            long n = iters;
            asm volatile("" : "+r"(n));
            float sink = fma_chains(n);
#if defined(__x86_64__) || defined(__i386__)
            asm volatile("" : "+x"(sink));
#else
            asm volatile("" : "+m"(sink));
#endif
            const double s = read() - t0;
            rate[static_cast<std::size_t>(omp_get_thread_num())] =
                chain_flops(iters) / std::max(s, 1e-9) * 1e-9;
        }
        double sum = 0;
        for (const double x : rate) sum += x;
        rounds.push_back(sum);
    }
    std::sort(rounds.begin(), rounds.end());
    return 0.5 * (rounds[kRounds / 2 - 1] + rounds[kRounds / 2]);
}

WindowSpeed time_window(int threads, double peak, int retimes, const std::function<void()>& window,
                        const std::function<void(double speed)>& keep,
                        const std::function<double(int threads)>& probe,
                        const std::function<bool()>& stop) {
    const auto rate = [&] { return probe ? probe(threads) : probe_fp32_rate(threads); };
    WindowSpeed kept;
    for (int attempt = 0;; ++attempt) {
        const double before = peak > 0 ? rate() : 0;
        window();
        const double speed = peak > 0 ? std::min(before, rate()) / peak : -1.0;
        if (attempt == 0 || speed > kept.speed) {
            kept.speed = speed;
            keep(speed);
        }
        kept.retimed = attempt;
        const bool slow = speed >= 0 && speed < kSlowMachine;
        if (!slow || attempt >= retimes || (stop && stop())) return kept;
    }
}

void measure_machine_peak(Machine& m, int threads, double seconds) {
    threads = threads_or_all(threads);
    m.peak_gflops_1t = std::max(m.peak_gflops_1t, measure_fp32_peak(1, seconds));
    // Threads that fit on distinct physical cores: one thread's rate times the thread count
    // (another process may hold a core during a joint measurement); else measured together.
    const bool own_cores = m.physical_cores > 0 && threads <= m.physical_cores;
    const double all = threads == 1 ? m.peak_gflops_1t : measure_fp32_peak(threads, seconds);
    m.peak_gflops = std::max({m.peak_gflops, all, own_cores ? threads * m.peak_gflops_1t : 0});
}

std::size_t peak_rss_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) != 0) continue;
        std::istringstream f(line.substr(6));
        std::size_t kib = 0;
        if (f >> kib) return kib * 1024;
    }
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss <= 0) return 0;
    return static_cast<std::size_t>(ru.ru_maxrss) * 1024;  // Linux: KiB
}

}  // namespace convlab::bench
