// build_view (model.hpp): the view builders by name.
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
#include "lesson/views.hpp"
#include "model/view_generic.hpp"
#include "model/views/view_builder.hpp"

namespace convlab::app {

namespace {

void build_timings_placeholder(Builder& b) {
    b.v.caption =
        "timings: the verified timing chart of the current problem comes here (not "
        "built yet: another part of ConvLab delivers it)";
}

// The builders of the hand-written views, by their name in the view registry (lesson/views.hpp);
// the generic map views ("map:NAME") are built by build_map_view.
const std::pair<const char*, void (*)(Builder&)> kBuilders[] = {
    {"im2col", build_im2col},
    {"col2im", build_col2im},
    {"stride", build_stride},
    {"fliprot", build_fliprot},
    {"fractal", build_fractal},
    {"tnc", build_tnc},
    {"weight_grad", build_weight_grad},
    {"winograd", build_winograd},
    {"timings", build_timings_placeholder}};

}  // namespace

bool has_view_builder(const std::string& name) {
    if (name == "tensors") return true;
    if (const lesson::ViewSpec* spec = lesson::find_view(name); spec && !spec->map.empty())
        return true;
    for (const auto& [n, f] : kBuilders)
        if (name == n) return true;
    return false;
}

ViewModel build_view(const ViewRequest& r, std::atomic<float>* progress) {
    if (r.view == "tensors") return build_tensors_view(r);
    const lesson::ViewSpec* spec = lesson::find_view(r.view);
    if (spec && !spec->map.empty()) return build_map_view(r, spec->map, progress);
    r.problem.check();
    Builder b{r, r.problem, progress, {}};
    b.v.name = r.view;
    void (*build)(Builder&) = nullptr;
    for (const auto& [n, f] : kBuilders)
        if (r.view == n) build = f;
    if (!spec || !build) {
        std::string known;
        for (auto& n : view_names()) known += (known.empty() ? "" : ", ") + n;
        throw Error("unknown view '" + r.view + "' (views: " + known + ")");
    }
    build(b);
    arrange_view(b.v);
    if (progress) progress->store(1.0f);
    return std::move(b.v);
}

}  // namespace convlab::app
