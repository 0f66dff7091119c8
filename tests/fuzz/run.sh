#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in build-fuzz/), replays their seeds and the
# checked-in regression inputs, then fuzzes each target for a while.
#
# Usage: tests/fuzz/run.sh [SECONDS]         each target SECONDS (default 60): what CI runs
#        tests/fuzz/run.sh --long [SECONDS]  each target SECONDS (default 3600), by hand
#        tests/fuzz/run.sh --runs N          each target until N executions, by hand (one process:
#                                            run it under `nice -n 10` on a shared machine)
#        tests/fuzz/run.sh --replay          seeds and regressions only (no fuzzing)
#        FUZZ_TARGETS="npy lesson" tests/fuzz/run.sh ...   a subset of the targets
# The last lines are a markdown table: target, runs, exec/s, corpus size, crashes.
#
# Seeds come from the repository's own files, regenerated on every run in build-fuzz/seeds/:
# descriptors from assets/shapes and the lessons, lessons/*.toml, results files written by
# `convlab bench` (tests/fuzz/seeds/), small .npy files from make_npy_seeds.py, assets/themes. What the fuzzer
# finds is kept in build-fuzz/corpus/TARGET/ (it grows across runs); a crash, leak, sanitizer
# report or slow input is written to build-fuzz/artifacts/TARGET/ and fails the run. A crash
# becomes a regression: minimize it (build-fuzz/tests/fuzz/fuzz_TARGET -minimize_crash=1
# -runs=10000 FILE), add it to tests/fuzz/regressions/TARGET/, fix the defect.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
here=tests/fuzz
seconds=60
runs=0
replay_only=0
case "${1:-}" in
    --long) seconds="${2:-3600}" ;;
    --runs) runs="${2:?--runs needs a number of executions}"; seconds=0 ;;
    --replay) replay_only=1 ;;
    "") ;;
    *) seconds="$1" ;;
esac
targets=(${FUZZ_TARGETS:-descriptor npy lesson results theme})
dir=build-fuzz

CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCONVLAB_FUZZ=ON -DCONVLAB_BUILD_TESTS=OFF -DCONVLAB_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" --target "${targets[@]/#/fuzz_}"

# [SECTION] seeds from the repository's files
seeds="$dir/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"/{descriptor,npy,lesson,results,theme}
n=0
# Descriptors: every non-comment line of the shape files, every problem of the lessons.
while IFS= read -r d; do
    printf '%s' "$d" >"$seeds/descriptor/$((n++))"
done < <( (grep -hv '^\s*\(#\|$\)' assets/shapes/*.txt
           grep -ho "problem = [\"'][^\"']*[\"']" lessons/*.toml | sed "s/^problem = .//; s/.$//") |
         sort -u)
cp lessons/*.toml "$seeds/lesson/"
cp "$here"/seeds/results* "$seeds/results/"
cp assets/themes/*.theme "$seeds/theme/"
/usr/bin/python3 "$here/make_npy_seeds.py" "$seeds/npy"

# A small quarantine and no malloc fill: the harnesses allocate and free kilobytes per input, and
# with ASan's 256 MB quarantine every input faulted in fresh pages (ten times slower).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:quarantine_size_mb=8:max_malloc_fill_size=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=1  # evaluation's problems are tiny: threads only add noise

status=0
summary=()
for t in "${targets[@]}"; do
    bin="$dir/tests/fuzz/fuzz_$t"
    corpus="$dir/corpus/$t"
    artifacts="$dir/artifacts/$t"
    mkdir -p "$corpus" "$artifacts" "$here/regressions/$t"
    # Inputs as long as the format's structure needs: a results file of a few rows, a lesson of
    # a few steps (longer ones only repeat what shorter ones reach, slower).
    # The lesson harness reaches thousands of coverage features per input: libFuzzer's entropic
    # schedule, which updates a frequency per feature and input, halved its speed.
    extra=()
    case "$t" in
        descriptor) max_len=4096 ;;
        npy) max_len=65536 ;;
        lesson) max_len=8192 extra=(-entropic=0) ;;
        *) max_len=8192 ;;
    esac
    opts=(-dict="$here/dict/$t.dict" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/")
    echo "== fuzz_$t: replaying seeds and regressions"
    if ! "$bin" "${opts[@]}" -max_len=1048576 -runs=0 "$seeds/$t" "$here/regressions/$t" >"$dir/replay_$t.log" 2>&1
    then
        tail -40 "$dir/replay_$t.log"
        echo "fuzz_$t: a seed or regression input fails (log: $dir/replay_$t.log)"
        status=1
        continue
    fi
    [ "$replay_only" = 1 ] && continue
    if [ "$runs" -gt 0 ]; then
        echo "== fuzz_$t: fuzzing for $runs executions"
        limit=(-runs="$runs")
    else
        echo "== fuzz_$t: fuzzing for ${seconds} s"
        limit=(-max_total_time="$seconds")
    fi
    log="$dir/fuzz_$t.log"
    marker="$dir/.start_$t"
    touch "$marker"
    start=$(date +%s)
    if ! "$bin" "${opts[@]}" -max_len="$max_len" "${extra[@]}" "${limit[@]}" -print_final_stats=1 \
        "$corpus" "$seeds/$t" >"$log" 2>&1; then
        tail -60 "$log"
        echo "fuzz_$t: FAILED (log: $log; the input is in $artifacts/)"
        status=1
    fi
    # Crash, leak, timeout and slow-unit files of this run (libFuzzer stops at the first).
    crashes=$(find "$artifacts" -type f -newer "$marker" | wc -l)
    took=$(($(date +%s) - start))
    done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    files=$(find "$corpus" -type f | wc -l)
    summary+=("| $t | ${done_runs:-?} | ${speed:-?} | $files | $crashes | $took |")
done
if [ "${#summary[@]}" -gt 0 ]; then
    echo "| target | runs | exec/s | corpus files | crashes | seconds |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${summary[@]}"
fi
exit "$status"
