// Where convlab finds its data (lessons/, assets/themes, assets/shapes): relative to its own
// executable, so that an installed or moved copy works, never through a compiled-in path.
#pragma once

#include <string>

namespace convlab::data {

// The file that marks a data folder: ROOT/assets/convlab-data.txt.
inline constexpr const char* kMarker = "assets/convlab-data.txt";

// True when `dir` holds the marker file.
bool is_data_root(const std::string& dir);

// The data folder, found in this order:
//   1. $CONVLAB_DATA when set and not empty (it must hold the marker);
//   2. EXE_DIR/../share/convlab (an installed prefix);
//   3. the folder named in EXE_DIR/convlab-data-dir (a build tree points at its source tree);
//   4. EXE_DIR and its parents (a build folder inside the source tree);
//   5. the current directory.
// EXE_DIR is the folder of /proc/self/exe. Throws convlab::Error naming CONVLAB_DATA when that
// variable names a folder without the marker, or when no folder is found.
std::string root();

std::string lessons_dir();  // ROOT/lessons
std::string themes_dir();   // ROOT/assets/themes
std::string shapes_dir();   // ROOT/assets/shapes

}  // namespace convlab::data
