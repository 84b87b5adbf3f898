#!/bin/sh
# Balance and device remove against the kernel.  An image mkfs.btrfs made
# with files, snapshotted and changed by ref, gets a second device and is
# converted by ref to RAID1 (data and metadata): btrfs check passes on the
# loop devices, and the kernel mounts the volume and reads every file of
# both subvolumes as they were, and its scrub finds nothing wrong.  Then a
# conversion to RAID5/RAID1C3 on three devices is interrupted (a fault
# point) with its balance item committed: the kernel, mounting the volume,
# resumes the balance itself and finishes it; ref then finds no balance
# left, every chunk converted, and the files whole.  Last, ref removes the
# first device (once metadata is RAID1: RAID1C3 needs three devices): the
# kernel mounts the two left and reads the files.  And a lost device of a
# RAID1 volume removed ("missing"): the two left mount whole.  And a balance
# the kernel paused, resumed by ref.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v btrfs >/dev/null || { skip balance "btrfs-progs is not installed"; exit 0; }
command -v mkfs.btrfs >/dev/null || { skip balance "mkfs.btrfs is not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1

A=$T/a.img
B=$T/b.img
C=$T/c.img
mkdir -p "$T/root/d"
i=0
while [ $i -lt 400 ]; do echo "file $i $(seq 1 $((i % 50)))" >"$T/root/d/f$i"; i=$((i + 1)); done
head -c 4000000 /dev/urandom >"$T/root/big"
truncate -s 512M "$A" "$B" "$C"
run setup 0 mkfs.btrfs -q --rootdir "$T/root" "$A"
done_check
"$BTRSIM" subvolume snapshot "$A" / /snap >/dev/null &&
	echo changed | "$BTRSIM" write "$A" /d/f7 >/dev/null &&
	"$BTRSIM" rm "$A" /snap/d/f9 >/dev/null &&
	"$BTRSIM" extract "$A" "$T/before" >/dev/null || { echo "FAIL setup"; exit 0; }

# kernel_reads NAME OPTS IMG...: btrfs check, then the kernel mounts the
# images and reads every file as in $T/before (and scrubs, unless ro).
kernel_reads() {
	name=$1
	opts=$2
	shift 2
	run "$name" 0 true
	if [ "$LOOP_OK" -ne 1 ]; then
		skip "$name" "$LOOP_WHY"
		return
	fi
	# The kernel remembers devices it scanned, by loop device path: a
	# removed device's stale entry would join (no udev here to drop it).
	btrfs device scan --forget >/dev/null 2>&1
	attach_all "$@"
	# shellcheck disable=SC2086
	set -- $DEVS
	progs_check "$1"
	# shellcheck disable=SC2086
	if mount_dev "$T/mnt" "$opts" $DEVS 2>"$T/mount.err"; then
		diff -r -x snap "$T/before" "$T/mnt" >"$T/diff" 2>&1 ||
			fail "the kernel reads different files: $(head -3 "$T/diff" | tr '\n' '|')"
		# The snapshot: the files as mkfs.btrfs put them, but f9 deleted.
		if [ -d "$T/mnt/snap" ]; then
			diff -r -x f9 "$T/root/d" "$T/mnt/snap/d" >"$T/diff" 2>&1 && [ ! -e "$T/mnt/snap/d/f9" ] ||
				fail "the kernel reads the snapshot different: $(head -3 "$T/diff" | tr '\n' '|')"
		fi
		if [ "$opts" != ro ]; then
			btrfs balance status "$T/mnt" >/dev/null 2>&1
			# The kernel resumes an interrupted balance at mount: wait for it.
			k=0
			while [ $k -lt 120 ] && btrfs balance status "$T/mnt" 2>/dev/null | grep -q 'is running'; do
				sleep 1
				k=$((k + 1))
			done
			btrfs scrub start -B "$T/mnt" >"$T/scrub.log" 2>&1 ||
				fail "the kernel's scrub: $(cat "$T/scrub.log" | tr '\n' '|')"
		fi
		unmount "$T/mnt" || fail "umount"
	else
		fail "the kernel does not mount it: $(head -c 200 "$T/mount.err") $(dmesg | tail -n 3 | tr '\n' '|')"
	fi
	detach_all
	done_check
}

"$BTRSIM" device add "$B" "$A" >/dev/null || fail "device add"
run convert-raid1 0 "$BTRSIM" balance -dconvert=raid1 -mconvert=raid1 "$A" "$B"
out_has '^Done'; done_check
kernel_reads raid1-kernel ro "$A" "$B"

"$BTRSIM" device add "$C" "$A" "$B" >/dev/null || fail "device add"
echo 'ref/alloc/chunk nth=2 errno=ENOSPC' >"$T/plan"
run interrupted 1 "$BTRSIM" balance --faults "$T/plan" -dconvert=raid5 -mconvert=raid1c3 "$A" "$B" "$C"
done_check
run paused 1 "$BTRSIM" balance status "$A" "$B" "$C"
out_has 'is paused'; done_check
kernel_reads kernel-resumes "" "$A" "$B" "$C"
if [ "$LOOP_OK" -eq 1 ]; then
	run resumed-by-kernel 0 "$BTRSIM" balance status "$A" "$B" "$C"
	out_has 'No balance found'; done_check
	run resumed-profiles 0 "$BTRSIM" dump-tree -t chunk "$A" "$B" "$C"
	grep 'stripe_len 65536 type' "$OUT" | grep -vqE 'DATA\|RAID5$|METADATA\|RAID1C3$|SYSTEM\|RAID1C3$' &&
		fail "a chunk is not converted: $(grep 'stripe_len 65536 type' "$OUT" | sort | uniq -c | tr '\n' '|')"
	done_check
else
	"$BTRSIM" balance resume "$A" "$B" "$C" >/dev/null 2>&1 || fail "resume"
fi
run ref-check 0 "$BTRSIM" check "$A" "$B" "$C"
out_has '^no error found$'; done_check

run remove-refused 1 "$BTRSIM" device remove "$A" "$A" "$B" "$C"
err_has 'unable to go below three devices on raid1c3'; done_check
"$BTRSIM" balance -mconvert=raid1 "$A" "$B" "$C" >/dev/null 2>&1 || fail "convert to raid1"
run remove 0 "$BTRSIM" device remove "$A" "$A" "$B" "$C"
done_check
run removed-check 0 "$BTRSIM" check "$B" "$C"
out_has '^no error found$'; done_check
kernel_reads removed-kernel "" "$B" "$C"

# A lost device removed: RAID1 on three images, the third lost; `device
# remove missing` rebuilds its chunks on the two left, which the kernel then
# mounts whole (not degraded).
rm -f "$A" "$B" "$C"
truncate -s 512M "$A" "$B" "$C"
run missing-make 0 "$BTRSIM" mkfs -d raid1 -m raid1 "$A" "$B" "$C"
"$BTRSIM" put "$A" "$B" "$C" "$T/root/big" /big >/dev/null || fail "put"
done_check
rm -rf "$T/before"
mkdir -p "$T/before"
cp "$T/root/big" "$T/before/big"
run remove-missing 0 "$BTRSIM" device remove missing "$A" "$B"
out_has '^removed devid 3: '; done_check
run remove-missing-check 0 "$BTRSIM" check "$A" "$B"
out_has '^no error found$'; done_check
kernel_reads remove-missing-kernel "" "$A" "$B"

# The kernel's paused balance resumed by ref: the kernel converts a volume
# to RAID1 in the background, is paused in the middle (btrfs balance pause,
# its item kept) and unmounted; ref shows it paused, resumes it, and every chunk
# ends RAID1 with the files whole.  When the kernel finished before the
# pause, this part reports SKIP.
if [ "$LOOP_OK" -eq 1 ]; then
	rm -f "$A" "$B"
	truncate -s 1G "$A" "$B"
	run paused-make 0 mkfs.btrfs -q -f -d single -m dup "$A"
	done_check
	btrfs device scan --forget >/dev/null 2>&1
	attach "$A"; LA=$LOOP
	attach "$B"; LB=$LOOP
	mkdir -p "$T/mnt"
	if mount_dev "$T/mnt" "" "$LA" 2>"$T/mount.err"; then
		rm -rf "$T/before"
		mkdir -p "$T/before"
		i=0
		while [ $i -lt 16 ]; do head -c 16000000 /dev/urandom >"$T/before/f$i"; i=$((i + 1)); done
		cp "$T/before"/f* "$T/mnt/"
		btrfs device add -f "$LB" "$T/mnt" >/dev/null 2>&1
		sync
		btrfs balance start --bg -dconvert=raid1 -mconvert=raid1 "$T/mnt" >/dev/null 2>&1
		sleep 0.2
		btrfs balance pause "$T/mnt" >/dev/null 2>&1
		# (the paused balance may hold the file system a moment longer:
		# "target is busy", seen in CI)
		n=0
		until unmount "$T/mnt" 2>/dev/null; do
			n=$((n + 1))
			[ $n -lt 100 ] || { fail "umount: still busy after 10 s"; break; }
			sleep 0.1
		done
	else
		fail "the kernel does not mount it: $(head -c 200 "$T/mount.err")"
	fi
	detach_all
	"$BTRSIM" balance status "$A" "$B" >"$T/status" 2>&1
	if grep -q 'is paused' "$T/status"; then
		run kernel-paused-resume 0 "$BTRSIM" balance resume "$A" "$B"
		out_has '^Done'; done_check
		run kernel-paused-profiles 0 "$BTRSIM" dump-tree -t chunk "$A" "$B"
		grep 'stripe_len 65536 type' "$OUT" | grep -vq '|RAID1$' &&
			fail "a chunk is not RAID1: $(grep 'stripe_len 65536 type' "$OUT" | sort | uniq -c | tr '\n' '|')"
		done_check
		run kernel-paused-check 0 "$BTRSIM" check "$A" "$B"
		out_has '^no error found$'; done_check
		kernel_reads kernel-paused-kernel "" "$A" "$B"
	else
		skip kernel-paused "the kernel's balance finished before it could be paused: $(head -1 "$T/status")"
	fi
fi
