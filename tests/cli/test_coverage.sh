#!/bin/sh
# make coverage CORPUS=... (mk/coverage.sh --corpus; README.md, "Coverage"):
# the inputs and harness a corpus path gives (files, directories of inputs,
# AFL++ instance and output directories, a directory per harness, the
# HARNESS: prefix and $HARNESS), batches, crashing and hanging inputs counted
# and listed without ending the run, the errors; with fake harness programs, so
# cheap.  Then the real plain harnesses next to $BTRSIM over fuzz/seeds/parse,
# and on a gcov build (make coverage) that a corpus raises the coverage of
# fuzz/harness_parse.c (the gcov data of those runs goes to a private
# GCOV_PREFIX, the report's own is left alone).
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
COV="$ROOT/mk/coverage.sh"
B=$(cd "$(dirname "$BTRSIM")" && pwd)
unset HARNESS BTRSIM_PROGRESS COVERAGE_BATCH COVERAGE_TIMEOUT

# Fake harness programs: each input they run is logged to $T/ran.HARNESS; an
# input holding CRASH kills the process (SIGSEGV), one holding HANG hangs.
mkdir -p "$T/fb/fuzz"
for h in image workload parse stream; do
	cat >"$T/fb/fuzz/fuzz-$h" <<EOF
#!/bin/sh
for f in "\$@"; do
	grep -q CRASH "\$f" && kill -SEGV \$\$
	grep -q HANG "\$f" && exec sleep 60
	echo "\$f" >>"$T/ran.$h"
done
exit 0
EOF
	chmod +x "$T/fb/fuzz/fuzz-$h"
done
ran() { sort -u "$T/ran.$1" 2>/dev/null | wc -l; }

# ---- 20 inputs in batches of 8; the 3rd crashes, the 18th hangs ----
mkdir -p "$T/c/image"
i=1
while [ "$i" -le 20 ]; do
	f=$(printf '%s/c/image/i%02d' "$T" "$i")
	case $i in 3) echo CRASH >"$f" ;; 18) echo HANG >"$f" ;; *) echo "input $i" >"$f" ;; esac
	i=$((i + 1))
done
run coverage-corpus-failures 0 env COVERAGE_BATCH=8 COVERAGE_TIMEOUT=1 sh "$COV" --corpus "$T/fb" "$T/c/image"
out_has "^coverage: corpus: 20 inputs \(image 20\) through $T/fb/fuzz/$"
out_has '^coverage: corpus: 20 inputs ran in [0-9]+ s: 18 clean, 1 crashed, 1 timed out \(over 1 s\)$'
out_has "^  crash image $T/c/image/i03 SIGSEGV$"
out_has "^  timeout image $T/c/image/i18$"
err_empty
[ "$(ran image)" -eq 18 ] || fail "$(ran image) distinct inputs ran clean, expected 18"
grep -q 'i03\|i18' "$T/ran.image" && fail "a failing input was logged as run"
[ "$(wc -l <"$T/fb/corpus-failures.txt")" -eq 2 ] || fail "corpus-failures.txt: $(cat "$T/fb/corpus-failures.txt")"
done_check

# ---- AFL++ output directory: every instance's queue, not crashes/ or .state/ ----
rm -f "$T"/ran.*
for i in main s1; do
	mkdir -p "$T/afl/workload/$i/queue/.state/auto_extras" "$T/afl/workload/$i/crashes"
	echo a >"$T/afl/workload/$i/queue/id:000000,time:0,execs:0,orig:a"
	echo b >"$T/afl/workload/$i/queue/.state/auto_extras/x"
	echo CRASH >"$T/afl/workload/$i/crashes/id:000000,sig:06,src:000000"
done
echo c >"$T/afl/workload/main/queue/id:000001,src:000000,time:10,execs:20,op:havoc"
run coverage-corpus-afl-output 0 sh "$COV" --corpus "$T/fb" "$T/afl/workload"
out_has '^coverage: corpus: 3 inputs \(workload 3\)'
out_has ': 3 clean, 0 crashed, 0 timed out'
[ "$(ran workload)" -eq 3 ] || fail "$(ran workload) inputs ran, expected 3"
done_check
# An instance directory, its queue directory: the harness from the path.
rm -f "$T"/ran.*
run coverage-corpus-afl-instance 0 sh "$COV" --corpus "$T/fb" "$T/afl/workload/main" \
	"$T/afl/workload/s1/queue/"
out_has '^coverage: corpus: 3 inputs \(workload 3\)'
done_check

# ---- A directory per harness (fuzz/seeds); HARNESS picks one of them ----
mkdir -p "$T/s/image" "$T/s/parse" "$T/misc"
echo x >"$T/s/image/a"
echo y >"$T/s/image/b"
echo z >"$T/s/parse/c"
echo w >"$T/misc/d"
rm -f "$T"/ran.*
run coverage-corpus-per-harness 0 sh "$COV" --corpus "$T/fb" "$T/s"
out_has '^coverage: corpus: 3 inputs \(image 2, parse 1\)'
[ "$(ran image)" -eq 2 ] && [ "$(ran parse)" -eq 1 ] || fail "image $(ran image), parse $(ran parse) inputs ran"
done_check
run coverage-corpus-harness-env 0 env HARNESS=parse sh "$COV" --corpus "$T/fb" "$T/s" "$T/misc"
out_has '^coverage: corpus: 2 inputs \(parse 2\)'
done_check
run coverage-corpus-harness-prefix 0 sh "$COV" --corpus "$T/fb" "image:$T/misc" "workload:$T/s/image/a"
out_has '^coverage: corpus: 2 inputs \(image 1, workload 1\)'
done_check

# ---- The progress line, only when asked for (stderr is a file here) ----
run coverage-corpus-progress 0 env BTRSIM_PROGRESS=1 sh "$COV" --corpus "$T/fb" "$T/s"
tr '\r' '\n' <"$ERR" | grep -qE '^coverage corpus: 3/3 inputs \([0-9.]+/s\), 0 failed, ETA 0 s' ||
	fail "no progress line: $(od -c "$ERR" | head -n 5)"
[ "$(tail -c 4 "$ERR" | od -An -c | tr -d ' ')" = '\r033[K' ] || fail "the line is not cleared at the end"
done_check

# ---- Errors: exit 1 and why ----
run coverage-corpus-no-harness 1 sh "$COV" --corpus "$T/fb" "$T/misc"
err_has "misc: which harness\? \(HARNESS=image\|workload\|parse\|stream, or CORPUS=image:"
done_check
run coverage-corpus-missing 1 sh "$COV" --corpus "$T/fb" "$T/nothing"
err_has 'nothing: no such file or directory'
done_check
mkdir -p "$T/empty/image"
run coverage-corpus-empty 1 sh "$COV" --corpus "$T/fb" "$T/empty/image"
err_has 'image: no inputs in it'
done_check
mkdir -p "$T/nob/fuzz"
run coverage-corpus-no-program 1 sh "$COV" --corpus "$T/nob" "$T/s/parse"
err_has 'fuzz-parse is missing'
done_check
run coverage-corpus-bad-harness 1 env HARNESS=oops sh "$COV" --corpus "$T/fb" "$T/misc"
err_has 'HARNESS=oops: one of image workload parse stream'
done_check

# ---- The real plain harnesses of $BTRSIM's build ----
n=$(ls "$ROOT/fuzz/seeds/parse" | wc -l)
run coverage-corpus-seeds 0 sh "$COV" --corpus "$B" "$ROOT/fuzz/seeds/parse"
out_has "^coverage: corpus: $n inputs ran in [0-9]+ s: $n clean, 0 crashed, 0 timed out"
done_check

# ---- On a gcov build: a corpus raises the coverage of the harness's file ----
if [ ! -f "$B/fuzz/harness_parse.gcno" ]; then
	echo "SKIP coverage-corpus-raises: $B is not a gcov build (make coverage runs it)"
else
	# lines_of PREFIX: the percentage of fuzz/harness_parse.c's lines the runs
	# whose gcov data went under PREFIX executed.
	lines_of() {
		g=$(find "$1" -name harness_parse.gcda | head -n 1)
		[ -n "$g" ] || { echo 0; return; }
		cp "$B/fuzz/harness_parse.gcno" "$(dirname "$g")/"
		(cd "$(dirname "$g")" && gcov -n -o . harness_parse.gcda 2>/dev/null) |
			awk '/^File .*harness_parse\.c/ { f = 1 } f && /^Lines executed:/ {
				sub(/^Lines executed:/, ""); sub(/%.*/, ""); print; exit }'
	}
	NAME=coverage-corpus-raises
	BAD=0
	GCOV_PREFIX="$T/g1" sh "$COV" --corpus "$B" "parse:$ROOT/fuzz/seeds/parse/wl-basic" >/dev/null 2>&1
	GCOV_PREFIX="$T/g2" sh "$COV" --corpus "$B" "$ROOT/fuzz/seeds/parse" >/dev/null 2>&1
	one=$(lines_of "$T/g1")
	all=$(lines_of "$T/g2")
	awk -v a="${one:-0}" -v b="${all:-0}" 'BEGIN { exit !(a > 0 && b > a) }' ||
		fail "fuzz/harness_parse.c: ${one:-no}% of lines with one seed, ${all:-no}% with all"
	done_check
fi
