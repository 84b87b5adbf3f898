#!/bin/sh
# A one-node Slurm cluster (issue 26, `make cluster-test`): mk/cluster.sh
# starts munge, slurmctld and slurmd from Debian's packages with a slurm.conf
# generated under build/ (build/cluster.XXXXXX, removed at the end: the
# daemons' keys, sockets, state and logs too); traces/slurm/submit.sh runs
#   - a 4-task array of a seq-2 slice (campaign --shard auto --limit 5, one
#     store per task: the first 20 workloads) and the merge job after it: the merged store holds exactly the
#     runs, crash states, violations and workloads of one process's run of
#     the same slice, and its report;
#   - a 2-task AFL++ array (-M on task 0, -S on task 1, one sync directory),
#     each task's findings triaged into its store, merged with the whole
#     campaign's statistics;
# then every daemon it started is stopped (also when it fails).
. "$(dirname "$0")/../cli/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP cluster: needs root (slurmd)"
	exit 0
fi
PATH="$PATH:/usr/sbin"
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
	echo "SKIP cluster: slurm-wlm and munge are not installed (make deps)"
	exit 0
fi
mkdir -p "$ROOT/build"
C=$(mktemp -d "$ROOT/build/cluster.XXXXXX") || { echo "FAIL cluster-start: no directory under build/"; exit 1; }
trap 'sh "$ROOT/mk/cluster.sh" stop "$C" >/dev/null 2>&1; rm -rf "$C" "$T"' EXIT
NAME=cluster-start
BAD=0
conf=$(sh "$ROOT/mk/cluster.sh" start "$C" 2>"$T/start.err") || fail "mk/cluster.sh start: $(cat "$T/start.err")"
export SLURM_CONF="${conf#SLURM_CONF=}"
[ "$(sinfo -h -o %t 2>/dev/null)" = idle ] || fail "the node is not idle: $(sinfo 2>&1 | tr '\n' ' ')"
done_check
[ "$BAD" -eq 0 ] || exit 0

# ---- a seq-2 slice as a 4-task array, merged ----
SLICE="--seq 2 --max-subset 2 --samples 2"
run cluster-campaign 0 sh "$ROOT/traces/slurm/submit.sh" --wait campaign 4 "$T/camp" "$BTRSIM" $SLICE --limit 5
out_has '^array job [0-9]+$'
out_has '^merge job [0-9]+$'
for i in 0 1 2 3; do
	[ -s "$T/camp/shard-$i.db" ] || fail "no store of task $i: $(tail -2 "$T/camp/shard-$i.out" 2>/dev/null)"
	grep -q "^shard $i/4 (this Slurm array task)$" "$T/camp/shard-$i.out" 2>/dev/null || fail "task $i's shard"
done
[ -s "$T/camp/report/index.html" ] || fail "no report"
done_check
"$BTRSIM" campaign $SLICE --limit 20 --quiet --db "$T/one.db" >/dev/null 2>&1
counts() { sq "$1" "SELECT count(*), sum(states), sum(violations), (SELECT count(*) FROM crash_states),
	(SELECT count(*) FROM workloads), (SELECT group_concat(hash) FROM (SELECT hash FROM workloads ORDER BY hash))
	FROM runs"; }
run cluster-merged-equals-one 0 true
[ "$(counts "$T/camp/merged.db")" = "$(counts "$T/one.db")" ] ||
	fail "merged: $(counts "$T/camp/merged.db" | cut -c1-60); one process: $(counts "$T/one.db" | cut -c1-60)"
[ "$(sq "$T/camp/merged.db" 'SELECT count(*) FROM runs')" = 20 ] || fail "not 20 runs"
done_check

# ---- a 2-task AFL++ array, merged ----
if ! command -v afl-fuzz >/dev/null; then
	echo "SKIP cluster-fuzz: AFL++ is not installed (make deps)"
elif [ "$BTRSIM" != "$ROOT/build/debug/btrsim" ] && [ "$BTRSIM" != "build/debug/btrsim" ]; then
	echo "SKIP cluster-fuzz: the fuzzing tasks triage with build/debug (make test runs it)"
elif ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" MODE=afl B=build/afl fuzz-bins >"$T/make.out" 2>&1; then
	NAME=cluster-fuzz
	fail "make fuzz-bins: $(tail -3 "$T/make.out")"
else
	run cluster-fuzz 0 sh "$ROOT/traces/slurm/submit.sh" --wait fuzz 2 "$T/fz" parse 6
	if grep -q 'afl-fuzz could not run here' "$T"/fz/shard-*.out 2>/dev/null; then
		echo "SKIP cluster-fuzz: afl-fuzz cannot run here: $(grep -h -A3 'could not run' "$T"/fz/shard-0.out | tr '\n' ' ' | head -c 200)"
	else
		ls -d "$T/fz/sync/t0main" "$T/fz/sync/t1s0" >/dev/null 2>&1 ||
			fail "instances: $(ls "$T/fz/sync" | tr '\n' ' ')"
		grep -q 'statistics samples of 2 instances recorded' "$T/fz/merge.out" ||
			fail "statistics: $(cat "$T/fz/merge.out" | tr '\n' ' ')"
		want=$(for f in "$T"/fz/shard-*.db; do [ -e "$f" ] && sq "$f" 'SELECT harness || stack_hash FROM findings'; done | sort -u | wc -l)
		[ "$(sq "$T/fz/merged.db" 'SELECT count(*) FROM findings')" = "$want" ] || fail "findings merged"
		[ -s "$T/fz/report/index.html" ] || fail "no report"
		done_check
	fi
fi

NAME=cluster-stop
BAD=0
sh "$ROOT/mk/cluster.sh" stop "$C"
for d in munged slurmctld slurmd; do
	[ -f "$C/$d.pid" ] && fail "$d's pid file is left"
done
pgrep -f "$C" >/dev/null && fail "a process of the cluster is left: $(pgrep -af "$C" | head -2)"
done_check
