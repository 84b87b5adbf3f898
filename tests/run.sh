#!/bin/sh
# Runs the whole test suite against one build directory (build/debug for
# `make test`): the Criterion unit tests, then every tests/cli/*.sh.
# Each suite prints its own results; the last line is the total,
# "N passed, N failed".  Exits 1 when any test failed or a sanitizer spoke.
set -u
B=${1:?usage: tests/run.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)

# A sanitizer report must never pass for an ordinary exit status 1 or 2.
export ASAN_OPTIONS="exitcode=86:detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86"
export LSAN_OPTIONS="exitcode=86"

passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== unit tests ($B/tests/unit-tests)"
"$B/tests/unit-tests" --jobs 2 >"$log" 2>&1
rc=$?
cat "$log"
synth=$(sed -n 's/.*Synthesis: Tested: \([0-9]*\) | Passing: \([0-9]*\) | Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\2 \3 \4/p' "$log" | tail -n 1)
if [ -z "$synth" ]; then
	echo "unit tests: no Criterion summary (exit $rc)"
	failed=$((failed + 1))
else
	set -- $synth
	passed=$((passed + $1))
	failed=$((failed + $2 + $3))
	[ "$rc" -ne 0 ] && [ "$2" -eq 0 ] && [ "$3" -eq 0 ] && {
		echo "unit tests: exit $rc with no failing test"
		failed=$((failed + 1))
	}
fi

skipped=0
for t in "$HERE"/cli/test_*.sh "$HERE"/interop/test_*.sh; do
	echo "== $(basename "$t")"
	BTRSIM="$B/btrsim" sh "$t" >"$log" 2>&1
	rc=$?
	cat "$log"
	p=$(grep -c '^PASS ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	skipped=$((skipped + $(grep -c '^SKIP ' "$log")))
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "$(basename "$t"): exit $rc with no failing check"
		failed=$((failed + 1))
	fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
