// Results files of the benchmark: CSV and JSON, one row per (layer, pass, algorithm, operation),
// operation "total" first; and reading both back. Both writers go through one flat field list,
// so the two files always hold the same columns. Index:
//   [SECTION] flat fields
//   [SECTION] CSV
//   [SECTION] JSON (nlohmann-json writes every string and number and parses every file)
//   [SECTION] rebuilding results from fields
//   [SECTION] trace (Trace Event format: the timed calls and their operations)
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <istream>
#include <iterator>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convlab/bench.hpp"

namespace convlab::bench {

namespace {

// [SECTION] flat fields

using Json = nlohmann::ordered_json;  // members in the order written

struct Field {
    std::string name;
    std::string text;  // CSV
    Json value;        // JSON: a string, a number or true/false
};
using Fields = std::vector<Field>;

// Doubles as text and back, exactly: std::to_chars / from_chars where the standard library has
// them for floating point (__cpp_lib_to_chars); else (libc++ 14, emscripten's) the shortest %g
// that reads back to the same double, and strtod on exactly the number's characters.
std::string shortest(double x) {
#if defined(__cpp_lib_to_chars)
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, x);  // shortest exact round trip
    return std::string(buf, res.ptr);
#else
    char buf[64];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, x);
        if (std::strtod(buf, nullptr) == x) break;
    }
    return buf;
#endif
}

// True when [b, e) is one decimal number as from_chars reads it (no sign '+', no space, no hex).
bool read_double(const char* b, const char* e, double& x) {
#if defined(__cpp_lib_to_chars)
    const auto res = std::from_chars(b, e, x);
    return res.ec == std::errc() && res.ptr == e;
#else
    const std::string t(b, e);
    if (t.empty() || t[0] == '+' || std::isspace(static_cast<unsigned char>(t[0])) ||
        t.find_first_of("xX") != std::string::npos)
        return false;
    char* end = nullptr;
    x = std::strtod(t.c_str(), &end);
    return end == t.c_str() + t.size();
#endif
}

std::string num(double x) {
    if (!std::isfinite(x)) return "0";
    return shortest(x);
}

// A number as JSON: whole numbers (counts, and every figure that happens to be whole) as
// integers, as the files have always written them; not finite as 0, as in the CSV.
Json json_number(double x) {
    if (!std::isfinite(x)) return 0;
    if (x == std::floor(x) && std::fabs(x) < 9007199254740992.0)  // 2^53: exact as an integer
        return static_cast<std::int64_t>(x);
    return x;
}

Field nf(std::string name, double x) {
    return {std::move(name), num(x), json_number(x)};
}
Field sf(std::string name, std::string s) {
    Json v = s;
    return {std::move(name), std::move(s), std::move(v)};
}
Field bf(std::string name, bool b) {
    return {std::move(name), b ? "true" : "false", b};
}

// Notes in one field, " | " between them (a note never holds '|').
std::string join_notes(const std::vector<std::string>& notes) {
    std::string s;
    for (const std::string& n : notes) s += (s.empty() ? "" : " | ") + n;
    return s;
}
std::vector<std::string> split_notes(const std::string& s) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t j = s.find(" | ", i);
        if (j == std::string::npos) j = s.size();
        out.push_back(s.substr(i, j - i));
        i = j + 3;
    }
    return out;
}

// "batch=1 threads=2 peak=230.1 peak_1t=115.2 foreign_cpu=0.04; batch=32 ..." ("" when none).
std::string sweep_text(const std::vector<SweepPoint>& sweep) {
    std::string s;
    for (const SweepPoint& p : sweep)
        s += (s.empty() ? "" : "; ") + ("batch=" + num(static_cast<double>(p.batch))) +
             " threads=" + num(p.threads) + " peak=" + num(p.peak_gflops) +
             " peak_1t=" + num(p.peak_gflops_1t) + " foreign_cpu=" + num(p.foreign_cpu);
    return s;
}

std::vector<SweepPoint> parse_sweep(const std::string& text, const std::string& where) {
    std::vector<SweepPoint> out;
    std::istringstream in(text);
    std::string item;
    while (std::getline(in, item, ';')) {
        SweepPoint p;
        std::istringstream words(item);
        std::string w;
        int seen = 0;
        while (words >> w) {
            const auto eq = w.find('=');
            double x = 0;
            const char* b = w.c_str() + (eq == std::string::npos ? 0 : eq + 1);
            if (eq == std::string::npos || !read_double(b, w.c_str() + w.size(), x))
                throw Error(where + ": field 'sweep': '" + w + "' is not name=number");
            const std::string k = w.substr(0, eq);
            // The same rules as the machine's fields: counts whole, figures finite and >= 0.
            const bool whole = k == "batch" || k == "threads";
            const double hi = k == "threads" ? 1 << 20 : k == "batch" ? 2147483647.0 : 1e300;
            const bool unknown = k == "foreign_cpu" && x == -1;
            if (!unknown &&
                (!(x >= 0 && x <= (k == "foreign_cpu" ? 1 : hi)) || (whole && x != std::floor(x))))
                throw Error(where + ": field 'sweep': '" + w + "' is out of range (" +
                            (whole ? "a whole number >= 0" : "a finite number >= 0") +
                            (k == "foreign_cpu" ? " up to 1, or -1" : "") + ")");
            if (k == "batch") {
                p.batch = static_cast<dim_t>(x);
            } else if (k == "threads") {
                p.threads = static_cast<int>(x);
            } else if (k == "peak") {
                p.peak_gflops = x;
            } else if (k == "peak_1t") {
                p.peak_gflops_1t = x;
            } else if (k == "foreign_cpu") {
                p.foreign_cpu = x;
            } else {
                throw Error(where + ": field 'sweep': unknown name '" + k + "'");
            }
            ++seen;
        }
        if (seen > 0) out.push_back(p);
    }
    return out;
}

Fields machine_fields(const Results& r) {
    const Machine& m = r.machine;
    return {sf("cpu", m.cpu),
            nf("logical_cpus", m.logical_cpus),
            nf("threads", m.threads),
            sf("compiler", m.compiler),
            sf("flags", m.flags),
            sf("engine_isa", m.engine_isa),
            sf("version", m.version),
            sf("commit", m.commit),
            sf("date", m.date),
            sf("peer", m.peer),
            nf("physical_cores", m.physical_cores),
            nf("peak_gflops", m.peak_gflops),
            nf("peak_gflops_1t", m.peak_gflops_1t),
            nf("load_before", m.load_before),
            nf("foreign_cpu", m.foreign_cpu),
            nf("median_spread", m.median_spread),
            nf("clock_tick_s", m.clock_tick),
            sf("shapes", r.shapes_file),
            nf("batch", static_cast<double>(r.batch)),
            sf("dtype", dtype_name(r.dtype)),
            nf("warmup", r.timing.warmup),
            nf("reps", r.timing.reps),
            nf("min_reps", r.timing.min_reps),
            nf("min_seconds", r.timing.min_seconds),
            nf("rtol", r.rtol),
            bf("cancelled", r.cancelled),
            sf("notes", join_notes(r.notes)),
            sf("sweep", sweep_text(r.sweep)),
            sf("command", r.command)};
}

const char* const kColumns[] = {
    "layer_index", "layer",          "descriptor", "pass",      "algorithm",       "peer",
    "batch",       "threads",        "dtype",      "operation", "median_ms",       "min_ms",
    "max_ms",      "q1_ms",          "q3_ms",      "runs",      "share",           "foreign_cpu",
    "speed",       "noisy",          "retimed",    "gflops",    "gflops_benchdnn", "gbps",
    "flops",       "flops_benchdnn", "bytes",      "verified",  "max_abs_err",     "max_rel_err",
    "reference",   "note",           "impl",       "error",     "calls_per_run"};

// Columns added after the first format: a file written before them reads without them.
bool optional_column(const std::string& name) {
    return name == "noisy" || name == "dtype" || name == "batch" || name == "threads" ||
           name == "gflops_benchdnn" || name == "flops_benchdnn" || name == "speed" ||
           name == "retimed" || name == "calls_per_run";
}

std::vector<Fields> row_fields(const Results& r) {
    std::vector<Fields> out;
    for (const Measurement& m : r.rows) {
        LayerInfo li = m.layer < r.layers.size() ? r.layers[m.layer] : LayerInfo{};
        if (!r.sweep.empty() && m.batch > 0) {  // a sweep: the layer with this row's batch
            try {
                Problem p = parse_descriptor(li.descriptor);
                p.mb = m.batch;
                li.descriptor = to_descriptor(p);
            } catch (const Error&) {
                // not a descriptor (an invalid layer): as written
            }
        }
        auto row = [&](const std::string& op, const Stats& t, bool total) {
            Fields f{nf("layer_index", static_cast<double>(m.layer)),
                     sf("layer", li.name),
                     sf("descriptor", li.descriptor),
                     sf("pass", pass_name(m.pass)),
                     sf("algorithm", m.algorithm),
                     bf("peer", m.peer),
                     nf("batch", static_cast<double>(m.batch)),
                     nf("threads", m.threads),
                     sf("dtype", dtype_name(m.dtype)),
                     sf("operation", op),
                     nf("median_ms", t.median_ms),
                     nf("min_ms", t.min_ms),
                     nf("max_ms", t.max_ms),
                     nf("q1_ms", t.q1_ms),
                     nf("q3_ms", t.q3_ms),
                     nf("runs", t.runs),
                     nf("share", m.total.median_ms > 0 ? t.median_ms / m.total.median_ms : 0),
                     nf("foreign_cpu", m.foreign_cpu),
                     nf("speed", m.speed),
                     bf("noisy", m.noisy()),
                     nf("retimed", m.retimed),
                     nf("gflops", total ? m.gflops() : 0),
                     nf("gflops_benchdnn", total ? m.gflops_benchdnn() : 0),
                     nf("gbps", total ? m.gbps() : 0),
                     nf("flops", m.flops),
                     nf("flops_benchdnn", m.flops_no_pad),
                     nf("bytes", m.bytes),
                     sf("verified", m.ran ? m.check.status() : "ERROR"),
                     nf("max_abs_err", m.check.max_abs),
                     nf("max_rel_err", m.check.max_rel),
                     sf("reference", m.check.reference),
                     sf("note", m.check.note),
                     sf("impl", m.impl),
                     sf("error", m.error),
                     nf("calls_per_run", t.calls)};
            out.push_back(std::move(f));
        };
        row("total", m.total, true);
        for (const Measurement::Op& op : m.ops) row(op.name, op.time, false);
    }
    return out;
}

// [SECTION] CSV

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos && !s.empty() && s[0] != '#') return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

// Splits one CSV record (RFC 4180; a quoted field may hold newlines: more lines are read).
bool read_record(std::istream& in, std::vector<std::string>& fields, int& line) {
    fields.clear();
    std::string l;
    if (!std::getline(in, l)) return false;
    ++line;
    std::string cur;
    bool quoted = false;
    for (std::size_t i = 0;; ++i) {
        if (i == l.size()) {
            if (quoted) {
                std::string more;
                if (!std::getline(in, more))
                    throw Error("CSV line " + std::to_string(line) + ": unterminated quote");
                ++line;
                cur += '\n';
                l = more;
                i = static_cast<std::size_t>(-1);
                continue;
            }
            break;
        }
        const char c = l[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < l.size() && l[i + 1] == '"') {
                    cur += '"';
                    ++i;
                } else {
                    quoted = false;
                }
            } else {
                cur += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.push_back(std::move(cur));
            cur.clear();
        } else if (c != '\r') {
            cur += c;
        }
    }
    fields.push_back(std::move(cur));
    return true;
}

// [SECTION] rebuilding results from fields

using Map = std::map<std::string, std::string>;

double to_num(const Map& m, const std::string& key, const std::string& where) {
    const auto it = m.find(key);
    if (it == m.end()) throw Error(where + ": missing field '" + key + "'");
    const std::string& s = it->second;
    // The writers always write a number: an empty field (or JSON null) is not read as 0.
    if (s.empty())
        throw Error(where + ": field '" + key + "' is empty (or null): expected a number");
    double x = 0;
    if (!read_double(s.data(), s.data() + s.size(), x))
        throw Error(where + ": field '" + key + "' is not a number: '" + s + "'");
    return x;
}

// Every numeric field has a rule: finite, within [lo, hi], and for counts a whole number; a
// value outside it would be re-exported wrapped or plotted as nonsense, so it is refused with
// the row and the field named. unknown: -1 is also accepted ("not measured").
constexpr double kMaxCount = 2147483647.0;  // counts are read into int
constexpr double kMaxThreads = 1 << 20;     // threads and CPUs
constexpr double kMaxFinite = 1.7976931348623157e308;

std::string rule_text(double lo, double hi, bool integer, bool unknown) {
    std::string s = integer ? "an integer" : "a finite number";
    if (hi >= kMaxFinite)
        s += " >= " + num(lo);
    else
        s += " from " + num(lo) + " to " + num(hi);
    if (unknown) s += " (or -1: unknown)";
    return s;
}

double checked(double x, const std::string& key, const std::string& where, double lo, double hi,
               bool integer, bool unknown) {
    if (unknown && x == -1) return x;
    if (!(x >= lo && x <= hi) || (integer && x != std::floor(x))) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", x);
        throw Error(where + ": field '" + key + "' is " + buf + ": expected " +
                    rule_text(lo, hi, integer, unknown));
    }
    return x;
}

// A finite number within [lo, hi].
double real_in(const Map& m, const std::string& key, const std::string& where, double lo = 0,
               double hi = kMaxFinite) {
    return checked(to_num(m, key, where), key, where, lo, hi, false, false);
}
// A finite number within [lo, hi], or -1 (not measured).
double real_or_unknown(const Map& m, const std::string& key, const std::string& where,
                       double lo = 0, double hi = kMaxFinite) {
    return checked(to_num(m, key, where), key, where, lo, hi, false, true);
}
// A whole number within [lo, hi] (hi at most kMaxCount, so it fits an int).
long long int_in(const Map& m, const std::string& key, const std::string& where,
                 double hi = kMaxCount, double lo = 0) {
    return static_cast<long long>(checked(to_num(m, key, where), key, where, lo, hi, true, false));
}
std::string to_str(const Map& m, const std::string& key, const std::string& where) {
    const auto it = m.find(key);
    if (it == m.end()) throw Error(where + ": missing field '" + key + "'");
    return it->second;
}
bool to_bool(const Map& m, const std::string& key, const std::string& where) {
    const std::string s = to_str(m, key, where);
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
    throw Error(where + ": field '" + key + "' is not true/false: '" + s + "'");
}

// Runs f; an Error it throws gets "where: field 'name': " in front.
template <class F>
auto in_field(const std::string& name, const std::string& where, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const Error& e) {
        throw Error(where + ": field '" + name + "': " + e.what());
    }
}

void machine_from(const Map& f, Results& r, const std::string& where) {
    Machine& m = r.machine;
    m.cpu = to_str(f, "cpu", where);
    m.logical_cpus = static_cast<int>(int_in(f, "logical_cpus", where, kMaxThreads));
    m.threads = static_cast<int>(int_in(f, "threads", where, kMaxThreads));
    m.compiler = to_str(f, "compiler", where);
    m.flags = to_str(f, "flags", where);
    m.engine_isa = to_str(f, "engine_isa", where);
    m.version = to_str(f, "version", where);
    m.commit = to_str(f, "commit", where);
    m.date = to_str(f, "date", where);
    m.peer = to_str(f, "peer", where);
    m.physical_cores = static_cast<int>(int_in(f, "physical_cores", where, kMaxThreads));
    m.peak_gflops = real_in(f, "peak_gflops", where);
    m.peak_gflops_1t = real_in(f, "peak_gflops_1t", where);
    m.load_before = real_or_unknown(f, "load_before", where);
    m.foreign_cpu = real_or_unknown(f, "foreign_cpu", where, 0, 1);
    m.median_spread = real_in(f, "median_spread", where);
    if (f.count("clock_tick_s")) m.clock_tick = real_in(f, "clock_tick_s", where);
    r.shapes_file = to_str(f, "shapes", where);
    r.batch = static_cast<dim_t>(int_in(f, "batch", where));
    r.dtype = f.count("dtype")
                  ? in_field("dtype", where, [&] { return parse_dtype(f.at("dtype")); })
                  : DType::f32;
    r.timing.warmup = static_cast<int>(int_in(f, "warmup", where));
    r.timing.reps = static_cast<int>(int_in(f, "reps", where));
    r.timing.min_reps = static_cast<int>(int_in(f, "min_reps", where));
    r.timing.min_seconds = real_in(f, "min_seconds", where);
    r.rtol = real_in(f, "rtol", where);
    r.cancelled = to_bool(f, "cancelled", where);
    r.command = to_str(f, "command", where);
    if (f.count("notes")) r.notes = split_notes(f.at("notes"));
    if (f.count("sweep")) r.sweep = parse_sweep(f.at("sweep"), where);
}

Stats stats_from(const Map& f, const std::string& where) {
    Stats t;
    t.median_ms = real_in(f, "median_ms", where);
    t.min_ms = real_in(f, "min_ms", where);
    t.max_ms = real_in(f, "max_ms", where);
    t.q1_ms = real_in(f, "q1_ms", where);
    t.q3_ms = real_in(f, "q3_ms", where);
    t.runs = static_cast<int>(int_in(f, "runs", where));
    if (f.count("calls_per_run"))
        t.calls = static_cast<int>(int_in(f, "calls_per_run", where, kMaxCount, 1));
    // Derived columns (recomputed, not read back) must still be numbers of their kind.
    for (const char* k : {"share", "gflops", "gflops_benchdnn", "gbps"})
        if (f.count(k)) real_in(f, k, where);
    return t;
}

// Adds one flat row: "total" starts a measurement, other operations join the last one.
void add_row(const Map& f, Results& r, const std::string& where) {
    const auto li = static_cast<std::size_t>(int_in(f, "layer_index", where, 100000));
    if (r.layers.size() <= li) r.layers.resize(li + 1);
    r.layers[li].name = to_str(f, "layer", where);
    r.layers[li].descriptor = to_str(f, "descriptor", where);
    const Pass pass = parse_pass(to_str(f, "pass", where));
    const std::string algo = to_str(f, "algorithm", where);
    const std::string op = to_str(f, "operation", where);
    if (op == "total") {
        Measurement m;
        m.layer = li;
        m.pass = pass;
        m.algorithm = algo;
        m.peer = to_bool(f, "peer", where);
        if (f.count("batch")) m.batch = static_cast<dim_t>(int_in(f, "batch", where));
        if (f.count("threads"))
            m.threads = static_cast<int>(int_in(f, "threads", where, kMaxThreads));
        if (f.count("dtype"))
            m.dtype = in_field("dtype", where, [&] { return parse_dtype(f.at("dtype")); });
        m.total = stats_from(f, where);
        m.flops = real_in(f, "flops", where);
        if (f.count("flops_benchdnn")) {
            m.flops_no_pad = real_in(f, "flops_benchdnn", where);
        } else {  // a file from before the column: count again from the descriptor
            try {
                m.flops_no_pad = parse_descriptor(to_str(f, "descriptor", where)).flops_no_pad();
            } catch (const Error&) {
                m.flops_no_pad = 0;
            }
        }
        m.foreign_cpu = real_or_unknown(f, "foreign_cpu", where, 0, 1);
        if (f.count("speed")) m.speed = real_or_unknown(f, "speed", where);
        if (f.count("retimed")) m.retimed = static_cast<int>(int_in(f, "retimed", where));
        m.bytes = real_in(f, "bytes", where);
        const std::string v = to_str(f, "verified", where);
        if (v != "PASS" && v != "FAIL" && v != "UNCHECKED" && v != "REFERENCE" && v != "ERROR")
            throw Error(where + ": field 'verified' is '" + v +
                        "': expected PASS, FAIL, UNCHECKED, REFERENCE or ERROR");
        m.ran = v != "ERROR";
        m.check.checked = v == "PASS" || v == "FAIL" || v == "REFERENCE";
        m.check.pass = v == "PASS" || v == "REFERENCE";
        m.check.max_abs = real_in(f, "max_abs_err", where);
        m.check.max_rel = real_in(f, "max_rel_err", where);
        m.check.reference = to_str(f, "reference", where);
        m.check.note = to_str(f, "note", where);
        m.impl = to_str(f, "impl", where);
        m.error = to_str(f, "error", where);
        r.rows.push_back(std::move(m));
    } else {
        if (r.rows.empty() || r.rows.back().layer != li || r.rows.back().pass != pass ||
            r.rows.back().algorithm != algo)
            throw Error(where + ": operation '" + op + "' without its 'total' row before it");
        r.rows.back().ops.push_back({op, stats_from(f, where)});
    }
}

// [SECTION] JSON

// A value as JSON text. Strings that are not UTF-8 (a CSV read byte for byte, a path) get U+FFFD
// for their bad bytes: JSON text is UTF-8, and the library refuses to write anything else.
std::string dumped(const Json& v) {
    return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `{"name": value, ...}`, six members a line: the layout results.json has always had, which
// people read and diff (and tests edit by its `"name": value` text).
void json_object(std::ostream& out, const Fields& f, const char* indent) {
    out << "{";
    for (std::size_t i = 0; i < f.size(); ++i) {
        out << (i ? ", " : "") << (i && i % 6 == 0 ? std::string("\n") + indent + " " : "");
        out << dumped(Json(f[i].name)) << ": " << dumped(f[i].value);
    }
    out << "}";
}

// A JSON value as the reader keeps it: scalars as text (strings unescaped, numbers as written, so
// each field's rule judges the number the file holds), containers nested.
// An object's members are a struct of their own, not std::pair: a pair of a still incomplete
// JValue does not compile with clang and libstdc++ (the fuzz build).
struct JMember;
struct JValue {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    std::string text;
    std::vector<JValue> items;     // Array
    std::vector<JMember> members;  // Object
    const JValue* get(const std::string& k) const;
};
struct JMember {
    std::string name;
    JValue value;
};
const JValue* JValue::get(const std::string& k) const {
    for (const auto& [name, v] : members)
        if (name == k) return &v;
    return nullptr;
}

// Arrays and objects nest at most this deep (a results file nests 3): a deeper file is refused
// before it costs memory, and the tree's recursive destruction stays shallow.
constexpr std::size_t kMaxJsonDepth = 32;

// The text's characters to the parser, recording how far it has read: the position of an error
// the parser does not report itself (too deep).
struct CountingChars {
    using iterator_category = std::forward_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;
    const char* p = nullptr;
    const char** furthest = nullptr;
    reference operator*() const { return *p; }
    CountingChars& operator++() {
        ++p;
        if (p > *furthest) *furthest = p;
        return *this;
    }
    CountingChars operator++(int) {
        CountingChars old = *this;
        ++*this;
        return old;
    }
    bool operator==(const CountingChars& o) const { return p == o.p; }
    bool operator!=(const CountingChars& o) const { return p != o.p; }
};

// Builds the JValue tree from the parser's events (nlohmann-json's SAX interface).
class JsonBuilder final : public nlohmann::json_sax<nlohmann::json> {
  public:
    JValue root;
    std::string error;                         // why the parse stopped ("" : it did not)
    std::size_t error_at = std::string::npos;  // its byte, where the parser said it

    bool null() override { return scalar(JValue::Null, {}); }
    bool boolean(bool b) override { return scalar(JValue::Bool, b ? "true" : "false"); }
    bool number_integer(number_integer_t x) override {
        return scalar(JValue::Number, std::to_string(x));
    }
    bool number_unsigned(number_unsigned_t x) override {
        return scalar(JValue::Number, std::to_string(x));
    }
    bool number_float(number_float_t, const string_t& text) override {
        return scalar(JValue::Number, text);
    }
    bool string(string_t& s) override { return scalar(JValue::String, std::move(s)); }
    bool binary(binary_t&) override { return scalar(JValue::Null, {}); }  // not in JSON text
    bool start_object(std::size_t) override { return open(JValue::Object); }
    bool start_array(std::size_t) override { return open(JValue::Array); }
    bool key(string_t& k) override {
        key_ = std::move(k);
        keyed_ = true;
        return true;
    }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& e) override {
        // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ...":
        // the rule only (the position is given in the reader's own words).
        std::string what = e.what();
        if (const auto b = what.find("] "); b != std::string::npos) what.erase(0, b + 2);
        if (what.rfind("parse error", 0) == 0)
            if (const auto c = what.find(": "); c != std::string::npos) what.erase(0, c + 2);
        stop(position > 0 ? position - 1 : 0, (keyed_ ? "field '" + key_ + "': " : "") + what);
        return false;
    }
    void stop(std::size_t at, std::string why) {
        error_at = at;
        error = std::move(why);
    }
    std::size_t depth() const { return open_.size(); }

  private:
    std::vector<JValue*> open_;  // the containers being filled, innermost last
    std::string key_;
    bool keyed_ = false;

    // Places v in the innermost open container (or as the document); returns where it went.
    JValue* place(JValue v) {
        if (open_.empty()) {
            root = std::move(v);
            return &root;
        }
        JValue& parent = *open_.back();
        keyed_ = false;
        if (parent.kind == JValue::Object) {
            parent.members.push_back({std::move(key_), std::move(v)});
            return &parent.members.back().value;
        }
        parent.items.push_back(std::move(v));
        return &parent.items.back();
    }
    bool scalar(JValue::Kind kind, std::string text) {
        JValue v;
        v.kind = kind;
        v.text = std::move(text);
        place(std::move(v));
        return true;
    }
    // A container's address stays valid while it is open: only the innermost one grows.
    bool open(JValue::Kind kind) {
        if (open_.size() >= kMaxJsonDepth) {
            error = "arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) +
                    " levels";
            return false;
        }
        JValue v;
        v.kind = kind;
        open_.push_back(place(std::move(v)));
        return true;
    }
    bool close() {
        open_.pop_back();
        return true;
    }
};

// "line 3, column 14" of byte `at` of text (both counted from 1).
std::string text_position(const std::string& text, std::size_t at) {
    at = std::min(at, text.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// The document of a JSON text; Error "JSON at line L, column C: RULE" where it is not JSON
// (RFC 8259, UTF-8) or nests too deep.
JValue parse_json(const std::string& text) {
    JsonBuilder builder;
    const char* furthest = text.data();
    const CountingChars first{text.data(), &furthest}, last{text.data() + text.size(), &furthest};
    bool ok = false;
    try {
        ok = nlohmann::json::sax_parse(first, last, &builder);
    } catch (const std::exception& e) {  // the parser reports through parse_error; never else
        builder.stop(static_cast<std::size_t>(furthest - text.data()), e.what());
    }
    if (!ok || !builder.error.empty()) {
        // Else the parser stopped at the bracket it had just read (too deep).
        const auto read = static_cast<std::size_t>(furthest - text.data());
        const std::size_t at =
            builder.error_at != std::string::npos ? builder.error_at : read - (read > 0);
        throw Error("JSON at " + text_position(text, at) + ": " +
                    (builder.error.empty() ? "not a JSON document" : builder.error));
    }
    return std::move(builder.root);
}

Map to_map(const JValue& obj, const std::string& where) {
    if (obj.kind != JValue::Object) throw Error(where + ": expected an object");
    Map m;
    for (const auto& [k, v] : obj.members) {
        if (v.kind == JValue::Array || v.kind == JValue::Object)
            throw Error(where + ": field '" + k + "' must be a scalar");
        m[k] = v.text;
    }
    return m;
}

}  // namespace

void write_csv(const Results& r, std::ostream& out) {
    for (std::size_t i = 0; i < std::size(kColumns); ++i) out << (i ? "," : "") << kColumns[i];
    out << "\n";
    for (const Fields& row : row_fields(r)) {
        for (std::size_t i = 0; i < row.size(); ++i)
            out << (i ? "," : "") << csv_field(row[i].text);
        out << "\n";
    }
}

Results read_csv(std::istream& in) {
    Results r;
    Map machine;
    std::vector<std::string> header;
    std::vector<std::string> fields;
    int line = 0;
    // Files of the first format opened with '#' lines holding the machine record: still read.
    while (in.peek() == '#') {
        std::string l;
        std::getline(in, l);
        ++line;
        const auto colon = l.find(": ");
        if (colon != std::string::npos && colon > 2)
            machine[l.substr(2, colon - 2)] = l.substr(colon + 2);
    }
    if (!machine.empty()) machine_from(machine, r, "CSV header comments");
    if (!read_record(in, header, line)) throw Error("CSV: no header line");
    for (std::size_t i = 0; i < header.size(); ++i)
        if (std::find(std::begin(kColumns), std::end(kColumns), header[i]) == std::end(kColumns))
            throw Error("CSV line " + std::to_string(line) + ": column " + std::to_string(i + 1) +
                        " '" + header[i] + "' is not a results column");
    for (const char* c : kColumns)
        if (!optional_column(c) && std::find(header.begin(), header.end(), c) == header.end())
            throw Error("CSV line " + std::to_string(line) + ": no column '" + c + "'");
    while (read_record(in, fields, line)) {
        if (fields.size() == 1 && fields[0].empty()) continue;
        const std::string where = "CSV line " + std::to_string(line);
        if (fields.size() != header.size())
            throw Error(where + ": " + std::to_string(fields.size()) + " fields, expected " +
                        std::to_string(header.size()));
        Map m;
        for (std::size_t i = 0; i < header.size(); ++i) m[header[i]] = fields[i];
        add_row(m, r, where);
    }
    // A plain file: the run's storage type is its rows'.
    if (machine.empty() && !r.rows.empty()) r.dtype = r.rows.front().dtype;
    return r;
}

void write_json(const Results& r, std::ostream& out) {
    out << "{\n\"format\": \"convlab-bench-1\",\n\"machine\": ";
    json_object(out, machine_fields(r), "");
    out << ",\n\"verification\": ";
    out << dumped(r.verification_summary());
    out << ",\n\"layers\": [";
    for (std::size_t i = 0; i < r.layers.size(); ++i) {
        out << (i ? ",\n  " : "\n  ");
        json_object(out, {sf("name", r.layers[i].name), sf("descriptor", r.layers[i].descriptor)},
                    "  ");
    }
    out << "],\n\"rows\": [";
    const auto rows = row_fields(r);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        out << (i ? ",\n  " : "\n  ");
        json_object(out, rows[i], "  ");
    }
    out << "]\n}\n";
}

Results read_json(std::istream& in) {
    std::ostringstream buf;
    buf << in.rdbuf();
    const JValue doc = parse_json(buf.str());
    if (doc.kind != JValue::Object) throw Error("JSON: the document is not an object");
    const JValue* format = doc.get("format");
    if (!format || format->text != "convlab-bench-1")
        throw Error("JSON: field 'format' must be \"convlab-bench-1\"");
    Results r;
    const JValue* machine = doc.get("machine");
    if (!machine) throw Error("JSON: missing field 'machine'");
    machine_from(to_map(*machine, "JSON machine"), r, "JSON machine");
    const JValue* rows = doc.get("rows");
    if (!rows || rows->kind != JValue::Array) throw Error("JSON: missing array 'rows'");
    for (std::size_t i = 0; i < rows->items.size(); ++i) {
        const std::string where = "JSON rows[" + std::to_string(i) + "]";
        add_row(to_map(rows->items[i], where), r, where);
    }
    if (const JValue* layers = doc.get("layers"); layers && layers->kind == JValue::Array) {
        if (r.layers.size() < layers->items.size()) r.layers.resize(layers->items.size());
        for (std::size_t i = 0; i < layers->items.size(); ++i) {
            const Map m = to_map(layers->items[i], "JSON layers");
            r.layers[i].name = to_str(m, "name", "JSON layers");
            r.layers[i].descriptor = to_str(m, "descriptor", "JSON layers");
        }
    }
    return r;
}

// [SECTION] trace (Trace Event format)

void write_trace(const Results& r, std::ostream& out) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point t0 = Clock::time_point::max();
    for (const Measurement& m : r.rows)
        for (const Measurement::TracedCall& c : m.trace) t0 = std::min(t0, c.start);
    const auto us = [&](Clock::time_point t) {
        return json_number(std::chrono::duration<double, std::micro>(t - t0).count());
    };
    const auto dur = [](Clock::time_point a, Clock::time_point b) {
        return json_number(std::chrono::duration<double, std::micro>(b - a).count());
    };
    // One track (tid) per (layer, pass): its calls in the order they ran, nested operations.
    const auto tid = [](const Measurement& m) {
        return 1 + 4 * m.layer + static_cast<std::size_t>(m.pass);
    };
    // Written event by event (a traced run holds thousands of them), one a line.
    out << "{\"displayTimeUnit\": \"ms\",\n \"otherData\": "
        << dumped(Json{{"command", r.command},
                       {"cpu", r.machine.cpu},
                       {"commit", r.machine.commit},
                       {"date", r.machine.date}})
        << ",\n \"traceEvents\": [\n  "
        << dumped(Json{{"name", "process_name"},
                       {"ph", "M"},
                       {"pid", 1},
                       {"tid", 0},
                       {"args", {{"name", "convlab bench"}}}});
    std::vector<std::size_t> named;
    for (const Measurement& m : r.rows) {
        if (m.trace.empty()) continue;
        const std::size_t t = tid(m);
        const std::string layer = m.layer < r.layers.size() ? r.layers[m.layer].name : "";
        if (std::find(named.begin(), named.end(), t) == named.end()) {
            named.push_back(t);
            out << ",\n  "
                << dumped(Json{{"name", "thread_name"},
                               {"ph", "M"},
                               {"pid", 1},
                               {"tid", t},
                               {"args", {{"name", layer + " " + pass_name(m.pass)}}}});
        }
        for (std::size_t k = 0; k < m.trace.size(); ++k) {
            const Measurement::TracedCall& c = m.trace[k];
            const Json args{
                {"layer", layer},
                {"descriptor", m.layer < r.layers.size() ? r.layers[m.layer].descriptor : ""},
                {"pass", pass_name(m.pass)},
                {"call", k},
                {"verified", m.ran ? m.check.status() : "ERROR"}};
            out << ",\n  "
                << dumped(Json{{"name", m.algorithm},
                               {"cat", "call"},
                               {"ph", "X"},
                               {"ts", us(c.start)},
                               {"dur", dur(c.start, c.end)},
                               {"pid", 1},
                               {"tid", t},
                               {"args", args}});
            for (const Profiler::Event& e : c.ops)
                out << ",\n  "
                    << dumped(Json{{"name", e.name},
                                   {"cat", "operation"},
                                   {"ph", "X"},
                                   {"ts", us(e.start)},
                                   {"dur", dur(e.start, e.end)},
                                   {"pid", 1},
                                   {"tid", t}});
        }
    }
    out << "\n ]}\n";
}

}  // namespace convlab::bench
