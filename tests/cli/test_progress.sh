#!/bin/sh
# The progress lines of the long-running scripts (mk/progress.sh): the
# helper's formats, drawn in place and cleared when BTRSIM_PROGRESS=1 or
# stderr is a terminal (script(1) gives one), nothing otherwise; mk/fuzz-run.sh
# and bench/bench_fuzz.sh with a fake afl-fuzz (first in PATH: it fills an
# instance directory and a plot_data sample the way AFL++ does, in 3 s), so
# that their lines are checked without AFL++ or its time.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$(dirname "$BTRSIM")" && pwd)
P="$ROOT/mk/progress.sh"
unset BTRSIM_PROGRESS

# The lines of stderr as the terminal would show them in turn.
lines() { tr '\r' '\n' <"$ERR" | sed 's/\x1b\[K$//' | grep -v '^$'; }
line_has() { lines | grep -qE -- "$1" || fail "no progress line /$1/: $(lines | head -n 3)"; }
no_progress() { ! grep -q "$(printf '\r')" "$ERR" || fail "a progress line on stderr: $(lines | head -n 2)"; }
cleared() {
	[ "$(tail -c 4 "$ERR" | od -An -c | tr -d ' ')" = '\r033[K' ] || fail "the line is not cleared at the end"
}

cat >"$T/use.sh" <<'EOF'
. "$1"
progress_init demo
progress_count 0 40 inputs
[ -n "${2:-}" ] && sleep "$2"
progress_count 10 40 inputs "1 failed"
progress_steps 0 4 "explore, round 1 of 3"
progress_steps 2 4
progress_line "5/600 s, corpus 12"
progress_echo "a result"
progress_steps 3 4 last
progress_clear
EOF

run progress-format 0 env BTRSIM_PROGRESS=1 sh "$T/use.sh" "$P"
line_has '^demo: 0/40 inputs \(0\.0/s\)$'
line_has '^demo: 10/40 inputs \([0-9.]+/s\), 1 failed, ETA [0-9]+ s$'
line_has '^demo: 0/4 steps, explore, round 1 of 3$'
line_has '^demo: 2/4 steps, ETA [0-9]+ s$'
line_has '^demo: 5/600 s, corpus 12$'
line_has '^demo: 3/4 steps, last, ETA [0-9]+ s$'
out_has '^a result$'
# Every line starts at the left margin and erases what a longer one left.
[ "$(grep -o "$(printf '\r')demo: " "$ERR" | wc -l)" -eq 6 ] || fail "not 6 lines each after a \\r"
[ "$(grep -o "$(printf '\033')\[K" "$ERR" | wc -l)" -eq 8 ] || fail "not 6 lines and 2 clears erasing"
cleared
done_check
# ETA: 10 of 40 inputs after a pause of at least 1 s: a rate of at most 10/s,
# and the 30 inputs left at that rate (how long the pause really took varies
# with the machine's load, so the figures are checked against each other).
run progress-eta 0 env BTRSIM_PROGRESS=1 sh "$T/use.sh" "$P" 1
line_has '^demo: 10/40 inputs \([0-9.]+/s\), 1 failed, ETA [0-9]+ s$'
eta_line=$(lines | grep -E '^demo: 10/40 inputs' | head -n 1)
rate=$(echo "$eta_line" | sed -n 's/.*(\([0-9.]*\)\/s).*/\1/p')
eta=$(echo "$eta_line" | sed -n 's/.*ETA \([0-9]*\) s$/\1/p')
awk -v r="${rate:-0}" -v e="${eta:-0}" 'BEGIN { d = 30 / r - e; exit !(r > 0 && r <= 10.5 && d > -1.5 && d < 1.5) }' ||
	fail "rate $rate/s and ETA $eta s do not agree (30 inputs left)"
done_check

run progress-not-a-terminal 0 sh "$T/use.sh" "$P"
err_empty
out_has '^a result$'
done_check
run progress-off 0 env BTRSIM_PROGRESS=0 sh "$T/use.sh" "$P"
err_empty
done_check

# A real terminal: script(1) runs the helper on a pseudo-terminal.
if command -v script >/dev/null 2>&1; then
	run progress-terminal 0 script -q -e -c "sh '$T/use.sh' '$P' 2>&1 >/dev/null" /dev/null
	tr '\r' '\n' <"$OUT" | grep -qE '^demo: 2/4 steps, ETA [0-9]+ s' || fail "no line on the terminal: $(head -c 200 "$OUT")"
	done_check
	run progress-terminal-off 0 env BTRSIM_PROGRESS=0 script -q -e -c "sh '$T/use.sh' '$P' 2>&1 >/dev/null" /dev/null
	[ ! -s "$OUT" ] || fail "a line on the terminal with BTRSIM_PROGRESS=0: $(head -c 200 "$OUT")"
	done_check
else
	echo "SKIP progress-terminal: no script(1) (util-linux)"
fi

# ---- A fake afl-fuzz: the directories and statistics an instance writes ----
mkdir -p "$T/bin" "$T/ab/fuzz"
cat >"$T/bin/afl-fuzz" <<'EOF'
#!/bin/sh
# afl-fuzz -i SEEDS -o OUT [-M|-S NAME] -V SECS ... -- PROGRAM
name=default
while [ "$#" -gt 0 ]; do
	case $1 in
	-o) out=$2; shift ;;
	-M | -S) name=$2; shift ;;
	-V) secs=$2; shift ;;
	--) break ;;
	esac
	shift
done
d="$out/$name"
mkdir -p "$d/queue" "$d/crashes" "$d/hangs"
for i in 0 1 2; do echo "mkdir /q$i" >"$d/queue/id:00000$i,time:0,execs:0,orig:s$i"; done
stats() {
	printf 'start_time        : 1700000000\nlast_update       : 1700000003\nrun_time          : 3\nexecs_done        : %s\nexecs_per_sec     : 500.00\ncorpus_count      : 3\nsaved_crashes     : %s\nsaved_hangs       : 0\nstability         : 100.00%%\n' "$1" "$2" >"$d/fuzzer_stats"
}
stats 100 0
printf '# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found\n' >"$d/plot_data"
sleep 1
echo 'mkdir /c' >"$d/crashes/id:000000,sig:06,src:000000,time:900,execs:450,op:havoc,rep:2"
printf '1, 0, 0, 3, 1, 1, 1.00%%, 1, 0, 1, 500.00, 1234, 10\n' >>"$d/plot_data"
[ "$secs" -gt 1 ] && sleep $((secs - 1))
stats 1500 1
exit 0
EOF
chmod +x "$T/bin/afl-fuzz"
for h in image workload parse; do
	printf '#!/bin/sh\nexit 0\n' >"$T/ab/fuzz/fuzz-$h"
	chmod +x "$T/ab/fuzz/fuzz-$h"
done

if [ ! -x "$B/fuzz/fuzz-parse" ]; then
	echo "SKIP progress-fuzz-run: $B/fuzz/fuzz-parse is missing"
else
	# mk/fuzz-run.sh imports the statistics and triages with $BTRSIM's build.
	run progress-fuzz-run 0 env PATH="$T/bin:$PATH" FUZZ_OUT="$T/out" BTRSIM_PROGRESS=1 \
		sh "$ROOT/mk/fuzz-run.sh" parse 3 1 "$T/f.db" "$T/ab" "$T/ab" "$B"
	line_has '^fuzz-run parse: [0-3]/3 s, corpus [0-9]+, [01] crashes, 0 hangs, ETA [0-3] s$'
	line_has '^fuzz-run parse: [1-3]/3 s, 1234 execs \(500/s\), corpus 3, 1 crashes, 0 hangs, ETA [0-2] s$'
	out_has '^fuzz-triage: parse: 1 crashes and hangs, 1 not reproduced'
	cleared
	done_check
	rm -rf "$T/out" "$T/f.db"
	run progress-fuzz-run-quiet 0 env PATH="$T/bin:$PATH" FUZZ_OUT="$T/out" \
		sh "$ROOT/mk/fuzz-run.sh" parse 1 1 "$T/f.db" "$T/ab" "$T/ab" "$B"
	out_has '^fuzz-run: parse: done in [0-9]+ s'
	no_progress
	done_check
fi

run progress-bench-fuzz 0 env PATH="$T/bin:$PATH" BENCH_FUZZ_SECONDS=1 BTRSIM_PROGRESS=1 \
	sh "$ROOT/bench/bench_fuzz.sh" "$T/ab"
line_has '^bench_fuzz: image \(1/3\), [01]/3 s, ETA [23] s$'
line_has '^bench_fuzz: parse \(3/3\), [23]/3 s, ETA [01] s$'
out_has '^bench_fuzz: workload: 500.00 execs/s on one core \(1500 execs in 1 s, stability 100.00%\) \(goal >= 500\)$'
cleared
done_check
