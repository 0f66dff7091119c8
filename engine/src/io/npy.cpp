// .npy reading and writing (NumPy format 1.0 / 2.0 / 3.0), fp32 little-endian C order only.
//
// File layout: "\x93NUMPY", major, minor, header length (uint16 LE for 1.0, uint32 LE for 2.0 and
// 3.0), then the header: a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ended by '\n' so that the data starts at a multiple of 64 bytes, then the
// data, C order. Every refusal names the file and what it holds against what is expected.
#include "convlab/npy.hpp"
#include "bit_cast.hpp"

#include "convlab/output_file.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace convlab {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
// The longest header read. Version 2.0 / 3.0 allow four GiB, but a header is a shape and a few
// words: 1 MiB holds a shape of over 300000 dimensions (write_npy writes any rank), and a larger
// header is refused before it is allocated.
constexpr std::size_t kMaxHeaderBytes = std::size_t{1} << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error(path + ": " + what);
}

// One open FILE*, closed on scope exit.
struct File {
    std::FILE* f = nullptr;
    File() = default;
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    ~File() {
        if (f) std::fclose(f);
    }
};

// [SECTION] header dict parsing

// A value of the header dict: a string, a bool, or a tuple of non-negative integers.
struct HeaderValue {
    enum class Kind { String, Bool, Tuple, Other } kind = Kind::Other;
    std::string str;
    bool boolean = false;
    std::vector<dim_t> tuple;
};

// Parses the Python literal that np.save writes (and what a person writing one by hand would
// reasonably write): {'key': value, ...} with string, True/False and integer-tuple values.
class HeaderParser {
  public:
    HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

    std::map<std::string, HeaderValue> parse_dict() {
        std::map<std::string, HeaderValue> dict;
        skip_ws();
        expect('{');
        for (;;) {
            skip_ws();
            if (peek() == '}') {
                ++i_;
                break;
            }
            std::string key = parse_string();
            skip_ws();
            expect(':');
            skip_ws();
            HeaderValue v = parse_value();
            if (!dict.emplace(key, std::move(v)).second) bad("key '" + key + "' given twice");
            skip_ws();
            if (peek() == ',') {
                ++i_;
                continue;
            }
            skip_ws();
            expect('}');
            break;
        }
        skip_ws();
        if (i_ != s_.size()) bad("unexpected text after the header dict");
        return dict;
    }

  private:
    std::string_view s_;
    const std::string& path_;
    std::size_t i_ = 0;

    [[noreturn]] void bad(const std::string& what) const {
        fail(path_, "malformed .npy header (" + what + ")");
    }
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    void skip_ws() {
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }
    void expect(char c) {
        if (peek() != c)
            bad(std::string("expected '") + c + "' at byte " + std::to_string(i_) +
                " of the header");
        ++i_;
    }
    std::string parse_string() {
        const char q = peek();
        if (q != '\'' && q != '"') bad("expected a quoted key at byte " + std::to_string(i_));
        ++i_;
        const std::size_t end = s_.find(q, i_);
        if (end == std::string_view::npos) bad("unterminated string");
        std::string r(s_.substr(i_, end - i_));
        i_ = end + 1;
        return r;
    }
    bool match_word(std::string_view w) {
        if (s_.substr(i_, w.size()) != w) return false;
        i_ += w.size();
        return true;
    }
    dim_t parse_int() {
        if (peek() == '-') bad("negative dimension in shape");
        if (peek() < '0' || peek() > '9') bad("expected an integer in shape");
        dim_t v = 0;
        while (peek() >= '0' && peek() <= '9') {
            const int digit = peek() - '0';
            if (v > (std::numeric_limits<dim_t>::max() - digit) / 10)
                bad("dimension in shape does not fit in 64 bits");
            v = v * 10 + digit;
            ++i_;
        }
        if (peek() == 'L') ++i_;  // Python 2 long suffix, written by old NumPy
        return v;
    }
    HeaderValue parse_value() {
        HeaderValue v;
        const char c = peek();
        if (c == '\'' || c == '"') {
            v.kind = HeaderValue::Kind::String;
            v.str = parse_string();
        } else if (match_word("True")) {
            v.kind = HeaderValue::Kind::Bool;
            v.boolean = true;
        } else if (match_word("False")) {
            v.kind = HeaderValue::Kind::Bool;
            v.boolean = false;
        } else if (c == '(') {
            ++i_;
            v.kind = HeaderValue::Kind::Tuple;
            skip_ws();
            while (peek() != ')') {
                v.tuple.push_back(parse_int());
                skip_ws();
                if (peek() == ',') {
                    ++i_;
                    skip_ws();
                } else if (peek() != ')') {
                    bad("expected ',' or ')' in shape");
                }
            }
            ++i_;
        } else if (c == '[') {
            // A structured dtype's descr is a list of fields: skip it, balanced, so the dtype
            // check can say what it is.
            int depth = 0;
            do {
                if (peek() == '\0') bad("unterminated list");
                if (peek() == '[') ++depth;
                if (peek() == ']') --depth;
                ++i_;
            } while (depth > 0);
            v.kind = HeaderValue::Kind::Other;
            v.str = "structured";
        } else {
            bad("unexpected value at byte " + std::to_string(i_));
        }
        return v;
    }
};

// "float64", "big-endian float32", "int32", ... for a NumPy type string such as '>f4'.
std::string describe_descr(std::string_view d) {
    if (d.size() < 2) return "unknown type";
    const char order = d[0];
    const char kind = d[1];
    const std::string_view size = d.substr(2);
    int bytes = 0;
    for (char c : size) {
        if (c < '0' || c > '9') return "unknown type";
        bytes = bytes * 10 + (c - '0');
        if (bytes > 1000) return "unknown type";
    }
    std::string name;
    const std::string bits = std::to_string(bytes * 8);
    switch (kind) {
        case 'f':
            name = "float" + bits;
            break;
        case 'i':
            name = "int" + bits;
            break;
        case 'u':
            name = "uint" + bits;
            break;
        case 'c':
            name = "complex" + bits;
            break;
        case 'b':
            name = "bool";
            break;
        case 'U':
            name = "unicode string";
            break;
        case 'S':
            name = "byte string";
            break;
        case 'O':
            name = "Python object";
            break;
        case 'M':
            name = "datetime64";
            break;
        case 'm':
            name = "timedelta64";
            break;
        case 'V':
            name = "void";
            break;
        default:
            return "unknown type";
    }
    if (order == '>' && bytes > 1) name += ", big-endian";
    return name;
}

// The element count of `shape` as bytes of fp32, or nullopt when it exceeds the tensor limit
// (checked before any multiplication can overflow).
std::optional<std::size_t> fp32_bytes(const std::vector<dim_t>& shape) {
    const std::size_t limit = kMaxTensorBytes / sizeof(float);
    std::size_t n = 1;
    for (dim_t d : shape)
        if (d == 0) return 0;
    for (dim_t d : shape) {
        if (static_cast<std::size_t>(d) > limit / n) return std::nullopt;
        n *= static_cast<std::size_t>(d);
    }
    return n * sizeof(float);
}

// Used only on big-endian machines (the calls sit under `if constexpr`).
[[maybe_unused]] float byteswap(float v) {
    const auto u = detail::bit_cast<std::uint32_t>(v);
    return detail::bit_cast<float>((u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) |
                                   (u << 24));
}

std::uint32_t le32(const unsigned char* p) {
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
           std::uint32_t{p[3]} << 24;
}

std::string shape_tuple(const std::vector<dim_t>& dims) {
    std::string s = "(";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    if (dims.size() == 1) s += ",";
    return s + ")";
}

}  // namespace

// [SECTION] read

Tensor read_npy(const std::string& path) {
    // The largest file a tensor may come from: its data plus the longest header read.
    File file;
    std::uintmax_t file_size = 0;
    file.f =
        open_input_file(path, kMaxTensorBytes + 12 + kMaxHeaderBytes, "an .npy file", &file_size);

    // Preamble: magic (6), version (2), header length (2 or 4).
    unsigned char pre[12] = {};
    const std::size_t got = std::fread(pre, 1, sizeof pre, file.f);
    if (got == 0) fail(path, "empty file, not an .npy file");
    if (got < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0)
        fail(path, "not an .npy file (it does not start with \"\\x93NUMPY\")");
    if (got < 10)
        fail(path, "truncated .npy header: the file ends after " + std::to_string(got) + " bytes");
    const int major = pre[6];
    const int minor = pre[7];
    std::size_t header_len = 0;
    std::size_t prefix = 0;
    if (major == 1) {
        header_len = std::size_t{pre[8]} | std::size_t{pre[9]} << 8;
        prefix = 10;
    } else if (major == 2 || major == 3) {
        if (got < 12)
            fail(path,
                 "truncated .npy header: the file ends after " + std::to_string(got) + " bytes");
        header_len = le32(pre + 8);
        prefix = 12;
    } else {
        fail(path, "unsupported .npy format version " + std::to_string(major) + "." +
                       std::to_string(minor) + ": expected 1.0, 2.0 or 3.0");
    }
    if (header_len > kMaxHeaderBytes)
        fail(path, ".npy header of " + std::to_string(header_len) + " bytes: at most " +
                       std::to_string(kMaxHeaderBytes) + " are read (a shape and a few words)");
    if (file_size < prefix + header_len)
        fail(path, "truncated .npy header: it declares " + std::to_string(header_len) +
                       " bytes, the file holds " +
                       std::to_string(file_size > prefix ? file_size - prefix : 0));

    std::string header(header_len, '\0');
    if (std::fseek(file.f, static_cast<long>(prefix), SEEK_SET) != 0 ||
        std::fread(header.data(), 1, header_len, file.f) != header_len)
        fail(path, "cannot read the .npy header: " + std::string(std::strerror(errno)));

    // Header dict: exactly the three keys np.save writes.
    const auto dict = HeaderParser(header, path).parse_dict();
    for (const auto& [key, value] : dict)
        if (key != "descr" && key != "fortran_order" && key != "shape")
            fail(path, "unexpected key '" + key +
                           "' in the .npy header: expected descr, fortran_order and shape");
    const auto get = [&](const char* key, HeaderValue::Kind kind,
                         const char* what) -> const HeaderValue& {
        const auto it = dict.find(key);
        if (it == dict.end()) fail(path, std::string(".npy header has no '") + key + "'");
        if (it->second.kind != kind &&
            !(kind == HeaderValue::Kind::String && it->second.kind == HeaderValue::Kind::Other))
            fail(path, std::string(".npy header: '") + key + "' must be " + what);
        return it->second;
    };
    const HeaderValue& descr = get("descr", HeaderValue::Kind::String, "a type string");
    const HeaderValue& fortran = get("fortran_order", HeaderValue::Kind::Bool, "True or False");
    const HeaderValue& shape = get("shape", HeaderValue::Kind::Tuple, "a tuple of integers");

    if (descr.kind == HeaderValue::Kind::Other)
        fail(path, "structured dtype: expected '<f4' (fp32 little-endian)");
    const bool native_le = std::endian::native == std::endian::little;
    if (descr.str != "<f4" && !(descr.str == "=f4" && native_le))
        fail(path, "dtype '" + descr.str + "' (" + describe_descr(descr.str) +
                       "): expected '<f4' (fp32 little-endian)");
    if (fortran.boolean)
        fail(path, "fortran_order is True: expected C order (save np.ascontiguousarray(a))");

    const auto need = fp32_bytes(shape.tuple);
    if (!need)
        fail(path, "shape " + dims_str(shape.tuple) +
                       " has more elements than a tensor may hold (" +
                       std::to_string(kMaxTensorBytes >> 30) + " GiB of fp32)");
    const std::uintmax_t have = file_size - prefix - header_len;
    if (have != *need)
        fail(path, "data holds " + std::to_string(have) + " bytes, shape " + dims_str(shape.tuple) +
                       " needs " + std::to_string(*need));

    Tensor t(shape.tuple, DType::f32);
    if (*need == 0) return t;
    float* data = t.f32();
    if (std::fread(data, 1, *need, file.f) != *need)
        fail(path, "cannot read the data: " + std::string(std::strerror(errno)));
    if constexpr (std::endian::native == std::endian::big) {
        for (dim_t i = 0; i < t.numel(); ++i) data[i] = byteswap(data[i]);
    }
    for (dim_t i = 0; i < t.numel(); ++i) {
        if (std::isfinite(data[i])) continue;
        std::vector<dim_t> coord(shape.tuple.size());
        t.coord_of(i, coord);
        const char* what = std::isnan(data[i]) ? "NaN" : data[i] > 0 ? "+Inf" : "-Inf";
        fail(path, "element " + std::to_string(i) + " at " + dims_str(coord) + " is " + what +
                       ": input must be finite");
    }
    return t;
}

// [SECTION] write

namespace {

// The preamble and header dict of an array of type `descr` and shape `dims`, padded with spaces
// so that the data starts at a multiple of 64 bytes.
std::string npy_header(const char* descr, const std::vector<dim_t>& dims) {
    std::string dict = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape_tuple(dims) + ", }";
    const auto padded = [&](std::size_t prefix_len) {
        return (prefix_len + dict.size() + 1 + 63) / 64 * 64;
    };
    // Version 1.0 unless the header length does not fit its uint16 (then 2.0: uint32).
    const std::size_t prefix = padded(10) - 10 <= 0xffff ? 10 : 12;
    const std::size_t total = padded(prefix);
    dict.append(total - prefix - dict.size() - 1, ' ');
    dict += '\n';
    std::string head(kMagic, kMagicLen);
    head += static_cast<char>(prefix == 10 ? 1 : 2);
    head += '\0';
    const std::size_t hlen = dict.size();
    for (std::size_t b = 0; b < prefix - 8; ++b)
        head += static_cast<char>((hlen >> (8 * b)) & 0xff);
    return head + dict;
}

}  // namespace

void write_npy(const std::string& path, const Tensor& t) {
    const std::string head = npy_header("<f4", t.dims());

    // Data: fp32 little-endian, C order. A dense fp32 little-endian tensor is written as it is
    // stored; any other layout or dtype goes through logical coordinates.
    const float* data = nullptr;
    std::vector<float> converted;
    const bool direct = t.dtype() == DType::f32 && t.layout().is_row_major() &&
                        std::endian::native == std::endian::little;
    if (t.numel() > 0) {
        if (direct) {
            data = t.f32();
        } else {
            converted.resize(static_cast<std::size_t>(t.numel()));
            std::vector<dim_t> coord(static_cast<std::size_t>(t.rank()));
            for (dim_t i = 0; i < t.numel(); ++i) {
                t.coord_of(i, coord);
                float v = t.get(coord);
                if constexpr (std::endian::native == std::endian::big) v = byteswap(v);
                converted[static_cast<std::size_t>(i)] = v;
            }
            data = converted.data();
        }
    }
    const std::size_t data_bytes = static_cast<std::size_t>(t.numel()) * sizeof(float);

    // Atomic, through a symlink, regular files only (output_file.hpp).
    OutputFile file(path);
    file.write(head.data(), head.size());
    if (data_bytes) file.write(data, data_bytes);
    file.commit();
}

void write_npy_int64(const std::string& path, std::span<const dim_t> dims,
                     const std::function<void(dim_t begin, dim_t end, std::int64_t* out)>& fill) {
    const std::vector<dim_t> shape(dims.begin(), dims.end());
    const std::size_t limit = kMaxTensorBytes / sizeof(std::int64_t);
    std::size_t n = 1;
    for (dim_t d : shape) {
        if (d < 0)
            throw Error("cannot write " + path + ": negative dimension in " + dims_str(shape));
        if (d == 0) n = 0;
    }
    if (n != 0)
        for (dim_t d : shape) {
            if (static_cast<std::size_t>(d) > limit / n)
                throw Error("cannot write " + path + ": shape " + dims_str(shape) +
                            " has more elements than an int64 .npy file may hold (" +
                            std::to_string(kMaxTensorBytes >> 30) + " GiB)");
            n *= static_cast<std::size_t>(d);
        }
    const std::string head = npy_header("<i8", shape);
    OutputFile file(path);
    file.write(head.data(), head.size());
    std::vector<std::int64_t> chunk(static_cast<std::size_t>(std::min<std::size_t>(n, kNpyChunk)));
    const auto total = static_cast<dim_t>(n);
    for (dim_t b = 0; b < total; b += kNpyChunk) {
        const dim_t e = std::min(total, b + kNpyChunk);
        fill(b, e, chunk.data());
        if constexpr (std::endian::native == std::endian::big) {
            for (dim_t i = 0; i < e - b; ++i) {
                auto u = static_cast<std::uint64_t>(chunk[static_cast<std::size_t>(i)]);
                std::uint64_t r = 0;
                for (int k = 0; k < 8; ++k, u >>= 8) r = r << 8 | (u & 0xffu);
                chunk[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(r);
            }
        }
        file.write(chunk.data(), static_cast<std::size_t>(e - b) * sizeof(std::int64_t));
    }
    file.commit();
}

}  // namespace convlab
