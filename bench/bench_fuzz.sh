#!/bin/sh
# bench_fuzz.sh - executions per second of each AFL++ harness in persistent
# mode on one core: afl-fuzz from the harness's seeds (fuzz/seeds/) for
# BENCH_FUZZ_SECONDS (20) each, pinned to CPU 0 (taskset; AFL++'s own binding
# off), execs_per_sec read from its fuzzer_stats.
# Goals (issue 6): image >= 2000, workload >= 500; parse has none.
# On a terminal, a progress line: the harness, seconds done of the three
# runs', ETA (mk/progress.sh).
# Usage: bench/bench_fuzz.sh AFL_BUILD   (the `make fuzz` build, build/afl)
set -u
AB=${1:-build/afl}
SECS=${BENCH_FUZZ_SECONDS:-20}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/mk/progress.sh"
if ! command -v afl-fuzz >/dev/null 2>&1; then
	echo "bench_fuzz: SKIP: afl-fuzz is not installed (make deps)"
	exit 0
fi
# afl-fuzz refuses some directories (/tmp for afl-cmin); keep it in the build.
T=$(mktemp -d "$AB/bench-fuzz.XXXXXX") || exit 1
pid=""
trap 'progress_clear; [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c 0"
progress_init bench_fuzz
n=0
for h in image workload parse; do
	n=$((n + 1))
	case $h in image) goal=2000 ;; workload) goal=500 ;; *) goal="" ;; esac
	case $h in workload) tmo=5000 ;; *) tmo=1000 ;; esac
	bin="$AB/fuzz/fuzz-$h"
	if [ ! -x "$bin" ]; then
		echo "bench_fuzz: $h: $bin is missing (make fuzz)"
		continue
	fi
	dict=""
	[ -f "$ROOT/fuzz/dict/$h.dict" ] && dict="-x $ROOT/fuzz/dict/$h.dict"
	# shellcheck disable=SC2086
	AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
		$pin afl-fuzz -i "$ROOT/fuzz/seeds/$h" -o "$T/$h" -V "$SECS" -t "$tmo" $dict -- "$bin" \
		>"$T/$h.log" 2>&1 &
	pid=$!
	t0=$(date +%s)
	while [ "$PROGRESS_ON" = 1 ] && kill -0 "$pid" 2>/dev/null; do
		el=$(($(date +%s) - t0))
		[ "$el" -gt "$SECS" ] && el=$SECS
		done_s=$(((n - 1) * SECS + el))
		progress_line "$h ($n/3), $done_s/$((3 * SECS)) s, ETA $((3 * SECS - done_s)) s"
		sleep 1
	done
	wait "$pid"
	pid=""
	progress_clear
	st="$T/$h/default/fuzzer_stats"
	if [ ! -f "$st" ]; then
		echo "bench_fuzz: $h: afl-fuzz did not run: $(grep -m1 -E 'PROGRAM ABORT|core_pattern' "$T/$h.log")"
		continue
	fi
	eps=$(sed -n 's/^execs_per_sec *: *//p' "$st")
	ex=$(sed -n 's/^execs_done *: *//p' "$st")
	stab=$(sed -n 's/^stability *: *//p' "$st")
	echo "bench_fuzz: $h: $eps execs/s on one core ($ex execs in $SECS s, stability $stab)${goal:+ (goal >= $goal)}"
done
