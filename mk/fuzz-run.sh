#!/bin/sh
# A bounded AFL++ campaign on one harness (`make fuzz-run`; fuzz/README.md,
# "Campaigns"): one main instance (-M) and JOBS-1 secondaries (-S), each
# stopping after SECONDS (-V); then AFL++'s statistics go into the trace
# store (fuzz_stats) and every crash and hang saved during this campaign is
# triaged (mk/fuzz-triage.sh): replayed with the plain ASan build, deduplicated
# by stack, minimized with afl-tmin and recorded as a finding.
#
# Usage: mk/fuzz-run.sh HARNESS SECONDS JOBS DB AFL_BUILD ASAN_BUILD DEBUG_BUILD
# Environment:
#   FUZZ_OUT=DIR       the AFL++ output (sync) directory; default
#                      AFL_BUILD/campaigns/HARNESS; an existing one is resumed
#   FUZZ_NAME=NAME     prefix of this machine's instance names (several
#                      machines sharing one sync directory need distinct ones)
#   FUZZ_SECONDARY=1   no main instance here (another machine runs it)
#   FUZZ_ASAN=1        one secondary (when JOBS >= 2) runs the ASan+UBSan build
#   FUZZ_NO_STATS=1    no statistics recorded (a Slurm array's task: the merge
#                      job records the whole sync directory's once)
#   FUZZ_TIMEOUT=MS    afl-fuzz -t (default: image 1000, workload 5000, parse 1000,
#                      stream 1000)
# On a terminal (stderr; mk/progress.sh), a progress line while AFL++ runs (its
# own UI is off, AFL_NO_UI): seconds, executions and execs/s (from the second
# minute on), corpus, crashes and hangs of this machine's instances summed, ETA.
# Exit status: 0 done (findings or not), 1 a failure, 3 afl-fuzz cannot run here
# (the reason is printed: tests SKIP on it).
set -u
H=${1:?usage: mk/fuzz-run.sh HARNESS SECONDS JOBS DB AFL_BUILD ASAN_BUILD DEBUG_BUILD}
SECS=${2:?}
JOBS=${3:?}
DB=${4:?}
AB=${5:?}
SB=${6:?}
DBG=${7:?}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/mk/progress.sh"

die() { echo "fuzz-run: $*" >&2; exit 1; }
case $H in image | workload | parse | stream) ;; *) die "HARNESS=$H: one of image, workload, parse, stream" ;; esac
case $SECS in '' | *[!0-9]*) die "SECONDS=$SECS is not a number of seconds" ;; esac
case $JOBS in '' | *[!0-9]*) die "JOBS=$JOBS is not a number" ;; esac
[ "$SECS" -ge 1 ] || die "SECONDS must be at least 1"
[ "$JOBS" -ge 1 ] || die "JOBS must be at least 1"
command -v afl-fuzz >/dev/null 2>&1 || { echo "fuzz-run: afl-fuzz is not installed (make deps)" >&2; exit 3; }
BIN="$AB/fuzz/fuzz-$H"
ABIN="$SB/fuzz/fuzz-$H"
for b in "$BIN" "$DBG/fuzz/fuzz-$H" "$DBG/btrsim"; do
	[ -x "$b" ] || die "$b is missing (make fuzz; make MODE=debug build)"
done
SEEDS="$ROOT/fuzz/seeds/$H"
[ -n "$(ls "$SEEDS" 2>/dev/null)" ] || die "no seeds in $SEEDS (make fuzz-seeds)"
case $H in workload) t=5000 ;; *) t=1000 ;; esac
TMO=${FUZZ_TIMEOUT:-$t}
OUT=${FUZZ_OUT:-$AB/campaigns/$H}
NAME=${FUZZ_NAME:-}
mkdir -p "$OUT" || die "cannot make $OUT"
OUT=$(cd "$OUT" && pwd)
DICT=""
[ -f "$ROOT/fuzz/dict/$H.dict" ] && DICT="-x $ROOT/fuzz/dict/$H.dict"
STAMP="$OUT/.campaign-start.$$"
: >"$STAMP"
START=$(date +%s)

# afl-fuzz sets the sanitizers' options it needs (and refuses others, such as
# the test suite's abort_on_error=0).
unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS MSAN_OPTIONS
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_AUTORESUME=1
export AFL_TRY_AFFINITY=1 AFL_IMPORT_FIRST=1
pids=""
insts=""
stop() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	progress_clear
	rm -f "$STAMP"
	exit 1
}

# The progress line, this campaign's instances summed: the corpus, crashes and
# hangs counted in their directories (live); executions and execs/s from each
# instance's last plot_data sample (relative_time, cycles_done, cur_item,
# corpus_count, pending_total, pending_favs, map_size, saved_crashes,
# saved_hangs, max_depth, execs_per_sec, total_execs, edges_found) of this
# campaign, which AFL++ writes every 5 s but not in its first minute.
fuzz_progress() {
	el=$(($(date +%s) - START))
	[ "$el" -gt "$SECS" ] && el=$SECS
	corpus=0 crashes=0 hangs=0
	for i in $insts; do
		d="$OUT/$i"
		for f in "$d"/queue/id:*; do [ -e "$f" ] && corpus=$((corpus + 1)); done
		for f in "$d"/crashes/id:*; do [ -e "$f" ] && crashes=$((crashes + 1)); done
		for f in "$d"/hangs/id:*; do [ -e "$f" ] && hangs=$((hangs + 1)); done
	done
	execs=$(for i in $insts; do
		d="$OUT/$i/plot_data"
		[ -f "$d" ] || continue
		[ -n "$(find "$d" -newer "$STAMP")" ] || continue
		tail -n 1 "$d" | tr -d ' ' | awk -F, '/^[0-9]/ { print $12, $11 }'
	done | awk '{ n++; x += $1; r += $2 } END { if (n) printf "%.0f execs (%.0f/s), ", x, r }')
	progress_line "$el/$SECS s, ${execs}corpus $corpus, $crashes crashes, $hangs hangs, ETA $((SECS - el)) s"
}
trap stop INT TERM

i=0
while [ "$i" -lt "$JOBS" ]; do
	if [ "$i" -eq 0 ] && [ "${FUZZ_SECONDARY:-0}" != 1 ]; then
		role="-M"
		inst="${NAME}main"
	else
		role="-S"
		inst="${NAME}s$i"
	fi
	bin=$BIN
	if [ "$i" -eq 1 ] && [ "${FUZZ_ASAN:-0}" = 1 ]; then
		[ -x "$ABIN" ] || die "$ABIN is missing (make fuzz)"
		bin=$ABIN
		inst="${NAME}asan$i"
	fi
	# shellcheck disable=SC2086
	afl-fuzz -i "$SEEDS" -o "$OUT" $role "$inst" -V "$SECS" -t "$TMO" $DICT -- "$bin" \
		>"$OUT/$inst.log" 2>&1 &
	pids="$pids $!"
	insts="$insts $inst"
	i=$((i + 1))
done
echo "fuzz-run: $H: $JOBS instance(s) for $SECS s into $OUT (logs: $OUT/*.log)"

progress_init "fuzz-run $H"
if [ "$PROGRESS_ON" = 1 ]; then
	while :; do
		alive=0
		for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" -eq 1 ] || break
		fuzz_progress
		sleep 1
	done
	progress_clear
fi
failed=0
for p in $pids; do
	wait "$p" || failed=$((failed + 1))
done
trap - INT TERM
if [ "$failed" -gt 0 ]; then
	# Did any instance fuzz at all?  afl-fuzz refuses to start for reasons of
	# the machine (core_pattern, CPU scaling, shared memory): say which.
	ran=0
	for f in "$OUT"/*/fuzzer_stats; do
		[ -f "$f" ] && [ -n "$(find "$f" -newer "$STAMP")" ] && ran=1
	done
	if [ "$ran" -eq 0 ]; then
		echo "fuzz-run: afl-fuzz could not run here:" >&2
		grep -h -E 'PROGRAM ABORT|Location|core_pattern|Hmm' "$OUT"/*.log 2>/dev/null | head -n 6 >&2
		rm -f "$STAMP"
		exit 3
	fi
	echo "fuzz-run: $failed instance(s) ended with an error; see $OUT/*.log" >&2
fi

if [ -z "${FUZZ_NO_STATS:-}" ]; then
	"$DBG/btrsim" findings --db "$DB" --import-stats "$H" "$OUT" || { rm -f "$STAMP"; exit 1; }
fi
sh "$ROOT/mk/fuzz-triage.sh" "$H" "$OUT" "$DB" "$AB" "$SB" "$DBG" "$STAMP" "$TMO"
rc=$?
rm -f "$STAMP"
echo "fuzz-run: $H: done in $(( $(date +%s) - START )) s; btrsim findings --db $DB lists the findings"
exit $rc
