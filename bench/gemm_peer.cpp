// convlab_gemm_bench: the engine's GEMM core against oneDNN's sgemm on the same row-major
// products, timed call by call in alternation, after checking that both give the same C.
//
// Each layer of a shape file gives its forward product as im2col + GEMM computes it: C (K/G x
// N*out) = W (K/G x C/G*taps) * im2col(X), A and B row-major and dense (the 1x1 stride-1
// layers' B is the input itself). Identical products are timed once. Between two timed calls
// it touches --flush MiB of other memory, as the convolution bench's alternation with oneDNN
// leaves the caches (on a Zen 3 with 512 KiB of L2 per core a layer's operands were
// back in memory by the next call). It separates the GEMM from the convolution: oneDNN's
// convolution works on blocked layouts, its sgemm on the same plain matrices as the engine.
//
//   convlab_gemm_bench [--shapes FILE] [--mb N] [--threads N] [--reps N] [--flush MIB]
//                      [--filter TEXT] [--product MxNxK]...
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../engine/src/gemm/microkernel.hpp"
#include "bench_util.hpp"
#include "convlab/problem.hpp"
#include "convlab/tuning_env.hpp"

#ifndef CONVLAB_SOURCE_DIR
#define CONVLAB_SOURCE_DIR "."
#endif

namespace {

using convlab::dim_t;

const char* const kUsage = R"(usage: convlab_gemm_bench [options]

Times the engine's GEMM (convlab::detail::sgemm, row-major A and B) against oneDNN's sgemm
(dnnl_sgemm) on the forward products of a shape file's layers, alternating call by call, after
checking both results agree. Prints per product the median and minimum times, GFLOP/s and the
engine/oneDNN ratio of the medians, then the totals.

options:
  --shapes FILE    shape file (default: <source>/assets/shapes/resnet50.txt)
  --mb N           batch (default 1): N*out columns per product
  --threads N      threads of both (default 2; 0 = all cores)
  --reps N         timed calls of each per product (default 200)
  --flush MIB      memory touched between calls (default 8; 0 = none)
  --filter TEXT    only layers whose descriptor contains TEXT
  --product MxNxK  time this product instead of the shape file's (repeatable)
)";

struct Product {
    dim_t m, n, k;
    std::string from;  // the layers it stands for
};

[[noreturn]] void usage_error(const std::string& what) {
    std::fprintf(stderr, "convlab_gemm_bench: %s\n%s", what.c_str(), kUsage);
    std::exit(2);
}

long parse_count(const std::string& flag, const char* text, long lo, long hi) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < lo || v > hi)
        usage_error(flag + " '" + text + "': expected an integer from " + std::to_string(lo) +
                    " to " + std::to_string(hi));
    return v;
}

Product parse_product(const char* text) {
    long m = 0, n = 0, k = 0;
    char tail = 0;
    if (std::sscanf(text, "%ldx%ldx%ld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 || k < 1)
        usage_error(std::string("--product '") + text + "': expected MxNxK, each at least 1");
    return {m, n, k, "--product"};
}

}  // namespace

int main(int argc, char** argv) try {
    std::string shapes = std::string(CONVLAB_SOURCE_DIR) + "/assets/shapes/resnet50.txt";
    std::string filter;
    long mb = 1, threads = 2, reps = 200, flush_mib = 8;
    std::vector<Product> products;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (i + 1 >= argc) usage_error(a + ": missing value");
        const char* v = argv[++i];
        if (a == "--shapes")
            shapes = v;
        else if (a == "--mb")
            mb = parse_count(a, v, 1, 4096);
        else if (a == "--threads")
            threads = parse_count(a, v, 0, 1024);
        else if (a == "--reps")
            reps = parse_count(a, v, 1, 1000000);
        else if (a == "--flush")
            flush_mib = parse_count(a, v, 0, 4096);
        else if (a == "--filter")
            filter = v;
        else if (a == "--product")
            products.push_back(parse_product(v));
        else
            usage_error("unknown option '" + a + "'");
    }
    if (products.empty()) {
        for (const auto& layer : bench::read_shape_file(shapes)) {
            if (!filter.empty() && layer.descriptor.find(filter) == std::string::npos) continue;
            const convlab::Problem& p = layer.problem;
            const Product q{p.ocg(), mb * p.out_spatial(), p.icg() * p.kernel_spatial(),
                            p.name.empty() ? layer.descriptor : p.name};
            const auto same = std::find_if(products.begin(), products.end(), [&](const Product& r) {
                return r.m == q.m && r.n == q.n && r.k == q.k;
            });
            if (same != products.end())
                same->from += ", " + q.from;
            else
                products.push_back(q);
        }
        if (products.empty()) usage_error("no layer of " + shapes + " matches the filter");
    }
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(static_cast<int>(threads));
    const int used = omp_get_max_threads();
#else
    const int used = 1;
#endif
    const double peak = convlab::bench::measure_fp32_peak(used);
    std::printf(
        "engine sgemm vs oneDNN dnnl_sgemm, row-major, %d thread%s, %ld calls each "
        "alternating, %ld MiB touched between calls; fp32 peak %.1f GFLOP/s (measured)\n",
        used, used == 1 ? "" : "s", reps, flush_mib, peak);
    std::printf("%6s %6s %6s | %9s %9s %7s | %9s %9s %7s | %6s  %s\n", "M", "N", "K", "engine",
                "min", "GFLOP/s", "oneDNN", "min", "GFLOP/s", "ratio", "layers");

    std::vector<float> junk(static_cast<std::size_t>(flush_mib) << 18, 1.0f);
    float sink = 0;
    const auto touch = [&] {
        for (std::size_t i = 0; i < junk.size(); i += 16) sink += (junk[i] += 1.0f);
    };
    double total_e = 0, total_o = 0, flops_all = 0;
    bool all_agree = true;
    // The blocked GEMM's rules as `convlab bench` takes them (CONVLAB_READ_A, CONVLAB_TRANSPOSED).
    const convlab::Tuning tuning = convlab::tuning_from_environment();
    for (const Product& q : products) {
        const double mib =
            static_cast<double>(q.m * q.k + q.k * q.n + 2 * q.m * q.n) * sizeof(float) / (1 << 20);
        convlab::bench::Floats a, b, ce, co;
        try {
            a.resize(static_cast<std::size_t>(q.m * q.k));
            b.resize(static_cast<std::size_t>(q.k * q.n));
            ce.resize(static_cast<std::size_t>(q.m * q.n));
            co.resize(ce.size());
        } catch (const std::bad_alloc&) {
            throw convlab::Error("product " + std::to_string(q.m) + "x" + std::to_string(q.n) +
                                 "x" + std::to_string(q.k) + " (" + q.from + "): A, B and two C " +
                                 "need " + std::to_string(static_cast<long>(mib)) +
                                 " MiB, more than could be allocated");
        }
        convlab::bench::fill_random(a, 1);
        convlab::bench::fill_random(b, 2);
        const auto engine = [&] {
            convlab::detail::sgemm(
                tuning, q.m, q.n, q.k, convlab::detail::StridedA{a.data(), q.k, 1},
                convlab::detail::StridedB{b.data(), q.n, 1}, ce.data(), q.n, false);
        };
        const auto onednn = [&] {
            if (dnnl_sgemm('N', 'N', q.m, q.n, q.k, 1.0f, a.data(), q.k, b.data(), q.n, 0.0f,
                           co.data(), q.n) != dnnl_success)
                throw convlab::Error("dnnl_sgemm failed");
        };
        engine();
        onednn();
        const convlab::bench::Check check =
            convlab::bench::compare(ce.data(), co.data(), ce.size(), 1e-5);
        all_agree = all_agree && check.pass;
        // The runner's alternation (each first in every other round), the memory touched after
        // every timed call, outside the timed region.
        convlab::bench::TimingRule rule;
        rule.warmup = 0;  // the two checked calls above
        rule.reps = static_cast<int>(reps);
        convlab::bench::Interleaved fns;
        fns.count = 2;
        fns.run = [&](std::size_t f, bool) { f == 0 ? engine() : onednn(); };
        fns.after = [&](std::size_t, double) { touch(); };
        touch();
        const std::vector<convlab::bench::Stats> st =
            convlab::bench::measure_interleaved(rule, fns);
        const double me = st[0].median_ms * 1e-3, mo = st[1].median_ms * 1e-3;
        const double flops =
            2.0 * static_cast<double>(q.m) * static_cast<double>(q.n) * static_cast<double>(q.k);
        total_e += me;
        total_o += mo;
        flops_all += flops;
        std::printf("%6ld %6ld %6ld | %9.3f %9.3f %7.1f | %9.3f %9.3f %7.1f | %5.3fx  %s%s\n",
                    static_cast<long>(q.m), static_cast<long>(q.n), static_cast<long>(q.k),
                    me * 1e3, st[0].min_ms, flops / me * 1e-9, mo * 1e3, st[1].min_ms,
                    flops / mo * 1e-9, me / mo, q.from.c_str(),
                    check.pass ? "" : (" DIFFER " + check.str()).c_str());
    }
    volatile float keep = sink;  // the touched memory's sum, so that touching is not elided
    (void)keep;
    std::printf(
        "total (sum of medians): engine %.3f ms (%.1f GFLOP/s, %.0f%% of peak), oneDNN "
        "%.3f ms (%.1f GFLOP/s, %.0f%%): %.3fx\n",
        total_e * 1e3, flops_all / total_e * 1e-9, 100 * flops_all / total_e * 1e-9 / peak,
        total_o * 1e3, flops_all / total_o * 1e-9, 100 * flops_all / total_o * 1e-9 / peak,
        total_e / total_o);
    if (!all_agree) {
        std::printf("results differ (rtol 1e-5 of max(|ref|, rms)) in some products\n");
        return 1;
    }
    std::printf("results: every product agreed with oneDNN's (rtol 1e-5 of max(|ref|, rms))\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "convlab_gemm_bench: %s\n", e.what());
    return 2;
}
