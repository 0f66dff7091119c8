#!/bin/sh
# Prints, as a markdown table, the build time and the frame times (median and max over N frames,
# a new step every frame) of the large views on four ResNet-50 layers at one image, at a
# projector's 1280x720: the bar is a build under 1 s and a median frame of at most 33 ms. The
# CPU columns (the process's CPU time, every thread) hold on a machine busy with other work,
# where the wall-clock ones include the waits for a core.
# Usage: tests/tools/frame_table.sh [CONVLAB] [FRAMES]   (default build/app/convlab, 30)
set -eu
convlab=${1:-build/app/convlab}
frames=${2:-30}
layers="conv1:mb1ic3ih224oc64oh112kh7sh2ph3
res2a_branch2a:mb1ic64ih56oc64oh56kh1ph0
res3a_branch1:mb1ic256ih56oc512oh28kh1sh2ph0
res5a_branch2b:mb1ic512ih7oc512oh7kh3ph1"
views="tnc fractal im2col col2im stride fliprot weight_grad"
echo "| view | layer | build ms | first frame ms | frame median ms | frame max ms | still median ms | build CPU ms | first frame CPU ms | frame CPU ms | fit |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for v in $views; do
    for l in $layers; do
        name=${l%%:*}
        desc=${l#*:}
        out=$("$convlab" shot --view "$v" --problem "$desc" --size 1280x720 --frames "$frames" \
            --report 2>&1) || { echo "| $v | $name | error: $(echo "$out" | tail -1) | | | | | | | | |"; continue; }
        line=$(echo "$out" | grep '^frames ')
        med=$(echo "$line" | sed -n 's/.*new step every frame median \([0-9.]*\) ms.*/\1/p')
        max=$(echo "$line" | sed -n 's/.*new step every frame median [0-9.]* ms, max \([0-9.]*\) ms.*/\1/p')
        still=$(echo "$line" | sed -n 's/.*without step changes median \([0-9.]*\) ms.*/\1/p')
        build=$(echo "$line" | sed -n 's/.*view built in \([0-9.]*\) ms.*/\1/p')
        first=$(echo "$line" | sed -n 's/.*first frame \([0-9.]*\) ms).*/\1/p')
        fcpu1=$(echo "$line" | sed -n 's/.*the first frame \([0-9.]*\) ms.*/\1/p')
        bcpu=$(echo "$line" | sed -n 's/.*the build \([0-9.]*\) ms.*/\1/p')
        fcpu=$(echo "$line" | sed -n 's/.*a frame with a new step median \([0-9.]*\) ms.*/\1/p')
        fit=$(echo "$out" | sed -n 's/^view \(.*\) the canvas:.*cells \([0-9.]*\) px$/\1, \2 px/p')
        echo "| $v | $name | $build | $first | $med | $max | $still | $bcpu | $fcpu1 | $fcpu | $fit |"
    done
done
