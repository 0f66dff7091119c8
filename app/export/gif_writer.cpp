// Animated GIF export (gif_writer.hpp) over giflib's sequential encoder: screen descriptor and
// the NETSCAPE2.0 loop block once, then per frame a graphics control block (the delay), a local
// colour table and the LZW-compressed indices.
#include "export/gif_writer.hpp"

#include <fcntl.h>
#include <gif_lib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "convlab/output_file.hpp"
#include "convlab/problem.hpp"  // Error

namespace convlab::ui {

int gif_delay_cs(double fps) {
    if (!(fps >= kGifMinFps)) fps = kGifMinFps;  // also NaN
    fps = std::min(fps, kGifMaxFps);
    return static_cast<int>(std::lround(100.0 / fps));
}

namespace {

constexpr int kMaxSide = 65535;  // GIF stores sizes and delays in 16 bits
constexpr std::size_t kMaxColours = 256;

std::uint32_t rgb_at(const unsigned char* p) {
    return std::uint32_t{p[0]} << 16 | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]};
}

// A frame as palette indices. A frame of at most 256 colours keeps them all (most frequent
// first), so it comes back exactly. Beyond that (anti-aliased text), the palette starts with the
// most frequent colour and then takes, one at a time, the colour that the palette so far serves
// worst: the largest pixel count x squared distance to its nearest entry. So a thin line of a
// colour of its own (a text colour) is kept rather than the hundredth shade of a background.
// Every other colour becomes its nearest entry (squared RGB distance, ties: the lower index).
// Ties go to the more frequent colour, then the smaller 0xRRGGBB: the same frame always gives
// the same bytes.
struct Indexed {
    std::vector<GifColorType> palette;
    std::vector<GifPixelType> index;
};

int distance2(std::uint32_t a, std::uint32_t b) {
    const int dr = static_cast<int>(a >> 16) - static_cast<int>(b >> 16);
    const int dg = static_cast<int>(a >> 8 & 0xff) - static_cast<int>(b >> 8 & 0xff);
    const int db = static_cast<int>(a & 0xff) - static_cast<int>(b & 0xff);
    return dr * dr + dg * dg + db * db;
}

Indexed quantise(const unsigned char* rgba, std::size_t pixels) {
    // Count colours; the app's pictures are long runs of one colour, counted a run at a time.
    std::unordered_map<std::uint32_t, std::uint64_t> counts;
    std::uint32_t run_colour = 0;
    std::uint64_t run = 0;
    for (std::size_t i = 0; i < pixels; ++i) {
        const std::uint32_t c = rgb_at(rgba + 4 * i);
        if (run > 0 && c == run_colour) {
            ++run;
            continue;
        }
        if (run > 0) counts[run_colour] += run;
        run_colour = c;
        run = 1;
    }
    if (run > 0) counts[run_colour] += run;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> ranked(counts.begin(), counts.end());
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    const std::size_t n = ranked.size();

    // nearest[i]: the palette entry closest to colour i so far, at squared distance dist[i].
    std::vector<std::size_t> chosen;
    std::vector<GifPixelType> nearest(n, 0);
    std::vector<int> dist(n, std::numeric_limits<int>::max());
    const auto choose = [&](std::size_t c) {
        const auto entry = static_cast<GifPixelType>(chosen.size());
        chosen.push_back(c);
        for (std::size_t i = 0; i < n; ++i) {
            const int d = distance2(ranked[i].first, ranked[c].first);
            if (d < dist[i]) {
                dist[i] = d;
                nearest[i] = entry;
            }
        }
    };
    if (n <= kMaxColours) {
        for (std::size_t c = 0; c < n; ++c) choose(c);
    } else {
        choose(0);
        while (chosen.size() < kMaxColours) {
            std::size_t best = 0;
            std::uint64_t best_cost = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint64_t cost = ranked[i].second * static_cast<std::uint64_t>(dist[i]);
                if (cost > best_cost) {
                    best_cost = cost;
                    best = i;
                }
            }
            choose(best);  // cost > 0: more colours than entries, so one is not served exactly
        }
    }

    Indexed out;
    for (const std::size_t c : chosen) {
        const std::uint32_t rgb = ranked[c].first;
        out.palette.push_back({static_cast<GifByteType>(rgb >> 16),
                               static_cast<GifByteType>(rgb >> 8 & 0xff),
                               static_cast<GifByteType>(rgb & 0xff)});
    }
    std::unordered_map<std::uint32_t, GifPixelType> slot;
    slot.reserve(n);
    for (std::size_t i = 0; i < n; ++i) slot[ranked[i].first] = nearest[i];
    const std::size_t kept = chosen.size();

    out.index.resize(pixels);
    std::uint32_t last = 0;
    GifPixelType last_slot = 0;
    for (std::size_t i = 0; i < pixels; ++i) {
        const std::uint32_t c = rgb_at(rgba + 4 * i);
        if (i == 0 || c != last) {
            last = c;
            last_slot = slot.at(c);
        }
        out.index[i] = last_slot;
    }
    // giflib's colour tables have a power-of-two size (at least 2): pad with black.
    const std::size_t size = std::size_t{1} << GifBitSize(static_cast<int>(kept));
    out.palette.resize(std::max<std::size_t>(size, 2), GifColorType{0, 0, 0});
    return out;
}

}  // namespace

struct GifWriter::Impl {
    std::string path;
    std::unique_ptr<OutputFile> file;  // the temporary, renamed onto `path` by finish()
    int delay_cs = 0;
    GifFileType* gif = nullptr;
    int width = 0, height = 0, frames = 0;
    bool finished = false;

    [[noreturn]] void fail(const std::string& what) {
        discard();
        throw Error("cannot write " + path + ": " + what);
    }
    // After a giflib call returned GIF_ERROR.
    [[noreturn]] void gif_failed(const char* call) {
        const int code = gif ? gif->Error : 0;
        const char* why = GifErrorString(code);
        fail(std::string(call) + " failed (" + (why ? why : "unknown giflib error") + ")");
    }
    // Closes the temporary file and removes it (nothing is left behind).
    void discard() {
        if (gif) {
            int ignored = 0;
            EGifCloseFile(gif, &ignored);  // frees `gif` even when the close fails
            gif = nullptr;
        }
        file.reset();  // removes the temporary
    }
    void check_open() const {
        if (finished) throw Error("GIF " + path + ": already finished (no frame can be added)");
        if (!gif) throw Error("GIF " + path + ": a write failed before; start a new file");
    }
};

GifWriter::GifWriter(std::string path, int delay_cs) : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.path = std::move(path);
    if (delay_cs < 1 || delay_cs > kMaxSide)
        throw Error("GIF " + m.path + ": delay " + std::to_string(delay_cs) +
                    " (hundredths of a second) must be in [1, 65535]");
    m.delay_cs = delay_cs;
    if (m.path.empty()) throw Error("cannot write a GIF: the path is empty");
    m.file = std::make_unique<OutputFile>(m.path);
    // giflib closes the descriptor it is given: it gets its own copy.
    const int fd = ::dup(m.file->fd());
    if (fd < 0) m.fail(std::strerror(errno));
    int code = 0;
    m.gif = EGifOpenFileHandle(fd, &code);  // owns fd from here on
    if (!m.gif) {
        ::close(fd);
        const char* why = GifErrorString(code);
        m.fail(why ? why : "giflib cannot open the file");
    }
    EGifSetGifVersion(m.gif, true);  // GIF89a: graphics control and application blocks
}

GifWriter::~GifWriter() {
    if (impl_ && !impl_->finished) impl_->discard();
}

void GifWriter::add(int width, int height, const std::vector<unsigned char>& rgba) {
    Impl& m = *impl_;
    m.check_open();
    const std::string frame = "GIF " + m.path + ": frame " + std::to_string(m.frames);
    for (const auto& [name, v] : {std::pair{"width", width}, std::pair{"height", height}})
        if (v < 1 || v > kMaxSide)
            throw Error(frame + " " + name + " = " + std::to_string(v) + ": must be in [1, 65535]");
    if (m.frames > 0 && (width != m.width || height != m.height))
        throw Error(frame + " is " + std::to_string(width) + "x" + std::to_string(height) +
                    ", frame 0 is " + std::to_string(m.width) + "x" + std::to_string(m.height) +
                    ": every frame must have the first frame's size");
    const std::size_t pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    if (rgba.size() != pixels * 4)
        throw Error(frame + ": " + std::to_string(rgba.size()) + " bytes of RGBA, expected " +
                    std::to_string(width) + " x " + std::to_string(height) +
                    " x 4 = " + std::to_string(pixels * 4));
    if (m.frames == 0) {
        m.width = width;
        m.height = height;
        // The screen, no global colour table (each frame brings its own), 8 bits per primary.
        if (EGifPutScreenDesc(m.gif, width, height, 8, 0, nullptr) == GIF_ERROR)
            m.gif_failed("EGifPutScreenDesc");
        // NETSCAPE2.0: sub-block 1, loop count 0 (little-endian) = loop forever.
        const GifByteType loop[3] = {1, 0, 0};
        if (EGifPutExtensionLeader(m.gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
            EGifPutExtensionBlock(m.gif, 11, "NETSCAPE2.0") == GIF_ERROR ||
            EGifPutExtensionBlock(m.gif, 3, loop) == GIF_ERROR ||
            EGifPutExtensionTrailer(m.gif) == GIF_ERROR)
            m.gif_failed("the NETSCAPE2.0 loop block");
    }
    Indexed q = quantise(rgba.data(), pixels);

    GraphicsControlBlock gcb{};
    gcb.DisposalMode = DISPOSE_DO_NOT;  // every frame covers the whole screen
    gcb.UserInputFlag = false;
    gcb.DelayTime = m.delay_cs;
    gcb.TransparentColor = NO_TRANSPARENT_COLOR;
    GifByteType ext[4];
    const auto ext_len = static_cast<int>(EGifGCBToExtension(&gcb, ext));
    if (EGifPutExtension(m.gif, GRAPHICS_EXT_FUNC_CODE, ext_len, ext) == GIF_ERROR)
        m.gif_failed("the graphics control block");

    // The image descriptor copies the colour table; ours is freed right after.
    ColorMapObject* map = GifMakeMapObject(static_cast<int>(q.palette.size()), q.palette.data());
    if (!map) m.fail("out of memory for a colour table");
    const int put = EGifPutImageDesc(m.gif, 0, 0, width, height, false, map);
    GifFreeMapObject(map);
    if (put == GIF_ERROR) m.gif_failed("EGifPutImageDesc");
    for (int y = 0; y < height; ++y)
        if (EGifPutLine(m.gif, q.index.data() + static_cast<std::size_t>(y) * width, width) ==
            GIF_ERROR)
            m.gif_failed("EGifPutLine");
    ++m.frames;
}

void GifWriter::finish() {
    Impl& m = *impl_;
    m.check_open();
    if (m.frames == 0) {
        m.discard();
        throw Error("GIF " + m.path + ": no frames (a GIF needs at least one)");
    }
    int code = 0;
    const int closed = EGifCloseFile(m.gif, &code);
    m.gif = nullptr;
    if (closed == GIF_ERROR) {
        const char* why = GifErrorString(code);
        m.fail(std::string("closing failed (") + (why ? why : "unknown giflib error") + ")");
    }
    try {
        m.file->commit();
    } catch (...) {
        m.file.reset();
        throw;
    }
    m.file.reset();
    m.finished = true;
}

int GifWriter::frames() const {
    return impl_->frames;
}

const std::string& GifWriter::path() const {
    return impl_->path;
}

void write_gif(const std::string& path, const std::vector<RgbaFrame>& frames, int delay_cs) {
    if (frames.empty()) throw Error("GIF " + path + ": no frames (a GIF needs at least one)");
    GifWriter w(path, delay_cs);
    for (const RgbaFrame& f : frames) w.add(f.width, f.height, f.rgba);
    w.finish();
}

}  // namespace convlab::ui
