// The Timings panel's state, independent of any window (no imgui, no GLFW): what the controls
// choose, the benchmark run on a worker thread (progress, cancel, a snapshot of the results so far
// under a mutex), the exports, and the mapping of a chart model (charts/chart.hpp) to screen
// pixels that the ImGui drawing (gui_timings.cpp) follows mark for mark. Index:
//   [SECTION] settings: the controls' choices and the runner configuration made of them
//   [SECTION] a lesson step's measurement: its one layer and algorithms
//   [SECTION] the run: worker thread, progress, cancel, snapshot
//   [SECTION] exports: results.csv/json and the charts as SVG/PNG/PDF
//   [SECTION] screen mapping of a chart (pixels), and hover
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "charts/chart.hpp"
#include "charts/chart_export.hpp"
#include "convlab/bench.hpp"

namespace convlab::app {

// [SECTION] settings

struct TimingsSettings {
    std::string shapes_file;  // a shape file (assets/shapes/*.txt); the GUI fills classroom.txt
    bool fwd = true, bwd_data = true, bwd_weight = true;  // passes
    // Algorithms as "PASS:NAME" (bwd_data:col2im ...) that are NOT timed; empty: every algorithm
    // of the selected passes except direct (the reference), as `convlab bench` does.
    std::vector<std::string> excluded;
    dim_t batch = 1;
    int threads = 0;  // 0 = all cores
    // The peer timed beside the engine, when this convlab was built with oneDNN, by its
    // `convlab bench --peer` name: "onednn" (its own blocked layouts, reordered outside the timed
    // calls), "onednn-nchw" (the engine's plain layouts, nothing reordered) or "none".
    std::string peer = "onednn";
    bool quick = true;  // quick timing: 1 warm-up, >= 5 runs and >= 10 ms (else >= 0.2 s)
    // Weights packed once per layer and pass, outside the timed calls (as oneDNN reorders its
    // weights before its timed calls); off: packed in every call, so the charts show
    // implicit_gemm's pack_wei and fliprot (`convlab bench --weights per-call`). Choosing a peer
    // sets it as `convlab bench` defaults it: off beside onednn-nchw, which reorders nothing.
    bool weights_once = true;
    std::string out_dir = "out/timings";  // export folder
};

// A peer the panel offers: its `--peer` name, the label of the choice and what it means.
struct PeerChoice {
    const char* name;     // "onednn"
    const char* label;    // "oneDNN (its blocked layouts)"
    const char* tooltip;  // one or two lines
    bool plain;           // on the engine's plain layouts (PeerConv's `plain`)
    // The weights setting `convlab bench` defaults to beside it: packed once unless the peer
    // reads its weights as given (PeerSpec::reorders_weights, false on plain layouts).
    bool weights_once() const { return !plain; }
};
// none, onednn, onednn-nchw, in that order.
const std::vector<PeerChoice>& peer_choices();
// The choice of that `--peer` name, or null.
const PeerChoice* find_peer_choice(const std::string& name);
// The same; throws Error naming the control and the names it knows.
const PeerChoice& peer_choice(const std::string& name);
// Makes c the settings' peer, with the weights setting it defaults to.
void choose_peer(TimingsSettings& s, const PeerChoice& c);
// The `--peer` name of a peer's column name (PeerSpec::name): "oneDNN-nchw" -> "onednn-nchw".
std::string peer_option(const std::string& column);
// The `--peer` name of the peer whose rows results carry, or "none" when they have none.
std::string peer_name_of(const bench::Results& r);

// The algorithms the panel offers for a pass: the registry's, without direct.
std::vector<std::string> panel_algorithms(Pass pass);
// Stems of DIR/*.txt, sorted ("classroom", "resnet50").
std::vector<std::string> shape_sets(const std::string& dir);
// `convlab bench ...` that measures what these settings measure (the charts' reproduce line);
// peer_used: s.peer is timed (wanted and built in). Its --weights is written where it differs
// from what `convlab bench` defaults to with that peer.
std::string reproduce_command(const TimingsSettings& s, bool peer_used);
// The runner configuration of the settings (layers read from the shape file), with `peer` (the
// spec of s.peer, nullopt when it is none or not built in). Throws Error naming the control and
// the rule: no pass, no algorithm, bad shape file, batch < 1, unknown peer.
bench::Config make_config(const TimingsSettings& s, const std::optional<bench::PeerSpec>& peer);

// [SECTION] a lesson step's measurement

// A timings step of a lesson measures its own layer when it opens (lessons/README.md).
struct TimingsLessonRun {
    Problem problem;                 // its name labels the layer on the charts
    std::vector<std::string> algos;  // "PASS:NAME" ("bwd_data:col2im"); empty: all of every pass
    std::string chart;               // chart id to show ("" the panel's choice)
    std::string source;              // where it comes from ("lesson 18_measuring, step 2")
    // Results shipped with the lesson (lesson_reference_file), drawn beside the live run as a
    // layer of their own; "" none.
    std::string reference;
};

// The reference results shipped beside a lesson file: DIR/NAME.results.json for DIR/NAME.toml,
// written by the `convlab bench` command its lessons/README.md gives; "" when there is none.
std::string lesson_reference_file(const std::string& lesson_file);

// The layer name of the reference in the charts (with_reference).
inline constexpr const char* kReferenceLayer = "reference";

// `live` with the measurements of `ref` whose "PASS:NAME" is in `algos` (empty: all; the
// reference's peer rows only when live has a peer of that name, in the passes of `algos`) appended
// as one more layer per reference layer, named kReferenceLayer, so that every chart draws them
// beside the live run.
bench::Results with_reference(const bench::Results& live, const bench::Results& ref,
                              const std::vector<std::string>& algos);

// Backward-data time over forward time on one layer, as the relative_bwd_data chart draws it:
// each valid bwd_data algorithm's median over the forward's (im2col_gemm, else the first engine
// forward measured).
struct PassRatio {
    std::string algorithm;
    double ratio = 0;
    bool noisy = false;
};
std::vector<PassRatio> bwd_data_ratios(const bench::Results& r, std::size_t layer);

// The panel's line for a finished run of `r` (live layers first, then any reference layers
// with_reference appended): how many measurements in how long, whether all were verified, the
// bwd_data / fwd ratios of the first layer beside the reference's (a noisy one marked "~"), and
// how many of the live measurements were noisy (timed while other processes took CPU or the
// machine ran slow), so that a noisy run never reads as a clean one.
std::string run_summary(const bench::Results& r, double seconds, bool cancelled);
// The threads of a lesson's run where the panel says all cores: all but one, which the window
// keeps for drawing (at least 1).
int lesson_threads();
// Its runner configuration: the one layer, the listed algorithms in their passes only, timed as
// `convlab bench` times (2 warm-ups, >= 5 runs filling >= 0.2 s) with every pass in one window
// (Config::interleave_passes), the weights as `convlab bench` defaults them beside that peer,
// and a reproduce command. threads 0: lesson_threads(). Throws Error naming an entry that is not
// PASS:NAME or not an algorithm of its pass.
bench::Config lesson_config(const TimingsLessonRun& run, int threads,
                            const std::optional<bench::PeerSpec>& peer, const std::string& out_dir);

// [SECTION] the run

// What the panel shows of a run; copied out under the mutex, so the frame loop never waits for
// a measurement.
struct TimingsSnapshot {
    std::shared_ptr<const bench::Results> results;  // measured so far (null before the first)
    std::size_t done = 0, total = 0;                // measurements
    std::string what;                               // the last one: "conv1 bwd_data col2im"
    bool running = false;
    bool finished = false;      // the run ended (completed, cancelled or failed)
    bool cancelled = false;     // it ended early on a cancel
    std::string error;          // the run could not start or failed as a whole ("" when fine)
    std::uint64_t version = 0;  // changes with every new result, so the charts know to rebuild
    double seconds = 0;         // since the start (at the last update)
};

// One benchmark run at a time on a worker thread (bench::run with a progress callback and a
// cancel flag). The destructor cancels and joins.
class TimingsRun {
  public:
    TimingsRun() = default;
    TimingsRun(const TimingsRun&) = delete;
    TimingsRun& operator=(const TimingsRun&) = delete;
    ~TimingsRun();

    // Starts `cfg` (its progress and cancel are replaced). Returns false (and changes nothing)
    // while a run is under way.
    bool start(bench::Config cfg);
    // Asks the run to stop after the measurement under way; the snapshot keeps what was
    // measured, marked cancelled.
    void cancel();
    bool running() const { return running_.load(); }
    // Blocks until the run under way (if any) has ended (a sliced run: measures its slices).
    void wait();
    // Runs on the caller's thread in slices (bench::SlicedRun) instead of on a worker thread:
    // each pump() measures one slice and publishes it. For a build without threads (the
    // browser's), whose frame loop pumps once a frame so that the page repaints between slices.
    // Set before start().
    void set_sliced(bool on) { sliced_ = on; }
    // Measures the next slice of a sliced run under way; false when there is none.
    bool pump();
    // Shows results that were not measured here (a results.json read back): a finished run.
    void adopt(bench::Results r);
    TimingsSnapshot snapshot() const;

  private:
    void publish(const bench::Config::Progress& p);
    void end(std::shared_ptr<const bench::Results> results, const std::string& error);
    bool sliced_ = false;
    std::unique_ptr<bench::SlicedRun> slices_;
    mutable std::mutex mu_;
    TimingsSnapshot snap_;
    std::thread thread_;
    std::atomic<bool> running_{false};
    std::atomic<bool> cancel_{false};
    std::chrono::steady_clock::time_point start_{};
};

// Reads a results.json (`convlab bench` / an export of the panel). Throws Error naming the file.
// The largest results.json read: ResNet-50 over every algorithm, pass and operation, swept over
// batches and threads, is a few MB.
inline constexpr std::uintmax_t kMaxResultsBytes = std::uintmax_t{256} << 20;
bench::Results load_results(const std::string& path);
// The Results of a results.json's text; `where` starts its errors ("results file 'P'").
bench::Results parse_results(const std::string& text, const std::string& where);

// [SECTION] exports

struct TimingsExport {
    bool svg = true, png = true, pdf = true;
    bool results_files = true;  // also results.csv and results.json
};

// Writes the charts (each in the chosen formats, as DIR/<chart.id>.<ext>) and, when asked,
// DIR/results.csv and DIR/results.json; creates DIR. Returns the paths written. Throws Error
// ("export folder 'DIR': ...") when the folder cannot be made or written; files are written
// through temporary names, so a failure leaves no partial file.
std::vector<std::string> export_timings(const bench::Results& r,
                                        const std::vector<charts::Chart>& list,
                                        const std::string& dir, const TimingsExport& what,
                                        const charts::ExportSize& size = {});

// An export on its own thread, so that the panel keeps drawing while every chart is written in
// three formats (most of a second). start() is refused (false) while a job runs; take() hands
// over the outcome once, when the job has ended. The destructor waits for a running job, so no
// export is cut short.
class TimingsExportJob {
  public:
    TimingsExportJob() = default;
    TimingsExportJob(const TimingsExportJob&) = delete;
    TimingsExportJob& operator=(const TimingsExportJob&) = delete;
    ~TimingsExportJob();
    bool start(std::shared_ptr<const bench::Results> results, std::vector<charts::Chart> list,
               std::string dir, TimingsExport what, charts::ExportSize size = {});
    bool running() const { return active_ && !done_.load(); }
    // True once per finished job: its paths, or its error (paths empty).
    bool take(std::vector<std::string>& paths, std::string& error);
    void wait();

  private:
    std::thread thread_;
    std::atomic<bool> done_{false};
    bool active_ = false;
    std::vector<std::string> paths_;
    std::string error_;
};

// [SECTION] screen mapping

// The plot rectangle in pixels (y grows downwards).
struct PlotRect {
    float left = 0, top = 0, right = 1, bottom = 1;
    float width() const { return right - left; }
    float height() const { return bottom - top; }
};

// One mark of the chart in pixels, in the order chart_export.cpp draws them.
struct ScreenMark {
    enum class Kind {
        Bar,        // filled rectangle (x0, y0)-(x1, y1), y0 < y1
        Point,      // a dot at (x0, y0) (x1 = x0, y1 = y0)
        Level,      // a point's level across its slot: segment (x0, y0)-(x1, y0), dot at centre
        FailCross,  // FAIL: a cross in the box (x0, y0)-(x1, y1) sitting on the x axis
    };
    Kind kind = Kind::Bar;
    std::size_t series = 0, mark = 0;  // indices into Chart::series / Series::marks
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    bool whisker = false;  // interquartile whisker from wy0 to wy1 at the bar's centre
    float wy0 = 0, wy1 = 0;
    charts::Color color;
};

struct ScreenLine {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    charts::Color color;
    bool dashed = false;
    std::string label;  // reference lines: the legend text
};

struct ScreenTick {
    float pos = 0;  // pixels (y for the value axis, x centre for categories)
    std::string label;
};

struct ScreenChart {
    PlotRect plot;
    std::vector<ScreenTick> y_ticks, categories;
    std::vector<float> shaded;       // x of every other category's left edge (width = slot)
    float slot = 0;                  // width of one category in pixels
    std::vector<ScreenMark> bars;    // Bars / StackedBars series, FAIL crosses
    std::vector<ScreenLine> refs;    // reference lines (peak, 1 = forward)
    std::vector<ScreenLine> links;   // LinePoints: joins of consecutive categories
    std::vector<ScreenMark> points;  // LinePoints: dots and levels, drawn last
};

// Maps every mark of `c` into `plot`. Failed marks become FailCross boxes on the x axis
// (never a bar or a point at a value); the rest follow Axis::frac.
ScreenChart map_chart(const charts::Chart& c, const PlotRect& plot);
// The mark under pixel (mx, my) (Chart::hit with a tolerance of tol_px pixels), or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> hit_at(const charts::Chart& c,
                                                          const PlotRect& plot, float mx, float my,
                                                          float tol_px = 4);

}  // namespace convlab::app
