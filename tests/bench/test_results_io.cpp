// The benchmark's results files: CSV and JSON written and parsed back to the same results,
// results.json from before the JSON library, malformed JSON named by line and column, strings
// that are not UTF-8.
#include <doctest/doctest.h>

#include "bench_test_util.hpp"

using namespace bench_test;

TEST_CASE("bench: CSV and JSON results parse back to the same results") {
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward, Pass::BackwardData};
    cfg.extra_algorithms = {{Pass::Forward, "off_by_one", "wrong on purpose", forward_off_by_one}};
    cfg.algos = {"im2col_gemm", "off_by_one", "col2im"};
    cfg.peer = fake_peer(false);
    cfg.command = "convlab bench --shapes \"odd, name\".txt --out x";
    Results r = run(cfg);
    r.rows[0].foreign_cpu = 0.2;  // measured while others held 20% of the CPUs: noisy
    r.rows[1].foreign_cpu = 0.01;
    r.rows[1].speed = 0.97;  // the machine at 97% of its peak: not noisy
    r.rows[1].retimed = 2;   // after two slower attempts
    r.rows[2].foreign_cpu = 0.01;
    r.rows[2].speed = 0.8;  // the machine itself slow (at 80% of its peak): noisy
    std::ostringstream csv, json;
    write_csv(r, csv);
    write_json(r, json);
    for (int which = 0; which < 2; ++which) {
        CAPTURE(which);
        std::istringstream in(which ? json.str() : csv.str());
        const Results b = which ? read_json(in) : read_csv(in);
        if (which) {  // the machine record and the run's settings: in the JSON only
            CHECK(b.command == r.command);
            CHECK(b.machine.cpu == r.machine.cpu);
            CHECK(b.machine.commit == r.machine.commit);
            CHECK(b.machine.flags == r.machine.flags);
            CHECK(b.machine.foreign_cpu == r.machine.foreign_cpu);
            CHECK(b.rtol == r.rtol);
            CHECK(b.timing.reps == r.timing.reps);
        }
        REQUIRE(b.layers.size() == r.layers.size());
        for (std::size_t i = 0; i < r.layers.size(); ++i) {
            CHECK(b.layers[i].name == r.layers[i].name);
            CHECK(b.layers[i].descriptor == r.layers[i].descriptor);
        }
        REQUIRE(b.rows.size() == r.rows.size());
        for (std::size_t i = 0; i < r.rows.size(); ++i) {
            const Measurement& x = r.rows[i];
            const Measurement& y = b.rows[i];
            CHECK(y.algorithm == x.algorithm);
            CHECK(y.pass == x.pass);
            CHECK(y.peer == x.peer);
            CHECK(y.valid() == x.valid());
            CHECK(y.check.status() == x.check.status());
            CHECK(y.check.max_abs == x.check.max_abs);
            CHECK(y.check.max_rel == x.check.max_rel);
            CHECK(y.check.reference == x.check.reference);
            CHECK(y.total.median_ms == x.total.median_ms);
            CHECK(y.total.q3_ms == x.total.q3_ms);
            CHECK(y.total.runs == x.total.runs);
            CHECK(y.flops == x.flops);
            CHECK(y.foreign_cpu == x.foreign_cpu);
            CHECK(y.speed == x.speed);
            CHECK(y.retimed == x.retimed);
            CHECK(y.noisy() == x.noisy());
            REQUIRE(y.ops.size() == x.ops.size());
            for (std::size_t k = 0; k < x.ops.size(); ++k) {
                CHECK(y.ops[k].name == x.ops[k].name);
                CHECK(y.ops[k].time.median_ms == x.ops[k].time.median_ms);
            }
        }
        CHECK(b.failed() == r.failed());
        CHECK(b.rows[0].noisy());
        CHECK_FALSE(b.rows[1].noisy());
        CHECK(b.rows[2].noisy());
    }
    // A plain table: the header is the first line (no comment lines for a reader to skip).
    CHECK(csv.str().rfind("layer_index,layer,descriptor,pass,algorithm,", 0) == 0);
    CHECK(csv.str().find("\n#") == std::string::npos);
    // The noisy column says so in the file, on the total row and on its operations' rows.
    {
        std::istringstream in(csv.str());
        std::string l;
        std::getline(in, l);
        CHECK(l.find(",foreign_cpu,speed,noisy,") != std::string::npos);
        std::getline(in, l);
        CHECK(l.find(",0.2,-1,true,") != std::string::npos);  // no peak measured: speed -1
    }
    // A file from before the speed and retimed columns reads as unknown (-1) and never timed
    // again, noisy by foreign CPU only.
    {
        std::string old = csv.str();
        const std::size_t h = old.find("layer_index,");
        REQUIRE(h != std::string::npos);
        std::istringstream in(old.substr(h));
        std::ostringstream cut;
        cut << old.substr(0, h);
        for (std::string l; std::getline(in, l);) {
            // Drop the 19th and 21st fields (speed, retimed) of every row: split on commas
            // outside quotes.
            std::vector<std::string> f{""};
            bool q = false;
            for (const char ch : l) {
                if (ch == '"') q = !q;
                if (ch == ',' && !q)
                    f.emplace_back();
                else
                    f.back() += ch;
            }
            REQUIRE(f.size() > 21);
            f.erase(f.begin() + 20);
            f.erase(f.begin() + 18);
            for (std::size_t i = 0; i < f.size(); ++i) cut << (i ? "," : "") << f[i];
            cut << "\n";
        }
        CHECK(cut.str().find(",speed,") == std::string::npos);
        CHECK(cut.str().find(",retimed,") == std::string::npos);
        std::istringstream back(cut.str());
        const Results b = read_csv(back);
        REQUIRE(b.rows.size() == r.rows.size());
        CHECK(b.rows[1].retimed == 0);
        CHECK(b.rows[2].speed == -1);
        CHECK_FALSE(b.rows[2].noisy());
        CHECK(b.rows[0].noisy());
    }
    CHECK(json.str().find("\"noisy\": true") != std::string::npos);
    // One row per (layer, pass, algorithm, operation): total + each operation.
    std::size_t expected = 0;
    for (const Measurement& m : r.rows) expected += 1 + m.ops.size();
    std::size_t lines = 0;
    std::istringstream in(csv.str());
    for (std::string l; std::getline(in, l);) lines += l.empty() || l[0] == '#' ? 0 : 1;
    CHECK(lines == expected + 1);  // + the header

    // Damaged files: a clear error, not a crash.
    std::string broken = csv.str();
    broken.replace(broken.find(",fwd,"), 5, ",fwx,");
    std::istringstream bad_csv(broken);
    CHECK_THROWS_WITH_AS(read_csv(bad_csv), doctest::Contains("pass"), Error);
    std::istringstream bad_json(json.str().substr(0, json.str().size() / 2));
    CHECK_THROWS_WITH_AS(read_json(bad_json), doctest::Contains("JSON"), Error);
}

namespace {

// read_json's error for a text ("" when it reads).
std::string json_error(const std::string& text) {
    std::istringstream in(text);
    try {
        read_json(in);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// A run of the tiny layers' forward pass: results to write and read back.
Results tiny_results() {
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward};
    return run(cfg);
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("results.json: a file written before the JSON library reads and writes back the same") {
    // tests/fuzz/seeds/results.json was written by `convlab bench` with the hand-written writer
    // this library replaced: every field reads, and written again it is the same text.
    const std::string path = std::string(CONVLAB_SOURCE_DIR) + "/tests/fuzz/seeds/results.json";
    const std::string before = slurp(path);
    REQUIRE(before.size() > 1000);
    std::istringstream in(before);
    const Results r = read_json(in);
    CHECK(r.rows.size() > 10);
    CHECK(r.machine.cpu == "AMD EPYC");
    CHECK(r.machine.peak_gflops > 0);
    // The same document: every member, string and number (numbers may be spelled otherwise,
    // 1e-04 now 0.0001), in the same order and layout; plus the fields added since, at the
    // values that mean "as before": the clock's tick unknown (0), one call per timed run.
    std::ostringstream again;
    write_json(r, again);
    nlohmann::ordered_json written = nlohmann::ordered_json::parse(again.str());
    REQUIRE(written["machine"].contains("clock_tick_s"));
    CHECK(written["machine"]["clock_tick_s"] == 0);
    written["machine"].erase("clock_tick_s");
    for (auto& row : written["rows"]) {
        REQUIRE(row.contains("calls_per_run"));
        CHECK(row["calls_per_run"] == 1);
        row.erase("calls_per_run");
    }
    CHECK(written == nlohmann::ordered_json::parse(before));
    std::size_t lines_before = 0, lines_again = 0;
    for (const char c : before) lines_before += c == '\n';
    for (const char c : again.str()) lines_again += c == '\n';
    CHECK(lines_again == lines_before);
}

TEST_CASE("results.json: malformed JSON is one line naming its line, column and rule") {
    const Results r = tiny_results();
    std::ostringstream good;
    write_json(r, good);
    REQUIRE(json_error(good.str()).empty());
    struct Case {
        std::string text, expect;
    };
    const Case cases[] = {
        {"",
         "JSON at line 1, column 1: syntax error while parsing value - unexpected end of "
         "input"},
        {"{\"format\": \"convlab-bench-1\",\n \"machine\": {]}",
         "JSON at line 2, column 14: syntax error while parsing object key"},
        {"{\"a\": tru}",
         "JSON at line 1, column 10: field 'a': syntax error while parsing value - "
         "invalid literal"},
        {"{\"a\": 1e999}", "field 'a': number overflow parsing '1e999'"},
        {"{\"a\": \"\xff\"}", "invalid string: ill-formed UTF-8 byte"},
        {good.str() + "x", "syntax error while parsing value - invalid literal"},
        // Nested deeper than any results file: refused where it goes too deep, not followed.
        {std::string(100000, '['),
         "JSON at line 1, column 33: arrays and objects nested deeper "
         "than 32 levels"},
        {"{\"x\": {\"y\":\n" + std::string(5000, '['),
         "JSON at line 2, column 31: arrays and objects nested deeper than 32 levels"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text.substr(0, 60));
        const std::string err = json_error(c.text);
        CHECK(err.find(c.expect) != std::string::npos);
        CHECK(err.find('\n') == std::string::npos);
    }
}

TEST_CASE("results.json: strings that are not UTF-8 are written as valid JSON") {
    // A CSV is read byte for byte; its strings may be Latin-1. JSON is UTF-8: the bad bytes
    // become U+FFFD and the file reads back.
    Results r = tiny_results();
    r.command = "convlab bench --out caf\xe9";
    r.layers.front().name = "t:\xff";
    std::ostringstream out;
    write_json(r, out);
    std::istringstream in(out.str());
    const Results back = read_json(in);
    CHECK(back.command == "convlab bench --out caf\xef\xbf\xbd");
    CHECK(back.layers.front().name == "t:\xef\xbf\xbd");
    CHECK(back.rows.size() == r.rows.size());
}
