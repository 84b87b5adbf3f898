#!/bin/sh
# bench_explore.sh - crash states explored per second on one core (release
# build): btrsim explore on bench/workloads/explore-small.wl, best of 3.
# Goal: at least 1,000 states per second per core.
# Usage: bench/bench_explore.sh BTRSIM
set -u
B=${1:?usage: bench_explore.sh BTRSIM}
W=$(dirname "$0")/workloads/explore-small.wl
best=0
for _ in 1 2 3; do
	line=$(taskset -c 0 "$B" explore "$W" 2>/dev/null | tail -n 1) || true
	rate=$(echo "$line" | sed -n 's/.*crash states (\([0-9]*\)\/s).*/\1/p')
	[ -n "$rate" ] && [ "$rate" -gt "$best" ] && best=$rate
	summary=$line
done
echo "explore: $summary"
echo "explore: best $best crash states/s on one core (goal >= 1000)"
