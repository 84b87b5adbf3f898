#!/bin/sh
# bench_explore.sh - crash states explored per second on one core (release
# build), and the cost of recording into the trace store:
#   explore  btrsim explore on bench/workloads/explore-small.wl, best of 3;
#   seq-1    the whole seq-1 campaign (198 workloads);
#   seq-2    the first 400 workloads of seq-2 (a slice: the whole takes ~20 min),
#            with the memo of judged states (the default) and with --no-memo,
#            side by side: how much judging a state's disks once saves;
#   record   seq-1 with --db (a fresh database) against seq-1 without, side by
#            side, best of 3 each: the overhead of the IO log, payloads, results
#            and crash states;
#   fsync    bench/workloads/explore-fsync.wl (fsync-heavy) with fsync writing
#            the log tree (the default) against --notreelog (each fsync a
#            commit), best of 3 each: states per second, and states per run.
# Goals: at least 1,000 states per second per core; recording overhead under 30%.
# On a terminal, a progress line of its 11 steps (mk/progress.sh).
# Usage: bench/bench_explore.sh BTRSIM
set -u
B=${1:?usage: bench_explore.sh BTRSIM}
W=$(dirname "$0")/workloads/explore-small.wl
T=$(mktemp -d)
. "$(dirname "$0")/../mk/progress.sh"
trap 'progress_clear; rm -rf "$T"' EXIT
progress_init bench_explore
STEPS=18
step=0

rate() { sed -n 's/.*crash states (\([0-9]*\)\/s).*/\1/p' | tail -n 1; }
secs() { sed -n 's/.* in \([0-9.]*\) s$/\1/p' | tail -n 1; }

best=0
for r in 1 2 3; do
	progress_steps $step $STEPS "explore, round $r of 3"
	line=$(taskset -c 0 "$B" explore "$W" 2>/dev/null | grep ' crash states (') || true
	step=$((step + 1))
	r=$(echo "$line" | rate)
	[ -n "$r" ] && [ "$r" -gt "$best" ] && best=$r
	summary=$line
done
progress_echo "explore: $summary"
progress_echo "explore: best $best crash states/s on one core (goal >= 1000)"

progress_steps $step $STEPS "seq-1 campaign"
line=$(taskset -c 0 "$B" campaign --seq 1 -q 2>/dev/null | grep ' workloads, ')
step=$((step + 1))
progress_echo "seq-1: $line"
progress_echo "seq-1: $(echo "$line" | rate) crash states/s on one core (goal >= 1000)"
progress_steps $step $STEPS "seq-2 campaign, first 400 workloads"
line=$(taskset -c 0 "$B" campaign --seq 2 --limit 400 -q 2>/dev/null | grep ' workloads, ')
step=$((step + 1))
progress_echo "seq-2 (first 400 workloads): $line"
memo=$(echo "$line" | rate)
progress_echo "seq-2: $memo crash states/s on one core (goal >= 1000)"
progress_steps $step $STEPS "seq-2 campaign, first 400 workloads, --no-memo"
line=$(taskset -c 0 "$B" campaign --seq 2 --limit 400 -q --no-memo 2>/dev/null | grep ' workloads, ')
step=$((step + 1))
nomemo=$(echo "$line" | rate)
progress_echo "seq-2 --no-memo: $line"
if [ -n "$memo" ] && [ -n "$nomemo" ] && [ "$nomemo" -gt 0 ]; then
	progress_echo "seq-2: memo $memo, --no-memo $nomemo states/s: $(echo "scale=2; $memo / $nomemo" | bc)x"
fi

off=999999
on=999999
for i in 1 2 3; do
	progress_steps $step $STEPS "seq-1 without the trace store, round $i of 3"
	s=$(taskset -c 0 "$B" campaign --seq 1 -q 2>/dev/null | secs)
	step=$((step + 1))
	[ -n "$s" ] && off=$(echo "if ($s < $off) $s else $off" | bc)
	rm -f "$T/r.db" "$T/r.db-wal" "$T/r.db-shm"
	progress_steps $step $STEPS "seq-1 recording, round $i of 3"
	s=$(taskset -c 0 "$B" campaign --seq 1 -q --db "$T/r.db" 2>/dev/null | secs)
	step=$((step + 1))
	[ -n "$s" ] && on=$(echo "if ($s < $on) $s else $on" | bc)
done
size=$(du -k "$T/r.db" | cut -f1)
progress_echo "record: seq-1 ${off}s without the trace store, ${on}s recording (${size} KiB database)"
progress_echo "record: overhead $(echo "scale=1; ($on - $off) * 100 / $off" | bc)% (goal < 30%)"

WF=$(dirname "$0")/workloads/explore-fsync.wl
for mode in log notreelog; do
	best=0
	for r in 1 2 3; do
		progress_steps $step $STEPS "fsync-heavy explore ($mode), round $r of 3"
		opt=""
		[ "$mode" = notreelog ] && opt=--notreelog
		line=$(taskset -c 0 "$B" explore $opt "$WF" 2>/dev/null | grep ' crash states (') || true
		step=$((step + 1))
		r=$(echo "$line" | rate)
		[ -n "$r" ] && [ "$r" -gt "$best" ] && best=$r
		summary=$line
	done
	progress_echo "fsync ($mode): $summary"
	progress_echo "fsync ($mode): best $best crash states/s on one core"
done
