// Values no run produces, read from files others may have edited: chart axes that stay bounded
// for zero, negative, NaN, infinite and huge values; results.json fields refused outside their
// rule with the row and the field named; lesson texts over their size limits refused at their
// line and column, by `lesson check` and by `shot --lesson` alike.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "charts/chart.hpp"
#include "convlab/bench.hpp"
#include "lesson/lesson.hpp"
#include "test_files.hpp"

using namespace convlab;
using convlab::bench::Measurement;
using convlab::bench::Results;
using convlab::test::run_binary;
using convlab::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Measurement timed(std::size_t layer, Pass pass, const std::string& algo, double ms) {
    Measurement m;
    m.layer = layer;
    m.pass = pass;
    m.algorithm = algo;
    m.ran = true;
    m.check.checked = true;
    m.check.pass = true;
    m.check.reference = "direct";
    m.total.median_ms = m.total.min_ms = m.total.max_ms = m.total.q1_ms = m.total.q3_ms = ms;
    m.total.runs = 3;
    m.batch = 1;
    m.threads = 2;
    m.flops = 2e6;
    m.bytes = 1e4;
    return m;
}

// Two layers, forward and backward data, the forward times given.
Results two_layers(double fwd0, double fwd1, double bwd0 = 1, double bwd1 = 2) {
    Results r;
    r.layers = {{"t:a", "mb1ic2ih5oc2kh3"}, {"t:b", "mb1ic2ih6oc2kh3"}};
    r.batch = 1;
    r.rtol = 1e-4;
    r.machine.threads = 2;
    r.machine.peak_gflops = 10;
    r.rows = {
        timed(0, Pass::Forward, "im2col_gemm", fwd0), timed(1, Pass::Forward, "im2col_gemm", fwd1),
        timed(0, Pass::BackwardData, "col2im", bwd0), timed(1, Pass::BackwardData, "col2im", bwd1)};
    return r;
}

bool axis_sane(const charts::Axis& a) {
    if (!(std::isfinite(a.min) && std::isfinite(a.max) && a.max > a.min)) return false;
    if (a.ticks.size() > static_cast<std::size_t>(charts::kMaxTicks) + 1) return false;
    for (const charts::Tick& t : a.ticks)
        if (!std::isfinite(t.value) || t.label.empty() || t.label.size() > 24) return false;
    return true;
}

std::string json_of(const Results& r) {
    std::ostringstream o;
    bench::write_json(r, o);
    return o.str();
}

// The text with the first `"key": value` after `from` given another value.
std::string with_field(std::string text, const std::string& key, const std::string& value,
                       std::size_t from = 0) {
    const std::string k = "\"" + key + "\": ";
    const auto at = text.find(k, from);
    REQUIRE(at != std::string::npos);
    const auto b = at + k.size();
    const auto e = text.find_first_of(",}\n", b);
    return text.replace(b, e - b, value);
}

// read_json's error for the text ("" when it reads).
std::string read_error(const std::string& text) {
    std::istringstream in(text);
    try {
        bench::read_json(in);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

std::size_t lines_of(const std::string& s) {
    std::size_t n = 0;
    for (char c : s) n += c == '\n';
    return n + (!s.empty() && s.back() != '\n');
}

}  // namespace

TEST_CASE("chart axes: bounded ticks for zero, negative, NaN, infinite and huge values") {
    const double values[] = {0, -1, -1e300, 1e-320, 1e-300, 1, 1e300, 1.7e308, kInf, -kInf, kNaN};
    for (double lo : values)
        for (double hi : values) {
            CAPTURE(lo);
            CAPTURE(hi);
            double a = lo, b = hi;
            const auto ticks = charts::log_ticks(a, b);
            CHECK(a > 0);
            CHECK(b > a);
            CHECK(std::isfinite(b));
            CHECK(ticks.size() <= static_cast<std::size_t>(charts::kMaxTicks) + 1);
            for (const auto& t : ticks) CHECK(std::isfinite(t.value));
            double c = lo, d = hi;
            const auto lin = charts::nice_ticks(c, d);
            CHECK(std::isfinite(c));
            CHECK(std::isfinite(d));
            CHECK(d > c);
            CHECK(!lin.empty());
            CHECK(lin.size() <= static_cast<std::size_t>(charts::kMaxTicks) + 1);
            for (const auto& t : lin) CHECK(t.label.size() <= 24);
        }
    // 600 decades still give a readable handful of powers of ten.
    double lo = 1e-300, hi = 1e300;
    const auto wide = charts::log_ticks(lo, hi);
    CHECK(wide.size() >= 10);
    CHECK(wide.size() <= static_cast<std::size_t>(charts::kMaxTicks) + 1);
    // An ordinary range keeps its 1-2-5 ticks.
    double l2 = 0.3, h2 = 7;
    const auto normal = charts::log_ticks(l2, h2);
    REQUIRE(normal.size() == 6);
    CHECK(normal.front().label == "0.2");
    CHECK(normal.back().label == "10");
    // A count asked for out of range is capped too.
    double l3 = 0, h3 = 1;
    CHECK(charts::nice_ticks(l3, h3, 1 << 30).size() <= charts::kMaxTicks + 1u);
}

TEST_CASE("charts: a forward median of 0, NaN or infinity is not plotted and ends") {
    for (double bad : {0.0, kNaN, kInf, -1.0}) {
        CAPTURE(bad);
        const Results r = two_layers(bad, 1);
        const charts::Chart c = charts::relative_time_chart(r);
        CHECK(axis_sane(c.y));
        // Layer 0's ratio has no finite value: a FAIL mark, not a bar; layer 1 is drawn.
        REQUIRE(c.series.size() == 1);
        REQUIRE(c.series[0].marks.size() == 2);
        if (!(bad > 0) || !std::isfinite(bad)) {
            CHECK(c.series[0].marks[1].kind == charts::MarkKind::Bar);
            CHECK(c.series[0].marks[1].y1 == doctest::Approx(2));
        }
        for (const charts::Chart& all : charts::standard_charts(r)) {
            CAPTURE(all.id);
            CHECK(axis_sane(all.y));
        }
    }
    const charts::Chart zero = charts::relative_time_chart(two_layers(0, 1));
    CHECK(zero.series[0].marks[0].kind == charts::MarkKind::Failed);
    CHECK(zero.series[0].marks[0].hover.find("median time is 0") != std::string::npos);
    // Backward times of 0 and huge ones: the axis still spans them with bounded ticks.
    for (const charts::Chart& c : charts::standard_charts(two_layers(1, 1, 0, 1e300)))
        CHECK(axis_sane(c.y));
    // A point exactly on a NaN is put at the axis start, never NaN.
    charts::Axis a;
    a.min = 0;
    a.max = 1;
    CHECK(a.frac(kNaN) == 0);
    a.log = true;
    a.min = 0.1;
    CHECK(a.frac(kNaN) == 0);
}

TEST_CASE("results.json: every numeric field is checked, the row and field named") {
    const Results r = two_layers(1, 2);
    const std::string good = json_of(r);
    REQUIRE(read_error(good).empty());
    const auto rows = good.find("\"rows\"");
    REQUIRE(rows != std::string::npos);
    struct Case {
        std::string key, value, expect;
        bool in_row;
    };
    const Case cases[] = {
        {"threads", "9223372036854775808",
         "JSON rows[0]: field 'threads' is 9.2233720368547758e+18", true},
        {"threads", "-1", "field 'threads' is -1: expected an integer from 0 to", true},
        {"threads", "2.5", "field 'threads' is 2.5: expected an integer", true},
        {"batch", "null", "JSON rows[0]: field 'batch' is empty (or null)", true},
        {"batch", "1e300", "field 'batch' is 1.0000000000000001e+300", true},
        {"median_ms", "-1", "JSON rows[0]: field 'median_ms' is -1: expected a finite number >= 0",
         true},
        {"median_ms", "1e999", "field 'median_ms': number overflow parsing '1e999'", true},
        {"q3_ms", "-0.5", "field 'q3_ms' is -0.5", true},
        {"runs", "3000000000", "field 'runs' is 3000000000: expected an integer from 0 to", true},
        {"layer_index", "100001", "field 'layer_index' is 100001", true},
        {"foreign_cpu", "1.5",
         "field 'foreign_cpu' is 1.5: expected a finite number from 0 to 1 "
         "(or -1: unknown)",
         true},
        {"speed", "-2", "field 'speed' is -2", true},
        {"retimed", "-1", "field 'retimed' is -1", true},
        {"flops", "-2e6", "field 'flops' is -2000000", true},
        {"bytes", "\"nan\"", "field 'bytes' is nan: expected a finite number >= 0", true},
        {"max_rel_err", "-1", "field 'max_rel_err' is -1", true},
        {"share", "-3", "field 'share' is -3", true},
        {"threads", "9223372036854775808", "JSON machine: field 'threads' is", false},
        {"batch", "null", "JSON machine: field 'batch' is empty (or null)", false},
        {"peak_gflops", "-1", "JSON machine: field 'peak_gflops' is -1", false},
        {"reps", "-5", "JSON machine: field 'reps' is -5", false},
        {"rtol", "-1e-4", "JSON machine: field 'rtol' is -0.0001", false},
        {"min_seconds", "-1", "JSON machine: field 'min_seconds' is -1", false},
        {"load_before", "-3", "JSON machine: field 'load_before' is -3", false},
        {"logical_cpus", "1e9", "JSON machine: field 'logical_cpus' is 1000000000", false},
    };
    for (const Case& c : cases) {
        CAPTURE(c.key);
        CAPTURE(c.value);
        const std::string bad = with_field(good, c.key, c.value, c.in_row ? rows : 0);
        const std::string err = read_error(bad);
        CHECK(err.find(c.expect) != std::string::npos);
        CHECK(err.find('\n') == std::string::npos);
    }
    // "Unknown" (-1) stays legal where the writer uses it, and 0 times read back.
    CHECK(read_error(with_field(good, "speed", "-1", rows)).empty());
    CHECK(read_error(with_field(good, "foreign_cpu", "-1", rows)).empty());
    CHECK(read_error(with_field(good, "median_ms", "0", rows)).empty());
    // The sweep's numbers follow the same rules.
    Results sw = r;
    sw.sweep = {{1, 2, 10, 5, 0.1}};
    const std::string swept = json_of(sw);
    REQUIRE(read_error(swept).empty());
    std::string bad_sweep = swept;
    const std::string from = "threads=2", to = "threads=-4";
    REQUIRE(bad_sweep.find(from) != std::string::npos);
    for (std::size_t at = bad_sweep.find(from); at != std::string::npos;
         at = bad_sweep.find(from, at + to.size()))
        bad_sweep.replace(at, from.size(), to);
    CHECK(read_error(bad_sweep).find("field 'sweep': 'threads=-4' is out of range") !=
          std::string::npos);
}

TEST_CASE("bench --replot: a bad value is one line, a zero forward time draws and ends") {
    TempDir dir;
    const std::string good = json_of(two_layers(1, 2));
    const auto rows = good.find("\"rows\"");
    const std::string neg = dir.write("neg.json", with_field(good, "median_ms", "-1", rows));
    // The binary under a time limit: a hang shows as timeout's status 124, not a stuck suite.
    const std::string bin = CONVLAB_BINARY;
    auto run = [&](const std::string& args) {
        const std::string cmd = "cd " + dir.path.string() + " && timeout 60 " + bin + " " + args +
                                " >" + (dir / "o.txt") + " 2>" + (dir / "e.txt");
        const int s = std::system(cmd.c_str());
        convlab::test::Run r;
        r.status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
        std::ifstream fo(dir / "o.txt"), fe(dir / "e.txt");
        r.out.assign(std::istreambuf_iterator<char>(fo), {});
        r.err.assign(std::istreambuf_iterator<char>(fe), {});
        return r;
    };
    const auto bad = run("bench --replot " + neg + " --out " + (dir / "neg_out"));
    CHECK(bad.status == 2);
    CHECK(lines_of(bad.err) == 1);
    CHECK(bad.err.rfind("convlab: ", 0) == 0);
    CHECK(bad.err.find("rows[0]") != std::string::npos);
    CHECK(bad.err.find("'median_ms'") != std::string::npos);
    CHECK(!fs::exists(dir / "neg_out/relative_bwd_data.svg"));

    // Not JSON, or nested beyond any results file: the file, its line and column and the rule.
    const std::string deep = dir.write("deep.json", std::string(200000, '['));
    const std::string cut = dir.write("cut.json", good.substr(0, good.size() / 2));
    for (const auto& [file, rule] :
         {std::pair{deep, std::string("deep.json': JSON at line 1, column 33: arrays and objects "
                                      "nested deeper than 32 levels")},
          {cut, "cut.json': JSON at line "}}) {
        const auto bad_json = run("bench --replot " + file + " --out " + (dir / "json_out"));
        CAPTURE(bad_json.err);
        CHECK(bad_json.status == 2);
        CHECK(lines_of(bad_json.err) == 1);
        CHECK(bad_json.err.rfind("convlab: ", 0) == 0);
        CHECK(bad_json.err.find(rule) != std::string::npos);
    }

    // A forward median of 0 (a file written by hand): the charts are drawn, quickly (before the
    // axis was bounded this looped forever, eating memory).
    const std::string zero = dir.write("zero.json", json_of(two_layers(0, 2)));
    const auto z = run("bench --replot " + zero + " --out " + (dir / "zero_out"));
    CHECK(z.status != 124);  // timeout's status
    CHECK(z.status <= 1);
    CHECK(fs::exists(dir / "zero_out/relative_bwd_data.svg"));
}

TEST_CASE("lesson limits: a 60 KB narration is refused at its line, by check and by shot") {
    const fs::path src = fs::path(CONVLAB_SOURCE_DIR) / "lessons" / "01_backprop_1d.toml";
    std::ifstream in(src);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    // Step 1's narration, repeated to 60 KB.
    const std::string open = "narration = \"\"\"\n";
    const auto b = text.find(open);
    REQUIRE(b != std::string::npos);
    const auto body = b + open.size();
    const auto e = text.find("\"\"\"", body);
    const std::string narration = text.substr(body, e - body);
    std::string big;
    while (big.size() < 60 * 1024) big += narration + "\n";
    text.replace(body, e - body, big);
    std::size_t line = 1;
    for (std::size_t i = 0; i < b; ++i) line += text[i] == '\n';

    try {
        lesson::parse_lesson(text, "big.toml");
        FAIL("a 60 KB narration was accepted");
    } catch (const lesson::LessonError& err) {
        CHECK(err.pos().line == static_cast<int>(line));
        CHECK(err.pos().column == 13);
        CHECK(err.message().find("'narration' is " + std::to_string(big.size()) +
                                 " bytes long: at most 8192") != std::string::npos);
    }
    // At the limit it loads.
    std::string fits = text;
    fits.replace(body, big.size(), std::string(8191, 'x') + "\n");
    CHECK_NOTHROW(lesson::parse_lesson(fits, "fits.toml"));

    TempDir dir;
    const std::string file = dir.write("big.toml", text);
    const auto check = run_binary("lesson check " + file, dir.path);
    CHECK(check.status == 2);
    // The diagnostic on standard error (as a compiler's), then the command's one summary line.
    CHECK(check.out.empty());
    CHECK(check.err.starts_with(
        file + ":" + std::to_string(line) + ":13: 'narration' is " + std::to_string(big.size()) +
        " bytes long: at most 8192 (see \"Limits\" in lessons/README.md)\n"));
    CHECK(lines_of(check.err) == 2);

    const auto shot = run_binary("shot --lesson " + file + " --step 1 --out x.png", dir.path);
    CHECK(shot.status == 2);
    CHECK(lines_of(shot.err) == 1);
    CHECK(shot.err.rfind("convlab: ", 0) == 0);
    CHECK(shot.err.find("'narration' is") != std::string::npos);
    CHECK(!fs::exists(dir / "x.png"));
}

TEST_CASE("lesson limits: titles, descriptors, names, highlights and lists") {
    const std::string head = "title = \"t\"\naudience = \"a\"\nproblem = \"mb1ic1iw5oc1kw3\"\n";
    const std::string step = "[[step]]\nview = \"im2col\"\nnarration = \"n\"\n";
    auto error_of = [](const std::string& text) {
        try {
            lesson::parse_lesson(text, "x.toml");
        } catch (const lesson::LessonError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    REQUIRE(error_of(head + step).empty());
    CHECK(error_of("title = \"" + std::string(201, 't') + "\"\naudience = \"a\"\n" + step)
              .find("x.toml:1:9: 'title' is 201 bytes long: at most 200") != std::string::npos);
    CHECK(error_of(head + "summary = \"" + std::string(5000, 's') + "\"\n" + step)
              .find("'summary' is 5000 bytes long: at most 4096") != std::string::npos);
    CHECK(error_of(head + step + "title = \"" + std::string(300, 't') + "\"\n")
              .find("x.toml:7:9: 'title' is 300 bytes long") != std::string::npos);
    CHECK(error_of("title = \"t\"\naudience = \"a\"\nproblem = \"mb1" + std::string(300, '0') +
                   "ic1iw5oc1kw3\"\n" + step)
              .find("'problem' is 315 bytes long: at most 256") != std::string::npos);
    CHECK(error_of(head + step + "map = \"" + std::string(65, 'm') + "\"\n")
              .find("'map' is 65 bytes long: at most 64") != std::string::npos);
    CHECK(error_of(head + step + "highlights = [\"src" + std::string(300, ' ') + "\"]\n")
              .find("a highlight is 303 bytes long: at most 256") != std::string::npos);
    std::string many = "highlights = [";
    for (int i = 0; i < 65; ++i) many += "\"src\", ";
    CHECK(error_of(head + step + many + "]\n")
              .find("x.toml:7:14: 'highlights' has 65 entries: at most 64") != std::string::npos);
    std::string steps = head;
    for (int i = 0; i < 201; ++i) steps += step;
    CHECK(error_of(steps).find("the lesson's steps has 201 entries: at most 200") !=
          std::string::npos);
    std::string wide = head + step + "[[step.check]]\ntensor = \"src\"\nequals = [";
    for (int i = 0; i < 65537; ++i) wide += "0,";
    CHECK(error_of(wide + "]\n").find("'equals': more than 65536 values") != std::string::npos);
}
