#!/usr/bin/env bash
# Unpacks Debian's source package PACKAGE=VERSION (bookworm, Debian's patches applied) into DIR,
# for builds that compile a library themselves (the WebAssembly build: Dear ImGui, giflib). apt's
# own configuration is left alone: the deb-src list and the package lists live in DIR.
# Usage: debian_source.sh PACKAGE=VERSION DIR FILE   (prints the source folder, which must hold
#        FILE; a second run only prints it)
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: debian_source.sh PACKAGE=VERSION DIR FILE" >&2; exit 2; }
package=${1%%=*}
version=${1#*=}
mkdir -p "$2"
dir=$(cd "$2" && pwd)
upstream=${version#*:}  # no epoch
src="$dir/$package-${upstream%-*}"  # dpkg-source's folder: the version without its revision
if [ ! -f "$src/$3" ]; then
    mkdir -p "$dir/apt-lists/partial"
    echo "deb-src http://deb.debian.org/debian bookworm main" >"$dir/sources.list"
    opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$dir/apt-lists" -qq)
    if ! ls "$dir"/apt-lists/*Sources* >/dev/null 2>&1; then apt-get "${opts[@]}" update >&2; fi
    (cd "$dir" && apt-get "${opts[@]}" source "$package=$version" >&2)
    [ -f "$src/$3" ] || { echo "debian_source.sh: $src/$3 missing" >&2; exit 1; }
fi
echo "$src"
