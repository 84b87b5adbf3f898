#!/bin/sh
# The memo of judged states (explore_opts.memo, on by default): a crash state
# whose disks an earlier state had is judged on what ref found there.  It
# must change no verdict: each campaign here runs with it and with
# --no-memo, and every crash state's verdict and reason, every violation and
# its minimized reproducer must be the same, on the good build and on
# deliberately broken ones (make mutants) whose violations span the verdicts
# (mount, check, read, oracle; the fsync log's promises; subvolumes; quota),
# and with bit flips injected (detected).
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# same NAME RC BTRSIM ARGS...: the campaign with and without the memo,
# compared; RC its exit status (1: violations found).
same() {
	NAME=memo-$1
	want=$2
	bin=$3
	shift 3
	BAD=0
	rm -f "$T/m.db" "$T/n.db"
	"$bin" campaign -q "$@" --db "$T/m.db" >"$T/m.out" 2>"$T/m.err"
	mrc=$?
	"$bin" campaign -q --no-memo "$@" --db "$T/n.db" >"$T/n.out" 2>"$T/n.err"
	nrc=$?
	if grep -qE 'Sanitizer|runtime error:' "$T/m.err" "$T/n.err"; then
		fail "sanitizer report"
	elif [ "$mrc" -ne "$want" ] || [ "$nrc" -ne "$want" ]; then
		fail "exit $mrc with the memo, $nrc without, expected $want: $(head -c 300 "$T/m.err")"
	fi
	grep -q 'states had the disks of an earlier state' "$T/m.out" ||
		fail "the memo answered no state: $(tail -2 "$T/m.out")"
	! grep -q 'states had the disks' "$T/n.out" || fail "--no-memo still used the memo"
	for q in "select run_id, k, point, picks, verdict, coalesce(detail, '') from crash_states order by 1, 2" \
		"select run_id, state_k, point, picks, verdict, description, coalesce(reproducer, '') from violations order by 1, 2" \
		"select id, states, violations, crash_points from runs order by 1"; do
		sq "$T/m.db" "$q" >"$T/m.q" 2>&1
		sq "$T/n.db" "$q" >"$T/n.q" 2>&1
		cmp -s "$T/m.q" "$T/n.q" || fail "differ in '$q': $(diff "$T/m.q" "$T/n.q" | head -3)"
	done
	[ -s "$T/m.q" ] || fail "no runs recorded"
	done_check
}

same seq2-slice 0 "$BTRSIM" --seq 2 --ops write,rename,link --limit 12 --max-subset 4 --samples 4
same subvol-quota 0 "$BTRSIM" --seq 1 --subvol --quota --ops snapshot,write --max-subset 4 --samples 4
# bits flipped in the writes: damage caught by checksums is excused only in
# the states that hold it (verdict detected)
same bitflip 0 "$BTRSIM" --random 4 --length 100 --seed 3 --faults "$ROOT/faults/plans/bitflip.plan" \
	--max-subset 4 --samples 4
NAME=memo-bitflip-detected
[ "$(sq "$T/m.db" "select count(*) from crash_states where verdict = 'detected'")" -gt 0 ] ||
	fail "no state held damage that was caught"
done_check

. "$(dirname "$0")/mutant_args.sh"
for name in skip-flush cow-in-place early-reuse snap-rw qgroup-no-inherit log-no-names log-no-unlink; do
	M="$ROOT/build/mutants/btrsim-$name"
	if [ ! -x "$M" ]; then
		echo "SKIP memo-$name: no $M (make mutants builds it; make test does)"
		continue
	fi
	same "$name" 1 "$M" $(catch_args "$name")
done
