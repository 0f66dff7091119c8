// Lesson files: TOML -> the lesson model (lesson.hpp), with "file:line:column: what" errors.
//
// Index of sections:
//   [SECTION] Positions and errors
//   [SECTION] Typed field readers
//   [SECTION] Inline tensors
//   [SECTION] Steps, checks, networks
//   [SECTION] Lesson
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string_view>

#include "convlab/conv.hpp"
#include "convlab/output_file.hpp"
#include "lesson/lesson.hpp"
#include "lesson/views.hpp"

namespace convlab::lesson {

// [SECTION] Positions and errors

std::string SourcePos::str() const {
    std::string s = file.empty() ? "<lesson>" : file;
    if (line > 0) s += ":" + std::to_string(line);
    if (line > 0 && column > 0) s += ":" + std::to_string(column);
    return s;
}

LessonError::LessonError(SourcePos p, const std::string& msg)
    : Error(p.str() + ": " + msg), pos_(std::move(p)), msg_(msg) {}

const std::vector<std::string>& view_names() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> names;
        for (const ViewSpec& s : view_registry()) names.push_back(s.name);
        return names;
    }();
    return v;
}

const std::string& view_choices() {
    static const std::string s = [] {
        std::string t;
        for (const ViewSpec& v : view_registry())
            if (v.map.empty()) t += (t.empty() ? v.name + " (default)" : " | " + v.name);
        return t + " | map:NAME (any map of `convlab map --list`)";
    }();
    return s;
}

namespace {

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

// Where the "[reveal]" line starts (npos: none), and where the text after it starts.
std::size_t reveal_line(std::string_view text, std::size_t& after) {
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t nl = text.find('\n', at);
        const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
        std::string_view line = text.substr(at, end - at);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
        if (line == kReveal) {
            after = nl == std::string_view::npos ? text.size() : nl + 1;
            return at;
        }
        if (nl == std::string_view::npos) break;
        at = nl + 1;
    }
    return std::string_view::npos;
}

struct Ctx {
    std::string file;
    SourcePos at(const toml::source_region& r) const {
        return {file, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
    }
    SourcePos at(const toml::node& n) const { return at(n.source()); }
    [[noreturn]] void fail(const toml::node& n, const std::string& msg) const {
        throw LessonError(at(n), msg);
    }
};

const char* type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a number";
        case toml::node_type::boolean:
            return "a boolean";
        default:
            return "a date or time";
    }
}

// Rejects keys not in `known` (typos would otherwise be ignored silently).
void only_keys(const Ctx& c, const toml::table& t, const std::vector<std::string>& known,
               const std::string& where) {
    for (auto&& [k, v] : t) {
        if (std::find(known.begin(), known.end(), k.str()) == known.end())
            throw LessonError(c.at(k.source()), "unknown key '" + std::string(k.str()) + "' in " +
                                                    where + " (known: " + join(known) + ")");
    }
}

// [SECTION] Size limits

// Every text and list of a lesson has a size limit (lessons/README.md, "Limits"), far above what
// a lesson needs and low enough that the app draws it and evaluates it in a moment: a lesson file
// is shared between teachers, and opening a colleague's file must never stall or kill the app.
constexpr std::size_t kMaxNarration = 8192;  // bytes of a step's narration
constexpr std::size_t kMaxSummary = 4096;    // bytes of the lesson's summary
constexpr std::size_t kMaxTitle = 200;       // bytes of a title or the audience
constexpr std::size_t kMaxDescriptor = 256;  // bytes of a benchdnn descriptor
constexpr std::size_t kMaxName = 64;         // bytes of a name: view, map, chart, tensor, layer...
constexpr std::size_t kMaxHighlight = 256;   // bytes of a highlight ("src[0,0,1,1]")
constexpr std::size_t kMaxSteps = 200;       // steps in a lesson
constexpr std::size_t kMaxListed = 64;       // highlights, show, compare entries of a step
constexpr std::size_t kMaxChecks = 256;      // checks of a step
constexpr std::size_t kMaxLayers = 64;       // layers of a network
constexpr std::size_t kMaxInlineValues = 65536;  // values of an inline tensor

std::size_t string_limit(std::string_view key) {
    if (key == "narration") return kMaxNarration;
    if (key == "summary") return kMaxSummary;
    if (key == "title" || key == "audience") return kMaxTitle;
    if (key == "problem") return kMaxDescriptor;
    return kMaxName;
}

// Refuses a text longer than `limit` bytes, at the text's position.
void check_length(const Ctx& c, const toml::node& n, const std::string& what, std::size_t size,
                  std::size_t limit) {
    if (size > limit)
        c.fail(n, what + " is " + std::to_string(size) + " bytes long: at most " +
                      std::to_string(limit) + " (see \"Limits\" in lessons/README.md)");
}

// Refuses a list of more than `limit` entries, at the list's position.
void check_count(const Ctx& c, const toml::node& n, const std::string& what, std::size_t count,
                 std::size_t limit) {
    if (count > limit)
        c.fail(n, what + " has " + std::to_string(count) + " entries: at most " +
                      std::to_string(limit) + " (see \"Limits\" in lessons/README.md)");
}

// [SECTION] Typed field readers

std::string get_string(const Ctx& c, const toml::table& t, const char* key, bool required,
                       const toml::node& owner, const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) {
        if (required) c.fail(owner, where + " needs '" + key + "'");
        return {};
    }
    if (!n->is_string())
        c.fail(*n, std::string("'") + key + "' must be a string, not " + type_name(*n));
    const std::string_view v = n->as_string()->get();
    check_length(c, *n, std::string("'") + key + "'", v.size(), string_limit(key));
    return std::string(v);
}

std::int64_t as_integer(const Ctx& c, const toml::node& n, const std::string& what) {
    if (!n.is_integer()) c.fail(n, what + " must be an integer, not " + type_name(n));
    return n.as_integer()->get();
}

double as_number(const Ctx& c, const toml::node& n, const std::string& what) {
    if (n.is_integer()) return static_cast<double>(n.as_integer()->get());
    if (n.is_floating_point()) return n.as_floating_point()->get();
    c.fail(n, what + " must be a number, not " + type_name(n));
}

std::vector<dim_t> integer_list(const Ctx& c, const toml::node& n, const std::string& what,
                                std::size_t limit = kMaxListed) {
    const toml::array* a = n.as_array();
    if (!a) c.fail(n, what + " must be an array of integers, not " + type_name(n));
    check_count(c, n, what, a->size(), limit);
    std::vector<dim_t> v;
    for (const toml::node& e : *a) v.push_back(as_integer(c, e, what + " element"));
    return v;
}

const toml::table& as_table(const Ctx& c, const toml::node& n, const std::string& what) {
    if (!n.is_table()) c.fail(n, what + " must be a table, not " + type_name(n));
    return *n.as_table();
}

// [SECTION] Inline tensors

// Nested arrays of numbers; t.dims (from the first element at each depth) is already known, and
// every array at one depth must have that length.
void read_nested(const Ctx& c, const toml::node& n, std::size_t depth, InlineTensor& t,
                 const std::string& what) {
    if (const toml::array* a = n.as_array()) {
        if (depth >= t.dims.size())
            c.fail(n, what + ": ragged nesting (an array where a number was expected)");
        if (static_cast<dim_t>(a->size()) != t.dims[depth])
            c.fail(n, what + ": ragged nesting: " + std::to_string(a->size()) + " elements here, " +
                          std::to_string(t.dims[depth]) + " in the first array at this depth");
        for (const toml::node& e : *a) read_nested(c, e, depth + 1, t, what);
        return;
    }
    if (depth != t.dims.size())
        c.fail(n, what + ": ragged nesting (a number where an array was expected)");
    if (t.values.size() >= kMaxInlineValues)
        c.fail(n, what + ": more than " + std::to_string(kMaxInlineValues) +
                      " values (see \"Limits\" in lessons/README.md)");
    t.values.push_back(static_cast<float>(as_number(c, n, what + " element")));
}

InlineTensor read_tensor(const Ctx& c, const toml::node& n, const std::string& what) {
    InlineTensor t;
    t.pos = c.at(n);
    for (const toml::node* cur = &n; cur->is_array(); cur = cur->as_array()->get(0)) {
        if (cur->as_array()->empty()) c.fail(*cur, what + ": an empty array");
        t.dims.push_back(static_cast<dim_t>(cur->as_array()->size()));
    }
    read_nested(c, n, 0, t, what);
    return t;
}

// [SECTION] Steps, checks, networks

// "src[0,0,1,1]" or "src" -> tensor and index prefix. `what` names the list in messages: a
// highlight, a 'hide' entry.
Highlight parse_highlight(const Ctx& c, const toml::node& n,
                          const std::string& what = "highlight") {
    if (!n.is_string()) c.fail(n, "a " + what + " must be a string like \"src[0,0,1,1]\"");
    const std::string s(n.as_string()->get());
    check_length(c, n, "a highlight", s.size(), kMaxHighlight);
    Highlight h;
    h.pos = c.at(n);
    const auto open = s.find('[');
    h.tensor = s.substr(0, open);
    if (h.tensor.empty()) c.fail(n, what + " '" + s + "': no tensor name before '['");
    if (open == std::string::npos) return h;
    if (s.back() != ']') c.fail(n, what + " '" + s + "': expected ']' at the end");
    std::stringstream in(s.substr(open + 1, s.size() - open - 2));
    std::string item;
    while (std::getline(in, item, ',')) {
        try {
            std::size_t used = 0;
            const long long v = std::stoll(item, &used);
            if (item.find_first_not_of(' ', used) != std::string::npos) throw std::exception();
            h.at.push_back(v);
        } catch (const std::exception&) {
            c.fail(n, what + " '" + s + "': index '" + item + "' is not an integer");
        }
    }
    return h;
}

Check parse_check(const Ctx& c, const toml::node& n) {
    const toml::table& t = as_table(c, n, "a check");
    only_keys(c, t, {"tensor", "at", "equals", "equals_tensor", "equals_at", "within"}, "a check");
    Check k;
    k.pos = c.at(n);
    k.tensor = get_string(c, t, "tensor", true, n, "a check");
    if (const toml::node* a = t.get("at")) k.at = integer_list(c, *a, "'at'");
    const toml::node* eq = t.get("equals");
    const toml::node* eqt = t.get("equals_tensor");
    if (!eq == !eqt) c.fail(n, "a check needs exactly one of 'equals' and 'equals_tensor'");
    if (eq) {
        k.equals = read_tensor(c, *eq, "'equals'");
        if (const toml::node* a = t.get("equals_at"))
            c.fail(*a, "'equals_at' goes with 'equals_tensor'");
    } else {
        k.equals_tensor = get_string(c, t, "equals_tensor", true, n, "a check");
        if (const toml::node* a = t.get("equals_at"))
            k.equals_at = integer_list(c, *a, "'equals_at'");
    }
    if (const toml::node* w = t.get("within")) {
        k.within = as_number(c, *w, "'within'");
        if (!(k.within >= 0)) c.fail(*w, "'within' must be >= 0");
    }
    return k;
}

Problem parse_problem(const Ctx& c, const toml::node& n, std::string& text) {
    if (!n.is_string())
        c.fail(n, "'problem' must be a string (a benchdnn descriptor), not " +
                      std::string(type_name(n)));
    text = std::string(n.as_string()->get());
    check_length(c, n, "'problem'", text.size(), kMaxDescriptor);
    try {
        Problem p = parse_descriptor(text);
        p.check();
        return p;
    } catch (const Error& e) {
        c.fail(n, "problem '" + text + "': " + e.what());
    }
}

std::uint64_t parse_seed(const Ctx& c, const toml::node& n) {
    const std::int64_t s = as_integer(c, n, "'seed'");
    if (s < 0) c.fail(n, "'seed' must be >= 0");
    return static_cast<std::uint64_t>(s);
}

LayerSpec parse_layer(const Ctx& c, const toml::node& n, std::size_t index) {
    const toml::table& t = as_table(c, n, "a layer");
    only_keys(c, t, {"type", "name", "problem", "kernel", "stride", "wei", "bias", "seed"},
              "a layer");
    LayerSpec l;
    l.pos = c.at(n);
    l.type = get_string(c, t, "type", true, n, "a layer");
    static const std::vector<std::string> types{"conv", "conv_transposed", "locally_connected",
                                                "relu", "max_pool",        "global_max_pool",
                                                "fc"};
    if (std::find(types.begin(), types.end(), l.type) == types.end())
        c.fail(*t.get("type"), "unknown layer type '" + l.type + "' (known: " + join(types) + ")");
    l.name = get_string(c, t, "name", false, n, "a layer");
    if (l.name.empty()) l.name = l.type + std::to_string(index);
    const bool convlike =
        l.type == "conv" || l.type == "conv_transposed" || l.type == "locally_connected";
    if (const toml::node* p = t.get("problem")) {
        if (!convlike) c.fail(*p, "a " + l.type + " layer takes no 'problem'");
        l.problem = parse_problem(c, *p, l.problem_text);
    } else if (convlike) {
        c.fail(n, "a " + l.type + " layer needs 'problem' (a benchdnn descriptor)");
    }
    if (const toml::node* k = t.get("kernel")) l.kernel = integer_list(c, *k, "'kernel'");
    if (const toml::node* s = t.get("stride")) l.stride = integer_list(c, *s, "'stride'");
    if (l.type == "max_pool" && l.kernel.empty())
        c.fail(n, "a max_pool layer needs 'kernel' (one size per spatial axis)");
    if (const toml::node* w = t.get("wei")) l.wei = read_tensor(c, *w, "'wei'");
    if (const toml::node* b = t.get("bias")) l.bias = read_tensor(c, *b, "'bias'");
    if (const toml::node* s = t.get("seed")) l.seed = parse_seed(c, *s);
    if (l.type == "fc" && !l.wei.present())
        c.fail(n, "an fc layer needs 'wei' (O x F, nested arrays)");
    return l;
}

NetworkSpec parse_network(const Ctx& c, const toml::node& n) {
    const toml::table& t = as_table(c, n, "'network'");
    only_keys(c, t, {"input", "target", "layer"}, "'network'");
    NetworkSpec net;
    net.pos = c.at(n);
    const toml::node* in = t.get("input");
    if (!in) c.fail(n, "'network' needs 'input' (nested arrays (N, C, H, W))");
    net.input = read_tensor(c, *in, "'input'");
    const toml::node* tg = t.get("target");
    if (!tg) c.fail(n, "'network' needs 'target' (one class index per image)");
    net.target = integer_list(c, *tg, "'target'", kMaxInlineValues);
    const toml::node* layers = t.get("layer");
    if (!layers || !layers->is_array() || layers->as_array()->empty())
        c.fail(n, "'network' needs layers: [[step.network.layer]] tables");
    check_count(c, *layers, "the network's layers", layers->as_array()->size(), kMaxLayers);
    std::size_t i = 0;
    for (const toml::node& l : *layers->as_array()) net.layers.push_back(parse_layer(c, l, i++));
    return net;
}

// The lesson-level problem, [data] and [network]: defaults of every step that lacks its own.
struct Defaults {
    bool has_problem = false, has_data = false;
    std::string problem_text;
    Problem problem;
    SourcePos problem_pos;
    std::vector<std::pair<std::string, InlineTensor>> data;
    std::uint64_t seed = 1;
    NetworkSpec network;
};

void parse_data(const Ctx& c, const toml::node& d, Step& s) {
    const toml::table& dt = as_table(c, d, "'data'");
    only_keys(c, dt, {"seed", "src", "wei", "bias", "diff_dst"}, "'data'");
    for (auto&& [k, v] : dt) {
        if (k.str() == "seed") {
            s.seed = parse_seed(c, v);
        } else {
            s.data.emplace_back(std::string(k.str()),
                                read_tensor(c, v, "'" + std::string(k.str()) + "'"));
        }
    }
}

Step parse_step(const Ctx& c, const toml::node& n, const Defaults& defaults) {
    const toml::table& t = as_table(c, n, "a step");
    only_keys(
        c, t,
        {"title", "view", "problem", "map", "c0", "granularity", "steps", "start", "highlights",
         "hide", "show", "panels", "narration", "data", "compare", "chart", "network", "check"},
        "a step");
    Step s;
    s.pos = c.at(n);
    s.title = get_string(c, t, "title", false, n, "a step");
    s.view = get_string(c, t, "view", true, n, "a step");
    s.view_pos = c.at(*t.get("view"));
    const auto& views = view_names();
    if (std::find(views.begin(), views.end(), s.view) == views.end()) {
        std::string known;
        for (const ViewSpec& v : view_registry())
            if (v.map.empty()) known += (known.empty() ? "" : ", ") + v.name;
        c.fail(*t.get("view"), "unknown view '" + s.view + "' (views: " + known +
                                   ", map:NAME for a map of `convlab map --list`)");
    }
    s.narration = get_string(c, t, "narration", true, n, "a step");
    if (const toml::node* p = t.get("problem")) {
        s.problem = parse_problem(c, *p, s.problem_text);
        s.has_problem = true;
        s.problem_pos = c.at(*p);
    } else if (defaults.has_problem) {
        s.problem = defaults.problem;
        s.problem_text = defaults.problem_text;
        s.has_problem = true;
        s.problem_pos = defaults.problem_pos;
    }
    s.map = get_string(c, t, "map", false, n, "a step");
    if (!s.map.empty()) {
        s.map_pos = c.at(*t.get("map"));
        if (!s.has_problem) c.fail(*t.get("map"), "'map' needs the step's 'problem'");
    }
    if (const toml::node* c0 = t.get("c0")) {
        s.c0 = as_integer(c, *c0, "'c0'");
        if (s.c0 < 1 || s.c0 > 64) c.fail(*c0, "'c0' must be in [1, 64]");
    }
    if (const toml::node* g = t.get("granularity")) {
        if (!g->is_string()) c.fail(*g, "'granularity' must be a string (element|line|whole)");
        try {
            s.granularity = parse_granularity(g->as_string()->get());
        } catch (const Error& e) {
            c.fail(*g, e.what());
        }
    }
    if (const toml::node* r = t.get("steps")) {
        const std::vector<dim_t> v = integer_list(c, *r, "'steps'");
        if (v.size() != 2) c.fail(*r, "'steps' must be [first, end): two integers");
        if (v[0] < 0 || v[1] < v[0])
            c.fail(*r, "'steps' = [" + std::to_string(v[0]) + ", " + std::to_string(v[1]) +
                           "]: need 0 <= first <= end");
        s.step_begin = v[0];
        s.step_end = v[1];
        s.steps_pos = c.at(*r);
    }
    if (const toml::node* o = t.get("start")) {
        s.step_start = as_integer(c, *o, "'start'");
        s.start_pos = c.at(*o);
        const std::int64_t end = s.step_end < 0 ? INT64_MAX : s.step_end;
        if (s.step_start < s.step_begin || s.step_start >= end)
            c.fail(*o, "'start' = " + std::to_string(s.step_start) + " must lie in 'steps' [" +
                           std::to_string(s.step_begin) + ", " +
                           (s.step_end < 0 ? std::string("end") : std::to_string(s.step_end)) +
                           ")");
    }
    if (const toml::node* h = t.get("highlights")) {
        if (!h->is_array()) c.fail(*h, "'highlights' must be an array of strings");
        check_count(c, *h, "'highlights'", h->as_array()->size(), kMaxListed);
        for (const toml::node& e : *h->as_array()) s.highlights.push_back(parse_highlight(c, e));
    }
    if (const toml::node* h = t.get("hide")) {
        if (!h->is_array() || h->as_array()->empty())
            c.fail(*h, "'hide' must be a non-empty array of strings like \"diff_src[0,2]\"");
        s.hide_pos = c.at(*h);
        for (const toml::node& e : *h->as_array())
            s.hide.push_back(parse_highlight(c, e, "'hide' entry"));
    }
    {
        std::size_t after = 0;
        if (reveal_line(s.narration, after) != std::string_view::npos && s.hide.empty())
            c.fail(*t.get("narration"),
                   "the narration's \"[reveal]\" line ends what shows "
                   "before a reveal: it needs the step's 'hide' cells");
    }
    if (const toml::node* sh = t.get("show")) {
        if (!sh->is_array()) c.fail(*sh, "'show' must be an array of tensor names");
        if (s.view != "tensors")
            c.fail(*sh, "'show' lists the panels of the tensors view; this step's view is '" +
                            s.view + "'");
        check_count(c, *sh, "'show'", sh->as_array()->size(), kMaxListed);
        for (const toml::node& e : *sh->as_array()) {
            if (!e.is_string()) c.fail(e, "a 'show' entry must be a tensor name (a string)");
            check_length(c, e, "a 'show' entry", e.as_string()->get().size(), kMaxName);
            s.show.emplace_back(e.as_string()->get());
            s.show_pos.push_back(c.at(e));
        }
    }
    if (const toml::node* pa = t.get("panels")) {
        if (!pa->is_array() || pa->as_array()->empty())
            c.fail(*pa, "'panels' must be a non-empty array of the tensor names the step draws");
        for (const toml::node& e : *pa->as_array()) {
            if (!e.is_string()) c.fail(e, "a 'panels' entry must be a tensor name (a string)");
            s.panels.emplace_back(e.as_string()->get());
            s.panels_pos.push_back(c.at(e));
        }
    }
    if (const toml::node* d = t.get("data")) {
        if (!s.has_problem) c.fail(*d, "'data' needs the step's 'problem'");
        parse_data(c, *d, s);
    } else if (defaults.has_data && !t.get("problem")) {  // the data of the lesson's problem
        s.data = defaults.data;
        s.seed = defaults.seed;
    }
    if (const toml::node* cmp = t.get("compare")) {
        if (!cmp->is_array()) c.fail(*cmp, "'compare' must be an array of \"pass:algo\" strings");
        check_count(c, *cmp, "'compare'", cmp->as_array()->size(), kMaxListed);
        for (const toml::node& e : *cmp->as_array()) {
            if (!e.is_string()) c.fail(e, "a 'compare' entry must be a string \"pass:algo\"");
            const std::string v(e.as_string()->get());
            const auto colon = v.find(':');
            if (colon == std::string::npos)
                c.fail(e, "compare '" + v + "': expected \"pass:algo\", e.g. bwd_data:col2im");
            try {
                find_algorithm(parse_pass(v.substr(0, colon)), v.substr(colon + 1));
            } catch (const Error& err) {
                c.fail(e, "compare '" + v + "': " + err.what());
            }
            if (!s.has_problem) c.fail(e, "'compare' needs the step's 'problem'");
            s.compare.push_back(v);
        }
    }
    if (const toml::node* ch = t.get("chart")) {
        s.chart = get_string(c, t, "chart", false, n, "a step");
        if (s.view != "timings")
            c.fail(*ch,
                   "'chart' goes with view = \"timings\"; this step's view is '" + s.view + "'");
        // The charts of a measurement of the compare list's passes (all three without one).
        std::vector<std::string> ids;
        bool fwd = s.compare.empty(), bwd_data = s.compare.empty();
        for (const char* pass : {"fwd", "bwd_data", "bwd_weight"}) {
            bool has = s.compare.empty();
            for (const auto& e : s.compare) has |= e.rfind(std::string(pass) + ":", 0) == 0;
            if (!has) continue;
            fwd |= std::string(pass) == "fwd";
            bwd_data |= std::string(pass) == "bwd_data";
            ids.push_back(std::string("ops_") + pass);
            ids.push_back(std::string("gflops_") + pass);
        }
        if (fwd && bwd_data) ids.insert(ids.begin(), "relative_bwd_data");
        if (std::find(ids.begin(), ids.end(), s.chart) == ids.end())
            c.fail(*ch, "chart '" + s.chart + "': the step's measurement (its 'compare' list) " +
                            "gives " + join(ids));
    }
    if (const toml::node* net = t.get("network")) {
        s.network = parse_network(c, *net);
    } else {
        s.network = defaults.network;
    }
    if (!s.has_problem && !s.network.present())
        c.fail(n, "a step needs a 'problem' (benchdnn descriptor) or a 'network'");
    if (const toml::node* ch = t.get("check")) {
        if (!ch->is_array()) c.fail(*ch, "checks are written [[step.check]]");
        check_count(c, *ch, "the step's checks", ch->as_array()->size(), kMaxChecks);
        for (const toml::node& e : *ch->as_array()) s.checks.push_back(parse_check(c, e));
    }
    return s;
}

}  // namespace

// [SECTION] Lesson

Lesson parse_lesson(std::string_view text, const std::string& file) {
    const Ctx c{file};
    toml::table root;
    try {
        root = toml::parse(text, file);
    } catch (const toml::parse_error& e) {
        throw LessonError(c.at(e.source()), "TOML syntax: " + std::string(e.description()));
    }
    only_keys(c, root, {"title", "audience", "summary", "problem", "data", "network", "step"},
              "the lesson");
    Defaults defaults;
    if (const toml::node* p = root.get("problem")) {
        defaults.problem = parse_problem(c, *p, defaults.problem_text);
        defaults.has_problem = true;
        defaults.problem_pos = c.at(*p);
    }
    if (const toml::node* d = root.get("data")) {
        if (!defaults.has_problem) c.fail(*d, "the lesson's [data] needs the lesson's 'problem'");
        Step tmp;
        parse_data(c, *d, tmp);
        defaults.data = std::move(tmp.data);
        defaults.seed = tmp.seed;
        defaults.has_data = true;
    }
    if (const toml::node* net = root.get("network")) defaults.network = parse_network(c, *net);
    Lesson l;
    l.file = file;
    l.title = get_string(c, root, "title", true, root, "the lesson");
    l.audience = get_string(c, root, "audience", true, root, "the lesson");
    l.summary = get_string(c, root, "summary", false, root, "the lesson");
    const toml::node* steps = root.get("step");
    if (!steps) throw LessonError({file, 1, 1}, "the lesson has no steps ([[step]] tables)");
    if (!steps->is_array()) c.fail(*steps, "steps are written [[step]]");
    check_count(c, *steps, "the lesson's steps", steps->as_array()->size(), kMaxSteps);
    for (const toml::node& s : *steps->as_array()) l.steps.push_back(parse_step(c, s, defaults));
    return l;
}

Lesson load_lesson(const std::string& path) {
    std::string text;
    try {
        text = read_input_file(path, kMaxLessonBytes, "a lesson file");
    } catch (const Error& e) {
        // "PATH: why" from the reader; the position carries the path.
        std::string why = e.what();
        if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);
        throw LessonError({path, 0, 0}, why);
    }
    return parse_lesson(text, path);
}

std::string narration_part(std::string_view text, bool revealed) {
    std::size_t after = 0;
    const std::size_t at = reveal_line(text, after);
    if (at == std::string_view::npos) return std::string(text);
    std::string before(text.substr(0, at));
    while (!before.empty() && before.back() == '\n') before.pop_back();
    if (!revealed) return before;
    return before + "\n" + std::string(text.substr(after));
}

namespace {
bool indented(std::string_view l) {
    return !l.empty() && (l[0] == ' ' || l[0] == '\t');
}

// A line that keeps its own line: blank, indented, or a list item.
bool own_line(std::string_view l) {
    if (l.empty() || indented(l)) return true;
    if (l.size() >= 2 && (l[0] == '-' || l[0] == '*') && l[1] == ' ') return true;
    std::size_t d = 0;
    while (d < l.size() && std::isdigit(static_cast<unsigned char>(l[d]))) ++d;
    return d > 0 && d + 1 < l.size() && l[d] == '.' && l[d + 1] == ' ';
}
}  // namespace

std::vector<std::string> wrap_words(std::string_view text, std::size_t chars) {
    std::vector<std::string> lines;
    std::istringstream in{std::string(text)};
    std::string word, line;
    while (in >> word) {
        if (!line.empty() && line.size() + 1 + word.size() > chars) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

std::string wrap_narration(std::string_view text, std::size_t width) {
    std::string out;
    std::istringstream lines{std::string(text)};
    bool first = true;
    for (std::string line; std::getline(lines, line); first = false) {
        if (!first) out += '\n';
        if (line.size() <= width) {
            out += line;
            continue;
        }
        const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
        const std::string indent(lead, ' ');
        const std::vector<std::string> wrapped =
            wrap_words(std::string_view(line).substr(lead), width > lead ? width - lead : 1);
        out += indent;  // (a line of blanks alone stays one)
        for (std::size_t i = 0; i < wrapped.size(); ++i)
            out += (i ? "\n" + indent : "") + wrapped[i];
    }
    return out;
}

std::string flow_narration(std::string_view text) {
    std::string out;
    std::string_view prev;  // the line before, empty at the start
    bool first = true;
    while (true) {
        const std::size_t nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        if (!first) {
            // A list item's continuation lines (not indented) join it too.
            const bool join = !prev.empty() && !own_line(line) && !indented(prev);
            out += join ? ' ' : '\n';
        }
        out += line;
        first = false;
        prev = line;
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

}  // namespace convlab::lesson
