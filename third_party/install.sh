#!/usr/bin/env bash
# Installs the Debian packages of the given groups of third_party/packages.txt ([run], [test],
# [web], [webtest]) that are not installed yet. Usage: install.sh GROUP...   (no group: all)
# Idempotent: a second run installs nothing and does not touch the network.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
groups=" $* "
wanted=()
group=""
while IFS= read -r line; do
    line=${line%%#*}
    line=${line//[[:space:]]/}
    [ -n "$line" ] || continue
    if [[ $line =~ ^\[([a-z]+)\]$ ]]; then
        group=${BASH_REMATCH[1]}
        continue
    fi
    if [ $# -eq 0 ] || [[ $groups == *" $group "* ]]; then wanted+=("$line"); fi
done <"$here/packages.txt"
if [ ${#wanted[@]} -eq 0 ]; then
    echo "third_party: no package in group(s):$groups(groups: run, test, web, webtest)" >&2
    exit 2
fi
missing=()
for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "third_party: all ${#wanted[@]} Debian packages present"
    exit 0
fi
echo "third_party: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
