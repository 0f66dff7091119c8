// `convlab map --format npy|grid|tex` and the engine calls under them (IndexMap::images,
// IndexMap::pair_text, write_npy_int64): the .npy read back byte by byte against the index built
// from the json pairs, the grid of a small im2col against im2col's formula evaluated here, the
// TikZ picture's structure and numbers, and every refusal.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/map_formats.hpp"
#include "convlab/davinci.hpp"
#include "convlab/index_map.hpp"
#include "convlab/maps.hpp"
#include "convlab/npy.hpp"
#include "test_files.hpp"

using namespace convlab;
using convlab::test::Run;
using convlab::test::TempDir;

namespace {

const auto run = convlab::test::run_in_process;

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void check_refused(const std::vector<std::string>& args, const std::string& needle) {
    const Run r = run(args);
    INFO("stderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.rfind("convlab: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.out.empty());
}

// An int64 .npy as NumPy writes version 1.0: its shape and data, read with no help from the
// engine's reader (which reads fp32 only).
struct NpyInt64 {
    std::vector<dim_t> shape;
    std::vector<std::int64_t> data;
};

NpyInt64 read_npy_int64(const std::string& path) {
    const std::string b = slurp(path);
    NpyInt64 r;
    REQUIRE(b.size() >= 10);
    REQUIRE(b.compare(0, 6, "\x93NUMPY") == 0);
    REQUIRE(b[6] == 1);
    const std::size_t hlen =
        static_cast<unsigned char>(b[8]) | std::size_t{static_cast<unsigned char>(b[9])} << 8;
    REQUIRE(b.size() >= 10 + hlen);
    CHECK((10 + hlen) % 64 == 0);
    const std::string header = b.substr(10, hlen);
    CHECK(header.find("'descr': '<i8'") != std::string::npos);
    CHECK(header.find("'fortran_order': False") != std::string::npos);
    CHECK(header.back() == '\n');
    const std::size_t open = header.find("'shape': (");
    REQUIRE(open != std::string::npos);
    std::istringstream shape(header.substr(open + 10, header.find(')', open) - open - 10));
    for (std::string tok; std::getline(shape, tok, ',');)
        if (tok.find_first_not_of(' ') != std::string::npos) r.shape.push_back(std::stoll(tok));
    const std::size_t bytes = b.size() - 10 - hlen;
    REQUIRE(bytes % 8 == 0);
    r.data.resize(bytes / 8);
    std::memcpy(r.data.data(), b.data() + 10 + hlen, bytes);
    return r;
}

// The pairs of `convlab map --format json`: [src_linear, dst_linear] each.
std::vector<std::pair<dim_t, dim_t>> json_pairs(const std::string& json) {
    std::vector<std::pair<dim_t, dim_t>> pairs;
    std::size_t i = json.find("\"pairs\":[");
    REQUIRE(i != std::string::npos);
    i += 9;
    while (json[i] == '[' || json[i] == ',') {
        if (json[i] == ',') ++i;
        std::size_t used = 0;
        const dim_t a = std::stoll(json.substr(i + 1), &used);
        i += 1 + used;
        REQUIRE(json[i] == ',');
        const dim_t c = std::stoll(json.substr(i + 1), &used);
        i += 1 + used;
        REQUIRE(json[i] == ']');
        ++i;
        pairs.emplace_back(a, c);
    }
    CHECK(json[i] == ']');
    return pairs;
}

// The grid's blocks: header line -> rows of cell texts.
std::map<std::string, std::vector<std::vector<std::string>>> parse_grid(const std::string& text) {
    std::map<std::string, std::vector<std::vector<std::string>>> blocks;
    std::istringstream in(text);
    std::string block;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        if (line.rfind("dst(", 0) == 0 || line.rfind("src(", 0) == 0) {
            block = line;
            blocks[block];
            continue;
        }
        const std::size_t bar = line.find('|');
        if (bar == std::string::npos) continue;  // column indices, rules
        std::vector<std::string> cells;
        std::istringstream row(line.substr(bar + 1));
        for (std::string cell; std::getline(row, cell, '|');) {
            const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
            cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
        }
        blocks[block].push_back(cells);
    }
    return blocks;
}

}  // namespace

TEST_CASE("index map: images() and pair_text() agree with map() and the dump") {
    const Problem p = parse_descriptor("g2mb2ic4ih5iw4oc2kh2kw3sh2ph1pw1dw1");
    for (const IndexMap& m : {maps::im2col(p), maps::col2im(p), maps::strided(p),
                              davinci::pack_activation(p.src_dims(), 4)}) {
        CAPTURE(m.name());
        const dim_t n = m.domain().numel();
        std::vector<dim_t> all(static_cast<std::size_t>(n));
        m.images(0, n, all.data());
        for (dim_t i = 0; i < n; ++i) REQUIRE(all[static_cast<std::size_t>(i)] == m.map(i));
        // A range from the middle, and ranges clamped to the domain.
        std::vector<dim_t> part(5, -7);
        m.images(n / 3, n / 3 + 5, part.data());
        for (dim_t i = 0; i < 5; ++i) CHECK(part[static_cast<std::size_t>(i)] == m.map(n / 3 + i));
        std::vector<dim_t> tail(3, -7);
        m.images(n - 1, n + 2, tail.data());
        CHECK(tail[0] == m.map(n - 1));
        CHECK(tail[1] == -7);
        // Every dump line is the pair_text of its domain element (the dump walks the line axis
        // innermost, so the lines are matched by content, not position).
        std::istringstream dump(m.dump());
        std::string line;
        std::getline(dump, line);  // "# map ..."
        std::vector<std::string> lines;
        while (std::getline(dump, line)) lines.push_back(line);
        std::vector<std::string> texts;
        for (dim_t i = 0; i < n; ++i) texts.push_back(m.pair_text(i));
        std::sort(lines.begin(), lines.end());
        std::sort(texts.begin(), texts.end());
        CHECK(lines == texts);
        CHECK_THROWS_WITH_AS(m.pair_text(n), doctest::Contains("is outside its"), Error);
    }
}

TEST_CASE("map --format npy: the index array equals the one built from the json pairs") {
    TempDir dir;
    struct Case {
        const char* map;
        const char* problem;
        const char* c0;  // nullptr: an NCHW map
    };
    for (const Case& c : {Case{"im2col", "g2mb2ic4ih5iw4oc2kh2kw3sh2ph1pw1dw1", nullptr},
                          Case{"im2col", "mb1ic3iw9oc2kw3sw2pw2", nullptr},
                          Case{"im2col", "mb1ic2id3ih4iw3oc1kd2kh2kw2pd1", nullptr},
                          Case{"col2im", "mb1ic2ih4oc1kh3ph1", nullptr},
                          Case{"strided", "mb1ic2ih7oc3kh3sh2", nullptr},
                          Case{"nc1hwc0", "mb2ic5ih3iw2oc3kh1kw1", "4"},
                          Case{"fractal_z", "mb1ic5ih3oc18kh2", "8"}}) {
        INFO(c.map << " " << c.problem);
        std::vector<std::string> base{"map", "--map", c.map, "--problem", c.problem};
        if (c.c0) base.insert(base.end(), {"--c0", c.c0});
        auto json_args = base;
        json_args.insert(json_args.end(), {"--format", "json"});
        const Run json = run(json_args);
        REQUIRE(json.status == 0);
        const auto pairs = json_pairs(json.out);

        const std::string path = dir / (std::string(c.map) + ".npy");
        auto npy_args = base;
        npy_args.insert(npy_args.end(), {"--format", "npy", "--out", path});
        const Run npy = run(npy_args);
        INFO(npy.err);
        REQUIRE(npy.status == 0);
        CHECK(npy.out.rfind("wrote " + path + " ", 0) == 0);
        const NpyInt64 a = read_npy_int64(path);

        const IndexMap m =
            c.c0 ? davinci::by_name(c.map, parse_descriptor(c.problem), std::stoll(c.c0))
                 : maps::by_name(c.map, parse_descriptor(c.problem));
        const bool gather = m.kind() == IndexMap::Kind::Gather;
        CHECK(a.shape == m.domain().dims);
        REQUIRE(static_cast<dim_t>(a.data.size()) == m.domain().numel());
        // From the pairs: gather index[dst] = src, scatter index[src] = dst; each domain element
        // appears exactly once.
        std::vector<std::int64_t> expect(a.data.size(), -99);
        for (const auto& [s, d] : pairs) {
            const dim_t at = gather ? d : s;
            REQUIRE(expect[static_cast<std::size_t>(at)] == -99);
            expect[static_cast<std::size_t>(at)] = gather ? s : d;
        }
        CHECK(a.data == expect);
        // A gather index gathers: dst = where(idx < 0, 0, src[idx]) is the map's execution.
        if (gather) {
            std::vector<float> src(static_cast<std::size_t>(m.src().numel()));
            for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 97) + 1;
            std::vector<float> dst(a.data.size());
            m.execute(src.data(), dst.data());
            for (std::size_t i = 0; i < dst.size(); ++i)
                REQUIRE(dst[i] ==
                        (a.data[i] < 0 ? 0.0f : src[static_cast<std::size_t>(a.data[i])]));
        }
    }
}

TEST_CASE("map --format npy: an index of more than one chunk is written whole") {
    TempDir dir;
    const char* desc = "mb1ic8ih40oc1kh3ph1";  // 72 x 1600 column matrix: 115200 > kNpyChunk
    const IndexMap m = maps::im2col(parse_descriptor(desc));
    REQUIRE(m.domain().numel() > kNpyChunk);
    const std::string path = dir / "big.npy";
    REQUIRE(run({"map", "--map", "im2col", "--problem", desc, "--format", "npy", "--out", path})
                .status == 0);
    const NpyInt64 a = read_npy_int64(path);
    REQUIRE(static_cast<dim_t>(a.data.size()) == m.domain().numel());
    for (dim_t i = 0; i < m.domain().numel(); ++i)
        REQUIRE(a.data[static_cast<std::size_t>(i)] == m.map(i));
}

TEST_CASE("map --format grid: a small im2col's cells are its formula's source indices") {
    // Two groups, stride, padding and dilation on different axes; every cell worked out here from
    // dst(n, g, row = (c, kh, kw), col = (oh, ow)) <- src(n, g*C/G + c, oh*sh - ph + kh*dh,
    // ow*sw - pw + kw*dw), '.' outside the input.
    const char* desc = "g2mb2ic4ih4iw5oc2kh2kw2sh1sw2ph1pw0dh1dw0";
    const Problem p = parse_descriptor(desc);
    const dim_t C = p.ic, G = p.groups, Cg = C / G, IH = p.in[0], IW = p.in[1];
    const dim_t KH = p.kernel[0], KW = p.kernel[1], OH = p.out(0), OW = p.out(1);
    const Run r = run({"map", "--map", "im2col", "--problem", desc, "--format", "grid"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    const auto blocks = parse_grid(r.out);
    CHECK(blocks.size() == static_cast<std::size_t>(p.mb * G));
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < G; ++g) {
            const std::string name =
                "dst(n=" + std::to_string(n) + ",g=" + std::to_string(g) + ",row=*,col=*)";
            CAPTURE(name);
            REQUIRE(blocks.count(name) == 1);
            const auto& rows = blocks.at(name);
            REQUIRE(static_cast<dim_t>(rows.size()) == Cg * KH * KW);
            for (dim_t row = 0; row < Cg * KH * KW; ++row) {
                const dim_t c = row / (KH * KW), kh = row / KW % KH, kw = row % KW;
                const auto& cells = rows[static_cast<std::size_t>(row)];
                REQUIRE(static_cast<dim_t>(cells.size()) == OH * OW);
                for (dim_t col = 0; col < OH * OW; ++col) {
                    const dim_t oh = col / OW, ow = col % OW;
                    const dim_t ih = oh * p.stride[0] - p.pad_begin[0] + kh * p.dilation[0];
                    const dim_t iw = ow * p.stride[1] - p.pad_begin[1] + kw * p.dilation[1];
                    const bool inside = ih >= 0 && ih < IH && iw >= 0 && iw < IW;
                    const std::string expect =
                        inside ? std::to_string(((n * C + g * Cg + c) * IH + ih) * IW + iw) : ".";
                    CAPTURE(row);
                    CAPTURE(col);
                    CHECK(cells[static_cast<std::size_t>(col)] == expect);
                }
            }
        }
    // The legend says what a cell is; --out writes the same text to a file.
    CHECK(r.out.find("# cell: the src linear index each dst element reads; . = a padding zero") !=
          std::string::npos);
    TempDir dir;
    const Run f = run({"map", "--map", "im2col", "--problem", desc, "--format", "grid", "--out",
                       dir / "grid.txt"});
    CHECK(f.status == 0);
    CHECK(f.out.empty());
    CHECK(slurp(dir / "grid.txt") == r.out);
}

TEST_CASE("map --format grid: a reduce map's grid is over its source") {
    const char* desc = "mb1ic1ih3oc1kh2";
    const IndexMap m = maps::col2im(parse_descriptor(desc));
    const Run r = run({"map", "--map", "col2im", "--problem", desc, "--format", "grid"});
    REQUIRE(r.status == 0);
    const auto blocks = parse_grid(r.out);
    REQUIRE(blocks.count("src(n=0,g=0,row=*,col=*)") == 1);
    const auto& rows = blocks.at("src(n=0,g=0,row=*,col=*)");
    REQUIRE(static_cast<dim_t>(rows.size()) == m.src().dims[2]);
    for (dim_t row = 0; row < m.src().dims[2]; ++row)
        for (dim_t col = 0; col < m.src().dims[3]; ++col) {
            const dim_t d = m.map(row * m.src().dims[3] + col);
            CHECK(rows[static_cast<std::size_t>(row)][static_cast<std::size_t>(col)] ==
                  (d < 0 ? "." : std::to_string(d)));
        }
    CHECK(r.out.find("adds nowhere") != std::string::npos);
}

TEST_CASE("map --format tex: one TikZ picture a block, every cell drawn once") {
    const char* desc = "g2mb1ic2ih3oc2kh2ph1";
    const IndexMap m = maps::im2col(parse_descriptor(desc));
    const Run r = run({"map", "--map", "im2col", "--problem", desc, "--format", "tex"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const std::string& t = r.out;
    const dim_t rows = m.dst().dims[2], cols = m.dst().dims[3], blocks = m.dst().dims[1];
    // Balanced braces and one picture per (n, g) block.
    int depth = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '\\' && i + 1 < t.size() && (t[i + 1] == '{' || t[i + 1] == '}')) {
            ++i;
            continue;
        }
        depth += t[i] == '{' ? 1 : t[i] == '}' ? -1 : 0;
        REQUIRE(depth >= 0);
    }
    CHECK(depth == 0);
    std::vector<std::string> begins, ends;
    std::istringstream in(t);
    // Per block, every cell either shaded (padding) or holding its index, never both.
    std::vector<std::int64_t> seen(static_cast<std::size_t>(m.dst().numel()), -99);
    dim_t block = -1;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("\\begin{tikzpicture}", 0) == 0) ++block;
        if (line.rfind("\\begin{tikzpicture}", 0) == 0) begins.push_back(line);
        if (line == "\\end{tikzpicture}") ends.push_back(line);
        long long c = 0, r0 = 0, c1 = 0, r1 = 0, v = 0;
        const auto at = [&](long long col, long long row) -> std::int64_t& {
            REQUIRE(block >= 0);
            REQUIRE((col >= 0 && col < cols && row >= 0 && row < rows));
            return seen[static_cast<std::size_t>((block * rows + row) * cols + col)];
        };
        if (std::sscanf(line.c_str(), "  \\fill[black!12] (%lld,%lld) rectangle (%lld,%lld);", &c,
                        &r0, &c1, &r1) == 4) {
            CHECK(c1 == c + 1);
            CHECK(r1 == r0 - 1);
            std::int64_t& cell = at(c, -r0);
            CHECK(cell == -99);
            cell = -1;
        } else if (std::sscanf(line.c_str(), "  \\node at (%lld.5,-%lld.5) {%lld};", &c, &r0, &v) ==
                   3) {
            std::int64_t& cell = at(c, r0);
            CHECK(cell == -99);
            cell = v;
        }
    }
    CHECK(static_cast<dim_t>(begins.size()) == blocks);
    CHECK(static_cast<dim_t>(ends.size()) == blocks);
    for (dim_t i = 0; i < m.dst().numel(); ++i)
        CHECK(seen[static_cast<std::size_t>(i)] == m.map(i));
    CHECK(t.find("\\texttt{dst(n=0,g=1,row=*,col=*)}") != std::string::npos);
    // A 5-D destination: a picture per index of its first three dims.
    const Run f = run({"map", "--map", "nc1hwc0", "--problem", "mb1ic3ih2iw3oc1kh1kw1", "--c0", "2",
                       "--format", "tex"});
    REQUIRE(f.status == 0);
    std::size_t pictures = 0;
    for (std::size_t at = 0; (at = f.out.find("\\begin{tikzpicture}", at)) != std::string::npos;
         ++at)
        ++pictures;
    CHECK(pictures == 2 * 2);  // c1 = 2 blocks of C0 = 2 lanes, h = 2
    CHECK(f.out.find("\\texttt{dst(n=0,c1=1,h=1,w=*,c0=*)}") != std::string::npos);
}

TEST_CASE("map --format npy|grid|tex: refusals name the rule, leave no file") {
    TempDir dir;
    const char* desc = "mb1ic2ih5oc1kh3";
    const std::vector<std::string> base{"map", "--map", "im2col", "--problem", desc};
    const auto with = [&](std::vector<std::string> extra) {
        auto a = base;
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    check_refused(with({"--format", "npy"}), "--format npy writes a file: give --out FILE.npy");
    check_refused(with({"--format", "grid", "--limit", "3"}),
                  "--limit is taken by --format text and json only (grid holds the whole map)");
    check_refused(with({"--format", "npy", "--out", dir / "x.npy", "--step-granularity", "line"}),
                  "--step-granularity is taken by --format text and json only");
    check_refused(with({"--format", "npy", "--out", dir.path.string()}), "cannot write");
    // 2 x 9 x 62500 cells: above the picture limit.
    check_refused({"map", "--map", "im2col", "--problem", "mb1ic2ih252oc1kh3", "--format", "tex",
                   "--out", dir / "big.tex"},
                  "--format tex: map im2col has 1125000 cells, more than the 10000 a picture "
                  "may draw (use grid or npy)");
    CHECK(dir.listing().empty());
}

TEST_CASE("map --help documents the pair order and the formats") {
    const Run r = run({"map", "--help"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("src_linear dst_linear, -1 = padding") != std::string::npos);
    for (const char* f : {"npy", "grid", "tex", "--out"}) CHECK(r.out.find(f) != std::string::npos);
}

TEST_CASE("write_npy_int64 refuses an array above the tensor limit before writing") {
    TempDir dir;
    const std::vector<dim_t> dims{std::int64_t{1} << 20, std::int64_t{1} << 12};  // 32 GiB
    CHECK_THROWS_WITH_AS(
        write_npy_int64(dir / "x.npy", dims, [](dim_t, dim_t, std::int64_t*) { FAIL("filled"); }),
        doctest::Contains("more elements than an int64 .npy file may hold (16 GiB)"), Error);
    CHECK(dir.listing().empty());
}
