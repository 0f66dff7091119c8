#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in build-fuzz/), replays their seeds and the
# checked-in regression inputs, then fuzzes each target for a while.
#
# Usage: tests/fuzz/run.sh [SECONDS]         each target SECONDS (default 60): what CI runs
#        tests/fuzz/run.sh --long [SECONDS]  each target SECONDS (default 3600), by hand
#        tests/fuzz/run.sh --replay          seeds and regressions only (no fuzzing)
#        FUZZ_TARGETS="npy lesson" tests/fuzz/run.sh ...   a subset of the targets
#
# Seeds come from the repository's own files, regenerated on every run in build-fuzz/seeds/:
# descriptors from assets/shapes and the lessons, lessons/*.toml, results files written by
# `convlab bench` (tests/fuzz/seeds/), small .npy files from make_npy_seeds.py. What the fuzzer
# finds is kept in build-fuzz/corpus/TARGET/ (it grows across runs); a crash, leak, sanitizer
# report or slow input is written to build-fuzz/artifacts/TARGET/ and fails the run. A crash
# becomes a regression: minimize it (build-fuzz/tests/fuzz/fuzz_TARGET -minimize_crash=1
# -runs=10000 FILE), add it to tests/fuzz/regressions/TARGET/, fix the defect.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
here=tests/fuzz
seconds=60
replay_only=0
case "${1:-}" in
    --long) seconds="${2:-3600}" ;;
    --replay) replay_only=1 ;;
    "") ;;
    *) seconds="$1" ;;
esac
targets=(${FUZZ_TARGETS:-descriptor npy lesson results})
dir=build-fuzz

CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCONVLAB_FUZZ=ON -DCONVLAB_BUILD_TESTS=OFF -DCONVLAB_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" --target "${targets[@]/#/fuzz_}"

# [SECTION] seeds from the repository's files
seeds="$dir/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"/{descriptor,npy,lesson,results}
n=0
# Descriptors: every non-comment line of the shape files, every problem of the lessons.
while IFS= read -r d; do
    printf '%s' "$d" >"$seeds/descriptor/$((n++))"
done < <( (grep -hv '^\s*\(#\|$\)' assets/shapes/*.txt
           grep -ho "problem = [\"'][^\"']*[\"']" lessons/*.toml | sed "s/^problem = .//; s/.$//") |
         sort -u)
cp lessons/*.toml "$seeds/lesson/"
cp "$here"/seeds/results.* "$seeds/results/"
/usr/bin/python3 "$here/make_npy_seeds.py" "$seeds/npy"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=1  # evaluation's problems are tiny: threads only add noise

status=0
summary=()
for t in "${targets[@]}"; do
    bin="$dir/tests/fuzz/fuzz_$t"
    corpus="$dir/corpus/$t"
    artifacts="$dir/artifacts/$t"
    mkdir -p "$corpus" "$artifacts" "$here/regressions/$t"
    opts=(-dict="$here/dict/$t.dict" -timeout=10 -rss_limit_mb=2048 -max_len=65536
          -artifact_prefix="$artifacts/")
    echo "== fuzz_$t: replaying seeds and regressions"
    if ! "$bin" "${opts[@]}" -runs=0 "$seeds/$t" "$here/regressions/$t" >"$dir/replay_$t.log" 2>&1
    then
        tail -40 "$dir/replay_$t.log"
        echo "fuzz_$t: a seed or regression input fails (log: $dir/replay_$t.log)"
        status=1
        continue
    fi
    [ "$replay_only" = 1 ] && continue
    echo "== fuzz_$t: fuzzing for ${seconds} s"
    log="$dir/fuzz_$t.log"
    if ! "$bin" "${opts[@]}" -max_total_time="$seconds" -print_final_stats=1 \
        "$corpus" "$seeds/$t" >"$log" 2>&1; then
        tail -60 "$log"
        echo "fuzz_$t: FAILED (log: $log; the input is in $artifacts/)"
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    files=$(find "$corpus" -type f | wc -l)
    summary+=("fuzz_$t: ${runs:-?} runs in ${seconds} s (${speed:-?} exec/s), corpus $files files")
done
printf '%s\n' "${summary[@]}"
exit "$status"
