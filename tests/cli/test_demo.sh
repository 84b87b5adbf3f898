#!/bin/sh
# `btrsim demo`: the tour of sim/ runs clean, is reproducible from its seed,
# and writes its report and images.
. "$(dirname "$0")/lib.sh"

run demo-default 0 "$BTRSIM" demo --seed 7
out_has '^seed 7 \(rerun: btrsim demo --seed 7\)'
out_has 'verdict: every disk holds a state the simulator allows'
out_has 'disk 3 .*\(device lost\)'
err_empty
done_check

run demo-random-seed-printed 0 "$BTRSIM" demo
out_has '^seed [0-9]+ \(rerun'; done_check

# Same seed, same output (but for the real-time figure), same IO log, same images.
run demo-report-a 0 "$BTRSIM" demo --seed 11 --report "$T/a" --save-images "$T/ia"
grep -v 'real time' "$OUT" | grep -v '^report:\|^images:' >"$T/a.txt"
[ -s "$T/a/summary.txt" ] || fail "no summary.txt"
[ -s "$T/a/iolog.txt" ] || fail "no iolog.txt"
done_check
run demo-report-b 0 "$BTRSIM" demo --seed 11 --report "$T/b" --save-images "$T/ib"
grep -v 'real time' "$OUT" | grep -v '^report:\|^images:' >"$T/b.txt"
cmp -s "$T/a.txt" "$T/b.txt" || fail "same seed, different output"
cmp -s "$T/a/iolog.txt" "$T/b/iolog.txt" || fail "same seed, different IO log"
for d in 0 1 2 3; do
	cmp -s "$T/ia/disk$d.img" "$T/ib/disk$d.img" || fail "same seed, different disk$d.img"
done
done_check

run demo-other-seed 0 "$BTRSIM" demo --seed 12 --report "$T/c"
cmp -s "$T/a/iolog.txt" "$T/c/iolog.txt" && fail "different seeds, same IO log"
done_check

NAME=demo-images-sparse
size=$(stat -c %s "$T/ia/disk0.img")
blocks=$(stat -c %b "$T/ia/disk0.img")
[ "$size" -eq $((64 * 1024 * 1024)) ] || fail "disk0.img is $size bytes, not 64 MiB"
[ $((blocks * 512)) -lt $((8 * 1024 * 1024)) ] || fail "disk0.img is not sparse ($blocks blocks)"
done_check

run demo-one-disk-512 0 "$BTRSIM" demo --seed 5 --disks 1 --sector-size 512
out_has 'verdict: every disk holds'; out_has '--disks 1 --sector-size 512'; done_check

run demo-sixteen-disks 0 "$BTRSIM" demo --seed 5 --disks 16
out_has 'disk 15 '; out_has 'verdict: every disk holds'; done_check

for s in 1 2 3 4 5 6 7 8; do
	run "demo-seed-$s" 0 "$BTRSIM" demo --seed $s --sector-size 512
	out_has 'verdict: every disk holds'
	done_check
done
