#include "convlab/map_registry.hpp"

#include <algorithm>

namespace convlab {

const std::vector<MapEntry>& map_registry() {
    static const std::vector<MapEntry> all = [] {
        std::vector<MapEntry> v = maps::registry_entries();
        for (auto& e : davinci::registry_entries()) v.push_back(std::move(e));
        return v;
    }();
    return all;
}

const MapEntry* find_map(std::string_view name) {
    for (const MapEntry& e : map_registry()) {
        if (e.name == name) return &e;
        if (std::find(e.aliases.begin(), e.aliases.end(), name) != e.aliases.end()) return &e;
    }
    return nullptr;
}

std::vector<std::string> map_registry_names(std::string_view family) {
    std::vector<std::string> out;
    for (const MapEntry& e : map_registry())
        if (family.empty() || e.family == family) out.push_back(e.name);
    return out;
}

const MapEntry& map_entry(std::string_view name) {
    if (const MapEntry* e = find_map(name)) return *e;
    std::string known;
    for (const auto& n : map_registry_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("map '" + std::string(name) + "': unknown; maps: " + known);
}

IndexMap build_map(std::string_view name, const Problem& p, dim_t c0) {
    const MapEntry& e = map_entry(name);
    p.check();
    return e.build(p, c0);
}

}  // namespace convlab
