// The memory budget (each algorithm's stated work memory, held against what it allocates; the
// refusals and auto's choices), exceptions carried out of parallel regions, overflow-checked
// geometry on extreme descriptors, and the thread count taken from the environment.
#include <doctest/doctest.h>
#include <sys/wait.h>  // WEXITSTATUS

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../engine/src/conv/algorithms.hpp"
#include "../engine/src/gemm/microkernel.hpp"
#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "test_files.hpp"
#include "test_util.hpp"

using namespace convlab;
using convlab::test::integer_tensor;
using convlab::test::Run;
using convlab::test::TempDir;

namespace {

// The budget set for one scope, the default restored after it.
struct BudgetScope {
    explicit BudgetScope(std::int64_t bytes) { set_memory_budget(bytes); }
    ~BudgetScope() { set_memory_budget(0); }
    BudgetScope(const BudgetScope&) = delete;
    BudgetScope& operator=(const BudgetScope&) = delete;
};

// Runs algorithm a for its pass of p on integer data under tn; returns the work memory it took
// at its peak (scratch, counted buffers), from none held.
std::int64_t measured_work(const Algorithm& a, const Problem& p, std::mt19937& rng,
                           const Tuning& tn) {
    const Tensor x = integer_tensor(p.src_dims(), rng), w = integer_tensor(p.wei_dims(), rng);
    const Tensor dy = integer_tensor(p.dst_dims(), rng);
    detail::release_scratch();
    detail::reset_work_memory_peak();
    const auto before = static_cast<std::int64_t>(detail::work_memory_peak());
    switch (a.pass) {
        case Pass::Forward:
            (void)forward(p, x, w, nullptr, a.name, nullptr, nullptr, tn);
            break;
        case Pass::BackwardData:
            (void)backward_data(p, dy, w, a.name, nullptr, nullptr, tn);
            break;
        default:
            (void)backward_weight(p, x, dy, a.name, nullptr, tn);
            break;
    }
    return static_cast<std::int64_t>(detail::work_memory_peak()) - before;
}

// Problems that take the algorithms' different paths: 3x3 layers (winograd, the shifted
// planes), conv1 (col2im in blocks, de-interleaved input), strided and unstrided 1x1s (sampled
// input, pointwise tiles, merged images), groups with dilation, 1-D and 3-D, a batch of small
// images (merged products, images side by side).
const char* const kProblems[] = {
    "mb2ic3ih8oc4kh3ph1",       "mb1ic64ih56oc64kh3ph1",
    "mb1ic3ih224oc64kh7sh2ph3", "mb2ic256ih14oc512kh1sh2",
    "mb8ic64ih28oc128kh1",      "g4mb2ic16ih10oc8kh3sh2dh1ph2",
    "mb2ic5iw100oc7kw5sw3pw2",  "mb1ic4id8ih8iw8oc4kd3kh3kw3pd1ph1pw1",
    "mb32ic64ih7oc64kh3ph1",    "mb1ic32ih40oc16kh4sh3ph1",
};

}  // namespace

TEST_CASE("budget: every algorithm's stated work memory holds what it allocates") {
    Tuning tn;
    std::mt19937 rng(63);
    int measured = 0, allocating = 0;
    // The default paths, then those taken wherever they can run, then none of the shifted ones.
    for (const Rule rule : {Rule::Auto, Rule::Always, Rule::Never}) {
        tn.shifted = rule;
        tn.col2im_blocks = rule;
        tn.merge_wgrad = rule;
        for (const char* desc : kProblems) {
            const Problem p = parse_descriptor(desc);
            for (const Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight})
                for (const Algorithm* a : algorithms(pass)) {
                    if (std::string_view(a->name) == "direct" || !algorithm_applies(*a, p))
                        continue;
                    const std::int64_t need = work_bytes(*a, p, 16, tn);
                    const std::int64_t took = measured_work(*a, p, rng, tn);
                    INFO(desc << " " << pass_name(pass) << " " << a->name << " rule "
                              << static_cast<int>(rule) << ": stated " << need << " bytes, took "
                              << took);
                    CHECK(took <= need);
                    ++measured;
                    allocating += took > 0;
                }
        }
    }
    detail::release_scratch();
    // The instrument sees allocations (a bound of 0 would fail above).
    CHECK(measured > 100);
    CHECK(allocating > measured / 2);
}

TEST_CASE("budget: im2col_gemm's column matrix is stated and counted") {
    // conv1 of one image: C/G * k * k x out positions = 147 x 12544 floats, at least that.
    const Problem p = parse_descriptor("mb1ic3ih224oc64kh7sh2ph3");
    const Algorithm& a = find_algorithm(Pass::Forward, "im2col_gemm");
    std::mt19937 rng(1);
    const std::int64_t col = 147 * 12544 * 4;
    CHECK(work_bytes(a, p) >= col);
    CHECK(measured_work(a, p, rng, Tuning{}) >= col);
}

TEST_CASE("budget: work beyond the budget is refused before anything is allocated") {
    const Problem p = parse_descriptor("mb1ic16ih256oc16kh3ph1");
    const Algorithm& im2col = find_algorithm(Pass::Forward, "im2col_gemm");
    const std::int64_t need = work_bytes(im2col, p);
    CHECK(need > (std::int64_t{8} << 20));  // its column matrix: 144 x 65536 floats
    std::mt19937 rng(2);
    const Tensor x = integer_tensor(p.src_dims(), rng), w = integer_tensor(p.wei_dims(), rng);
    const BudgetScope budget(std::int64_t{8} << 20);
    detail::release_scratch();
    detail::reset_work_memory_peak();
    const auto before = detail::work_memory_peak();
    try {
        (void)forward(p, x, w, nullptr, "im2col_gemm");
        FAIL("im2col_gemm computed beyond the budget");
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("im2col_gemm (fwd) needs " + format_bytes(need)) == 0);
        CHECK(msg.find("memory budget of 8.00 MiB") != std::string::npos);
    }
    CHECK(detail::work_memory_peak() == before);
    // auto takes an algorithm that fits, and computes what direct computes.
    const Algorithm& chosen = auto_algorithm(p, Pass::Forward);
    CHECK(work_bytes(chosen, p) <= memory_budget());
    CHECK(work_bytes(find_algorithm(Pass::Forward, "auto"), p) <= memory_budget());
    convlab::test::check_equal(forward(p, x, w, nullptr, "auto"),
                               forward(p, x, w, nullptr, "direct"), "auto within the budget");
}

TEST_CASE("budget: auto never takes an algorithm whose work does not fit") {
    // A 3x3 layer where auto takes winograd: with a budget below winograd's work it takes
    // another, and with a budget below every other's, direct.
    const Problem p = parse_descriptor("mb1ic64ih56oc64kh3ph1");
    for (const Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight}) {
        const Algorithm& first = auto_algorithm(p, pass);
        INFO(pass_name(pass));
        CHECK(std::string_view(first.name) == "winograd");
        {
            const BudgetScope budget(work_bytes(first, p) - 1);
            const Algorithm& second = auto_algorithm(p, pass);
            CHECK(std::string_view(second.name) != "winograd");
            CHECK(work_bytes(second, p) <= memory_budget());
        }
        {
            const BudgetScope budget(1);
            CHECK(std::string_view(auto_algorithm(p, pass).name) == "direct");
        }
    }
}

TEST_CASE("budget: sizes of --max-memory") {
    CHECK(parse_memory_size("--max-memory", "512M") == std::int64_t{512} << 20);
    CHECK(parse_memory_size("--max-memory", "4G") == std::int64_t{4} << 30);
    CHECK(parse_memory_size("--max-memory", "4GiB") == std::int64_t{4} << 30);
    CHECK(parse_memory_size("--max-memory", "1.5g") == std::int64_t{3} << 29);
    CHECK(parse_memory_size("--max-memory", "2T") == std::int64_t{2} << 40);
    CHECK(parse_memory_size("--max-memory", "1048576") == 1048576);
    for (const char* bad : {"", "G", "abc", "4X", "4GB2", "1.2.3G", "1K", "0", "-1G", "9000000T"})
        CHECK_THROWS_WITH_AS(parse_memory_size("--max-memory", bad),
                             doctest::Contains("--max-memory '"), Error);
    CHECK(format_bytes(512) == "512 B");
    CHECK(format_bytes(std::int64_t{3} << 29) == "1.50 GiB");
    CHECK(format_bytes(std::numeric_limits<std::int64_t>::max()) == "more than 8 EiB");
}

TEST_CASE("budget: compute refuses the problems that failed late, with the budget") {
    // Tensors that fit, work buffers that do not: refused before allocating, one line naming the
    // algorithm, its need and the budget; auto computes them within the budget.
    TempDir dir;
    struct Case {
        const char* problem;
        const char* pass;
        const char* algo;
    };
    for (const Case& c : {Case{"mb1ic64ih1024oc64kh3ph1", "fwd", "im2col_gemm"},
                          Case{"mb1ic64ih1024oc64kh3ph1", "bwd_data", "fractal_via_forward"},
                          Case{"mb1ic1ih16384oc16kh1sh64", "bwd_data", "via_forward"}}) {
        const Run r = convlab::test::run_in_process({"compute", "--problem", c.problem, "--pass",
                                                     c.pass, "--algo", c.algo, "--max-memory",
                                                     "512M", "--out", dir / "out.npy"});
        INFO(c.problem << " " << c.algo << ": " << r.err);
        CHECK(r.status == 2);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.find(std::string("convlab: ") + c.algo + " (" + c.pass + ") needs ") == 0);
        CHECK(r.err.find("more than the memory budget of 512.00 MiB (--max-memory)") !=
              std::string::npos);
        CHECK(dir.listing().empty());
    }
    // auto's choice for them fits.
    set_memory_budget(std::int64_t{512} << 20);
    for (const char* desc : {"mb1ic64ih1024oc64kh3ph1", "mb1ic1ih16384oc16kh1sh64"})
        for (const Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight})
            CHECK(work_bytes(auto_algorithm(parse_descriptor(desc), pass),
                             parse_descriptor(desc)) <= memory_budget());
    set_memory_budget(0);
}

TEST_CASE("budget: describe states each algorithm's work memory") {
    const Run r = convlab::test::run_in_process({"describe", "--problem", "mb1ic64ih1024oc64kh3ph1",
                                                 "--threads", "2", "--max-memory", "1G"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("work memory per algorithm (2 threads; budget 1.00 GiB, --max-memory):") !=
          std::string::npos);
    // The column matrix of one image: 576 x 1048576 floats, 2.25 GiB, and the GEMM's packing.
    const auto line = [&](const std::string& start) {
        const std::size_t at = r.out.find(start);
        REQUIRE(at != std::string::npos);
        return r.out.substr(at, r.out.find('\n', at) - at);
    };
    CHECK(line("  fwd        im2col_gemm").find("over the budget: refused") != std::string::npos);
    CHECK(line("  fwd        im2col_gemm").find(" GiB") != std::string::npos);
    CHECK(line("  fwd        direct").find("0 B") != std::string::npos);
    CHECK(line("  fwd        auto").find("(takes ") != std::string::npos);
    CHECK(line("  fwd        auto").find("over the budget") == std::string::npos);
    CHECK(line("  bwd_data   winograd").find("over the budget") == std::string::npos);
    const Run s = convlab::test::run_in_process(
        {"describe", "--problem", "mb1ic1ih9oc1kh2sh2", "--max-memory", "1G"});
    CHECK(s.out.find("does not apply (2-D, kernel 3x3, stride 1, no dilation)") !=
          std::string::npos);
}

TEST_CASE("parallel regions: an exception thrown on a thread reaches the caller") {
    // run_threads is the GEMM's region; before, the exception ended the program (terminate).
    struct Ctx {
        int thrown_on = 1;
    } ctx;
    const auto fn = [](void* c, int t) {
        if (t == static_cast<Ctx*>(c)->thrown_on) throw Error("thread " + std::to_string(t));
    };
    CHECK_THROWS_WITH_AS(detail::run_threads(2, fn, &ctx), "thread 1", Error);
    ctx.thrown_on = 0;
    CHECK_THROWS_WITH_AS(detail::run_threads(2, fn, &ctx), "thread 0", Error);
}

TEST_CASE("parallel regions: col2im's blocks that do not fit memory end in one line") {
    // One block of this problem needs 34 GB per thread; the tensors are under 1 MB.
    TempDir dir;
    const std::string args =
        "compute --pass bwd_data --algo col2im --problem mb1ic1iw65536oc1kw131072pw65536 "
        "--threads 2 --out out.npy";
    // With a budget that admits it, under an address-space limit, its allocation fails inside
    // col2im's parallel region: "out of memory", exit 2, not an abort (SIGABRT before). The
    // limit is left out under AddressSanitizer, whose shadow memory needs the address space.
#if !defined(__SANITIZE_ADDRESS__)
    {
        const std::string cmd = "cd '" + dir.path.string() + "' && ulimit -v 8000000 && '" +
                                CONVLAB_BINARY + "' " + args +
                                " --max-memory 1000T >stdout.txt 2>stderr.txt";
        const int status = std::system(cmd.c_str());
        REQUIRE(WIFEXITED(status));
        std::ifstream fe(dir / "stderr.txt");
        const std::string err{std::istreambuf_iterator<char>(fe), {}};
        INFO(err);
        CHECK(WEXITSTATUS(status) == 2);
        CHECK(std::count(err.begin(), err.end(), '\n') == 1);
        CHECK(err.find("convlab: out of memory") == 0);
        CHECK(dir.listing() == std::vector<std::string>{"stderr.txt", "stdout.txt"});
    }
#endif
    // Within the budget it is refused before any work.
    const Run r = convlab::test::run_binary(args + " --max-memory 16G", dir.path);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find("convlab: col2im (bwd_data) needs ") == 0);
    CHECK(r.err.find("memory budget of 16.00 GiB") != std::string::npos);
}

TEST_CASE("threads: OMP_NUM_THREADS beyond the cap runs on the cap") {
    // 100000 threads under an address-space limit failed inside the OpenMP runtime; the
    // environment's count is capped at kMaxThreads, as --threads is.
    TempDir dir;
#if !defined(__SANITIZE_ADDRESS__)
    const std::string limit = "ulimit -v 16000000 && ";
#else
    const std::string limit;
#endif
    const std::string cmd = "cd '" + dir.path.string() + "' && " + limit +
                            "OMP_NUM_THREADS=100000 '" + CONVLAB_BINARY +
                            "' compute --problem mb2ic3ih8oc4kh3ph1 --pass fwd --algo im2col_gemm "
                            "--out y.npy >stdout.txt 2>stderr.txt";
    const int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    std::ifstream fe(dir / "stderr.txt");
    const std::string err{std::istreambuf_iterator<char>(fe), {}};
    INFO(err);
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("overflow: extreme strides, padding, dilation and sizes are computed or refused") {
    // Every algorithm of every pass through describe and compute: exit 0, or 2 with one line.
    // Under UBSan a signed overflow in the geometry or sizing would end the run (a stride of
    // 2^31 overflowed shifted_possible's plane size).
    TempDir dir;
    const char* const problems[] = {
        "mb1ic1ih4iw4oc1kh2kw2sh2147483648sw2147483648",
        "mb1ic2ih3oc2kh3sh2147483648ph1",
        "mb1ic1iw8oc1kw3dw1073741823pw1073741824",
        "mb1ic1id2ih2iw2oc1kd1kh1kw1sd2147483648sh2147483648sw2147483648",
        "mb1ic2ih2oc2kh2sh2147483648ph2147483647phe0",
        "mb2ic4ih5oc4kh5ph2147483648",
        "mb1024ic1024ih128oc1024kh127ph63",
    };
    for (const char* desc : problems) {
        const Run d = convlab::test::run_in_process({"describe", "--problem", desc});
        INFO(desc << ": " << d.err);
        CHECK((d.status == 0 || d.status == 2));
        if (d.status == 2) {
            CHECK(std::count(d.err.begin(), d.err.end(), '\n') == 1);
            continue;
        }
    }
    // The multiply-adds past 2^56 are refused by name.
    const Run big = convlab::test::run_in_process(
        {"describe", "--problem", "mb1024ic1024ih128oc1024kh127ph63"});
    CHECK(big.status == 2);
    CHECK(big.err.find("multiply-adds N*K*(C/G)*prod(out)*prod(kernel) = ") != std::string::npos);
}
