#!/bin/sh
# btrsim balance: usage errors of btrfs-progs' rules (exit 2: unknown filter,
# -s without -f, drange without devid, soft without convert, bad profile),
# status without a balance, a conversion of a snapshotted volume to RAID1
# after device add (every chunk RAID1, files and snapshot as before, btrsim
# and btrfs check clean, "Done, had to relocate N out of M chunks"), the
# kernel's refusals (raid1c3 on two devices, less metadata redundancy without
# -f); an interrupted balance (a fault point) left paused: status says so
# (exit 1) and dumps its filters, start refuses, resume finishes; cancel.
# btrsim device remove: usage errors, below RAID1's two devices refused, an
# added device removed again (its image no longer part of the volume), and
# "missing" when none is.  Crash exploration of the workload op balance.
. "$(dirname "$0")/lib.sh"

run no-image 2 "$BTRSIM" balance
err_has 'needs at least one image'; done_check
run help 0 "$BTRSIM" balance --help
out_has '^usage: btrsim balance \[start\]'; done_check
run bad-filter 2 "$BTRSIM" balance -dfoo=1 "$T/x.img"
err_has 'unrecognized filter or argument: foo=1'; done_check
run bad-profile 2 "$BTRSIM" balance -dconvert=raid7 "$T/x.img"
err_has 'unknown profile: raid7'; done_check
run bad-usage 2 "$BTRSIM" balance -dusage=101 "$T/x.img"
err_has "invalid usage argument '101'"; done_check
run system-needs-force 2 "$BTRSIM" balance -s "$T/x.img"
err_has 'Refusing to explicitly operate on system chunks'; done_check
run drange-needs-devid 2 "$BTRSIM" balance -ddrange=0..100 "$T/x.img"
err_has 'drange filter must be used with devid filter'; done_check
run soft-needs-convert 2 "$BTRSIM" balance -dsoft "$T/x.img"
err_has "'soft' option can be used only when converting profiles"; done_check
run missing-image 1 "$BTRSIM" balance "$T/none.img"
err_has '^btrsim balance: '; done_check

A=$T/a.img
B=$T/b.img
C=$T/c.img
mkdir -p "$T/root/d"
i=0
while [ $i -lt 300 ]; do echo "file $i $(seq 1 $((i % 40)))" >"$T/root/d/f$i"; i=$((i + 1)); done
head -c 3000000 /dev/urandom >"$T/root/big"
truncate -s 400M "$A"
{ mkfs.btrfs -q --rootdir "$T/root" "$A" 2>/dev/null || "$BTRSIM" mkfs --seed 3 "$A" &&
	"$BTRSIM" put "$A" "$T/root/d" /d && "$BTRSIM" put "$A" "$T/root/big" /big; } >/dev/null 2>&1
"$BTRSIM" subvolume snapshot "$A" / /snap >/dev/null &&
	echo changed | "$BTRSIM" write "$A" /d/f7 >/dev/null &&
	"$BTRSIM" rm "$A" /snap/d/f9 >/dev/null &&
	"$BTRSIM" extract "$A" "$T/before" >/dev/null || { echo "FAIL setup"; exit 0; }

run status-none 0 "$BTRSIM" balance status "$A"
out_has "^No balance found on '$A'$"; done_check

truncate -s 400M "$B" "$C"
"$BTRSIM" device add "$B" "$A" >/dev/null || { echo "FAIL device add"; exit 0; }
run refused-raid1c3 1 "$BTRSIM" balance -dconvert=raid1c3 "$A" "$B"
err_has 'EINVAL .*balance: invalid convert data profile raid1c3'; done_check
run convert-raid1 0 "$BTRSIM" balance -dconvert=raid1 -mconvert=raid1 "$A" "$B"
out_has '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'; done_check
run converted-check 0 "$BTRSIM" check "$A" "$B"
out_has '^no error found$'; done_check
run converted-profiles 0 "$BTRSIM" dump-tree -t chunk "$A" "$B"
n_all=$(grep -c 'stripe_len 65536 type' "$OUT")
n_r1=$(grep -c 'type [A-Z]*|RAID1$' "$OUT")
[ "$n_all" -ge 3 ] && [ "$n_all" -eq "$n_r1" ] || fail "$n_r1 of $n_all chunks are RAID1"
done_check
rm -rf "$T/after"
run converted-files 0 "$BTRSIM" extract "$A" "$B" "$T/after"
diff -r "$T/before" "$T/after" >/dev/null || fail "the files differ after the balance"
done_check
if command -v btrfs >/dev/null 2>&1; then
	run converted-btrfs-check 0 btrfs check "$A"
	grep -q 'no error found' "$OUT" "$ERR" || fail "btrfs check: $(tail -3 "$ERR")"
	done_check
fi
run less-redundancy-refused 1 "$BTRSIM" balance -mconvert=single "$A" "$B"
err_has 'reduces metadata redundancy, use --force'; done_check

# Interrupted: the third chunk allocation fails (a fault point) with the
# balance item committed; status, start refused, resume.
echo 'ref/alloc/chunk nth=2 errno=ENOSPC' >"$T/plan"
run interrupted 1 "$BTRSIM" balance --faults "$T/plan" -dconvert=single -mconvert=dup -f "$A" "$B"
err_has 'ENOSPC .*fault point ref/alloc/chunk'; done_check
run status-paused 1 "$BTRSIM" balance status "$A" "$B"
out_has "^Balance on '$A' is paused$"
out_has '^  DATA \(flags 0x100\): converting, target=281474976710656 \(single\), soft is off$'
out_has '^  METADATA \(flags 0x100\): converting, target=32 \(dup\), soft is off$'; done_check
run start-refused 1 "$BTRSIM" balance "$A" "$B"
err_has 'EINPROGRESS'; done_check
run resume 0 "$BTRSIM" balance resume "$A" "$B"
out_has '^Done, had to relocate'; done_check
run resumed-check 0 "$BTRSIM" check "$A" "$B"
out_has '^no error found$'; done_check
run status-after 0 "$BTRSIM" balance status "$A" "$B"
out_has 'No balance found'; done_check
run cancel-none 1 "$BTRSIM" balance cancel "$A" "$B"
err_has 'ENOTCONN'; done_check

run remove-usage 2 "$BTRSIM" device remove "$A"
err_has 'remove: needs DEV and at least one image'; done_check
run remove-bad-dev 2 "$BTRSIM" device remove nine "$A" "$B"
err_has "neither a devid, one of the images, nor 'missing'"; done_check
"$BTRSIM" balance -dconvert=raid1 -mconvert=raid1 "$A" "$B" >/dev/null 2>&1
run remove-below-raid1 1 "$BTRSIM" device remove "$B" "$A" "$B"
err_has 'unable to go below two devices on raid1'; done_check
"$BTRSIM" device add "$C" "$A" "$B" >/dev/null || fail "device add"
run remove-first 0 "$BTRSIM" device remove "$A" "$A" "$B" "$C"
out_has '^removed devid 1: [0-9]+ chunks relocated$'; done_check
run removed-check 0 "$BTRSIM" check "$B" "$C"
out_has '^no error found$'; done_check
rm -rf "$T/after"
run removed-files 0 "$BTRSIM" extract "$B" "$C" "$T/after"
diff -r "$T/before" "$T/after" >/dev/null || fail "the files differ after the remove"
done_check
run removed-image-gone 1 "$BTRSIM" check "$A"
err_has 'no valid btrfs superblock'; done_check
run remove-none-missing 1 "$BTRSIM" device remove missing "$B" "$C"
err_has 'ENODEV .*no missing devices found to remove'; done_check

# Crash exploration of a balance (the workload op): every crash state of
# every disk's cache is whole and holds what the oracle allows; RAID1 states
# read with either disk lost; quota numbers stay right; a recorded run
# replays the same.
cat >"$T/bal.wl" <<'W'
mkdir /a
create /a/f
write /a/f 0 100000 1
create /b
write /b 0 5000 2
sync
snapshot / /snap
write /a/f 4096 20000 3
balance
write /b 0 10 4
fsync /b
W
run explore-balance-raid1 0 "$BTRSIM" explore --disks 2 --profile raid1 --max-subset 6 --samples 6 --lose-disk "$T/bal.wl"
out_has ' 0 violations; [1-9][0-9]* states with a disk lost, 0 of them unreadable'; done_check
run explore-balance-raid5-quota 0 "$BTRSIM" explore --disks 3 --profile raid5 --quota --max-subset 6 --samples 6 "$T/bal.wl"
out_has ' 0 violations$'; done_check
run explore-balance-record 0 "$BTRSIM" explore --max-subset 6 --samples 6 --db "$T/bal.db" "$T/bal.wl"
out_has ' 0 violations$'; done_check
run explore-balance-replay 0 "$BTRSIM" replay --db "$T/bal.db" 1
out_has '^run 1 replayed: '; done_check

# The same for a device removal (the workload op device-remove): device 3 of
# three in RAID1 leaves; every crash state, the removed disk's wiped
# superblock included (a spare then), holds what the oracle allows; a
# recorded run replays the same; a profile that would be left short is
# EINVAL, as Linux says.
cat >"$T/rm.wl" <<'W'
mkdir /a
create /a/f
write /a/f 0 100000 1
sync
snapshot / /snap
device-remove 3
write /a/f 0 10 4
fsync /a/f
device-remove 2 = EINVAL
W
run explore-device-remove 0 "$BTRSIM" explore --disks 3 --profile raid1 --max-subset 4 --samples 4 --db "$T/rm.db" "$T/rm.wl"
out_has '^9 operations, .* 0 violations$'; done_check
run explore-device-remove-replay 0 "$BTRSIM" replay --db "$T/rm.db" 1
out_has '^run 1 replayed: '; done_check
