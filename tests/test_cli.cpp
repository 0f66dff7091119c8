// The command-line subcommands, driven in-process through run_cli (and once through the real
// binary): every subcommand on small problems, compute against the engine element by element,
// and every bad input refused with exit status 2, one "convlab: " line and no output file.
#include <doctest/doctest.h>
#include <sys/wait.h>  // WEXITSTATUS
#include <unistd.h>    // getpid

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/cmd_bench.hpp"
#include "convlab/bench.hpp"
#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/maps.hpp"
#include "convlab/npy.hpp"
#include "lesson/lesson.hpp"
#include "test_files.hpp"
#include "test_util.hpp"

using namespace convlab;
using convlab::test::check_equal;
namespace fs = std::filesystem;
using convlab::test::TempDir;

namespace {

using convlab::test::Run;
const auto run = convlab::test::run_in_process;

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
    return s;
}

// Exit status 0, nothing on stderr.
Run run_ok(const std::vector<std::string>& args) {
    Run r = run(args);
    INFO("convlab " << joined(args) << "\nstderr: " << r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    return r;
}

// Exit status 2, exactly one line on stderr starting "convlab: " and containing `needle`,
// nothing on stdout.
void check_refused(const std::vector<std::string>& args, const std::string& needle) {
    const Run r = run(args);
    INFO("convlab " << joined(args) << "\nstderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.rfind("convlab: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK((!r.err.empty() && r.err.back() == '\n'));
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.out.empty());
}

int count_lines_starting(const std::string& text, const std::string& prefix) {
    int n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
    return n;
}

const Pass kPasses[] = {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight,
                        Pass::BackwardBias};

// Small problems of 1, 2 and 3 spatial dims with groups, dilation, stride and leftover r > 0.
const char* const kProblems[] = {
    "g2mb2ic4ih9iw8oc6kh3kw2sh2sw3ph1dh1", "mb2ic3id5ih4iw6oc2kd2kh3kw2sd2sh1sw2",
    "mb2ic4iw11oc6kw3sw2dw1pw2",           "mb1ic3ih12oc4kh3sh2ph1",
    "g2mb2ic4ih9iw7oc6kh3kw3ph1pw0",  // 2-D 3x3 stride 1: winograd's too
};

// The algorithms of pass that compute p (the others refuse it: tested below).
std::vector<const Algorithm*> algos_for(Pass pass, const Problem& p) {
    std::vector<const Algorithm*> list;
    for (const Algorithm* a : algorithms(pass))
        if (algorithm_applies(*a, p)) list.push_back(a);
    return list;
}

// Equal to direct, exactly where the algorithm is exact on integer data.
void check_against(const Algorithm& a, const Tensor& got, const Tensor& want,
                   const std::string& what) {
    if (a.exact)
        check_equal(got, want, what);
    else
        convlab::test::check_close(got, want, 1e-5, 1e-3, what);
}

}  // namespace

TEST_CASE("cli: help, usage and version exit 0") {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{}, {"help"}, {"--help"}, {"-h"}, {"help", "help"}}) {
        const Run r = run_ok(args);
        CHECK(r.out.find("usage: convlab <command>") != std::string::npos);
        for (const char* c : {"compute", "map", "algos", "describe"})
            CHECK(r.out.find(std::string("  ") + c) != std::string::npos);
    }
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"help", "compute"}, {"compute", "--help"}, {"compute", "-h"}})
        CHECK(run_ok(args).out.find("--diff-dst FILE") != std::string::npos);
    CHECK(run_ok({"map", "--help"}).out.find("--step-granularity") != std::string::npos);
    CHECK(run_ok({"help", "describe"}).out.find("usage: convlab describe") != std::string::npos);
    CHECK(run_ok({"--version"}).out.rfind("convlab ", 0) == 0);
    // gui's and shot's --view name every hand-written view (the lists were once typed out and
    // fell behind) and the generic map views by their pattern.
    for (const char* c : {"gui", "shot"}) {
        const std::string out = run_ok({c, "--help"}).out;
        for (const std::string& v : lesson::view_names())
            if (v.rfind("map:", 0) != 0)
                CHECK_MESSAGE(out.find(v) != std::string::npos, c << " --help lacks " << v);
        CHECK(out.find("map:NAME") != std::string::npos);
    }
}

TEST_CASE("cli: algos lists every algorithm of every pass with its summary") {
    const std::string out = run_ok({"algos"}).out;
    for (Pass pass : kPasses)
        CHECK(out.find(std::string(pass_name(pass)) + "\n") != std::string::npos);
    for (const Algorithm& a : algorithms()) {
        // The algorithm's line follows its pass's heading.
        const std::size_t heading = out.find(std::string(pass_name(a.pass)) + "\n");
        const std::size_t line = out.find(std::string("  ") + a.name, heading);
        INFO(a.name);
        CHECK(line != std::string::npos);
        CHECK(out.find(a.summary, line) != std::string::npos);
    }
}

TEST_CASE("cli: describe prints the descriptor, sizes, leftover r, FLOPs and shapes") {
    // ResNet-50 conv1: 224, k7, s2, p3: output 112 with a leftover row r = 1 on both axes.
    const std::string desc = "mb1ic3ih224oc64oh112kh7sh2ph3";
    const Problem p = parse_descriptor(desc);
    const std::string out = run_ok({"describe", "--problem", desc}).out;
    CHECK(out.find(to_descriptor(p)) != std::string::npos);
    CHECK(out.find("(1,3,224,224)") != std::string::npos);
    CHECK(out.find("(64,3,7,7)") != std::string::npos);
    CHECK(out.find("(1,64,112,112)") != std::string::npos);
    CHECK(out.find("236027904") != std::string::npos);  // 2*1*64*3*112*112*7*7
    std::istringstream lines(out);
    int axes = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("h ", 0) != 0 && line.rfind("w ", 0) != 0) continue;
        std::istringstream cols(line);
        std::vector<std::string> v{std::istream_iterator<std::string>(cols), {}};
        // axis in kernel stride dilation pad_begin pad_end k_eff out r
        REQUIRE(v.size() == 10);
        CHECK(v[1] == "224");
        CHECK(v[8] == "112");
        CHECK(v[9] == "1");
        ++axes;
    }
    CHECK(axes == 2);
}

TEST_CASE("cli: map prints the engine's dump of every named map, text and json") {
    for (const char* desc : kProblems) {
        const Problem p = parse_descriptor(desc);
        for (const std::string& name : maps::names()) {
            INFO(desc << " " << name);
            if (name == "winograd" &&
                !algorithm_applies(find_algorithm(Pass::Forward, "winograd"), p)) {  // refused
                CHECK_THROWS_WITH_AS(maps::by_name(name, p), doctest::Contains("stride 1"), Error);
                check_refused({"map", "--map", name, "--problem", desc}, "needs 2-D, kernel 3x3");
                continue;
            }
            const IndexMap m = maps::by_name(name, p);
            const auto with_newline = [](std::string s) {
                return s.empty() || s.back() == '\n' ? s : s + "\n";
            };
            CHECK(run_ok({"map", "--map", name, "--problem", desc}).out == with_newline(m.dump()));
            CHECK(run_ok({"map", "--map", name, "--problem", desc, "--format", "json"}).out ==
                  with_newline(m.dump_json()));
            CHECK(run_ok({"map", "--map=" + name, "--problem=" + std::string(desc), "--limit", "3"})
                      .out == with_newline(m.dump(3)));
            CHECK(run_ok(
                      {"map", "--map", name, "--problem", desc, "--format", "json", "--limit", "0"})
                      .out == with_newline(m.dump_json(0)));
        }
    }
}

TEST_CASE("cli: map --step-granularity lists the pairs step by step") {
    const std::string desc = "mb1ic2ih5oc3kh3sh2ph1";
    const IndexMap m = maps::im2col(parse_descriptor(desc));
    const std::vector<std::string> base{"map", "--map", "im2col", "--problem", desc};
    const auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = base;
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    for (Granularity g :
         {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole}) {
        INFO(granularity_name(g));
        const std::string out = run_ok(with({"--step-granularity", granularity_name(g)})).out;
        CHECK(count_lines_starting(out, "step ") == m.num_steps(g));
        CHECK(count_lines_starting(out, "  dst(") == m.dst().numel());  // a gather: one a dst
        const std::string json =
            run_ok(with({"--step-granularity", granularity_name(g), "--format", "json"})).out;
        CHECK(json.find("\"num_steps\":" + std::to_string(m.num_steps(g))) != std::string::npos);
        CHECK(json.find("\"truncated\":false") != std::string::npos);
    }
    const std::string capped = run_ok(with({"--step-granularity", "line", "--limit", "7"})).out;
    CHECK(count_lines_starting(capped, "  dst(") == 7);
    CHECK(count_lines_starting(capped, "step ") == (7 + m.dst().dims[2] - 1) / m.dst().dims[2]);
    CHECK(capped.find("stopped after 7 pairs") != std::string::npos);
    const std::string capped_json =
        run_ok(with({"--step-granularity", "whole", "--limit", "2", "--format", "json"})).out;
    CHECK(capped_json.find("\"truncated\":true") != std::string::npos);
    // Reduce maps: col2im sums into the image; padding entries go nowhere.
    const std::string col2im =
        run_ok({"map", "--map", "col2im", "--problem", desc, "--step-granularity", "element"}).out;
    CHECK(col2im.find(" += src(") != std::string::npos);
    CHECK(col2im.find("(unused) src(") != std::string::npos);
}

TEST_CASE("cli: compute on given .npy files writes what the engine's direct algorithm computes") {
    TempDir dir;
    std::mt19937 rng(2024);
    for (const char* desc : kProblems) {
        const Problem p = parse_descriptor(desc);
        const Tensor src = convlab::test::integer_tensor(p.src_dims(), rng);
        const Tensor wei = convlab::test::integer_tensor(p.wei_dims(), rng);
        const Tensor bias = convlab::test::integer_tensor({p.oc}, rng);
        const Tensor diff_dst = convlab::test::integer_tensor(p.dst_dims(), rng);
        write_npy(dir / "src.npy", src);
        write_npy(dir / "wei.npy", wei);
        write_npy(dir / "bias.npy", bias);
        write_npy(dir / "diff_dst.npy", diff_dst);
        for (Pass pass : kPasses) {
            Tensor want;
            std::vector<std::string> inputs;
            switch (pass) {
                case Pass::Forward:
                    want = forward(p, src, wei, &bias, "direct");
                    inputs = {"--src",         dir / "src.npy", "--wei",
                              dir / "wei.npy", "--bias",        dir / "bias.npy"};
                    break;
                case Pass::BackwardData:
                    want = backward_data(p, diff_dst, wei, "direct");
                    inputs = {"--diff-dst", dir / "diff_dst.npy", "--wei", dir / "wei.npy"};
                    break;
                case Pass::BackwardWeight:
                    want = backward_weight(p, src, diff_dst, "direct");
                    inputs = {"--src", dir / "src.npy", "--diff-dst", dir / "diff_dst.npy"};
                    break;
                case Pass::BackwardBias:
                    want = backward_bias(p, diff_dst);
                    inputs = {"--diff-dst", dir / "diff_dst.npy"};
                    break;
            }
            const std::string label = std::string(desc) + " " + pass_name(pass);
            INFO(label);
            CHECK(convlab::test::density(want) > 0.25);  // stride/dilation skips leave gaps
            for (const Algorithm* a : algos_for(pass, p)) {
                const std::string algo = a->name;
                const std::string out = dir / "out.npy";
                std::vector<std::string> args{"compute", "--problem",     desc,
                                              "--pass",  pass_name(pass), "--algo",
                                              algo,      "--out",         out};
                args.insert(args.end(), inputs.begin(), inputs.end());
                const Run r = run_ok(args);
                CHECK(r.out == "wrote " + out + " " + want.shape_str() + " " + pass_name(pass) +
                                   " " + algo + "\n");
                check_against(*a, read_npy(out), want,
                              std::string(desc) + " " + pass_name(pass) + " " + algo);
                fs::remove(out);
            }
        }
    }
}

TEST_CASE("cli: generated inputs are deterministic and every algorithm agrees with direct") {
    TempDir dir;
    for (const char* desc : kProblems) {
        for (Pass pass : kPasses) {
            const auto compute = [&](const std::string& algo, const std::string& seed) {
                const std::string out = dir / (algo + "_" + seed + ".npy");
                run_ok({"compute", "--problem", desc, "--pass", pass_name(pass), "--algo", algo,
                        "--seed", seed, "--out", out});
                return read_npy(out);
            };
            const Tensor direct = compute("direct", "7");
            const std::string label = std::string(desc) + " " + pass_name(pass);
            INFO(label);
            CHECK(convlab::test::density(direct) > 0.25);
            for (const Algorithm* a : algos_for(pass, parse_descriptor(desc)))
                check_against(*a, compute(a->name, "7"), direct,
                              std::string(desc) + " " + pass_name(pass) + " " + a->name);
            // The others refuse the problem, naming their rule, and write nothing.
            for (const Algorithm* a : algorithms(pass))
                if (!algorithm_applies(*a, parse_descriptor(desc))) {
                    const std::string out = dir / "refused.npy";
                    check_refused({"compute", "--problem", desc, "--pass", pass_name(pass),
                                   "--algo", a->name, "--seed", "7", "--out", out},
                                  a->rule);
                    CHECK_FALSE(fs::exists(out));
                }
            check_equal(compute("direct", "7"), direct, "same seed, same result");
            const Tensor other = compute("direct", "8");
            bool differs = false;
            for (dim_t i = 0; i < other.numel(); ++i) differs |= other.f32()[i] != direct.f32()[i];
            CHECK(differs);
            for (const auto& f : fs::directory_iterator(dir.path)) fs::remove(f.path());
        }
    }
}

namespace {

// Rounds every element to the storage type (what fp16 / bf16 storage does to dst and diff_src).
Tensor rounded_to(const Tensor& t, DType d) {
    Tensor r = t;
    for (dim_t i = 0; i < r.numel(); ++i)
        r.f32()[i] = d == DType::f16    ? half_to_float(float_to_half(r.f32()[i]))
                     : d == DType::bf16 ? bf16_to_float(float_to_bf16(r.f32()[i]))
                                        : r.f32()[i];
    return r;
}

}  // namespace

TEST_CASE(
    "cli: compute --algo fractal | fractal_via_forward with --dtype and --c0, NCHW .npy in and "
    "out") {
    // Integer data in [-3, 3]: exact in fp16 / bf16, sums exact in fp32. So dst and diff_src
    // equal direct's rounded to the storage type, and the fp32 weight gradient equals direct's.
    TempDir dir;
    std::mt19937 rng(77);
    int runs = 0;
    for (const char* desc : kProblems) {
        const Problem p = parse_descriptor(desc);
        const Tensor src = convlab::test::integer_tensor(p.src_dims(), rng);
        const Tensor wei = convlab::test::integer_tensor(p.wei_dims(), rng);
        const Tensor bias = convlab::test::integer_tensor({p.oc}, rng);
        const Tensor dy = convlab::test::integer_tensor(p.dst_dims(), rng);
        for (const char* name : {"src", "wei", "bias", "dy"})
            write_npy(dir / (std::string(name) + ".npy"), name[0] == 's'   ? src
                                                          : name[0] == 'w' ? wei
                                                          : name[0] == 'b' ? bias
                                                                           : dy);
        const struct {
            Pass pass;
            const char* algo;
            Tensor want;
            std::vector<std::string> inputs;
            bool rounded;
        } cases[] = {
            {Pass::Forward,
             "fractal",
             forward(p, src, wei, &bias, "direct"),
             {"--src", dir / "src.npy", "--wei", dir / "wei.npy", "--bias", dir / "bias.npy"},
             true},
            {Pass::BackwardData,
             "fractal_via_forward",
             backward_data(p, dy, wei, "direct"),
             {"--diff-dst", dir / "dy.npy", "--wei", dir / "wei.npy"},
             true},
            {Pass::BackwardWeight,
             "fractal_via_forward",
             backward_weight(p, src, dy, "direct"),
             {"--src", dir / "src.npy", "--diff-dst", dir / "dy.npy"},
             false},
        };
        for (const auto& c : cases)
            for (const char* dtype : {"", "fp32", "fp16", "bf16"})
                for (const char* c0 : {"", "16", "8", "4"}) {
                    const std::string out = dir / "out.npy";
                    std::vector<std::string> args{"compute", "--problem",       desc,
                                                  "--pass",  pass_name(c.pass), "--algo",
                                                  c.algo,    "--out",           out};
                    args.insert(args.end(), c.inputs.begin(), c.inputs.end());
                    if (*dtype) args.insert(args.end(), {"--dtype", dtype});
                    if (*c0) args.insert(args.end(), {"--c0", c0});
                    const std::string label = joined(args);
                    INFO(label);
                    const Run r = run_ok(args);
                    std::string line = "wrote " + out + " " + c.want.shape_str() + " " +
                                       pass_name(c.pass) + " " + c.algo;
                    if (*dtype || *c0)
                        line += std::string(" c0 ") + (*c0 ? c0 : "16") + " " +
                                (*dtype ? dtype : "fp32") + " storage";
                    CHECK(r.out == line + "\n");
                    const DType st = *dtype ? parse_dtype(dtype) : DType::f32;
                    CHECK(convlab::test::density(c.want) > 0.25);
                    check_equal(read_npy(out), c.rounded ? rounded_to(c.want, st) : c.want, label);
                    fs::remove(out);
                    ++runs;
                }
    }
    CHECK(runs == static_cast<int>(std::size(kProblems)) * 3 * 16);
    // fp16 storage really rounds: 2049 is not an fp16 value (2048 and 2050 are).
    const std::string out = dir / "y.npy";
    Tensor x({1, 1, 1, 1}), w({1, 1, 1, 1});
    x.f32()[0] = 2049.0f;
    w.f32()[0] = 1.0f;
    write_npy(dir / "x1.npy", x);
    write_npy(dir / "w1.npy", w);
    for (const char* dtype : {"fp32", "fp16", "bf16"}) {
        run_ok({"compute", "--problem", "mb1ic1ih1oc1kh1", "--pass", "fwd", "--algo", "fractal",
                "--src", dir / "x1.npy", "--wei", dir / "w1.npy", "--dtype", dtype, "--out", out});
        const float want = std::string(dtype) == "fp32"   ? 2049.0f
                           : std::string(dtype) == "fp16" ? 2048.0f
                                                          : 2048.0f;  // bf16: 8 bits of mantissa
        CHECK(read_npy(out).f32()[0] == want);
    }
}

TEST_CASE(
    "cli: compute --timings of the fractal algorithms shows the converters and the convolution") {
    TempDir dir;
    const std::string out = dir / "o.npy";
    const struct {
        const char* pass;
        const char* algo;
        std::vector<const char*> ops, absent;
    } cases[] = {
        // The products write the plain result / OIHW gradient themselves (no unpack).
        {"fwd", "fractal", {"pack_src", "pack_wei", "im2col", "fractal_gemm"}, {"unpack "}},
        {"bwd_data",
         "fractal_via_forward",
         {"pack_dst", "fliprot", "im2col", "fractal_gemm"},
         {"unpack "}},
        {"bwd_weight",
         "fractal_via_forward",
         {"pack_src", "tnc", "tncf", "fractal_gemm"},
         {"unpack "}},
    };
    for (const auto& c : cases) {
        const Run r = run_ok({"compute", "--problem", "mb2ic20ih9oc18kh3sh2ph1", "--pass", c.pass,
                              "--algo", c.algo, "--c0", "8", "--out", out, "--timings"});
        INFO(r.out);
        for (const char* op : c.ops)
            CHECK_MESSAGE(count_lines_starting(r.out, std::string(op) + " ") == 1, op);
        for (const char* op : c.absent) CHECK_MESSAGE(count_lines_starting(r.out, op) == 0, op);
        // Backward data's im2col reads dY through the zero insertion and the pad: no copies.
        for (const char* op : {"zero-insert ", "pad "})
            CHECK_MESSAGE(count_lines_starting(r.out, op) == 0, op);
        CHECK(count_lines_starting(r.out, "total ") == 1);
    }
}

TEST_CASE("cli: map prints every DaVinci map as davinci::by_name dumps it, with --c0") {
    const char* problems[] = {"g2mb2ic4ih9iw8oc6kh3kw2sh2sw3ph1dh1", "mb2ic3iw11oc6kw3sw2dw1pw2",
                              "mb17ic20ih5oc18kh3sh2ph1"};
    const char* problem3d = "mb2ic3id5ih4iw6oc2kd2kh3kw2sd2sh1sw2";
    const auto with_newline = [](std::string s) {
        return s.empty() || s.back() == '\n' ? s : s + "\n";
    };
    int checked = 0;
    for (const std::string& name : davinci::map_names())
        for (const char* desc : problems)
            for (dim_t c0 : {dim_t{16}, dim_t{8}}) {
                const char* d = name == "fractal_z_3d" ? problem3d : desc;
                INFO(name << " " << d << " c0 " << c0);
                const IndexMap m = davinci::by_name(name, parse_descriptor(d), c0);
                std::vector<std::string> args{"map", "--map", name, "--problem", d};
                if (c0 != 16) args.insert(args.end(), {"--c0", std::to_string(c0)});
                CHECK(run_ok(args).out == with_newline(m.dump()));
                args.insert(args.end(), {"--format", "json", "--limit", "40"});
                CHECK(run_ok(args).out == with_newline(m.dump_json(40)));
                ++checked;
            }
    CHECK(davinci::map_names().size() >= 11);
    CHECK(checked == static_cast<int>(davinci::map_names().size()) * 3 * 2);
    // The classic names stay the NCHW maps; the DaVinci ones are distinct.
    const std::string desc = "mb2ic5ih6oc20oh3kh3sh2ph1";
    const Problem p = parse_descriptor(desc);
    CHECK(run_ok({"map", "--map", "fliprot", "--problem", desc}).out ==
          with_newline(maps::flip_rot(p).dump()));
    CHECK(run_ok({"map", "--map", "tnc", "--problem", desc}).out ==
          with_newline(maps::tnc_src(p).dump()));
    CHECK(run_ok({"map", "--map", "fliprot_fz", "--problem", desc}).out ==
          with_newline(davinci::fliprot_fz(p).dump()));
    // With --c0, the short spellings tnc and fliprot are the DaVinci converters.
    CHECK(run_ok({"map", "--map", "fliprot", "--problem", desc, "--c0", "8"}).out ==
          with_newline(davinci::by_name("fliprot_fz", p, 8).dump()));
    CHECK(run_ok({"map", "--map", "tnc", "--problem", desc, "--c0", "16"}).out ==
          with_newline(davinci::by_name("tnc5d", p, 16).dump()));
    // 3-D: nc1hwc0 packs into NDC1HWC0.
    CHECK(run_ok({"map", "--map", "nc1hwc0", "--problem", problem3d}).out ==
          with_newline(davinci::pack_activation(parse_descriptor(problem3d).src_dims()).dump()));
}

TEST_CASE("cli: map --step-granularity on the DaVinci maps") {
    const std::string desc = "mb2ic5ih6oc20oh3kh3sh2ph1";
    const Problem p = parse_descriptor(desc);
    for (const std::string name : {"tnc5d", "fliprot_fz", "strided5d", "im2col_fractal"})
        for (Granularity g :
             {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole}) {
            INFO(name << " " << granularity_name(g));
            const IndexMap m = davinci::by_name(name, p, 8);
            const std::vector<std::string> args{"map",
                                                "--map",
                                                name,
                                                "--problem",
                                                desc,
                                                "--c0",
                                                "8",
                                                "--step-granularity",
                                                granularity_name(g)};
            const std::string out = run_ok(args).out;
            CHECK(count_lines_starting(out, "step ") == m.num_steps(g));
            CHECK(count_lines_starting(out, "  dst(") == m.dst().numel());  // gathers
            std::vector<std::string> json = args;
            json.insert(json.end(), {"--format", "json"});
            CHECK(run_ok(json).out.find("\"num_steps\":" + std::to_string(m.num_steps(g))) !=
                  std::string::npos);
        }
}

TEST_CASE("cli: bwd_bias takes no algorithm or direct, --timings and --threads") {
    TempDir dir;
    const std::string out = dir / "db.npy";
    const std::vector<std::string> base{
        "compute", "--problem", "mb2ic3ih8oc4kh3ph1", "--pass", "bwd_bias", "--out", out};
    CHECK(run_ok(base).out == "wrote " + out + " (4) bwd_bias direct\n");
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--algo", "direct"});
    run_ok(args);

    const Run timed =
        run_ok({"compute", "--problem", "mb2ic3ih8oc4kh3ph1", "--pass", "fwd", "--algo",
                "im2col_gemm", "--out", out, "--timings", "--threads", "2"});
    set_num_threads(0);
    CHECK(timed.out.rfind("wrote " + out + " (2,4,8,8) fwd im2col_gemm\n", 0) == 0);
    CHECK(timed.out.find("\noperation") != std::string::npos);
    CHECK(timed.out.find("\ntotal") != std::string::npos);
    CHECK(timed.out.find("gemm") != std::string::npos);
}

TEST_CASE("cli: compute without --algo runs auto, equal to direct") {
    TempDir dir;
    const std::string desc = "mb2ic5ih9iw11oc6kh3kw2sh2ph1";  // stride 2, r > 0 on h
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight}) {
        INFO(pass_name(pass));
        const std::string want = dir / "direct.npy", got = dir / "auto.npy";
        run_ok({"compute", "--problem", desc, "--pass", pass_name(pass), "--algo", "direct",
                "--seed", "5", "--out", want});
        const Run r = run_ok(
            {"compute", "--problem", desc, "--pass", pass_name(pass), "--seed", "5", "--out", got});
        CHECK(r.out.find(std::string(pass_name(pass)) + " auto\n") != std::string::npos);
        const Tensor ref = read_npy(want);
        CHECK(convlab::test::density(ref) > 0.25);
        check_equal(read_npy(got), ref, std::string("auto ") + pass_name(pass));
    }
}

TEST_CASE("cli: every bad input exits 2 with one line and writes nothing") {
    TempDir dir;
    const std::string desc = "mb2ic3ih8oc4kh3ph1";  // src (2,3,8,8), wei (4,3,3,3), dst (2,4,8,8)
    std::mt19937 rng(3);
    write_npy(dir / "src.npy", convlab::test::integer_tensor({2, 3, 8, 8}, rng));
    write_npy(dir / "small.npy", convlab::test::integer_tensor({2, 3, 7, 7}, rng));
    {
        Tensor nan_wei = convlab::test::integer_tensor({4, 3, 3, 3}, rng);
        nan_wei.f32()[5] = std::numeric_limits<float>::quiet_NaN();
        write_npy(dir / "nan.npy", nan_wei);
    }
    std::ofstream(dir / "garbage.npy") << "not numpy at all";
    fs::create_directory(dir.path / "folder");
    const std::vector<std::string> prepared = dir.listing();

    const std::string out = dir / "out.npy";
    const auto fwd = [&](std::vector<std::string> extra) {
        std::vector<std::string> a{"compute", "--problem", desc,    "--pass", "fwd",
                                   "--algo",  "direct",    "--out", out};
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    const struct {
        std::vector<std::string> args;
        std::string needle;
    } cases[] = {
        {{"frobnicate"}, "unknown command 'frobnicate' (commands: compute, map, algos"},
        {{"--frob"}, "unknown option '--frob'"},
        {{"help", "nope"}, "help: unknown command 'nope'"},
        {{"compute", "--problem"}, "--problem needs a value (DESC)"},
        {{"compute", "--problem", "--pass", "fwd"}, "--problem needs a value"},
        {{"compute", "--out="}, "--out needs a value"},
        {{"compute", "--pass", "fwd", "--algo", "direct", "--out", out}, "compute needs --problem"},
        {{"compute", "--problem", desc, "--algo", "direct", "--out", out}, "compute needs --pass"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "direct"},
         "compute needs --out"},
        {{"compute", "--problem", "mb2ic3ih8oc4kh3ph1zz9", "--pass", "fwd", "--algo", "direct",
          "--out", out},
         "--problem: "},
        {{"compute", "--problem", "mb1ic3ih4oc4kh7", "--pass", "fwd", "--algo", "direct", "--out",
          out},
         "--problem: "},
        {{"compute", "--problem", desc, "--pass", "sideways", "--algo", "direct", "--out", out},
         "--pass: pass 'sideways'"},
        {fwd({"--algo", "nope"}), "--algo given twice"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "nope", "--out", out},
         "--algo: "},
        {{"compute", "--problem", desc, "--pass", "bwd_bias", "--algo", "im2col_gemm", "--out",
          out},
         "--algo: "},
        {fwd({"--src", dir / "small.npy"}),
         "--src " + (dir / "small.npy") + " has shape (2,3,7,7), problem needs (2,3,8,8)"},
        {fwd({"--wei", dir / "src.npy"}), "has shape (2,3,8,8), problem needs (4,3,3,3)"},
        {fwd({"--src", dir / "garbage.npy"}), dir / "garbage.npy" + ": not an .npy file"},
        {fwd({"--src", dir / "missing.npy"}), "cannot open: No such file or directory"},
        {fwd({"--wei", dir / "nan.npy"}), "element 5 at (0,0,1,2) is NaN: input must be finite"},
        {fwd({"--diff-dst", dir / "src.npy"}),
         "--diff-dst is not read by fwd (it reads --src and --wei)"},
        {{"compute", "--problem", desc, "--pass", "bwd_data", "--algo", "direct", "--out", out,
          "--src", dir / "src.npy"},
         "--src is not read by bwd_data"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "direct", "--out",
          dir / "no/dir/y.npy"},
         "cannot write " + (dir / "no/dir/y.npy") + ": No such file or directory"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "direct", "--out",
          dir / "folder"},
         "cannot write " + (dir / "folder") + ": Is a directory"},
        {fwd({"--problem", desc}), "--problem given twice"},
        {fwd({"--seed", "abc"}), "--seed 'abc'"},
        {fwd({"--seed", "-1"}), "--seed '-1'"},
        {fwd({"--threads", "-1"}), "--threads '-1'"},
        {fwd({"--threads", "2x"}), "--threads '2x'"},
        {fwd({"--timings=yes"}), "--timings takes no value"},
        {fwd({"extra"}), "compute: unexpected argument 'extra'"},
        {fwd({"--unknown", "1"}), "compute: unknown option '--unknown' (options: --problem"},
        // Too large to hold: refused by the tensor limit, not by a crash or a swap storm.
        {{"compute", "--problem", "mb1ic1ih65536iw65537oc1kh1kw1", "--pass", "bwd_bias", "--out",
          out},
         "limit"},
        {{"map", "--map", "nope", "--problem", desc}, "--map: "},
        {{"map", "--map", "im2col", "--problem", desc, "--format", "xml"},
         "--format 'xml': expected text, json, npy, grid or tex"},
        {{"map", "--map", "im2col", "--problem", desc, "--limit", "-3"}, "--limit '-3'"},
        {{"map", "--map", "im2col", "--problem", desc, "--step-granularity", "tiles"},
         "--step-granularity: "},
        {{"map", "--problem", desc}, "map needs --map"},
        {{"map", "--map", "im2col", "--problem", desc, "--c0", "8"},
         "--c0 is taken by the DaVinci maps only; im2col is an NCHW map"},
        {{"map", "--map", "strided", "--problem", desc, "--c0", "16"},
         "--c0 is taken by the DaVinci maps only; strided is an NCHW map"},
        {{"map", "--map", "tnc5d", "--problem", desc, "--c0", "0"},
         "--c0 '0': expected an integer in [1, 64]"},
        {{"map", "--map", "tnc5d", "--problem", desc, "--c0", "65"}, "--c0 '65'"},
        {{"map", "--map", "tnc5d", "--problem", desc, "--c0", "8x"}, "--c0 '8x'"},
        {{"map", "--map", "fliprot5d", "--problem", desc},
         "--map: map 'fliprot5d': unknown; maps: im2col, col2im, strided, pad, fliprot, tnc, "
         "winograd"},
        {{"map", "--map", "fractal_z_3d", "--problem", desc},
         "--map: map fractal_z_3d: the problem is 2-D; use fractal_z"},
        {{"map", "--map", "fractal_z", "--problem", "mb1ic3id4ih4oc4kd3kh3"},
         "--map: map fractal_z: the problem is 3-D; use fractal_z_3d"},
        {fwd({"--dtype", "fp16"}),
         "--dtype is taken by the DaVinci algorithms only (fwd fractal, bwd_data and bwd_weight "
         "fractal_via_forward); fwd direct computes in fp32 on NCHW"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "im2col_gemm", "--out", out,
          "--c0", "8"},
         "--c0 is taken by the DaVinci algorithms only"},
        {{"compute", "--problem", desc, "--pass", "bwd_data", "--algo", "via_forward", "--out", out,
          "--c0", "8"},
         "bwd_data via_forward computes in fp32 on NCHW"},
        {{"compute", "--problem", desc, "--pass", "bwd_weight", "--algo", "im2col_gemm", "--out",
          out, "--dtype", "bf16"},
         "--dtype is taken by the DaVinci algorithms only"},
        {{"compute", "--problem", desc, "--pass", "bwd_bias", "--out", out, "--dtype", "fp16"},
         "bwd_bias direct computes in fp32"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "fractal_via_forward", "--out",
          out},
         "--algo: algorithm 'fractal_via_forward' is not one of fwd's"},
        {{"compute", "--problem", desc, "--pass", "bwd_data", "--algo", "fractal", "--out", out},
         "--algo: algorithm 'fractal' is not one of bwd_data's"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "fractal", "--out", out,
          "--dtype", "fp64"},
         "--dtype: dtype 'fp64': expected fp32, fp16 or bf16"},
        {{"compute", "--problem", desc, "--pass", "bwd_weight", "--algo", "fractal_via_forward",
          "--out", out, "--c0", "0"},
         "--c0 '0': expected an integer in [1, 64]"},
        {{"compute", "--problem", desc, "--pass", "bwd_data", "--algo", "fractal_via_forward",
          "--out", out, "--c0"},
         "--c0 needs a value (N)"},
        {{"compute", "--problem", desc, "--pass", "fwd", "--algo", "fractal", "--out", out, "--src",
          dir / "small.npy"},
         "has shape (2,3,7,7), problem needs (2,3,8,8)"},
        {{"compute", "--problem", desc, "--pass", "bwd_weight", "--algo", "fractal_via_forward",
          "--out", dir / "folder", "--c0", "8"},
         "cannot write " + (dir / "folder") + ": Is a directory"},
        {{"algos", "--all"}, "algos: unknown option '--all'"},
        {{"describe", desc}, "describe: unexpected argument"},
        {{"describe"}, "describe needs --problem"},
        {{"describe", "--problem", "ic0"}, "--problem: "},
    };
    for (const auto& c : cases) {
        check_refused(c.args, c.needle);
        CHECK_FALSE(fs::exists(out));
        CHECK(dir.listing() == prepared);
        CHECK(fs::is_empty(dir.path / "folder"));
    }
}

TEST_CASE("cli: a failed compute leaves an existing output untouched") {
    TempDir dir;
    const std::string out = dir / "out.npy";
    std::ofstream(out) << "previous result";
    std::ofstream(dir / "garbage.npy") << "garbage";
    check_refused({"compute", "--problem", "mb2ic3ih8oc4kh3ph1", "--pass", "fwd", "--algo",
                   "direct", "--src", dir / "garbage.npy", "--out", out},
                  "not an .npy file");
    std::ifstream in(out);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "previous result");
    CHECK(dir.listing() == std::vector<std::string>{"garbage.npy", "out.npy"});
}

TEST_CASE("cli: the convlab binary exits 0 for algos and 2 for a bad descriptor") {
    TempDir dir;
    const auto shell = [&](const std::string& args) {
        const std::string cmd = std::string("'") + CONVLAB_BINARY + "' " + args + " > '" +
                                (dir / "stdout") + "' 2> '" + (dir / "stderr") + "'";
        const int status = std::system(cmd.c_str());
        REQUIRE(WIFEXITED(status));
        return WEXITSTATUS(status);
    };
    const auto text = [&](const char* name) {
        std::ifstream in(dir / name);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    CHECK(shell("algos") == 0);
    CHECK(text("stdout").find("im2col_gemm") != std::string::npos);
    CHECK(text("stderr").empty());

    CHECK(shell("describe --problem mb2ic3ih8oc4kh3ph1zz9") == 2);
    const std::string err = text("stderr");
    CHECK(err.rfind("convlab: --problem: ", 0) == 0);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK(text("stdout").empty());

    CHECK(shell("compute --problem mb2ic3ih8oc4kh3ph1 --pass fwd --algo im2col_gemm --out '" +
                (dir / "y.npy") + "'") == 0);
    CHECK(read_npy(dir / "y.npy").dims() == std::vector<dim_t>{2, 4, 8, 8});
}

TEST_CASE("bench summary: GFLOP/s and share of the measured peak beside the peer, peak RSS") {
    bench::Results r;
    r.machine.peak_gflops = 200;
    r.machine.threads = 2;
    r.layers.push_back({"l", "mb1ic1ih1oc1kh1"});
    for (const char* name : {"oneDNN", "implicit_gemm"}) {
        bench::Measurement m;
        m.pass = Pass::BackwardData;
        m.algorithm = name;
        m.peer = std::string(name) == "oneDNN";
        m.ran = true;
        m.check.pass = true;
        m.flops = 1e8;                           // 0.1 GFLOP
        m.total.median_ms = m.peer ? 1.0 : 0.5;  // 100 and 200 GFLOP/s
        r.rows.push_back(m);
    }
    std::ostringstream out;
    cli::print_bench_summary(r, out);
    const std::string s = out.str();
    INFO(s);
    CHECK(s.find("%peak") != std::string::npos);
    CHECK(s.find("100.0    50%") != std::string::npos);  // the peer: 100 GFLOP/s, half the peak
    CHECK(s.find("200.0   100%      0.50x") != std::string::npos);
    CHECK(s.find("200.0 GFLOP/s for 2 threads") != std::string::npos);
    CHECK(s.find("noisy") == std::string::npos);
    CHECK(bench::peak_rss_bytes() > (1u << 20));  // this process holds more than 1 MiB
    // A second layer measured on a slow machine: counted as noisy, and the ratio given again
    // over the layer measured calm on both sides.
    r.layers.push_back({"m", "mb1ic1ih1oc1kh1"});
    for (bench::Measurement m : std::vector<bench::Measurement>(r.rows)) {
        m.layer = 1;
        m.speed = 0.5;
        m.total.median_ms = m.peer ? 1.0 : 3.0;
        r.rows.push_back(m);
    }
    std::ostringstream noisy;
    cli::print_bench_summary(r, noisy);
    const std::string t = noisy.str();
    INFO(t);
    CHECK(t.find("1.75x  1 noisy; 0.50x over the 1 calm") != std::string::npos);  // 3.5 / 2
    CHECK(t.find("2        2.000     100.0    50%          -  1 noisy\n") != std::string::npos);
}
