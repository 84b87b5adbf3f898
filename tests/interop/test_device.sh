#!/bin/sh
# btrsim device add against the kernel: ref adds a third image to a RAID1
# volume of two and writes until new chunks use it; btrfs check passes, the
# kernel mounts the three devices, lists them with their sizes, reads every
# file, and its scrub finds nothing wrong.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v btrfs >/dev/null || { skip device "btrfs-progs is not installed"; exit 0; }
can_loop_mount || { skip device "$LOOP_WHY"; exit 0; }

A=$T/a.img
B=$T/b.img
C=$T/c.img
truncate -s 400M "$A" "$B"
head -c 3000000 /dev/urandom >"$T/f"
head -c 9000000 /dev/urandom >"$T/g"
run add-make 0 "$BTRSIM" mkfs -d raid1 -m raid1 "$A" "$B"
"$BTRSIM" put "$A" "$B" "$T/f" /f >/dev/null 2>"$T/err" || fail "put: $(cat "$T/err")"
done_check
run add 0 "$BTRSIM" device add "$C" "$A" "$B"
out_has '^added .*c.img as devid 3$'; done_check
run add-fill 0 true
i=0
while [ $i -lt 12 ]; do
	"$BTRSIM" put "$A" "$B" "$C" "$T/g" "/g$i" >/dev/null 2>"$T/err" || { fail "put: $(cat "$T/err")"; break; }
	i=$((i + 1))
done
"$BTRSIM" dump-tree -t chunk "$A" "$B" "$C" | grep -q 'stripe [01] devid 3' || fail "no chunk on the new device"
done_check
run add-kernel 0 true
attach_all "$A" "$B" "$C"
set -- $DEVS
progs_check "$1"
# shellcheck disable=SC2086
if mount_dev "$T/mnt" "" $DEVS 2>"$T/mount.err"; then
	btrfs filesystem show "$T/mnt" >"$T/show" 2>&1
	grep -q 'Total devices 3' "$T/show" || fail "btrfs filesystem show: $(tr '\n' '|' <"$T/show")"
	grep -qE 'devid +3 size 400\.00MiB' "$T/show" || fail "devid 3: $(grep devid "$T/show" | tr '\n' '|')"
	cmp -s "$T/mnt/f" "$T/f" || fail "the kernel reads /f wrong"
	cmp -s "$T/mnt/g11" "$T/g" || fail "the kernel reads /g11 wrong"
	btrfs scrub start -B "$T/mnt" >"$T/kscrub" 2>&1
	grep -q 'Error summary: *no errors found' "$T/kscrub" || fail "scrub: $(grep -A3 'Error summary' "$T/kscrub" | tr '\n' '|')"
	unmount "$T/mnt"
else
	fail "mount: $(head -c 200 "$T/mount.err")"
fi
detach_all
done_check
