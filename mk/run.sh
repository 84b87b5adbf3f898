#!/bin/sh
# The default campaign of `make run`: every seq-1 workload (ACE-style) and 20
# seeded random workloads of 200 operations, each crashed at every point, then
# the random workloads again with a bit-flip plan (faults/plans/bitflip.plan):
# all recorded into traces/btrsim.db, with a Markdown report per campaign under
# reports/; then the RAID fault campaign (every profile on 2, 4 and 8 disks,
# reports/raid-campaign.md, and its rows in the same database for the HTML
# report).  Exit 1 when a campaign found a violation.
# Usage: mk/run.sh BTRSIM [SEED]
set -u
B=${1:?usage: mk/run.sh BTRSIM [SEED]}
SEED=${2:-1}
DB=traces/btrsim.db
mkdir -p reports
status=0

echo "== campaign: seq-1 and 20 random workloads (seed $SEED) into $DB"
"$B" campaign --seq 1 --random 20 --length 200 --seed "$SEED" --db "$DB" \
	--report reports/campaign.md || status=1

echo "== campaign: 20 random workloads with the bit-flip plan faults/plans/bitflip.plan"
"$B" campaign --random 20 --length 200 --seed "$SEED" --faults faults/plans/bitflip.plan \
	--db "$DB" --report reports/campaign-bitflip.md || status=1

echo "== RAID fault campaign: every profile on 2, 4 and 8 disks (seed $SEED)"
"$B" raid-campaign --seed "$SEED" --quiet --report reports/raid-campaign.md --db "$DB" || status=1

echo "== HTML report of $DB: reports/latest/index.html"
"$B" report --db "$DB" -o reports/latest || status=1

echo "== reports: reports/campaign.md, reports/campaign-bitflip.md, reports/raid-campaign.md"
echo "   list the runs:  ./btrsim runs --db $DB"
echo "   replay one:     ./btrsim replay --db $DB RUN [--crash-state K --out DIR]"
exit $status
