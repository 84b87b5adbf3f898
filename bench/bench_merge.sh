#!/bin/sh
# bench_merge.sh - campaigns past one machine (issue 26):
#   merge    btrsim merge's throughput: stores of seq-1 (222 runs each, told
#            apart by their store ids) merged one after another into one store
#            until it holds 100,000 runs; runs per second of the last tenth
#            (into a store of some 90,000 runs) and of the whole;
#   balance  seq-2 split into 64 shards (campaign --shard I/64): every 16th
#            workload of each shard explored (about 3,900 in all), each shard's
#            crash states summed: the slowest shard against the mean (states
#            are what a workload costs; 1.00 is a perfect split);
#   seq-3    one shard of seq-3 in 40,000 (439 workloads spread evenly over
#            the enumeration, as a shard of a cluster run takes them) explored
#            on one core: seconds per workload, and what the whole (its count
#            from `campaign --count`) takes on one core and on N nodes of C cores.
# Usage: bench/bench_merge.sh BTRSIM [RUNS]
set -u
B=${1:?usage: bench_merge.sh BTRSIM [RUNS]}
RUNS=${2:-100000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
now() { date +%s.%N; }
command -v sqlite3 >/dev/null || { echo "bench-merge: SKIP (needs sqlite3)"; exit 0; }

# ---- merge ----
"$B" campaign --seq 1 --max-subset 2 --samples 2 --quiet --db "$T/base.db" >/dev/null 2>&1
per=$(sqlite3 "$T/base.db" 'SELECT count(*) FROM runs')
n=$(( (RUNS + per - 1) / per ))
i=0
while [ $i -lt "$n" ]; do # copies that are other stores: their own ids
	cp "$T/base.db" "$T/c$i.db"
	sqlite3 "$T/c$i.db" "UPDATE store_info SET value = lower(hex(randomblob(16))) WHERE key = 'id'"
	i=$((i + 1))
done
t0=$(now)
last=$((n - n / 10))
i=0
while [ $i -lt "$n" ]; do
	[ $i -eq "$last" ] && t1=$(now)
	"$B" merge -q "$T/m.db" "$T/c$i.db" || { echo "bench-merge: merge failed"; exit 1; }
	rm -f "$T/c$i.db"
	i=$((i + 1))
done
t2=$(now)
total=$(sqlite3 "$T/m.db" 'SELECT count(*) FROM runs')
printf 'bench-merge: %s runs merged from %s stores: %.0f runs/s overall, %.0f runs/s for the last %s stores (into %s runs)\n' \
	"$total" "$n" "$(echo "$total / ($t2 - $t0)" | bc -l)" \
	"$(echo "($n - $last) * $per / ($t2 - $t1)" | bc -l)" "$((n - last))" "$((last * per))"

# ---- the balance of seq-2 over 64 shards ----
# Shard s/1024 is every 16th workload of shard s/64 (workloads s, s + 1024, ...).
states() { sed -n 's/.* workloads, \([0-9]*\) crash states.*/\1/p' | tail -n 1; }
s=0
sum=0 max=0 t0=$(now)
while [ $s -lt 64 ]; do
	st=$("$B" campaign --seq 2 --shard "$s/1024" --quiet 2>/dev/null | states)
	[ -n "$st" ] || { echo "bench-merge: seq-2 shard $s/1024 failed"; exit 1; }
	sum=$((sum + st))
	[ "$st" -gt "$max" ] && max=$st
	s=$((s + 1))
done
t1=$(now)
printf 'bench-merge: seq-2 over 64 shards (each sampled 1 in 16): slowest shard %s crash states, mean %s: balance %.2f (%s states in %.0f s, %.0f/s)\n' \
	"$max" "$((sum / 64))" "$(echo "$max * 64 / $sum" | bc -l)" "$sum" "$(echo "$t1 - $t0" | bc -l)" \
	"$(echo "$sum / ($t1 - $t0)" | bc -l)"

# ---- seq-3 ----
W3=$("$B" campaign --seq 3 --count | sed -n 's/^\([0-9]*\) workloads$/\1/p')
line=$(taskset -c 0 "$B" campaign --seq 3 --shard 7/40000 --quiet 2>/dev/null | grep ' workloads, ')
secs=$(echo "$line" | sed -n 's/.* in \([0-9.]*\) s$/\1/p')
n=$(echo "$line" | sed -n 's/^\([0-9]*\) workloads, .*/\1/p')
[ -n "$secs" ] && [ -n "$n" ] && [ -n "$W3" ] || { echo "bench-merge: seq-3 failed: $line"; exit 1; }
per=$(echo "$secs / $n" | bc -l)
printf 'bench-merge: seq-3 (%s workloads), shard 7/40000: %s; %.4f s per workload: about %.0f core-hours in all, %.1f hours on 16 nodes of 32 cores, %.2f on 64 of 64\n' \
	"$W3" "$line" "$per" "$(echo "$per * $W3 / 3600" | bc -l)" "$(echo "$per * $W3 / 3600 / 512" | bc -l)" \
	"$(echo "$per * $W3 / 3600 / 4096" | bc -l)"
