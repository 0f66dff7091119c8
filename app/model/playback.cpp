// Playback (model.hpp): {step, speed, paused, loop}, advanced by dt * speed.
#include "model/model.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <numeric>
#include <set>

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/kernels.hpp"
#include "convlab/maps.hpp"
#include "convlab/tensor.hpp"
#include "lesson/lesson.hpp"
#include "model/views/view_builder.hpp"

namespace convlab::app {

bool Playback::advance(double dt, dim_t n) {
    if (paused || n <= 0) return false;
    time_left += dt * speed;
    bool changed = false;
    while (time_left >= 1.0) {
        time_left -= 1.0;
        if (step + 1 < n) {
            ++step;
            changed = true;
        } else if (loop) {
            step = 0;
            changed = true;
        } else {
            paused = true;
            time_left = 0;
            break;
        }
    }
    return changed;
}

void Playback::step_forward(dim_t n) {
    if (n <= 0) return;
    step = step + 1 < n ? step + 1 : (loop ? 0 : n - 1);
}

void Playback::step_back(dim_t n) {
    if (n <= 0) return;
    step = step > 0 ? step - 1 : (loop ? n - 1 : 0);
}

void Playback::scrub(dim_t s, dim_t n) {
    step = n <= 0 ? 0 : std::clamp(s, dim_t{0}, n - 1);
}

// A relation's result panel is walked row-major: its last axis is the line.
dim_t mid_extent(const Panel& p) {
    const auto& d = p.shape.dims;
    return d.size() < 2 ? 1 : d[d.size() - 2];
}

dim_t num_steps(const ViewModel& v, Granularity g) {
    dim_t n = 0;
    for (const auto& d : v.drivers) {
        if (d.link >= 0) {
            n = std::max(n, v.links[static_cast<std::size_t>(d.link)].num_steps(g));
        } else {
            const Panel& r = v.panels[static_cast<std::size_t>(
                v.relations[static_cast<std::size_t>(d.relation)].result)];
            n = std::max(n, walk_num_steps(g, r.numel(), r.shape.dims.back(), mid_extent(r)));
        }
    }
    return n;
}

}  // namespace convlab::app
