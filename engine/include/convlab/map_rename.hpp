// A map expression in another vocabulary: the same program of terms with its axes, bindings and
// symbols renamed, so that its formula and its explanation at a cell speak the names of the panel
// that shows the map. The app's tnc view shows TNCf's destination, FRACTAL_Z of dY read as a
// kernel, with its dims named by what they hold (batch block n1, output channels k1 and k0, batch
// lanes n0) rather than by FRACTAL_Z's own names (c1hw, n1, n0, c0).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "convlab/index_map.hpp"
#include "convlab/map_expr.hpp"

namespace convlab {

// (old name, new name) pairs, applied all at once: {"n1", "k1"} and {"a1", "n1"} swap the roles
// of two names rather than chaining them.
using Renaming = std::vector<std::pair<std::string, std::string>>;

// `e` with every axis, binding and symbol named by a pair's first name named by its second, and
// each unnamed compound term of the image given the name image_names[i] ("" or a missing entry
// leaves it unnamed), so that its explanation shows that term's arithmetic as a binding.
// Evaluation is unchanged: the nodes, guards and image are the same. Throws Error when a pair's
// first name names nothing in `e` (a stale renaming) or when the result would give two different
// things one name (an ambiguous text).
MapExpr renamed(const MapExpr& e, const Renaming& names,
                const std::vector<std::string>& image_names = {});

// The map `m` (written as an expression; Error otherwise) with its expression renamed as above,
// its domain's dim names renamed by the same pairs, and the image's unnamed compound terms named
// after the codomain's dims (the other panel's names, which are not renamed). The map's name,
// kind, shapes' sizes and line axis are unchanged.
IndexMap renamed(const IndexMap& m, const Renaming& names);

}  // namespace convlab
