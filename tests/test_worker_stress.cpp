// The app's worker threads under churn, as a user clicking fast makes them: views built on a
// worker while the next request arrives, lessons opened, stepped and replaced mid-evaluation, a
// timings run started, polled and cancelled while the other workers run. Window-free parts only
// (model, lesson player, timings state), so that a ThreadSanitizer build of those libraries can
// run it as it is.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "charts/chart.hpp"
#include "convlab/bench.hpp"
#include "model/lesson_player.hpp"
#include "model/model.hpp"
#include "model/timings_state.hpp"

using namespace convlab;
namespace fs = std::filesystem;

namespace {

const std::string kLessons = std::string(CONVLAB_SOURCE_DIR) + "/lessons";

std::string lesson_file(const std::string& prefix) {
    for (const auto& f : lesson::lesson_files(kLessons))
        if (fs::path(f).filename().string().rfind(prefix, 0) == 0) return f;
    FAIL("no lesson " << prefix);
    return "";
}

// The app's view job (gui/app.hpp): a build on its own thread, its progress read by the caller.
struct ViewJob {
    std::thread thread;
    std::atomic<float> progress{0};
    std::atomic<bool> done{false};
    app::ViewRequest request;
    std::shared_ptr<app::ViewModel> result;
    std::string error;
    void start(app::ViewRequest r) {
        request = std::move(r);
        thread = std::thread([this] {
            try {
                result = std::make_shared<app::ViewModel>(app::build_view(request, &progress));
            } catch (const std::exception& e) {
                error = e.what();
            }
            done = true;
        });
    }
    ~ViewJob() {
        if (thread.joinable()) thread.join();
    }
};

bench::Config small_run(int layers) {
    bench::Config cfg;
    for (int i = 0; i < layers; ++i) {
        bench::Layer l;
        l.descriptor = "mb1ic4ih8oc4kh3ph1n\"t:l" + std::to_string(i) + "\"";
        l.problem = parse_descriptor(l.descriptor);
        cfg.layers.push_back(l);
    }
    cfg.passes = {Pass::Forward, Pass::BackwardData};
    cfg.algos = {"fwd:im2col_gemm", "bwd_data:col2im", "bwd_data:via_forward"};
    cfg.threads = 1;
    cfg.timing.warmup = 0;
    cfg.timing.reps = 0;
    cfg.timing.min_reps = 1;
    cfg.timing.min_seconds = 0.005;
    cfg.measure_peak = false;
    return cfg;
}

}  // namespace

TEST_CASE("worker stress: views, lessons and a timings run churned together, then cancelled") {
    // A timings run in the background for the whole test.
    app::TimingsRun run;
    REQUIRE(run.start(small_run(8)));

    // Views over several problems, a new request before the last one ended (the app queues the
    // latest; here each job is kept to its end so that every build is checked).
    const char* problems[] = {"mb1ic2ih6oc2kh3", "mb2ic4ih8oc4kh3sh2ph1", "mb1ic2iw9oc2kw3pw1",
                              "g2mb1ic4ih5oc4kh2"};
    const std::vector<std::string>& views = app::view_names();
    std::size_t built = 0, refused = 0;
    std::vector<std::unique_ptr<ViewJob>> jobs;
    for (std::size_t i = 0; i < 12; ++i) {
        app::ViewRequest r;
        r.view = views[i % views.size()];
        r.problem = parse_descriptor(problems[i % std::size(problems)]);
        auto j = std::make_unique<ViewJob>();
        j->start(r);
        jobs.push_back(std::move(j));
        // The caller's frame loop: progress and the run's snapshot read while workers write.
        for (const auto& job : jobs) (void)job->progress.load();
        const app::TimingsSnapshot s = run.snapshot();
        if (s.results) (void)charts::standard_charts(*s.results);
    }
    for (auto& j : jobs) {
        j->thread.join();
        CHECK(j->done);
        if (j->result) {
            ++built;
            CHECK((!j->result->panels.empty() || app::is_placeholder_view(j->request.view)));
        } else {
            ++refused;
            CHECK(!j->error.empty());
        }
    }
    jobs.clear();
    CHECK(built + refused == 12);
    CHECK(built >= 8);

    // Lessons: open, step fast, open another mid-evaluation, close, reopen.
    app::LessonPlayer p;
    p.scan(kLessons);
    REQUIRE(p.open(lesson_file("01")));
    for (int k = 0; k < 6; ++k) {
        p.next();
        p.poll(false);
        (void)run.snapshot();
    }
    REQUIRE(p.open(lesson_file("07")));  // while step evaluations of lesson 01 may still run
    p.forward();
    p.backward();
    REQUIRE(p.open(lesson_file("17")));
    p.go(2);
    p.close();
    REQUIRE(p.open(lesson_file("02"), 1));
    CHECK(p.poll(true));
    CHECK(p.step() == 1);
    REQUIRE(p.result() != nullptr);
    CHECK(p.error().empty());
    CHECK(p.result()->passed() == p.result()->checks.size());

    // The run's snapshot read while it still measures and exported on the export job's thread
    // (the Timings panel's Export button: its files written all or none), then the run
    // cancelled while the export may still write.
    const app::TimingsSnapshot mid = run.snapshot();
    const fs::path out =
        fs::temp_directory_path() / ("convlab_stress_" + std::to_string(::getpid()));
    app::TimingsExportJob exporter;
    const auto measured = mid.results ? mid.results : std::make_shared<const bench::Results>();
    REQUIRE(exporter.start(measured, charts::standard_charts(*measured), out.string(),
                           app::TimingsExport{false, false, false, true}));
    run.cancel();
    run.wait();
    const app::TimingsSnapshot end = run.snapshot();
    CHECK(end.finished);
    CHECK(end.done >= mid.done);
    REQUIRE(end.results);
    CHECK(end.results->rows.size() == end.done);
    for (const bench::Measurement& m : end.results->rows) CHECK(m.valid());
    std::vector<std::string> paths;
    std::string error;
    while (!exporter.take(paths, error)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(error.empty());
    CHECK(paths.size() == 2);  // results.csv and results.json
    for (const std::string& f : paths) CHECK(fs::is_regular_file(f));
    fs::remove_all(out);
    // A second run after the cancel starts and ends normally.
    REQUIRE(run.start(small_run(1)));
    run.wait();
    CHECK(run.snapshot().finished);
    CHECK_FALSE(run.snapshot().cancelled);
    CHECK(run.snapshot().done == 3);
}
