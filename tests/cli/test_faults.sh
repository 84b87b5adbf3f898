#!/bin/sh
# Fault plans from the command line: explore and campaign arm them while the
# workload runs, record them with the run, and replay them identically; the
# fault sweep runs every point of the catalogue; with a fault on, ref returns
# an error or turns read-only and every crash state stays consistent; a
# bit-flip plan's damage is detected; bad plans are refused.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
db="$T/f.db"
cat >"$T/w.wl" <<'W'
mkdir /d
create /d/a
write /d/a 0 20000 1
fsync /d/a
create /d/b
write /d/b 0 9000 2
sync
rename /d/b /d/c
write /d/a 20000 5000 3
fsync /d/a
unlink /d/c
W

run faults-commit-eio 0 "$BTRSIM" explore --max-subset 5 --samples 4 \
	--faults "$ROOT/faults/plans/commit-eio.plan" --db "$db" "$T/w.wl"
out_has ' 0 violations$'
out_has "^recorded as run 1 in $db"
done_check

if command -v sqlite3 >/dev/null 2>&1; then
	run faults-recorded 0 sq "$db" "SELECT faults FROM runs WHERE id = 1; SELECT count(*) FROM results WHERE run_id = 1 AND result = 'EROFS'"
	out_has '^ref/commit/flush nth=2'
	out_has '^[1-9][0-9]*$'
	done_check
	run faults-hits-recorded 0 sq "$db" "SELECT point, hits >= 2, fired FROM fault_hits WHERE run_id = 1"
	out_has '^ref/commit/flush\|1\|1$'
	done_check
else
	echo "SKIP faults-recorded: no sqlite3"
fi

run faults-replay 0 "$BTRSIM" replay --db "$db" 1
out_has '^run 1 replayed: 11 op results'
done_check

# Every fault point in turn over a few seq-1 workloads: no violation.
run faults-sweep 0 "$BTRSIM" campaign --seq 1 --ops write,rename,create --limit 4 \
	--max-subset 3 --samples 2 --torn 1 --faults sweep
out_has ' 0 violations'
n=$(sed -n 's/^\([0-9]*\) workloads.*/\1/p' "$OUT")
[ "${n:-0}" -ge 40 ] || fail "only ${n:-0} runs: the sweep did not multiply the workloads by the points"
done_check

# Bit flips on write: every flip ref reads is detected, none passes as good data.
run faults-bitflip 0 "$BTRSIM" campaign --random 3 --length 80 --max-subset 4 --samples 4 \
	--faults "$ROOT/faults/plans/bitflip.plan"
out_has ' 0 violations'
done_check

# Bad plans.
printf 'ref/commit/flush nth=0\n' >"$T/bad1.plan"
run faults-bad-nth 1 "$BTRSIM" explore --faults "$T/bad1.plan" "$T/w.wl"
err_has 'bad1.plan:1: '
err_lines 1
done_check
printf '# ok\nno/such/point\n' >"$T/bad2.plan"
run faults-unknown-point 1 "$BTRSIM" campaign --seq 1 --faults "$T/bad2.plan"
err_has 'bad2.plan:2: '
done_check
printf 'sim flip-at-rest,bogus=1\n' >"$T/bad3.plan"
run faults-bad-sim 1 "$BTRSIM" explore --faults "$T/bad3.plan" "$T/w.wl"
err_has 'bad3.plan:1: '
done_check
run faults-missing-plan 1 "$BTRSIM" explore --faults "$T/none.plan" "$T/w.wl"
err_has 'none.plan'
err_lines 1
done_check
