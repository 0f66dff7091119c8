// The app's Timings panel: its window-free state (settings -> runner configuration, the run on a
// worker thread with progress and cancel, exports, the chart-to-pixel mapping where a FAIL never
// becomes a value) and the view rendered headless through the real binary (`convlab shot --view
// timings --results FILE`, under xvfb-run when there is no display).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "charts/chart.hpp"
#include "cli/cli.hpp"
#include "convlab/bench.hpp"
#include "convlab/conv.hpp"
#include "model/timings_state.hpp"
#include "stb_image.h"
#include "test_files.hpp"

using namespace convlab;
namespace fs = std::filesystem;
using convlab::test::can_render;
using convlab::test::distinct_colours;
using convlab::test::Image;
using convlab::test::load_png;
using convlab::test::Run;
using convlab::test::run_binary;
using convlab::test::TempDir;

namespace {

bench::Layer layer(const std::string& desc) {
    bench::Layer l;
    l.problem = parse_descriptor(desc);
    l.descriptor = desc;
    return l;
}

// im2col_gemm's forward with one output element off by 1: a deliberately wrong algorithm.
void forward_off_by_one(const Problem& p, const ConvArgs& a, Profiler* prof) {
    find_algorithm(Pass::Forward, "im2col_gemm").run(p, a, prof);
    a.dst[p.mb * p.oc * p.out_spatial() / 2] += 1.0f;
}

// `layers` small layers, fwd (im2col_gemm) and bwd_data (col2im, via_forward), no peer, no peak;
// each measurement takes at least `seconds` of timed runs (so a run lasts long enough to watch).
bench::Config small_config(int layers, double seconds) {
    bench::Config cfg;
    for (int i = 0; i < layers; ++i)
        cfg.layers.push_back(layer("mb1ic4ih8oc4kh3ph1n\"t:l" + std::to_string(i) + "\""));
    cfg.passes = {Pass::Forward, Pass::BackwardData};
    cfg.algos = {"fwd:im2col_gemm", "bwd_data:col2im", "bwd_data:via_forward"};
    cfg.threads = 1;
    cfg.timing.warmup = 0;
    cfg.timing.reps = 0;
    cfg.timing.min_reps = 1;
    cfg.timing.min_seconds = seconds;
    cfg.measure_peak = false;
    return cfg;
}

// The results of a small run with a deliberately wrong forward algorithm among the right ones.
bench::Results results_with_a_fail() {
    bench::Config cfg = small_config(2, 0);
    cfg.timing.reps = 2;
    cfg.extra_algorithms = {{Pass::Forward, "off_by_one", "wrong on purpose", forward_off_by_one}};
    cfg.algos.push_back("fwd:off_by_one");
    cfg.command = "test";
    return bench::run(cfg);
}

}  // namespace

TEST_CASE("timings panel: the controls become a runner configuration, bad choices are named") {
    TempDir t;
    const fs::path shapes = t.path / "two.txt";
    std::ofstream(shapes) << "# two layers\nmb1ic2ih5oc2kh3n\"t:a\"\nmb1ic2iw9oc2kw3n\"t:b\"\n";
    app::TimingsSettings s;
    s.shapes_file = shapes.string();
    s.batch = 3;
    s.threads = 1;
    s.peer = "none";
    s.bwd_weight = false;
    s.excluded = {"bwd_data:via_forward"};
    const bench::Config cfg = app::make_config(s, std::nullopt);
    CHECK(cfg.layers.size() == 2);
    CHECK(cfg.batch == dim_t{3});
    CHECK(cfg.passes == std::vector<Pass>{Pass::Forward, Pass::BackwardData});
    CHECK_FALSE(cfg.peer.has_value());
    // Every offered algorithm of the two passes but the excluded one, none of bwd_weight.
    const auto has = [&](const std::string& a) {
        return std::find(cfg.algos.begin(), cfg.algos.end(), a) != cfg.algos.end();
    };
    CHECK(has("fwd:im2col_gemm"));
    CHECK(has("bwd_data:col2im"));
    CHECK_FALSE(has("bwd_data:via_forward"));
    CHECK_FALSE(has("bwd_data:direct"));
    for (const std::string& a : cfg.algos) CHECK(a.rfind("bwd_weight:", 0) == std::string::npos);
    CHECK(cfg.algos.size() == app::panel_algorithms(Pass::Forward).size() +
                                  app::panel_algorithms(Pass::BackwardData).size() - 1);
    // The reproduce line is a `convlab bench` command that parses.
    CHECK(cfg.command.rfind("convlab bench --quick --shapes ", 0) == 0);
    CHECK(cfg.command.find("--passes fwd,bwd_data ") != std::string::npos);
    CHECK(cfg.command.find("--peer none") != std::string::npos);
    CHECK(cfg.command.find("bwd_data:via_forward") == std::string::npos);
    // Weights prepared once by default; off, packed per call, and the line says so.
    CHECK(cfg.prepared_weights);
    CHECK(cfg.command.find("--weights") == std::string::npos);
    {
        app::TimingsSettings per_call = s;
        per_call.weights_once = false;
        const bench::Config pc = app::make_config(per_call, std::nullopt);
        CHECK_FALSE(pc.prepared_weights);
        CHECK(pc.command.find(" --weights per-call ") != std::string::npos);
    }
    // Nothing excluded: the runner's default (every algorithm but direct).
    s.excluded.clear();
    CHECK(app::make_config(s, std::nullopt).algos.empty());

    const auto error_of = [&](app::TimingsSettings bad) {
        try {
            app::make_config(bad, std::nullopt);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    app::TimingsSettings bad = s;
    bad.fwd = bad.bwd_data = bad.bwd_weight = false;
    CHECK(error_of(bad).rfind("passes:", 0) == 0);
    bad = s;
    bad.bwd_data = false;
    for (const auto& a : app::panel_algorithms(Pass::Forward)) bad.excluded.push_back("fwd:" + a);
    CHECK(error_of(bad).rfind("algorithms:", 0) == 0);
    bad = s;
    bad.batch = 0;
    CHECK(error_of(bad).rfind("batch:", 0) == 0);
    bad = s;
    bad.shapes_file = (t.path / "missing.txt").string();
    CHECK(error_of(bad).rfind("shape set:", 0) == 0);
    bad = s;
    bad.peer = "mkl";
    CHECK(error_of(bad) == "peer: 'mkl' is not one of none, onednn, onednn-nchw");
    CHECK(app::shape_sets(CONVLAB_SOURCE_DIR "/assets/shapes") ==
          std::vector<std::string>{"classroom", "resnet50"});
}

TEST_CASE("timings panel: the peer choice names the peer and its weights in the reproduce line") {
    // A stand-in for each oneDNN peer (its name and weights flag are what the panel reads; it is
    // never run here).
    const auto spec = [](const std::string& name, bool reorders) {
        bench::PeerSpec p;
        p.name = name;
        p.description = name + " (stand-in)";
        p.reorders_weights = reorders;
        return p;
    };
    TempDir t;
    const fs::path shapes = t.path / "one.txt";
    std::ofstream(shapes) << "mb1ic2ih5oc2kh3n\"t:a\"\n";
    app::TimingsSettings s;
    s.shapes_file = shapes.string();
    // The choices, in the combo's order, and the weights each sets.
    REQUIRE(app::peer_choices().size() == 3);
    CHECK(std::string(app::peer_choices()[2].name) == "onednn-nchw");
    CHECK(app::peer_choice("onednn-nchw").plain);
    CHECK_FALSE(app::peer_choice("onednn-nchw").weights_once());
    CHECK(app::peer_choice("onednn").weights_once());
    CHECK_FALSE(app::peer_choice("onednn").plain);
    CHECK_THROWS_WITH_AS(app::peer_choice("onednn-auto"), doctest::Contains("not one of"), Error);
    CHECK(app::peer_option("oneDNN-nchw") == "onednn-nchw");
    CHECK(app::peer_option("") == "none");

    // oneDNN on its layouts, weights once: nothing but the peer's name on the line.
    bench::Config c = app::make_config(s, spec("oneDNN", true));
    REQUIRE(c.peer.has_value());
    CHECK(c.prepared_weights);
    CHECK(c.command.find(" --peer onednn --") != std::string::npos);
    CHECK(c.command.find("--weights") == std::string::npos);
    // oneDNN-nchw with the weights it sets (per call): `convlab bench`'s default there, unsaid.
    s.peer = "onednn-nchw";
    s.weights_once = app::peer_choice(s.peer).weights_once();
    c = app::make_config(s, spec("oneDNN-nchw", false));
    REQUIRE(c.peer.has_value());
    CHECK(c.peer->name == "oneDNN-nchw");
    CHECK_FALSE(c.prepared_weights);
    CHECK(c.command.find(" --peer onednn-nchw --") != std::string::npos);
    CHECK(c.command.find("--weights") == std::string::npos);
    // Ticked again: the line must say so, as the command's default would pack per call.
    s.weights_once = true;
    c = app::make_config(s, spec("oneDNN-nchw", false));
    CHECK(c.prepared_weights);
    CHECK(c.command.find(" --weights once ") != std::string::npos);
    // Wanted but not built in (no spec): no peer, and the line says none, with its weights.
    c = app::make_config(s, std::nullopt);
    CHECK_FALSE(c.peer.has_value());
    CHECK(c.command.find(" --peer none ") != std::string::npos);
    CHECK(c.command.find("--weights") == std::string::npos);

    // A lesson step's run: the weights and the line follow its peer as `convlab bench` does.
    app::TimingsLessonRun l;
    l.problem = parse_descriptor("mb1ic2ih5oc2kh3");
    l.algos = {"fwd:im2col_gemm"};
    l.source = "test";
    c = app::lesson_config(l, 1, spec("oneDNN-nchw", false), "x");
    CHECK_FALSE(c.prepared_weights);
    CHECK(c.command.find(" --peer onednn-nchw ") != std::string::npos);
    c = app::lesson_config(l, 1, spec("oneDNN", true), "x");
    CHECK(c.prepared_weights);
    CHECK(c.command.find(" --peer onednn ") != std::string::npos);
    c = app::lesson_config(l, 1, std::nullopt, "x");
    CHECK(c.prepared_weights);
    CHECK(c.command.find(" --peer none ") != std::string::npos);

    // Results shown from a file give the panel their peer.
    bench::Results r;
    CHECK(app::peer_name_of(r) == "none");
    bench::Measurement m;
    m.algorithm = "im2col_gemm";
    r.rows.push_back(m);
    CHECK(app::peer_name_of(r) == "none");
    m.algorithm = "oneDNN-nchw";
    m.peer = true;
    r.rows.push_back(m);
    CHECK(app::peer_name_of(r) == "onednn-nchw");
}

TEST_CASE("timings panel: the run reports progress on its thread up to the total") {
    app::TimingsRun run;
    CHECK_FALSE(run.snapshot().results);
    REQUIRE(run.start(small_config(2, 0.02)));   // 6 measurements of >= 20 ms
    CHECK_FALSE(run.start(small_config(1, 0)));  // one run at a time
    std::size_t last_done = 0, partial = 0;      // partial: most rows seen before the end (< 6)
    std::uint64_t last_version = 0;
    bool monotonic = true;
    while (run.running()) {
        const app::TimingsSnapshot s = run.snapshot();
        monotonic &= s.done >= last_done && s.version >= last_version;
        last_done = s.done;
        last_version = s.version;
        // Results arrive before the end: what the charts redraw from.
        if (s.results && !s.finished && !s.results->rows.empty() && s.done < 6) {
            partial = std::max(partial, s.results->rows.size());
            CHECK(s.results->rows.size() == s.done);
            CHECK(s.total == 6);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    run.wait();
    const app::TimingsSnapshot s = run.snapshot();
    CHECK(monotonic);
    CHECK(partial > 0);
    CHECK(partial < 6);
    CHECK(s.finished);
    CHECK_FALSE(s.running);
    CHECK_FALSE(s.cancelled);
    CHECK(s.error.empty());
    CHECK(s.done == 6);
    CHECK(s.total == 6);
    REQUIRE(s.results);
    CHECK(s.results->rows.size() == 6);
    CHECK(s.results->failed() == 0);
    CHECK(s.version > last_version);
    // A bad configuration fails on the thread and says why; the panel keeps running.
    bench::Config bad = small_config(1, 0);
    bad.algos = {"fwd:no_such_algorithm"};
    REQUIRE(run.start(bad));
    run.wait();
    CHECK(run.snapshot().finished);
    CHECK(run.snapshot().error.find("no_such_algorithm") != std::string::npos);
}

TEST_CASE("timings panel: a sliced run measures on the caller's thread, a slice a pump") {
    // The browser build's run: nothing happens between pumps (no worker thread), each pump
    // publishes one slice, the snapshot ends as a threaded run's does.
    app::TimingsRun run;
    run.set_sliced(true);
    CHECK_FALSE(run.pump());                 // no run under way
    REQUIRE(run.start(small_config(2, 0)));  // 2 layers x (fwd 1 + bwd_data 2) measurements
    CHECK(run.running());
    CHECK_FALSE(run.start(small_config(1, 0)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(run.snapshot().done == 0);
    CHECK(run.snapshot().total == 6);
    std::vector<std::size_t> done;
    int pumps = 0;
    while (run.running()) {
        REQUIRE(run.pump());
        ++pumps;
        const app::TimingsSnapshot s = run.snapshot();
        done.push_back(s.done);
        REQUIRE(s.results);
        CHECK(s.results->rows.size() == s.done);
    }
    CHECK(pumps == 4);  // 2 layers x 2 passes
    CHECK(done == std::vector<std::size_t>{1, 3, 4, 6});
    const app::TimingsSnapshot s = run.snapshot();
    CHECK(s.finished);
    CHECK_FALSE(s.cancelled);
    CHECK(s.error.empty());
    REQUIRE(s.results);
    CHECK(s.results->rows.size() == 6);
    CHECK(s.results->passed() == 6);
    CHECK_FALSE(run.pump());
    // A bad configuration ends the run at once, saying why.
    bench::Config bad = small_config(1, 0);
    bad.algos = {"fwd:no_such_algorithm"};
    REQUIRE(run.start(bad));
    CHECK_FALSE(run.running());
    CHECK(run.snapshot().finished);
    CHECK(run.snapshot().error.find("no_such_algorithm") != std::string::npos);
    // wait() measures the slices left; a cancel stops before the next one.
    REQUIRE(run.start(small_config(2, 0)));
    REQUIRE(run.pump());
    run.cancel();
    run.wait();
    CHECK(run.snapshot().cancelled);
    CHECK(run.snapshot().done == 1);
}

TEST_CASE("timings panel: cancel stops early and leaves a consistent snapshot") {
    app::TimingsRun run;
    REQUIRE(run.start(small_config(12, 0.02)));  // 36 measurements of >= 20 ms: >= 0.7 s
    while (run.running() && run.snapshot().done < 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto t0 = std::chrono::steady_clock::now();
    run.cancel();
    run.wait();
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const app::TimingsSnapshot s = run.snapshot();
    MESSAGE("cancelled after " << s.done << " of " << s.total << " measurements; the run ended "
                               << waited << " s after the cancel");
    CHECK(s.finished);
    CHECK(s.cancelled);
    CHECK(s.total == 36);
    CHECK(s.done >= 2);
    CHECK(s.done < s.total);
    REQUIRE(s.results);
    const bench::Results& r = *s.results;
    CHECK(r.cancelled);
    // Every measurement reported is in the results, each complete and verified.
    CHECK(r.rows.size() == s.done);
    for (const bench::Measurement& m : r.rows) {
        CHECK(m.layer < r.layers.size());
        CHECK(m.valid());
        CHECK(m.total.runs >= 1);
    }
    // Charts of a cancelled run are drawn, never as "verified".
    const std::vector<charts::Chart> list = charts::standard_charts(r);
    REQUIRE_FALSE(list.empty());
    for (const charts::Chart& c : list) CHECK_FALSE(c.verified);
}

TEST_CASE("timings panel: a FAIL is never a drawn value in the screen mapping, hover finds it") {
    const bench::Results r = results_with_a_fail();
    REQUIRE(r.failed() == 2);  // off_by_one on both layers
    const app::PlotRect plot{100, 50, 900, 550};
    std::size_t fail_marks = 0;
    for (const charts::Chart& c : charts::standard_charts(r)) {
        INFO(c.id);
        const app::ScreenChart S = app::map_chart(c, plot);
        std::size_t values = 0, crosses = 0;
        for (const auto* list : {&S.bars, &S.points})
            for (const app::ScreenMark& m : *list) {
                REQUIRE(m.series < c.series.size());
                const charts::Mark& src = c.series[m.series].marks[m.mark];
                const bool wrong = c.series[m.series].name.find("off_by_one") != std::string::npos;
                if (m.kind == app::ScreenMark::Kind::FailCross) {
                    ++crosses;
                    CHECK(src.kind == charts::MarkKind::Failed);
                    // On the x axis, small, inside its slot.
                    CHECK(m.y1 == doctest::Approx(plot.bottom - 2));
                    CHECK(m.y1 - m.y0 <= 14.0f);
                    CHECK(m.x0 >= plot.left);
                    CHECK(m.x1 <= plot.right);
                    // The hover at its centre is that mark, saying it is not plotted.
                    const auto h = app::hit_at(c, plot, 0.5f * (m.x0 + m.x1), 0.5f * (m.y0 + m.y1));
                    REQUIRE(h);
                    CHECK(c.series[h->first].marks[h->second].hover.find("not plotted") !=
                          std::string::npos);
                } else {
                    ++values;
                    CHECK_FALSE(wrong);  // the wrong algorithm never gets a bar or a point
                    CHECK(src.kind != charts::MarkKind::Failed);
                    CHECK(m.y0 >= plot.top - 0.5f);
                    CHECK(m.y1 <= plot.bottom + 0.5f);
                }
            }
        CHECK(values == c.plotted);
        CHECK(crosses == c.failed);
        fail_marks += crosses;
        // A hover over a value bar finds it (the mapping and Chart::hit agree).
        for (const app::ScreenMark& m : S.bars)
            if (m.kind == app::ScreenMark::Kind::Bar && m.y1 - m.y0 > 6 && m.x1 - m.x0 > 4) {
                const auto h = app::hit_at(c, plot, 0.5f * (m.x0 + m.x1), 0.5f * (m.y0 + m.y1), 1);
                REQUIRE(h);
                CHECK(h->first == m.series);
                CHECK(h->second == m.mark);
            }
    }
    CHECK(fail_marks >= 2);  // at least ops_fwd and gflops_fwd show both FAILs
}

TEST_CASE("timings panel: exports to a folder, an unwritable folder is an error, no files") {
    const bench::Results r = results_with_a_fail();
    const std::vector<charts::Chart> list = charts::standard_charts(r);
    TempDir t;
    const std::string dir = (t.path / "new" / "folder").string();
    app::TimingsExport what;
    what.pdf = false;
    const auto paths = app::export_timings(r, {list.front()}, dir, what, {640, 360, 1});
    CHECK(paths.size() == 4);  // results.csv, results.json, one chart as SVG and PNG
    for (const auto& p : paths) CHECK(fs::file_size(p) > 100);
    CHECK_FALSE(fs::exists(fs::path(dir) / (list.front().id + ".pdf")));
    int w = 0, h = 0, n = 0;
    unsigned char* px =
        stbi_load((fs::path(dir) / (list.front().id + ".png")).c_str(), &w, &h, &n, 3);
    REQUIRE(px);
    stbi_image_free(px);
    CHECK(w == 640);
    // The results read back: same rows, the FAILs still FAIL.
    const bench::Results back = app::load_results((fs::path(dir) / "results.json").string());
    CHECK(back.rows.size() == r.rows.size());
    CHECK(back.failed() == r.failed());
    // A folder under a regular file cannot be made: an Error naming it, nothing written.
    const fs::path file = t.path / "a_file";
    std::ofstream(file) << "x";
    const std::string bad = (file / "sub").string();
    std::string msg;
    try {
        app::export_timings(r, list, bad, what);
    } catch (const Error& e) {
        msg = e.what();
    }
    CHECK(msg.find("export folder '" + bad + "'") != std::string::npos);
    CHECK_FALSE(fs::exists(bad));
    CHECK_THROWS_AS(app::load_results((t.path / "none.json").string()), Error);
}

TEST_CASE("timings panel: the export runs on its own thread, one job at a time, outcome once") {
    auto r = std::make_shared<const bench::Results>(results_with_a_fail());
    const std::vector<charts::Chart> list = charts::standard_charts(*r);
    TempDir t;
    app::TimingsExport what;
    what.pdf = what.svg = false;
    app::TimingsExportJob job;
    std::vector<std::string> paths;
    std::string error;
    CHECK_FALSE(job.take(paths, error));  // nothing started
    const std::string dir = (t.path / "out").string();
    REQUIRE(job.start(r, list, dir, what, {320, 180, 1}));
    job.wait();
    REQUIRE(job.take(paths, error));
    CHECK(error.empty());
    CHECK(paths.size() == 2 + list.size());  // results.csv, results.json, one PNG a chart
    for (const auto& p : paths) CHECK(fs::exists(p));
    CHECK_FALSE(job.take(paths, error));  // handed over once
    // An unwritable folder: the error comes back through take(), no files.
    const fs::path file = t.path / "a_file";
    std::ofstream(file) << "x";
    REQUIRE(job.start(r, list, (file / "sub").string(), what));
    job.wait();
    REQUIRE(job.take(paths, error));
    CHECK(paths.empty());
    CHECK(error.find("export folder") != std::string::npos);
    // No results: refused.
    CHECK_FALSE(job.start(nullptr, list, dir, what));
}

namespace {

// Pixels right of the sidebar close to the FAIL red (200, 30, 30).
int fail_red(const Image& im) {
    int n = 0;
    for (int y = 0; y < im.h; ++y)
        for (int x = 400; x < im.w; ++x) {
            const unsigned char* p = &im.rgb[(static_cast<std::size_t>(y) * im.w + x) * 3];
            n += std::abs(p[0] - 200) <= 8 && std::abs(p[1] - 30) <= 8 && std::abs(p[2] - 30) <= 8;
        }
    return n;
}

}  // namespace

TEST_CASE("timings panel: the view rendered headless from a results.json, FAIL marks shown" *
          doctest::skip(!can_render())) {
    TempDir t;
    // The same run twice as files: with the wrong algorithm's FAIL rows, and without them.
    bench::Results r = results_with_a_fail();
    bench::Results ok = r;
    ok.rows.erase(std::remove_if(ok.rows.begin(), ok.rows.end(),
                                 [](const bench::Measurement& m) { return !m.valid(); }),
                  ok.rows.end());
    REQUIRE(ok.failed() == 0);
    const auto write = [&](const bench::Results& x, const std::string& name) {
        const std::string p = (t.path / name).string();
        std::ofstream f(p);
        bench::write_json(x, f);
        return p;
    };
    const std::string with_fail = write(r, "fail.json"), all_ok = write(ok, "ok.json");
    const auto shot = [&](const std::string& json, const std::string& extra,
                          const std::string& png) {
        const std::string p = (t.path / png).string();
        const Run run =
            run_binary("shot --view timings --results " + json +
                           " --chart gflops_fwd --size 1280x800 " + extra + " --out " + p,
                       t.path);
        INFO(run.err);
        REQUIRE(run.status == 0);
        return load_png(p);
    };
    const Image a = shot(with_fail, "", "fail.png");
    const Image b = shot(all_ok, "", "ok.png");
    // Results beside a peer the panel's list does not have (another tool's): shown, the list
    // left as it was (no choice describes that peer).
    {
        bench::Results foreign = ok;
        bench::Measurement m = foreign.rows.front();
        m.algorithm = "PyTorch";
        m.peer = true;
        foreign.rows.push_back(m);
        REQUIRE(app::peer_name_of(foreign) == "pytorch");
        CHECK(shot(write(foreign, "foreign.json"), "", "foreign.png").w == 1280);
    }
    const Image c = shot(with_fail, "--hover 0:0", "hover.png");
    CHECK(a.w == 1280);
    CHECK(a.h == 800);
    CHECK(distinct_colours(a) > 50);
    // The FAIL crosses (and the "not all verified" tag) are drawn in red where the verified run
    // has none of them.
    MESSAGE("FAIL-red pixels: " << fail_red(a) << " with the FAIL rows, " << fail_red(b)
                                << " without");
    CHECK(fail_red(a) > fail_red(b) + 30);
    // A hovered mark shows its tooltip: the picture changes.
    CHECK(a.rgb != c.rgb);
    // A chart these results do not have: status 2, one line naming --chart, no file.
    const std::string p = (t.path / "none.png").string();
    const Run bad = run_binary(
        "shot --view timings --results " + with_fail + " --chart nope --out " + p, t.path);
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--chart 'nope'") != std::string::npos);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(p));
}

TEST_CASE("timings panel: shot options of the timings view are checked before any window") {
    TempDir t;
    const auto in_process = [&](std::vector<std::string> args) {
        const Run r = convlab::test::run_in_process(std::move(args));
        CHECK(r.status == 2);
        return r.err;
    };
    const std::string png = (t.path / "x.png").string();
    CHECK(in_process({"shot", "--view", "im2col", "--chart", "ops_fwd", "--out", png})
              .find("--view timings") != std::string::npos);
    CHECK(in_process({"shot", "--view", "timings", "--results", (t.path / "no.json").string(),
                      "--out", png})
              .find("cannot open") != std::string::npos);
    CHECK(in_process({"shot", "--view", "timings", "--results", png, "--bench-quick", "--out", png})
              .find("give one") != std::string::npos);
    CHECK(in_process({"shot", "--view", "timings", "--peer", "onednn-nchw", "--out", png})
              .find("--peer goes with --bench-quick") != std::string::npos);
    CHECK(in_process({"shot", "--view", "timings", "--bench-quick", "--peer", "mkl", "--out", png})
              .find("peer: 'mkl' is not one of none, onednn, onednn-nchw") != std::string::npos);
    CHECK_FALSE(fs::exists(png));
}

TEST_CASE("timings panel: a lesson's run is timed as convlab bench times, its passes together") {
    app::TimingsLessonRun l;
    l.problem = parse_descriptor("mb2ic16ih28oc16kh3ph1");
    l.algos = {"fwd:im2col_gemm", "bwd_data:col2im", "bwd_data:via_forward"};
    l.source = "test";
    const bench::Config c = app::lesson_config(l, 0, std::nullopt, "out");
    // The quick timing (1 warm-up, 10 ms) gave col2im / forward 0.65, 0.6, 0.7 and 0.005 in
    // four runs: `convlab bench`'s own timing, and one window for both passes.
    CHECK(c.timing.warmup == 2);
    CHECK(c.timing.min_seconds == doctest::Approx(0.2));
    CHECK(c.timing.min_reps >= 5);
    CHECK(c.interleave_passes);
    // All cores but one: the window draws on it while the run goes on.
    CHECK(c.threads == app::lesson_threads());
    CHECK(c.threads >= 1);
    CHECK(c.command.find(" --threads " + std::to_string(c.threads) + " ") != std::string::npos);
    CHECK(c.command.find(" --warmup 2 --min-time 0.2 --interleave-passes ") != std::string::npos);
}

TEST_CASE("timings panel: the status of a run names its ratios, its reference and its noise") {
    // Two passes measured by hand: forward 2 ms, col2im 2.5 ms, via_forward 1 ms.
    const auto row = [](Pass pass, const char* algo, double ms, std::size_t layer = 0) {
        bench::Measurement m;
        m.layer = layer;
        m.pass = pass;
        m.algorithm = algo;
        m.ran = true;
        m.check.checked = m.check.pass = true;
        m.total.median_ms = m.total.q1_ms = m.total.q3_ms = ms;
        m.total.runs = 10;
        m.foreign_cpu = 0;
        m.speed = 1;
        return m;
    };
    bench::Results live;
    live.layers = {{"18_measuring_step2", "mb2ic16ih28oc16kh3ph1"}};
    live.rows = {row(Pass::Forward, "im2col_gemm", 2), row(Pass::BackwardData, "col2im", 2.5),
                 row(Pass::BackwardData, "via_forward", 1)};
    std::string s = app::run_summary(live, 3, false);
    CHECK(s.find("3 measurements") != std::string::npos);
    CHECK(s.find("all verified") != std::string::npos);
    CHECK(s.find("col2im 1.25x") != std::string::npos);
    CHECK(s.find("via_forward 0.50x") != std::string::npos);
    CHECK(s.find("NOISY") == std::string::npos);
    // A window timed while others took the CPU: said so, not "all verified" alone.
    live.rows[1].foreign_cpu = 0.3;
    s = app::run_summary(live, 3, false);
    CHECK(s.find("col2im ~1.25x") != std::string::npos);
    CHECK(s.find("NOISY: 1 of 3") != std::string::npos);
    live.rows[1].foreign_cpu = 0;
    live.rows[0].speed = 0.5;  // the machine itself slow while the forward was timed
    s = app::run_summary(live, 3, false);
    CHECK(s.find("NOISY: 1 of 3") != std::string::npos);
    CHECK(s.find("via_forward ~0.50x") != std::string::npos);
    live.rows[0].speed = 1;

    // The reference beside it: its rows of the step's algorithms only, as a layer of its own.
    bench::Results ref;
    ref.layers = {{"lesson18", "mb2ic16ih28oc16kh3ph1"}};
    ref.rows = {row(Pass::Forward, "im2col_gemm", 4), row(Pass::Forward, "implicit_gemm", 3),
                row(Pass::BackwardData, "col2im", 4.4), row(Pass::BackwardData, "via_forward", 2)};
    const std::vector<std::string> algos{"fwd:im2col_gemm", "bwd_data:col2im",
                                         "bwd_data:via_forward"};
    const bench::Results both = app::with_reference(live, ref, algos);
    REQUIRE(both.layers.size() == 2);
    CHECK(both.layers[1].name == app::kReferenceLayer);
    CHECK(both.rows.size() == 6);  // implicit_gemm is not the step's
    CHECK(both.find(1, Pass::Forward, "implicit_gemm") == nullptr);
    REQUIRE(both.find(1, Pass::BackwardData, "col2im") != nullptr);
    CHECK(both.find(1, Pass::BackwardData, "col2im")->total.median_ms == 4.4);
    s = app::run_summary(both, 3, false);
    CHECK(s.find("3 measurements") != std::string::npos);  // the live run's
    CHECK(s.find("(reference: col2im 1.10x, via_forward 0.50x)") != std::string::npos);
    // The charts draw the reference beside the live run: a category each.
    const std::vector<charts::Chart> list = charts::standard_charts(both);
    const auto rel = std::find_if(list.begin(), list.end(), [](const charts::Chart& c) {
        return c.id == "relative_bwd_data";
    });
    REQUIRE(rel != list.end());
    CHECK(rel->x.categories.size() == 2);
    CHECK(rel->x.categories[1] == app::kReferenceLayer);

    // The reference's peer beside the live run's peer, in the passes the step measures only.
    {
        bench::Results lp = live, rp = ref;
        bench::Measurement peer = row(Pass::Forward, "oneDNN", 1);
        peer.peer = true;
        lp.rows.push_back(peer);
        rp.rows.push_back(peer);
        peer.pass = Pass::BackwardWeight;
        rp.rows.push_back(peer);
        const bench::Results b = app::with_reference(lp, rp, algos);
        CHECK(b.find(1, Pass::Forward, "oneDNN") != nullptr);
        CHECK(b.find(1, Pass::BackwardWeight, "oneDNN") == nullptr);
        // Without a peer live, none of the reference's.
        CHECK(app::with_reference(live, rp, algos).find(1, Pass::Forward, "oneDNN") == nullptr);
    }

    // The file shipped beside a lesson.
    TempDir t;
    const std::string toml = (t.path / "18_x.toml").string();
    CHECK(app::lesson_reference_file(toml).empty());
    std::ofstream(t.path / "18_x.results.json") << "{}";
    CHECK(app::lesson_reference_file(toml) == (t.path / "18_x.results.json").string());
}
