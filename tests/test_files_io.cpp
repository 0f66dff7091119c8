// Files in and out (output_file.hpp) and interrupts: special files refused as inputs before they
// can block or fill memory, --out written only to a regular file or a new path (through
// symlinks, never replacing a device or FIFO), temporaries short, unique and removed on errors
// and on SIGINT, `map` streaming, and bench options refused before anything is printed. Runs
// that could hang before the fix go through the binary under `timeout`.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "convlab/bench.hpp"
#include "convlab/index_map.hpp"
#include "convlab/npy.hpp"
#include "convlab/output_file.hpp"
#include "lesson/lesson.hpp"
#include "model/timings_state.hpp"
#include "test_files.hpp"

using namespace convlab;
namespace fs = std::filesystem;
using convlab::test::Run;
using convlab::test::TempDir;

namespace {

const auto run = convlab::test::run_in_process;

std::string quoted(const std::string& s) {
    return "'" + s + "'";
}

// The binary with `args` under `timeout` (a run that would block is killed after `seconds`),
// stdout and stderr captured. status 124 or 137: it hung.
struct Timed {
    int status = -1;
    double seconds = 0;
    std::string out, err;
};
Timed run_timed(const std::string& args, const TempDir& dir, int seconds = 20) {
    const std::string o = dir / "stdout.txt", e = dir / "stderr.txt";
    const std::string cmd = "timeout -s KILL " + std::to_string(seconds) + " " +
                            quoted(CONVLAB_BINARY) + " " + args + " >" + quoted(o) + " 2>" +
                            quoted(e);
    const auto t0 = std::chrono::steady_clock::now();
    const int s = std::system(cmd.c_str());
    Timed r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    std::ifstream fo(o), fe(e);
    r.out.assign(std::istreambuf_iterator<char>(fo), {});
    r.err.assign(std::istreambuf_iterator<char>(fe), {});
    fs::remove(o);
    fs::remove(e);
    return r;
}

// One "convlab: " line naming `needle`, exit status 2.
void check_one_line(const Timed& r, const std::string& needle) {
    INFO("stderr: " << r.err << "stdout: " << r.out);
    CHECK(r.status == 2);
    CHECK(r.err.rfind("convlab: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(needle) != std::string::npos);
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool is_fifo(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// Entries of the folder whose name starts ".cl" (the temporaries of output_file.cpp).
int temporaries_in(const std::string& dir) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        n += e.path().filename().string().rfind(".cl", 0) == 0;
    return n;
}

const std::string kCompute = "compute --problem mb1ic2ih5oc2kh3 --pass fwd --algo direct";

}  // namespace

// [SECTION] inputs

TEST_CASE("files: a FIFO as --src or as a lesson file is refused at once, not waited on") {
    TempDir dir;
    const std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const Timed src =
        run_timed(kCompute + " --src " + quoted(fifo) + " --out " + quoted(dir / "y.npy"), dir);
    CHECK(src.seconds < 15);
    check_one_line(src, fifo + ": is a FIFO, not an .npy file");
    CHECK_FALSE(fs::exists(dir / "y.npy"));

    const Timed lesson = run_timed("lesson check " + quoted(fifo), dir);
    CHECK(lesson.seconds < 15);
    CHECK(lesson.status == 2);
    CHECK(lesson.err.find(fifo + ": is a FIFO, not a lesson file") != std::string::npos);
    CHECK(is_fifo(fifo));
}

TEST_CASE("files: /dev/zero as a lesson file is refused before it is read") {
    TempDir dir;
    const Timed r = run_timed("lesson check /dev/zero", dir);
    CHECK(r.seconds < 15);
    CHECK(r.status == 2);
    CHECK(r.err.find("/dev/zero: is a character device, not a lesson file") != std::string::npos);
}

TEST_CASE("files: a directory as a lesson or shape file is called a directory") {
    TempDir dir;
    fs::create_directories(dir / "folder");
    const Run lesson = run({"lesson", "check", dir / "folder"});
    CHECK(lesson.status == 2);
    CHECK(lesson.err.find(dir / "folder" + ": is a directory, not a lesson file") !=
          std::string::npos);
    CHECK((lesson.out + lesson.err).find("title") == std::string::npos);
    const Run shapes = run({"bench", "--shapes", dir / "folder", "--out", dir / "o"});
    CHECK(shapes.status == 2);
    CHECK(shapes.err.find("--shapes: " + dir / "folder" + ": is a directory, not a shape file") !=
          std::string::npos);
    CHECK(shapes.err.find("holds no layer") == std::string::npos);
}

TEST_CASE("files: a lesson file larger than a lesson may be is refused unread") {
    TempDir dir;
    const std::string big = dir / "big.toml";
    std::ofstream(big) << std::string(lesson::kMaxLessonBytes + 1, '#');
    const Run r = run({"lesson", "check", big});
    CHECK(r.status == 2);
    CHECK(r.err.find("more than a lesson file may hold") != std::string::npos);
}

TEST_CASE("files: an .npy header longer than any tensor needs is refused before it is read") {
    TempDir dir;
    // Version 2.0 declares a 2000000-byte header; the file holds it (all spaces).
    std::string bytes("\x93NUMPY\x02\x00", 8);
    const std::uint32_t len = 2000000;
    for (int b = 0; b < 4; ++b) bytes += static_cast<char>((len >> (8 * b)) & 0xff);
    bytes += std::string(len, ' ');
    const std::string path = dir / "long.npy";
    std::ofstream(path, std::ios::binary) << bytes;
    try {
        read_npy(path);
        FAIL("read_npy accepted a 2000000-byte header");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find(".npy header of 2000000 bytes: at most 1048576") !=
              std::string::npos);
    }
}

// [SECTION] outputs

TEST_CASE("files: --out refuses a FIFO and a symlink to a device, and leaves both as they were") {
    TempDir dir;
    const std::string fifo = dir / "fifo.npy";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const Timed r = run_timed(kCompute + " --out " + quoted(fifo), dir);
    check_one_line(r, "cannot write " + fifo + ": is a FIFO; only a regular file or a new path");
    CHECK(is_fifo(fifo));

    // As /dev/null would be: a character device reached through a symlink in the test's folder.
    const std::string link = dir / "null.npy";
    fs::create_symlink("/dev/null", link);
    const Timed n = run_timed(kCompute + " --out " + quoted(link), dir);
    check_one_line(n, "cannot write " + link + ": is a character device");
    CHECK(fs::is_symlink(link));
    CHECK(fs::read_symlink(link) == "/dev/null");

    const Timed dash = run_timed(kCompute + " --out -", dir);
    check_one_line(dash, "cannot write -: standard output is not an output file");
    CHECK(temporaries_in(dir.path) == 0);
}

TEST_CASE("files: --out through a symlink writes its target, with the temporary beside it") {
    TempDir dir;
    fs::create_directories(dir / "data");
    dir.write("data/real.npy", "previous");
    const std::string link = dir / "link.npy";
    fs::create_symlink("data/real.npy", link);
    const Run r = run({"compute", "--problem", "mb1ic2ih5oc2kh3", "--pass", "fwd", "--algo",
                       "direct", "--out", link});
    CHECK(r.status == 0);
    CHECK(fs::is_symlink(link));
    CHECK(read_npy(dir / "data/real.npy").dims() == std::vector<dim_t>{1, 2, 3, 3});
    CHECK(temporaries_in(dir.path) == 0);
    CHECK(temporaries_in(dir / "data") == 0);

    // A dangling symlink: the file it names is created.
    fs::create_symlink("data/new.npy", dir / "dangling.npy");
    CHECK(run({"compute", "--problem", "mb1ic2ih5oc2kh3", "--pass", "fwd", "--algo", "direct",
               "--out", dir / "dangling.npy"})
              .status == 0);
    CHECK(fs::is_symlink(dir / "dangling.npy"));
    CHECK(read_npy(dir / "data/new.npy").dims() == std::vector<dim_t>{1, 2, 3, 3});
}

TEST_CASE("files: output names of 250 to 255 bytes are written") {
    TempDir dir;
    for (const std::size_t len : {250u, 255u}) {
        const std::string name = std::string(len - 4, 'n') + ".npy";
        const Run r = run({"compute", "--problem", "mb1ic2ih5oc2kh3", "--pass", "fwd", "--algo",
                           "direct", "--out", dir / name});
        INFO(len << " bytes: " << r.err);
        CHECK(r.status == 0);
        CHECK(fs::is_regular_file(dir / name));
    }
    CHECK(temporaries_in(dir.path) == 0);
}

TEST_CASE("files: concurrent exports to one folder do not collide") {
    TempDir dir;
    bench::Results r;
    const app::TimingsExport only_results{false, false, false, true};
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&, t] {
            try {
                for (int i = 0; i < 100; ++i) app::export_timings(r, {}, dir.path, only_results);
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(t)] = e.what();
            }
        });
    for (auto& t : threads) t.join();
    CHECK(errors[0] == "");
    CHECK(errors[1] == "");
    CHECK(dir.listing() == std::vector<std::string>{"results.csv", "results.json"});
}

TEST_CASE("files: a temporary is removed when its writer fails or is abandoned") {
    TempDir dir;
    {
        OutputFile f(dir / "a.bin");
        f.write("abc", 3);
        CHECK(temporaries_in(dir.path) == 1);
        CHECK(f.temp_path().size() - dir.path.string().size() == 10);  // "/.clXXXXXX"
    }
    CHECK(dir.listing().empty());
    write_file(dir / "b.txt", [](std::ostream& o) { o << "text"; });
    CHECK(slurp(dir / "b.txt") == "text");
    CHECK(dir.listing() == std::vector<std::string>{"b.txt"});
}

TEST_CASE("files: SIGINT while an output is written removes its temporary, exit status 130") {
    TempDir dir;
    std::fflush(nullptr);  // the child must not write this process's buffered output again
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // The child: a temporary being written when the signal comes.
        install_interrupt_handlers();
        const ImmediateInterrupt immediate;
        OutputFile f(dir / "out.npy");
        f.write("partial", 7);
        ::raise(SIGINT);
        ::_exit(0);  // not reached: the handler ends the process
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(dir.listing().empty());
}

TEST_CASE("files: Ctrl-C during compute exits 130 and leaves nothing at --out") {
    TempDir dir;
    const std::string out = dir / "y.npy";
    std::fflush(nullptr);  // the child must not write this process's buffered output again
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // Direct loops on 7.4 GFLOP, one thread: seconds of work.
        ::execl(CONVLAB_BINARY, CONVLAB_BINARY, "compute", "--problem", "mb8ic64ih112oc64kh3ph1",
                "--pass", "fwd", "--algo", "direct", "--threads", "1", "--out", out.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(pid, SIGINT);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(dir.listing().empty());
}

TEST_CASE("files: a failing shot --gif writes no PNG either") {
    if (!convlab::test::can_render()) return;
    TempDir dir;
    const Run r = convlab::test::run_binary(
        "shot --view im2col --problem mb1ic1ih4oc1kh3 --gif a.gif --from 0 --to 1000000 "
        "--out a.png",
        dir.path);
    CHECK(r.status == 2);
    CHECK(r.err.find("steps 0 to 1000000") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "a.png"));
    CHECK_FALSE(fs::exists(dir / "a.gif"));
    CHECK(temporaries_in(dir.path) == 0);
}

// [SECTION] all-or-nothing outputs

TEST_CASE("files: a transaction renames its files at its commit, or removes them all") {
    TempDir dir;
    {
        OutputTransaction t;
        write_file(dir / "a.txt", "first");
        write_file(dir / "b.txt", "b");
        write_file(dir / "a.txt", "again");  // a path written twice keeps its last content
        CHECK(dir.listing().size() == 2);    // two temporaries, no output yet
        CHECK(temporaries_in(dir.path) == 2);
        CHECK(t.pending() == std::vector<std::string>{dir / "a.txt", dir / "b.txt"});
        CHECK(slurp(OutputTransaction::current_file(dir / "a.txt")) == "again");
        CHECK(OutputTransaction::current_file(dir / "c.txt") == dir / "c.txt");
        {
            OutputTransaction joined;  // joins t: its commit renames nothing
            write_file(dir / "c.txt", "c");
            joined.commit();
        }
        CHECK_FALSE(fs::exists(dir / "c.txt"));
        t.commit();
    }
    CHECK(dir.listing() == std::vector<std::string>{"a.txt", "b.txt", "c.txt"});
    CHECK(slurp(dir / "a.txt") == "again");
    CHECK(slurp(dir / "b.txt") == "b");
    {
        OutputTransaction t;
        write_file(dir / "d.txt", "d");
        write_file(dir / "a.txt", "replaced?");
        // A later output fails: the transaction ends uncommitted.
        CHECK_THROWS_AS(write_file(dir.path.string(), "x"), Error);
    }
    CHECK(dir.listing() == std::vector<std::string>{"a.txt", "b.txt", "c.txt"});
    CHECK(slurp(dir / "a.txt") == "again");
    // Without a transaction a write lands at once.
    write_file(dir / "e.txt", "e");
    CHECK(fs::exists(dir / "e.txt"));
}

TEST_CASE("files: bench --replot whose last chart cannot be written writes none of its files") {
    TempDir dir;
    const std::string out = dir / "o";
    fs::create_directories(out + "/gflops_fwd_b1_t1.pdf");  // the last output: a directory
    const std::string seed =
        std::string(CONVLAB_SOURCE_DIR) + "/tests/fuzz/seeds/results_small.json";
    const Run r = run({"bench", "--replot", seed, "--out", out});
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("gflops_fwd_b1_t1.pdf") != std::string::npos);
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(out)) left.push_back(e.path().filename());
    CHECK(left == std::vector<std::string>{"gflops_fwd_b1_t1.pdf"});
    // The same replot to a free folder writes all eight.
    const Run ok = run({"bench", "--replot", seed, "--out", dir / "p"});
    CHECK(ok.status == 0);
    CHECK(std::distance(fs::directory_iterator(dir / "p"), fs::directory_iterator()) == 8);
}

TEST_CASE("files: a shot whose --sequence fails midway leaves no PNG and no earlier step") {
    if (!convlab::test::can_render()) return;
    TempDir dir;
    fs::create_directories(dir / "seq/im2col_0001.png");  // the second step: a directory
    const Run r = convlab::test::run_binary(
        "shot --view im2col --problem mb1ic1ih4oc1kh3 --out a.png --sequence seq --from 0 --to 2",
        dir.path);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("seq/im2col_0001.png") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "a.png"));
    CHECK_FALSE(fs::exists(dir / "seq/im2col_0000.png"));
    CHECK(temporaries_in(dir.path) == 0);
    CHECK(temporaries_in(dir / "seq") == 0);
}

// [SECTION] map and bench

TEST_CASE("files: map streams its pairs (first line at once, bounded memory)") {
    TempDir dir;
    // 157 million pairs: the whole dump held in memory was 4-6 GB before the first byte. Under a
    // 2 GB address-space limit, the first line must come within seconds, text and JSON. (The
    // limit is left out under AddressSanitizer, whose shadow memory needs the address space.)
#if !defined(__SANITIZE_ADDRESS__)
    const std::string limit = "ulimit -v 2000000; ";
#else
    const std::string limit;
#endif
    for (const char* format : {"text", "json"}) {
        const std::string cmd =
            "bash -c " + quoted(limit + "timeout -s KILL 30 " + std::string(CONVLAB_BINARY) +
                                " map --map im2col --problem mb1ic64ih224oc64kh7ph3 "
                                "--format " +
                                format + " | head -c 100 > " + dir / "head.txt");
        const auto t0 = std::chrono::steady_clock::now();
        CHECK(std::system(cmd.c_str()) == 0);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        INFO(format << ": " << s << " s");
        CHECK(s < 20);
        const std::string head = slurp(dir / "head.txt");
        CHECK(head.size() == 100);
        CHECK(head.rfind(format[0] == 't' ? "# map im2col" : "{\"name\":\"im2col\"", 0) == 0);
    }
}

TEST_CASE("files: IndexMap::dump_json escapes its strings") {
    const IndexMap m(
        "say \"hi\"\\", IndexMap::Kind::Gather, Shape{{2}, {"x\""}}, Shape{{2}, {"y\n"}},
        [](const dim_t* c) { return c[0]; }, 0);
    const std::string j = m.dump_json();
    CHECK(j.find(R"("name":"say \"hi\"\\")") != std::string::npos);
    CHECK(j.find(R"("names":["x\""])") != std::string::npos);
    CHECK(j.find(R"("names":["y\n"])") != std::string::npos);
    // Read back by a JSON parser, the strings are the map's own.
    const auto doc = nlohmann::json::parse(j);
    CHECK(doc["name"] == "say \"hi\"\\");
    CHECK(doc["src"]["names"][0] == "x\"");
    CHECK(doc["dst"]["names"][0] == "y\n");
    CHECK(doc["pairs"].size() == 2);
    std::ostringstream streamed;
    m.dump_json(streamed);
    CHECK(streamed.str() == j);
}

TEST_CASE("files: bench refuses an unknown --reference or --algos before printing anything") {
    TempDir dir;
    const std::string shapes = std::string(CONVLAB_SOURCE_DIR) + "/assets/shapes/classroom.txt";
    for (const auto& [flag, value] : {std::pair{"--reference", "nope"}, {"--algos", "fwd:nope"}}) {
        const Run r = run({"bench", "--shapes", shapes, flag, value, "--out", dir / "o"});
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.err.rfind(std::string("convlab: ") + flag + ": ", 0) == 0);
        CHECK(r.err.find("nope") != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "o"));
    }
}

TEST_CASE("files: Ctrl-C during bench writes what was measured and exits 130") {
    TempDir dir;
    const std::string out = dir / "o";
    // Twenty layers of about half a second each (50 timed runs): the interrupt comes mid-run.
    std::string lines;
    for (int i = 0; i < 20; ++i) lines += "mb1ic64ih56oc64kh3ph1n\"l" + std::to_string(i) + "\"\n";
    const std::string shapes = dir.write("shapes.txt", lines);
    std::fflush(nullptr);  // the child must not write this process's buffered output again
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const std::string log = dir / "log.txt";
        (void)!std::freopen(log.c_str(), "w", stdout);
        (void)!std::freopen(log.c_str(), "a", stderr);
        ::execl(CONVLAB_BINARY, CONVLAB_BINARY, "bench", "--shapes", shapes.c_str(), "--passes",
                "fwd", "--algos", "im2col_gemm", "--peer", "none", "--reps", "50", "--out",
                out.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    ::kill(pid, SIGINT);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    REQUIRE(fs::exists(out + "/results.json"));
    const bench::Results r = app::load_results(out + "/results.json");
    CHECK(r.cancelled);
    CHECK(r.rows.size() < 20);
    CHECK(fs::exists(out + "/results.csv"));
    CHECK(temporaries_in(out) == 0);
}
