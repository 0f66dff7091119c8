// The benchmark runner (see convlab/bench.hpp). Index:
//   [SECTION] plan: which algorithms of which pass, and the reference of each check
//   [SECTION] one measurement: check once, then time with per-operation spans
//   [SECTION] run
//   [SECTION] sweeps
//   [SECTION] results summary
#include <algorithm>
#include <cmath>
#include <deque>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include "convlab/bench.hpp"
#include "convlab/davinci.hpp"
#include "convlab/profiler.hpp"
#include "convlab/runtime.hpp"

namespace convlab::bench {

namespace {

// [SECTION] plan: which algorithms of which pass, and the reference of each check

struct PassPlan {
    Pass pass;
    std::vector<const Algorithm*> algos;
};

const char* const kStorageAlgos =
    "fwd:fractal, bwd_data:fractal_via_forward, "
    "bwd_weight:fractal_via_forward";

// The runner's call of an algorithm with a storage dtype: the registry's own for fp32, else the
// DaVinci entry point with C0 16 and that storage.
std::function<void(const Problem&, const ConvArgs&, Profiler*)> storage_call(const Algorithm& a,
                                                                             DType dtype,
                                                                             Rule bf16_pairs) {
    if (dtype == DType::f32) return a.run;
    const davinci::Options o{davinci::kC0, dtype, bf16_pairs};
    const std::string_view name = a.name;
    if (a.pass == Pass::Forward && name == "fractal")
        return [o](const Problem& p, const ConvArgs& x, Profiler* prof) {
            davinci::forward_fractal(p, x, prof, o);
        };
    if (a.pass == Pass::BackwardData && name == "fractal_via_forward")
        return [o](const Problem& p, const ConvArgs& x, Profiler* prof) {
            davinci::backward_data_fractal_via_forward(p, x, prof, o);
        };
    if (a.pass == Pass::BackwardWeight && name == "fractal_via_forward")
        return [o](const Problem& p, const ConvArgs& x, Profiler* prof) {
            davinci::backward_weight_fractal_via_forward(p, x, prof, o);
        };
    throw Error(std::string("dtype: ") + dtype_name(dtype) + " storage is not supported by " +
                pass_name(a.pass) + ":" + a.name + " (fp32 only)");
}

std::vector<PassPlan> make_plan(const Config& cfg, std::vector<std::string>& notes) {
    std::vector<PassPlan> plan;
    for (Pass p : cfg.passes) {
        if (p == Pass::BackwardBias)
            throw Error("passes: bwd_bias is not benchmarked (fwd, bwd_data, bwd_weight)");
        for (const PassPlan& q : plan)
            if (q.pass == p) throw Error(std::string("passes: ") + pass_name(p) + " given twice");
        plan.push_back({p, {}});
    }
    if (plan.empty()) throw Error("passes: empty list (fwd, bwd_data, bwd_weight)");
    auto candidates = [&](Pass p) {
        std::vector<const Algorithm*> out = algorithms(p);
        for (const Algorithm& a : cfg.extra_algorithms)
            if (a.pass == p) out.push_back(&a);
        return out;
    };
    // With fp16 / bf16 storage only the registry's capable algorithms can run.
    const bool fp32 = cfg.dtype == DType::f32;
    auto capable = [&](const Algorithm* a) {
        const bool extra = std::any_of(cfg.extra_algorithms.begin(), cfg.extra_algorithms.end(),
                                       [&](const Algorithm& x) { return &x == a; });
        return fp32 || (!extra && supports_storage_dtype(a->pass, a->name));
    };
    std::vector<std::string> skipped;
    auto add = [&](PassPlan& pl, const Algorithm* a) {
        if (!capable(a)) {
            const std::string name = std::string(pass_name(pl.pass)) + ":" + a->name;
            if (std::find(skipped.begin(), skipped.end(), name) == skipped.end())
                skipped.push_back(name);
            return;
        }
        if (std::find(pl.algos.begin(), pl.algos.end(), a) == pl.algos.end()) pl.algos.push_back(a);
    };
    auto note_skipped = [&] {
        if (skipped.empty()) return;
        std::string list;
        for (const std::string& n : skipped) list += (list.empty() ? "" : ", ") + n;
        notes.push_back(std::string("dtype ") + dtype_name(cfg.dtype) + ": " + list +
                        " are fp32 only: skipped (" + dtype_name(cfg.dtype) +
                        " storage: " + kStorageAlgos + ")");
    };
    if (cfg.algos.empty()) {
        for (PassPlan& pl : plan)
            for (const Algorithm* a : candidates(pl.pass))
                if (std::string_view(a->name) != "direct") add(pl, a);
        note_skipped();
        return plan;
    }
    for (const std::string& tok : cfg.algos) {
        if (tok == "all") {
            for (PassPlan& pl : plan)
                for (const Algorithm* a : candidates(pl.pass)) add(pl, a);
            continue;
        }
        std::string name = tok;
        std::optional<Pass> only;
        if (const auto colon = tok.find(':'); colon != std::string::npos) {
            only = parse_pass(tok.substr(0, colon));
            name = tok.substr(colon + 1);
        }
        bool found = false;
        for (PassPlan& pl : plan) {
            if (only && pl.pass != *only) continue;
            for (const Algorithm* a : candidates(pl.pass)) {
                if (name == a->name) {
                    if (!capable(a))
                        throw Error(std::string("dtype: ") + dtype_name(cfg.dtype) +
                                    " storage is supported by " + kStorageAlgos + " only; " +
                                    pass_name(pl.pass) + ":" + a->name +
                                    " (in algos) is fp32 only");
                    add(pl, a);
                    found = true;
                }
            }
        }
        if (!found) {
            std::string known;
            for (const PassPlan& pl : plan)
                for (const Algorithm* a : candidates(pl.pass))
                    known +=
                        std::string(known.empty() ? "" : ", ") + pass_name(pl.pass) + ":" + a->name;
            throw Error("algos: '" + tok +
                        "' is not an algorithm of a selected pass (known: " + known + ")");
        }
    }
    note_skipped();
    return plan;
}

void poison(Floats& v, std::size_t n) {
    v.assign(n, std::numeric_limits<float>::quiet_NaN());
}

Verification verify(const Floats& got, const Floats& ref, const std::string& ref_name,
                    const std::string& ref_note, double rtol) {
    Verification v;
    const Check c = compare(got.data(), ref.data(), std::min(got.size(), ref.size()), rtol);
    v.checked = true;
    v.pass = c.pass && got.size() == ref.size();
    v.max_abs = c.max_abs;
    v.max_rel = c.max_err;
    v.reference = ref_name;
    v.note = ref_note;
    if (!c.pass) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%zu of %zu elements out of tolerance", c.bad, c.count);
        v.note = std::string(buf) + (c.note.empty() ? "" : ", " + c.note) +
                 (ref_note.empty() ? "" : "; " + ref_note);
    }
    return v;
}

// [SECTION] one measurement: check once, then time with per-operation spans

// Collects the profiler spans of each timed run of one measurement, so each operation's time
// per call is known for every repeat. An operation absent from some call counts 0 there. A run
// that is a batch of calls (Stats::calls, on a coarse clock) holds its calls' spans summed, and
// finish() divides them by the count: each operation's time per call averaged over the batch.
struct OpRecorder {
    std::vector<std::string> names;
    std::vector<std::vector<double>> per_op;  // [op][repeat]
    std::size_t reps = 0;

    void add(const Profiler& prof) {
        for (const Profiler::Entry& e : prof.entries()) {
            auto it = std::find(names.begin(), names.end(), e.name);
            const auto k = static_cast<std::size_t>(it - names.begin());
            if (it == names.end()) {
                names.push_back(e.name);
                per_op.emplace_back(reps, 0.0);
            }
            per_op[k].resize(reps + 1, 0.0);
            per_op[k][reps] = e.seconds;
        }
        ++reps;
        for (auto& v : per_op) v.resize(reps, 0.0);
    }
    std::vector<Measurement::Op> finish(int calls) {
        std::vector<Measurement::Op> ops;
        for (std::size_t k = 0; k < names.size(); ++k) {
            for (double& x : per_op[k]) x /= calls;
            ops.push_back({names[k], summarize(std::move(per_op[k]))});
            ops.back().time.calls = calls;
        }
        return ops;
    }
};

// Why reference "peer" cannot be: no peer, or a dtype other than fp32 (the reference of a
// half-precision run is fp32; a peer computing in that dtype is checked, not the reference).
std::string reference_peer_error(const Config& cfg) {
    if (!cfg.peer) return "reference: 'peer' needs a peer library (none given)";
    const std::string dt = dtype_name(cfg.dtype);
    if (cfg.peer->computes(cfg.dtype))
        return "reference: 'peer' with dtype " + dt + ": the peer's " + dt +
               " result is checked, not the fp32 reference (use auto or direct)";
    return "reference: 'peer' with dtype " + dt +
           ": the peer is fp32 only and not run (use auto or direct)";
}

}  // namespace

bool supports_storage_dtype(Pass pass, std::string_view algo) {
    return (pass == Pass::Forward && algo == "fractal") ||
           ((pass == Pass::BackwardData || pass == Pass::BackwardWeight) &&
            algo == "fractal_via_forward");
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_./,:=+") == std::string::npos)
        return s;
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::size_t output_size(const Problem& p, Pass pass) {
    switch (pass) {
        case Pass::Forward:
            return static_cast<std::size_t>(p.mb * p.oc * p.out_spatial());
        case Pass::BackwardData:
            return static_cast<std::size_t>(p.mb * p.ic * p.in_spatial());
        default:
            return static_cast<std::size_t>(p.oc * p.icg() * p.kernel_spatial());
    }
}

ConvArgs args_for(Pass pass, Buffers& b, float* out) {
    ConvArgs a;
    switch (pass) {
        case Pass::Forward:
            a.src = b.src.data();
            a.wei = b.wei.data();
            a.dst = out;
            break;
        case Pass::BackwardData:
            a.diff_dst = b.diff_dst.data();
            a.wei = b.wei.data();
            a.diff_src = out;
            break;
        default:
            a.src = b.src.data();
            a.diff_dst = b.diff_dst.data();
            a.diff_wei = out;
            break;
    }
    return a;
}

double pass_bytes(const Problem& p, Pass) {
    // Each pass reads two of (src, wei, dst) and writes the third: all three once, fp32.
    const double src = static_cast<double>(p.mb * p.ic * p.in_spatial());
    const double wei = static_cast<double>(p.oc * p.icg() * p.kernel_spatial());
    const double dst = static_cast<double>(p.mb * p.oc * p.out_spatial());
    return 4.0 * (src + wei + dst);
}

// [SECTION] run

void check_selection(const Config& cfg) {
    std::vector<std::string> notes;
    std::vector<PassPlan> plan;
    try {
        plan = make_plan(cfg, notes);
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind("algos: ", 0) == 0 || what.rfind("dtype: ", 0) == 0) throw;
        throw Error("algos: " + what);
    }
    if (cfg.reference == "peer" && !(cfg.peer && cfg.dtype == DType::f32))
        throw Error(reference_peer_error(cfg));
    if (cfg.reference != "auto" && cfg.reference != "direct" && cfg.reference != "peer") {
        try {
            for (const PassPlan& pl : plan) find_algorithm(pl.pass, cfg.reference);
        } catch (const Error& e) {
            throw Error(std::string("reference: ") + e.what() +
                        " (expected auto, direct, peer or an algorithm of every selected pass)");
        }
    }
}

Results run(const Config& cfg) {
    // The algorithms' per-thread work buffers are kept between calls while the layers run (no
    // page faults in the timed calls) and freed when the run ends, however it ends: a batch-32
    // run of every algorithm over ResNet-50 left 850 MiB held by the threads (53 MiB with
    // implicit_gemm alone), for as long as the app ran.
    struct ReleaseScratch {
        ~ReleaseScratch() { release_work_buffers(); }
    } release;
    if (cfg.layers.empty()) throw Error("shapes: no layer to run");
    if (cfg.timing.warmup < 0) throw Error("warmup: must be >= 0");
    if (cfg.timing.reps < 0) throw Error("reps: must be >= 0");
    if (!(cfg.rtol > 0) || !(cfg.rtol_fp16 > 0) || !(cfg.rtol_bf16 > 0))
        throw Error("rtol: must be > 0");
    if (cfg.batch && *cfg.batch < 1) throw Error("batch: must be >= 1");
    std::vector<std::string> notes;
    const std::vector<PassPlan> plan = make_plan(cfg, notes);
    const bool fp32 = cfg.dtype == DType::f32;
    const std::string dtype = dtype_name(cfg.dtype);
    // The peer is timed in fp32, and in fp16 / bf16 where it computes in them (its result then
    // checked like the algorithms', never the reference); else it is not run (noted).
    const PeerSpec* peer_spec = cfg.peer && cfg.peer->computes(cfg.dtype) ? &*cfg.peer : nullptr;
    if (cfg.peer && !peer_spec)
        notes.push_back("dtype " + dtype + ": peer " + cfg.peer->name + " is fp32 only: skipped");
    const double rtol = fp32 ? cfg.rtol : cfg.dtype == DType::f16 ? cfg.rtol_fp16 : cfg.rtol_bf16;
    const bool ref_named =
        cfg.reference != "auto" && cfg.reference != "direct" && cfg.reference != "peer";
    if (cfg.reference == "peer" && !(peer_spec && fp32)) throw Error(reference_peer_error(cfg));
    if (ref_named) {
        for (const PassPlan& pl : plan) find_algorithm(pl.pass, cfg.reference);  // throws
    }

    const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int threads = cfg.threads > 0 ? cfg.threads : hw;
    set_num_threads(threads);
    if (peer_spec && peer_spec->set_threads) peer_spec->set_threads(threads);

    Results r;
    r.machine = describe_machine();
    if (cfg.clock) r.machine.clock_tick = clock_tick(cfg.clock);
    r.machine.threads = threads;
    r.machine.peer = !peer_spec ? "none"
                     : fp32     ? peer_spec->description
                                : peer_spec->description + ", " + dtype + " operands";
    r.shapes_file = cfg.shapes_file;
    r.command = cfg.command;
    r.batch = cfg.batch ? *cfg.batch : 0;
    r.timing = cfg.timing;
    r.rtol = rtol;
    r.dtype = cfg.dtype;
    if (cfg.dtype == DType::bf16) {
        double rate = 0;
        const bool pairs = davinci::bf16_pairs(cfg.tuning.bf16_pairs, &rate);
        std::ostringstream os;
        os << "bf16 products: "
           << (pairs ? "bf16 pairs (vdpbf16ps)"
                     : "fp32 multiply-adds of the bf16-rounded operands");
        if (rate > 0)
            os << "; vdpbf16ps ran at " << std::fixed << std::setprecision(2) << rate
               << " of the fp32 FMAs' instruction rate (pairs from 0.63; CONVLAB_BF16_PAIRS=on|off "
                  "forces)";
        notes.push_back(os.str());
    }
    if (cfg.prepared_weights)
        notes.push_back(std::string("weights: packed once per layer and pass (prepare_weights) "
                                    "outside the timed region") +
                        (!peer_spec                    ? ""
                         : peer_spec->reorders_weights ? ", as the peer's are reordered"
                                                       : ", although the peer reads its weights "
                                                         "as given") +
                        "; --weights per-call times the packing");
    r.notes = notes;
    auto measure_peak = [&] { measure_machine_peak(r.machine, threads); };
    if (cfg.measure_peak) measure_peak();

    Config::Progress progress;
    progress.total = 0;  // the measurements: algorithms where they apply, and the peer
    for (const Layer& l : cfg.layers)
        for (const PassPlan& pl : plan)
            progress.total +=
                static_cast<std::size_t>(std::count_if(pl.algos.begin(), pl.algos.end(),
                                                       [&](const Algorithm* a) {
                                                           return !l.problem.validate().empty() ||
                                                                  algorithm_applies(*a, l.problem);
                                                       })) +
                (peer_spec ? 1 : 0);
    auto step = [&](const std::string& what) {
        ++progress.done;
        progress.what = what;
        progress.results = &r;
        if (cfg.progress) cfg.progress(progress);
    };
    auto cancelled = [&] { return cfg.cancel && cfg.cancel->load(); };

    const CpuSample run_start = cpu_sample();
    std::map<std::string, std::vector<Pass>> not_applied;  // algorithm -> passes it skipped
    for (std::size_t li = 0; li < cfg.layers.size() && !r.cancelled; ++li) {
        Problem p = cfg.layers[li].problem;
        if (cfg.batch) p.mb = *cfg.batch;
        LayerInfo info;
        info.name = p.name;
        {
            Problem unnamed = p;
            unnamed.name.clear();
            info.descriptor =
                p.validate().empty() ? to_descriptor(unnamed) : cfg.layers[li].descriptor;
        }
        r.layers.push_back(info);
        const std::string why = p.validate();
        const double flops = why.empty() ? p.flops() : 0;
        const double flops_no_pad = why.empty() ? p.flops_no_pad() : 0;
        auto error_row = [&](Pass pass, const std::string& algo, bool is_peer,
                             const std::string& err) {
            Measurement m;
            m.layer = li;
            m.pass = pass;
            m.algorithm = algo;
            m.peer = is_peer;
            m.batch = p.mb;
            m.threads = threads;
            m.error = err;
            m.flops = flops;
            m.flops_no_pad = flops_no_pad;
            r.rows.push_back(std::move(m));
        };
        if (!why.empty()) {
            const std::size_t before = r.rows.size();
            for (const PassPlan& pl : plan) {
                if (peer_spec) error_row(pl.pass, peer_spec->name, true, "invalid problem: " + why);
                for (const Algorithm* a : pl.algos)
                    error_row(pl.pass, a->name, false, "invalid problem: " + why);
            }
            progress.done += r.rows.size() - before;
            continue;
        }

        Buffers b;
        b.src.resize(static_cast<std::size_t>(p.mb * p.ic * p.in_spatial()));
        b.wei.resize(static_cast<std::size_t>(p.oc * p.icg() * p.kernel_spatial()));
        b.diff_dst.resize(static_cast<std::size_t>(p.mb * p.oc * p.out_spatial()));
        const auto seed = static_cast<std::uint32_t>(1000 + 17 * li);
        fill_random(b.src, seed);
        fill_random(b.wei, seed + 1);
        fill_random(b.diff_dst, seed + 2);

        std::unique_ptr<PeerConv> peer;
        std::string peer_error;
        if (peer_spec) {
            try {
                peer = fp32 ? peer_spec->create(p, cfg.passes)
                            : peer_spec->create_dtype(p, cfg.passes, cfg.dtype);
                peer->set_inputs(b.src.data(), b.wei.data(), b.diff_dst.data());
            } catch (const std::exception& e) {
                peer_error = e.what();
                peer.reset();
            }
        }

        // Checks first, per pass: the peer's result, then one run of each algorithm on an output
        // poisoned with NaN (every element must be written). Each pass writes its own output
        // buffer and keeps its packed weights, so that its timed calls may run in a window shared
        // with the other passes (Config::interleave_passes).
        struct Entry {
            Measurement m;
            std::function<void(Profiler*)> call;  // the timed call; empty: not timed
            std::string error;                    // thrown while timed
            OpRecorder ops;
            std::chrono::steady_clock::time_point call_start, call_end;  // the last timed call
            std::vector<Measurement::TracedCall> calls;  // this window's (Config::trace)
        };
        std::vector<Entry> entries;  // this layer's, pass after pass
        std::deque<Floats> outs;     // one output per pass (the timed calls hold its address)
        std::deque<std::optional<PreparedWeights>> prepared_store;
        // Times entries [first, last) in one window of alternating rounds.
        auto time_entries = [&](std::size_t first, std::size_t last) {
            std::vector<std::size_t> timed;
            for (std::size_t i = first; i < last; ++i)
                if (entries[i].call) timed.push_back(i);
            if (timed.empty()) return;
            Profiler prof;
            prof.keep_events(cfg.trace);
            Interleaved fns;
            fns.count = timed.size();
            fns.clock = cfg.clock;
            fns.run = [&](std::size_t f, bool is_timed) {
                Entry& e = entries[timed[f]];
                if (!e.error.empty()) return;  // it threw before: no more calls
                try {
                    e.call_start = std::chrono::steady_clock::now();
                    e.call(is_timed ? &prof : nullptr);
                    e.call_end = std::chrono::steady_clock::now();
                } catch (const std::exception& x) {
                    e.error = x.what();
                }
            };
            fns.after = [&](std::size_t f, double) {
                Entry& e = entries[timed[f]];
                e.ops.add(prof);
                if (cfg.trace && e.error.empty() && e.calls.size() < Config::kMaxTracedCalls) {
                    // The run's last call and its spans (a batched run's earlier calls are left
                    // out: a trace shows calls as they happened).
                    std::vector<Profiler::Event> ops;
                    for (const Profiler::Event& ev : prof.events())
                        if (ev.start >= e.call_start) ops.push_back(ev);
                    e.calls.push_back({e.call_start, e.call_end, std::move(ops)});
                }
                prof.clear();
            };
            // The machine's own speed just before and after (kSlowMachine), where a peak
            // was measured to compare with; a slow window is timed again
            // (Config::retime_slow), the fastest machine's attempt kept.
            std::vector<Stats> stats;
            double foreign = -1;
            const WindowSpeed ws = time_window(
                threads, r.machine.peak_gflops, cfg.retime_slow,
                [&] {
                    for (const std::size_t i : timed) {
                        entries[i].ops = OpRecorder{};
                        entries[i].calls.clear();  // a window timed again: its own calls
                    }
                    const CpuSample t0 = cpu_sample();
                    if (cfg.alone) {
                        stats.clear();
                        for (std::size_t f = 0; f < fns.count; ++f) {
                            Interleaved one;
                            one.count = 1;
                            one.clock = fns.clock;
                            one.run = [&fns, f](std::size_t, bool t) { fns.run(f, t); };
                            one.after = [&fns, f](std::size_t, double s) { fns.after(f, s); };
                            stats.push_back(measure_interleaved(cfg.timing, one).front());
                        }
                    } else {
                        stats = measure_interleaved(cfg.timing, fns);
                    }
                    foreign = foreign_cpu_share(t0, cpu_sample(), hw);
                },
                [&](double speed) {
                    for (std::size_t f = 0; f < timed.size(); ++f) {
                        Entry& e = entries[timed[f]];
                        e.m.foreign_cpu = foreign;
                        e.m.speed = speed;
                        if (!e.error.empty()) continue;
                        e.m.total = stats[f];
                        e.m.ops = e.ops.finish(stats[f].calls);
                        e.m.trace = std::move(e.calls);
                    }
                },
                cfg.speed_probe, [&] { return cancelled(); });
            for (const std::size_t i : timed) {
                Entry& e = entries[i];
                e.m.retimed = ws.retimed;
                if (!e.error.empty()) {
                    e.m.error = "threw while timed: " + e.error;
                    continue;
                }
                e.m.ran = true;
            }
        };
        // Rows of entries [first, last), in order, each reported as measured.
        auto emit = [&](std::size_t first, std::size_t last) {
            for (std::size_t i = first; i < last; ++i) {
                const std::string what =
                    info.name + " " + pass_name(entries[i].m.pass) + " " + entries[i].m.algorithm;
                r.rows.push_back(std::move(entries[i].m));
                step(what);
            }
        };
        bool layer_cancelled = false;
        for (const PassPlan& pl : plan) {
            if (cancelled()) {
                r.cancelled = true;
                layer_cancelled = true;
                break;
            }
            const Pass pass = pl.pass;
            const std::size_t pass_first = entries.size();
            Floats& out = outs.emplace_back();
            const std::size_t n_out = output_size(p, pass);
            const bool peer_ok = peer && peer->has(pass);
            Floats peer_out;
            if (peer_ok) {
                try {
                    peer->run(pass);
                    poison(peer_out, n_out);
                    peer->output(pass, peer_out.data());
                } catch (const std::exception& e) {
                    peer_error = e.what();
                    peer_out.clear();
                }
            }

            // The reference of this (layer, pass).
            std::string ref_name, ref_note;
            std::string ref_algo;  // the engine algorithm that is the reference, if any
            bool ref_is_peer = false;
            if (cfg.reference == "direct" ||
                (cfg.reference == "auto" && flops <= cfg.direct_max_flops)) {
                ref_algo = "direct";
            } else if (cfg.reference == "peer" ||
                       (cfg.reference == "auto" && fp32 && !peer_out.empty())) {
                ref_is_peer = true;
            } else if (ref_named) {
                ref_algo = cfg.reference;
            } else {
                // auto, too big for direct, no peer: the first non-direct registry algorithm.
                for (const Algorithm* a : algorithms(pass))
                    if (std::string_view(a->name) != "direct" && algorithm_applies(*a, p)) {
                        ref_algo = a->name;
                        break;
                    }
                if (ref_algo.empty()) ref_algo = "direct";
            }
            bool have_ref = false;
            std::string ref_error;
            if (ref_is_peer) {
                ref_name = "peer:" + peer_spec->name;
                if (!peer_out.empty()) {
                    b.ref = peer_out;
                    have_ref = true;
                } else {
                    ref_error = peer_spec->name + " has no result" +
                                (peer_error.empty() ? "" : ": " + peer_error);
                }
                if (cfg.reference == "auto") {
                    char buf[120];
                    std::snprintf(buf, sizeof buf,
                                  "direct loops skipped: %.2f GFLOP > %.2f GFLOP limit",
                                  flops * 1e-9, cfg.direct_max_flops * 1e-9);
                    ref_note = buf;
                }
            } else {
                ref_name = ref_algo == "direct" ? "direct" : "algo:" + ref_algo;
                if (ref_algo != "direct" && cfg.reference == "auto") {
                    char buf[120];
                    std::snprintf(buf, sizeof buf,
                                  "direct loops skipped: %.2f GFLOP > %.2f GFLOP limit; no peer",
                                  flops * 1e-9, cfg.direct_max_flops * 1e-9);
                    ref_note = buf;
                }
                try {
                    const Algorithm& a = find_algorithm(pass, ref_algo);
                    poison(b.ref, n_out);
                    ConvArgs args = args_for(pass, b, b.ref.data());
                    args.tuning = cfg.tuning;
                    a.run(p, args, nullptr);
                    have_ref = true;
                } catch (const std::exception& e) {
                    ref_error = ref_algo + " failed: " + e.what();
                }
            }
            auto check_of = [&](const Floats& got, bool is_ref) {
                Verification v;
                if (is_ref) {
                    v.checked = true;
                    v.pass = true;
                    v.reference = "self";
                    v.note = "this is the reference of the check";
                } else if (!have_ref) {
                    v.reference = ref_name;
                    v.note = "no reference: " + ref_error;
                } else {
                    v = verify(got, b.ref, ref_name, ref_note, rtol);
                }
                return v;
            };

            if (peer_spec) {
                Entry e;
                Measurement& m = e.m;
                m.layer = li;
                m.pass = pass;
                m.algorithm = peer_spec->name;
                m.peer = true;
                m.dtype = cfg.dtype;
                m.batch = p.mb;
                m.threads = threads;
                m.flops = flops;
                m.flops_no_pad = flops_no_pad;
                m.bytes = pass_bytes(p, pass);
                if (!peer_ok || peer_out.empty()) {
                    m.error = peer ? (peer_ok ? peer_error : peer->error(pass)) : peer_error;
                    if (m.error.empty()) m.error = "peer cannot run this pass";
                } else {
                    m.impl = peer->impl(pass);
                    m.check = check_of(peer_out, ref_is_peer);
                    e.call = [&peer, pass](Profiler*) { peer->run(pass); };
                }
                entries.push_back(std::move(e));
            }
            // The weights packed once for the layer and pass (prepare_weights), outside the timed
            // region, as the peer's are reordered into its layout before its calls. They live
            // with the layer's entries, until the last timed call.
            // With fp16 / bf16 storage only the fractal algorithms run: their layout alone, for
            // that storage.
            std::optional<PreparedWeights>& prepared = prepared_store.emplace_back();
            if (cfg.prepared_weights && (pass == Pass::Forward || pass == Pass::BackwardData)) {
                try {
                    prepared = fp32 ? prepare_weights(p, pass, b.wei.data(), nullptr, cfg.tuning)
                                    : davinci::prepare_weights(p, pass, b.wei.data(), cfg.dtype,
                                                               nullptr, cfg.tuning.bf16_pairs);
                } catch (const std::exception&) {
                    // The algorithms then pack per call (and report their own errors).
                }
            }
            for (const Algorithm* a : pl.algos) {
                if (!algorithm_applies(*a, p)) {
                    // Not measured here (no row): named once per run in the notes, below.
                    auto& passes = not_applied[a->name];
                    if (std::find(passes.begin(), passes.end(), pass) == passes.end())
                        passes.push_back(pass);
                    continue;
                }
                Entry e;
                Measurement& m = e.m;
                m.layer = li;
                m.pass = pass;
                m.algorithm = a->name;
                m.batch = p.mb;
                m.threads = threads;
                m.dtype = cfg.dtype;
                m.flops = flops;
                m.flops_no_pad = flops_no_pad;
                m.bytes = pass_bytes(p, pass);
                try {
                    // Refused, as compute refuses it, where its work exceeds the budget.
                    check_memory_budget(*a, p, davinci::kC0, cfg.tuning);
                    const auto call = storage_call(*a, cfg.dtype, cfg.tuning.bf16_pairs);
                    poison(out, n_out);  // sizes out: args take its address after
                    ConvArgs args = args_for(pass, b, out.data());
                    args.prepared = prepared ? &*prepared : nullptr;
                    args.tuning = cfg.tuning;
                    call(p, args, nullptr);
                    const bool is_ref =
                        fp32 && !ref_is_peer && ref_algo == a->name &&
                        !std::count_if(cfg.extra_algorithms.begin(), cfg.extra_algorithms.end(),
                                       [&](const Algorithm& x) { return &x == a; });
                    m.check = check_of(out, is_ref);
                    e.call = [call, &p, args](Profiler* prof) { call(p, args, prof); };
                } catch (const std::exception& x) {
                    m.error = x.what();
                }
                entries.push_back(std::move(e));
            }

            // Times: the peer and the algorithms of this pass in alternating rounds, so that
            // load which comes and goes on a shared machine falls on all of them alike; with
            // interleave_passes, all passes of the layer in one window, below.
            if (!cfg.interleave_passes) {
                time_entries(pass_first, entries.size());
                emit(pass_first, entries.size());
            }
        }
        if (cfg.interleave_passes && !layer_cancelled) {
            time_entries(0, entries.size());
            emit(0, entries.size());
        }
        if (cancelled()) r.cancelled = true;
    }
    // One note per algorithm that some layers did not run, with the passes it left out there.
    for (const auto& [name, passes] : not_applied) {
        std::string list;
        for (Pass q : passes) list += (list.empty() ? "" : ", ") + std::string(pass_name(q));
        r.notes.push_back(name + " (" + list + ") applies only to " +
                          find_algorithm(passes.front(), name).rule +
                          " layers: not run on the others");
    }
    r.machine.foreign_cpu = foreign_cpu_share(run_start, cpu_sample(), hw);
    if (cfg.measure_peak) measure_peak();
    std::vector<double> spreads;
    for (const Measurement& m : r.rows)
        if (m.ran) spreads.push_back(m.total.spread());
    if (!spreads.empty()) {
        std::sort(spreads.begin(), spreads.end());
        r.machine.median_spread = spreads[spreads.size() / 2];
    }
    return r;
}

// [SECTION] sweeps

Results run_sweep(const Config& cfg, const std::vector<std::optional<dim_t>>& batches,
                  const std::vector<int>& threads) {
    if (batches.empty()) throw Error("batch: empty list");
    if (threads.empty()) throw Error("threads: empty list");
    if (batches.size() > 1 && std::count(batches.begin(), batches.end(), std::nullopt))
        throw Error("batch: 'file' (each layer's own) cannot be swept with other values");
    for (std::size_t i = 0; i < batches.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (batches[i] == batches[j]) throw Error("batch: a value given twice");
    for (std::size_t i = 0; i < threads.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (threads[i] == threads[j]) throw Error("threads: a value given twice");
    const std::size_t combos = batches.size() * threads.size();
    Results out;
    std::size_t done_before = 0;
    for (const std::optional<dim_t>& b : batches) {
        for (const int t : threads) {
            Config c = cfg;
            c.batch = b;
            c.threads = t;
            if (cfg.progress)
                c.progress = [&](const Config::Progress& p) {
                    Config::Progress q = p;
                    q.done += done_before;
                    q.total *= combos;  // every combination has as many measurements
                    Results partial;    // what ran so far, for a live chart
                    const Results* all = p.results;
                    if (!out.rows.empty() && p.results) {
                        partial = out;
                        partial.rows.insert(partial.rows.end(), p.results->rows.begin(),
                                            p.results->rows.end());
                        all = &partial;
                    }
                    q.results = all;
                    cfg.progress(q);
                };
            Results r = run(c);
            SweepPoint pt;
            pt.batch = b ? *b : 0;
            pt.threads = r.machine.threads;
            pt.peak_gflops = r.machine.peak_gflops;
            pt.peak_gflops_1t = r.machine.peak_gflops_1t;
            pt.foreign_cpu = r.machine.foreign_cpu;
            const std::size_t measured = r.rows.size();
            if (out.sweep.empty()) {
                std::vector<Measurement> rows = std::move(r.rows);
                out = std::move(r);
                out.rows = std::move(rows);
            } else {
                out.rows.insert(out.rows.end(), r.rows.begin(), r.rows.end());
                out.machine.foreign_cpu = std::max(out.machine.foreign_cpu, pt.foreign_cpu);
                out.cancelled = out.cancelled || r.cancelled;
                for (const std::string& n : r.notes)
                    if (std::find(out.notes.begin(), out.notes.end(), n) == out.notes.end())
                        out.notes.push_back(n);
            }
            out.sweep.push_back(pt);
            done_before += measured;
            if (out.cancelled) break;
        }
        if (out.cancelled) break;
    }
    if (combos == 1) out.sweep.clear();  // a single run: its record says it all
    return out;
}

// [SECTION] a run in slices

SlicedRun::SlicedRun(Config cfg) : cfg_(std::move(cfg)) {
    if (cfg_.layers.empty()) throw Error("shapes: no layer to run");
    check_selection(cfg_);
    std::vector<std::string> notes;
    const std::vector<PassPlan> plan = make_plan(cfg_, notes);
    const bool peer = cfg_.peer && cfg_.peer->computes(cfg_.dtype);
    // A pass without an algorithm cannot be named as a slice of its own (an empty algorithm
    // list means all of them): such a layer is measured whole.
    const bool whole =
        cfg_.interleave_passes ||
        std::any_of(plan.begin(), plan.end(), [](const PassPlan& pl) { return pl.algos.empty(); });
    for (std::size_t li = 0; li < cfg_.layers.size(); ++li) {
        Problem p = cfg_.layers[li].problem;
        if (cfg_.batch) p.mb = *cfg_.batch;
        const bool valid = p.validate().empty();
        for (const PassPlan& pl : plan)
            total_ += static_cast<std::size_t>(std::count_if(
                          pl.algos.begin(), pl.algos.end(),
                          [&](const Algorithm* a) { return !valid || algorithm_applies(*a, p); })) +
                      (peer ? 1 : 0);
        if (whole) {
            slices_.push_back({li, cfg_.passes, {}});
            continue;
        }
        for (const PassPlan& pl : plan) {
            Slice s{li, {pl.pass}, {}};
            for (const Algorithm* a : pl.algos)
                s.algos.push_back(std::string(pass_name(pl.pass)) + ":" + a->name);
            slices_.push_back(std::move(s));
        }
    }
    results_.notes = notes;
}

void SlicedRun::step() {
    if (done()) return;
    if (cfg_.cancel && cfg_.cancel->load()) {
        results_.cancelled = true;
        next_ = slices_.size();
        finish();
        return;
    }
    const bool first = next_ == 0;
    const int threads = cfg_.threads > 0
                            ? cfg_.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    if (first && cfg_.measure_peak) measure_machine_peak(peak_, threads);
    const Slice& s = slices_[next_];
    Config c = cfg_;
    c.layers = {cfg_.layers[s.layer]};
    c.passes = s.passes;
    if (!s.algos.empty()) c.algos = s.algos;
    c.measure_peak = false;
    c.progress = nullptr;
    Results r = run(c);
    if (first) {
        std::vector<std::string> notes = std::move(results_.notes);
        results_ = r;
        results_.rows.clear();
        results_.layers.clear();
        results_.notes = std::move(notes);
        results_.machine.peak_gflops = peak_.peak_gflops;
        results_.machine.peak_gflops_1t = peak_.peak_gflops_1t;
    } else if (r.machine.foreign_cpu >= 0) {
        results_.machine.foreign_cpu =
            std::max(results_.machine.foreign_cpu, r.machine.foreign_cpu);
    }
    // One LayerInfo a layer, at its first slice; the rows point at it.
    const bool new_layer = first || slices_[next_ - 1].layer != s.layer;
    if (new_layer && !r.layers.empty()) results_.layers.push_back(r.layers.front());
    const std::size_t layer = results_.layers.empty() ? 0 : results_.layers.size() - 1;
    for (Measurement& m : r.rows) {
        m.layer = layer;
        what_ = results_.layers.empty()
                    ? m.algorithm
                    : results_.layers.back().name + " " + pass_name(m.pass) + " " + m.algorithm;
        results_.rows.push_back(std::move(m));
        ++measured_;
    }
    for (const std::string& n : r.notes)
        if (std::find(results_.notes.begin(), results_.notes.end(), n) == results_.notes.end())
            results_.notes.push_back(n);
    ++next_;
    if (r.cancelled) {
        results_.cancelled = true;
        next_ = slices_.size();
    }
    if (done()) finish();
}

void SlicedRun::finish() {
    const int threads = results_.machine.threads > 0 ? results_.machine.threads : 1;
    if (cfg_.measure_peak && measured_ > 0) {
        measure_machine_peak(peak_, threads);
        results_.machine.peak_gflops = peak_.peak_gflops;
        results_.machine.peak_gflops_1t = peak_.peak_gflops_1t;
    }
    std::vector<double> spreads;
    for (const Measurement& m : results_.rows)
        if (m.ran) spreads.push_back(m.total.spread());
    if (!spreads.empty()) {
        std::sort(spreads.begin(), spreads.end());
        results_.machine.median_spread = spreads[spreads.size() / 2];
    }
}

std::vector<Results> split_sweep(const Results& r) {
    if (r.sweep.empty()) return {r};
    std::vector<Results> parts;
    for (const SweepPoint& pt : r.sweep) {
        Results s = r;
        s.sweep.clear();
        s.rows.clear();
        s.batch = pt.batch;
        s.machine.threads = pt.threads;
        s.machine.peak_gflops = pt.peak_gflops;
        s.machine.peak_gflops_1t = pt.peak_gflops_1t;
        s.machine.foreign_cpu = pt.foreign_cpu;
        for (const Measurement& m : r.rows)
            if (m.threads == pt.threads && (pt.batch == 0 || m.batch == pt.batch))
                s.rows.push_back(m);
        if (pt.batch > 0)
            for (LayerInfo& l : s.layers) {
                try {
                    Problem p = parse_descriptor(l.descriptor);
                    p.mb = pt.batch;
                    l.descriptor = to_descriptor(p);
                } catch (const Error&) {
                    // not a descriptor (an invalid layer): left as written
                }
            }
        parts.push_back(std::move(s));
    }
    return parts;
}

// [SECTION] results summary

std::size_t Results::passed() const {
    std::size_t n = 0;
    for (const Measurement& m : rows) n += m.valid() ? 1 : 0;
    return n;
}

std::size_t Results::failed() const {
    return rows.size() - passed();
}

std::size_t Results::noisy() const {
    std::size_t n = 0;
    for (const Measurement& m : rows) n += m.valid() && m.noisy() ? 1 : 0;
    return n;
}

std::string Results::speed_summary() const {
    double lo = 1e300, hi = -1;
    std::size_t probed = 0, slow = 0, retimed = 0;
    for (const Measurement& m : rows) {
        if (m.speed < 0) continue;
        lo = std::min(lo, m.speed);
        hi = std::max(hi, m.speed);
        ++probed;
        slow += m.speed < kSlowMachine ? 1 : 0;
        retimed += m.retimed > 0 ? 1 : 0;
    }
    if (probed == 0) return "";
    char buf[300];
    int n = std::snprintf(buf, sizeof buf,
                          "the machine's FMA rate around the timed windows: %.0f-%.0f%% of its "
                          "peak; %zu of %zu measurements timed below %.0f%% (noisy)",
                          lo * 100, hi * 100, slow, probed, kSlowMachine * 100);
    if (retimed > 0 && n > 0 && static_cast<std::size_t>(n) < sizeof buf)
        std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n),
                      "; %zu timed again after a slow probe, the fastest attempt kept", retimed);
    return buf;
}

std::string Results::verification_summary() const {
    std::map<std::string, int> refs;
    std::vector<std::string> bad;
    for (const Measurement& m : rows) {
        if (m.valid()) {
            ++refs[m.check.reference];
        } else {
            const std::string layer = m.layer < layers.size() ? layers[m.layer].name : "?";
            bad.push_back(layer + " " + pass_name(m.pass) + " " + m.algorithm + " (" +
                          (m.ran ? m.check.status() : "ERROR") + ")");
        }
    }
    std::ostringstream s;
    if (bad.empty()) {
        s << "all " << rows.size() << " measurements verified";
    } else {
        s << bad.size() << " of " << rows.size()
          << " measurements FAILED verification or did not run (not plotted): ";
        for (std::size_t i = 0; i < bad.size() && i < 6; ++i) s << (i ? ", " : "") << bad[i];
        if (bad.size() > 6) s << ", ...";
        s << "; " << passed() << " verified";
    }
    s << " (" << (dtype == DType::f32 ? "" : std::string(dtype_name(dtype)) + " storage, ")
      << "rtol " << rtol << "; reference:";
    bool first = true;
    for (const auto& [name, n] : refs) {
        s << (first ? " " : ", ") << (name == "self" ? "is the reference" : name) << " " << n;
        first = false;
    }
    s << ")";
    if (cancelled) s << "; run CANCELLED before the end";
    return s.str();
}

const Measurement* Results::find(std::size_t layer, Pass pass, const std::string& algo) const {
    for (const Measurement& m : rows)
        if (m.layer == layer && m.pass == pass && m.algorithm == algo) return &m;
    return nullptr;
}

}  // namespace convlab::bench
