#!/bin/sh
# The write path against the real Btrfs.  For each workload in workloads/:
# ref runs it on a fresh image; btrfs check --readonly and btrsim check pass;
# the kernel mounts the image and its view of every file (manifest: name,
# type, mode, owner, size, link count, content hash, xattrs) equals ref's;
# the kernel then changes the file system and ref reads its result back
# exactly; ref writes on top and the kernel reads that: the round trip both
# ways (workloads/subvol.wl: subvolumes, snapshots, stand-ins and deleted
# subvolumes too).  Images made by mkfs.btrfs take ref's writes too.  Then a
# random differential run: the same seeded workload on the kernel and on ref
# must give the same errno for every operation and end in the same view; and
# again with subvolume operations (DIFF_SUBVOL_SEEDS, gen-workload --subvols),
# and with clones and dedupes through the ioctls (DIFF_REFLINK_SEEDS,
# gen-workload --reflink).
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

W=$(cd "$(dirname "$0")/workloads" && pwd)
command -v btrfs >/dev/null || { skip write "btrfs-progs is not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1
[ "$LOOP_OK" -eq 1 ] || skip write-kernel "$LOOP_WHY"
DIFF_SEEDS=${DIFF_SEEDS:-1 2 3 4 5 6}
DIFF_SUBVOL_SEEDS=${DIFF_SUBVOL_SEEDS:-1 2 3}
DIFF_REFLINK_SEEDS=${DIFF_REFLINK_SEEDS:-1 2}
DIFF_OPS=${DIFF_OPS:-2000}

# clean NAME IMG: both checkers pass.
clean() {
	NAME=$1
	btrfs check --readonly "$2" >"$T/progs.log" 2>&1 ||
		fail "btrfs check: $(grep -m2 -iE 'error|wrong|mismatch' "$T/progs.log" | tr '\n' '|')"
	"$BTRSIM" check "$2" >"$T/ref.log" 2>&1 ||
		fail "btrsim check: $(grep -m2 -i error "$T/ref.log" | tr '\n' '|')"
}

# mount_rw IMG: the image mounted at $T/mnt.
mount_rw() {
	attach "$1" && mount_dev "$T/mnt" "" "$LOOP"
}

# same_view NAME REF KERNEL: two manifests are equal.
same_view() {
	if ! cmp -s "$2" "$3"; then
		fail "views differ (ref < > kernel): $(diff "$2" "$3" | head -6 | tr '\n' '|')"
	fi
}

# kernel_sees_ref IMG: the kernel's view of the image equals ref's (reported
# against $NAME); fails when the kernel cannot mount it.
kernel_sees_ref() {
	"$BTRSIM" manifest "$1" >"$T/ref.view" 2>"$T/err" || fail "manifest: $(cat "$T/err")"
	if mount_rw "$1"; then
		"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view" || fail "manifest --host"
		same_view "$NAME" "$T/ref.view" "$T/kernel.view"
		detach_all
	else
		fail "the kernel cannot mount the image"
	fi
}

for w in basic sparse tree badinput subvol reflink; do
	img="$T/$w.img"
	truncate -s 3G "$img"
	"$BTRSIM" mkfs "$img" >/dev/null
	if [ "$LOOP_OK" -eq 1 ]; then # the expectations are Linux's: the kernel meets them too
		cp --sparse=always "$img" "$T/kernel-first.img"
		if mount_rw "$T/kernel-first.img"; then
			run "write-$w-kernel-agrees" 0 "$BTRSIM" run --host "$T/mnt" "$W/$w.wl"
			detach_all
		else
			NAME="write-$w-kernel-agrees"
			fail "the kernel cannot mount a fresh image"
		fi
		done_check
		rm -f "$T/kernel-first.img"
	fi
	run "write-$w" 0 "$BTRSIM" run "$W/$w.wl" "$img"
	done_check
	clean "write-$w-clean" "$img"
	done_check
	[ "$LOOP_OK" -eq 1 ] || continue
	NAME="write-$w-kernel-view"
	"$BTRSIM" manifest "$img" >"$T/ref.view" 2>"$T/err" || fail "manifest: $(cat "$T/err")"
	if mount_rw "$img"; then
		"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view" || fail "manifest --host"
		same_view "$NAME" "$T/ref.view" "$T/kernel.view"
		done_check
		run "write-$w-kernel-changes" 0 "$BTRSIM" run --host "$T/mnt" "$W/kernel-changes.wl"
		"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view" || fail "manifest --host"
		detach_all
		done_check
		NAME="write-$w-ref-reads-kernel"
		clean "$NAME" "$img"
		"$BTRSIM" manifest "$img" >"$T/ref.view" 2>"$T/err" || fail "manifest: $(cat "$T/err")"
		same_view "$NAME" "$T/ref.view" "$T/kernel.view"
		done_check
		run "write-$w-ref-after-kernel" 0 "$BTRSIM" run "$W/after.wl" "$img"
		clean "write-$w-ref-after-kernel" "$img"
		kernel_sees_ref "$img"
		done_check
	else
		fail "the kernel cannot mount the image: $(dmesg | tail -n 3 | tr '\n' '|')"
	fi
done

# An image mkfs.btrfs made takes ref's writes.
img="$T/progs.img"
truncate -s 1G "$img"
mkfs.btrfs -q -f "$img" >/dev/null
run write-on-mkfs-btrfs-image 0 "$BTRSIM" run "$W/basic.wl" "$img"
clean write-on-mkfs-btrfs-image "$img"
if [ "$LOOP_OK" -eq 1 ]; then
	NAME=write-on-mkfs-btrfs-image
	kernel_sees_ref "$img"
fi
done_check

# Two devices in RAID1 (made by mkfs.btrfs): ref writes every mirror, so
# either device alone holds the whole file system.
if [ "$LOOP_OK" -eq 1 ]; then
	NAME=write-raid1-two-devices
	truncate -s 1G "$T/m1.img" "$T/m2.img"
	mkfs.btrfs -q -f -d raid1 -m raid1 "$T/m1.img" "$T/m2.img" >/dev/null 2>&1
	run "$NAME" 0 "$BTRSIM" run "$W/basic.wl" "$T/m1.img" "$T/m2.img"
	"$BTRSIM" run "$W/sparse.wl" "$T/m2.img" "$T/m1.img" >/dev/null || fail "sparse.wl"
	"$BTRSIM" manifest "$T/m1.img" "$T/m2.img" >"$T/ref.view"
	for one in m1 m2; do
		"$BTRSIM" manifest --degraded "$T/$one.img" >"$T/one.view" 2>/dev/null ||
			fail "$one alone: manifest --degraded failed"
		same_view "$NAME" "$T/one.view" "$T/ref.view"
	done
	attach "$T/m1.img" && L1=$LOOP && attach "$T/m2.img" && L2=$LOOP
	btrfs check --readonly "$L1" >"$T/progs.log" 2>&1 ||
		fail "btrfs check: $(grep -m2 -iE 'error|wrong' "$T/progs.log" | tr '\n' '|')"
	if mount_dev "$T/mnt" "" "$L1" "$L2"; then
		"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view"
		same_view "$NAME" "$T/ref.view" "$T/kernel.view"
	else
		fail "the kernel cannot mount the volume"
	fi
	detach_all
	done_check
fi

# A fragmented image the kernel keeps in free-space bitmaps: ref converts a
# block group to extents the first time it changes it.
if [ "$LOOP_OK" -eq 1 ]; then
	img="$T/frag.img"
	truncate -s 1G "$img"
	mkfs.btrfs -q -f "$img" >/dev/null
	NAME=write-on-free-space-bitmaps
	if mount_rw "$img"; then
		i=1
		while [ $i -le 1500 ]; do head -c 5000 /dev/urandom >"$T/mnt/f$i"; i=$((i + 1)); done
		sync
		i=1
		while [ $i -le 1500 ]; do rm "$T/mnt/f$i"; i=$((i + 2)); done
		detach_all
		btrfs inspect-internal dump-tree -t 10 "$img" | grep -q FREE_SPACE_BITMAP ||
			skip "$NAME" "the kernel kept no bitmaps"
		printf 'create /new\nwrite /new 0 3M 5\nunlink /f2\nunlink /f4\nsync\nunlink /f6\n' >"$T/frag.wl"
		run "$NAME" 0 "$BTRSIM" run "$T/frag.wl" "$img"
		clean "$NAME" "$img"
		kernel_sees_ref "$img"
	else
		fail "the kernel cannot mount a fresh image"
	fi
	done_check
fi

# Thousands of hard links (INODE_EXTREF once a directory's INODE_REF is full)
# and a 200-level deep tree, written by ref and read by the kernel.
img="$T/links.img"
truncate -s 1G "$img"
"$BTRSIM" mkfs "$img" >/dev/null
{
	echo "mkdir /l"
	echo "create /l/target"
	echo "write /l/target 0 5000 3"
	i=0
	while [ $i -lt 2500 ]; do echo "link /l/target /l/a-rather-long-link-name-$i"; i=$((i + 1)); done
	p=""
	i=0
	while [ $i -lt 200 ]; do p="$p/d$i"; echo "mkdir $p"; i=$((i + 1)); done
	echo "create $p/bottom"
	echo "write $p/bottom 0 100 4"
	i=0
	while [ $i -lt 2500 ]; do echo "unlink /l/a-rather-long-link-name-$i"; i=$((i + 7)); done
} >"$T/links.wl"
run write-links-and-depth 0 "$BTRSIM" run "$T/links.wl" "$img"
clean write-links-and-depth "$img"
if [ "$LOOP_OK" -eq 1 ]; then
	"$BTRSIM" manifest "$img" >"$T/ref.view"
	if mount_rw "$img"; then
		"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view"
		same_view write-links-and-depth "$T/ref.view" "$T/kernel.view"
		n=$(stat -c %h "$T/mnt/l/target")
		[ "$n" -eq 2143 ] || fail "the kernel counts $n links, expected 2143"
		detach_all
	else
		fail "the kernel cannot mount the image"
	fi
fi
done_check

# Filling the file system: ENOSPC, still clean, deletions work, space comes back.
img="$T/full.img"
truncate -s 300M "$img"
"$BTRSIM" mkfs "$img" >/dev/null
{
	i=0
	while [ $i -lt 400 ]; do echo "create /f$i"; echo "write /f$i 0 1M $i"; i=$((i + 1)); done
} >"$T/fill.wl"
run write-full 0 "$BTRSIM" run --record --annotate "$T/fill.out" "$T/fill.wl" "$img"
grep -q '= ENOSPC' "$T/fill.out" || fail "the disk never filled"
clean write-full "$img"
done_check
{
	i=0
	while [ $i -lt 400 ]; do echo "unlink /f$i"; i=$((i + 1)); done
	echo sync
	echo "create /again"
	echo "write /again 0 100M 7"
} >"$T/drain.wl"
run write-full-drain 0 "$BTRSIM" run "$T/drain.wl" "$img"
clean write-full-drain "$img"
done_check
if [ "$LOOP_OK" -eq 1 ]; then
	NAME=write-full-kernel-view
	kernel_sees_ref "$img"
	done_check
fi

# The random differential test: the kernel's results are the expectations;
# then with subvolumes, snapshots (some read-only), deletions and the cleaner
# too (gen-workload --subvols); then with clone, clone-range and dedupe
# (gen-workload --reflink).
[ "$LOOP_OK" -eq 1 ] || exit 0
for spec in $(for s in $DIFF_SEEDS; do echo "$s"; done) \
	$(for s in $DIFF_SUBVOL_SEEDS; do echo "$s-subvols"; done) \
	$(for s in $DIFF_REFLINK_SEEDS; do echo "$s-reflink"; done); do
	seed=${spec%%-*}
	gen_opts=""
	[ "$spec" = "$seed" ] || gen_opts="--${spec#*-}"
	NAME="write-differential-seed-$spec"
	# shellcheck disable=SC2086
	"$BTRSIM" gen-workload --seed "$seed" --ops "$DIFF_OPS" $gen_opts >"$T/gen.wl"
	truncate -s 3G "$T/k.img"
	# Vary the format too: small nodes (deep trees), DUP data, other checksums.
	case $((seed % 3)) in
	0) mkfs_opts="" ;;
	1) mkfs_opts="-n 4096" ;;
	*) mkfs_opts="--csum xxhash -d dup" ;;
	esac
	# shellcheck disable=SC2086
	"$BTRSIM" mkfs --seed "$seed" $mkfs_opts "$T/k.img" >/dev/null
	cp --sparse=always "$T/k.img" "$T/r.img"
	if ! mount_rw "$T/k.img"; then
		fail "the kernel cannot mount the image"
		continue
	fi
	"$BTRSIM" run --host "$T/mnt" --record --annotate "$T/kernel.wl" "$T/gen.wl" >"$T/k.log" 2>&1 ||
		fail "kernel run: $(tail -n 2 "$T/k.log" | tr '\n' '|')"
	"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view"
	detach_all
	# ref reads what the kernel wrote ...
	"$BTRSIM" manifest "$T/k.img" >"$T/ref-of-kernel.view" 2>"$T/err" || fail "manifest: $(cat "$T/err")"
	same_view "$NAME" "$T/ref-of-kernel.view" "$T/kernel.view"
	# ... and writes the same, operation by operation.
	"$BTRSIM" run "$T/kernel.wl" "$T/r.img" >"$T/r.log" 2>&1 ||
		fail "ref differs from the kernel: $(grep -m1 'btrsim run' "$T/r.log")"
	clean "$NAME" "$T/r.img"
	"$BTRSIM" manifest "$T/r.img" >"$T/ref.view"
	same_view "$NAME" "$T/ref.view" "$T/kernel.view"
	done_check
	rm -f "$T/k.img" "$T/r.img"
done
