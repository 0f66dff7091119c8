// convlab bench: times the engine's algorithms (and oneDNN) on a shape set, verifies every
// measured configuration, and writes CSV/JSON results and the charts. Index:
//   [SECTION] options to a runner configuration
//   [SECTION] progress bar (stderr, only on a terminal)
//   [SECTION] outputs and summary
//   [SECTION] the command and the in-process quick run
#include "cli/cmd_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "charts/chart.hpp"
#include "charts/chart_export.hpp"
#include "cli/cli_common.hpp"
#include "convlab/tuning_env.hpp"
#include "data/data_dir.hpp"
#include "model/timings_state.hpp"
#include "onednn_peer.hpp"

namespace convlab::cli {

namespace fs = std::filesystem;

namespace {

// [SECTION] options to a runner configuration

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

double parse_number(std::string_view flag, const std::string& text, double lo) {
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(x >= lo) || !std::isfinite(x))
        throw Error(std::string(flag) + " '" + text +
                    "': expected a number >= " + std::to_string(lo));
    return x;
}

const Command& command();

// The command line that reproduces the run, from the options as given.
std::string reproduce(const Options& opts) {
    std::string s = "convlab bench";
    for (const OptionSpec& o : command().options) {
        const std::string* v = opts.get(o.name);
        if (!v) continue;
        s += std::string(" ") + o.name;
        if (o.value) s += " " + bench::shell_quote(*v);
    }
    return s;
}

// The runner's configuration and the values swept (one of each: a single run).
struct BenchPlan {
    bench::Config cfg;
    std::vector<std::optional<dim_t>> batches;
    std::vector<int> threads;
    bool sweep() const { return batches.size() * threads.size() > 1; }
    bench::Results run() const {
        return sweep() ? bench::run_sweep(cfg, batches, threads) : bench::run(cfg);
    }
};

BenchPlan plan_from(const Options& opts) {
    BenchPlan plan;
    bench::Config& cfg = plan.cfg;
    cfg.tuning = tuning_from_environment();
    const bool quick = opts.has("--quick");
    // The data folder is looked up only when --shapes does not name the file.
    if (const std::string* s = opts.get("--shapes"))
        cfg.shapes_file = *s;
    else
        cfg.shapes_file = data::shapes_dir() + "/" + (quick ? "classroom" : "resnet50") + ".txt";
    cfg.layers = in_context("--shapes", [&] { return bench::read_shape_file(cfg.shapes_file); });
    if (const std::string* f = opts.get("--filter")) {
        std::vector<bench::Layer> kept;
        for (auto& l : cfg.layers)
            if (l.problem.name.find(*f) != std::string::npos) kept.push_back(std::move(l));
        if (kept.empty()) throw Error("--filter '" + *f + "': no layer of " + cfg.shapes_file);
        cfg.layers = std::move(kept);
    }
    // --batch 1,32 and --threads 1,2: every combination is a run (rows with batch and threads).
    for (const std::string& b : split_list(opts.value_or("--batch", "1"))) {
        if (b == "file") {
            plan.batches.push_back(std::nullopt);
        } else {
            plan.batches.push_back(parse_integer("--batch", b, 1, 1 << 16));
        }
    }
    if (plan.batches.empty()) throw Error("--batch: empty list (e.g. 1 or 1,32 or file)");
    if (plan.batches.size() > 1 &&
        std::count(plan.batches.begin(), plan.batches.end(), std::nullopt))
        throw Error("--batch: 'file' keeps each layer's mb and cannot be listed with numbers");
    cfg.batch = plan.batches.front();
    if (const std::string* p = opts.get("--passes")) {
        cfg.passes.clear();
        for (const std::string& s : split_list(*p))
            cfg.passes.push_back(in_context("--passes", [&] { return parse_pass(s); }));
        for (Pass q : cfg.passes)
            if (q == Pass::BackwardBias)
                throw Error("--passes: bwd_bias is not benchmarked (fwd, bwd_data, bwd_weight)");
        if (cfg.passes.empty()) throw Error("--passes: empty list (fwd, bwd_data, bwd_weight)");
    }
    if (const std::string* a = opts.get("--algos")) cfg.algos = split_list(*a);
    for (const std::string& t : split_list(opts.value_or("--threads", "0")))
        plan.threads.push_back(static_cast<int>(parse_integer("--threads", t, 0, 1024)));
    if (plan.threads.empty()) throw Error("--threads: empty list (e.g. 2 or 1,2)");
    for (std::size_t i = 1; i < plan.threads.size(); ++i)
        if (std::count(plan.threads.begin(), plan.threads.begin() + static_cast<long>(i),
                       plan.threads[i]))
            throw Error("--threads: " + std::to_string(plan.threads[i]) + " given twice");
    for (std::size_t i = 1; i < plan.batches.size(); ++i)
        if (std::count(plan.batches.begin(), plan.batches.begin() + static_cast<long>(i),
                       plan.batches[i]))
            throw Error("--batch: " + std::to_string(*plan.batches[i]) + " given twice");
    cfg.threads = plan.threads.front();
    if (quick) {
        cfg.timing.warmup = 1;
        cfg.timing.min_reps = 5;
        cfg.timing.min_seconds = 0.01;
    }
    if (const std::string* v = opts.get("--warmup"))
        cfg.timing.warmup = static_cast<int>(parse_integer("--warmup", *v, 0, 1000));
    if (const std::string* v = opts.get("--reps"))
        cfg.timing.reps = static_cast<int>(parse_integer("--reps", *v, 1, 100000));
    if (const std::string* v = opts.get("--min-time"))
        cfg.timing.min_seconds = parse_number("--min-time", *v, 0);
    if (const std::string* v = opts.get("--retime-slow"))
        cfg.retime_slow = static_cast<int>(parse_integer("--retime-slow", *v, 0, 10));
    cfg.interleave_passes = opts.has("--interleave-passes");
    if (const std::string* v = opts.get("--dtype"))
        cfg.dtype = in_context("--dtype", [&] { return parse_dtype(*v); });
    if (const std::string* v = opts.get("--weights")) {
        if (*v != "once" && *v != "per-call")
            throw Error("--weights: '" + *v + "' is not one of once, per-call");
        cfg.prepared_weights = *v == "once";
    }
    const bool fp32 = cfg.dtype == DType::f32;
    if (const std::string* v = opts.get("--rtol")) {
        const double x = parse_number("--rtol", *v, 1e-12);
        (fp32 ? cfg.rtol : cfg.dtype == DType::f16 ? cfg.rtol_fp16 : cfg.rtol_bf16) = x;
    }
    cfg.reference = opts.value_or("--reference", "auto");
    // oneDNN computes fp32 and bf16 (bf16 operands, fp32 accumulation): with fp16 / bf16 it is
    // left out unless asked for, and for fp16 asking is an error.
    const std::string peer =
        opts.value_or("--peer", ::bench::PeerConv::available() && fp32 ? "onednn" : "none");
    const bool onednn = peer == "onednn" || peer == "onednn-auto" || peer == "onednn-winograd" ||
                        peer == "onednn-nchw";
    if (onednn && cfg.dtype == DType::f16)
        throw Error("--peer " + peer +
                    ": oneDNN is timed in fp32 and bf16 only; --dtype fp16 times the DaVinci "
                    "fractal algorithms alone (use --peer none, or --dtype bf16 or fp32)");
    if (onednn) {
        const bool plain = peer == "onednn-nchw";
        cfg.peer =
            ::bench::PeerConv::spec(peer == "onednn" || plain ? "direct" : peer.substr(7), plain);
        if (!cfg.peer) throw Error("--peer " + peer + ": this convlab was built without oneDNN");
        // Weights are treated as the peer's: packed once where it reorders its own before its
        // calls, per call where it reads them as given (unless --weights says otherwise).
        if (!opts.get("--weights")) cfg.prepared_weights = cfg.peer->reorders_weights;
    } else if (peer != "none") {
        throw Error("--peer '" + peer +
                    "': expected onednn, onednn-auto, onednn-winograd, onednn-nchw or none");
    }
    cfg.command = reproduce(opts);
    // --algos and --reference are checked here, before anything is printed or measured; the
    // engine's "algos: ..." becomes "--algos: ...".
    try {
        bench::check_selection(cfg);
    } catch (const Error& e) {
        throw Error(std::string("--") + e.what());
    }
    cfg.cancel = &cancel_flag();
    return plan;
}

// [SECTION] progress bar (stderr, only on a terminal)

struct ProgressBar {
    bool on = ::isatty(STDERR_FILENO) == 1;
    void operator()(const bench::Config::Progress& p) const {
        if (!on || p.total == 0) return;
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(kWidth * p.done / p.total);
        std::string bar(static_cast<std::size_t>(filled), '#');
        bar.resize(kWidth, '.');
        std::string what = p.what.substr(0, 48);
        std::fprintf(stderr, "\r[%s] %zu/%zu %-48s", bar.c_str(), p.done, p.total, what.c_str());
        if (p.done == p.total) std::fprintf(stderr, "\n");
        std::fflush(stderr);
    }
};

// [SECTION] outputs and summary

void make_dir(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) throw Error("--out '" + dir + "': cannot create directory");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error("--out '" + dir + "': directory not writable");
}

std::string fmt(const char* f, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, x);
    return buf;
}

// "b32_t2" / "batch 32, 2 threads" for one combination of a sweep.
std::string sweep_suffix(const bench::Results& part) {
    return (part.batch > 0 ? "b" + std::to_string(part.batch) : std::string("bfile")) + "_t" +
           std::to_string(part.machine.threads);
}
std::string sweep_label(const bench::Results& part) {
    return (part.batch > 0 ? "batch " + std::to_string(part.batch) : std::string("file batch")) +
           ", " + std::to_string(part.machine.threads) +
           (part.machine.threads == 1 ? " thread" : " threads");
}

void print_run_summary(const bench::Results& r, std::ostream& out);

}  // namespace

std::vector<std::string> write_bench_outputs(const bench::Results& r, const std::string& dir,
                                             std::ostream& log) {
    make_dir(dir);
    for (const std::string& why : charts::skipped_charts(r)) log << why << "\n";
    // A sweep: each combination's charts, named after it (gflops_fwd_b32_t2).
    std::vector<charts::Chart> list;
    const std::vector<bench::Results> parts = bench::split_sweep(r);
    for (const bench::Results& part : parts)
        for (charts::Chart& c : charts::standard_charts(part)) {
            if (parts.size() > 1) {
                c.id += "_" + sweep_suffix(part);
                c.title += " (" + sweep_label(part) + ")";
            }
            list.push_back(std::move(c));
        }
    // The Timings panel's export, with every format and the results files.
    return app::export_timings(r, list, dir, app::TimingsExport{});
}

void print_bench_summary(const bench::Results& r, std::ostream& out) {
    const std::vector<bench::Results> parts = bench::split_sweep(r);
    if (parts.size() == 1) {
        print_run_summary(r, out);
        return;
    }
    for (const bench::Results& part : parts) {
        out << "== " << sweep_label(part) << " ==\n";
        print_run_summary(part, out);
    }
    out << "sweep: " << r.verification_summary() << "\n";
}

namespace {

void print_run_summary(const bench::Results& r, std::ostream& out) {
    out << "Totals per pass: sum of per-layer median times over the layers where the "
           "measurement was verified (each layer counted once)\n";
    char line[320];
    std::snprintf(line, sizeof line, "  %-10s %-22s %7s %12s %9s %6s %10s\n", "pass", "algorithm",
                  "layers", "total ms", "GFLOP/s", "%peak", "vs peer");
    out << line;
    std::vector<Pass> passes;
    for (const auto& m : r.rows)
        if (std::find(passes.begin(), passes.end(), m.pass) == passes.end())
            passes.push_back(m.pass);
    for (Pass p : passes) {
        std::vector<std::string> algos;
        std::string peer;
        for (const auto& m : r.rows)
            if (m.pass == p && std::find(algos.begin(), algos.end(), m.algorithm) == algos.end()) {
                algos.push_back(m.algorithm);
                if (m.peer) peer = m.algorithm;
            }
        double peer_ms = 0;
        if (!peer.empty())
            for (const auto& m : r.rows)
                if (m.pass == p && m.algorithm == peer && m.valid()) peer_ms += m.total.median_ms;
        for (const std::string& a : algos) {
            double ms = 0, flops = 0, peer_paired = 0, calm_ms = 0, calm_peer = 0;
            int n = 0, bad = 0, noisy = 0, calm = 0;
            for (const auto& m : r.rows) {
                if (m.pass != p || m.algorithm != a) continue;
                if (!m.valid()) {
                    ++bad;
                    continue;
                }
                ++n;
                noisy += m.noisy() ? 1 : 0;
                ms += m.total.median_ms;
                flops += m.flops;
                if (!peer.empty())
                    if (const auto* q = r.find(m.layer, p, peer); q && q->valid()) {
                        peer_paired += q->total.median_ms;
                        if (!m.noisy() && !q->noisy()) {
                            ++calm;
                            calm_ms += m.total.median_ms;
                            calm_peer += q->total.median_ms;
                        }
                    }
            }
            std::string ratio = "-";
            if (!peer.empty() && a != peer && peer_paired > 0)
                ratio = fmt("%.2fx", ms / peer_paired);
            // Noisy layers counted, and the ratio over the layers measured calm on both sides.
            std::string extra = bad ? "  " + std::to_string(bad) + " FAILED/not run" : "";
            if (noisy > 0) {
                extra += "  " + std::to_string(noisy) + " noisy";
                if (ratio != "-" && calm > 0)
                    extra += fmt("; %.2fx", calm_ms / calm_peer) + " over the " +
                             std::to_string(calm) + " calm";
            }
            const double gf = bench::gflops(flops, ms);
            const std::string pk =
                r.machine.peak_gflops > 0 ? fmt("%.0f%%", 100 * gf / r.machine.peak_gflops) : "-";
            std::snprintf(line, sizeof line, "  %-10s %-22s %7d %12.3f %9.1f %6s %10s%s\n",
                          pass_name(p), (a + (a == peer ? " (peer)" : "")).c_str(), n, ms, gf,
                          pk.c_str(), ratio.c_str(), extra.c_str());
            out << line;
        }
        (void)peer_ms;
    }
    const auto has = [&](const char* a) {
        return std::any_of(r.rows.begin(), r.rows.end(), [&](const bench::Measurement& m) {
            return m.pass == Pass::BackwardData && m.algorithm == a;
        });
    };
    if (has("via_forward") && has("col2im")) {
        const charts::WinCount w =
            charts::count_wins(r, Pass::BackwardData, "via_forward", "col2im");
        out << "bwd_data: via_forward faster than col2im in " << w.wins << " of " << w.compared
            << " layers";
        if (!w.winners.empty()) {
            out << " (";
            for (std::size_t i = 0; i < w.winners.size(); ++i)
                out << (i ? ", " : "") << w.winners[i];
            out << ")";
        }
        out << "\n";
    }
    if (r.machine.peak_gflops > 0)
        out << "%peak: share of the fp32 peak measured in the same run, "
            << fmt("%.1f", r.machine.peak_gflops) << " GFLOP/s for " << r.machine.threads
            << (r.machine.threads == 1 ? " thread\n" : " threads\n");
    out << "machine: " << r.machine.summary() << "\n";
    out << "noise: " << r.machine.noise() << "\n";
    if (const std::string s = r.speed_summary(); !s.empty()) out << "speed: " << s << "\n";
    out << "verification: " << r.verification_summary() << "\n";
}

}  // namespace

// [SECTION] the command and the in-process quick run

namespace {

// Exit status 1, the files being written, when any measurement failed or did not run.
void fail_if_unverified(const bench::Results& r, const std::string& dir) {
    if (r.failed() > 0)
        throw CommandFailed(std::to_string(r.failed()) + " of " + std::to_string(r.rows.size()) +
                            " measurements failed verification or did not run; they are marked "
                            "FAIL in the files written to " +
                            dir + " and not plotted");
}

// Several runs' results.json on one set of charts (machines_<pass>): nothing is measured. Exit
// status 1, the charts written, when a run holds a failed measurement.
void replot_runs(const std::vector<std::string>& files, const std::string& dir, std::ostream& out) {
    std::vector<bench::Results> runs;
    std::vector<std::string> names;
    for (const std::string& f : files) {
        runs.push_back(in_context("--replot", [&] {
            return app::parse_results(read_input_file(f, app::kMaxResultsBytes, "a results file"),
                                      "'" + f + "'");
        }));
        names.push_back(f);
    }
    const std::vector<std::string> labels = charts::run_labels(runs, names);
    std::vector<charts::Chart> list;
    for (const Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight}) {
        charts::Chart c = charts::machines_chart(runs, labels, pass);
        if (c.x.categories.empty()) {
            out << c.id << ": skipped, no algorithm of this pass in every run\n";
            continue;
        }
        list.push_back(std::move(c));
    }
    if (list.empty()) throw Error("--replot: the runs have no pass and algorithm in common");
    make_dir(dir);
    std::vector<std::string> paths;
    for (const charts::Chart& c : list)
        for (const std::string& p : charts::export_chart_all(c, dir)) paths.push_back(p);
    for (std::size_t k = 0; k < runs.size(); ++k)
        out << "run " << k + 1 << ": " << labels[k] << " (" << files[k]
            << "): " << runs[k].verification_summary() << "\n";
    for (const charts::Chart& c : list)
        for (const std::string& a : c.annotations) out << c.id << ": " << a << "\n";
    out << "wrote " << paths.size() << " files to " << dir << " (" << list.size() << " charts of "
        << runs.size() << " runs side by side, as SVG, PNG and PDF; not measured "
        << "again)\n";
    std::size_t failed = 0;
    for (const bench::Results& r : runs) failed += r.failed();
    if (failed > 0)
        throw CommandFailed(std::to_string(failed) +
                            " measurements of these runs failed verification or did not run; "
                            "their bars are FAIL markers");
}

void run_bench(const Options& opts, std::ostream& out) {
    const std::string dir = opts.required("bench", "--out");
    if (!opts.positional().empty() && !opts.has("--replot"))
        throw Error("bench: '" + opts.positional().front() +
                    "': more results files belong to --replot (--replot a.json b.json ...)");
    if (const std::string* from = opts.get("--replot")) {
        if (opts.has("--trace"))
            throw Error(
                "--trace: the spans of timed calls come from a run; --replot times nothing");
        if (!opts.positional().empty()) {
            std::vector<std::string> files{*from};
            files.insert(files.end(), opts.positional().begin(), opts.positional().end());
            return replot_runs(files, dir, out);
        }
        // Redraw the charts of a finished run (its machine record and command are kept).
        const bench::Results r = in_context("--replot", [&] {
            return app::parse_results(
                read_input_file(*from, app::kMaxResultsBytes, "a results file"), "'" + *from + "'");
        });
        print_bench_summary(r, out);
        const std::vector<std::string> paths = write_bench_outputs(r, dir, out);
        out << "wrote " << paths.size() << " files to " << dir << " (redrawn from " << *from
            << ", not measured again)\n";
        fail_if_unverified(r, dir);
        return;
    }
    BenchPlan plan = plan_from(opts);
    bench::Config& cfg = plan.cfg;
    make_dir(dir);  // fail before measuring
    const std::string* trace = opts.get("--trace");
    if (trace) {
        in_context("--trace", [&] { check_output_path(*trace); });
        cfg.trace = true;
    }
    ProgressBar bar;
    cfg.progress = [&bar](const bench::Config::Progress& p) { bar(p); };
    out << "convlab bench: " << cfg.layers.size() << " layers of " << cfg.shapes_file
        << (cfg.peer ? ", peer " + cfg.peer->description : ", no peer")
        << (cfg.dtype == DType::f32 ? "" : std::string(", ") + dtype_name(cfg.dtype) + " storage")
        << (plan.sweep() ? ", " + std::to_string(plan.batches.size() * plan.threads.size()) +
                               " (batch, threads) combinations"
                         : std::string())
        << "\n";
    out.flush();
    const bench::Results r = plan.run();
    if (r.cancelled) out << "interrupted: writing the measurements made so far\n";
    for (const std::string& n : r.notes) out << "note: " << n << "\n";
    print_bench_summary(r, out);
    if (const std::size_t rss = bench::peak_rss_bytes(); rss > 0)
        out << "peak resident memory of this process (VmHWM): "
            << fmt("%.1f", static_cast<double>(rss) / (1 << 20)) << " MiB\n";
    const std::vector<std::string> paths = write_bench_outputs(r, dir, out);
    out << "wrote " << paths.size() << " files to " << dir << " (results.csv, results.json, "
        << (paths.size() - 2) / 3 << " charts as SVG, PNG and PDF)\n";
    if (trace) {
        in_context("--trace",
                   [&] { write_file(*trace, [&](std::ostream& o) { bench::write_trace(r, o); }); });
        out << "wrote " << *trace
            << " (the timed calls and their operations, Trace Event format)\n";
    }
    // Interrupted: the files hold what was measured (results.json "cancelled": true); exit 130.
    if (r.cancelled) throw Interrupted();
    fail_if_unverified(r, dir);
}

const Command& command() {
    static const Command c{
        "bench",
        "time every algorithm per layer, pass and operation, verified, with oneDNN; CSV/JSON + "
        "charts",
        "bench [--shapes FILE | --quick] --out DIR [options]",
        "Every measured configuration is first checked against a reference (direct loops when the\n"
        "layer is small enough, else oneDNN, else a second algorithm; the files say which) on\n"
        "random data in [-1, 1); a failed check is marked FAIL and never plotted as a time.\n"
        "Writes DIR/results.csv and DIR/results.json (one row per layer, pass, algorithm and\n"
        "operation) and the charts relative_bwd_data, ops_<pass>, gflops_<pass> as .svg, .png\n"
        "and .pdf, each with its verification status, machine record and this command line.\n"
        "A progress bar goes to stderr when it is a terminal. Exit status 1 (after writing the\n"
        "files) when any measurement failed verification or did not run, 2 on bad input.\n"
        "Ctrl-C (SIGINT, SIGTERM) stops after the current measurement: the files are written\n"
        "with what was measured (results.json \"cancelled\": true), exit status 130; a second\n"
        "Ctrl-C ends it at once.\n"
        "--replot FILE redraws a run's charts; --replot A.json B.json ... draws several runs\n"
        "(machines, builds) side by side: machines_<pass> charts, per algorithm the sum of its\n"
        "median times over the layers every run measured, one bar per run.\n",
        {{"--shapes", "FILE", "shape file (default assets/shapes/resnet50.txt)"},
         {"--quick", nullptr, "classroom-sized run under a minute (assets/shapes/classroom.txt)"},
         {"--batch", "N",
          "batch of every layer (default 1); 'file' keeps each line's mb; a list (1,32) "
          "sweeps"},
         {"--passes", "LIST", "comma-separated: fwd,bwd_data,bwd_weight (default: all three)"},
         {"--algos", "LIST", "comma-separated names or PASS:NAME (default: all but direct)"},
         {"--peer", "NAME",
          "onednn (default when built with it: convolution_direct, as PyTorch asks for) | "
          "onednn-auto (convolution_auto: oneDNN's choice) | onednn-winograd "
          "(convolution_winograd: 3x3 stride-1 layers only) | onednn-nchw (convolution_direct "
          "on the engine's plain NCHW/OIHW layouts instead of oneDNN's blocked ones) | none"},
         {"--threads", "T",
          "threads of the engine and the peer (default 0 = all cores); a list (1,2) sweeps: "
          "each (batch, threads) a set of rows, charts named ..._b32_t2"},
         {"--dtype", "TYPE",
          "fp32 (default) | fp16 | bf16: storage of the DaVinci fractal algorithms (fp32 "
          "accumulation); the others are fp32 only and skipped; with bf16, --peer onednn times "
          "oneDNN's bf16 convolution beside them"},
         {"--weights", "WHEN",
          "once (default): fwd and bwd_data weights packed once per layer (prepare_weights), "
          "outside the timed region, as oneDNN's are reordered | per-call: each call packs "
          "(the default with --peer onednn-nchw, whose weights are read as given)"},
         {"--warmup", "N", "untimed runs before timing (default 2)"},
         {"--reps", "N", "exactly N timed runs (default: runs filling --min-time, at least 3)"},
         {"--min-time", "S", "seconds of timed runs per measurement (default 0.2)"},
         {"--retime-slow", "N",
          "time a pass again, up to N times (default 2; 0 never), when the machine's FMA rate "
          "probed around it was below 90% of its peak; the fastest machine's attempt is kept"},
         {"--interleave-passes", nullptr,
          "time all passes of a layer in one window of alternating rounds (default: one window "
          "per pass), so that bwd_data / fwd ratios come from one machine state"},
         {"--reference", "REF", "auto (default) | direct | peer | an algorithm name"},
         {"--rtol", "X",
          "tolerance of the check, relative to max(|ref|, rms) (default 1e-4; fp16 4e-3, bf16 "
          "3e-2)"},
         {"--filter", "TEXT", "only layers whose name contains TEXT"},
         {"--replot", "FILE", "redraw the charts of a results.json (nothing is measured)"},
         {"FILE...", nullptr,
          "with --replot: more results.json files (other machines or builds), drawn side by "
          "side on machines_<pass> charts, one bar per run and algorithm"},
         {"--trace", "FILE",
          "also write the timed calls and their operations' spans as a Trace Event JSON file "
          "(Perfetto, chrome://tracing); the first 50 calls of each measurement"},
         {"--out", "DIR", "directory of the results and charts (created when missing)"},
         kMaxMemoryOption},
        run_bench};
    return c;
}

}  // namespace

const Command& bench_command() {
    return command();
}

int write_quick_timings(const std::string& dir, std::ostream& log) {
    try {
        Options opts;
        opts.set("--quick", "");
        opts.set("--out", dir);
        const bench::Results r = plan_from(opts).run();
        print_bench_summary(r, log);
        const auto paths = write_bench_outputs(r, dir, log);
        log << "wrote " << paths.size() << " files to " << dir << "\n";
        return r.failed() == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        log << "convlab: bench: " << e.what() << "\n";
        return 2;
    }
}

}  // namespace convlab::cli
