#!/bin/sh
# Writing degraded against the kernel: ref makes a volume (RAID1, RAID10,
# RAID5, RAID6), loses the devices the profile tolerates, and writes on
# what is left (`btrsim put --degraded`: a file of several rows, the first
# sharing a row with the file written before, so that RAID5/6 rows are
# rebuilt and rewritten with a column gone); then btrfs
# check and btrsim check pass on the devices left, and the kernel, mounting
# them degraded, reads what ref wrote before and after the loss.  Then each
# lost device is rebuilt onto a new image (`btrsim device replace`): the
# volume mounts without degraded, btrfs check passes, and the kernel reads
# every file and its scrub finds nothing wrong.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v btrfs >/dev/null || { skip degraded "btrfs-progs is not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1

head -c 2500000 /dev/urandom >"$T/before"
head -c 3100000 /dev/urandom >"$T/after"

# "N data meta LOST": N images, LOST of them (the last ones) left out.
for cfg in "2 raid1 raid1 1" "4 raid10 raid10 1" "3 raid5 raid1 1" "4 raid5 raid5 1" "4 raid6 raid6 2"; do
	set -- $cfg
	n=$1
	data=$2
	meta=$3
	lost=$4
	BASE="degraded-$n-$data-$meta"
	ALL=""
	LEFT=""
	k=1
	while [ $k -le "$n" ]; do
		img="$T/$data$n-$k.img"
		rm -f "$img"
		truncate -s 512M "$img"
		ALL="$ALL $img"
		[ $k -le $((n - lost)) ] && LEFT="$LEFT $img"
		k=$((k + 1))
	done
	# shellcheck disable=SC2086
	run "$BASE-make" 0 "$BTRSIM" mkfs -d "$data" -m "$meta" $ALL
	# shellcheck disable=SC2086
	"$BTRSIM" put $ALL "$T/before" /before >/dev/null 2>"$T/err" || fail "put: $(cat "$T/err")"
	done_check

	# shellcheck disable=SC2086
	run "$BASE-refused" 1 "$BTRSIM" put $LEFT "$T/after" /after
	err_has 'missing device'; done_check
	# shellcheck disable=SC2086
	run "$BASE-write" 0 "$BTRSIM" put --degraded $LEFT "$T/after" /after
	done_check
	# shellcheck disable=SC2086
	run "$BASE-check" 0 "$BTRSIM" check --degraded $LEFT
	out_has '^no error found$'; done_check
	for f in before after; do
		src="$T/$f"
		# shellcheck disable=SC2086
		run "$BASE-read-$f" 0 "$BTRSIM" cat --degraded $LEFT "/$f"
		cmp -s "$OUT" "$src" || fail "/$f reads back different"
		done_check
	done

	if [ "$LOOP_OK" -eq 1 ]; then
		run "$BASE-kernel" 0 true
		# shellcheck disable=SC2086
		attach_all $LEFT
		set -- $DEVS
		progs_check "$1"
		# shellcheck disable=SC2086
		if mount_dev "$T/mnt" degraded,ro $DEVS 2>"$T/mount.err"; then
			cmp -s "$T/mnt/before" "$T/before" || fail "the kernel reads /before wrong"
			cmp -s "$T/mnt/after" "$T/after" || fail "the kernel reads /after wrong"
			unmount "$T/mnt" || fail "umount"
		else
			fail "the kernel does not mount it degraded: $(head -c 200 "$T/mount.err") $(dmesg | tail -n 3 | tr '\n' '|')"
		fi
		detach_all
		done_check
	else
		skip "$BASE-kernel" "$LOOP_WHY"
	fi

	# Each lost device rebuilt onto a new image.
	WHOLE="$LEFT"
	k=$((n - lost + 1))
	while [ $k -le "$n" ]; do
		new="$T/$data$n-new$k.img"
		rm -f "$new"
		# shellcheck disable=SC2086
		run "$BASE-replace-$k" 0 "$BTRSIM" device replace "$k" "$new" $WHOLE
		out_has "^replaced devid $k with "; done_check
		WHOLE="$WHOLE $new"
		k=$((k + 1))
	done
	# shellcheck disable=SC2086
	run "$BASE-replaced-check" 0 "$BTRSIM" check $WHOLE
	out_has '^no error found$'; done_check
	# shellcheck disable=SC2086
	run "$BASE-replaced-scrub" 0 "$BTRSIM" scrub -r $WHOLE
	out_has '^Error summary:    no errors found$'; done_check
	if [ "$LOOP_OK" -eq 1 ]; then
		run "$BASE-replaced-kernel" 0 true
		# shellcheck disable=SC2086
		attach_all $WHOLE
		set -- $DEVS
		progs_check "$1"
		# shellcheck disable=SC2086
		if mount_dev "$T/mnt" "" $DEVS 2>"$T/mount.err"; then
			cmp -s "$T/mnt/before" "$T/before" || fail "the kernel reads /before wrong"
			cmp -s "$T/mnt/after" "$T/after" || fail "the kernel reads /after wrong"
			btrfs scrub start -B "$T/mnt" >"$T/kscrub" 2>&1
			grep -q 'Error summary: *no errors found' "$T/kscrub" ||
				fail "the kernel's scrub: $(grep -A3 'Error summary' "$T/kscrub" | tr '\n' '|')"
			unmount "$T/mnt" || fail "umount"
		else
			fail "the kernel does not mount the rebuilt volume: $(head -c 200 "$T/mount.err") $(dmesg | tail -n 3 | tr '\n' '|')"
		fi
		detach_all
		done_check
	fi
	# shellcheck disable=SC2086
	rm -f $ALL $WHOLE
done
