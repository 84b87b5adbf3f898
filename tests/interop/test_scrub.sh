#!/bin/sh
# btrsim scrub against the kernel's scrub.  For each layout (single-disk DUP,
# RAID1, RAID10, RAID5, RAID6): ref makes a volume and writes files, and the
# kernel makes another (mkfs.btrfs, a mount, the same files copied).  Each
# volume is copied and the same damage put on both copies (a data sector and
# a tree block of one copy scribbled); the kernel's `btrfs scrub start -B -d
# -R -r` on one and `btrsim scrub -r -d -R` on the other must count the same,
# device by device: extents and bytes scrubbed, read, csum and verify errors,
# corrected and uncorrectable.  Then `btrsim scrub` mends the damage, a second
# scrub finds nothing, and btrfs check and the kernel's scrub agree; the
# kernel's `btrfs device stats` shows the error counters ref's scrub kept.
# Last, a volume the kernel converted with balance (RAID1 to RAID5 data and
# RAID1C3 metadata) is read, checked and scrubbed by ref (the counters equal
# the kernel's scrub's), and written on by ref for the kernel to read.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v btrfs >/dev/null || { skip scrub "btrfs-progs is not installed"; exit 0; }
can_loop_mount || { skip scrub "$LOOP_WHY"; exit 0; }

KEYS='data_extents_scrubbed|tree_extents_scrubbed|data_bytes_scrubbed|tree_bytes_scrubbed|read_errors|csum_errors|verify_errors|uncorrectable_errors|corrected_errors'

# counters FILE: "devid key value" from scrub -d -R output (btrfs or btrsim).
counters() {
	awk -v keys="^($KEYS)$" '
		/^Scrub device / { id = $0; sub(/.*\(id /, "", id); sub(/\).*/, "", id) }
		/^\t[a-z_]+: / { k = $1; sub(/:$/, "", k); sub(/^\t/, "", k); if (k ~ keys) print id, k, $2 }' "$1"
}

# imgs PREFIX N: $IMGS, the paths PREFIX1.img .. PREFIXN.img.
imgs() {
	IMGS=""
	k=1
	while [ "$k" -le "$2" ]; do
		IMGS="$IMGS $T/$1$k.img"
		k=$((k + 1))
	done
}

# kscrub OUT IMG...: the kernel's read-only scrub of the volume, -d -R.
kscrub() {
	out=$1
	shift
	attach_all "$@" || return 1
	# shellcheck disable=SC2086
	mount_dev "$T/mnt" ro $DEVS 2>"$T/mount.err" || { fail "mount: $(head -c 200 "$T/mount.err")"; detach_all; return 1; }
	btrfs scrub start -B -d -R -r "$T/mnt" >"$out" 2>&1
	unmount "$T/mnt"
	detach_all
}

mkdir -p "$T/src"
head -c 900000 /dev/urandom >"$T/src/f1"
head -c 400000 /dev/urandom >"$T/src/f2"
head -c 200000 /dev/urandom >"$T/src/f3"
head -c 16384 /dev/urandom >"$T/junk16k"
head -c 4096 /dev/urandom >"$T/junk4k"

for cfg in "1 dup dup" "2 raid1 raid1" "4 raid10 raid10" "3 raid5 raid1" "4 raid6 raid6"; do
	set -- $cfg
	n=$1
	data=$2
	meta=$3
	for maker in ref kernel; do
		BASE="scrub-$n-$data-$meta-$maker"
		imgs "$maker" "$n"
		for i in $IMGS; do rm -f "$i"; truncate -s 512M "$i"; done
		run "$BASE-make" 0 true
		if [ "$maker" = ref ]; then
			# shellcheck disable=SC2086
			"$BTRSIM" mkfs -d "$data" -m "$meta" $IMGS >/dev/null 2>"$T/err" || fail "mkfs: $(cat "$T/err")"
			for f in f1 f2 f3; do
				# shellcheck disable=SC2086
				"$BTRSIM" put $IMGS "$T/src/$f" "/$f" >/dev/null 2>"$T/err" || fail "put: $(cat "$T/err")"
			done
		else
			# shellcheck disable=SC2086
			mkfs.btrfs -q -f -d "$data" -m "$meta" $IMGS >/dev/null 2>"$T/err" || fail "mkfs.btrfs: $(cat "$T/err")"
			# shellcheck disable=SC2086
			attach_all $IMGS
			# shellcheck disable=SC2086
			if mount_dev "$T/mnt" "" $DEVS 2>"$T/mount.err"; then
				cp "$T/src/f1" "$T/src/f2" "$T/src/f3" "$T/mnt/"
				unmount "$T/mnt"
			else
				fail "mount: $(head -c 200 "$T/mount.err")"
			fi
			detach_all
		fi
		done_check

		# The same damage on two copies of the volume.
		# shellcheck disable=SC2086
		L=$("$BTRSIM" dump-tree -t 5 $IMGS | awk '/extent data disk byte/ { n++; if (n == 2) { print $5; exit } }')
		# shellcheck disable=SC2086
		R=$("$BTRSIM" dump-tree -t root $IMGS | awk '/key \(FS_TREE ROOT_ITEM/ { on = 1 }
			on && / bytenr / { for (i = 1; i < NF; i++) if ($i == "bytenr") { print $(i + 1); exit } }')
		# shellcheck disable=SC2086
		DP=$("$BTRSIM" map $IMGS "$L" | awk '/^copy 0:/ { print $3, $5 }')
		# shellcheck disable=SC2086
		TP=$("$BTRSIM" map $IMGS "$R" | awk '/^copy 0:/ { print $3, $5 }')
		run "$BASE-damage" 0 true
		[ -n "$DP" ] && [ -n "$TP" ] || fail "no targets (data $L: '$DP', tree $R: '$TP')"
		set -- $DP
		dd if="$T/junk4k" of="$1" bs=4096 seek=$(($2 / 4096 + 1)) conv=notrunc status=none
		set -- $TP
		dd if="$T/junk16k" of="$1" bs=4096 seek=$(($2 / 4096)) conv=notrunc status=none
		KIMGS=""
		for img in $IMGS; do
			cp --sparse=always "$img" "$img.k"
			KIMGS="$KIMGS $img.k"
		done
		done_check

		# shellcheck disable=SC2086
		run "$BASE-counts" 0 "$BTRSIM" scrub -r -d -R $IMGS
		counters "$OUT" >"$T/ref.cnt"
		# shellcheck disable=SC2086
		kscrub "$T/kernel.out" $KIMGS
		counters "$T/kernel.out" >"$T/kernel.cnt"
		[ -s "$T/kernel.cnt" ] || fail "no counters from the kernel: $(head -c 300 "$T/kernel.out")"
		cmp -s "$T/kernel.cnt" "$T/ref.cnt" ||
			fail "counters differ (kernel < > ref): $(diff "$T/kernel.cnt" "$T/ref.cnt" | grep '^[<>]' | head -8 | tr '\n' '|')"
		grep -q ' corrected_errors [1-9]' "$T/ref.cnt" || fail "the damage was not found"
		echo "# $BASE: $(grep -E '_errors [1-9]' "$T/ref.cnt" | tr '\n' ' ')"
		done_check

		# shellcheck disable=SC2086
		run "$BASE-mend" 0 "$BTRSIM" scrub $IMGS
		out_has '^  Uncorrectable:  0$'; done_check
		# shellcheck disable=SC2086
		run "$BASE-mended" 0 "$BTRSIM" scrub -r $IMGS
		out_has '^Error summary:    no errors found$'; done_check
		run "$BASE-mended-kernel" 0 true
		# shellcheck disable=SC2086
		attach_all $IMGS
		set -- $DEVS
		progs_check "$1"
		detach_all
		# The counters ref's scrub kept in the dev tree, as the kernel reads them.
		# shellcheck disable=SC2086
		"$BTRSIM" device stats $IMGS | sed 's/^\[[^]]*\]//' >"$T/ref.stats"
		grep -q 'corruption_errs  [1-9]' "$T/ref.stats" || fail "ref's device stats: no corruption counted"
		# shellcheck disable=SC2086
		attach_all $IMGS
		# shellcheck disable=SC2086
		if mount_dev "$T/mnt" ro $DEVS 2>"$T/mount.err"; then
			btrfs device stats "$T/mnt" | sed 's/^\[[^]]*\]//' >"$T/kernel.stats"
			unmount "$T/mnt"
			same_stats=$(diff "$T/kernel.stats" "$T/ref.stats" | grep '^[<>]' | head -4 | tr '\n' '|')
			[ -z "$same_stats" ] || fail "device stats differ (kernel < > ref): $same_stats"
		else
			fail "mount: $(head -c 200 "$T/mount.err")"
		fi
		detach_all
		# shellcheck disable=SC2086
		kscrub "$T/kernel.out" $IMGS
		counters "$T/kernel.out" | grep -E '_errors [1-9]' >"$T/left" &&
			fail "the kernel's scrub after ref mended: $(tr '\n' '|' <"$T/left")"
		grep -q 'data_bytes_scrubbed' "$T/kernel.out" || fail "the kernel's scrub: $(head -c 300 "$T/kernel.out")"
		done_check
		rm -f $IMGS $KIMGS
	done
done

# A volume the kernel converted with balance (RAID1 to RAID5 data and RAID1C3
# metadata, then back to RAID1 data): ref reads it, its scrub counts what the
# kernel's counts, and ref writes on top of it for the kernel to read.
BASE=scrub-kernel-balance
imgs bal 3
for i in $IMGS; do rm -f "$i"; truncate -s 512M "$i"; done
run "$BASE-make" 0 true
# shellcheck disable=SC2086
mkfs.btrfs -q -f -d raid1 -m raid1 $IMGS >/dev/null 2>&1 || fail "mkfs.btrfs"
# shellcheck disable=SC2086
attach_all $IMGS
# shellcheck disable=SC2086
if mount_dev "$T/mnt" "" $DEVS 2>"$T/mount.err"; then
	cp "$T/src/f1" "$T/src/f2" "$T/src/f3" "$T/mnt/"
	sync
	btrfs balance start -dconvert=raid5 -mconvert=raid1c3 "$T/mnt" >"$T/bal.log" 2>&1 ||
		fail "balance to raid5: $(tail -2 "$T/bal.log" | tr '\n' '|')"
	cp "$T/src/f1" "$T/mnt/f1-after-raid5"
	sync
	unmount "$T/mnt"
else
	fail "mount: $(head -c 200 "$T/mount.err")"
fi
detach_all
done_check
# shellcheck disable=SC2086
run "$BASE-profiles" 0 "$BTRSIM" dump-tree -t chunk $IMGS
out_has 'DATA\|RAID5'; out_has 'METADATA\|RAID1C3'; done_check
for f in f1 f2 f3 f1-after-raid5; do
	src="$T/src/${f%-after-raid5}"
	# shellcheck disable=SC2086
	run "$BASE-read-$f" 0 "$BTRSIM" cat $IMGS "/$f"
	cmp -s "$OUT" "$src" || fail "/$f reads back different"
	done_check
done
# shellcheck disable=SC2086
run "$BASE-check" 0 "$BTRSIM" check $IMGS
out_has '^no error found$'; done_check
KIMGS=""
for img in $IMGS; do cp --sparse=always "$img" "$img.k"; KIMGS="$KIMGS $img.k"; done
# shellcheck disable=SC2086
run "$BASE-scrub" 0 "$BTRSIM" scrub -r -d -R $IMGS
counters "$OUT" >"$T/ref.cnt"
# shellcheck disable=SC2086
kscrub "$T/kernel.out" $KIMGS
counters "$T/kernel.out" >"$T/kernel.cnt"
cmp -s "$T/kernel.cnt" "$T/ref.cnt" ||
	fail "counters differ (kernel < > ref): $(diff "$T/kernel.cnt" "$T/ref.cnt" | grep '^[<>]' | head -8 | tr '\n' '|')"
done_check
# shellcheck disable=SC2086
run "$BASE-ref-writes" 0 "$BTRSIM" put $IMGS "$T/src/f2" /from-ref
done_check
run "$BASE-kernel-reads" 0 true
# shellcheck disable=SC2086
attach_all $IMGS
set -- $DEVS
progs_check "$1"
# shellcheck disable=SC2086
if mount_dev "$T/mnt" ro $DEVS 2>"$T/mount.err"; then
	cmp -s "$T/mnt/from-ref" "$T/src/f2" || fail "the kernel reads ref's file wrong"
	unmount "$T/mnt"
else
	fail "mount: $(head -c 200 "$T/mount.err")"
fi
detach_all
done_check
# shellcheck disable=SC2086
rm -f $IMGS $KIMGS
