#!/usr/bin/env bash
# Builds ConvLab for the browser into build-web/ (Debian's emscripten): the static site is
# build-web/site/ (index.html, convlab.js, convlab.wasm, convlab.data). Usage: web/build.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./third_party/install.sh web
imgui=$(./third_party/imgui_source.sh build-web/third_party)
giflib=$(./third_party/giflib_source.sh build-web/third_party)
# The machine's node may not be Debian's: emscripten's JS optimizer needs Debian's acorn.
export NODE_PATH=/usr/share/nodejs
# emscripten's prebuilt system libraries live in its own cache: never point it elsewhere.
unset EM_CACHE
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                                                   -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
emcmake cmake -S web -B build-web -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCONVLAB_IMGUI_SOURCE="$imgui" -DCONVLAB_GIFLIB_SOURCE="$giflib" \
    -DEigen3_DIR=/usr/share/eigen3/cmake "${launcher[@]}" >/dev/null
# Two jobs (WEB_JOBS=N for another count): ninja's default, cores + 2, runs four compilers on
# a 2-core machine.
cmake --build build-web -j "${WEB_JOBS:-2}"
echo "web: build-web/site/ ($(du -sh build-web/site | cut -f1))"
