#!/usr/bin/env bash
# Unpacks Debian's source package of Dear ImGui (the version the desktop build links through
# libimgui-dev) into DIR, for builds that compile ImGui themselves (the WebAssembly build).
# Usage: imgui_source.sh DIR   (prints the source folder; a second run only prints it)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: imgui_source.sh DIR" >&2; exit 2; }
exec "$(dirname "${BASH_SOURCE[0]}")/debian_source.sh" imgui=1.86+ds-1 "$1" imgui.cpp
