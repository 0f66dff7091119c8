# Every third-party part comes from a Debian package (third_party/packages.txt); this file only
# finds them. No third-party source is kept in the repository.
# The engine finds its own (engine/CMakeLists.txt); these are the app's, the benchmark's and the
# tests' (imported targets are visible only in the folder that finds them and below).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)  # the benchmark and the oneDNN peer set thread counts through it
find_package(dnnl CONFIG QUIET)
if(dnnl_FOUND)
  message(STATUS "oneDNN found: the benchmark measures it side by side")
else()
  message(STATUS "oneDNN not found: the benchmark runs without its peer column")
endif()
# cairo draws the exported charts (SVG, PNG, PDF); found through pkg-config.
find_package(PkgConfig REQUIRED)
pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo)
# giflib (libgif-dev) writes the animated GIF export. CMake's FindGIF module finds its header and
# library whether or not the package ships a pkg-config file: the imported target GIF::GIF.
find_package(GIF 5 REQUIRED)
find_package(tomlplusplus 3 REQUIRED)  # lesson files (libtomlplusplus-dev: tomlplusplus::tomlplusplus)
include(${CMAKE_CURRENT_LIST_DIR}/imgui.cmake)
