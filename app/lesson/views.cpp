#include "lesson/views.hpp"

#include "convlab/map_registry.hpp"

namespace convlab::lesson {

const std::vector<ViewSpec>& view_registry() {
    static const std::vector<ViewSpec> all = [] {
        // stride: stride 2 with a leftover row r = 1; the DaVinci views: C = 2 < C0 (zero
        // lanes); winograd: a 3x3 stride-1 problem (the only ones it draws), 2x2 tiles a
        // channel, overlapping by 2.
        std::vector<ViewSpec> v{
            {"im2col",
             "input to column matrices",
             {{"mb1ic2ih3oc2kh2", "line"}, {"mb1ic1ih5oc1kh3sh2ph1", "line"}},
             {"src", "col"},
             ""},
            {"col2im",
             "column matrices added back into dX",
             {{"mb1ic2ih3oc2kh2", "line"}},
             {"diff_col", "diff_src"},
             ""},
            {"stride",
             "backward data of a strided convolution",
             {{"mb1ic1ih6oc1kh3sh2ph1", "element"}},
             {"diff_dst", "diff_dst_strided", "diff_dst_padded", "wei_fliprot", "diff_src"},
             ""},
            {"fliprot",
             "FlipRot of the weights",
             {{"mb1ic2ih3oc3kh3", "line"}},
             {"wei", "wei_fliprot"},
             ""},
            {"fractal",
             "NC1HWC0 and FRACTAL_Z packing",
             {{"mb1ic2ih3oc2kh2", "line"}},
             {"src", "src_nc1hwc0", "wei", "wei_fractal_z"},
             ""},
            {"tnc",
             "TNC and TNCf for the weight gradient",
             {{"mb2ic2ih3oc2kh2", "line"}},
             {"src", "src_nc1hwc0", "diff_dst", "diff_dst_nc1hwc0"},
             ""},
            {"weight_grad",
             "the weight gradient as a convolution",
             {{"mb1ic2ih3oc2kh2", "element"}},
             {"src", "diff_dst", "diff_wei"},
             ""},
            {"timings", "timing charts of the algorithms", {}, {}, ""},
            {"tensors", "a lesson step's named tensors", {}, {}, ""},
            {"winograd",
             "Winograd F(4x4, 3x3) input tiles",
             {{"mb1ic2ih8oc2kh3ph1", "line"}},
             {"src"},
             ""},
        };
        for (const MapEntry& m : map_registry()) {
            ViewSpec s;
            s.name = std::string(kMapViewPrefix) + m.name;
            s.summary = m.name + " in the generic map view: " + m.summary;
            for (const std::string* role : {&m.src_role, &m.dst_role})
                if (!role->empty()) s.tensors.push_back(*role);
            s.map = m.name;
            v.push_back(std::move(s));
        }
        return v;
    }();
    return all;
}

const ViewSpec* find_view(std::string_view name) {
    for (const ViewSpec& s : view_registry())
        if (s.name == name) return &s;
    return nullptr;
}

}  // namespace convlab::lesson
