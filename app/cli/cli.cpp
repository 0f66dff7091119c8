// The command-line subcommands. Index:
//   [SECTION] options: a table per command, parsed into name -> value
//   [SECTION] helpers: numbers, problems, output paths, generated inputs
//   [SECTION] compute
//   [SECTION] map
//   [SECTION] algos
//   [SECTION] describe
//   [SECTION] command table, help and dispatch
#include "cli/cli.hpp"

#include "cli/cli_common.hpp"
#include "cli/map_formats.hpp"

#include <unistd.h>  // access

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <sstream>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/map_registry.hpp"
#include "convlab/maps.hpp"
#include "convlab/npy.hpp"
#include "convlab/problem.hpp"
#include "convlab/profiler.hpp"
#include "convlab/tensor.hpp"
#include "convlab/tuning_env.hpp"
#include "convlab_commit.h"  // CONVLAB_GIT_COMMIT, generated at build time

#ifndef CONVLAB_VERSION
#define CONVLAB_VERSION "dev"
#endif
#ifndef CONVLAB_COMPILER
#define CONVLAB_COMPILER "unknown compiler"
#endif

namespace convlab::cli {

namespace fs = std::filesystem;

// [SECTION] options

namespace {

const OptionSpec kHelpOption{"--help", nullptr, "this text"};

const OptionSpec* find_option(const Command& cmd, std::string_view name) {
    if (name == kHelpOption.name || name == "-h") return &kHelpOption;
    for (const auto& o : cmd.options)
        if (name == o.name) return &o;
    return nullptr;
}

std::string option_list(const Command& cmd) {
    std::string s;
    for (const auto& o : cmd.options) s += (s.empty() ? "" : ", ") + std::string(o.name);
    return s;
}

}  // namespace

// "--name value" or "--name=value"; switches take no value. Every option at most once.
Options parse_options(const Command& cmd, std::span<const std::string> args) {
    Options opts;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg.rfind("-", 0) != 0 || arg == "-") {
            const bool takes_positional =
                std::any_of(cmd.options.begin(), cmd.options.end(),
                            [](const OptionSpec& o) { return o.name[0] != '-'; });
            if (!takes_positional)
                throw Error(std::string(cmd.name) + ": unexpected argument '" + arg + "'");
            opts.add_positional(arg);
            continue;
        }
        const std::size_t eq = arg.find('=');
        const std::string name = arg.substr(0, eq);
        const OptionSpec* spec = find_option(cmd, name);
        if (!spec)
            throw Error(std::string(cmd.name) + ": unknown option '" + name +
                        "' (options: " + option_list(cmd) + ")");
        const std::string canonical = spec->name;
        if (opts.has(canonical)) throw Error(canonical + " given twice");
        std::string value;
        if (spec->value) {
            if (eq != std::string::npos) {
                value = arg.substr(eq + 1);
            } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
                value = args[++i];
            } else {
                throw Error(canonical + " needs a value (" + spec->value + ")");
            }
            if (value.empty()) throw Error(canonical + " needs a value (" + spec->value + ")");
        } else if (eq != std::string::npos) {
            throw Error(canonical + " takes no value");
        }
        opts.set(canonical, std::move(value));
    }
    return opts;
}

// [SECTION] helpers

std::int64_t parse_integer(std::string_view flag, const std::string& text, std::int64_t lo,
                           std::int64_t hi) {
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc{} || ptr != end || v < lo || v > hi)
        throw Error(std::string(flag) + " '" + text + "': expected an integer in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
}

std::uint64_t parse_seed(const std::string& text) {
    std::uint64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc{} || ptr != end)
        throw Error("--seed '" + text + "': expected an integer in [0, 2^64)");
    return v;
}

Problem problem_from(const Options& opts, std::string_view command) {
    const std::string& desc = opts.required(command, "--problem");
    // The engine's messages quote the descriptor themselves.
    return in_context("--problem", [&] {
        Problem p = parse_descriptor(desc);
        p.check();
        return p;
    });
}

namespace {

// [SECTION] compute

// An input tensor of a pass: its option and the salt of its generated data.
struct Input {
    const char* flag;
    std::uint64_t salt;
};
constexpr Input kSrc{"--src", 1};
constexpr Input kWei{"--wei", 2};
constexpr Input kDiffDst{"--diff-dst", 3};
constexpr Input kBias{"--bias", 4};

std::vector<dim_t> dims_of(const Input& in, const Problem& p) {
    if (&in == &kSrc) return p.src_dims();
    if (&in == &kWei) return p.wei_dims();
    if (&in == &kDiffDst) return p.dst_dims();
    return {p.oc};
}

// The inputs a pass reads (bias is optional for fwd: read only when given).
std::vector<const Input*> inputs_of(Pass pass) {
    switch (pass) {
        case Pass::Forward:
            return {&kSrc, &kWei, &kBias};
        case Pass::BackwardData:
            return {&kDiffDst, &kWei};
        case Pass::BackwardWeight:
            return {&kSrc, &kDiffDst};
        case Pass::BackwardBias:
            return {&kDiffDst};
    }
    return {};
}

// The given file, checked against the problem, or generated data.
Tensor load_input(const Options& opts, const Input& in, const Problem& p, std::uint64_t seed) {
    const std::vector<dim_t> dims = dims_of(in, p);
    const std::string* path = opts.get(in.flag);
    if (!path) return seeded_integers(dims, seed, in.salt);
    Tensor t = read_npy(*path);
    if (t.dims() != dims)
        throw Error(std::string(in.flag) + " " + *path + " has shape " + t.shape_str() +
                    ", problem needs " + dims_str(dims));
    return t;
}

// The algorithm's name as checked against the engine's list. Without --algo: auto (the fastest
// here), or direct for bwd_bias (its single algorithm).
std::string algorithm_for(const Options& opts, Pass pass) {
    const std::string* name = opts.get("--algo");
    if (pass == Pass::BackwardBias && !name) return "direct";
    if (!name) return std::string(find_algorithm(pass, "auto").name);
    return in_context("--algo", [&] { return std::string(find_algorithm(pass, *name).name); });
}

// The DaVinci algorithms: fwd fractal, bwd_data / bwd_weight fractal_via_forward. They alone take
// --dtype (storage type of the packed operands) and --c0 (the C0 of NC1HWC0 / FRACTAL_Z).
bool is_fractal(Pass pass, std::string_view algo) {
    return pass == Pass::Forward ? algo == "fractal"
                                 : (pass != Pass::BackwardBias && algo == "fractal_via_forward");
}

// --dtype and --c0, refused for the algorithms that do not take them.
davinci::Options davinci_options(const Options& opts, Pass pass, const std::string& algo) {
    for (const char* flag : {"--dtype", "--c0"})
        if (opts.has(flag) && !is_fractal(pass, algo))
            throw Error(std::string(flag) +
                        " is taken by the DaVinci algorithms only (fwd fractal, bwd_data and "
                        "bwd_weight fractal_via_forward); " +
                        pass_name(pass) + " " + algo + " computes in fp32 on NCHW");
    davinci::Options o;
    if (const std::string* d = opts.get("--dtype"))
        o.storage = in_context("--dtype", [&] { return parse_dtype(*d); });
    if (const std::string* c = opts.get("--c0")) o.c0 = parse_integer("--c0", *c, 1, 64);
    return o;
}

void print_timings(std::ostream& out, const Profiler& prof, double wall_seconds) {
    std::size_t width = std::string_view("operation").size();
    for (const auto& e : prof.entries()) width = std::max(width, e.name.size());
    const int w = static_cast<int>(width);
    out << std::left << std::setw(w) << "operation" << std::right << std::setw(12) << "ms"
        << std::setw(8) << "count"
        << "\n"
        << std::fixed << std::setprecision(3);
    for (const auto& e : prof.entries())
        out << std::left << std::setw(w) << e.name << std::right << std::setw(12) << e.seconds * 1e3
            << std::setw(8) << e.count << "\n";
    out << std::left << std::setw(w) << "total" << std::right << std::setw(12)
        << prof.total_seconds() * 1e3 << "  (sum of operations; wall " << wall_seconds * 1e3
        << " ms)\n";
    out << std::defaultfloat;
}

// Elapsed time of a computation on stderr, once a second, when stderr is a terminal and the
// computation is estimated above a few seconds (its FLOPs at 10 GFLOP/s, 1 for direct loops): the
// engine reports no fraction done, so this says that it works and how to stop it.
class ComputeProgress {
  public:
    ComputeProgress(double flops, const std::string& what, bool slow) {
        const double estimate = flops / (slow ? 1e9 : 1e10);
        if (estimate < 3 || ::isatty(STDERR_FILENO) != 1) return;
        thread_ = std::thread([this, what, gflop = flops / 1e9] {
            const auto t0 = std::chrono::steady_clock::now();
            std::unique_lock lock(mu_);
            while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) {
                const auto s = std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::steady_clock::now() - t0)
                                   .count();
                std::fprintf(stderr, "\rconvlab: computing %s (%.0f GFLOP): %llds, Ctrl-C stops ",
                             what.c_str(), gflop, static_cast<long long>(s));
                std::fflush(stderr);
                printed_ = true;
            }
            if (printed_) std::fprintf(stderr, "\n");
        });
    }
    ~ComputeProgress() {
        if (!thread_.joinable()) return;
        {
            std::lock_guard lock(mu_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    ComputeProgress(const ComputeProgress&) = delete;
    ComputeProgress& operator=(const ComputeProgress&) = delete;

  private:
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    bool printed_ = false;
};

void run_compute(const Options& opts, std::ostream& out) {
    const Problem p = problem_from(opts, "compute");
    const Pass pass =
        in_context("--pass", [&] { return parse_pass(opts.required("compute", "--pass")); });
    const std::string algo = algorithm_for(opts, pass);
    const davinci::Options dv = davinci_options(opts, pass, algo);
    const bool fractal = is_fractal(pass, algo);
    const std::string& out_path = opts.required("compute", "--out");
    const std::uint64_t seed = opts.has("--seed") ? parse_seed(*opts.get("--seed")) : 0;
    const auto reads = inputs_of(pass);
    for (const Input* in : {&kSrc, &kWei, &kDiffDst, &kBias}) {
        if (!opts.has(in->flag) || std::find(reads.begin(), reads.end(), in) != reads.end())
            continue;
        std::string list;
        for (const Input* r : reads)
            if (r != &kBias) list += (list.empty() ? "" : " and ") + std::string(r->flag);
        throw Error(std::string(in->flag) + " is not read by " + pass_name(pass) + " (it reads " +
                    list + ")");
    }
    if (opts.has("--threads"))
        set_num_threads(
            static_cast<int>(parse_integer("--threads", *opts.get("--threads"), 0, 4096)));
    // The fast paths' rules (CONVLAB_GEMM, CONVLAB_READ_A, CONVLAB_TRANSPOSED), one value for
    // every call.
    const Tuning tuning = tuning_from_environment();
    // Work beyond the memory budget is refused before the inputs are made (the engine checks
    // again before it allocates).
    check_memory_budget(find_algorithm(pass, algo), p, dv.c0, tuning);
    check_output_path(out_path);

    // Inputs in the order the pass lists them, so that the first bad one is the one reported.
    std::map<const Input*, Tensor> in;
    for (const Input* r : reads)
        if (r != &kBias || opts.has(kBias.flag)) in.emplace(r, load_input(opts, *r, p, seed));
    Profiler prof;
    Profiler* prof_ptr = opts.has("--timings") ? &prof : nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    Tensor result;
    {
        const ComputeProgress progress(pass == Pass::BackwardBias ? 0 : p.flops(),
                                       std::string(pass_name(pass)) + " " + algo, algo == "direct");
        switch (pass) {
            case Pass::Forward: {
                const auto bias = in.find(&kBias);
                const Tensor* b = bias == in.end() ? nullptr : &bias->second;
                result = fractal ? davinci::forward(p, in.at(&kSrc), in.at(&kWei), b, dv, prof_ptr)
                                 : forward(p, in.at(&kSrc), in.at(&kWei), b, algo, prof_ptr,
                                           nullptr, tuning);
                break;
            }
            case Pass::BackwardData:
                // fractal_via_forward: NCHW in, packed inside (NC1HWC0 / FRACTAL_Z), NCHW out.
                result = fractal ? davinci::backward_data(p, in.at(&kDiffDst), in.at(&kWei), dv,
                                                          prof_ptr)
                                 : backward_data(p, in.at(&kDiffDst), in.at(&kWei), algo, prof_ptr,
                                                 nullptr, tuning);
                break;
            case Pass::BackwardWeight:
                // fractal_via_forward: the fp32 FRACTAL_Z(_3D) gradient, unpacked to (K, C/G,
                // k...).
                result = fractal ? davinci::backward_weight(p, in.at(&kSrc), in.at(&kDiffDst), dv,
                                                            prof_ptr)
                                 : backward_weight(p, in.at(&kSrc), in.at(&kDiffDst), algo,
                                                   prof_ptr, tuning);
                break;
            case Pass::BackwardBias:
                result = backward_bias(p, in.at(&kDiffDst), prof_ptr);
                break;
        }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_npy(out_path, result);
    out << "wrote " << out_path << " " << result.shape_str() << " " << pass_name(pass) << " "
        << algo;
    if (opts.has("--c0") || opts.has("--dtype"))
        out << " c0 " << dv.c0 << " " << dtype_name(dv.storage) << " storage";
    out << "\n";
    if (prof_ptr) print_timings(out, prof, wall);
}

// [SECTION] map

std::string coord_str(const Shape& s, dim_t linear) {
    std::vector<dim_t> c(static_cast<std::size_t>(s.rank()));
    s.coord_of(linear, c);
    std::string r = "(";
    for (int i = 0; i < s.rank(); ++i) {
        if (i) r += ',';
        if (i < static_cast<int>(s.names.size())) {
            r += s.names[i];
        } else {
            r += 'd';
            r += std::to_string(i);
        }
        r += '=';
        r += std::to_string(c[i]);
    }
    return r + ")";
}

// One pair of a step, as IndexMap::dump writes it.
std::string pair_str(const IndexMap& m, dim_t src, dim_t dst) {
    if (m.kind() == IndexMap::Kind::Gather)
        return "dst" + coord_str(m.dst(), dst) + " <- " +
               (src < 0 ? std::string("0") : "src" + coord_str(m.src(), src));
    if (dst < 0) return "(unused) src" + coord_str(m.src(), src);
    return "dst" + coord_str(m.dst(), dst) + " += src" + coord_str(m.src(), src);
}

// The map step by step at granularity g: what the app animates. limit caps the pairs (< 0: all).
void print_steps(std::ostream& out, const IndexMap& m, Granularity g, dim_t limit, bool json) {
    const dim_t steps = m.num_steps(g);
    const bool gather = m.kind() == IndexMap::Kind::Gather;
    dim_t printed = 0;
    bool truncated = false;
    if (json) {
        // The steps, integers only, are streamed after the rest (a large map has millions).
        const nlohmann::ordered_json head{{"name", m.name()},
                                          {"kind", gather ? "gather" : "reduce"},
                                          {"granularity", granularity_name(g)},
                                          {"num_steps", steps}};
        std::string text = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        text.pop_back();  // its closing brace
        out << text << ",\"steps\":[";
    } else {
        out << m.name() << " (" << (gather ? "gather" : "reduce") << ") src " << m.src().str()
            << " dst " << m.dst().str() << ": " << steps << " steps of granularity "
            << granularity_name(g) << "\n";
    }
    for (dim_t s = 0; s < steps && !truncated && out; ++s) {
        if (limit >= 0 && printed >= limit) {  // steps left, none of them to print
            truncated = true;
            break;
        }
        if (json) {
            out << (s ? ",[" : "[");
        } else {
            out << "step " << s << ":\n";
        }
        bool first = true;
        m.for_each_in_step(g, s, [&](dim_t src, dim_t dst) {
            if (limit >= 0 && printed >= limit) {
                truncated = true;
                return;
            }
            ++printed;
            if (json) {
                out << (first ? "" : ",") << "[" << src << "," << dst << "]";
            } else {
                out << "  " << pair_str(m, src, dst) << "\n";
            }
            first = false;
        });
        if (json) out << "]";
    }
    if (json) {
        out << "],\"truncated\":" << (truncated ? "true" : "false") << "}\n";
    } else if (truncated) {
        out << "... stopped after " << limit << " pairs (--limit)\n";
    }
}

bool listed(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// A map of the registry (convlab/map_registry.hpp); only the maps with the "c0" parameter (the
// DaVinci family) take --c0.
IndexMap map_by_name(const Options& opts, std::string name, const Problem& p) {
    // The short DaVinci spellings: with --c0, tnc and fliprot are the NC1HWC0 / FRACTAL_Z
    // converters (tnc5d, fliprot_fz); without it they are the NCHW maps.
    if (opts.has("--c0") && (name == "tnc" || name == "fliprot"))
        name = name == "tnc" ? "tnc5d" : "fliprot_fz";
    const MapEntry* e = find_map(name);
    if (!e) {
        std::string known;
        for (const auto& n : map_registry_names("nchw")) known += (known.empty() ? "" : ", ") + n;
        known += "; DaVinci:";
        for (const auto& n : map_registry_names("davinci")) known += " " + n;
        throw Error("--map: map '" + name + "': unknown; maps: " + known);
    }
    const bool takes_c0 = listed(e->params, "c0");
    dim_t c0 = davinci::kC0;
    if (const std::string* c = opts.get("--c0")) {
        if (!takes_c0)
            throw Error("--c0 is taken by the DaVinci maps only; " + name +
                        " is an NCHW map (its DaVinci counterparts: nc1hwc0, fractal_z, tnc5d, "
                        "tncf, fliprot_fz, strided5d ...)");
        c0 = parse_integer("--c0", *c, 1, 64);
    }
    return in_context("--map", [&] { return build_map(name, p, c0); });
}

// --map "A.B" (or "A∘B"): A after B, one composed map (both gathers); a plain name otherwise.
IndexMap composed_map_by_name(const Options& opts, const std::string& spec, const Problem& p) {
    std::size_t at = spec.find('.'), len = 1;
    if (at == std::string::npos) {
        at = spec.find("\u2218");
        len = std::string("\u2218").size();
    }
    if (at == std::string::npos) return map_by_name(opts, spec, p);
    const std::string second = spec.substr(0, at), first = spec.substr(at + len);
    if (second.empty() || first.empty() || first.find('.') != std::string::npos)
        throw Error("--map '" + spec + "': expected NAME or A.B (A after B, two map names)");
    const IndexMap b = map_by_name(opts, first, p), a = map_by_name(opts, second, p);
    return in_context("--map", [&] { return compose(a, b, second + "." + first); });
}

// Parses "--explain 0,1,2,3": one coordinate of the map's domain (its destination for a gather,
// its source for a reduce), every index inside its dim.
dim_t explain_element(const IndexMap& m, const std::string& text) {
    const Shape& d = m.domain();
    std::vector<dim_t> c;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string part =
            text.substr(start, comma == std::string::npos ? comma : comma - start);
        c.push_back(parse_integer("--explain", part, 0, std::numeric_limits<dim_t>::max()));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    const char* side = m.kind() == IndexMap::Kind::Gather ? "destination" : "source";
    if (static_cast<int>(c.size()) != d.rank())
        throw Error("--explain '" + text + "': " + std::to_string(c.size()) + " indices; the " +
                    side + " " + d.str() + " of " + m.name() + " has " + std::to_string(d.rank()));
    for (int i = 0; i < d.rank(); ++i)
        if (c[static_cast<std::size_t>(i)] >= d.dims[static_cast<std::size_t>(i)])
            throw Error("--explain '" + text + "': " + d.names[static_cast<std::size_t>(i)] +
                        " = " + std::to_string(c[static_cast<std::size_t>(i)]) +
                        " is outside the " + side + " " + d.str() + " of " + m.name());
    return d.linear_of(c);
}

void print_map_list(std::ostream& out) {
    const auto roles = [](const MapEntry& e) {
        return (e.src_role.empty() ? "-" : e.src_role) + " -> " +
               (e.dst_role.empty() ? "-" : e.dst_role);
    };
    std::size_t name_w = 0, roles_w = 0;
    for (const MapEntry& e : map_registry()) {
        name_w = std::max(name_w, e.name.size());
        roles_w = std::max(roles_w, roles(e).size());
    }
    for (const MapEntry& e : map_registry()) {
        out << std::left << std::setw(static_cast<int>(name_w + 2)) << e.name << std::setw(9)
            << e.family << std::setw(static_cast<int>(roles_w + 2)) << roles(e) << std::right
            << e.summary;
        if (!e.params.empty()) {
            out << " (";
            for (std::size_t i = 0; i < e.params.size(); ++i) out << (i ? ", " : "") << e.params[i];
            out << ")";
        }
        if (e.kernel) out << " [fast kernel]";
        out << "\n";
    }
}

void run_map(const Options& opts, std::ostream& out) {
    if (opts.has("--list")) {
        print_map_list(out);
        return;
    }
    const Problem p = problem_from(opts, "map");
    const std::string& name = opts.required("map", "--map");
    if (const std::string* at = opts.get("--explain")) {
        for (const char* flag : {"--format", "--limit", "--step-granularity", "--out"})
            if (opts.has(flag))
                throw Error(std::string(flag) + " is not taken with --explain (it prints one " +
                            "element's formula)");
        const IndexMap m = composed_map_by_name(opts, name, p);
        if (!m.expr())
            throw Error("--explain: map " + m.name() + " is not written as an expression");
        out << m.explain(explain_element(m, *at));
        return;
    }
    const std::string format = opts.has("--format") ? *opts.get("--format") : "text";
    // npy, grid and tex hold the whole map in the domain's order; text and json list its pairs
    // in the walk order, which --limit and --step-granularity cut.
    const bool whole = format == "npy" || format == "grid" || format == "tex";
    if (format != "text" && format != "json" && !whole)
        throw Error("--format '" + format + "': expected text, json, npy, grid or tex");
    for (const char* flag : {"--limit", "--step-granularity"})
        if (whole && opts.has(flag))
            throw Error(std::string(flag) + " is taken by --format text and json only (" + format +
                        " holds the whole map)");
    const std::string* out_path = opts.get("--out");
    if (format == "npy" && !out_path)
        throw Error("--format npy writes a file: give --out FILE.npy");
    if (out_path) check_output_path(*out_path);
    const dim_t limit = opts.has("--limit") ? parse_integer("--limit", *opts.get("--limit"), 0,
                                                            std::numeric_limits<dim_t>::max())
                                            : -1;
    std::optional<Granularity> g;
    if (const std::string* gs = opts.get("--step-granularity"))
        g = in_context("--step-granularity", [&] { return parse_granularity(*gs); });
    const IndexMap m = composed_map_by_name(opts, name, p);
    if (format == "npy") {
        write_map_npy(m, *out_path);
        out << "wrote " << *out_path << " " << dims_str(m.domain().dims) << " int64: " << m.name()
            << (m.kind() == IndexMap::Kind::Gather
                    ? " gather index (src linear index per dst element, -1 = padding zero)\n"
                    : " scatter index (dst linear index per src element, -1 = adds nowhere)\n");
        return;
    }
    // Streamed: the first pairs appear at once and memory stays constant however many follow.
    const auto emit = [&](std::ostream& o) {
        if (g)
            print_steps(o, m, *g, limit, format == "json");
        else if (format == "json")
            m.dump_json(o, limit);
        else if (format == "grid")
            print_map_grid(o, m);
        else if (format == "tex")
            print_map_tex(o, m);
        else
            m.dump(o, limit);
    };
    if (out_path)
        write_file(*out_path, emit);
    else
        emit(out);
}

// [SECTION] algos

void run_algos(const Options&, std::ostream& out) {
    std::size_t width = 0;
    for (const Algorithm& a : algorithms()) width = std::max(width, std::strlen(a.name));
    for (Pass pass :
         {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight, Pass::BackwardBias}) {
        out << pass_name(pass) << "\n";
        for (const Algorithm* a : algorithms(pass)) {
            out << "  " << std::left << std::setw(static_cast<int>(width)) << a->name << "  "
                << a->summary << "\n";
            if (a->applies) out << std::string(width + 4, ' ') << "applies to: " << a->rule << "\n";
        }
    }
}

// [SECTION] describe

std::string human_flops(double f) {
    static const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
    int u = 0;
    while (f >= 1000 && u < 6) {
        f /= 1000;
        ++u;
    }
    std::ostringstream s;
    s << std::setprecision(3) << f << " " << units[u] << "FLOP";
    return s.str();
}

void run_describe(const Options& opts, std::ostream& out) {
    const Problem p = problem_from(opts, "describe");
    const auto row = [&](const char* label) -> std::ostream& {
        return out << std::left << std::setw(13) << label << std::right;
    };
    row("descriptor") << to_descriptor(p) << "\n";
    if (!p.name.empty()) row("name") << p.name << "\n";
    row("spatial dims") << p.ndims << " (";
    for (int i = 0; i < p.ndims; ++i) out << (i ? ", " : "") << p.axis_name(i);
    out << ")\n";
    row("batch") << p.mb << "\n";
    row("channels") << "in " << p.ic << ", out " << p.oc << ", groups " << p.groups << " ("
                    << p.icg() << " in and " << p.ocg() << " out per group)\n";

    const char* cols[] = {"in",      "kernel", "stride", "dilation", "pad_begin",
                          "pad_end", "k_eff",  "out",    "r"};
    out << "\n" << std::left << std::setw(6) << "axis" << std::right;
    for (const char* c : cols) out << std::setw(11) << c;
    out << "\n";
    for (int i = 0; i < p.ndims; ++i) {
        out << std::left << std::setw(6) << p.axis_name(i) << std::right;
        for (dim_t v : {p.in[i], p.kernel[i], p.stride[i], p.dilation[i], p.pad_begin[i],
                        p.pad_end[i], p.kernel_extent(i), p.out(i), p.leftover(i)})
            out << std::setw(11) << v;
        out << "\n";
    }
    out << "(dilation 1 = none; r = leftover input rows no window reaches:"
           " (in + pad_begin + pad_end - k_eff) mod stride)\n\n";

    std::ostringstream flops;
    flops << std::fixed << std::setprecision(0) << p.flops();
    row("FLOPs") << flops.str() << " (" << human_flops(p.flops())
                 << ") per pass: 2*N*K*(C/G)*prod(out)*prod(kernel)\n";
    row("src") << dims_str(p.src_dims()) << "  (N, C, in...)\n";
    row("wei") << dims_str(p.wei_dims()) << "  (K, C/G, kernel...)\n";
    row("dst") << dims_str(p.dst_dims()) << "  (N, K, out...)\n";
    row("bias") << "(" << p.oc << ")  (K)\n";

    // Each algorithm's work memory (beyond these tensors) against the budget: what compute
    // refuses before allocating, and what auto avoids.
    if (opts.has("--threads"))
        set_num_threads(
            static_cast<int>(parse_integer("--threads", *opts.get("--threads"), 0, 4096)));
    const Tuning tuning = tuning_from_environment();
    out << "\nwork memory per algorithm (" << num_threads() << " threads; budget "
        << format_bytes(memory_budget())
        << (opts.has("--max-memory") ? ", --max-memory" : ", 80% of available memory") << "):\n";
    for (const Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight}) {
        for (const Algorithm* a : algorithms(pass)) {
            out << "  " << std::left << std::setw(11) << pass_name(pass) << std::setw(21) << a->name
                << std::right;
            if (!algorithm_applies(*a, p)) {
                out << "does not apply (" << a->rule << ")\n";
                continue;
            }
            const std::int64_t need = work_bytes(*a, p, 16, tuning);
            out << std::setw(12) << format_bytes(need);
            if (std::string_view(a->name) == "auto")
                out << "  (takes " << auto_algorithm(p, pass, tuning).name << ")";
            if (need > memory_budget()) out << "  over the budget: refused";
            out << "\n";
        }
    }
}

// [SECTION] command table, help and dispatch

const std::vector<Command>& commands() {
    static const std::vector<Command> table = {
        {"compute",
         "run one pass of a convolution with a named algorithm, .npy in and out",
         "compute --problem DESC --pass PASS [--algo NAME] --out OUT.npy [options]",
         "Inputs the pass reads but not given are generated from --seed: integers in [-3, 3], so\n"
         "every result is exact in fp32 and equal across algorithms. Given .npy files must be\n"
         "fp32 little-endian, C order, finite, with the problem's shape. The output is written\n"
         "atomically: a failed run leaves nothing at --out. --out is a regular file or a new\n"
         "path; a symlink is written through to its target; a directory, device (/dev/null),\n"
         "FIFO, socket or '-' (standard output) is refused. Prints one line on success; on a\n"
         "terminal, a computation estimated above a few seconds shows its elapsed time on\n"
         "stderr. Ctrl-C (SIGINT, SIGTERM) stops it at once: nothing written, exit status 130.\n"
         "DaVinci algorithms (fwd fractal, bwd_data and bwd_weight fractal_via_forward) take\n"
         "NCHW / NCDHW files too and pack inside (NC1HWC0, FRACTAL_Z, TNC ...); --dtype fp16 or\n"
         "bf16 rounds the packed operands to that type (fp32 accumulation; dst and diff_src\n"
         "rounded too, the weight gradient stays fp32 as Conv3DBackpropFilter's). Files stay\n"
         "fp32. Other algorithms refuse --dtype and --c0.\n",
         {{"--problem", "DESC", "benchdnn-style descriptor, e.g. mb2ic3ih8oc4kh3ph1"},
          {"--pass", "PASS", "fwd | bwd_data | bwd_weight | bwd_bias"},
          {"--algo", "NAME",
           "an algorithm of the pass ('convlab algos'); default auto (bwd_bias: direct)"},
          {"--src", "FILE", "activations (N, C, in...): read by fwd, bwd_weight"},
          {"--wei", "FILE", "weights (K, C/G, kernel...): read by fwd, bwd_data"},
          {"--diff-dst", "FILE", "output gradient (N, K, out...): read by bwd_*"},
          {"--bias", "FILE", "bias (K): optional for fwd (no bias when absent)"},
          {"--out", "FILE",
           "the result: dst, diff_src, diff_wei or diff_bias (a regular file or a new path)"},
          {"--dtype", "T", "fp32 (default) | fp16 | bf16: packed storage (DaVinci algorithms)"},
          {"--c0", "N", "C0 of NC1HWC0 / FRACTAL_Z, 1..64 (default 16; 8 = CANN's fp32)"},
          {"--seed", "S", "seed of the generated inputs (default 0)"},
          {"--threads", "T", "threads of the fast algorithms (0 = all cores)"},
          {"--timings", nullptr, "print the time of every operation and the total"},
          kMaxMemoryOption},
         run_compute},
        {"map",
         "print an index map of a problem (im2col ... tnc; DaVinci nc1hwc0 ... fliprot_fz)",
         "map --map NAME --problem DESC [--c0 N] [--format text|json|npy|grid|tex]\n"
         "       [--limit N] [--step-granularity G] [--out FILE] [--explain COORD] | --list",
         "Text: one line a pair, \"dst(...) <- src(...)\" (gather; \"<- 0\" for a padding zero)\n"
         "or \"dst(...) += src(...)\" (reduce). JSON: \"pairs\" as [src_linear, dst_linear],\n"
         "-1 = padding zero (gather) or adds nowhere (reduce); linear indices are row-major over\n"
         "the \"src\" and \"dst\" dims. Pairs come in the walk order (the line axis innermost).\n"
         "With --step-granularity the pairs are grouped into the steps the app animates.\n"
         "npy, grid and tex hold the whole map's index array, shaped like the destination of a\n"
         "gather (the src linear index per dst element, -1 = padding zero: dst =\n"
         "where(idx < 0, 0, src.ravel()[idx])) or the source of a reduce (the dst linear index\n"
         "per src element, -1 = adds nowhere). npy: int64, C order, written to --out (at most\n"
         "16 GiB). grid: the last two dims as rows and columns, one block per index of the dims\n"
         "before them, '.' for -1 (as CuTe's print_layout). tex: the same blocks as TikZ pictures\n"
         "(\\usepackage{tikz}), at most 10000 cells.\n"
         "--list prints every registered map: its family, the lesson tensors it reads and\n"
         "writes, a summary and its parameters (the DaVinci maps take --c0, default 16; their\n"
         "blocked tensors are shown as their storage). --map A.B is A after B, one composed map.\n"
         "--explain COORD prints the map's formula and, at one element of its destination (a\n"
         "reduce: its source), every term with the numbers filled in and the pair.\n",
         {{"--map", "NAME",
           "a registered map (--list), e.g. im2col, fractal_z; with --c0, tnc\n"
           "                          and fliprot mean tnc5d and fliprot_fz; A.B: A after B"},
          {"--list", nullptr, "list the registered maps"},
          {"--explain", "COORD",
           "the formula at one element, e.g. 0,0,5,3 (its destination; a\n"
           "                          reduce: its source), numbers filled in"},
          {"--c0", "N", "C0 of the DaVinci maps, 1..64 (default 16)"},
          {"--problem", "DESC", "benchdnn-style descriptor"},
          {"--format", "FORMAT",
           "text (default) | json (pairs: src_linear dst_linear, -1 = padding\n"
           "                          zero) | npy | grid | tex (the index array; see below)"},
          {"--limit", "N", "print at most N pairs (text, json)"},
          {"--out", "FILE", "write to FILE instead of standard output (npy: required)"},
          {"--step-granularity", "G",
           "element | line | tile | whole: list the pairs step by step"}},
         run_map},
        {"algos", "list the algorithms of every pass", "algos", "", {}, run_algos},
        {"describe",
         "print a problem: sizes, output, leftover rows, FLOPs, tensor shapes",
         "describe --problem DESC [--threads T] [--max-memory SIZE]",
         "Descriptor keys (benchdnn): g mb ic oc id/ih/iw od/oh/ow kd/kh/kw sd/sh/sw dd/dh/dw\n"
         "(dilation 0-based) pd/ph/pw, n\"name\"; pde/phe/pwe give the end padding explicitly.\n",
         {{"--problem", "DESC", "benchdnn-style descriptor, e.g. mb2ic3ih7oc4oh4kh3sh2ph1"},
          {"--threads", "T", "threads the work memory is stated for (default 0 = all cores)"},
          kMaxMemoryOption},
         run_describe},
        bench_command(),
        lesson_command(),
        gui_command(),
        shot_command(),
        demo_command(),
    };
    return table;
}

const Command* find_command(std::string_view name) {
    for (const auto& c : commands())
        if (name == c.name) return &c;
    return nullptr;
}

std::string command_list() {
    std::string s;
    for (const auto& c : commands()) s += std::string(c.name) + ", ";
    return s + "help";
}

void print_usage(std::ostream& out) {
    out << "convlab " CONVLAB_VERSION " - convolution backpropagation engine\n\n"
        << "usage: convlab <command> [options]\n\ncommands:\n";
    for (const auto& c : commands())
        out << "  " << std::left << std::setw(10) << c.name << c.summary << "\n";
    out << "  " << std::left << std::setw(10) << "help"
        << "this text, or 'convlab help <command>' for one command\n\n"
        << "Example:\n"
        << "  convlab compute --problem mb2ic3ih8oc4kh3ph1 --pass fwd --algo im2col_gemm "
           "--out y.npy\n\n"
        << "Exit status: 0 on success, 2 on bad input (one line on stderr, starting "
           "\"convlab: \"),\n130 when interrupted (Ctrl-C or SIGTERM: temporaries removed; bench, "
           "lesson check and demo\nfirst write what they finished). Output files are written "
           "atomically to regular files or\nnew paths only (symlinks followed; devices, FIFOs "
           "and '-' refused).\n";
}

void print_command_help(std::ostream& out, const Command& c) {
    out << "usage: convlab " << c.synopsis << "\n\n" << c.summary << "\n";
    if (!c.options.empty()) {
        out << "\noptions:\n";
        for (const auto& o : c.options) {
            std::string flag = o.name;
            if (o.value) flag.append(" ").append(o.value);
            out << "  " << std::left << std::setw(24) << flag << o.help << "\n";
        }
    }
    if (*c.details) out << "\n" << c.details;
}

int dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        print_usage(out);
        return 0;
    }
    if (args[0] == "--version" || args[0] == "-V") {
        out << "convlab " CONVLAB_VERSION " (commit " CONVLAB_GIT_COMMIT ", " CONVLAB_COMPILER
               ")\n";
        return 0;
    }
    if (args[0] == "help") {
        if (args.size() == 1) {
            print_usage(out);
            return 0;
        }
        if (args.size() > 2) throw Error("help: expected at most one command name");
        if (args[1] == "help") {
            print_usage(out);
            return 0;
        }
        const Command* c = find_command(args[1]);
        if (!c)
            throw Error("help: unknown command '" + args[1] + "' (commands: " + command_list() +
                        ")");
        print_command_help(out, *c);
        return 0;
    }
    const Command* c = find_command(args[0]);
    if (!c)
        throw Error(
            std::string(args[0].rfind("-", 0) == 0 ? "unknown option '" : "unknown command '") +
            args[0] + "' (commands: " + command_list() + ")");
    Options opts = parse_options(*c, std::span(args).subspan(1));
    opts.set_diagnostics(err);
    if (opts.has("--help")) {
        print_command_help(out, *c);
        return 0;
    }
    // Every command starts from the default budget, or the one it was given.
    const std::string* max_memory = opts.get(kMaxMemoryOption.name);
    set_memory_budget(max_memory ? parse_memory_size(kMaxMemoryOption.name, *max_memory) : 0);
    // bench, lesson and demo stop at their next safe point on an interrupt and write what they
    // have; every other command keeps nothing partial, so an interrupt ends it at once (its
    // temporaries removed).
    const std::string_view name = c->name;
    if (name == "bench" || name == "lesson" || name == "demo") {
        c->run(opts, out);
    } else {
        const ImmediateInterrupt immediate;
        c->run(opts, out);
    }
    return 0;
}

// One line, whatever the message holds.
std::string one_line(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::replace(s.begin(), s.end(), '\r', ' ');
    return s;
}

}  // namespace

}  // namespace convlab::cli

namespace convlab {

int run_cli(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
    try {
        cap_env_threads();
        const int status = cli::dispatch(args, out, err);
        out.flush();
        if (!out) {
            err << "convlab: cannot write to standard output\n";
            return 2;
        }
        return status;
    } catch (const Interrupted&) {
        out.flush();
        err << "convlab: interrupted (SIGINT/SIGTERM): stopped before the end\n";
        return 130;
    } catch (const cli::CommandFailed& e) {
        out.flush();
        err << "convlab: " << cli::one_line(e.what()) << "\n";
        return 1;
    } catch (const Error& e) {
        err << "convlab: " << cli::one_line(e.what()) << "\n";
        return 2;
    } catch (const std::bad_alloc& e) {
        err << "convlab: out of memory: " << cli::one_line(e.what()) << "\n";
        return 2;
    } catch (const std::exception& e) {
        err << "convlab: internal error: " << cli::one_line(e.what()) << "\n";
        return 1;
    } catch (...) {
        err << "convlab: internal error: unknown exception\n";
        return 1;
    }
}

}  // namespace convlab
