#!/bin/sh
# btrsim merge (issue 26): trace stores brought together.
#   - seq-1 run as 4 shards, one store each, merged: the same runs, crash
#     states, violations and workloads as one process's run of seq-1;
#   - merging a store again, a copy of it, or through another merged store
#     adds nothing (origins); runs, replay, report, violations work on the
#     result; violations keep their reproducers; fuzzing findings (one per
#     harness and stack) and statistics merged once;
#   - bad input: another schema version, a missing or foreign file, the
#     output as an input, usage.
. "$(dirname "$0")/lib.sh"

EX="--max-subset 4 --samples 4"
i=0
while [ $i -lt 4 ]; do
	"$BTRSIM" campaign --seq 1 --shard $i/4 $EX --db "$T/s$i.db" >/dev/null 2>&1 || { NAME=shards; fail "shard $i"; }
	i=$((i + 1))
done
"$BTRSIM" campaign --seq 1 $EX --db "$T/one.db" >/dev/null 2>&1 || { NAME=one; fail "the whole campaign"; }
counts() { sq "$1" "SELECT count(*), sum(states), sum(violations), (SELECT count(*) FROM crash_states),
	(SELECT count(*) FROM workloads), (SELECT count(*) FROM io), (SELECT count(*) FROM results) FROM runs"; }

run merge-shards 0 "$BTRSIM" merge "$T/m.db" "$T/s0.db" "$T/s1.db" "$T/s2.db" "$T/s3.db"
out_has '^.*s3.db: [0-9]+ runs added \(0 there already\), [0-9]+ crash states'
[ "$(counts "$T/m.db")" = "$(counts "$T/one.db")" ] ||
	fail "merged $(counts "$T/m.db"), one process $(counts "$T/one.db")"
[ "$(sq "$T/m.db" "SELECT count(DISTINCT source) FROM runs")" = 4 ] || fail "the runs' sources"
[ "$(sq "$T/m.db" "SELECT count(*) FROM campaigns WHERE args LIKE '%--shard%'")" = 4 ] || fail "the shards' campaigns"
done_check
run merge-again 0 "$BTRSIM" merge "$T/m.db" "$T/s2.db"
out_has 's2.db: 0 runs added \([0-9]+ there already\), 0 crash states, 0 violations, 0 new workloads, 0 campaigns'
done_check
cp "$T/s1.db" "$T/s1copy.db"
run merge-copy 0 "$BTRSIM" merge "$T/m.db" "$T/s1copy.db"
out_has ': 0 runs added'
done_check
run merge-through 0 "$BTRSIM" merge "$T/m2.db" "$T/m.db" "$T/s0.db"
out_has 'm.db: 222 runs added'
out_has 's0.db: 0 runs added \([0-9]+ there already\)'
[ "$(counts "$T/m2.db")" = "$(counts "$T/one.db")" ] || fail "merged through m.db: $(counts "$T/m2.db")"
done_check
run merge-into-source 0 "$BTRSIM" merge "$T/s3.db" "$T/m.db"
out_has 'm.db: [0-9]+ runs added \([0-9]+ there already\)'
[ "$(counts "$T/s3.db")" = "$(counts "$T/one.db")" ] || fail "s3's own runs came back twice: $(counts "$T/s3.db")"
done_check

run merged-runs 0 "$BTRSIM" runs --db "$T/m.db"
[ "$(grep -c 'campaign' "$OUT")" -ge 222 ] || fail "runs lists $(grep -c campaign "$OUT")"
done_check
run merged-replay 0 "$BTRSIM" replay --db "$T/m.db" 150
out_has '^run 150 replayed: .* are the same$'
done_check
run merged-report 0 "$BTRSIM" report --db "$T/m.db" -o "$T/rep"
[ -s "$T/rep/index.html" ] || fail "no report"
done_check

# fuzzing findings and statistics
printf 'x' >"$T/in"
for s in 0 1; do
	"$BTRSIM" findings --db "$T/f$s.db" --record --harness parse --kind crash --stack-hash 00112233aabbccdd \
		--input "$T/in" >/dev/null 2>&1 || { NAME=findings; fail "record"; }
done
"$BTRSIM" findings --db "$T/f1.db" --record --harness parse --kind hang --stack-hash 99 --input "$T/in" >/dev/null 2>&1
mkdir -p "$T/afl/main"
printf 'start_time        : 1700000000\nlast_update       : 1700000020\nrun_time          : 20\nexecs_done        : 2000\nexecs_per_sec     : 100.00\ncorpus_count      : 7\nsaved_crashes     : 1\nsaved_hangs       : 0\n' >"$T/afl/main/fuzzer_stats"
printf '# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found\n10, 0, 0, 6, 1, 1, 1.00%%, 1, 0, 1, 110.00, 1000, 10\n' >"$T/afl/main/plot_data"
"$BTRSIM" findings --db "$T/f0.db" --import-stats parse "$T/afl" >/dev/null 2>&1 || { NAME=findings; fail "import-stats"; }
run merge-findings 0 "$BTRSIM" merge "$T/f.db" "$T/f0.db" "$T/f1.db" "$T/f0.db"
out_has 'f0.db: 0 runs added .* 1 findings, 2 fuzzing statistics$'
out_has 'f1.db: .* 1 findings, 0 fuzzing statistics$'
out_has 'f0.db: .* 0 findings, 0 fuzzing statistics$'
[ "$(sq "$T/f.db" 'SELECT count(*) FROM findings')" = 2 ] || fail "findings"
[ "$(sq "$T/f.db" 'SELECT count(*) FROM fuzz_stats')" = 2 ] || fail "statistics"
done_check

# violations and their reproducers (an application's checker that always fails)
if [ "$(id -u)" -eq 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	printf 'create /a\nwrite /a 0 8K 1\nfsync /a\n' >"$T/v.wl"
	"$BTRSIM" explore --db "$T/v.db" --check 'test ! -e a' $EX "$T/v.wl" >/dev/null 2>&1
	run merge-violations 0 "$BTRSIM" merge "$T/m.db" "$T/v.db"
	out_has 'v.db: 1 runs added \(0 there already\), [0-9]+ crash states, 1 violations'
	done_check
	run merged-reproducer 0 "$BTRSIM" violations --db "$T/m.db" --reproducer 1
	out_has '^# btrsim reproducer: '
	out_has '^create /a'
	done_check
else
	echo "SKIP merge-violations: needs root and /dev/fuse (explore --check makes the violation)"
fi

# bad input
sq "$T/old.db" 'PRAGMA user_version = 5; CREATE TABLE runs (id INTEGER PRIMARY KEY);' >/dev/null
run merge-old-version 1 "$BTRSIM" merge "$T/m.db" "$T/old.db"
err_has 'old.db: trace database version 5; btrsim merge takes version [0-9]+ only'
err_lines 1
done_check
run merge-missing 1 "$BTRSIM" merge "$T/m.db" "$T/none.db"
err_has 'none.db: no such trace database'
[ -e "$T/none.db" ] && fail "the missing input was created"
done_check
printf 'not a database, only text\n' >"$T/text.db"
run merge-foreign 1 "$BTRSIM" merge "$T/m.db" "$T/text.db"
err_has 'text.db: not an SQLite trace database'
done_check
run merge-self 1 "$BTRSIM" merge "$T/m.db" "$T/m.db"
err_has 'm.db: is the store merged into'
done_check
run merge-usage 2 "$BTRSIM" merge "$T/m.db"
err_has 'needs the output store and at least one input'
done_check
