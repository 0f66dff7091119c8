// The animated GIF export (app/export/gif_writer.hpp), read back with giflib's own decoder
// (DGifSlurp): frame count, size, delay, the NETSCAPE2.0 loop block, and pixels equal to the
// input colours exactly while a frame has at most 256 colours (nearest kept colour beyond, the
// same bytes on every run); bad input throws Error naming the path and the rule and leaves no
// file. Then `convlab shot --gif` renders one frame per step of the range.
#include <doctest/doctest.h>
#include <gif_lib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "convlab/problem.hpp"
#include "export/gif_writer.hpp"
#include "test_files.hpp"

namespace fs = std::filesystem;
using convlab::Error;
using convlab::test::can_render;
using convlab::test::Run;
using convlab::test::run_binary;
using convlab::test::run_in_process;
using convlab::test::TempDir;
using convlab::ui::gif_delay_cs;
using convlab::ui::GifWriter;
using convlab::ui::RgbaFrame;
using convlab::ui::write_gif;

namespace {

// A GIF decoded by giflib: every frame as RGB (its own colour table, else the global one).
struct Decoded {
    std::string stamp;  // "GIF89a"
    int width = 0, height = 0;
    std::vector<std::vector<unsigned char>> rgb;  // per frame, width * height * 3
    std::vector<int> delays;                      // hundredths of a second, per frame
    int netscape_blocks = 0;                      // NETSCAPE2.0 application blocks
    int loop_count = -1;                          // from the NETSCAPE2.0 block (0: forever)
};

Decoded decode(const std::string& path) {
    Decoded d;
    {
        std::ifstream f(path, std::ios::binary);
        char stamp[6] = {};
        f.read(stamp, 6);
        d.stamp.assign(stamp, 6);
    }
    int err = 0;
    GifFileType* gif = DGifOpenFileName(path.c_str(), &err);
    REQUIRE_MESSAGE(gif != nullptr, "cannot open " << path << ": " << GifErrorString(err));
    REQUIRE_MESSAGE(DGifSlurp(gif) == GIF_OK,
                    "cannot decode " << path << ": " << GifErrorString(gif->Error));
    d.width = gif->SWidth;
    d.height = gif->SHeight;
    // Application blocks may hang off any image or follow the last one.
    const auto scan = [&](int count, const ExtensionBlock* blocks) {
        for (int i = 0; i < count; ++i) {
            const ExtensionBlock& b = blocks[i];
            if (b.Function != APPLICATION_EXT_FUNC_CODE || b.ByteCount != 11 ||
                std::memcmp(b.Bytes, "NETSCAPE2.0", 11) != 0)
                continue;
            ++d.netscape_blocks;
            // The data sub-block follows as a continuation: 1, loop count (little-endian).
            if (i + 1 < count && blocks[i + 1].Function == CONTINUE_EXT_FUNC_CODE &&
                blocks[i + 1].ByteCount == 3 && blocks[i + 1].Bytes[0] == 1)
                d.loop_count = blocks[i + 1].Bytes[1] | blocks[i + 1].Bytes[2] << 8;
        }
    };
    scan(gif->ExtensionBlockCount, gif->ExtensionBlocks);
    for (int k = 0; k < gif->ImageCount; ++k) {
        const SavedImage& im = gif->SavedImages[k];
        scan(im.ExtensionBlockCount, im.ExtensionBlocks);
        GraphicsControlBlock gcb{};
        d.delays.push_back(DGifSavedExtensionToGCB(gif, k, &gcb) == GIF_OK ? gcb.DelayTime : -1);
        // Whole-screen frames: the pixels of frame k are its raster through its colour table.
        CHECK(im.ImageDesc.Left == 0);
        CHECK(im.ImageDesc.Top == 0);
        REQUIRE(im.ImageDesc.Width == d.width);
        REQUIRE(im.ImageDesc.Height == d.height);
        const ColorMapObject* map = im.ImageDesc.ColorMap ? im.ImageDesc.ColorMap : gif->SColorMap;
        REQUIRE(map != nullptr);
        std::vector<unsigned char> rgb;
        int outside = 0;  // indices past the colour table
        for (int i = 0; i < d.width * d.height; ++i) {
            int c = im.RasterBits[i];
            if (c >= map->ColorCount) ++outside, c = 0;
            rgb.push_back(map->Colors[c].Red);
            rgb.push_back(map->Colors[c].Green);
            rgb.push_back(map->Colors[c].Blue);
        }
        CHECK(outside == 0);
        d.rgb.push_back(std::move(rgb));
    }
    DGifCloseFile(gif, &err);
    return d;
}

std::vector<unsigned char> rgb_of(const RgbaFrame& f) {
    std::vector<unsigned char> rgb;
    for (std::size_t i = 0; i < f.rgba.size(); i += 4)
        rgb.insert(rgb.end(), f.rgba.begin() + static_cast<std::ptrdiff_t>(i),
                   f.rgba.begin() + static_cast<std::ptrdiff_t>(i + 3));
    return rgb;
}

// A w x h frame whose pixel i has colour colour(i) (0xRRGGBB), opaque.
template <class F>
RgbaFrame frame_of(int w, int h, F colour) {
    RgbaFrame f{w, h, {}};
    for (int i = 0; i < w * h; ++i) {
        const std::uint32_t c = colour(i);
        f.rgba.insert(f.rgba.end(), {static_cast<unsigned char>(c >> 16),
                                     static_cast<unsigned char>(c >> 8 & 0xff),
                                     static_cast<unsigned char>(c & 0xff), 255});
    }
    return f;
}

int distinct(const RgbaFrame& f) {
    std::set<std::uint32_t> s;
    for (std::size_t i = 0; i < f.rgba.size(); i += 4)
        s.insert(std::uint32_t{f.rgba[i]} << 16 | std::uint32_t{f.rgba[i + 1]} << 8 |
                 f.rgba[i + 2]);
    return static_cast<int>(s.size());
}

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

// The message of the Error that f throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("gif: frames of at most 256 colours decode to the input exactly, looping") {
    TempDir t;
    const std::string path = t / "anim.gif";
    const int w = 37, h = 23;  // odd sizes: no row or pixel-count coincidence
    std::vector<RgbaFrame> frames;
    // 256 colours, spread so that no two share a channel pattern, in a scrambled order.
    frames.push_back(frame_of(w, h, [](int i) {
        const auto k = static_cast<std::uint32_t>((i * 97) % 256);
        return k << 16 | ((k * 37 + 11) & 0xff) << 8 | (255 - k);
    }));
    frames.push_back(frame_of(w, h, [&](int i) {  // two colours, a checkerboard
        return (i % w + i / w) % 2 ? 0xf0b233u : 0x1a2b3cu;
    }));
    frames.push_back(frame_of(w, h, [](int) { return 0x00ff7fu; }));  // one colour
    frames.push_back(frame_of(w, h, [](int i) {  // 200 colours with very unequal counts
        return i < 600 ? 0xffffffu : static_cast<std::uint32_t>(i % 199) * 0x010203u;
    }));
    REQUIRE(distinct(frames[0]) == 256);
    REQUIRE(distinct(frames[1]) == 2);
    REQUIRE(distinct(frames[3]) == 200);
    write_gif(path, frames, 7);

    const Decoded d = decode(path);
    CHECK(d.stamp == "GIF89a");
    CHECK(d.width == w);
    CHECK(d.height == h);
    REQUIRE(d.rgb.size() == frames.size());
    CHECK(d.netscape_blocks == 1);
    CHECK(d.loop_count == 0);  // forever
    for (std::size_t k = 0; k < frames.size(); ++k) {
        INFO("frame " << k);
        CHECK(d.delays[k] == 7);
        CHECK(d.rgb[k] == rgb_of(frames[k]));
    }
    // Nothing but the file itself is left in the folder (no temporary file).
    CHECK(t.listing() == std::vector<std::string>{"anim.gif"});
}

TEST_CASE("gif: beyond 256 colours the rare ones take the nearest kept colour, deterministically") {
    TempDir t;
    const int w = 40, h = 30;  // 1200 pixels
    // 256 frequent colours (4 pixels each: 1024 pixels), then 176 rare ones (1 pixel each), each
    // rare colour one step of blue away from a frequent one.
    const auto frequent = [](int k) {
        return static_cast<std::uint32_t>(k) << 16 | static_cast<std::uint32_t>(k ^ 0x5a) << 8 |
               static_cast<std::uint32_t>(k & 0xf0);
    };
    const RgbaFrame f =
        frame_of(w, h, [&](int i) { return i < 1024 ? frequent(i / 4) : frequent(i - 1024) + 1; });
    REQUIRE(distinct(f) == 256 + 176);
    const std::string a = t / "a.gif", b = t / "b.gif";
    write_gif(a, {f}, 10);
    write_gif(b, {f}, 10);
    CHECK(read_all(a) == read_all(b));  // the same frame, the same bytes

    const Decoded d = decode(a);
    REQUIRE(d.rgb.size() == 1);
    const RgbaFrame want =
        frame_of(w, h, [&](int i) { return i < 1024 ? frequent(i / 4) : frequent(i - 1024); });
    CHECK(d.rgb[0] == rgb_of(want));
}

TEST_CASE("gif: a frame rate becomes a delay in hundredths of a second") {
    CHECK(gif_delay_cs(2) == 50);
    CHECK(gif_delay_cs(3) == 33);
    CHECK(gif_delay_cs(50) == 2);
    CHECK(gif_delay_cs(120) == 2);   // faster than viewers show: clamped to 50 a second
    CHECK(gif_delay_cs(0) == 1000);  // slower than 0.1 a second: clamped
    CHECK(gif_delay_cs(0.1) == 1000);
}

TEST_CASE("gif: errors name the path and the rule and leave no file") {
    TempDir t;
    const std::string path = t / "x.gif";
    const RgbaFrame small = frame_of(4, 3, [](int i) { return static_cast<std::uint32_t>(i); });
    const RgbaFrame wider = frame_of(5, 3, [](int) { return 0u; });

    std::string e = error_of([&] { write_gif(path, {}, 10); });
    CHECK(e.find(path) != std::string::npos);
    CHECK(e.find("no frames") != std::string::npos);

    e = error_of([&] { write_gif(path, {small, small, wider}, 10); });
    CHECK(e.find(path) != std::string::npos);
    CHECK(e.find("frame 2 is 5x3, frame 0 is 4x3") != std::string::npos);
    CHECK(e.find("first frame's size") != std::string::npos);

    RgbaFrame short_rows = small;
    short_rows.rgba.pop_back();
    e = error_of([&] { write_gif(path, {short_rows}, 10); });
    CHECK(e.find("47 bytes of RGBA, expected 4 x 3 x 4 = 48") != std::string::npos);

    e = error_of([&] { write_gif(path, {RgbaFrame{0, 3, {}}}, 10); });
    CHECK(e.find("frame 0 width = 0: must be in [1, 65535]") != std::string::npos);

    e = error_of([&] { write_gif(path, {small}, 0); });
    CHECK(e.find(path) != std::string::npos);
    CHECK(e.find("delay 0") != std::string::npos);

    const std::string missing = t / "no/such/dir/x.gif";
    e = error_of([&] { write_gif(missing, {small}, 10); });
    CHECK(e == "cannot write " + missing + ": No such file or directory");
    e = error_of([&] { write_gif(t.path.string(), {small}, 10); });
    CHECK(e == "cannot write " + t.path.string() + ": Is a directory");

    // A writer dropped before finish() (an export interrupted) leaves nothing behind.
    {
        GifWriter wr(path, 10);
        wr.add(small.width, small.height, small.rgba);
        CHECK(wr.frames() == 1);
    }
    CHECK(t.listing().empty());

    // A failed write keeps the file that was there.
    std::ofstream(path) << "old";
    CHECK_THROWS_AS(write_gif(path, {small, wider}, 10), Error);
    CHECK(read_all(path) == "old");
    CHECK(t.listing() == std::vector<std::string>{"x.gif"});
}

TEST_CASE("gif: convlab shot --gif refuses bad options before any window opens") {
    TempDir t;
    const std::string gif = t / "v.gif";
    const auto err = [](std::vector<std::string> args) {
        const Run r = run_in_process(std::move(args));
        CHECK(r.status == 2);
        return r.err;
    };
    CHECK(err({"shot", "--gif", gif, "--fps", "0"}).find("--fps '0'") != std::string::npos);
    CHECK(err({"shot", "--gif", gif, "--fps", "60"}).find("[0.1, 50]") != std::string::npos);
    CHECK(err({"shot", "--out", t / "x.png", "--from", "1"}).find("go with --gif") !=
          std::string::npos);
    CHECK(err({"shot", "--gif", gif, "--from", "3", "--to", "1"}).find("--from 3 --to 1") !=
          std::string::npos);
    CHECK(err({"shot", "--gif", t / "no/dir/v.gif"}).find("cannot write") != std::string::npos);
    CHECK(err({"shot", "--gif", gif, "--steps", "1:2"}).find("--steps goes with --sequence") !=
          std::string::npos);
    CHECK(t.listing().empty());
}

TEST_CASE("app render: convlab shot --gif writes one frame per step of the range" *
          doctest::skip(!can_render())) {
    TempDir t;
    const std::string gif = t / "im2col.gif";
    const Run r = run_binary(
        "shot --view im2col --problem mb1ic2ih3oc2kh2 --granularity element --size 800x500 --gif " +
            gif + " --from 1 --to 5 --fps 4",
        t.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("wrote " + gif) != std::string::npos);
    const Decoded d = decode(gif);
    CHECK(d.width == 800);
    CHECK(d.height == 500);
    REQUIRE(d.rgb.size() == 5u);  // steps 1..5: B - A + 1 frames
    CHECK(d.loop_count == 0);
    for (std::size_t k = 0; k < d.rgb.size(); ++k) {
        CHECK(d.delays[k] == 25);                    // 4 steps a second
        if (k > 0) CHECK(d.rgb[k] != d.rgb[k - 1]);  // every step a different picture
    }
    CHECK(t.listing() == std::vector<std::string>{"im2col.gif", "stderr.txt", "stdout.txt"});

    // A range past the last step fails with one line and leaves no file.
    const std::string late = t / "late.gif";
    const Run bad = run_binary("shot --view im2col --gif " + late + " --from 2 --to 99", t.path);
    CHECK(bad.status == 2);
    CHECK(bad.err.find("steps 2 to 99") != std::string::npos);
    CHECK_FALSE(fs::exists(late));
}
