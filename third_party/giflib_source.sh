#!/usr/bin/env bash
# Unpacks Debian's source package of giflib (the version the desktop build links through
# libgif-dev) into DIR, for the WebAssembly build, which compiles it with emcc.
# Usage: giflib_source.sh DIR   (prints the source folder; a second run only prints it)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: giflib_source.sh DIR" >&2; exit 2; }
exec "$(dirname "${BASH_SOURCE[0]}")/debian_source.sh" giflib=5.2.1-2.5+deb12u1 "$1" egif_lib.c
