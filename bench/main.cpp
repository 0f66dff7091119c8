// convlab_bench: times ConvLab's convolution algorithms per layer and pass, side by side with
// oneDNN fp32 measured in the same run, after checking every algorithm's result once per layer,
// and prints them as a table. The measuring is the benchmark runner's (convlab/bench.hpp, the
// loop under `convlab bench` too): oneDNN and the algorithms of a layer and pass are timed in
// alternating rounds, so that load that comes and goes on a shared machine falls on all of them
// alike. This file is the table's front end only.
//
//   convlab_bench [--shapes FILE] [--mb N|file] [--threads N] [--passes LIST] [--algos LIST]
//                 [--reps N] [--min-time S] [--warmup N] [--ref onednn|direct] [--rtol X]
//                 [--filter TEXT] [--csv FILE] [--alloc system|steady] [--no-onednn] [--no-peak]
//                 [--list]
//
// Run with --help for the meaning of each option.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <malloc.h>

#include "bench_util.hpp"
#include "convlab/conv.hpp"
#include "convlab/output_file.hpp"
#include "convlab/problem.hpp"
#include "convlab/tuning_env.hpp"
#include "onednn_peer.hpp"

#ifndef CONVLAB_SOURCE_DIR
#define CONVLAB_SOURCE_DIR "."
#endif
#ifndef CONVLAB_COMPILER
#define CONVLAB_COMPILER "unknown compiler"
#endif

namespace {

using convlab::Pass;
using convlab::bench::args_for;
using convlab::bench::Buffers;
using convlab::bench::output_size;

const char* const kUsage = R"(usage: convlab_bench [options]

Times ConvLab's convolution algorithms on every layer of a shape file, for each pass, side by side
with oneDNN fp32 in the same run. Every algorithm's result is checked once per layer before it is
timed (PASS/FAIL column); then oneDNN and the algorithms are timed in alternating rounds, so that
load from elsewhere falls on all of them alike. Every layer counts once in the totals.

options:
  --shapes FILE      shape file (default: <source>/assets/shapes/resnet50.txt)
  --mb N|file        batch of every layer (default 1); 'file' keeps each descriptor's own batch
  --threads N        threads of the engine and of oneDNN (default 2; 0 = all cores)
  --passes LIST      comma-separated passes among fwd,bwd_data,bwd_weight (default: all three)
  --algos LIST       comma-separated engine algorithms: NAME (every selected pass that has it),
                     PASS:NAME, 'default' (fwd im2col_gemm; bwd_data col2im, via_forward;
                     bwd_weight im2col_gemm, via_forward) or 'all' (every algorithm, direct too)
  --reps N           exactly N timed runs per measurement (default: time rule below)
  --min-time S       time rule: run until S seconds measured and at least 3 runs (default 0.2)
  --warmup N         untimed runs before timing (default 2)
  --ref onednn|direct
                     reference of the check: oneDNN's result (default when built with oneDNN)
                     or the engine's direct loops
  --rtol X           tolerance of the check, relative (default 1e-4)
  --filter TEXT      only layers whose name contains TEXT
  --csv FILE         also write one line per measurement to FILE
  --alloc system|steady
                     system (default): glibc's allocator as any program gets it; an algorithm
                     that allocates work buffers on every call may pay page faults on every call,
                     depending on what ran before. steady: freed memory stays mapped (mallopt
                     M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 2 GiB), as with a workspace cache
  --no-onednn        do not measure oneDNN
  --no-peak          do not measure the fp32 peak (the %peak columns stay empty)
  --alone            time oneDNN and each algorithm in rounds of their own, one after another,
                     not alternating: each call finds its data in the caches as its own last
                     call left them (hot), not as another's run left them
  --retime-slow N    time a pass again, up to N times (default 2; 0 never), when the machine's
                     FMA rate probed just before or after it was below 90% of the peak (its slow
                     spells), keeping the attempt on the fastest machine; needs the peak
  --list             list the engine's algorithms and exit
  -h, --help         this text
)";

struct Options {
    std::string shapes = std::string(CONVLAB_SOURCE_DIR) + "/assets/shapes/resnet50.txt";
    std::optional<convlab::dim_t> mb = 1;  // nullopt: keep the file's batch
    int threads = 2;
    std::vector<Pass> passes{Pass::Forward, Pass::BackwardData, Pass::BackwardWeight};
    std::string algos = "default";
    bench::TimingRule timing;
    std::string ref;  // "" = default
    double rtol = 1e-4;
    std::string filter;
    std::string csv;
    bool onednn = true;
    bool list = false;
    bool steady_alloc = false;
    bool peak = true;
    int retime_slow = 2;
    bool alone = false;
};

[[noreturn]] void usage_error(const std::string& msg) {
    std::fprintf(stderr, "convlab_bench: %s\n(see convlab_bench --help)\n", msg.c_str());
    std::exit(2);
}

std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    std::size_t b = 0;
    for (;;) {
        const std::size_t e = s.find(sep, b);
        std::string item(s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
        if (!item.empty()) out.push_back(item);
        if (e == std::string_view::npos) break;
        b = e + 1;
    }
    return out;
}

long parse_long(const std::string& opt, const std::string& v, long lo) {
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < lo)
        usage_error(opt + " " + v + ": expected an integer >= " + std::to_string(lo));
    return x;
}

double parse_double(const std::string& opt, const std::string& v) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x >= 0))
        usage_error(opt + " " + v + ": expected a number >= 0");
    return x;
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (a == "--shapes") {
            o.shapes = value();
        } else if (a == "--mb") {
            const std::string v = value();
            if (v == "file") {
                o.mb.reset();
            } else {
                o.mb = parse_long(a, v, 1);
            }
        } else if (a == "--threads") {
            o.threads = static_cast<int>(parse_long(a, value(), 0));
        } else if (a == "--passes") {
            o.passes.clear();
            for (const std::string& s : split(value(), ',')) {
                Pass p{};
                try {
                    p = convlab::parse_pass(s);
                } catch (const convlab::Error& e) {
                    usage_error(std::string("--passes: ") + e.what());
                }
                if (p == Pass::BackwardBias)
                    usage_error(
                        "--passes: bwd_bias is not benchmarked (fwd, bwd_data, bwd_weight)");
                o.passes.push_back(p);
            }
            if (o.passes.empty()) usage_error("--passes: empty list");
        } else if (a == "--algos") {
            o.algos = value();
        } else if (a == "--reps") {
            o.timing.reps = static_cast<int>(parse_long(a, value(), 1));
        } else if (a == "--min-time") {
            o.timing.min_seconds = parse_double(a, value());
        } else if (a == "--warmup") {
            o.timing.warmup = static_cast<int>(parse_long(a, value(), 0));
        } else if (a == "--ref") {
            o.ref = value();
            if (o.ref != "onednn" && o.ref != "direct")
                usage_error("--ref " + o.ref + ": expected onednn or direct");
        } else if (a == "--rtol") {
            o.rtol = parse_double(a, value());
        } else if (a == "--filter") {
            o.filter = value();
        } else if (a == "--csv") {
            o.csv = value();
        } else if (a == "--alloc") {
            const std::string v = value();
            if (v != "system" && v != "steady")
                usage_error("--alloc " + v + ": expected system or steady");
            o.steady_alloc = v == "steady";
        } else if (a == "--no-onednn") {
            o.onednn = false;
        } else if (a == "--no-peak") {
            o.peak = false;
        } else if (a == "--alone") {
            o.alone = true;
        } else if (a == "--retime-slow") {
            o.retime_slow = static_cast<int>(parse_long(a, value(), 0));
            if (o.retime_slow > 10) usage_error("--retime-slow: at most 10");
        } else if (a == "--list") {
            o.list = true;
        } else {
            usage_error("unknown option '" + a + "'");
        }
    }
    return o;
}

// The runner's algorithm list for --algos: "default" spelled out per selected pass (a name the
// engine lacks is noted and left out), every other word as the runner takes it (NAME, PASS:NAME,
// all).
std::vector<std::string> algo_list(const Options& o) {
    std::vector<std::string> out;
    for (const std::string& tok : split(o.algos, ',')) {
        if (tok != "default") {
            out.push_back(tok);
            continue;
        }
        const std::map<Pass, std::vector<const char*>> defaults{
            {Pass::Forward, {"im2col_gemm"}},
            {Pass::BackwardData, {"col2im", "via_forward"}},
            {Pass::BackwardWeight, {"im2col_gemm", "via_forward"}}};
        for (const Pass pass : o.passes) {
            for (const char* name : defaults.at(pass)) {
                bool has = false;
                for (const convlab::Algorithm* a : convlab::algorithms(pass))
                    has = has || std::string_view(a->name) == name;
                if (has) {
                    out.push_back(std::string(convlab::pass_name(pass)) + ":" + name);
                } else {
                    std::printf("note: the engine has no %s algorithm '%s'; not timed\n",
                                convlab::pass_name(pass), name);
                }
            }
        }
    }
    // The runner reads an empty list as "all but direct": an empty --algos is refused instead.
    if (out.empty()) usage_error("--algos '" + o.algos + "': no algorithm to time");
    return out;
}

// Totals of one (pass, algorithm) over the layers.
struct Total {
    int layers = 0;       // layers timed
    int passed = 0;       // checks passed
    int failed = 0;       // checks failed or not made
    int errors = 0;       // runs that threw
    double ms = 0;        // sum of medians, engine
    double flops = 0;     // of the layers in ms
    int peer_layers = 0;  // of those, layers where oneDNN also ran
    double ms_paired = 0, peer_ms_paired = 0, flops_paired = 0;
    std::vector<std::string> failures;
};

struct PeerTotal {
    int layers = 0;
    double ms = 0, flops = 0;
};

// A CSV field in double quotes, inner quotes doubled (RFC 4180).
std::string csv_field(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

void print_rule(int width) {
    std::string s(static_cast<std::size_t>(width), '-');
    std::puts(s.c_str());
}

// The check column of a measurement: "PASS 3.2e-07", "FAIL 1.3e-02 (12 of ...)", "reference",
// "UNCHECKED: ..." or "ERROR: ...".
std::string check_text(const convlab::bench::Measurement& m) {
    if (!m.ran) return "ERROR: " + m.error;
    const convlab::bench::Verification& v = m.check;
    if (v.reference == "self") return "reference";
    if (!v.checked) return "UNCHECKED: " + v.note;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s %.1e", v.pass ? "PASS" : "FAIL", v.max_rel);
    return std::string(buf) + (v.pass || v.note.empty() ? "" : " (" + v.note + ")");
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse_args(argc, argv);

    if (o.list) {
        for (const convlab::Algorithm& a : convlab::algorithms())
            std::printf("%-10s %-20s %s\n", convlab::pass_name(a.pass), a.name, a.summary);
        return 0;
    }

    const bool use_peer = o.onednn && bench::PeerConv::available();
    if (o.ref.empty()) o.ref = use_peer ? "onednn" : "direct";
    if (o.ref == "onednn" && !use_peer)
        usage_error("--ref onednn needs oneDNN (built without it, or --no-onednn given)");
    const bool ref_direct = o.ref == "direct";

    if (o.steady_alloc) {
        // Keep freed blocks up to 32 MiB (glibc's largest mmap threshold) in the heap and never
        // give the heap back: the engine's per-call work buffers are then reused, not faulted in.
        if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 ||
            mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) != 1) {
            std::fprintf(stderr, "convlab_bench: mallopt failed; --alloc steady not applied\n");
            o.steady_alloc = false;
        }
    }

    const int hw = static_cast<int>(std::thread::hardware_concurrency());
    const int threads = o.threads > 0 ? o.threads : hw;

    // [SECTION] the run's configuration: the runner of `convlab bench` does the measuring
    convlab::bench::Config cfg;
    cfg.tuning = convlab::tuning_from_environment();
    try {
        for (bench::Layer& l : bench::read_shape_file(o.shapes))
            if (o.filter.empty() || l.problem.name.find(o.filter) != std::string::npos)
                cfg.layers.push_back(std::move(l));
    } catch (const convlab::Error& e) {
        std::fprintf(stderr, "convlab_bench: %s\n", e.what());
        return 2;
    }
    if (cfg.layers.empty())
        usage_error("no layer of " + o.shapes + " matches --filter " + o.filter);
    cfg.batch = o.mb;
    cfg.passes = o.passes;
    cfg.algos = algo_list(o);
    cfg.threads = o.threads;
    cfg.timing = o.timing;
    cfg.rtol = o.rtol;
    cfg.reference = ref_direct ? "direct" : "peer";
    if (use_peer) cfg.peer = bench::PeerConv::spec();
    cfg.measure_peak = o.peak;
    cfg.retime_slow = o.retime_slow;
    cfg.alone = o.alone;
    // Each timed call packs its own weights, as the algorithms do when called alone.
    cfg.prepared_weights = false;
    cfg.shapes_file = o.shapes;
    for (int i = 0; i < argc; ++i)
        cfg.command += (i ? " " : "") + convlab::bench::shell_quote(argv[i]);
    try {
        convlab::bench::check_selection(cfg);
    } catch (const convlab::Error& e) {
        usage_error(std::string("--") + e.what());
    }

    // The CSV grows row by row in a temporary beside --csv (output_file.hpp: regular files only,
    // symlinks written through), renamed into place when the run ends.
    std::unique_ptr<convlab::OutputFile> csv_file;
    std::ofstream csv;
    if (!o.csv.empty()) {
        try {
            csv_file = std::make_unique<convlab::OutputFile>(o.csv);
        } catch (const convlab::Error& e) {
            usage_error(std::string("--csv: ") + e.what());
        }
        csv.open(csv_file->temp_path());
        if (!csv) {
            csv_file.reset();  // usage_error exits: the temporary goes first
            usage_error("cannot write --csv " + o.csv);
        }
        csv << "layer,descriptor,pass,algorithm,check,max_err,median_ms,min_ms,max_ms,runs,gflops,"
               "onednn_median_ms,onednn_min_ms,onednn_gflops,ratio,onednn_impl\n";
    }

    // [SECTION] header
    std::printf("convlab_bench %s\n", CONVLAB_VERSION);
    const double load = bench::load_average();
    const convlab::bench::Machine described = convlab::bench::describe_machine();
    std::printf(
        "machine: CPU %s (%d logical CPUs) | threads %d | compiler %s (engine ISA: %s) | "
        "%s | %s\n",
        bench::cpu_model().c_str(), hw, threads, CONVLAB_COMPILER, described.engine_isa.c_str(),
        use_peer ? bench::PeerConv::describe().c_str() : "oneDNN: not measured",
        bench::local_date().c_str());
    std::printf(
        "load average %.2f before the run%s\n", load,
        load > 0.5 ? " (the machine was busy; see the CPU share of other processes below)" : "");
    std::printf("shapes: %s (%zu layers%s), batch %s, fp32, each layer counted once\n",
                o.shapes.c_str(), cfg.layers.size(), o.filter.empty() ? "" : ", filtered",
                o.mb ? std::to_string(*o.mb).c_str() : "from the file");
    std::printf("allocator: %s\n",
                o.steady_alloc
                    ? "steady (mallopt: M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 2 GiB; "
                      "freed work buffers stay mapped)"
                    : "system (glibc defaults; per-call work buffers may be faulted in on every "
                      "call; --alloc steady reuses them)");
    if (o.timing.reps > 0) {
        std::printf("timing: %d warm-up runs, then %d timed runs; median and min reported\n",
                    o.timing.warmup, o.timing.reps);
    } else {
        std::printf(
            "timing: %d warm-up runs, then runs until >= %.2f s measured and >= %d runs "
            "(at most %d), oneDNN and the algorithms of a layer %s; median and min reported\n",
            o.timing.warmup, o.timing.min_seconds, o.timing.min_reps, o.timing.max_reps,
            o.alone ? "each in rounds of its own (--alone: hot caches)" : "in alternating rounds");
    }
    if (use_peer) {
        std::printf(
            "oneDNN: convolution_forward (prop_kind::forward_training), "
            "convolution_backward_data, convolution_backward_weights; "
            "algorithm::convolution_direct, format_tag::any (oneDNN's own layouts), "
            "reorders outside the timed region\n");
    }
    std::printf(
        "check: each algorithm once per layer against %s, random data in [-1,1), "
        "|got-ref| <= %.0e * max(|ref|, rms(ref)); column = max of that ratio\n",
        ref_direct ? "the engine's direct loops" : "oneDNN's result", o.rtol);
    std::printf(
        "GFLOP/s = flops()/median time, flops = 2*N*K*(C/G)*prod(out)*prod(kernel) per "
        "pass; %%pk = GFLOP/s / measured fp32 peak; ratio = engine median / oneDNN median "
        "(> 1: engine slower)\n");
    for (const Pass pass : o.passes) {
        std::string names;
        for (const std::string& a : cfg.algos) {
            const auto colon = a.find(':');
            if (a == "all") {
                for (const convlab::Algorithm* x : convlab::algorithms(pass))
                    names += std::string(names.empty() ? "" : ", ") + x->name;
            } else if (colon == std::string::npos) {
                names += (names.empty() ? "" : ", ") + a;
            } else if (a.substr(0, colon) == convlab::pass_name(pass)) {
                names += (names.empty() ? "" : ", ") + a.substr(colon + 1);
            }
        }
        std::printf("%-10s engine: %s\n", convlab::pass_name(pass),
                    names.empty() ? "(none)" : names.c_str());
    }

    std::size_t name_w = 5;
    for (const bench::Layer& l : cfg.layers) name_w = std::max(name_w, l.problem.name.size());
    const int nw = static_cast<int>(name_w);

    // [SECTION] the layers as parsed: canonical descriptor, work, leftover r per axis
    std::printf("\nlayers (as parsed; pe = end padding, r = leftover per axis):\n");
    double all_flops = 0;
    for (std::size_t li = 0; li < cfg.layers.size(); ++li) {
        convlab::Problem p = cfg.layers[li].problem;
        if (o.mb) p.mb = *o.mb;
        std::string pe, r;
        for (int i = 0; i < p.ndims; ++i) {
            const auto a = static_cast<std::size_t>(i);
            pe += (i ? "," : "") + std::to_string(p.pad_end[a]);
            r += (i ? "," : "") + std::to_string(p.validate().empty() ? p.leftover(i) : 0);
        }
        all_flops += p.flops();
        convlab::Problem unnamed = p;
        unnamed.name.clear();
        std::printf("%3zu %-*s %-44s %8.4f GFLOP  pe (%s)  r (%s)\n", li + 1, nw, p.name.c_str(),
                    convlab::to_descriptor(unnamed).c_str(), p.flops() * 1e-9, pe.c_str(),
                    r.c_str());
    }
    std::printf("    total %.4f GFLOP per pass\n", all_flops * 1e-9);
    std::fflush(stdout);

    // [SECTION] the table, a row as each measurement comes from the runner
    // Without oneDNN the peer columns are left out.
    const int table_w = nw + (use_peer ? 129 : 82);
    double peak = 0;  // the measured fp32 peak, as the runner has it
    // Share of the measured peak, "63" (percent), or "-" without a peak.
    auto pct_peak = [&](double gf) -> std::string {
        if (peak <= 0) return "-";
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.0f", 100 * gf / peak);
        return buf;
    };
    using convlab::bench::Measurement;
    std::map<std::pair<Pass, std::string>, Total> totals;
    std::vector<std::pair<Pass, std::string>> order;  // (pass, algorithm) as first measured
    std::map<Pass, PeerTotal> peer_totals;
    std::vector<std::string> problems;  // layers that could not run at all
    std::vector<std::string> disturbed, slow;
    int retimed = 0;  // passes timed again
    bool header_done = false;
    std::size_t shown = 0;  // rows of the results printed
    // Copies, not pointers: the runner's rows move as its vector grows.
    std::optional<Measurement> peer_row;  // the peer's row of the current (layer, pass)
    std::vector<Measurement> group;       // the rows of the current (layer, pass)
    const convlab::bench::Results* results = nullptr;

    auto layer_name = [&](const Measurement& m) -> std::string {
        return m.layer < results->layers.size() ? results->layers[m.layer].name : "";
    };
    // The notes of a (layer, pass) whose rows are all printed: other processes, a slow machine.
    auto end_group = [&] {
        if (group.empty()) return;
        const Measurement& m0 = group.front();
        const std::string name = layer_name(m0);
        const char* pname = convlab::pass_name(m0.pass);
        double foreign = -1, speed = -1;
        int again = 0;
        for (const Measurement& m : group) {
            foreign = std::max(foreign, m.foreign_cpu);
            if (m.speed >= 0) speed = speed < 0 ? m.speed : std::min(speed, m.speed);
            again = std::max(again, m.retimed);
        }
        retimed += again > 0 ? 1 : 0;
        if (speed >= 0 && speed < bench::kSlowMachine) {
            std::printf(
                "%-*s NOTE: %s timed while the machine ran at %.0f%% of its peak (%d "
                "attempts); its times are suspect\n",
                nw, name.c_str(), pname, speed * 100, again + 1);
            slow.push_back(name + " " + pname);
        }
        if (foreign > convlab::bench::kNoisyForeignCpu) {
            std::printf(
                "%-*s NOTE: other processes used %.0f%% of the CPUs while this pass was "
                "measured; its times are suspect\n",
                nw, name.c_str(), foreign * 100);
            if (disturbed.empty() || disturbed.back() != name) disturbed.push_back(name);
        }
        group.clear();
        peer_row.reset();
    };
    auto print_row = [&](const Measurement& m, const std::string& algo, const std::string& check,
                         bool timed, double max_err, bool is_peer) {
        const std::string name = layer_name(m);
        const char* pname = convlab::pass_name(m.pass);
        const bench::Timing& t = m.total;
        const bool peer_ok = peer_row && peer_row->ran;
        const bench::Timing* peer_t = peer_ok ? &peer_row->total : nullptr;
        char eng_cols[80], peer_cols[80];
        if (timed) {
            std::snprintf(eng_cols, sizeof eng_cols, "%9.4f %9.4f %8.2f %4s", t.median_ms, t.min_ms,
                          m.gflops(), pct_peak(m.gflops()).c_str());
        } else {
            std::snprintf(eng_cols, sizeof eng_cols, "%9s %9s %8s %4s", "-", "-", "-", "-");
        }
        if (peer_t) {
            char ratio[16] = "-";
            const double q = timed ? t.median_ms / peer_t->median_ms : 0;
            if (timed && !is_peer)
                std::snprintf(ratio, sizeof ratio, q < 1000 ? "%.2f" : "%.0f", q);
            std::snprintf(peer_cols, sizeof peer_cols, "%9.4f %8.2f %4s %6s", peer_t->median_ms,
                          peer_row->gflops(), pct_peak(peer_row->gflops()).c_str(), ratio);
        } else {
            std::snprintf(peer_cols, sizeof peer_cols, "%9s %8s %4s %6s", "-", "-", "-", "-");
        }
        const std::string peer_impl = peer_row ? (peer_ok ? peer_row->impl : "n/a") : "-";
        std::printf("%-*s %-10s %-13s %-22s %s", nw, name.c_str(), pname, algo.c_str(),
                    check.c_str(), eng_cols);
        if (use_peer) std::printf(" | %s  %s", peer_cols, peer_impl.c_str());
        std::printf("\n");
        std::fflush(stdout);
        if (csv) {
            csv << csv_field(name) << ','
                << csv_field(m.layer < results->layers.size() ? results->layers[m.layer].descriptor
                                                              : "")
                << ',' << pname << ',' << csv_field(algo) << ',' << csv_field(check) << ','
                << max_err << ',';
            if (timed) {
                csv << t.median_ms << ',' << t.min_ms << ',' << t.max_ms << ',' << t.runs << ','
                    << m.gflops() << ',';
            } else {
                csv << ",,,,,";
            }
            if (peer_t) {
                csv << peer_t->median_ms << ',' << peer_t->min_ms << ',' << peer_row->gflops()
                    << ',';
                if (timed && !is_peer) csv << t.median_ms / peer_t->median_ms;
                csv << ',' << peer_impl << '\n';
            } else {
                csv << ",,,,\n";
            }
        }
    };
    auto show = [&](const Measurement& m) {
        const std::string name = layer_name(m);
        if (!group.empty() && (group.front().layer != m.layer || group.front().pass != m.pass))
            end_group();
        group.push_back(m);
        group.back().trace.clear();
        if (m.error.rfind("invalid problem: ", 0) == 0) {
            const std::string why = m.error.substr(17);
            if (problems.empty() || problems.back() != name + ": " + why) {
                std::printf("%-*s ERROR: invalid problem: %s\n", nw, name.c_str(), why.c_str());
                problems.push_back(name + ": " + why);
            }
            return;
        }
        if (m.peer) {
            peer_row = m;
            if (!m.ran) {
                std::printf("%-*s %-10s oneDNN cannot run this pass: %s\n", nw, name.c_str(),
                            convlab::pass_name(m.pass), m.error.c_str());
                return;
            }
            PeerTotal& pt = peer_totals[m.pass];
            ++pt.layers;
            pt.ms += m.total.median_ms;
            pt.flops += m.flops;
            // With the direct reference, oneDNN is checked too.
            if (ref_direct) print_row(m, "(oneDNN)", check_text(m), true, m.check.max_rel, true);
            return;
        }
        const std::pair<Pass, std::string> key{m.pass, m.algorithm};
        if (!totals.count(key)) order.push_back(key);
        Total& tot = totals[key];
        if (!m.ran) {
            ++tot.errors;
            tot.failures.push_back(name + (m.error.rfind("threw while timed", 0) == 0
                                               ? " (error while timing)"
                                               : " (error)"));
            print_row(m, m.algorithm, check_text(m), false, 0, false);
            return;
        }
        if (m.check.reference != "self") {
            if (!m.check.checked) {
                ++tot.failed;
                tot.failures.push_back(name + " (unchecked)");
            } else if (m.check.pass) {
                ++tot.passed;
            } else {
                ++tot.failed;
                tot.failures.push_back(name);
            }
        }
        ++tot.layers;
        tot.ms += m.total.median_ms;
        tot.flops += m.flops;
        if (peer_row && peer_row->ran) {
            ++tot.peer_layers;
            tot.ms_paired += m.total.median_ms;
            tot.peer_ms_paired += peer_row->total.median_ms;
            tot.flops_paired += m.flops;
        }
        print_row(m, m.algorithm, check_text(m), true, m.check.max_rel, false);
    };
    // The rows of the results not yet printed (the runner's progress, and its end).
    auto catch_up = [&](const convlab::bench::Results& r) {
        results = &r;
        if (!header_done) {
            header_done = true;
            peak = r.machine.peak_gflops;
            if (o.peak)
                std::printf(
                    "fp32 peak: %.1f GFLOP/s for %d threads (register-only FMA loop, measured "
                    "before the run; %.1f per thread)\n",
                    r.machine.peak_gflops, threads, r.machine.peak_gflops_1t);
            std::printf("\n");
            print_rule(table_w);
            std::printf("%-*s %-10s %-13s %-22s %9s %9s %8s %4s", nw, "layer", "pass", "algorithm",
                        "check", "median ms", "min ms", "GFLOP/s", "%pk");
            if (use_peer)
                std::printf(" | %9s %8s %4s %6s  %s", "oneDNN ms", "GFLOP/s", "%pk", "ratio",
                            "oneDNN impl");
            std::printf("\n");
            print_rule(table_w);
        }
        for (; shown < r.rows.size(); ++shown) show(r.rows[shown]);
    };
    cfg.progress = [&](const convlab::bench::Config::Progress& pr) {
        if (pr.results) catch_up(*pr.results);
    };

    convlab::bench::Results r;
    try {
        r = convlab::bench::run(cfg);
    } catch (const convlab::Error& e) {
        std::fprintf(stderr, "convlab_bench: %s\n", e.what());
        return 2;
    }
    catch_up(r);  // rows the runner added after its last progress call
    end_group();
    peak = r.machine.peak_gflops;
    print_rule(table_w);
    if (o.peak)
        std::printf(
            "fp32 peak measured again after the run: %.1f GFLOP/s kept (the higher counts in "
            "the totals)\n",
            r.machine.peak_gflops);

    // [SECTION] summary per pass
    std::printf(
        "\nTotals per pass: sum of per-layer medians, each layer counted once "
        "(%zu layers, batch %s, %d threads)\n",
        cfg.layers.size(), o.mb ? std::to_string(*o.mb).c_str() : "from the file", threads);
    const int sum_w = use_peer ? 128 : 81;
    print_rule(sum_w);
    std::printf("%-10s %-13s %6s %-12s %11s %8s %6s", "pass", "algorithm", "layers", "checks",
                "engine ms", "GFLOP/s", "%peak");
    if (use_peer)
        std::printf(" | %11s %8s %6s | %13s", "oneDNN ms", "GFLOP/s", "%peak", "engine/oneDNN");
    std::printf("\n");
    print_rule(sum_w);
    bool all_ok = problems.empty();
    for (const Pass pass : o.passes) {
        const char* pname = convlab::pass_name(pass);
        const PeerTotal pt = peer_totals.count(pass) ? peer_totals.at(pass) : PeerTotal{};
        for (const auto& key : order) {
            if (key.first != pass) continue;
            const Total& t = totals[key];
            const std::string& algo = key.second;
            char checks[32];
            const int judged = t.passed + t.failed + t.errors;
            if (ref_direct && algo == "direct") {
                std::snprintf(checks, sizeof checks, "reference");
            } else {
                std::snprintf(checks, sizeof checks, "%d/%d %s", t.passed, judged,
                              t.failed + t.errors ? "FAIL" : "PASS");
            }
            if (t.failed + t.errors) all_ok = false;
            char peer_cols[80] = "";
            if (t.peer_layers > 0) {
                const double pg = bench::gflops(t.flops_paired, t.peer_ms_paired);
                std::snprintf(peer_cols, sizeof peer_cols, "%11.3f %8.1f %6s | %12.2fx",
                              t.peer_ms_paired, pg, pct_peak(pg).c_str(),
                              t.ms_paired / t.peer_ms_paired);
            } else {
                std::snprintf(peer_cols, sizeof peer_cols, "%11s %8s %6s | %13s", "-", "-", "-",
                              "-");
            }
            std::printf("%-10s %-13s %6d %-12s %11.3f %8.1f %6s", pname, algo.c_str(), t.layers,
                        checks, t.ms, bench::gflops(t.flops, t.ms),
                        pct_peak(bench::gflops(t.flops, t.ms)).c_str());
            if (use_peer) std::printf(" | %s", peer_cols);
            std::printf("\n");
            if (t.peer_layers > 0 && t.peer_layers != t.layers) {
                std::printf("%-10s %-13s note: ratio over the %d layers oneDNN also ran\n", "", "",
                            t.peer_layers);
            }
            if (t.layers != static_cast<int>(cfg.layers.size())) {
                std::printf(
                    "%-10s %-13s note: total over %d of %zu layers (others failed to "
                    "run)\n",
                    "", "", t.layers, cfg.layers.size());
            }
            if (!t.failures.empty()) {
                std::string list;
                for (const std::string& f : t.failures) list += (list.empty() ? "" : ", ") + f;
                std::printf("%-10s %-13s FAILED: %s\n", "", "", list.c_str());
            }
        }
        if (pt.layers > 0) {
            std::printf("%-10s %-13s %6d %-12s %11s %8s %6s | %11.3f %8.1f %6s |\n", pname,
                        "oneDNN", pt.layers, "", "", "", "", pt.ms, bench::gflops(pt.flops, pt.ms),
                        pct_peak(bench::gflops(pt.flops, pt.ms)).c_str());
        }
    }
    print_rule(sum_w);
    if (peak > 0)
        std::printf("%%peak: share of the measured fp32 peak, %.1f GFLOP/s (%d threads)\n", peak,
                    threads);
    if (const std::size_t rss = convlab::bench::peak_rss_bytes(); rss > 0)
        std::printf(
            "peak resident memory of this process (VmHWM, every algorithm and oneDNN): %.1f "
            "MiB\n",
            static_cast<double>(rss) / (1 << 20));
    for (const std::string& s : problems) std::printf("layer not run: %s\n", s.c_str());
    for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
    if (r.machine.foreign_cpu >= 0) {
        std::printf("other processes used %.1f%% of the machine's CPU time during the run%s\n",
                    r.machine.foreign_cpu * 100,
                    r.machine.foreign_cpu > convlab::bench::kNoisyForeignCpu
                        ? ": WARNING: timings are disturbed"
                        : "");
    }
    if (!disturbed.empty()) {
        std::string list;
        for (const std::string& d : disturbed) list += (list.empty() ? "" : ", ") + d;
        std::printf("layers measured while other work ran (> %.0f%% of the CPUs): %s\n",
                    convlab::bench::kNoisyForeignCpu * 100, list.c_str());
    }
    if (peak > 0) {
        std::string list;
        for (const std::string& d : slow) list += (list.empty() ? "" : ", ") + d;
        std::printf(
            "machine speed: %d passes timed again after a probe below %.0f%% of the peak; %zu "
            "still slow%s%s\n",
            retimed, bench::kSlowMachine * 100, slow.size(), slow.empty() ? "" : ": ",
            list.c_str());
    }
    if (csv_file) {
        csv.close();
        try {
            if (!csv) csv_file->fail("the rows could not be written");
            csv_file->commit();
        } catch (const convlab::Error& e) {
            std::fprintf(stderr, "convlab_bench: %s\n", e.what());
            return 2;
        }
    }
    std::printf("%s\n", all_ok ? "all checks PASS" : "SOME CHECKS FAILED (see FAIL/ERROR above)");
    return all_ok ? 0 : 1;
}
