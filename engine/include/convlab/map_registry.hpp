// The map registry: every index map the command line, the lessons and the app can name, in one
// table. An entry says how to build the map for a problem, which parameters it takes beyond the
// problem, its fast kernel when it has one, and the roles of its two tensors in the lessons'
// vocabulary ("src", "wei", "diff_dst", "src_nc1hwc0" ...), so that a lesson step naming the map
// feeds it the tensor it converts and the app's generic map view labels its panels.
//
// The entries are declared beside their maps (maps.cpp: the NCHW ones, davinci_maps.cpp: the
// DaVinci ones), so adding a map touches its own file, its registry line and its test.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/index_map.hpp"
#include "convlab/problem.hpp"

namespace convlab {

struct MapEntry {
    std::string name;
    std::string family;  // "nchw" (plain NCHW / OIHW tensors) or "davinci" (blocked formats)
    std::vector<std::string> params;  // parameters beyond the problem: {"c0"} for DaVinci maps
    std::string summary;              // one line for listings
    // The map for a problem (c0 ignored by maps without the "c0" parameter). Throws Error for a
    // problem the map does not take.
    std::function<IndexMap(const Problem&, dim_t c0)> build;
    // Optional fast kernel on dense fp32 buffers of the map's src().numel() and dst().numel(),
    // writing every destination element; equal to the map's execution (tests check each one).
    std::function<void(const Problem&, dim_t c0, const float* src, float* dst)> kernel;
    // The lesson tensors the map reads and writes ("" when no lesson tensor has that role).
    std::string src_role, dst_role;
    std::vector<std::string> aliases;  // other names accepted for the same entry
};

// Every registered map: the NCHW ones, then the DaVinci ones.
const std::vector<MapEntry>& map_registry();
// The entry called `name` (or one of its aliases); null when there is none.
const MapEntry* find_map(std::string_view name);
// The same, or Error "map 'x': unknown; maps: ..." listing every name.
const MapEntry& map_entry(std::string_view name);
// Names of the entries of a family ("" for all), in registry order.
std::vector<std::string> map_registry_names(std::string_view family = "");
// The map `name` for problem p (checked first): map_entry(name).build(p, c0).
IndexMap build_map(std::string_view name, const Problem& p, dim_t c0 = 16);

namespace maps {
// The NCHW maps' entries (maps.cpp).
std::vector<MapEntry> registry_entries();
}  // namespace maps
namespace davinci {
// The DaVinci maps' entries (davinci_maps.cpp).
std::vector<MapEntry> registry_entries();
}  // namespace davinci

}  // namespace convlab
