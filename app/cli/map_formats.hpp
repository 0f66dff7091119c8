// `convlab map`'s whole-map formats: the index array as .npy, a grid as CuTe's print_layout draws
// a layout, and the same grid as a TikZ picture. Each walks the map's domain (the destination of
// a gather, the source of a reduce) in row-major order, a row at a time, so memory stays constant.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "convlab/index_map.hpp"

namespace convlab::cli {

// Cells a TikZ picture may have: a figure for a page, which TeX would also take minutes to set
// with many more nodes.
inline constexpr std::int64_t kMaxTexCells = 10000;

// The map's index array, shaped like its domain, as an int64 .npy file (written atomically):
// a gather's source linear index per destination element, -1 for a padding zero; a reduce's
// destination linear index per source element, -1 where it adds nowhere.
void write_map_npy(const IndexMap& m, const std::string& path);

// The domain as 2-D blocks: rows and columns are its last two dims (one row for a 1-D domain),
// every index of the dims before them a block of its own under a header naming it; a cell holds
// the image (a source linear index, or "." for -1). Stops when `out` fails.
void print_map_grid(std::ostream& out, const IndexMap& m);

// The same blocks as TikZ pictures (\usepackage{tikz}), one tikzpicture a block, padding cells
// shaded. Throws Error above kMaxTexCells cells.
void print_map_tex(std::ostream& out, const IndexMap& m);

}  // namespace convlab::cli
