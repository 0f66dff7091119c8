#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test suite with ctest.
# Usage: ./test.sh              Release build in build/
#        ./test.sh --sanitize   ASan + UBSan build in build-asan/
#        ./test.sh --tsan       ThreadSanitizer build in build-tsan/: the app's worker stress
#                               test only (engine without OpenMP, no window code)
#        ./test.sh --portable   the engine alone without intrinsics or OpenMP, its suites only,
#                               in build-portable/ (what other CPUs and WebAssembly compile)
#        ./test.sh --web        the browser build (web/build.sh) and its tests in headless
#                               Chromium (web/tests)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [ "${1:-}" = "--web" ]; then
    web/build.sh
    ./third_party/install.sh run webtest
    # The desktop app the page is compared with (a step's shot, the lessons' checks): build/'s
    # convlab, as ./test.sh builds it (no work when it is up to date).
    [ -f build/CMakeCache.txt ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build --target convlab
    export CONVLAB_DESKTOP="$PWD/build/app/convlab"
    cd web/tests
    npm ci --no-audit --no-fund --loglevel=error
    exec node --test --test-concurrency=1 browser.test.mjs
fi
./third_party/install.sh run test
dir=build
flags=(-DCMAKE_BUILD_TYPE=Release -DCONVLAB_BUILD_TESTS=ON)
if [ "${1:-}" = "--sanitize" ]; then
    dir=build-asan
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONVLAB_SANITIZE=ON -DCONVLAB_BUILD_BENCH=OFF
           -DCONVLAB_BUILD_TESTS=ON)
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
elif [ "${1:-}" = "--portable" ]; then
    dir=build-portable
    flags=(-DCMAKE_BUILD_TYPE=Release -DCONVLAB_PORTABLE=ON -DCONVLAB_APP=OFF
           -DCONVLAB_BUILD_TESTS=ON)
fi
targets=()
if [ "${1:-}" = "--tsan" ]; then
    dir=build-tsan
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONVLAB_TSAN=ON -DCONVLAB_BUILD_BENCH=OFF
           -DCONVLAB_INSTALL=OFF -DCONVLAB_BUILD_TESTS=ON)
    targets=(--target convlab_tsan_tests)
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
fi
cmake -S . -B "$dir" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$dir" "${targets[@]}"
ctest --test-dir "$dir" --output-on-failure -j2
