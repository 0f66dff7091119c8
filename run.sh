#!/usr/bin/env bash
# Sets up (Debian packages), builds (Release) and runs ConvLab's main job.
# Usage: ./run.sh [convlab arguments...]   (no arguments: the desktop app, or the headless demo
#        into out/demo/ when no display can be opened)
#        ./run.sh web [--port N]   builds the browser app into build-web/ and serves it on
#        127.0.0.1 (prints the URL; build-web/site/ is a static folder for any web server)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [ "${1:-}" = "web" ]; then
    shift
    web/build.sh
    exec python3 web/serve.py build-web/site "$@"
fi
# Only what the app needs to build and run; ./test.sh adds the test suites' packages.
./third_party/install.sh run
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_BUILD_TESTS=OFF >/dev/null
cmake --build build --target convlab
exec ./build/app/convlab "$@"
