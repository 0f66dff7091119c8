# The doctest suites that need the engine only (no app library), for builds with
# -DCONVLAB_APP=OFF: one executable, every TEST_CASE registered with ctest. Listed by name,
# because tests/maps/ and the top folder also hold suites that include the app's headers (the
# map registry, FRACTAL_NZ and NHWC suites read lessons; the map-expression suite's helper
# test_files.hpp runs the app's command line).
set(CONVLAB_ENGINE_TEST_SOURCES
    ${PROJECT_SOURCE_DIR}/tests/main.cpp ${PROJECT_SOURCE_DIR}/tests/test_algorithms.cpp
    ${PROJECT_SOURCE_DIR}/tests/bench/test_bench_runner.cpp
    ${PROJECT_SOURCE_DIR}/tests/bench/test_results_io.cpp
    ${PROJECT_SOURCE_DIR}/tests/maps/test_davinci_maps.cpp
    ${PROJECT_SOURCE_DIR}/tests/maps/test_maps.cpp ${PROJECT_SOURCE_DIR}/tests/maps/test_map_kernels.cpp
    ${PROJECT_SOURCE_DIR}/tests/maps/test_map_dumps.cpp
    ${PROJECT_SOURCE_DIR}/tests/test_fractal_kernel.cpp ${PROJECT_SOURCE_DIR}/tests/test_fractal_fast.cpp
    ${PROJECT_SOURCE_DIR}/tests/test_fractal_c04.cpp ${PROJECT_SOURCE_DIR}/tests/test_pack_simd.cpp
    ${PROJECT_SOURCE_DIR}/tests/test_fractal_tap_lanes.cpp
    ${PROJECT_SOURCE_DIR}/tests/test_layers.cpp ${PROJECT_SOURCE_DIR}/tests/test_layout.cpp
    ${PROJECT_SOURCE_DIR}/tests/test_npy.cpp ${PROJECT_SOURCE_DIR}/tests/test_packing.cpp
    ${PROJECT_SOURCE_DIR}/tests/test_problem.cpp ${PROJECT_SOURCE_DIR}/tests/test_tuning.cpp
    ${PROJECT_SOURCE_DIR}/tests/test_winograd.cpp)
# The engine's suites in folders mirroring engine/src (gemm/, conv/, conv/implicit_gemm/).
file(GLOB_RECURSE CONVLAB_ENGINE_FOLDER_TESTS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/tests/gemm/test_*.cpp ${PROJECT_SOURCE_DIR}/tests/conv/test_*.cpp)
list(APPEND CONVLAB_ENGINE_TEST_SOURCES ${CONVLAB_ENGINE_FOLDER_TESTS})
add_executable(convlab_engine_tests ${CONVLAB_ENGINE_TEST_SOURCES})
target_link_libraries(convlab_engine_tests PRIVATE convlab_benchlib convlab_engine convlab_flags
                      nlohmann_json::nlohmann_json doctest::doctest)
target_include_directories(convlab_engine_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_definitions(convlab_engine_tests PRIVATE CONVLAB_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
doctest_discover_tests(convlab_engine_tests)
