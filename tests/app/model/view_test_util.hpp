// Shared by the app model's tests (tests/app/model/): the problems and views every test walks,
// and a view built from a descriptor.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "convlab/problem.hpp"
#include "model/model.hpp"

namespace convlab::app_test {

inline const char* const kProblems[] = {
    "mb1ic2ih3oc2kh2",              // the lesson problem
    "mb2ic1ih5oc2kh3sh2ph1",        // stride 2, padding, batch 2
    "mb1ic1ih6oc1kh3sh2ph1",        // leftover r = 1
    "mb1ic1ih7oc1kh3dh1",           // dilation 2
    "g2mb1ic4ih4oc4kh2",            // groups
    "mb1ic1ih4oc1kh3ph1phe0",       // asymmetric padding
    "mb1ic2iw8oc2kw3sw2",           // 1-D
    "mb1ic1id3ih3iw3oc2kd2kh2kw2",  // 3-D
    "mb1ic3ih3oc2kh2sh2",           // C not a multiple of C0
};

inline const char* const kViews[] = {"im2col",  "col2im", "stride",     "fliprot",
                                     "fractal", "tnc",    "weight_grad"};

inline const Granularity kGranularities[] = {Granularity::Element, Granularity::Line,
                                             Granularity::Tile, Granularity::Whole};

inline app::ViewModel build(const std::string& view, const char* desc,
                            app::DataKind data = app::DataKind::Integer, dim_t c0 = 4) {
    app::ViewRequest r;
    r.view = view;
    r.problem = parse_descriptor(desc);
    r.data = data;
    r.c0 = c0;
    return app::build_view(r);
}

inline std::vector<dim_t> sorted(std::vector<dim_t> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

}  // namespace convlab::app_test
