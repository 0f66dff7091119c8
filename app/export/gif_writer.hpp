// Animated GIF export of a step range (giflib): RGBA frames of one size, each with its own
// palette of at most 256 colours (all of them when the frame has no more, exact; else the most
// frequent colour first, then the colours the palette serves worst; any other colour becomes its
// nearest entry; deterministic), shown for a fixed delay each and looping forever (NETSCAPE2.0).
// No imgui, no GLFW, no engine: the window, `convlab shot --gif` and the tests feed it pixels.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace convlab::ui {

// GIF delays are whole hundredths of a second, and viewers slow anything under 2 down: frames per
// second are clamped to [kGifMinFps, kGifMaxFps] and rounded to a delay in hundredths.
inline constexpr double kGifMinFps = 0.1, kGifMaxFps = 50;
int gif_delay_cs(double fps);

// One picture: RGBA8 rows, top row first (alpha is ignored: GIF frames here are opaque).
struct RgbaFrame {
    int width = 0, height = 0;
    std::vector<unsigned char> rgba;
};

// Writes frames as they come (one frame in memory at a time) into a temporary file beside
// `path`, renamed to `path` by finish(): a failure, or a writer destroyed before finish(), leaves
// nothing at `path`. Errors throw Error naming the path and the rule broken.
class GifWriter {
  public:
    // Creates the temporary file. Error: "cannot write PATH: why"; delay_cs in [1, 65535].
    GifWriter(std::string path, int delay_cs);
    ~GifWriter();
    GifWriter(const GifWriter&) = delete;
    GifWriter& operator=(const GifWriter&) = delete;

    // Appends a frame; the first sets the size, every later one must have the same size.
    void add(int width, int height, const std::vector<unsigned char>& rgba);
    // Ends the file and renames it into place. Error when no frame was added.
    void finish();
    int frames() const;
    const std::string& path() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The whole sequence at once (frames[0] sets the size). Error on an empty sequence before any
// file is created.
void write_gif(const std::string& path, const std::vector<RgbaFrame>& frames, int delay_cs);

}  // namespace convlab::ui
