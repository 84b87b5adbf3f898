#!/bin/sh
# Runs the whole test suite against one build directory (build/debug for
# `make test`): the Criterion unit tests and every tests/cli/*.sh and
# tests/interop/*.sh, as TEST_JOBS suites at a time (default: the cores).
# Each suite is mostly one process on one core, so suites run side by side
# (interop suites too: each attaches its own loop devices with losetup -f and
# mounts in its own directory, and undoes only what it made).  Each suite's
# output is printed whole when it ends; the last line is the total,
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

# The suites, the longest first so that the pool ends evenly: the unit tests
# (one Criterion worker: the other cores run suites meanwhile), then the
# shell suites, named by their path under tests/.
{
	echo unit
	for t in "$HERE"/cli/test_*.sh "$HERE"/interop/test_*.sh; do
		echo "$(basename "$(dirname "$t")")/$(basename "$t")"
	done
} >"$D/jobs"

# One suite: its log in $D/ID.log, its exit status in $D/ID.rc, then its
# log printed whole (under a lock, so that two suites' outputs never mix).
export B D HERE
tr '\n' '\0' <"$D/jobs" | xargs -0 -P "$JOBS" -n 1 sh -c '
	id=$(echo "$1" | tr / -)
	start=$(date +%s)
	case $1 in
	unit) "$B/tests/unit-tests" --jobs 1 ;;
	*) BTRSIM="$B/btrsim" sh "$HERE/$1" ;;
	esac >"$D/$id.log" 2>&1
	echo $? >"$D/$id.rc"
	{ echo "== $1 ($(($(date +%s) - start)) s)"; cat "$D/$id.log"; } | flock "$D/out.lock" cat
' sh

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
