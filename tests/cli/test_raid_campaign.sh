#!/bin/sh
# btrsim raid-campaign: usage errors (exit 2); a small campaign (three
# profiles on 2 and 4 disks) passes, prints the seed and a line per run, and
# writes a report with a table per profile that shows the fault of every
# scenario (a disk lost in a balance too) and no wrong data; the same seed gives the same report byte for
# byte, another seed another one.
. "$(dirname "$0")/lib.sh"

run help 0 "$BTRSIM" raid-campaign --help
out_has '^usage: btrsim raid-campaign '; done_check
run bad-disks 2 "$BTRSIM" raid-campaign --disks 2,x
err_has "^btrsim raid-campaign: --disks takes numbers"; done_check
run bad-profile 2 "$BTRSIM" raid-campaign --profiles raid7
err_has "unknown profile in 'raid7'"; done_check
run bad-files 2 "$BTRSIM" raid-campaign --files 1
err_has '^btrsim raid-campaign: --files takes 2 to 1000'; done_check
run extra-arg 2 "$BTRSIM" raid-campaign extra
err_has "unexpected argument 'extra'"; done_check
run bad-report 1 "$BTRSIM" raid-campaign --disks 2 --profiles raid1 --files 2 --report "$T/no/such/dir.md"
err_has 'no/such/dir.md'; done_check

run small 0 "$BTRSIM" raid-campaign --seed 7 --disks 2,4 --profiles single,raid1,raid5 --files 6 \
	--report "$T/a.md"
out_has '^seed 7$'
out_has '^raid5 +4 disks +disk replaced +injected 1 '
out_has '^raid5 +4 disks +disk lost in a balance +injected 1 detected [1-9][0-9]* repaired [0-9]+ lost 0 wrong 0$'
out_has '^54 runs, 0 failed, [0-9]+ not injected; report in '
for h in '## single' '## raid1' '## raid5'; do grep -q "^$h\$" "$T/a.md" || fail "no table '$h'"; done
grep -q '^| 4 | disks lost | yes | 1 | 1 | 0 | 0 of ' "$T/a.md" || fail "raid5 on 4 disks: $(grep 'disks lost' "$T/a.md" | tr '\n' '|')"
grep -q '^| 2 | disks lost | no | 1 | 1 | 0 | 6 of 6 (no mount) | 0 | lost, mount refused |$' "$T/a.md" ||
	fail "single: $(grep 'disks lost' "$T/a.md" | head -1)"
awk -F'|' 'NF > 9 && $9 ~ /[0-9]/ && $9 + 0 != 0' "$T/a.md" | grep -q . && fail "wrong data in the report"
# The report never contradicts itself: a fault never injected is no pass (its
# verdict says why), a loss "detected" was detected (issue 18).
bad=$(awk -F'|' 'NF > 9 && $5 ~ /^ [0-9]+ $/ && (($5 + 0 == 0 && $10 !~ /not injected: /) ||
	($6 + 0 == 0 && $10 ~ /detected/) || ($5 + 0 > 0 && $10 ~ /not injected/))' "$T/a.md")
[ -z "$bad" ] || fail "contradictory rows: $(echo "$bad" | head -3 | tr '\n' ' ')"
grep -q 'not injected: disk 0 holds none of' "$T/a.md" || fail "no run says why its fault was not injected"
done_check
run same-seed 0 "$BTRSIM" raid-campaign --seed 7 --disks 2,4 --profiles single,raid1,raid5 --files 6 \
	--report "$T/b.md" --quiet
cmp -s "$T/a.md" "$T/b.md" || fail "the same seed wrote another report"
out_has '^54 runs, 0 failed'; done_check
run other-seed 0 "$BTRSIM" raid-campaign --seed 8 --disks 2,4 --profiles single,raid1,raid5 --files 6 \
	--report "$T/c.md" --quiet
cmp -s "$T/a.md" "$T/c.md" && fail "another seed wrote the same report"
done_check

# --db: the campaign and its rows in the trace store, shown by the HTML report
# (issue 18: the RAID campaign was missing from it).
mkdir "$T/dbdir"
run raid-db-directory 1 "$BTRSIM" raid-campaign --seed 7 --disks 2 --profiles raid1 --files 2 \
	--quiet --report "$T/d.md" --db "$T/dbdir"
err_has 'is a directory, not a trace database'
done_check
run raid-db 0 "$BTRSIM" raid-campaign --seed 7 --disks 2,4 --profiles single,raid1,raid5 --files 6 \
	--quiet --report "$T/e.md" --db "$T/r.db"
out_has "^recorded as RAID campaign 1 in $T/r.db\$"
done_check
run raid-db-rows 0 sq "$T/r.db" "SELECT count(*), sum(failed), sum(verdict LIKE 'not injected:%') FROM raid_runs WHERE campaign_id = 1; SELECT runs, failed, seed FROM raid_campaigns"
out_has '^54\|0\|[0-9]+$'
out_has '^54\|0\|7$'
done_check
run raid-report 0 "$BTRSIM" report --db "$T/r.db" -o "$T/rep"
grep -q '<h2>6. RAID fault campaign</h2>' "$T/rep/index.html" || fail "no RAID section"
grep -q 'RAID campaign 1 (the newest of 1), seed 7' "$T/rep/index.html" || fail "no campaign line"
for p in single raid1 raid5; do grep -q "<h3>$p</h3>" "$T/rep/index.html" || fail "no $p table"; done
[ "$(grep -c '<td class="n">[0-9]* of [0-9]*' "$T/rep/index.html")" -eq 54 ] || fail "not 54 rows"
# the same rows as the Markdown report, verdict for verdict
md=$(grep -c '| lost, mount refused |' "$T/e.md")
html=$(grep -c '<td>lost, mount refused</td>' "$T/rep/index.html")
[ "$md" -eq "$html" ] && [ "$md" -gt 0 ] || fail "mount refused: $md rows in Markdown, $html in HTML"
done_check
