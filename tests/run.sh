#!/bin/sh
# Runs the whole test suite against one build directory (build/debug for
# `make test`): the Criterion unit tests and every tests/cli/*.sh and
# tests/interop/*.sh, TEST_JOBS suites at a time (default: the cores).
# Each suite is mostly one process on one core, so suites run side by side.
# Interop suites run one after another in the first lane only: they attach
# loop devices and mount file systems whose fsids come from fixed seeds, and
# the kernel's device registry takes two such volumes for one (EBUSY).
# That lane then takes the other suites too.  Each suite's output is
# printed whole when it ends; the last line is the total,
# "N passed, N failed, N skipped".  Exits 1 when any test failed or a
# sanitizer spoke.
set -u
B=${1:?usage: tests/run.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
JOBS=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}

# A sanitizer report must never pass for an ordinary exit status 1 or 2.
export ASAN_OPTIONS="exitcode=86:detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86"
export LSAN_OPTIONS="exitcode=86"

D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# The suites, named by their path under tests/: the unit tests first (one
# Criterion worker, the longest suite: the other lanes run suites meanwhile).
{
	echo unit
	for t in "$HERE"/cli/test_*.sh "$HERE"/interop/test_*.sh; do
		echo "$(basename "$(dirname "$t")")/$(basename "$t")"
	done
} >"$D/jobs"

# One suite: its log in $D/ID.log, its exit status in $D/ID.rc, then its
# log printed whole (under a lock, so that two suites' outputs never mix).
# A suite is claimed by making its directory $D/ID.claim (atomic), so that
# each runs once whichever lane comes to it first.
lane() {
	for pass in interop other; do
		[ "$pass" = interop ] && [ "$1" != 0 ] && continue
		while IFS= read -r name; do
			case $name in
			interop/*) [ "$pass" = interop ] || continue ;;
			*) [ "$pass" = other ] || continue ;;
			esac
			id=$(echo "$name" | tr / -)
			mkdir "$D/$id.claim" 2>/dev/null || continue
			start=$(date +%s)
			# stdin from /dev/null: a suite that reads it (script(1) does)
			# must not eat this loop's list of suites
			case $name in
			unit) "$B/tests/unit-tests" --jobs 1 ;;
			*) BTRSIM="$B/btrsim" sh "$HERE/$name" ;;
			esac >"$D/$id.log" 2>&1 </dev/null
			echo $? >"$D/$id.rc"
			{
				echo "== $name ($(($(date +%s) - start)) s)"
				cat "$D/$id.log"
			} | flock "$D/out.lock" cat
		done <"$D/jobs"
	done
}
i=0
while [ "$i" -lt "$JOBS" ]; do
	lane "$i" &
	i=$((i + 1))
done
wait

passed=0
failed=0
skipped=0
while IFS= read -r name; do
	id=$(echo "$name" | tr / -)
	log=$D/$id.log
	rc=$(cat "$D/$id.rc" 2>/dev/null || echo 127)
	if [ "$name" = unit ]; then
		synth=$(sed -n 's/.*Synthesis: Tested: \([0-9]*\) | Passing: \([0-9]*\) | Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\2 \3 \4/p' "$log" | tail -n 1)
		if [ -z "$synth" ]; then
			echo "unit tests: no Criterion summary (exit $rc)"
			failed=$((failed + 1))
			continue
		fi
		set -- $synth
		passed=$((passed + $1))
		failed=$((failed + $2 + $3))
		if [ "$rc" -ne 0 ] && [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
			echo "unit tests: exit $rc with no failing test"
			failed=$((failed + 1))
		fi
		continue
	fi
	if [ ! -f "$log" ]; then
		echo "$name: did not run"
		failed=$((failed + 1))
		continue
	fi
	p=$(grep -c '^PASS ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	skipped=$((skipped + $(grep -c '^SKIP ' "$log")))
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "$name: exit $rc with no failing check"
		failed=$((failed + 1))
	fi
done <"$D/jobs"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
