#!/bin/sh
# Triage of an AFL++ campaign's crashes and hangs (called by mk/fuzz-run.sh;
# fuzz/README.md, "Findings"): each test case saved after STAMP is replayed
# with the plain ASan+UBSan harness of DEBUG_BUILD; what reproduces is
# deduplicated by its stack (the sanitizer's or the violation's headline and
# the top five frames of the project, function names only, hashed), the first
# of each stack minimized with afl-tmin (the AFL++ build the instance ran) and
# recorded with `btrsim findings --record`.
# Usage: mk/fuzz-triage.sh HARNESS OUT DB AFL_BUILD ASAN_BUILD DEBUG_BUILD STAMP TIMEOUT_MS
set -u
H=$1 OUT=$2 DB=$3 AB=$4 SB=$5 DBG=$6 STAMP=$7 TMO=$8
PLAIN="$DBG/fuzz/fuzz-$H"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Replays: a generous bound (the ASan build is slower than AFL++'s); a hang is
# stopped with SIGABRT so that ASan prints where it was.
RTMO=$(( (TMO * 3 + 999) / 1000 ))
[ "$RTMO" -lt 10 ] && RTMO=10
export ASAN_OPTIONS="handle_abort=1:detect_leaks=1:symbolize=1:abort_on_error=0:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86"

# replay FILE LOG: 0 when the harness ran it clean.
replay() {
	timeout -s ABRT "$RTMO" "$PLAIN" "$1" >"$2" 2>&1
}

# The headline and the top frames of a report: stack text on stdout.
stack_of() {
	log=$1
	# A violation's class: numbers and parenthesized details left out; for
	# workload: the class in brackets the harness gives.
	head=$(grep -m1 -o 'btrsim-fuzz: violation: .*' "$log" | sed -E 's/[0-9]+/N/g
		s/^(btrsim-fuzz: violation: [a-z]+ \[[^]]*\]).*/\1/
		s/ \([^)]*\)//g' | cut -c1-160)
	[ -z "$head" ] && head=$(grep -m1 -o -E '(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer): [A-Za-z-]+' "$log")
	[ -z "$head" ] && head=$(grep -m1 -o 'runtime error: .*' "$log" | sed 's/[0-9][0-9]*/N/g' | cut -c1-160)
	[ -z "$head" ] && head="no sanitizer report"
	echo "$head"
	# The first stack of the report, runtime and libc frames left out.
	awk '/^ *#[0-9]+ 0x/ { if (started && $1 == "#0") exit; started = 1
		fn = $4; loc = $5
		if (fn ~ /^(__interceptor_|__asan|__ubsan|__sanitizer|__lsan|__GI_|__libc_|__pthread_kill|pthread_kill|raise|abort|fuzz_violation|_start|malloc|calloc|realloc|free|strdup|strndup|__strdup)/) next
		if ($3 != "in") next
		print fn " " loc; if (++n == 5) exit }' "$log"
}

# The deduplication key of a stack file: the headline and the function names.
key_of() {
	{ echo "$H $1"; head -n 1 "$2"; sed -n '2,$p' "$2" | cut -d' ' -f1; } | sha256sum | cut -c1-16
}

seen=" "
n=0 distinct=0 new=0 known=0 gone=0
for f in "$OUT"/*/crashes/id:* "$OUT"/*/hangs/id:*; do
	[ -f "$f" ] || continue
	[ -n "$(find "$f" -newer "$STAMP")" ] || continue
	n=$((n + 1))
	inst=$(basename "$(dirname "$(dirname "$f")")")
	case $f in */hangs/*) kind=hang ;; *) kind=crash ;; esac
	sig=$(echo "$f" | sed -n 's/.*,sig:\([0-9]*\),.*/\1/p')
	id=$(basename "$f" | cut -d, -f1)
	if replay "$f" "$T/log"; then
		echo "fuzz-triage: $inst/$id ($kind): runs clean in the ASan build: not reproduced"
		gone=$((gone + 1))
		continue
	fi
	grep -q 'btrsim-fuzz: violation: ' "$T/log" && kind=violation
	stack_of "$T/log" >"$T/stack"
	hash=$(key_of "$kind" "$T/stack")
	case $seen in *" $hash "*) continue ;; esac
	seen="$seen$hash "
	distinct=$((distinct + 1))
	case $sig in
	'') signal=$( [ "$kind" = hang ] && echo SIGKILL || echo SIGABRT) ;;
	*) signal=$(kill -l "$sig" 2>/dev/null | sed 's/^/SIG/;s/^SIGSIG/SIG/') ;;
	esac
	# Minimize with the binary that found it; keep the result only when it
	# still fails the same way in the ASan build.
	bin="$AB/fuzz/fuzz-$H"
	case $inst in *asan*) bin="$SB/fuzz/fuzz-$H" ;; esac
	min=""
	# A hang is not minimized: every try would wait out the timeout.
	if [ "$kind" = hang ]; then
		echo "fuzz-triage: $inst/$id: a hang: recorded as found, not minimized"
	elif ASAN_OPTIONS="abort_on_error=1:symbolize=0:detect_leaks=0" AFL_SKIP_CPUFREQ=1 \
		timeout 300 afl-tmin -i "$f" -o "$T/min" -t "$TMO" -- "$bin" >"$T/tmin.log" 2>&1 &&
		[ -s "$T/min" ]; then
		if ! replay "$T/min" "$T/log2"; then
			stack_of "$T/log2" >"$T/stack2"
			h2=$(key_of "$kind" "$T/stack2")
			[ "$h2" = "$hash" ] && min="--minimized $T/min"
		fi
		[ -z "$min" ] && echo "fuzz-triage: $inst/$id: afl-tmin's input fails differently: kept the original only"
	else
		echo "fuzz-triage: $inst/$id: afl-tmin failed: $(tail -n 1 "$T/tmin.log")"
	fi
	# shellcheck disable=SC2086
	res=$("$DBG/btrsim" findings --db "$DB" --record --harness "$H" --kind "$kind" \
		--signal "$signal" --stack-hash "$hash" --stack "$T/stack" --input "$f" $min) || exit 1
	case $res in new*) new=$((new + 1)) ;; *) known=$((known + 1)) ;; esac
	echo "fuzz-triage: $inst/$id: $kind $signal, $(head -n 1 "$T/stack"), top frame $(sed -n 2p "$T/stack" | cut -d' ' -f1): $res"
done
echo "fuzz-triage: $H: $n crashes and hangs, $gone not reproduced, $distinct distinct stacks: $new new findings, $known known"
