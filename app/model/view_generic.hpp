// The generic map view (any map of the map registry, "map:NAME" in the view registry) and the
// hover formula that every view reads from its maps' expressions.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace convlab::app {

// The map `map` of the registry animated from its source panel to its destination panel, both
// with default roles (last dim across, the one before down, then tiles), the source holding the
// request's tensor of the map's source role when it fits (src, wei, diff_dst), else generated
// data. Hover formulas come from the map's expression; the check compares the map's registered
// fast kernel, when it has one, with the map's execution.
ViewModel build_map_view(const ViewRequest& r, const std::string& map,
                         std::atomic<float>* progress = nullptr);

// A cell's hover formula from the expressions of the links that fill it (a gather into the
// panel, a reduce out of it): "X5(n=0,c1=1,h=0,w=0,c0=2) = 18: c = c1*C0 + c0 = 1*16 + 2 = 18;
// c < C: 18 < 20 holds <- X(n=0,c=18,h=0,w=0) = 18"; links without an expression name their
// partner cells. "" when no link touches the panel.
std::string expression_formula(const ViewModel& v, int panel, dim_t linear, DataKind d);

}  // namespace convlab::app
