#!/bin/sh
# Coverage (`make coverage`; README.md, "Make targets"; fuzz/README.md,
# "Coverage of a corpus").
#
#   mk/coverage.sh BUILD_DIR REPORT_DIR
#       collects gcov data from a coverage build after the tests (and a corpus)
#       ran, writes the lcov HTML report (lines, functions, branches) and prints
#       a summary per folder.
#
#   mk/coverage.sh --corpus BUILD_DIR [HARNESS:]PATH...
#       runs fuzz inputs through the plain harness programs of BUILD_DIR
#       (BUILD_DIR/fuzz/fuzz-HARNESS; `make coverage CORPUS=...`), so that their
#       coverage adds to the build's gcov data.  PATH is an input file, a
#       directory of inputs (fuzz/seeds/image, an AFL++ queue/), an AFL++
#       instance directory (its queue/), an AFL++ output or sync directory (the
#       queue/ of every instance in it), or a directory holding one directory
#       per harness (fuzz/seeds, fuzz/regress, build/afl/campaigns).  The
#       harness: HARNESS: before the path, else $HARNESS, else the last
#       component of the path that names one (image, workload, parse,
#       stream).  Inputs run in batches of COVERAGE_BATCH (32) per process; a
#       batch that crashes or outlasts twice COVERAGE_TIMEOUT (10 s) is run
#       again one input per process, so that a crash or a hang costs only its
#       own coverage: each is counted, listed in BUILD_DIR/corpus-failures.txt
#       and shown, and the exit status stays 0.  Exit 1 on a path that does
#       not exist, a corpus without inputs, a harness that cannot be told, or
#       a missing program.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" != --corpus ]; then
	B=$1
	R=$2
	RC="--rc lcov_branch_coverage=1"
	mkdir -p "$R"
	lcov -q $RC --capture --directory "$B" --base-directory . -o "$B/all.info" 2>/dev/null
	# An object that never ran has no .gcda and would be left out of the report;
	# when there is one (COVERAGE_TESTS=0: only a corpus ran, and cli/ and most
	# of traces/ never do), the zero baseline of every object (--initial, 15 s)
	# is added, so that such a file counts at 0%.
	unrun=$(find "$B" -name '*.gcno' ! -path "$B/tests/*" ! -path "$B/bench/*" | while read -r g; do
		[ -f "${g%.gcno}.gcda" ] || echo "$g"
	done | wc -l)
	if [ "$unrun" -gt 0 ]; then
		echo "coverage: $unrun objects never ran; their files count at 0%"
		lcov -q $RC --capture --initial --directory "$B" --base-directory . -o "$B/base.info" 2>/dev/null
		lcov -q $RC -a "$B/base.info" -a "$B/all.info" -o "$B/tmp.info" 2>/dev/null
		mv -f "$B/tmp.info" "$B/all.info"
	fi
	lcov -q $RC --extract "$B/all.info" "$(pwd)/*" -o "$B/tmp.info" 2>/dev/null
	lcov -q $RC --remove "$B/tmp.info" "*/tests/*" "*/bench/*" -o "$B/coverage.info" 2>/dev/null
	genhtml -q $RC --branch-coverage --prefix "$(pwd)" -o "$R" "$B/coverage.info"
	echo "coverage report: $R/index.html"
	# Per folder, from the tracefile: LF/LH lines, FNF/FNH functions, BRF/BRH branches.
	awk -v top="$(pwd)/" '
	/^SF:/ { f = substr($0, 4); sub(top, "", f); split(f, p, "/"); dir = p[1] "/" }
	/^LF:/ { lf[dir] += substr($0, 4) } /^LH:/ { lh[dir] += substr($0, 4) }
	/^FNF:/ { ff[dir] += substr($0, 5) } /^FNH:/ { fh[dir] += substr($0, 5) }
	/^BRF:/ { bf[dir] += substr($0, 5) } /^BRH:/ { bh[dir] += substr($0, 5) }
	function pct(h, f) { return f ? sprintf("%5.1f%% (%d/%d)", 100 * h / f, h, f) : "    -" }
	END {
		printf "%-8s %-22s %-22s %-22s\n", "folder", "lines", "functions", "branches"
		for (d in lf) { printf "%-8s %-22s %-22s %-22s\n", d, pct(lh[d], lf[d]), pct(fh[d], ff[d]), pct(bh[d], bf[d]); LF += lf[d]; LH += lh[d]; FF += ff[d]; FH += fh[d]; BF += bf[d]; BH += bh[d] }
		printf "%-8s %-22s %-22s %-22s\n", "total", pct(LH, LF), pct(FH, FF), pct(BH, BF)
	}' "$B/coverage.info"
	exit 0
fi

# ---- --corpus: fuzz inputs through the plain harnesses ----------------------
shift
set +e
B=${1:?usage: mk/coverage.sh --corpus BUILD_DIR [HARNESS:]PATH...}
shift
[ "$#" -gt 0 ] || { echo "usage: mk/coverage.sh --corpus BUILD_DIR [HARNESS:]PATH..." >&2; exit 1; }
. "$HERE/progress.sh"
HARNESSES="image workload parse stream"
TMO=${COVERAGE_TIMEOUT:-10}
BATCH=${COVERAGE_BATCH:-32}
case $TMO in '' | *[!0-9]* | 0) echo "coverage: COVERAGE_TIMEOUT=$TMO: a number of seconds" >&2; exit 1 ;; esac
case $BATCH in '' | *[!0-9]* | 0) echo "coverage: COVERAGE_BATCH=$BATCH: a number of inputs" >&2; exit 1 ;; esac
case ${HARNESS:-} in '' | image | workload | parse | stream) ;;
*) echo "coverage: HARNESS=$HARNESS: one of $HARNESSES" >&2; exit 1 ;;
esac
T=$(mktemp -d)
trap 'progress_clear; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
die() { progress_clear; echo "coverage: $*" >&2; exit 1; }

# The harness a path names: its last component naming exactly one harness
# (build/fuzz-out/image/default/queue: image); empty when none does.
harness_of() {
	printf '%s\n' "$1" | tr '/' '\n' | awk '{
		n = 0
		if (index($0, "image")) { n++; h = "image" }
		if (index($0, "workload")) { n++; h = "workload" }
		if (index($0, "parse")) { n++; h = "parse" }
		if (index($0, "stream")) { n++; h = "stream" }
		if (n == 1) last = h
	} END { print last }'
}

# collect HARNESS PATH: appends the inputs of PATH to $T/list.HARNESS (in a
# subshell: it recurses; die exits it, hence the || exit 1 of each call).
collect() (
	h=$1 p=${2%/}
	[ -n "$p" ] || p=/
	if [ -f "$p" ]; then
		[ -n "$h" ] || die "$p: which harness? (HARNESS=image|workload|parse|stream, or CORPUS=image:$p)"
		printf '%s\n' "$p" >>"$T/list.$h"
		exit 0
	fi
	[ -d "$p" ] || die "$p: no such file or directory"
	if [ -d "$p/queue" ]; then
		# An AFL++ instance: its queue (not crashes/ or hangs/, which AFL++ saved
		# for failing; name them as paths of their own to run them).
		collect "$h" "$p/queue" || exit 1
		exit 0
	fi
	found=0
	for q in "$p"/*/queue; do
		[ -d "$q" ] || continue
		# An AFL++ output (sync) directory: every instance's queue.
		found=1
		collect "$h" "$q" || exit 1
	done
	[ "$found" -eq 1 ] && exit 0
	files=0
	for f in "$p"/*; do [ -f "$f" ] && files=1 && break; done
	if [ -z "$h" ] || { [ -d "$p/$h" ] && [ "$files" -eq 0 ]; }; then
		# A directory per harness (fuzz/seeds): each, or the one HARNESS names.
		for n in $HARNESSES; do
			[ -d "$p/$n" ] || continue
			[ -z "$h" ] || [ "$n" = "$h" ] || continue
			found=1
			collect "$n" "$p/$n" || exit 1
		done
		[ "$found" -eq 1 ] && exit 0
		[ -n "$h" ] || die "$p: which harness? (HARNESS=image|workload|parse|stream, or CORPUS=image:$p)"
	fi
	for f in "$p"/*; do
		[ -f "$f" ] || continue
		printf '%s\n' "$f" >>"$T/list.$h"
	done
)

for spec in "$@"; do
	h=""
	p=$spec
	case $spec in image:* | workload:* | parse:* | stream:*) h=${spec%%:*} p=${spec#*:} ;; esac
	[ -e "$p" ] || die "CORPUS: $p: no such file or directory"
	[ -n "$h" ] || h=${HARNESS:-}
	[ -n "$h" ] || h=$(harness_of "$p")
	n0=$(cat "$T"/list.* 2>/dev/null | wc -l)
	collect "$h" "$p" || exit 1
	n1=$(cat "$T"/list.* 2>/dev/null | wc -l)
	[ "$n1" -gt "$n0" ] || die "CORPUS: $p: no inputs in it"
done

total=0
for h in $HARNESSES; do
	[ -f "$T/list.$h" ] || continue
	[ -x "$B/fuzz/fuzz-$h" ] || die "$B/fuzz/fuzz-$h is missing (make MODE=coverage build)"
	total=$((total + $(wc -l <"$T/list.$h")))
done
what=""
for h in $HARNESSES; do
	[ -f "$T/list.$h" ] && what="$what${what:+, }$h $(wc -l <"$T/list.$h")"
done
echo "coverage: corpus: $total inputs ($what) through $B/fuzz/"

FAILS="$B/corpus-failures.txt"
: >"$FAILS"
done_n=0 clean=0 crashed=0 hung=0
progress_init "coverage corpus"
START=$(date +%s)

# run_one H FILE: one input, one process.
run_one() {
	timeout -k 2 "$TMO" "$B/fuzz/fuzz-$1" "$2" >/dev/null 2>"$T/err"
	rc=$?
	done_n=$((done_n + 1))
	case $rc in
	0) clean=$((clean + 1)) ;;
	124 | 137)
		hung=$((hung + 1))
		echo "timeout $1 $2" >>"$FAILS"
		;;
	*)
		crashed=$((crashed + 1))
		if [ "$rc" -gt 128 ]; then
			why="SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
		else
			why="exit-$rc"
		fi
		echo "crash $1 $2 $why$(grep -m1 -o 'btrsim-fuzz: violation: .*' "$T/err" | cut -c1-120 | sed 's/^/ /')" >>"$FAILS"
		;;
	esac
}

# run_batch H FIRST LAST: lines FIRST..LAST of the list in one process; when
# that process does not end cleanly, its gcov data is lost (it is written at
# exit): each input again on its own.
run_batch() {
	sed -n "$2,$3p" "$T/list.$1" >"$T/batch"
	set -- "$1"
	while IFS= read -r f; do set -- "$@" "$f"; done <"$T/batch"
	h=$1
	shift
	if timeout -k 2 $((TMO * 2)) "$B/fuzz/fuzz-$h" "$@" >/dev/null 2>&1; then
		done_n=$((done_n + $#))
		clean=$((clean + $#))
		return
	fi
	for f in "$@"; do
		run_one "$h" "$f"
		progress_count "$done_n" "$total" inputs "$((crashed + hung)) failed"
	done
}

for h in $HARNESSES; do
	[ -f "$T/list.$h" ] || continue
	n=$(wc -l <"$T/list.$h")
	i=1
	while [ "$i" -le "$n" ]; do
		j=$((i + BATCH - 1))
		[ "$j" -gt "$n" ] && j=$n
		run_batch "$h" "$i" "$j"
		progress_count "$done_n" "$total" inputs "$((crashed + hung)) failed"
		i=$((j + 1))
	done
done
progress_clear
echo "coverage: corpus: $done_n inputs ran in $(($(date +%s) - START)) s: $clean clean, $crashed crashed, $hung timed out (over ${TMO} s)"
if [ $((crashed + hung)) -gt 0 ]; then
	echo "coverage: corpus: the failing inputs ($FAILS; their own coverage is not counted):"
	head -n 10 "$FAILS" | sed 's/^/  /'
	[ $((crashed + hung)) -gt 10 ] && echo "  ... $((crashed + hung - 10)) more"
else
	rm -f "$FAILS"
fi
exit 0
