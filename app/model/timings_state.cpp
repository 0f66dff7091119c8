// The Timings panel's window-free state (timings_state.hpp). Index:
//   [SECTION] settings
//   [SECTION] a lesson step's measurement
//   [SECTION] the run
//   [SECTION] exports
//   [SECTION] screen mapping
#include "model/timings_state.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "convlab/conv.hpp"
#include "convlab/output_file.hpp"

namespace convlab::app {

namespace fs = std::filesystem;

// [SECTION] settings

const std::vector<PeerChoice>& peer_choices() {
    static const std::vector<PeerChoice> choices{
        {"none", "no peer", "the engine's algorithms alone", false},
        {"onednn", "oneDNN (its blocked layouts)",
         "oneDNN's direct convolution on the layouts it prefers (format_tag::any), the way\n"
         "practitioners use it; the reorders into them are outside the timed calls",
         false},
        {"onednn-nchw", "oneDNN-nchw (the engine's layouts)",
         "oneDNN's direct convolution on the engine's plain NCHW/OIHW data, nothing reordered;\n"
         "its weights are read as given, so the engine's are packed in every call too",
         true}};
    return choices;
}

const PeerChoice* find_peer_choice(const std::string& name) {
    for (const PeerChoice& c : peer_choices())
        if (name == c.name) return &c;
    return nullptr;
}

const PeerChoice& peer_choice(const std::string& name) {
    if (const PeerChoice* c = find_peer_choice(name)) return *c;
    std::string known;
    for (const PeerChoice& c : peer_choices())
        known += (known.empty() ? "" : ", ") + std::string(c.name);
    throw Error("peer: '" + name + "' is not one of " + known);
}

void choose_peer(TimingsSettings& s, const PeerChoice& c) {
    s.peer = c.name;
    s.weights_once = c.weights_once();
}

std::string peer_option(const std::string& column) {
    std::string out = column;
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out.empty() ? "none" : out;
}

std::string peer_name_of(const bench::Results& r) {
    for (const bench::Measurement& m : r.rows)
        if (m.peer) return peer_option(m.algorithm);
    return "none";
}

std::vector<std::string> panel_algorithms(Pass pass) {
    std::vector<std::string> out;
    for (const Algorithm* a : algorithms(pass))
        if (std::string_view(a->name) != "direct") out.emplace_back(a->name);
    return out;
}

std::vector<std::string> shape_sets(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".txt") out.push_back(e.path().stem().string());
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

std::vector<Pass> selected_passes(const TimingsSettings& s) {
    std::vector<Pass> p;
    if (s.fwd) p.push_back(Pass::Forward);
    if (s.bwd_data) p.push_back(Pass::BackwardData);
    if (s.bwd_weight) p.push_back(Pass::BackwardWeight);
    return p;
}

bool excluded(const TimingsSettings& s, Pass pass, const std::string& algo) {
    const std::string key = std::string(pass_name(pass)) + ":" + algo;
    return std::find(s.excluded.begin(), s.excluded.end(), key) != s.excluded.end();
}

// "PASS:NAME" of every selected algorithm, or empty when nothing is excluded (= all).
std::vector<std::string> algo_tokens(const TimingsSettings& s) {
    std::vector<std::string> tokens;
    bool any_excluded = false;
    for (Pass p : selected_passes(s))
        for (const std::string& a : panel_algorithms(p)) {
            if (excluded(s, p, a))
                any_excluded = true;
            else
                tokens.push_back(std::string(pass_name(p)) + ":" + a);
        }
    if (!any_excluded) tokens.clear();
    return tokens;
}

}  // namespace

std::string reproduce_command(const TimingsSettings& s, bool peer_used) {
    std::string cmd = "convlab bench";
    if (s.quick) cmd += " --quick";
    cmd += " --shapes " + bench::shell_quote(s.shapes_file);
    cmd += " --batch " + std::to_string(s.batch);
    std::string passes;
    for (Pass p : selected_passes(s))
        passes += (passes.empty() ? "" : ",") + std::string(pass_name(p));
    cmd += " --passes " + passes;
    const std::vector<std::string> tokens = algo_tokens(s);
    if (!tokens.empty()) {
        std::string list;
        for (const std::string& t : tokens) list += (list.empty() ? "" : ",") + t;
        cmd += " --algos " + list;
    }
    const std::string peer = peer_used ? s.peer : "none";
    cmd += " --peer " + peer;
    cmd += " --threads " + std::to_string(s.threads);
    if (s.weights_once != peer_choice(peer).weights_once())
        cmd += s.weights_once ? " --weights once" : " --weights per-call";
    cmd += " --out " + bench::shell_quote(s.out_dir);
    return cmd;
}

bench::Config make_config(const TimingsSettings& s, const std::optional<bench::PeerSpec>& peer) {
    bench::Config cfg;
    cfg.passes = selected_passes(s);
    if (cfg.passes.empty()) throw Error("passes: select at least one of fwd, bwd_data, bwd_weight");
    bool any = false;
    for (Pass p : cfg.passes)
        for (const std::string& a : panel_algorithms(p)) any |= !excluded(s, p, a);
    if (!any) throw Error("algorithms: select at least one algorithm of the selected passes");
    cfg.algos = algo_tokens(s);
    if (s.batch < 1) throw Error("batch: must be >= 1 (got " + std::to_string(s.batch) + ")");
    if (s.threads < 0) throw Error("threads: must be >= 0 (0 = all cores)");
    cfg.batch = s.batch;
    cfg.threads = s.threads;
    cfg.prepared_weights = s.weights_once;
    peer_choice(s.peer);  // throws on a name it does not know
    if (s.shapes_file.empty()) throw Error("shape set: no shape file chosen");
    try {
        cfg.layers = bench::read_shape_file(s.shapes_file);
    } catch (const std::exception& e) {
        throw Error(std::string("shape set: ") + e.what());
    }
    cfg.shapes_file = s.shapes_file;
    if (s.quick) {  // as `convlab bench --quick`
        cfg.timing.warmup = 1;
        cfg.timing.min_reps = 5;
        cfg.timing.min_seconds = 0.01;
    }
    if (s.peer != "none" && peer) cfg.peer = peer;
    cfg.command = reproduce_command(s, cfg.peer.has_value());
    return cfg;
}

// [SECTION] a lesson step's measurement

int lesson_threads() {
    const int hw = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(1, hw - 1);
}

bench::Config lesson_config(const TimingsLessonRun& l, int threads,
                            const std::optional<bench::PeerSpec>& peer,
                            const std::string& out_dir) {
    bench::Config cfg;
    cfg.passes.clear();  // the listed algorithms' passes only
    std::string passes, algos;
    for (const std::string& a : l.algos) {
        const auto colon = a.find(':');
        if (colon == std::string::npos)
            throw Error("timings: '" + a + "' is not PASS:NAME (e.g. bwd_data:col2im)");
        const Pass pass = parse_pass(a.substr(0, colon));
        find_algorithm(pass, a.substr(colon + 1));  // throws naming the known ones
        if (std::find(cfg.passes.begin(), cfg.passes.end(), pass) == cfg.passes.end())
            cfg.passes.push_back(pass);
        cfg.algos.push_back(a);
        algos += (algos.empty() ? "" : ",") + a;
    }
    if (cfg.algos.empty()) cfg.passes = {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight};
    std::sort(cfg.passes.begin(), cfg.passes.end());
    for (Pass p : cfg.passes) passes += (passes.empty() ? "" : ",") + std::string(pass_name(p));
    const std::string desc = to_descriptor(l.problem);
    cfg.layers.push_back({l.problem, desc, 1});
    // "All cores" leaves one to the window, which draws while the run goes on: OpenMP threads
    // on every core wait at each barrier for the one the window (or any other process) took,
    // and the passes, whose barriers differ, came out 0.005x to 1.1x of each other.
    cfg.threads = threads > 0 ? threads : lesson_threads();
    // `convlab bench`'s timing, not the panel's quick one: a lesson's layer is small, so 0.2 s
    // of runs costs little, where 10 ms (a few runs) gave ratios that changed from run to run.
    cfg.timing.warmup = 2;
    cfg.timing.min_reps = 5;
    cfg.timing.min_seconds = 0.2;
    // The passes side by side in one window: the chart's bwd_data / fwd ratios then come from
    // one machine state, whatever load comes and goes between the passes.
    cfg.interleave_passes = true;
    cfg.peer = peer;
    cfg.prepared_weights = !peer || peer->reorders_weights;  // as `convlab bench` defaults it
    cfg.shapes_file = l.source;
    // The one layer as a shape file, then the same measurement.
    cfg.command = "echo " + bench::shell_quote(desc) +
                  " > layer.txt && convlab bench --shapes layer.txt --batch file --passes " +
                  passes + (algos.empty() ? "" : " --algos " + algos) +
                  " --warmup 2 --min-time 0.2 --interleave-passes --peer " +
                  (peer ? peer_option(peer->name) : "none") + " --threads " +
                  std::to_string(cfg.threads) + " --out " + bench::shell_quote(out_dir);
    return cfg;
}

std::string lesson_reference_file(const std::string& lesson_file) {
    if (lesson_file.empty()) return "";
    fs::path p(lesson_file);
    p.replace_extension(".results.json");
    std::error_code ec;
    return fs::is_regular_file(p, ec) ? p.string() : "";
}

bench::Results with_reference(const bench::Results& live, const bench::Results& ref,
                              const std::vector<std::string>& algos) {
    bench::Results out = live;
    const std::string live_peer = peer_name_of(live);
    const std::size_t base = out.layers.size();
    // The step's algorithms, and the peer in the passes they are of.
    const auto wanted = [&](const bench::Measurement& m) {
        const std::string pass = pass_name(m.pass);
        if (m.peer)
            return peer_option(m.algorithm) == live_peer &&
                   (algos.empty() ||
                    std::any_of(algos.begin(), algos.end(),
                                [&](const std::string& a) { return a.rfind(pass + ":", 0) == 0; }));
        return algos.empty() ||
               std::find(algos.begin(), algos.end(), pass + ":" + m.algorithm) != algos.end();
    };
    std::vector<bool> used(ref.layers.size(), false);
    for (const bench::Measurement& m : ref.rows) {
        if (m.layer >= ref.layers.size()) continue;
        if (!wanted(m)) continue;
        used[m.layer] = true;
    }
    std::vector<std::size_t> index(ref.layers.size(), 0);
    for (std::size_t li = 0; li < ref.layers.size(); ++li) {
        if (!used[li]) continue;
        index[li] = out.layers.size();
        bench::LayerInfo info = ref.layers[li];
        info.name = kReferenceLayer;
        out.layers.push_back(info);
    }
    if (out.layers.size() == base) return out;
    for (const bench::Measurement& m : ref.rows) {
        if (m.layer >= ref.layers.size() || !used[m.layer]) continue;
        if (!wanted(m)) continue;
        bench::Measurement c = m;
        c.layer = index[m.layer];
        out.rows.push_back(std::move(c));
    }
    return out;
}

std::vector<PassRatio> bwd_data_ratios(const bench::Results& r, std::size_t layer) {
    const bench::Measurement* fwd = r.find(layer, Pass::Forward, "im2col_gemm");
    if (!fwd)
        for (const bench::Measurement& m : r.rows)
            if (m.layer == layer && m.pass == Pass::Forward && !m.peer) {
                fwd = &m;
                break;
            }
    std::vector<PassRatio> out;
    if (!fwd || !fwd->valid() || !(fwd->total.median_ms > 0)) return out;
    for (const bench::Measurement& m : r.rows)
        if (m.layer == layer && m.pass == Pass::BackwardData && !m.peer && m.valid())
            out.push_back(
                {m.algorithm, m.total.median_ms / fwd->total.median_ms, m.noisy() || fwd->noisy()});
    return out;
}

std::string run_summary(const bench::Results& r, double seconds, bool cancelled) {
    std::size_t live_layers = 0;
    while (live_layers < r.layers.size() && r.layers[live_layers].name != kReferenceLayer)
        ++live_layers;
    std::size_t rows = 0, noisy = 0, failed = 0;
    for (const bench::Measurement& m : r.rows) {
        if (m.layer >= live_layers) continue;
        ++rows;
        if (!m.valid()) ++failed;
        if (m.valid() && m.noisy()) ++noisy;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "%zu measurements in %.0f s, ", rows, seconds);
    std::string s = std::string(cancelled ? "cancelled after " : "finished: ") + buf;
    s += failed == 0 ? std::string("all verified")
                     : std::to_string(failed) +
                           " FAILED verification or did not run (marked FAIL, not plotted)";
    // "col2im 1.04x, via_forward 1.18x"; a noisy ratio marked "~" (as the charts' labels).
    const auto list = [](const std::vector<PassRatio>& v) {
        std::string t;
        for (const PassRatio& p : v) {
            char num[32];
            std::snprintf(num, sizeof num, "%.2fx", p.ratio);
            t += (t.empty() ? "" : ", ") + p.algorithm + " " + (p.noisy ? "~" : "") + num;
        }
        return t;
    };
    if (live_layers > 0) {
        const std::vector<PassRatio> live = bwd_data_ratios(r, 0);
        if (!live.empty()) {
            s += "; bwd_data / fwd: " + list(live);
            if (live_layers < r.layers.size()) {
                const std::vector<PassRatio> ref = bwd_data_ratios(r, live_layers);
                if (!ref.empty()) s += " (reference: " + list(ref) + ")";
            }
        }
    }
    if (noisy > 0)
        s += "; NOISY: " + std::to_string(noisy) + " of " + std::to_string(rows) +
             " timed on a busy or slow machine (~, hatched): run again";
    return s;
}

// [SECTION] the run

TimingsRun::~TimingsRun() {
    cancel_ = true;
    if (thread_.joinable()) thread_.join();
}

bool TimingsRun::start(bench::Config cfg) {
    if (running_) return false;
    if (thread_.joinable()) thread_.join();
    cancel_ = false;
    start_ = std::chrono::steady_clock::now();
    {
        std::lock_guard<std::mutex> lock(mu_);
        const std::uint64_t v = snap_.version + 1;
        snap_ = {};
        snap_.version = v;
        snap_.running = true;
    }
    cfg.cancel = &cancel_;
    cfg.progress = [this](const bench::Config::Progress& p) { publish(p); };
    running_ = true;
    if (sliced_) {
        try {
            slices_ = std::make_unique<bench::SlicedRun>(std::move(cfg));
            std::lock_guard<std::mutex> lock(mu_);
            snap_.total = slices_->total();
        } catch (const std::exception& e) {
            end(nullptr, e.what());
        }
        return true;
    }
    thread_ = std::thread([this, cfg = std::move(cfg)] {
        std::shared_ptr<const bench::Results> final_results;
        std::string error;
        try {
            final_results = std::make_shared<const bench::Results>(bench::run(cfg));
        } catch (const std::exception& e) {
            error = e.what();
        }
        end(std::move(final_results), error);
    });
    return true;
}

void TimingsRun::end(std::shared_ptr<const bench::Results> results, const std::string& error) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (results) {
            snap_.results = std::move(results);
            snap_.cancelled = snap_.results->cancelled;
        }
        snap_.error = error;
        snap_.running = false;
        snap_.finished = true;
        snap_.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        ++snap_.version;
    }
    running_ = false;
}

bool TimingsRun::pump() {
    if (!slices_) return false;
    try {
        slices_->step();
    } catch (const std::exception& e) {
        slices_.reset();
        end(nullptr, e.what());
        return true;
    }
    if (slices_->done()) {
        auto results = std::make_shared<const bench::Results>(slices_->results());
        {
            std::lock_guard<std::mutex> lock(mu_);
            snap_.done = slices_->measured();
            snap_.what = slices_->what();
        }
        slices_.reset();
        end(std::move(results), "");
        return true;
    }
    bench::Config::Progress p;
    p.done = slices_->measured();
    p.total = slices_->total();
    p.what = slices_->what();
    p.results = &slices_->results();
    publish(p);
    return true;
}

void TimingsRun::publish(const bench::Config::Progress& p) {
    // Copy outside the lock: the frame loop only ever waits for a pointer swap.
    std::shared_ptr<const bench::Results> copy;
    if (p.results) copy = std::make_shared<const bench::Results>(*p.results);
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::lock_guard<std::mutex> lock(mu_);
    if (copy) snap_.results = std::move(copy);
    snap_.done = p.done;
    snap_.total = p.total;
    snap_.what = p.what;
    snap_.seconds = sec;
    ++snap_.version;
}

void TimingsRun::cancel() {
    cancel_ = true;
}

void TimingsRun::wait() {
    while (pump()) {
    }
    if (thread_.joinable()) thread_.join();
}

void TimingsRun::adopt(bench::Results r) {
    cancel();
    wait();
    std::lock_guard<std::mutex> lock(mu_);
    const std::uint64_t v = snap_.version + 1;
    snap_ = {};
    snap_.version = v;
    snap_.done = snap_.total = r.rows.size();
    snap_.cancelled = r.cancelled;
    snap_.results = std::make_shared<const bench::Results>(std::move(r));
    snap_.finished = true;
}

TimingsSnapshot TimingsRun::snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return snap_;
}

bench::Results parse_results(const std::string& text, const std::string& where) {
    std::istringstream in(text);
    try {
        return bench::read_json(in);
    } catch (const std::exception& e) {
        throw Error(where + ": " + e.what());
    }
}

bench::Results load_results(const std::string& path) {
    // Regular files of a bounded size only (output_file.hpp): errors name the path.
    return parse_results(read_input_file(path, kMaxResultsBytes, "a results file"),
                         "results file '" + path + "'");
}

// [SECTION] exports

std::vector<std::string> export_timings(const bench::Results& r,
                                        const std::vector<charts::Chart>& list,
                                        const std::string& dir, const TimingsExport& what,
                                        const charts::ExportSize& size) {
    if (dir.empty()) throw Error("export folder: empty (type a folder name)");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw Error("export folder '" + dir + "': cannot create it" +
                    (ec ? " (" + ec.message() + ")" : std::string(" (a file has that name)")));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error("export folder '" + dir + "': not writable");
    if (!what.svg && !what.png && !what.pdf && !what.results_files)
        throw Error("export: choose at least one of SVG, PNG, PDF, results");
    // All or nothing: a chart that cannot be written leaves none of the files (output_file.hpp).
    OutputTransaction transaction;
    std::vector<std::string> paths;
    if (what.results_files) {
        const fs::path csv = fs::path(dir) / "results.csv", json = fs::path(dir) / "results.json";
        write_file(csv.string(), [&](std::ostream& o) { bench::write_csv(r, o); });
        write_file(json.string(), [&](std::ostream& o) { bench::write_json(r, o); });
        paths.push_back(csv.string());
        paths.push_back(json.string());
    }
    for (const charts::Chart& c : list)
        for (const auto& [on, f] :
             {std::pair{what.svg, charts::Format::Svg}, std::pair{what.png, charts::Format::Png},
              std::pair{what.pdf, charts::Format::Pdf}}) {
            if (!on) continue;
            const std::string path =
                (fs::path(dir) / (c.id + "." + charts::format_extension(f))).string();
            charts::export_chart(c, path, f, size);
            paths.push_back(path);
        }
    transaction.commit();
    return paths;
}

TimingsExportJob::~TimingsExportJob() {
    wait();
}

void TimingsExportJob::wait() {
    if (thread_.joinable()) thread_.join();
}

bool TimingsExportJob::start(std::shared_ptr<const bench::Results> results,
                             std::vector<charts::Chart> list, std::string dir, TimingsExport what,
                             charts::ExportSize size) {
    if (running() || !results) return false;
    wait();  // a finished job whose outcome was not taken
    active_ = true;
    done_ = false;
    paths_.clear();
    error_.clear();
    thread_ = std::thread([this, results = std::move(results), list = std::move(list),
                           dir = std::move(dir), what, size] {
        try {
            paths_ = export_timings(*results, list, dir, what, size);
        } catch (const std::exception& e) {
            error_ = e.what();
        }
        done_ = true;
    });
    return true;
}

bool TimingsExportJob::take(std::vector<std::string>& paths, std::string& error) {
    if (!active_ || !done_.load()) return false;
    wait();
    active_ = false;
    paths = std::move(paths_);
    error = std::move(error_);
    return true;
}

// [SECTION] screen mapping

namespace {

// The axes as chart_export.cpp uses them (a degenerate range widened to one unit).
struct Mapper {
    charts::Axis xa, ya;
    PlotRect p;
    Mapper(const charts::Chart& c, const PlotRect& plot) : xa(c.x), ya(c.y), p(plot) {
        if (!(xa.max > xa.min)) xa.max = xa.min + 1;
        if (!(ya.max > ya.min)) ya.max = ya.min + 1;
    }
    float px(double x) const { return p.left + static_cast<float>(xa.frac(x)) * p.width(); }
    float py(double y) const { return p.bottom - static_cast<float>(ya.frac(y)) * p.height(); }
};

ScreenMark fail_cross(const Mapper& M, const charts::Mark& m, std::size_t s, std::size_t k) {
    ScreenMark f;
    f.kind = ScreenMark::Kind::FailCross;
    f.series = s;
    f.mark = k;
    const float x0 = M.px(m.x0), x1 = M.px(m.x1);
    const float w = std::max(4.0f, x1 - x0), cx = 0.5f * (x0 + x1);
    const float h = std::min(14.0f, 0.08f * M.p.height());
    f.x0 = cx - 0.5f * w;
    f.x1 = cx + 0.5f * w;
    f.y1 = M.p.bottom - 2;
    f.y0 = f.y1 - h;
    f.color = {200, 30, 30, 255};
    return f;
}

}  // namespace

ScreenChart map_chart(const charts::Chart& c, const PlotRect& plot) {
    const Mapper M(c, plot);
    ScreenChart out;
    out.plot = plot;
    for (const charts::Tick& t : c.y.ticks) {
        if (t.value < M.ya.min - 1e-9 * std::fabs(M.ya.min) ||
            t.value > M.ya.max + 1e-9 * std::fabs(M.ya.max))
            continue;
        out.y_ticks.push_back({M.py(t.value), t.label});
    }
    out.slot = M.px(1) - M.px(0);
    for (std::size_t i = 0; i < c.x.categories.size(); ++i) {
        const double x = static_cast<double>(i);
        out.categories.push_back({M.px(x + 0.5), c.x.categories[i]});
        if (i % 2 == 0) out.shaded.push_back(M.px(x));
    }
    for (std::size_t s = 0; s < c.series.size(); ++s) {
        const charts::Series& se = c.series[s];
        const bool points = se.style == charts::SeriesStyle::LinePoints;
        const charts::Mark* prev = nullptr;
        for (std::size_t k = 0; k < se.marks.size(); ++k) {
            const charts::Mark& m = se.marks[k];
            if (m.kind == charts::MarkKind::Failed) {  // never a value, whatever the series
                out.bars.push_back(fail_cross(M, m, s, k));
                continue;
            }
            ScreenMark sm;
            sm.series = s;
            sm.mark = k;
            sm.color = se.color;
            if (!points) {
                sm.kind = ScreenMark::Kind::Bar;
                sm.x0 = M.px(m.x0);
                sm.x1 = M.px(m.x1);
                sm.y0 = std::min(M.py(m.y0), M.py(m.y1));
                sm.y1 = std::max(M.py(m.y0), M.py(m.y1));
                if (std::isfinite(m.lo) && std::isfinite(m.hi)) {
                    sm.whisker = true;
                    sm.wy0 = M.py(m.lo);
                    sm.wy1 = M.py(m.hi);
                }
                out.bars.push_back(sm);
                continue;
            }
            sm.y0 = sm.y1 = M.py(m.y0);
            if (m.x1 > m.x0) {
                sm.kind = ScreenMark::Kind::Level;
                sm.x0 = M.px(m.x0);
                sm.x1 = M.px(m.x1);
            } else {
                sm.kind = ScreenMark::Kind::Point;
                sm.x0 = sm.x1 = M.px(m.x0);
            }
            // Consecutive categories are joined; a missing one leaves a gap.
            if (se.connect && prev && m.x0 - prev->x0 <= 1.5)
                out.links.push_back({M.px(prev->x0), M.py(prev->y0), M.px(m.x0), M.py(m.y0),
                                     se.color, se.dashed, ""});
            prev = &m;
            out.points.push_back(sm);
        }
    }
    for (const charts::RefLine& r : c.ref_lines) {
        const float y = M.py(r.y);
        out.refs.push_back({plot.left, y, plot.right, y, r.color, r.dashed, r.label});
    }
    return out;
}

std::optional<std::pair<std::size_t, std::size_t>> hit_at(const charts::Chart& c,
                                                          const PlotRect& plot, float mx, float my,
                                                          float tol_px) {
    if (mx < plot.left - tol_px || mx > plot.right + tol_px || my < plot.top - tol_px ||
        my > plot.bottom + tol_px || plot.width() <= 0 || plot.height() <= 0)
        return std::nullopt;
    const Mapper M(c, plot);
    // Pixel -> data: x is linear over [min, max]; y through the axis fraction (log-aware).
    const double fx = (mx - plot.left) / plot.width();
    const double hx = M.xa.min + fx * (M.xa.max - M.xa.min);
    const double fy = std::clamp((plot.bottom - my) / plot.height(), 0.0f, 1.0f);
    const double hy = M.ya.log && M.ya.min > 0 ? M.ya.min * std::pow(M.ya.max / M.ya.min, fy)
                                               : M.ya.min + fy * (M.ya.max - M.ya.min);
    const double tol_x = tol_px / plot.width() * (M.xa.max - M.xa.min);
    const double tol_y = tol_px / plot.height();
    return c.hit(hx, hy, tol_x, tol_y);
}

}  // namespace convlab::app
