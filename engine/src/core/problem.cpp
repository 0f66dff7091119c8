// Problem: derived sizes, validation, and the benchdnn-style descriptor (parse and print).
//
// Descriptor grammar (benchdnn's convolution descriptor, plus the pad-end extension):
//   [g N] [mb N] ic N [id N] [ih N] [iw N] oc N [od..ow N] [kd..kw N] [sd..sw N] [pd..pw N]
//   [pde..pwe N] [dd..dw N] [n"name"]
// in any order, '_' ignored between entries. The input keys select ndims (id -> 3-D, ih -> 2-D,
// iw -> 1-D). Per spatial axis the keys i, o, k, s, p, d (and our pe) describe one axis; an axis
// with no key at all copies the whole axis before it (square/cubic shapes: d -> h -> w), as
// benchdnn does. Within an axis that has keys, the input and kernel sizes are required, stride
// defaults to 1, dilation to 0 (0-based), and the padding follows benchdnn: given, or computed from
// the output size, or 0. The end padding is the begin padding unless the output size implies
// another one.
#include "convlab/problem.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

namespace convlab {

namespace {

constexpr dim_t kMaxSize = dim_t{1} << 31;      // largest size or |padding| a Problem may hold
constexpr dim_t kMaxElements = dim_t{1} << 34;  // largest src/wei/dst element count
constexpr dim_t kMaxMacs = dim_t{1} << 56;      // largest multiply-add count of a pass
constexpr const char* kMaxSizeText = "2^31 (2147483648)";

constexpr char kAxisLetters[3] = {'d', 'h', 'w'};

std::string num(dim_t v) {
    return std::to_string(v);
}

// The number of valid spatial axes to look at, robust against a broken ndims.
int axes_of(int ndims) {
    return std::clamp(ndims, 0, kMaxSpatial);
}

// Exact product, or nullopt when it does not fit in dim_t.
std::optional<dim_t> product(std::initializer_list<dim_t> factors, const SpatialDims& spatial,
                             int n) {
    dim_t acc = 1;
    auto mul = [&acc](dim_t v) { return !__builtin_mul_overflow(acc, v, &acc); };
    for (dim_t f : factors)
        if (!mul(f)) return std::nullopt;
    for (int i = 0; i < n; ++i)
        if (!mul(spatial[i])) return std::nullopt;
    return acc;
}

// The end padding that, with begin padding pb, makes an axis of input i, effective kernel k_eff
// and stride s produce exactly o outputs, by the descriptor's rule: symmetric if that works, else
// the padding implied by o; a negative implied padding is a leftover row (end padding 0) when
// that reproduces o. nullopt when o would need a crop.
std::optional<dim_t> implied_pad_end(dim_t i, dim_t k_eff, dim_t s, dim_t pb, dim_t o) {
    auto gives_o = [&](dim_t pe) {
        const dim_t span = i + pb + pe - k_eff;
        return span >= 0 && span / s + 1 == o;
    };
    if (gives_o(pb)) return pb;
    const dim_t implied = (o - 1) * s + k_eff - i - pb;
    if (implied >= 0) return implied;
    if (gives_o(0)) return 0;
    return std::nullopt;
}

// benchdnn's padding computed from the output size (symmetric, rounded down), clamped at 0.
dim_t pad_from_out(dim_t i, dim_t k_eff, dim_t s, dim_t o) {
    return std::max<dim_t>(0, ((o - 1) * s - i + k_eff) / 2);
}

// A descriptor excerpt for messages: printable ASCII, long strings shortened.
std::string show(std::string_view s, std::size_t limit = 160) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (s.size() > limit) out += "...";
    return out;
}

// ---------------------------------------------------------------------------------------------
// Parsing

enum Family { kIn, kOut, kKer, kStr, kPad, kDil, kPadEnd, kNumFamilies };
constexpr const char* kFamilyPrefix[kNumFamilies] = {"i", "o", "k", "s", "p", "d", "p"};

struct Entry {
    bool given = false;
    dim_t value = 0;
    std::size_t pos = 0;
};

// Resolved values of one axis (dilation 1 = none).
struct Axis {
    dim_t in = 1, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
    bool operator==(const Axis&) const = default;
};

std::string key_name(int family, int axis) {
    std::string k = kFamilyPrefix[family];
    k += kAxisLetters[axis];
    if (family == kPadEnd) k += 'e';
    return k;
}

class Parser {
  public:
    explicit Parser(std::string_view desc) : desc_(desc) {}

    Problem run() {
        std::size_t pos = 0, end = desc_.size();
        while (pos < end && is_space(desc_[pos])) ++pos;
        while (end > pos && is_space(desc_[end - 1])) --end;
        if (pos == end)
            fail("empty descriptor: it needs at least ic, oc, an input size and a kernel");
        while (pos < end) pos = entry(pos, end);
        return build();
    }

  private:
    static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
    static bool is_digit(char c) { return c >= '0' && c <= '9'; }
    static bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

    [[noreturn]] void fail(const std::string& msg) const {
        throw Error(msg + " in descriptor '" + show(desc_) + "'");
    }

    static std::string at(std::size_t pos) { return " at position " + std::to_string(pos); }

    Entry* lookup(std::string_view key) {
        if (key == "g") return &g_;
        if (key == "mb") return &mb_;
        if (key == "ic") return &ic_;
        if (key == "oc") return &oc_;
        const bool pad_end = key.size() == 3 && key[0] == 'p' && key[2] == 'e';
        if (key.size() != 2 && !pad_end) return nullptr;
        int axis = -1;
        for (int a = 0; a < 3; ++a)
            if (key[1] == kAxisLetters[a]) axis = a;
        if (axis < 0) return nullptr;
        if (pad_end) return &axes_[axis][kPadEnd];
        for (int f = 0; f < kPadEnd; ++f)
            if (key[0] == kFamilyPrefix[f][0]) return &axes_[axis][f];
        return nullptr;
    }

    // Parses one entry starting at pos; returns the position after it.
    std::size_t entry(std::size_t pos, std::size_t end) {
        const char c = desc_[pos];
        if (c == '_') return pos + 1;
        if (c == 'n') return name(pos, end);
        if (is_digit(c)) fail("number without a key" + at(pos) + " (a number must follow a key)");
        if (!is_letter(c))
            fail("unexpected character '" + show(desc_.substr(pos, 1)) + "'" + at(pos));
        // The longest key that prefixes the text (benchdnn matches keys as prefixes too).
        Entry* e = nullptr;
        std::size_t k = pos;
        for (std::size_t len = 3; len >= 1 && !e; --len) {
            if (pos + len > end) continue;
            e = lookup(desc_.substr(pos, len));
            if (e) k = pos + len;
        }
        if (!e) {
            while (k < end && is_letter(desc_[k])) ++k;
            fail("unknown key '" + show(desc_.substr(pos, k - pos), 40) + "'" + at(pos) +
                 " (keys: g mb ic id ih iw oc od oh ow kd kh kw sd sh sw pd ph pw pde phe pwe "
                 "dd dh dw n\"name\")");
        }
        const std::string_view key = desc_.substr(pos, k - pos);
        const std::string k_text(key);
        if (k == end || !is_digit(desc_[k])) {
            if (k < end && desc_[k] == '-')
                fail("'" + k_text + "'" + at(pos) +
                     " has a negative value: descriptor numbers must be >= 0");
            fail("missing number after key '" + k_text + "'" + at(pos));
        }
        std::size_t n = k;
        dim_t value = 0;
        bool too_large = false;
        while (n < end && is_digit(desc_[n])) {
            if (!too_large) {
                value = value * 10 + (desc_[n] - '0');
                too_large = value > kMaxSize;
            }
            ++n;
        }
        if (too_large)
            fail("'" + k_text + "' = " + show(desc_.substr(k, n - k), 40) + at(pos) +
                 " is too large: descriptor numbers must be <= " + kMaxSizeText);
        if (e->given)
            fail("key '" + k_text + "' given twice (positions " + std::to_string(e->pos) + " and " +
                 std::to_string(pos) + ")");
        *e = Entry{true, value, pos};
        return n;
    }

    // n"name" (with \" and \\ escapes), the last entry; or benchdnn's unquoted form, where the
    // rest of the descriptor is the name.
    std::size_t name(std::size_t pos, std::size_t end) {
        std::size_t i = pos + 1;
        if (i >= end || desc_[i] != '"') {
            name_ = std::string(desc_.substr(i, end - i));
            return end;
        }
        ++i;
        std::string s;
        for (;;) {
            if (i >= end) fail("name starting" + at(pos) + " has no closing quote");
            const char c = desc_[i];
            if (c == '"') break;
            if (c == '\\') {
                if (i + 1 >= end) fail("name starting" + at(pos) + " has no closing quote");
                s += desc_[i + 1];
                i += 2;
                continue;
            }
            s += c;
            ++i;
        }
        ++i;  // the closing quote
        for (std::size_t j = i; j < end; ++j)
            if (desc_[j] != '_')
                fail("unexpected text after the name" + at(j) +
                     " (the name must be the last entry)");
        name_ = std::move(s);
        return end;
    }

    bool axis_has_keys(int a) const {
        for (const Entry& e : axes_[a])
            if (e.given) return true;
        return false;
    }

    std::string first_key_of(int a) const {
        for (int f = 0; f < kNumFamilies; ++f)
            if (axes_[a][f].given) return "'" + key_name(f, a) + "'" + at(axes_[a][f].pos);
        return "";
    }

    Axis resolve(int a) const {
        const auto& e = axes_[a];
        auto key = [a](int f) { return "'" + key_name(f, a) + "'"; };
        if (!e[kIn].given)
            fail("missing spatial size " + key(kIn) + ": axis " + kAxisLetters[a] + " has keys (" +
                 first_key_of(a) + ") but no input size");
        if (!e[kKer].given)
            fail("missing kernel size " + key(kKer) + ": axis " + kAxisLetters[a] + " needs one");
        Axis x;
        x.in = e[kIn].value;
        x.kernel = e[kKer].value;
        x.stride = e[kStr].given ? e[kStr].value : 1;
        x.dilation = e[kDil].given ? e[kDil].value + 1 : 1;
        const dim_t k_eff = (x.kernel - 1) * x.dilation + 1;
        if (e[kPad].given) {
            x.pad_begin = e[kPad].value;
        } else if (e[kOut].given) {
            x.pad_begin = pad_from_out(x.in, k_eff, x.stride, e[kOut].value);
            if (x.pad_begin > kMaxSize)
                fail("the padding implied by " + key(kOut) + " = " + num(e[kOut].value) + " is " +
                     num(x.pad_begin) + ": padding must be <= " + kMaxSizeText);
        }
        if (e[kPadEnd].given) {
            x.pad_end = e[kPadEnd].value;
        } else if (!e[kOut].given) {
            x.pad_end = x.pad_begin;
        } else {
            const dim_t o = e[kOut].value;
            const auto pe = implied_pad_end(x.in, k_eff, x.stride, x.pad_begin, o);
            if (!pe)
                fail(key(kOut) + " = " + num(o) + " would need a crop: with " + key(kIn) + " " +
                     num(x.in) + ", " + key(kKer) + " " + num(x.kernel) + " (dilation " +
                     num(x.dilation) + "), " + key(kStr) + " " + num(x.stride) + " and " +
                     key(kPad) + " " + num(x.pad_begin) + ", the end padding it implies is " +
                     num((o - 1) * x.stride + k_eff - x.in - x.pad_begin) +
                     " and end padding 0 does not give it either; descriptors cannot crop");
            x.pad_end = *pe;
        }
        if (e[kOut].given) {
            // Only an explicit end padding can disagree with the output size here; a kernel that
            // does not fit is left to validate(), whose message says so.
            const dim_t span = x.in + x.pad_begin + x.pad_end - k_eff;
            if (span >= 0 && span / x.stride + 1 != e[kOut].value)
                fail(key(kOut) + " = " + num(e[kOut].value) +
                     " contradicts the other keys of axis " + kAxisLetters[a] + ", which give " +
                     num(span / x.stride + 1) + " (" + key(kIn) + " " + num(x.in) + ", " +
                     key(kKer) + " " + num(x.kernel) + ", dilation " + num(x.dilation) + ", " +
                     key(kStr) + " " + num(x.stride) + ", padding " + num(x.pad_begin) + " + " +
                     num(x.pad_end) + ")");
        }
        return x;
    }

    Problem build() const {
        auto positive = [this](const Entry& e, const std::string& key) {
            if (e.given && e.value == 0)
                fail("'" + key + "' = 0" + at(e.pos) + ": " + key + " must be >= 1");
        };
        positive(g_, "g");
        positive(mb_, "mb");
        positive(ic_, "ic");
        positive(oc_, "oc");
        for (int a = 0; a < 3; ++a)
            for (int f : {kIn, kOut, kKer, kStr}) positive(axes_[a][f], key_name(f, a));
        if (!ic_.given) fail("missing 'ic' (input channels)");
        if (!oc_.given) fail("missing 'oc' (output channels)");

        int first = -1;  // the outermost spatial axis: 0 = d (3-D), 1 = h (2-D), 2 = w (1-D)
        for (int a = 2; a >= 0; --a)
            if (axes_[a][kIn].given) first = a;
        if (first < 0) fail("missing spatial size: give 'id' (3-D), 'ih' (2-D) or 'iw' (1-D)");
        for (int a = 0; a < first; ++a)
            if (axis_has_keys(a))
                fail(first_key_of(a) + " is for axis " + kAxisLetters[a] + ", but without 'i" +
                     kAxisLetters[a] + "' the descriptor is " + std::to_string(3 - first) + "-D");

        Problem p;
        p.ndims = 3 - first;
        p.mb = mb_.given ? mb_.value : 2;
        p.ic = ic_.value;
        p.oc = oc_.value;
        p.groups = g_.given ? g_.value : 1;
        p.name = name_;
        Axis prev;
        for (int a = first; a < 3; ++a) {
            const Axis x = (a > first && !axis_has_keys(a)) ? prev : resolve(a);
            const int i = a - first;
            p.in[i] = x.in;
            p.kernel[i] = x.kernel;
            p.stride[i] = x.stride;
            p.dilation[i] = x.dilation;
            p.pad_begin[i] = x.pad_begin;
            p.pad_end[i] = x.pad_end;
            prev = x;
        }
        const std::string msg = p.validate();
        if (!msg.empty()) fail(msg);
        return p;
    }

    std::string_view desc_;
    Entry g_, mb_, ic_, oc_;
    Entry axes_[3][kNumFamilies];
    std::string name_;
};

std::string quoted_name(const std::string& name) {
    std::string s = "n\"";
    for (char c : name) {
        if (c == '"' || c == '\\') s += '\\';
        s += c;
    }
    return s + '"';
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Derived sizes

dim_t Problem::in_spatial() const {
    dim_t r = 1;
    for (int i = 0; i < axes_of(ndims); ++i) r *= in[i];
    return r;
}

dim_t Problem::out_spatial() const {
    dim_t r = 1;
    for (int i = 0; i < axes_of(ndims); ++i) r *= out(i);
    return r;
}

dim_t Problem::kernel_spatial() const {
    dim_t r = 1;
    for (int i = 0; i < axes_of(ndims); ++i) r *= kernel[i];
    return r;
}

double Problem::flops() const {
    return 2.0 * static_cast<double>(mb) * static_cast<double>(oc) * static_cast<double>(icg()) *
           static_cast<double>(out_spatial()) * static_cast<double>(kernel_spatial());
}

namespace {

// sum over i in [0, n) of floor((a*i + b) / m), for m > 0 (the classic Euclid-like reduction,
// O(log) steps). Unsigned arithmetic wraps, but every step is a ring operation on the sum, so the
// result is exact whenever it fits in 64 bits.
std::uint64_t floor_sum(std::uint64_t n, std::uint64_t m, std::uint64_t a, std::uint64_t b) {
    std::uint64_t sum = 0;
    while (n > 0) {
        if (a >= m) {
            sum += (n % 2 == 0 ? n / 2 * (n - 1) : (n - 1) / 2 * n) * (a / m);
            a %= m;
        }
        if (b >= m) {
            sum += n * (b / m);
            b %= m;
        }
        const std::uint64_t y_max = a * n + b;
        if (y_max < m) break;
        n = y_max / m;
        b = y_max % m;
        std::swap(m, a);
    }
    return sum;
}

dim_t floor_div(dim_t x, dim_t y) {
    return x >= 0 ? x / y : -((-x + y - 1) / y);
}

// #{(o, k) : 0 <= o < n_out, 0 <= k < n_k, o*s + k*d <= t}, in closed form: a kernel or an output
// of 2^31 along one axis is valid, and counting it tap by tap would take seconds.
std::uint64_t pairs_at_most(dim_t t, dim_t n_out, dim_t n_k, dim_t s, dim_t d) {
    if (t < 0 || n_out <= 0 || n_k <= 0) return 0;
    const dim_t k_max = std::min(n_k - 1, t / d);  // taps with at least o = 0
    // Taps k <= k_full reach every output: t - k*d >= (n_out - 1)*s.
    const dim_t k_full = std::min(k_max, floor_div(t - (n_out - 1) * s, d));
    std::uint64_t count = 0;
    if (k_full >= 0)
        count += static_cast<std::uint64_t>(n_out) * static_cast<std::uint64_t>(k_full + 1);
    const dim_t first = std::max<dim_t>(k_full + 1, 0);
    if (first <= k_max) {
        // sum over k in [first, k_max] of floor((t - k*d) / s) + 1; with i = k_max - k the
        // numerator is (t - k_max*d) + i*d >= 0.
        const auto n = static_cast<std::uint64_t>(k_max - first + 1);
        count += n + floor_sum(n, static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(d),
                               static_cast<std::uint64_t>(t - k_max * d));
    }
    return count;
}

}  // namespace

double Problem::flops_no_pad() const {
    double taps = 1;  // product over the axes of the in-bounds (out, tap) pairs
    for (int i = 0; i < axes_of(ndims); ++i) {
        // Pair (o, k) reads input o*s - pad + k*d, inside when pad <= o*s + k*d <= in - 1 + pad.
        const dim_t n_out = out(i), n_k = kernel[i], s = stride[i], d = dilation[i];
        const dim_t p = pad_begin[i];
        const std::uint64_t pairs =
            pairs_at_most(in[i] - 1 + p, n_out, n_k, s, d) - pairs_at_most(p - 1, n_out, n_k, s, d);
        taps *= static_cast<double>(pairs);
    }
    return 2.0 * static_cast<double>(mb) * static_cast<double>(oc) * static_cast<double>(icg()) *
           taps;
}

std::vector<dim_t> Problem::src_dims() const {
    std::vector<dim_t> d{mb, ic};
    for (int i = 0; i < axes_of(ndims); ++i) d.push_back(in[i]);
    return d;
}

std::vector<dim_t> Problem::wei_dims() const {
    std::vector<dim_t> d{oc, icg()};
    for (int i = 0; i < axes_of(ndims); ++i) d.push_back(kernel[i]);
    return d;
}

std::vector<dim_t> Problem::dst_dims() const {
    std::vector<dim_t> d{mb, oc};
    for (int i = 0; i < axes_of(ndims); ++i) d.push_back(out(i));
    return d;
}

const char* Problem::axis_name(int i) const {
    static const char* const names[3] = {"d", "h", "w"};
    if (ndims < 1 || ndims > kMaxSpatial || i < 0 || i >= ndims) return "?";
    return names[kMaxSpatial - ndims + i];
}

// ---------------------------------------------------------------------------------------------
// Validation

std::string Problem::validate(bool allow_crop) const {
    if (ndims < 1 || ndims > kMaxSpatial)
        return "ndims = " + std::to_string(ndims) + ": ndims must be 1, 2 or 3";

    const std::pair<const char*, dim_t> scalars[] = {
        {"mb", mb}, {"ic", ic}, {"oc", oc}, {"groups", groups}};
    for (const auto& [field, v] : scalars) {
        const std::string head = std::string(field) + " = " + num(v) + ": " + field;
        if (v < 1) return head + " must be >= 1";
        if (v > kMaxSize) return head + " must be <= " + kMaxSizeText;
    }
    if (ic % groups != 0)
        return "ic = " + num(ic) + ", groups = " + num(groups) + ": groups must divide ic";
    if (oc % groups != 0)
        return "oc = " + num(oc) + ", groups = " + num(groups) + ": groups must divide oc";

    for (int i = 0; i < ndims; ++i) {
        const std::string idx = "[" + std::to_string(i) + "] = ";
        struct Size {
            const char* field;
            const char* what;
            dim_t v;
        };
        const Size sizes[] = {{"in", "input size", in[i]},
                              {"kernel", "kernel size", kernel[i]},
                              {"stride", "stride", stride[i]},
                              {"dilation", "dilation", dilation[i]}};
        for (const auto& s : sizes) {
            const std::string head = s.field + idx + num(s.v) + ": " + s.what;
            if (s.v < 1) return head + " must be >= 1";
            if (s.v > kMaxSize) return head + " must be <= " + kMaxSizeText;
        }
        const std::pair<const char*, dim_t> pads[] = {{"pad_begin", pad_begin[i]},
                                                      {"pad_end", pad_end[i]}};
        for (const auto& [field, v] : pads) {
            const std::string head = field + idx + num(v) + ": padding";
            if (v < 0 && !allow_crop) return head + " must be >= 0";
            if (v < -kMaxSize) return head + " must be >= -" + kMaxSizeText;
            if (v > kMaxSize) return head + " must be <= " + kMaxSizeText;
        }
        if (kernel_extent(i) > padded_in(i))
            return "kernel" + idx + num(kernel[i]) + " with dilation " + num(dilation[i]) +
                   " spans " + num(kernel_extent(i)) + " > padded input " + num(padded_in(i)) +
                   " (in " + num(in[i]) + " + pad_begin " + num(pad_begin[i]) + " + pad_end " +
                   num(pad_end[i]) + ")";
        // Padding alone can make the output larger than any input; descriptors must print it.
        if (out(i) > kMaxSize)
            return "out(" + std::to_string(i) + ") = " + num(out(i)) +
                   ": output size must be <= " + kMaxSizeText;
    }

    SpatialDims outs{1, 1, 1};
    for (int i = 0; i < ndims; ++i) outs[i] = out(i);
    const std::pair<const char*, std::optional<dim_t>> counts[] = {
        {"src", product({mb, ic}, in, ndims)},
        {"wei", product({oc, icg()}, kernel, ndims)},
        {"dst", product({mb, oc}, outs, ndims)}};
    for (const auto& [tensor, n] : counts) {
        if (!n)
            return std::string(tensor) +
                   " would hold more than 2^63 elements: more than the 2^34 limit";
        if (*n > kMaxElements)
            return std::string(tensor) + " would hold " + num(*n) +
                   " elements: more than the 2^34 limit";
    }
    // Every work size the engine forms (a column matrix C/G * prod(k) * prod(out), its images
    // side by side, panels rounded up to 32 channels) is a factor of the multiply-adds, which
    // this bound keeps far from 2^63 (2^56 is days of work at any speed).
    const std::optional<dim_t> taps = product({mb, oc, icg()}, kernel, ndims);
    const std::optional<dim_t> macs = taps ? product({*taps}, outs, ndims) : std::nullopt;
    if (!macs || *macs > kMaxMacs)
        return "multiply-adds N*K*(C/G)*prod(out)*prod(kernel) = " +
               (macs ? num(*macs) : std::string("more than 2^63")) + ": more than the 2^56 limit";
    return "";
}

void Problem::check(bool allow_crop) const {
    std::string msg = validate(allow_crop);
    if (!msg.empty()) throw Error(msg);
}

// ---------------------------------------------------------------------------------------------
// Descriptor

Problem parse_descriptor(std::string_view desc) {
    return Parser(desc).run();
}

std::string to_descriptor(const Problem& p) {
    const bool valid = p.validate().empty();
    const int n = valid ? p.ndims : std::clamp(p.ndims, 1, kMaxSpatial);
    const int first = kMaxSpatial - n;  // letter index of axis 0
    auto letter = [first](int i) { return kAxisLetters[first + i]; };
    auto axis = [&p](int i) {
        return Axis{p.in[i], p.kernel[i], p.stride[i], p.dilation[i], p.pad_begin[i], p.pad_end[i]};
    };

    // An axis equal to the one before it is left out: parse copies the previous axis. An invalid
    // problem (which cannot round-trip anyway) is printed with every axis and no derived size.
    bool printed[kMaxSpatial] = {};
    for (int i = 0; i < n; ++i) printed[i] = !valid || i == 0 || !(axis(i) == axis(i - 1));

    std::string s;
    auto family = [&](char prefix, auto value) {
        for (int i = 0; i < n; ++i)
            if (printed[i]) s += prefix + std::string(1, letter(i)) + num(value(i));
    };
    if (p.groups != 1) s += "g" + num(p.groups);
    s += "mb" + num(p.mb) + "ic" + num(p.ic);
    family('i', [&p](int i) { return p.in[i]; });
    s += "oc" + num(p.oc);
    if (valid) family('o', [&p](int i) { return p.out(i); });
    family('k', [&p](int i) { return p.kernel[i]; });

    bool print_stride = !valid, print_pad = !valid, print_dil = !valid;
    for (int i = 0; i < n; ++i) {
        print_stride = print_stride || p.stride[i] != 1;
        print_dil = print_dil || p.dilation[i] != 1;
        // Without p keys, parse takes the padding from the output size.
        print_pad =
            print_pad || p.pad_begin[i] != 0 ||
            (printed[i] && pad_from_out(p.in[i], p.kernel_extent(i), p.stride[i], p.out(i)) != 0);
    }
    if (print_stride) family('s', [&p](int i) { return p.stride[i]; });
    if (print_pad) family('p', [&p](int i) { return p.pad_begin[i]; });
    for (int i = 0; i < n; ++i) {
        if (!printed[i]) continue;
        // The extension key only where parse's rule would derive another end padding.
        const bool needed = !valid || implied_pad_end(p.in[i], p.kernel_extent(i), p.stride[i],
                                                      p.pad_begin[i], p.out(i)) != p.pad_end[i];
        if (needed) s += "p" + std::string(1, letter(i)) + "e" + num(p.pad_end[i]);
    }
    if (print_dil) family('d', [&p](int i) { return p.dilation[i] - 1; });
    if (!p.name.empty()) s += quoted_name(p.name);
    return s;
}

}  // namespace convlab
