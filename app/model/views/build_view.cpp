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
#include "model/views/view_builder.hpp"

namespace convlab::app {

ViewModel build_view(const ViewRequest& r, std::atomic<float>* progress) {
    if (r.view == "tensors") return build_tensors_view(r);
    r.problem.check();
    Builder b{r, r.problem, progress, {}};
    b.v.name = r.view;
    if (r.view == "im2col")
        build_im2col(b);
    else if (r.view == "col2im")
        build_col2im(b);
    else if (r.view == "stride")
        build_stride(b);
    else if (r.view == "fliprot")
        build_fliprot(b);
    else if (r.view == "fractal")
        build_fractal(b);
    else if (r.view == "tnc")
        build_tnc(b);
    else if (r.view == "weight_grad")
        build_weight_grad(b);
    else if (r.view == "winograd")
        build_winograd(b);
    else if (r.view == "timings")
        b.v.caption =
            "timings: the verified timing chart of the current problem comes here (not "
            "built yet: another part of ConvLab delivers it)";
    else {
        std::string known;
        for (auto& n : view_names()) known += (known.empty() ? "" : ", ") + n;
        throw Error("unknown view '" + r.view + "' (views: " + known + ")");
    }
    arrange_view(b.v);
    if (progress) progress->store(1.0f);
    return std::move(b.v);
}

}  // namespace convlab::app
