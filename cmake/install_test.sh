#!/usr/bin/env bash
# Installs a built tree into a temporary prefix, MOVES the prefix, and uses the moved copy:
#   install_test.sh app BUILD SRC       the installed convlab (lesson list and check, compute, a
#                                       lesson step's shot) from outside the source tree
#   install_test.sh consumer BUILD SRC  examples/consumer built against the moved prefix through
#                                       find_package(ConvLab) and through pkg-config, and run
# Any failure exits non-zero with a line saying what failed.
set -euo pipefail
mode=$1 build=$2 src=$3
work=$(mktemp -d /tmp/convlab-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/first" >/dev/null
mv "$work/first" "$work/moved"
P=$work/moved
cd "$work"  # nothing found through the current directory or the source tree
unset CONVLAB_DATA

if [ "$mode" = app ]; then
    for f in bin/convlab share/convlab/assets/convlab-data.txt share/convlab/lessons/01_backprop_1d.toml \
             share/convlab/assets/themes/default.theme share/convlab/assets/shapes/resnet50.txt \
             share/applications/convlab.desktop share/icons/hicolor/scalable/apps/convlab.svg; do
        [ -e "$P/$f" ] || fail "$f is not installed"
    done
    # The binary must not find its data through a compiled-in source path.
    # (Debug information names the sources wherever a build has it: only the rest is looked at.)
    objcopy --strip-debug "$P/bin/convlab" "$work/convlab.nodebug"
    if grep -qF "$src" "$work/convlab.nodebug"; then fail "bin/convlab holds the source path $src"; fi
    "$P/bin/convlab" -V | grep -Eq '^convlab [0-9.]+ \(commit [0-9a-f]{12}(-dirty)?, ' ||
        fail "convlab -V does not print the version with the commit: $("$P/bin/convlab" -V 2>&1)"
    n=$("$P/bin/convlab" lesson list | grep -c '\.toml')
    [ "$n" -ge 18 ] || fail "lesson list shows $n lessons from the moved prefix, expected 18 or more"
    "$P/bin/convlab" lesson check "$P"/share/convlab/lessons/01_backprop_1d.toml
    "$P/bin/convlab" compute --problem mb1ic2ih5oc3kh3ph1 --pass fwd --out "$work/y.npy"
    [ -s "$work/y.npy" ] || fail "compute wrote no y.npy"
    # No display: the binary re-runs itself under xvfb-run, as the render tests do.
    env -u DISPLAY "$P/bin/convlab" shot --lesson 1 --step 2 --size 800x500 --out "$work/step.png"
    [ "$(head -c 8 "$work/step.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
        fail "shot wrote no PNG"
    # The data folder follows CONVLAB_DATA; a folder without the marker is refused in one line.
    if CONVLAB_DATA=$work "$P/bin/convlab" lesson list 2>"$work/err"; then
        fail "CONVLAB_DATA naming a folder without data was accepted"
    fi
    grep -q '^convlab: CONVLAB_DATA' "$work/err" || fail "no 'convlab: CONVLAB_DATA' line: $(cat "$work/err")"
    echo "install_test: the moved prefix's convlab ran lesson list, check, compute and shot"
elif [ "$mode" = consumer ]; then
    [ -f "$P/include/convlab/conv.hpp" ] || fail "include/convlab/conv.hpp is not installed"
    cmake -S "$src/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_PREFIX_PATH="$P" >/dev/null
    cmake --build "$work/consumer" >/dev/null
    "$work/consumer/consumer"
    pc=$(find "$P" -name convlab.pc | head -1)
    [ -n "$pc" ] || fail "convlab.pc is not installed"
    export PKG_CONFIG_PATH=$(dirname "$pc")
    # shellcheck disable=SC2046
    c++ -O1 -o "$work/consumer_pc" "$src/examples/consumer/main.cpp" $(pkg-config --cflags --libs convlab)
    "$work/consumer_pc"
    # The Python module, when the build made one: imported from the moved prefix, computing.
    so=$(find "$P" -name 'convlab.cpython-*.so' | head -1)
    if [ -n "$so" ]; then
        PYTHONPATH=$(dirname "$so") /usr/bin/python3 -c "
import numpy as np, convlab
p = convlab.Problem('mb1ic2ih3oc1kh2')
y = convlab.forward(p, np.ones(p.src_shape, np.float32), np.ones(p.wei_shape, np.float32))
assert y.shape == (1, 1, 2, 2) and (y == 8).all(), y" || fail "the installed Python module failed"
        echo "install_test: the moved prefix's Python module computed a forward pass"
    fi
    echo "install_test: examples/consumer built from the moved prefix (CMake and pkg-config) and passed"
else
    fail "unknown mode '$mode' (app | consumer)"
fi
