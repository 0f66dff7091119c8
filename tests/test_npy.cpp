// .npy reading and writing: round trips bit for bit, NumPy's exact header, the 1.0 / 2.0 / 3.0
// headers, and every refusal, each on a file written byte by byte here.
#include <doctest/doctest.h>
#include <unistd.h>  // access, getpid

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "convlab/npy.hpp"
#include "test_tempdir.hpp"
#include "test_util.hpp"

using namespace convlab;
namespace fs = std::filesystem;
using convlab::test::TempDir;

namespace {

std::string le_bytes(std::uint32_t v, int n) {
    std::string s;
    for (int b = 0; b < n; ++b) s += static_cast<char>((v >> (8 * b)) & 0xff);
    return s;
}

// An .npy file of format `major`.0 around a header dict, padded as np.save pads it.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    std::string header = dict;
    const std::size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
    header.append(total - prefix - header.size() - 1, ' ');
    header += '\n';
    return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' +
           le_bytes(static_cast<std::uint32_t>(header.size()), major == 1 ? 2 : 4) + header + data;
}

std::string f32_bytes(const std::vector<float>& v) {
    std::string s;
    for (float f : v) s += le_bytes(std::bit_cast<std::uint32_t>(f), 4);
    return s;
}

std::string dict_for(const std::string& descr, const std::string& shape, bool fortran = false) {
    return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
           ", 'shape': " + shape + ", }";
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
    REQUIRE(f.good());
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<float> iota_floats(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) - 7.5f;
    return v;
}

// read_npy(path) throws Error whose message is "path: " followed by text containing `needle`.
void check_refused(const std::string& path, const std::string& needle) {
    std::string msg;
    try {
        read_npy(path);
    } catch (const Error& e) {
        msg = e.what();
    }
    INFO("message: " << msg);
    REQUIRE_FALSE(msg.empty());
    CHECK(msg.rfind(path + ": ", 0) == 0);
    CHECK(msg.find(needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
}

void check_bits_equal(const Tensor& got, const Tensor& want) {
    REQUIRE(got.dims() == want.dims());
    dim_t bad = -1;
    for (dim_t i = 0; i < got.numel() && bad < 0; ++i)
        if (std::bit_cast<std::uint32_t>(got.f32()[i]) !=
            std::bit_cast<std::uint32_t>(want.f32()[i]))
            bad = i;
    INFO("first differing element " << bad);
    CHECK(bad < 0);
}

}  // namespace

TEST_CASE("npy: write then read keeps the shape and every element bit for bit") {
    TempDir dir;
    const std::vector<std::vector<dim_t>> shapes = {
        {2, 3, 4}, {5}, {}, {1, 1, 1, 1, 1}, {3, 0, 2}, {0}, {2, 3, 4, 5, 6}, {1, 17}};
    const float special[] = {-0.0f,
                             std::numeric_limits<float>::denorm_min(),
                             std::numeric_limits<float>::max(),
                             std::numeric_limits<float>::lowest(),
                             std::numeric_limits<float>::min(),
                             1.0f / 3.0f,
                             -12345.678f};
    std::mt19937 rng(11);
    for (const auto& shape : shapes) {
        Tensor t = convlab::test::real_tensor(shape, rng);
        for (dim_t i = 0; i < t.numel() && i < 7; ++i) t.f32()[i] = special[i];
        const std::string path = dir / "t.npy";
        write_npy(path, t);
        INFO("shape " << dims_str(shape));
        check_bits_equal(read_npy(path), t);
        CHECK(dir.listing() == std::vector<std::string>{"t.npy"});
    }
}

TEST_CASE("npy: the written header is the one np.save writes") {
    TempDir dir;
    const struct {
        std::vector<dim_t> dims;
        const char* shape;
    } cases[] = {{{2, 3}, "(2, 3)"}, {{5}, "(5,)"}, {{}, "()"}, {{2, 1, 4, 3}, "(2, 1, 4, 3)"}};
    for (const auto& c : cases) {
        const std::string path = dir / "h.npy";
        Tensor t(c.dims);
        write_npy(path, t);
        const std::string bytes = read_file(path);
        REQUIRE(bytes.size() >= 10);
        CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
        const std::size_t hlen = static_cast<unsigned char>(bytes[8]) |
                                 static_cast<std::size_t>(static_cast<unsigned char>(bytes[9]))
                                     << 8;
        CHECK((10 + hlen) % 64 == 0);
        const std::string header = bytes.substr(10, hlen);
        CHECK(header.back() == '\n');
        const std::string dict = dict_for("<f4", c.shape);
        CHECK(header.substr(0, dict.size()) == dict);
        CHECK(header.find_first_not_of(' ', dict.size()) == hlen - 1);
        CHECK(bytes.size() == 10 + hlen + 4 * static_cast<std::size_t>(t.numel()));
    }
}

TEST_CASE("npy: headers of format 2.0 and 3.0, and hand-written dicts, are read") {
    TempDir dir;
    const std::vector<float> v = iota_floats(6);
    for (int major : {1, 2, 3}) {
        const std::string path = dir / ("v" + std::to_string(major) + ".npy");
        write_file(path, npy_bytes(dict_for("<f4", "(2, 3)"), f32_bytes(v), major));
        const Tensor t = read_npy(path);
        REQUIRE(t.dims() == std::vector<dim_t>{2, 3});
        for (std::size_t i = 0; i < v.size(); ++i) CHECK(t.f32()[i] == v[i]);
    }
    // Double quotes, another key order, no trailing comma, no padding, a 1-tuple without space.
    const std::string path = dir / "hand.npy";
    const std::string dict = "{\"shape\": (6,), \"fortran_order\": False, \"descr\": \"<f4\"}";
    write_file(path, std::string("\x93NUMPY\x01\x00", 8) +
                         le_bytes(static_cast<std::uint32_t>(dict.size()), 2) + dict +
                         f32_bytes(v));
    const Tensor t = read_npy(path);
    REQUIRE(t.dims() == std::vector<dim_t>{6});
    for (std::size_t i = 0; i < v.size(); ++i) CHECK(t.f32()[i] == v[i]);
}

TEST_CASE("npy: a header too long for format 1.0 is written as 2.0 and read back") {
    TempDir dir;
    const std::vector<dim_t> dims(30000, 1);  // "1, " x 30000: more than 65535 header bytes
    Tensor t(dims);
    t.f32()[0] = 42.0f;
    const std::string path = dir / "long.npy";
    write_npy(path, t);
    const std::string bytes = read_file(path);
    CHECK(bytes[6] == 2);
    const Tensor back = read_npy(path);
    CHECK(back.dims() == dims);
    CHECK(back.f32()[0] == 42.0f);
}

TEST_CASE("npy: every file that is not fp32 little-endian C order and finite is refused") {
    TempDir dir;
    const std::string d24 = f32_bytes(iota_floats(24));
    const auto file = [&](const std::string& name, const std::string& bytes) {
        const std::string path = dir / name;
        write_file(path, bytes);
        return path;
    };

    check_refused(dir / "missing.npy", "cannot open: No such file or directory");
    check_refused(dir.path.string(), "is a directory");
    check_refused(file("empty.npy", ""), "empty file");
    check_refused(file("magic.npy", "PK\x03\x04 this is a zip file"), "not an .npy file");
    check_refused(file("short.npy", std::string("\x93NUMPY\x01", 7)), "truncated .npy header");
    {
        std::string bytes = npy_bytes(dict_for("<f4", "(2, 3, 4)"), "");
        bytes.resize(40);  // cut inside the header
        check_refused(file("cut_header.npy", bytes), "truncated .npy header: it declares 118");
    }
    check_refused(file("cut_data.npy", npy_bytes(dict_for("<f4", "(2, 3, 4)"), d24.substr(0, 40))),
                  "data holds 40 bytes, shape (2,3,4) needs 96");
    check_refused(file("long_data.npy", npy_bytes(dict_for("<f4", "(2, 3, 4)"), d24 + "xxxx")),
                  "data holds 100 bytes, shape (2,3,4) needs 96");
    check_refused(file("big_endian.npy", npy_bytes(dict_for(">f4", "(2, 3, 4)"), d24)),
                  "dtype '>f4' (float32, big-endian): expected '<f4' (fp32 little-endian)");
    check_refused(file("f8.npy", npy_bytes(dict_for("<f8", "(2, 3, 2)"), d24)),
                  "dtype '<f8' (float64): expected '<f4'");
    check_refused(file("f2.npy", npy_bytes(dict_for("<f2", "(2, 3, 8)"), d24)), "(float16)");
    check_refused(file("i4.npy", npy_bytes(dict_for("<i4", "(2, 3, 4)"), d24)), "(int32)");
    check_refused(file("u1.npy", npy_bytes(dict_for("|u1", "(96,)"), d24)), "(uint8)");
    check_refused(
        file("structured.npy", npy_bytes("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': "
                                         "False, 'shape': (12,), }",
                                         d24)),
        "structured dtype");
    check_refused(file("fortran.npy", npy_bytes(dict_for("<f4", "(2, 3, 4)", true), d24)),
                  "fortran_order is True: expected C order");
    check_refused(file("huge.npy", npy_bytes(dict_for("<f4", "(4294967296, 4294967296, 4)"), d24)),
                  "shape (4294967296,4294967296,4) has more elements than a tensor may hold");
    check_refused(
        file("huge2.npy", npy_bytes(dict_for("<f4", "(3037000500, 3037000500, 3037000500)"), d24)),
        "has more elements than a tensor may hold");
    check_refused(file("digits.npy", npy_bytes(dict_for("<f4", "(99999999999999999999,)"), d24)),
                  "does not fit in 64 bits");
    check_refused(file("negative.npy", npy_bytes(dict_for("<f4", "(-2, 3)"), d24)),
                  "negative dimension");
    check_refused(file("unclosed.npy",
                       npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", d24)),
                  "malformed .npy header");
    check_refused(file("no_shape.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False}", d24)),
                  "has no 'shape'");
    check_refused(
        file("extra_key.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (24,), "
                                        "'units': 'm'}",
                                        d24)),
        "unexpected key 'units'");
    check_refused(file("shape_int.npy", npy_bytes(dict_for("<f4", "24"), d24)),
                  "malformed .npy header");
    {
        std::string bytes = npy_bytes(dict_for("<f4", "(24,)"), d24);
        bytes[6] = 4;
        check_refused(file("v4.npy", bytes), "unsupported .npy format version 4.0");
    }
}

TEST_CASE("npy: NaN and infinities are refused, naming the element") {
    TempDir dir;
    const struct {
        float value;
        const char* what;
    } cases[] = {{std::numeric_limits<float>::quiet_NaN(), "NaN"},
                 {-std::numeric_limits<float>::quiet_NaN(), "NaN"},
                 {std::numeric_limits<float>::infinity(), "+Inf"},
                 {-std::numeric_limits<float>::infinity(), "-Inf"}};
    for (const auto& c : cases) {
        std::vector<float> v = iota_floats(24);
        v[5] = c.value;
        v[20] = c.value;  // only the first is named
        const std::string path = dir / "bad.npy";
        write_file(path, npy_bytes(dict_for("<f4", "(2, 3, 4)"), f32_bytes(v)));
        check_refused(path,
                      std::string("element 5 at (0,1,1) is ") + c.what + ": input must be finite");
    }
}

TEST_CASE("npy: a failed write throws, names the file and leaves nothing behind") {
    TempDir dir;
    Tensor t({2, 3});
    const auto message = [&](const std::string& path) {
        try {
            write_npy(path, t);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    const std::string missing = dir / "no/such/dir/y.npy";
    CHECK(message(missing) == "cannot write " + missing + ": No such file or directory");
    fs::create_directory(dir.path / "sub");
    const std::string sub = dir / "sub";
    CHECK(message(sub) == "cannot write " + sub + ": Is a directory");
    CHECK(dir.listing() == std::vector<std::string>{"sub"});
    CHECK(fs::is_empty(dir.path / "sub"));

    // A folder without write permission (root writes anyway: then there is nothing to check).
    fs::permissions(dir.path / "sub", fs::perms::owner_read | fs::perms::owner_exec);
    if (::access(sub.c_str(), W_OK) != 0) {
        const std::string path = dir / "sub/y.npy";
        CHECK(message(path) == "cannot write " + path + ": Permission denied");
        fs::permissions(dir.path / "sub", fs::perms::owner_all);
        CHECK(fs::is_empty(dir.path / "sub"));
    }
}

TEST_CASE("npy: writing over a file replaces it whole and leaves no temporary") {
    TempDir dir;
    const std::string path = dir / "y.npy";
    std::mt19937 rng(5);
    const Tensor first = convlab::test::real_tensor({4, 5}, rng);
    const Tensor second = convlab::test::real_tensor({3, 2, 2}, rng);
    write_npy(path, first);
    write_npy(path, second);
    check_bits_equal(read_npy(path), second);
    CHECK(dir.listing() == std::vector<std::string>{"y.npy"});
}

TEST_CASE("npy: tensors of other layouts and dtypes are written in logical order as fp32") {
    TempDir dir;
    const std::vector<dim_t> dims{2, 3, 4, 5};
    Tensor nhwc(Layout::nxc(dims), DType::f32);
    Tensor half(Layout::nxc(dims), DType::f16);
    std::vector<dim_t> c(4);
    for (dim_t i = 0; i < nhwc.numel(); ++i) {
        nhwc.coord_of(i, c);
        nhwc.set(c, static_cast<float>(i) * 0.5f);
        half.set(c, static_cast<float>(i % 100) - 50.0f);  // exact in fp16
    }
    for (const Tensor* t : {&nhwc, &half}) {
        const std::string path = dir / "l.npy";
        write_npy(path, *t);
        const Tensor back = read_npy(path);
        REQUIRE(back.dims() == dims);
        REQUIRE(back.layout().is_row_major());
        dim_t bad = -1;
        for (dim_t i = 0; i < back.numel() && bad < 0; ++i) {
            back.coord_of(i, c);
            if (back.f32()[i] != t->get(c)) bad = i;
        }
        INFO(dtype_name(t->dtype()) << ": first differing element " << bad);
        CHECK(bad < 0);
    }
}

TEST_CASE("npy: corrupted and truncated files are refused with an Error, never a crash") {
    TempDir dir;
    const std::string good = npy_bytes(dict_for("<f4", "(2, 3)"), f32_bytes(iota_floats(6)));
    const std::string path = dir / "c.npy";
    const auto outcome = [&](const std::string& bytes) {
        write_file(path, bytes);
        try {
            read_npy(path);
            return 0;
        } catch (const Error&) {
            return 1;
        }
    };
    for (std::size_t len = 0; len < good.size(); ++len) {
        INFO("truncated to " << len << " bytes");
        CHECK(outcome(good.substr(0, len)) == 1);
    }
    const unsigned char kBytes[] = {0x00, 0x01, 0x20, 0x27, 0x28, 0x2c,
                                    0x30, 0x39, 0x7b, 0x7d, 0xff};
    int refused = 0;
    for (std::size_t i = 0; i < good.size() - 24; ++i)
        for (unsigned char v : kBytes) {
            std::string bytes = good;
            bytes[i] = static_cast<char>(v);
            refused += outcome(bytes);
        }
    CHECK(refused > 0);
}
