#!/usr/bin/env bash
# Unpacks Debian's source package of Dear ImGui (the version the desktop build links through
# libimgui-dev) into DIR, for builds that compile ImGui themselves (the WebAssembly build). apt's
# own configuration is left alone: the deb-src list and the package lists live in DIR.
# Usage: imgui_source.sh DIR   (prints the source folder; a second run only prints it)
set -euo pipefail
version=1.86+ds-1
[ $# -eq 1 ] || { echo "usage: imgui_source.sh DIR" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
src="$dir/imgui-${version%-*}"
if [ ! -f "$src/imgui.cpp" ]; then
    mkdir -p "$dir/apt-lists/partial"
    echo "deb-src http://deb.debian.org/debian bookworm main" >"$dir/sources.list"
    opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$dir/apt-lists" -qq)
    apt-get "${opts[@]}" update >&2
    # apt-get source applies Debian's patches: the sources libimgui.a is built from.
    (cd "$dir" && apt-get "${opts[@]}" source "imgui=$version" >&2)
    [ -f "$src/imgui.cpp" ] || { echo "imgui_source.sh: $src/imgui.cpp missing" >&2; exit 1; }
fi
echo "$src"
