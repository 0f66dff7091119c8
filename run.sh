#!/usr/bin/env bash
# Sets up (Debian packages), builds (Release) and runs ConvLab's main job.
# Usage: ./run.sh [convlab arguments...]   (no arguments: the desktop app, or the headless demo
#        into out/demo/ when no display can be opened)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# Only what the app needs to build and run; ./test.sh adds the test suites' packages.
./third_party/install.sh run
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_BUILD_TESTS=OFF >/dev/null
cmake --build build --target convlab
exec ./build/app/convlab "$@"
