#!/bin/sh
# btrsim campaign: the seq-1 enumeration (ACE-style) and random workloads are
# consistent on ref; every deliberately broken build (make mutants) is caught
# by the seq-1 campaign, and its violation is minimized into a reproducer
# that is stored, printable, and fails again on the mutant alone.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
db="$T/c.db"

# seq-1 in full, with fewer subsets per crash point under the sanitizers.
run campaign-seq1 0 "$BTRSIM" campaign --seq 1 --max-subset 6 --samples 8 --db "$db"
out_has '^seed 1$'
out_has '^222 workloads, [0-9]+ crash states \([0-9]+/s\), 0 violations in '
out_has "^recorded as campaign 1 in $db"
done_check

if command -v sqlite3 >/dev/null 2>&1; then
	run campaign-recorded 0 sq "$db" "SELECT count(*), sum(states) > 1000, sum(violations) FROM runs WHERE campaign_id = 1"
	out_has '^222\|1\|0$'
	done_check
	run campaign-row 0 sq "$db" "SELECT workloads, violations, status FROM campaigns WHERE id = 1"
	out_has '^222\|0\|0$'
	done_check

	# The same seed and build give the same crash states, picks and verdicts.
	NAME=campaign-deterministic
	for i in 1 2; do
		"$BTRSIM" campaign --seq 1 --ops write,unlink --random 1 --length 30 --max-subset 4 \
			--samples 4 --seed 9 -q --db "$T/d$i.db" >/dev/null 2>&1 || fail "run $i"
		sq "$T/d$i.db" "SELECT r.name, s.k, s.point, s.picks, s.verdict FROM crash_states s
			JOIN runs r ON r.id = s.run_id ORDER BY r.id, s.k" >"$T/d$i.txt"
	done
	[ -s "$T/d1.txt" ] || fail "no crash states recorded"
	cmp -s "$T/d1.txt" "$T/d2.txt" || fail "two runs with seed 9 recorded different crash states"
	done_check
fi

run campaign-runs 0 "$BTRSIM" runs --db "$db" --campaign 1
[ "$(wc -l <"$OUT")" -eq 223 ] || fail "not a header and 222 runs"
out_has '^[0-9]+ +campaign +[0-9T:Z-]+ +seq-1/27 +[0-9a-f]{12} '
done_check

# Shards partition the enumeration.
for i in 0 1 2; do
	"$BTRSIM" campaign --seq 1 --ops create,link --shard $i/3 --max-subset 2 --samples 2 --torn 0 -q \
		>"$T/shard$i" 2>&1 || fail "shard $i"
done
NAME=campaign-shards
total=0
for i in 0 1 2; do
	n=$(sed -n 's/^\([0-9]*\) workloads.*/\1/p' "$T/shard$i")
	total=$((total + ${n:-0}))
done
"$BTRSIM" campaign --seq 1 --ops create,link --max-subset 2 --samples 2 --torn 0 -q >"$T/all" 2>&1
all=$(sed -n 's/^\([0-9]*\) workloads.*/\1/p' "$T/all")
[ "$total" -eq "${all:-x}" ] || fail "shards ran $total workloads, the whole $all"
done_check

run campaign-random 0 "$BTRSIM" campaign --random 3 --length 40 --max-subset 4 --samples 4
out_has '^3 workloads, [0-9]+ crash states \([0-9]+/s\), 0 violations'
done_check

# --count: what a campaign or one shard of it would run, nothing explored.
run campaign-count-seq1 0 "$BTRSIM" campaign --seq 1 --count --db "$T/never.db"
out_has '^222 workloads$'
[ "$(wc -l <"$OUT")" -eq 1 ] || fail "more than the count: $(cat "$OUT")"
[ ! -e "$T/never.db" ] || fail "--count touched the store"
done_check
run campaign-count-shards 0 true
sum=0
for s in 0 1 2 3 4 5 6; do
	n=$("$BTRSIM" campaign --seq 2 --shard $s/7 --count | sed -n 's/^\([0-9]*\) workloads$/\1/p')
	sum=$((sum + ${n:-0}))
done
all=$("$BTRSIM" campaign --seq 2 --count | sed -n 's/^\([0-9]*\) workloads$/\1/p')
[ "$sum" -eq "$all" ] && [ "$all" -gt 60000 ] || fail "7 shards count $sum, the whole $all"
done_check
run campaign-count-limit 0 "$BTRSIM" campaign --seq 1 --random 10 --limit 5 --count
out_has '^5 workloads$'
done_check

run campaign-seq2-slice 0 "$BTRSIM" campaign --seq 2 --ops write,rename --limit 20 --max-subset 3 --samples 2
out_has '^20 workloads, [0-9]+ crash states .* 0 violations'
done_check

# Each mutant is caught by the seq-1 campaign (mutant_args.sh says with
# which arguments, and why); the violation is minimized.
. "$(dirname "$0")/mutant_args.sh"
rep_args() {
	case $1 in
	log-*) echo --treelog ;;
	esac
}
for name in skip-flush cow-in-place super-first drop-dirty early-reuse snap-rw qgroup-no-inherit \
	log-super-first log-no-csum log-no-names log-no-holes log-no-dir-ranges log-no-unlink \
	dedupe-no-compare; do
	M="$ROOT/build/mutants/btrsim-$name"
	if [ ! -x "$M" ]; then
		echo "SKIP campaign-catches-$name: no $M (make mutants builds it; make test does)"
		continue
	fi
	mdb="$T/$name.db"
	run "campaign-catches-$name" 1 "$M" campaign $(catch_args $name) --db "$mdb"
	out_has '^VIOLATION seq-1(-subvol)?(-quota)?/[0-9]+ \(run [0-9]+\): crash state [0-9]+: crash at IO [0-9]+'
	out_has '^# btrsim reproducer: [0-9]+ operations?$'
	out_has ' [1-9][0-9]* violations in '
	done_check
	NAME="campaign-reproducer-$name"
	"$M" violations --db "$mdb" --reproducer 1 >"$T/rep.wl" 2>"$T/rep.err" || fail "violations --reproducer: $(cat "$T/rep.err")"
	ops=$(grep -cv '^#' "$T/rep.wl")
	[ "$ops" -ge 1 ] && [ "$ops" -le 17 ] || fail "reproducer has $ops ops"
	"$M" explore --no-minimize $(rep_args $name) "$T/rep.wl" >/dev/null 2>&1
	[ $? -eq 1 ] || fail "the reproducer does not fail on the mutant"
	"$BTRSIM" explore --max-subset 6 --samples 8 $(rep_args $name) "$T/rep.wl" >"$T/good.out" 2>&1 || fail "the reproducer fails on the good build: $(tail -2 "$T/good.out")"
	done_check
done

run campaign-violations-list 0 "$BTRSIM" violations --db "$db"
out_has '^no violations$'
done_check

# The subvolume set: every seq-1 workload over a subvolume and its snapshot.
run campaign-subvol-seq1 0 "$BTRSIM" campaign --seq 1 --subvol --max-subset 4 --samples 4 --torn 1
out_has '^141 workloads, [0-9]+ crash states \([0-9]+/s\), 0 violations in '
done_check
run campaign-subvol-seq2-slice 0 "$BTRSIM" campaign --seq 2 --subvol --ops snapshot,write,subvol-delete \
	--shard 1/7 --max-subset 3 --samples 2 --torn 0
out_has ' workloads, [0-9]+ crash states .*, 0 violations in '
done_check

run campaign-subvol-random 0 "$BTRSIM" campaign --random 2 --length 40 --subvol --max-subset 4 \
	--samples 4 --db "$T/sv.db"
out_has '^2 workloads, [0-9]+ crash states .*, 0 violations in '
command -v sqlite3 >/dev/null && [ "$(sq "$T/sv.db" "SELECT count(*) FROM runs WHERE name LIKE 'random-subvols/%'")" = 2 ] ||
	fail "the runs are not named random-subvols/SEED"
done_check

# Quota groups on (--quota): every workload starts with quota-enable, in the
# setup of the bounded ones (not crashed), first in the random ones; each is
# recorded with it and named -quota.
run campaign-quota-seq1 0 "$BTRSIM" campaign --seq 1 --subvol --quota \
	--ops snapshot,write,subvol-delete,subvol-sync --max-subset 4 --samples 4 --torn 1 --db "$T/q.db"
out_has '^[0-9]+ workloads, [0-9]+ crash states \([0-9]+/s\), 0 violations in '
if command -v sqlite3 >/dev/null; then
	[ "$(sq "$T/q.db" "SELECT count(*) FROM runs WHERE name LIKE 'seq-1-subvol-quota/%' AND skip_ops = 8")" -gt 10 ] ||
		fail "the runs are not named seq-1-subvol-quota/I with the 8 ops of the setup skipped"
	sq "$T/q.db" "SELECT w.text FROM runs r JOIN workloads w ON w.id = r.workload_id" |
		grep -c '^quota-enable$' | grep -qx "$(sq "$T/q.db" "SELECT count(*) FROM runs")" ||
		fail "not every recorded workload has one quota-enable"
fi
done_check
run campaign-quota-random 0 "$BTRSIM" campaign --random 2 --length 30 --subvol --quota \
	--max-subset 4 --samples 4 --db "$T/qr.db"
out_has '^2 workloads, [0-9]+ crash states .*, 0 violations in '
if command -v sqlite3 >/dev/null; then
	[ "$(sq "$T/qr.db" "SELECT count(*) FROM runs WHERE name LIKE 'random-subvols-quota/%' AND ops = 31")" = 2 ] ||
		fail "the runs are not named random-subvols-quota/SEED with 31 ops"
	for id in 1 2; do
		sq "$T/qr.db" "SELECT w.text FROM runs r JOIN workloads w ON w.id = r.workload_id WHERE r.id = $id" |
			head -n 1 | grep -qx 'quota-enable' || fail "run $id does not start with quota-enable"
	done
fi
done_check
run campaign-quota-help 0 "$BTRSIM" campaign --help
out_has '--quota'
done_check

# Bad usage.
run campaign-subvol-alone 2 "$BTRSIM" campaign --subvol --limit 3
err_has 'give --seq N or --random N'
done_check
run campaign-subvol-bad-op 2 "$BTRSIM" campaign --seq 1 --subvol --ops mkdir
err_has "unknown operation 'mkdir' \(known with --subvol: "
done_check
run campaign-nothing 2 "$BTRSIM" campaign
err_has 'give --seq N or --random N'
done_check
run campaign-bad-seq 2 "$BTRSIM" campaign --seq 4
done_check
run campaign-bad-op 2 "$BTRSIM" campaign --seq 1 --ops create,bogus
err_has "unknown operation 'bogus'"
done_check
run campaign-bad-files 2 "$BTRSIM" campaign --seq 1 --files /a/b/c,/d
err_has "not an absolute file path of at most one directory level"
done_check
run campaign-one-file 2 "$BTRSIM" campaign --seq 1 --files /a
err_has "takes 2 to 4 file paths"
done_check
run campaign-dup-file 2 "$BTRSIM" campaign --seq 1 --files /a,/a
done_check
run campaign-bad-shard 2 "$BTRSIM" campaign --seq 1 --shard 3/3
done_check
run campaign-ops-alone 2 "$BTRSIM" campaign --random 1 --ops create
done_check
run campaign-operand 2 "$BTRSIM" campaign --seq 1 extra
done_check
head -c 4096 /dev/urandom >"$T/junk.db"
run campaign-junk-db 1 "$BTRSIM" campaign --seq 1 --db "$T/junk.db"
err_has 'not an SQLite trace database'
done_check

# RAID5 on three disks, each state judged again with each disk lost: no
# violation, the write hole counted; --lose-disk is not recorded.
run campaign-raid5-lose-disk 0 "$BTRSIM" campaign --seq 1 --limit 30 --disks 3 --profile raid5 --lose-disk \
	--max-subset 5 --samples 4
out_has '^30 workloads, [0-9]+ crash states .*, 0 violations in '
out_has '^[1-9][0-9]* states judged again with a disk lost, [0-9]+ of them unreadable \(the write hole\)$'
done_check
run campaign-lose-disk-db 2 "$BTRSIM" campaign --seq 1 --lose-disk --db "$T/x.db"
err_has 'lose-disk is not recorded: not with --db'
done_check
