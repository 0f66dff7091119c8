// Charts: the model built from hand-made results (ratios, win count, stacking, FAIL marks never
// plotted, hover lookup), and headless export: SVG parses as XML, PNG decodes, PDF has pages.
// Also `convlab bench` end to end on a tiny shape file (status 0 verified, 1 with failures, 2
// on bad input).
#include <doctest/doctest.h>

#include <cairo.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "charts/chart.hpp"
#include "charts/chart_export.hpp"
#include "cli/cli.hpp"
#include "cli/cmd_bench.hpp"
#include "convlab/bench.hpp"
#include "test_files.hpp"

using namespace convlab;
using namespace convlab::charts;
using convlab::bench::Measurement;
using convlab::bench::Results;
namespace fs = std::filesystem;
using convlab::test::TempDir;

namespace {

Measurement row(std::size_t layer, Pass pass, const std::string& algo, double ms, bool pass_ok,
                std::vector<std::pair<std::string, double>> ops = {}) {
    Measurement m;
    m.layer = layer;
    m.pass = pass;
    m.algorithm = algo;
    m.ran = true;
    m.check.checked = true;
    m.check.pass = pass_ok;
    m.check.reference = "direct";
    m.total.median_ms = m.total.min_ms = m.total.max_ms = m.total.q1_ms = m.total.q3_ms = ms;
    m.total.runs = 3;
    m.flops = 2e6;
    for (auto& [name, t] : ops) {
        bench::Stats s;
        s.median_ms = s.min_ms = s.max_ms = s.q1_ms = s.q3_ms = t;
        s.runs = 3;
        m.ops.push_back({name, s});
    }
    return m;
}

// Three layers. fwd im2col_gemm: 1, 2, 1 ms. bwd_data col2im: 2, 1, 3 ms; via_forward: 1, 4, 2
// ms, but layer 1's via_forward failed its check. So via_forward beats col2im in layers 0 and 2
// of the 2 where both were verified.
Results sample() {
    Results r;
    r.layers = {{"t:a", "mb1ic2ih5oc2kh3"}, {"t:b", "mb1ic2ih6oc2kh3"}, {"t:c", "mb1ic2ih7oc2kh3"}};
    r.rtol = 1e-4;
    r.batch = 1;
    r.command = "convlab bench --shapes x.txt --out y";
    r.machine.cpu = "Test CPU";
    r.machine.threads = 2;
    r.machine.peak_gflops = 50;
    const double fwd[] = {1, 2, 1}, col[] = {2, 1, 3}, via[] = {1, 4, 2};
    for (std::size_t i = 0; i < 3; ++i) {
        r.rows.push_back(row(i, Pass::Forward, "im2col_gemm", fwd[i], true,
                             {{"im2col", 0.25 * fwd[i]}, {"gemm", 0.5 * fwd[i]}}));
        r.rows.push_back(row(i, Pass::BackwardData, "col2im", col[i], true,
                             {{"gemm", 0.5 * col[i]}, {"col2im", 0.5 * col[i]}}));
        r.rows.push_back(row(i, Pass::BackwardData, "via_forward", via[i], i != 1,
                             {{"zero-insert", 0.1 * via[i]}, {"gemm", 0.8 * via[i]}}));
    }
    return r;
}

// A minimal XML well-formedness check: declarations, comments, elements with quoted attributes,
// balanced start and end tags, one root element. Returns "" or what is wrong.
std::string xml_error(const std::string& s) {
    std::vector<std::string> stack;
    std::size_t i = 0;
    int roots = 0;
    while (i < s.size()) {
        if (s[i] != '<') {
            if (stack.empty() && !std::isspace(static_cast<unsigned char>(s[i])))
                return "text outside the root at " + std::to_string(i);
            ++i;
            continue;
        }
        if (s.compare(i, 4, "<!--") == 0) {
            const auto e = s.find("-->", i);
            if (e == std::string::npos) return "unterminated comment";
            i = e + 3;
            continue;
        }
        if (s.compare(i, 2, "<?") == 0 || s.compare(i, 2, "<!") == 0) {
            const auto e = s.find('>', i);
            if (e == std::string::npos) return "unterminated declaration";
            i = e + 1;
            continue;
        }
        const bool closing = s.compare(i, 2, "</") == 0;
        std::size_t j = i + (closing ? 2 : 1);
        const std::size_t name_start = j;
        while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j])) && s[j] != '>' &&
               s[j] != '/')
            ++j;
        const std::string name = s.substr(name_start, j - name_start);
        if (name.empty()) return "empty tag name at " + std::to_string(i);
        // Attributes: name="value" or name='value'.
        bool self_closing = false;
        for (;;) {
            while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
            if (j >= s.size()) return "unterminated tag " + name;
            if (s[j] == '>') {
                ++j;
                break;
            }
            if (s.compare(j, 2, "/>") == 0) {
                self_closing = true;
                j += 2;
                break;
            }
            if (closing) return "attribute in end tag " + name;
            const std::size_t eq = s.find('=', j);
            if (eq == std::string::npos || eq + 1 >= s.size()) return "attribute without value";
            const char q = s[eq + 1];
            if (q != '"' && q != '\'') return "unquoted attribute in " + name;
            const std::size_t end = s.find(q, eq + 2);
            if (end == std::string::npos) return "unterminated attribute in " + name;
            if (s.substr(eq + 2, end - eq - 2).find('<') != std::string::npos)
                return "'<' in an attribute of " + name;
            j = end + 1;
        }
        if (closing) {
            if (stack.empty() || stack.back() != name) return "mismatched end tag </" + name + ">";
            stack.pop_back();
        } else if (!self_closing) {
            if (stack.empty()) ++roots;
            stack.push_back(name);
        } else if (stack.empty()) {
            ++roots;
        }
        i = j;
    }
    if (!stack.empty()) return "unclosed element <" + stack.back() + ">";
    if (roots != 1) return std::to_string(roots) + " root elements";
    return "";
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("charts: the tiny XML checker rejects broken documents") {
    CHECK(xml_error("<?xml version=\"1.0\"?><svg a=\"1\"><g><path d='M 0'/></g></svg>") == "");
    CHECK(xml_error("<svg><g></svg>") != "");
    CHECK(xml_error("<svg a=1></svg>") != "");
    CHECK(xml_error("<svg></svg><svg></svg>") != "");
    CHECK(xml_error("<svg>") != "");
}

TEST_CASE("charts: nice ticks at 1-2-5 steps cover the range") {
    double lo = 0, hi = 7.3;  // raw step 7.3/6 = 1.22 -> step 2: 0, 2, 4, 6, 8
    const auto t = nice_ticks(lo, hi);
    REQUIRE(t.size() == 5);
    CHECK(t.front().value == 0);
    CHECK(t.back().value == doctest::Approx(8));
    CHECK(t[1].label == "2");
    CHECK(hi == doctest::Approx(8));
    double a = 0, b = 0.37;  // raw 0.0617 -> step 0.1: 0 .. 0.4
    const auto u = nice_ticks(a, b);
    CHECK(u.size() == 5);
    CHECK(u[3].label == "0.3");
}

TEST_CASE("charts: relative time per layer, the win count, and FAIL never plotted") {
    const Results r = sample();
    const Chart c = relative_time_chart(r);
    CHECK(c.x.categories == std::vector<std::string>{"a", "b", "c"});
    REQUIRE(c.series.size() == 2);  // col2im, via_forward (no peer)
    const Series& col = c.series[0];
    const Series& via = c.series[1];
    CHECK(col.name == "col2im");
    REQUIRE(col.marks.size() == 3);
    // col2im / forward: 2/1, 1/2, 3/1.
    CHECK(col.marks[0].y1 == doctest::Approx(2.0));
    CHECK(col.marks[1].y1 == doctest::Approx(0.5));
    CHECK(col.marks[2].y1 == doctest::Approx(3.0));
    REQUIRE(via.marks.size() == 3);
    CHECK(via.marks[0].kind == MarkKind::Bar);
    CHECK(via.marks[1].kind == MarkKind::Failed);  // its check failed: no bar, no value
    CHECK(via.marks[1].y1 == c.y.min);
    CHECK(via.marks[1].hover.find("not plotted") != std::string::npos);
    CHECK(via.marks[2].y1 == doctest::Approx(2.0));
    // The bars of one layer sit side by side inside the layer's category [i, i+1).
    CHECK(col.marks[1].x0 >= 1.0);
    CHECK(col.marks[1].x1 <= via.marks[1].x0);
    CHECK(via.marks[1].x1 <= 2.0);
    REQUIRE(c.annotations.size() >= 1);
    CHECK(c.annotations[0].find("in 2 of 2 layers") != std::string::npos);
    CHECK(c.failed == 1);
    CHECK(c.plotted == 5);
    CHECK_FALSE(c.verified);
    REQUIRE(c.footer.size() == 4);
    CHECK(c.footer[0].find("NOT ALL VERIFIED") == 0);
    CHECK(c.footer[1].find("Test CPU") != std::string::npos);
    CHECK(c.footer[3].find(r.command) != std::string::npos);
    const WinCount w = count_wins(r, Pass::BackwardData, "via_forward", "col2im");
    CHECK(w.wins == 2);
    CHECK(w.compared == 2);
    CHECK(w.winners == std::vector<std::string>{"a", "c"});
    CHECK(c.y.max >= 3.0);
    // Hover: the middle of layer c's col2im bar finds exactly that mark.
    const Mark& m = col.marks[2];
    const auto hit = c.hit(0.5 * (m.x0 + m.x1), 1.5, 0.01, 0.01);
    REQUIRE(hit);
    CHECK(hit->first == 0);
    CHECK(hit->second == 2);
    CHECK(c.series[hit->first].marks[hit->second].hover.find("3.00x forward") != std::string::npos);
    CHECK_FALSE(c.hit(0.5 * (m.x0 + m.x1), 3.5, 0.01, 0.01));
}

TEST_CASE("charts: operation shares stack to 100 percent, with the untimed rest as 'other'") {
    const Results r = sample();
    const Chart c = operation_share_chart(r, Pass::Forward);
    // im2col 25% + gemm 50% + other 25% per layer.
    double sum[3] = {0, 0, 0};
    bool saw_other = false;
    for (const Series& s : c.series) {
        for (const Mark& m : s.marks) {
            REQUIRE(m.kind == MarkKind::Bar);
            const auto li = static_cast<std::size_t>(m.x0);
            sum[li] += m.y1 - m.y0;
            if (s.name == "other") {
                saw_other = true;
                CHECK(m.y1 - m.y0 == doctest::Approx(25.0));
            }
            if (s.name == "gemm") CHECK(m.y1 - m.y0 == doctest::Approx(50.0));
        }
    }
    CHECK(saw_other);
    for (double x : sum) CHECK(x == doctest::Approx(100.0));
    // bwd_data: the failed via_forward of layer 1 is a FAIL mark, not a stack.
    const Chart d = operation_share_chart(r, Pass::BackwardData);
    CHECK(d.failed == 1);
}

TEST_CASE("charts: GFLOP/s bars with the measured peak as a reference line") {
    const Results r = sample();
    const Chart c = gflops_chart(r, Pass::Forward);
    REQUIRE(c.series.size() == 1);
    // 2e6 flop in 1 ms = 2 GFLOP/s; in 2 ms = 1 GFLOP/s.
    CHECK(c.series[0].marks[0].y1 == doctest::Approx(2.0));
    CHECK(c.series[0].marks[1].y1 == doctest::Approx(1.0));
    REQUIRE(c.ref_lines.size() == 1);
    CHECK(c.ref_lines[0].y == 50);
    CHECK(c.y.max >= 50);
    CHECK(standard_charts(r).size() == 1 + 2 + 2);
}

TEST_CASE("charts: runs timed as batches of calls (a coarse clock) are said in the footer") {
    Results r = sample();
    const auto clock_line = [](const Chart& c) {
        for (const std::string& l : c.footer)
            if (l.rfind("Clock: ", 0) == 0) return l;
        return std::string();
    };
    CHECK(clock_line(gflops_chart(r, Pass::Forward)).empty());  // one call a run: nothing said
    r.machine.clock_tick = 1e-4;
    r.rows[0].total.calls = 256;
    r.rows[3].total.calls = 2048;
    const Chart g = gflops_chart(r, Pass::Forward);
    CHECK(clock_line(g) ==
          "Clock: the timing clock ticks every 100 us, so each timed run was a batch of 256 to "
          "2048 calls in a row, its time divided by the count (calls_per_run in the results).");
    // The footer says it on every chart of the run; a bar's hover gives its own batch.
    CHECK_FALSE(clock_line(relative_time_chart(r)).empty());
    CHECK(g.series[0].marks[0].hover.find("3 runs of 256 calls each") != std::string::npos);
}

TEST_CASE("charts: values measured under load are marked noisy, counted and footnoted") {
    Results r = sample();
    CHECK(gflops_chart(r, Pass::Forward).noisy == 0);
    CHECK(gflops_chart(r, Pass::Forward).verification.find("0 of 3 plotted values noisy") !=
          std::string::npos);
    r.rows[0].foreign_cpu = 0.2;   // layer a, fwd im2col_gemm: others used 20% of the CPUs
    r.rows[3].foreign_cpu = 0.04;  // layer b, fwd: 4%, not noisy
    const Chart g = gflops_chart(r, Pass::Forward);
    REQUIRE(g.series.size() == 1);
    CHECK(g.series[0].marks[0].noisy);
    CHECK_FALSE(g.series[0].marks[1].noisy);
    CHECK(g.noisy == 1);
    CHECK(g.verification.find("1 of 3 plotted values noisy") != std::string::npos);
    CHECK(g.footer[0].find("1 of 3 plotted values noisy") != std::string::npos);
    bool footnote = false;
    for (const std::string& l : g.footer)
        footnote |= l.find("~ (hatched) measured while other processes used > 5% of the CPU") == 0;
    CHECK(footnote);
    CHECK(std::none_of(g.footer.begin(), g.footer.end(),
                       [](const std::string& l) { return l.rfind("Speed:", 0) == 0; }));
    // A machine that ran slow (its probed speed below 90% of the peak) is noisy too, and the
    // footer gives the probes' range.
    r.rows[3].speed = 0.5;
    for (Measurement& m : r.rows)
        if (m.speed < 0) m.speed = 1.0;
    const Chart s = gflops_chart(r, Pass::Forward);
    CHECK(s.noisy == 2);
    bool speed_line = false;
    for (const std::string& l : s.footer)
        speed_line |=
            l.rfind("Speed: the machine's FMA rate around the timed windows: 50-100%", 0) == 0;
    CHECK(speed_line);
    // The hover says how fast the machine was around it, and when it was timed again.
    r.rows[3].retimed = 2;
    const Chart h = gflops_chart(r, Pass::Forward);
    const std::string& slow_hover = h.series[0].marks[1].hover;  // layer b
    CHECK(slow_hover.find("the machine at 50% of its peak around it (slow: noisy), timed 3 "
                          "times, the fastest machine's kept") != std::string::npos);
    CHECK(h.series[0].marks[2].hover.find("the machine at 100% of its peak around it\n") !=
          std::string::npos);
    CHECK(h.series[0].marks[2].hover.find("timed 3 times") == std::string::npos);
    r.rows[3].retimed = 0;
    r.rows[3].speed = 1.0;
    // The ratio over a noisy forward time is noisy too: layer a's two bars.
    CHECK(relative_time_chart(r).noisy == 2);
    // A stacked bar counts once.
    const Chart o = operation_share_chart(r, Pass::Forward);
    CHECK(o.noisy == 1);
    CHECK(o.verification.find("1 of 3 plotted values noisy") != std::string::npos);
    TempDir dir;
    for (const Chart& c : {g, o}) {
        const auto paths = export_chart_all(c, dir.path.string());
        CHECK(xml_error(slurp(dir.path / (c.id + ".svg"))) == "");
    }
}

TEST_CASE("charts: every operation and algorithm has its own colour, far from the others") {
    const auto dist = [](Color a, Color b) {
        const auto d = [](std::uint8_t x, std::uint8_t y) { return double(x) - double(y); };
        return std::sqrt(d(a.r, b.r) * d(a.r, b.r) + d(a.g, b.g) * d(a.g, b.g) +
                         d(a.b, b.b) * d(a.b, b.b));
    };
    const std::vector<std::string>& ops = known_operations();
    CHECK(ops.size() == 25);
    for (std::size_t i = 0; i < ops.size(); ++i)
        for (std::size_t j = i + 1; j < ops.size(); ++j) {
            CAPTURE(ops[i]);
            CAPTURE(ops[j]);
            CHECK(dist(operation_color(ops[i]), operation_color(ops[j])) >= 50);
        }
    // The spans every algorithm of the engine records are known ones (none falls back to a
    // hashed colour): a padded, strided, dilated, grouped layer runs each algorithm once.
    bench::Config cfg;
    bench::Layer l, w;
    l.descriptor = "g2mb2ic4ih7oc4kh3sh2dh1ph1n\"t:x\"";
    l.problem = parse_descriptor(l.descriptor);
    w.descriptor = "g2mb2ic4ih7oc4kh3ph1n\"t:winograd\"";  // 3x3 stride 1: winograd runs too
    w.problem = parse_descriptor(w.descriptor);
    cfg.layers = {l, w};
    cfg.algos = {"all"};
    cfg.threads = 1;
    cfg.timing.warmup = 0;
    cfg.timing.reps = 1;
    cfg.measure_peak = false;
    const Results r = bench::run(cfg);
    // winograd ran on the 3x3 stride-1 layer only; one note names what it left out, and why.
    CHECK(std::count(r.notes.begin(), r.notes.end(),
                     "winograd (fwd, bwd_data, bwd_weight) applies only to 2-D, kernel 3x3, "
                     "stride 1, no dilation layers: not run on the others") == 1);
    CHECK(r.find(0, Pass::Forward, "winograd") == nullptr);
    CHECK(r.find(1, Pass::Forward, "winograd") != nullptr);
    std::size_t spans = 0;
    for (const Measurement& m : r.rows)
        for (const auto& op : m.ops) {
            CAPTURE(m.algorithm);
            CHECK(std::find(ops.begin(), ops.end(), op.name) != ops.end());
            ++spans;
        }
    CHECK(spans > 20);
    std::vector<std::string> algos{"oneDNN"};
    for (const Algorithm& a : algorithms())
        if (std::find(algos.begin(), algos.end(), a.name) == algos.end()) algos.push_back(a.name);
    for (std::size_t i = 0; i < algos.size(); ++i)
        for (std::size_t j = i + 1; j < algos.size(); ++j) {
            CAPTURE(algos[i]);
            CAPTURE(algos[j]);
            CHECK(dist(algorithm_color(algos[i]), algorithm_color(algos[j])) >= 60);
        }
}

TEST_CASE("charts: ops bars are named under them, GFLOP/s on a log axis with the peak") {
    const Results r = sample();
    const Chart o = operation_share_chart(r, Pass::BackwardData);
    std::vector<std::string> tags;
    for (const Series& s : o.series)
        for (const Mark& m : s.marks)
            if (!m.tag.empty()) tags.push_back(m.tag);
    // One name per bar (3 layers x 2 algorithms), the failed slot included.
    CHECK(tags.size() == 6);
    CHECK(std::count(tags.begin(), tags.end(), "col2im") == 3);
    CHECK(std::count(tags.begin(), tags.end(), "via_fwd") == 3);
    CHECK(short_algorithm_name("fractal_via_forward") == "frac_via");
    CHECK(short_algorithm_name("a_very_long_name") == "a_very_l.");
    // 2, 1, 2 GFLOP/s against a 50 GFLOP/s peak: a log axis holds both, bars rise from its min.
    const Chart g = gflops_chart(r, Pass::Forward);
    CHECK(g.y.log);
    CHECK(g.y.min > 0);
    CHECK(g.y.min < 1.0);
    CHECK(g.y.max >= 50);
    for (const Mark& m : g.series[0].marks) CHECK(m.y0 == g.y.min);
    CHECK(g.y.frac(1.0) > 0.1);  // the small values are not flattened at the baseline
    CHECK(g.y.title.find("log scale") != std::string::npos);
    double lo = 0.03, hi = 7;  // 2.4 decades: 1-2-5 ticks
    auto t = log_ticks(lo, hi);
    CHECK(lo == doctest::Approx(0.02));
    CHECK(hi == doctest::Approx(10));
    REQUIRE(t.size() == 9);  // 0.02 0.05 0.1 0.2 0.5 1 2 5 10
    lo = 0.0003;
    hi = 300;  // six decades: the powers of ten only
    t = log_ticks(lo, hi);
    REQUIRE(t.size() == 6);
    CHECK(t.front().label == "0.001");
    CHECK(t.back().label == "100");
}

TEST_CASE("charts: export to SVG (XML), PNG (decodes) and PDF (has a page), headless") {
    TempDir dir;
    const Results r = sample();
    for (const Chart& c : standard_charts(r)) {
        CAPTURE(c.id);
        const auto paths = export_chart_all(c, dir.path.string());
        REQUIRE(paths.size() == 3);
        const std::string svg = slurp(dir.path / (c.id + ".svg"));
        CHECK(svg.find("<svg") != std::string::npos);
        CHECK(xml_error(svg) == "");
        cairo_surface_t* png =
            cairo_image_surface_create_from_png((dir.path / (c.id + ".png")).c_str());
        CHECK(cairo_surface_status(png) == CAIRO_STATUS_SUCCESS);
        CHECK(cairo_image_surface_get_width(png) == 1920);
        CHECK(cairo_image_surface_get_height(png) == 1080);
        cairo_surface_destroy(png);
        const std::string pdf = slurp(dir.path / (c.id + ".pdf"));
        CHECK(pdf.rfind("%PDF-", 0) == 0);
        CHECK(pdf.find("/Type /Page") != std::string::npos);
        CHECK(pdf.find("%%EOF") != std::string::npos);
    }
    // The SVG's text is glyph outlines: a <title> and a <desc> carry it, searchable, escaped.
    Results odd = r;
    odd.command = "convlab bench --filter 'a<b&c' --out y";
    const Chart t = gflops_chart(odd, Pass::Forward);
    export_chart(t, (dir.path / "t.svg").string(), Format::Svg);
    const std::string svg = slurp(dir.path / "t.svg");
    CHECK(xml_error(svg) == "");
    const auto root = svg.find("<svg");
    REQUIRE(root != std::string::npos);
    const auto title = svg.find("<title>Throughput per layer, fwd</title>");
    CHECK(title == svg.find('>', root) + 2);  // the root's first child
    const auto desc = svg.find("<desc>");
    REQUIRE(desc != std::string::npos);
    const std::string d = svg.substr(desc, svg.find("</desc>") - desc);
    CHECK(d.find("convlab bench --filter 'a&lt;b&amp;c' --out y") != std::string::npos);
    CHECK(d.find("NOT ALL VERIFIED: 1 of 9 measurements FAILED") != std::string::npos);
    CHECK(d.find("Machine: ") != std::string::npos);
    CHECK(d.find("Test CPU") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path / "t.svg.tmp"));
    // An unwritable path: an Error naming it, and no file left behind.
    const Chart c = gflops_chart(r, Pass::Forward);
    CHECK_THROWS_AS(export_chart(c, (dir.path / "no" / "such" / "x.svg").string(), Format::Svg),
                    Error);
}

TEST_CASE("charts: convlab bench writes verified CSV, JSON and charts, bad input is status 2") {
    TempDir dir;
    const fs::path shapes = dir.path / "tiny.txt";
    std::ofstream(shapes) << "# two tiny layers\nmb1ic2ih6oc3kh3ph1n\"tiny:a\"\n"
                             "mb2ic3ih7oc2kh3sh2ph1n\"tiny:b\"  # stride 2, r = 1\n";
    const std::string out = (dir.path / "out").string();
    std::ostringstream o, e;
    const int status =
        run_cli({"bench", "--shapes", shapes.string(), "--batch", "1", "--passes", "fwd,bwd_data",
                 "--algos", "im2col_gemm,col2im,via_forward", "--peer", "none", "--threads", "1",
                 "--warmup", "0", "--reps", "2", "--out", out},
                o, e);
    CAPTURE(e.str());
    REQUIRE(status == 0);
    CHECK(o.str().find("via_forward faster than col2im in") != std::string::npos);
    for (const char* f :
         {"results.csv", "results.json", "relative_bwd_data.svg", "relative_bwd_data.png",
          "relative_bwd_data.pdf", "ops_fwd.png", "gflops_bwd_data.pdf"})
        CHECK(fs::exists(fs::path(out) / f));
    std::ifstream csv(fs::path(out) / "results.csv");
    const Results r = bench::read_csv(csv);
    CHECK(r.rows.size() == 2 * 3);
    CHECK(r.failed() == 0);
    std::ifstream json(fs::path(out) / "results.json");
    const Results j = bench::read_json(json);
    CHECK(j.rows.size() == r.rows.size());
    CHECK(j.command.find("--shapes") != std::string::npos);  // the record: in the JSON
    // pandas opens results.csv with no options: one header row, numbers as numbers (a '#' line
    // would have been a row of NaN, and a header after it a row of strings).
    if (std::system("/usr/bin/python3 -c 'import pandas' 2>/dev/null") == 0) {
        const fs::path py = dir.path / "read.py";
        std::ofstream(py) << "import sys, pandas\n"
                             "d = pandas.read_csv(sys.argv[1])\n"
                             "assert len(d) == 2 * 3 + int(sys.argv[2]), len(d)\n"
                             "assert d['median_ms'].dtype == 'float64', d['median_ms'].dtype\n"
                             "assert (d['median_ms'] >= 0).all()\n"
                             "assert set(d['pass']) == {'fwd', 'bwd_data'}, set(d['pass'])\n"
                             "assert (d['verified'] == 'PASS').all(), set(d['verified'])\n";
        std::size_t ops = 0;
        for (const auto& m : r.rows) ops += m.ops.size();
        const std::string cmd = "/usr/bin/python3 " + py.string() + " " +
                                (fs::path(out) / "results.csv").string() + " " +
                                std::to_string(ops);
        CHECK(std::system(cmd.c_str()) == 0);
    } else {
        MESSAGE("python3-pandas is not installed: the pandas reading of results.csv not tried");
    }

    // --replot redraws from results.json without measuring: the same rows come back out.
    const std::string again = (dir.path / "again").string();
    std::ostringstream o1, e1;
    REQUIRE(
        run_cli({"bench", "--replot", (fs::path(out) / "results.json").string(), "--out", again},
                o1, e1) == 0);
    CHECK(slurp(fs::path(again) / "results.csv") == slurp(fs::path(out) / "results.csv"));
    CHECK(fs::exists(fs::path(again) / "relative_bwd_data.pdf"));

    // --replot A B: two runs side by side. The second is the first on a machine twice as slow:
    // each bar the sum of its run's medians, and the headline says 2x.
    {
        Results slow = j;
        slow.machine.cpu = "Other CPU";
        for (Measurement& m : slow.rows) {
            m.total.median_ms *= 2;
            m.total.q1_ms *= 2;
            m.total.q3_ms *= 2;
        }
        const fs::path b = dir.path / "slow.json";
        {
            std::ofstream f(b);
            bench::write_json(slow, f);
        }
        const std::vector<Results> runs{j, slow};
        const std::vector<std::string> labels = run_labels(runs, {"a", "b"});
        REQUIRE(labels.size() == 2);
        CHECK(labels[0] != labels[1]);
        CHECK(labels[1].find("Other CPU") == 0);
        // Three runs of one machine on one day, saved as x/run1, y/run1 and y/run1b: the
        // portable and native builds' runs named by their builds, two of one build by their
        // folders (the last component alone, "run1", would name two of them alike).
        {
            Results p1 = j, n1 = j, n2 = j;
            p1.machine.engine_isa = "baseline, kernels avx512";
            n1.machine.engine_isa = n2.machine.engine_isa = "avx512f avx2 fma, kernels avx512";
            const std::vector<std::string> three = run_labels(
                {p1, n1, n2}, {"m/x/run1/results.json", "m/y/run1/results.json", "m/z/run1"});
            REQUIRE(three.size() == 3);
            CHECK(three[0] != three[1]);
            CHECK(three[1] != three[2]);
            CHECK(three[0] != three[2]);
            // Its build alone tells it apart: no folder after it (the CPU's name may hold
            // parentheses of its own: "Intel(R) Xeon(R) Processor").
            CHECK(three[0].ends_with(" [baseline, kernels avx512]"));
            CHECK(three[1].find("(y/run1)") != std::string::npos);
            CHECK(three[2].find("(z/run1)") != std::string::npos);
        }
        const Chart c = machines_chart(runs, labels, Pass::Forward);
        REQUIRE(c.series.size() == 2);
        REQUIRE(c.x.categories == std::vector<std::string>{"im2col_gemm"});
        double sum = 0;
        for (const Measurement& m : j.rows)
            if (m.pass == Pass::Forward) sum += m.total.median_ms;
        REQUIRE(c.series[0].marks.size() == 1);
        CHECK(c.series[0].marks[0].y1 == doctest::Approx(sum));
        CHECK(c.series[1].marks[0].y1 == doctest::Approx(2 * sum));
        CHECK(c.legend[1].label == labels[1]);
        CHECK(c.verified);

        const std::string both = (dir.path / "both").string();
        std::ostringstream ob, eb;
        CHECK(run_cli({"bench", "--replot", (fs::path(out) / "results.json").string(), b.string(),
                       "--out", both},
                      ob, eb) == 0);
        CAPTURE(ob.str());
        CAPTURE(eb.str());
        for (const char* f : {"machines_fwd.svg", "machines_fwd.png", "machines_bwd_data.pdf"})
            CHECK(fs::exists(fs::path(both) / f));
        CHECK(ob.str().find("machines_fwd: Other CPU") != std::string::npos);
        CHECK(ob.str().find("im2col_gemm 2.00x") != std::string::npos);
        CHECK(ob.str().find("machines_bwd_weight: skipped") != std::string::npos);
        // A results file without --replot is refused, naming the rule.
        CHECK(run_cli({"bench", b.string(), "--out", both}, ob, eb) == 2);
        CHECK(eb.str().find("belong to --replot") != std::string::npos);
    }

    // Measurements that fail verification (a tolerance no fp32 sum meets): the files are still
    // written, the failures marked FAIL and not plotted, and the status is 1 with a count.
    const std::string strict = (dir.path / "strict").string();
    std::ostringstream of, ef;
    const int failed_status = run_cli({"bench",
                                       "--shapes",
                                       shapes.string(),
                                       "--batch",
                                       "1",
                                       "--passes",
                                       "fwd,bwd_data",
                                       "--algos",
                                       "im2col_gemm,col2im,via_forward",
                                       "--peer",
                                       "none",
                                       "--threads",
                                       "1",
                                       "--warmup",
                                       "0",
                                       "--reps",
                                       "2",
                                       "--rtol",
                                       "1e-12",
                                       "--out",
                                       strict},
                                      of, ef);
    CHECK(failed_status == 1);
    CHECK(ef.str().rfind("convlab: ", 0) == 0);
    CHECK(ef.str().find(" of 6 measurements failed verification") != std::string::npos);
    const std::string ef_text = ef.str();
    CHECK(std::count(ef_text.begin(), ef_text.end(), '\n') == 1);
    CHECK(of.str().find("FAILED") != std::string::npos);
    std::ifstream strict_json(fs::path(strict) / "results.json");
    const Results rs = bench::read_json(strict_json);
    CHECK(rs.rows.size() == 6);
    CHECK(rs.failed() > 0);
    CHECK(ef.str().find(std::to_string(rs.failed()) + " of 6") != std::string::npos);
    CHECK(fs::exists(fs::path(strict) / "relative_bwd_data.svg"));
    std::ostringstream orp, erp;  // redrawn: the same failures, the same status
    CHECK(run_cli({"bench", "--replot", (fs::path(strict) / "results.json").string(), "--out",
                   (dir.path / "strict2").string()},
                  orp, erp) == 1);

    // fp16 storage: the fractal algorithms alone, the dtype in the files; oneDNN refused.
    const std::string half = (dir.path / "half").string();
    std::ostringstream oh, eh;
    REQUIRE(run_cli({"bench", "--shapes", shapes.string(), "--dtype", "fp16", "--peer", "none",
                     "--threads", "1", "--warmup", "0", "--reps", "1", "--out", half},
                    oh, eh) == 0);
    CHECK(oh.str().find("note: dtype fp16: ") != std::string::npos);
    {
        std::ifstream in(fs::path(half) / "results.json");
        const Results rh = bench::read_json(in);
        CHECK(rh.dtype == DType::f16);
        CHECK(rh.rtol == 4e-3);
        CHECK(rh.rows.size() == 2 * 3);
        for (const Measurement& m : rh.rows) CHECK((m.dtype == DType::f16 && m.valid()));
    }
    CHECK(slurp(fs::path(half) / "results.csv").find(",fp16,") != std::string::npos);
    std::ostringstream oh2, eh2;
    CHECK(run_cli({"bench", "--shapes", shapes.string(), "--dtype", "fp16", "--peer", "onednn",
                   "--out", half},
                  oh2, eh2) == 2);
    CHECK(eh2.str().find("--peer onednn: oneDNN is timed in fp32 and bf16 only") !=
          std::string::npos);
    {
        // bf16 with --peer onednn: oneDNN's bf16 convolution (bf16 operands, fp32 accumulation)
        // timed beside the fractal algorithms, every row checked against the fp32 direct loops
        // within bf16's tolerance (where convlab was built with oneDNN). Its result is not fp32's
        // (its operands were rounded) and is never the reference.
        const fs::path bshapes = dir.path / "bf16.txt";
        std::ofstream(bshapes) << "mb2ic20ih9oc24kh3sh2ph1n\"t:strided\"\n"
                                  "g2mb1ic8ih7oc8kh3ph1n\"t:groups\"\n";
        const std::string bdir = (dir.path / "bf16").string();
        std::ostringstream ob, eb;
        const int bstatus =
            run_cli({"bench", "--shapes", bshapes.string(), "--dtype", "bf16", "--peer", "onednn",
                     "--threads", "1", "--warmup", "0", "--reps", "1", "--out", bdir},
                    ob, eb);
        CAPTURE(eb.str());
        CAPTURE(ob.str());
        if (eb.str().find("built without oneDNN") == std::string::npos) {
            REQUIRE(bstatus == 0);
            std::ifstream in(fs::path(bdir) / "results.json");
            const Results rb = bench::read_json(in);
            CHECK(rb.machine.peer.find("oneDNN") != std::string::npos);
            CHECK(rb.machine.peer.find("bf16 operands") != std::string::npos);
            int peer_rows = 0;
            for (const Measurement& m : rb.rows) {
                CAPTURE(m.algorithm);
                CAPTURE(m.impl);
                CHECK(m.valid());
                CHECK(m.dtype == DType::bf16);
                CHECK(m.check.reference == "direct");
                CHECK(m.check.max_rel <= rb.rtol);
                if (m.peer) {
                    ++peer_rows;
                    CHECK(m.check.max_rel > 1e-5);  // bf16 operands, not fp32's
                }
            }
            CHECK(peer_rows == 2 * 3);
        }
    }
    std::ostringstream ohp, ehp;  // an unknown peer: the known ones listed
    CHECK(run_cli({"bench", "--shapes", shapes.string(), "--peer", "onednn-fft", "--out", half},
                  ohp, ehp) == 2);
    CHECK(ehp.str().find("expected onednn, onednn-auto, onednn-winograd, onednn-nchw or none") !=
          std::string::npos);
    {
        // oneDNN's Winograd asked for by name: its rows say so, and they are verified (where
        // convlab was built with oneDNN). Where oneDNN has no Winograd on this CPU (oneDNN 2.x
        // has it with avx512_core only), the peer's row says so, naming the algorithm, and
        // fails alone: status 1, ConvLab's rows verified.
        const fs::path wshapes = dir.path / "wino.txt";
        std::ofstream(wshapes) << "mb1ic16ih12oc16kh3ph1n\"t:wino\"\n";
        const std::string wdir = (dir.path / "wino").string();
        std::ostringstream ow, ew;
        const int wstatus =
            run_cli({"bench", "--shapes", wshapes.string(), "--peer", "onednn-winograd", "--algos",
                     "fwd:winograd", "--passes", "fwd", "--threads", "1", "--warmup", "0", "--reps",
                     "1", "--out", wdir},
                    ow, ew);
        if (ew.str().find("built without oneDNN") == std::string::npos) {
            CAPTURE(ew.str());
            // The peer's error, where its row did not run ("" where it ran or no results).
            std::string peer_error;
            if (fs::exists(fs::path(wdir) / "results.json")) {
                std::ifstream in(fs::path(wdir) / "results.json");
                for (const Measurement& m : bench::read_json(in).rows)
                    if (m.peer && !m.ran) peer_error = m.error;
            }
            CAPTURE(peer_error);
            if (peer_error.find("implementation") != std::string::npos) {
                CHECK(wstatus == 1);
                CHECK(peer_error.find("convolution_winograd") != std::string::npos);
                CHECK(peer_error.find(" no ") != std::string::npos);
                std::ifstream in(fs::path(wdir) / "results.json");
                const Results rw = bench::read_json(in);
                CHECK(rw.machine.peer.find("convolution_winograd") != std::string::npos);
                CHECK(rw.failed() == 1);
            } else {
                REQUIRE(wstatus == 0);
                std::ifstream in(fs::path(wdir) / "results.json");
                const Results rw = bench::read_json(in);
                CHECK(rw.machine.peer.find("convolution_winograd") != std::string::npos);
                bool peer_row = false;
                for (const Measurement& m : rw.rows)
                    if (m.peer) {
                        peer_row = true;
                        CHECK(m.valid());
                        CHECK(m.impl.find("wino") != std::string::npos);
                    }
                CHECK(peer_row);
            }
        }
    }
    {
        // oneDNN on the engine's plain layouts (NCHW, OIHW) rather than its own: the results
        // say so, its rows (named oneDNN-nchw) for all three passes are verified, 1-D to 3-D,
        // with groups, stride, dilation and padding, and the engine's weights are packed per
        // call as the peer's are not reordered, unless --weights once asks (where convlab was
        // built with oneDNN).
        const fs::path pshapes = dir.path / "plain.txt";
        std::ofstream(pshapes) << "mb2ic8ih10oc8oh5kh3sh2ph1g2n\"t:groups\"\n"
                                  "mb1ic3ih9iw7oc4oh4ow3kh3kw3sh2sw2dh1dw1n\"t:dilated\"\n"
                                  "mb2ic6id5ih5iw5oc4od5oh5ow5kd3kh3kw3pd1ph1pw1n\"t:3d\"\n"
                                  "mb2ic4iw17oc6ow8kw3sw2n\"t:1d\"\n";
        const std::string pdir = (dir.path / "plain").string();
        std::ostringstream op, ep;
        const int pstatus =
            run_cli({"bench", "--shapes", pshapes.string(), "--peer", "onednn-nchw", "--algos",
                     "fwd:auto,bwd_data:auto,bwd_weight:auto", "--threads", "1", "--warmup", "0",
                     "--reps", "1", "--out", pdir},
                    op, ep);
        CAPTURE(ep.str());
        if (ep.str().find("built without oneDNN") == std::string::npos) {
            REQUIRE(pstatus == 0);
            std::ifstream in(fs::path(pdir) / "results.json");
            const Results rp = bench::read_json(in);
            CHECK(rp.machine.peer.find("plain layouts") != std::string::npos);
            int peer_rows[3] = {0, 0, 0};
            for (const Measurement& m : rp.rows)
                if (m.peer) {
                    CHECK(m.valid());
                    CHECK(m.algorithm == "oneDNN-nchw");
                    if (m.pass != Pass::BackwardBias) ++peer_rows[static_cast<int>(m.pass)];
                }
            for (int n : peer_rows) CHECK(n == 4);
            CHECK(op.str().find("plain layouts (NCHW, OIHW") != std::string::npos);
            const auto weights_note = [](const Results& res) {
                for (const std::string& n : res.notes)
                    if (n.rfind("weights:", 0) == 0) return n;
                return std::string();
            };
            CHECK(weights_note(rp).empty());  // packed per call: no note
            std::ostringstream oo, eo;
            REQUIRE(run_cli({"bench", "--shapes", pshapes.string(), "--peer", "onednn-nchw",
                             "--passes", "fwd", "--algos", "fwd:auto", "--weights", "once",
                             "--threads", "1", "--warmup", "0", "--reps", "1", "--out", pdir},
                            oo, eo) == 0);
            std::ifstream in2(fs::path(pdir) / "results.json");
            CHECK(weights_note(bench::read_json(in2))
                      .find("although the peer reads its weights "
                            "as given") != std::string::npos);
        } else {
            CHECK(pstatus == 2);
        }
    }
    std::ostringstream oh3, eh3;
    CHECK(run_cli({"bench", "--shapes", shapes.string(), "--dtype", "fp64", "--out", half}, oh3,
                  eh3) == 2);
    CHECK(eh3.str().find("--dtype") != std::string::npos);
    std::ostringstream oh4, eh4;
    CHECK(run_cli({"bench", "--shapes", shapes.string(), "--dtype", "bf16", "--algos",
                   "im2col_gemm", "--peer", "none", "--out", half},
                  oh4, eh4) == 2);
    CHECK(eh4.str().find("dtype: bf16 storage is supported by") != std::string::npos);

    // A sweep: --batch 1,2 --threads 1,2, each combination its rows and its charts.
    const std::string sweep = (dir.path / "sweep").string();
    std::ostringstream os, es;
    REQUIRE(run_cli({"bench", "--shapes", shapes.string(), "--batch", "1,2", "--threads", "1,2",
                     "--passes", "fwd", "--algos", "im2col_gemm", "--peer", "none", "--warmup", "0",
                     "--reps", "1", "--out", sweep},
                    os, es) == 0);
    CHECK(os.str().find("== batch 2, 1 thread ==") != std::string::npos);
    for (const char* f : {"gflops_fwd_b1_t1.svg", "gflops_fwd_b1_t2.png", "ops_fwd_b2_t1.pdf",
                          "gflops_fwd_b2_t2.svg"})
        CHECK(fs::exists(fs::path(sweep) / f));
    {
        std::ifstream in(fs::path(sweep) / "results.json");
        const Results rw = bench::read_json(in);
        CHECK(rw.rows.size() == 4 * 2);
        CHECK(rw.sweep.size() == 4);
    }
    CHECK(slurp(fs::path(sweep) / "gflops_fwd_b2_t2.svg").find("(batch 2, 2 threads)") !=
          std::string::npos);
    std::ostringstream os2, es2;
    CHECK(run_cli({"bench", "--shapes", shapes.string(), "--batch", "file,2", "--out", sweep}, os2,
                  es2) == 2);
    CHECK(es2.str().find("--batch") != std::string::npos);

    // Without bwd_data there is no relative chart, and the command says so.
    const std::string fwd_only = (dir.path / "fwd_only").string();
    std::ostringstream of1, ef1;
    REQUIRE(run_cli({"bench", "--shapes", shapes.string(), "--passes", "fwd", "--algos",
                     "im2col_gemm", "--peer", "none", "--threads", "1", "--warmup", "0", "--reps",
                     "1", "--out", fwd_only},
                    of1, ef1) == 0);
    CHECK(of1.str().find("relative_bwd_data: skipped, needs passes fwd and bwd_data\n") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(fs::path(fwd_only) / "relative_bwd_data.svg"));
    CHECK(fs::exists(fs::path(fwd_only) / "gflops_fwd.svg"));
    CHECK(o.str().find("skipped") == std::string::npos);

    std::ostringstream o2, e2;
    CHECK(run_cli({"bench", "--shapes", shapes.string(), "--peer", "bogus", "--out", out}, o2,
                  e2) == 2);
    CHECK(e2.str().rfind("convlab: ", 0) == 0);
    CHECK(e2.str().find("--peer") != std::string::npos);
    std::ostringstream o3, e3;
    CHECK(run_cli({"bench", "--shapes", (dir.path / "missing.txt").string(), "--out", out}, o3,
                  e3) == 2);
    CHECK(e3.str().find("missing.txt") != std::string::npos);
    std::ostringstream o4, e4;
    CHECK(run_cli({"bench", "--shapes", shapes.string(), "--algos", "nope", "--peer", "none",
                   "--out", out},
                  o4, e4) == 2);
    CHECK(e4.str().find("nope") != std::string::npos);
}

TEST_CASE("charts: write_quick_timings writes a verified quick run to a folder (in-process)") {
    TempDir dir;
    const std::string out = (dir.path / "quick").string();
    std::ostringstream log;
    const int status = convlab::cli::write_quick_timings(out, log);
    CAPTURE(log.str());
    REQUIRE(status != 2);
    std::ifstream json(fs::path(out) / "results.json");
    const Results r = bench::read_json(json);
    CHECK(r.rows.size() > 0);
    CHECK(r.layers.size() == 6);  // assets/shapes/classroom.txt
    // 0: everything verified; 1: some measurement failed and is marked so (an algorithm's bug).
    CHECK((status == 0) == (r.failed() == 0));
    CHECK(fs::exists(fs::path(out) / "relative_bwd_data.png"));
    CHECK(fs::exists(fs::path(out) / "gflops_fwd.pdf"));
    CHECK(log.str().find("verification: ") != std::string::npos);
}
