#!/usr/bin/env bash
# Sets up (Debian packages), builds (Release) and runs ConvLab's main job.
# Usage: ./run.sh [convlab arguments...]   (no arguments: the desktop app, or the headless demo
#        into out/demo/ when no display can be opened)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./third_party/install.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target convlab
exec ./build/app/convlab "$@"
