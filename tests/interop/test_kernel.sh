#!/bin/sh
# Images the Linux kernel wrote over loop devices: compression, subvolumes and
# snapshots, reflinks, many hard links, xattrs, every checksum type, and
# multi-device RAID profiles, whole and degraded.  btrsim must read back every
# file, byte for byte and in metadata (nanosecond times).  Where a loop mount
# is not possible, each check reports SKIP with the reason.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip kernel-interop "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"

# Files that exercise extents: inline, multi-extent, compressible, random, sparse.
fill() {
	d=$1
	mkdir -p "$d/dir/sub"
	printf 'small inline file\n' >"$d/inline"
	seq 1 200000 >"$d/text"                # compressible, ~1.2 MiB
	head -c 2000000 /dev/urandom >"$d/random"
	yes 'abcdefgh' | head -c 300000 >"$d/dir/repeats"
	truncate -s 8M "$d/sparse"
	seq 1 1000 | dd of="$d/sparse" bs=4096 seek=700 conv=notrunc 2>/dev/null
	ln -s ../text "$d/dir/link"
	echo hard >"$d/dir/sub/h"
	ln "$d/dir/sub/h" "$d/h2"
	setfattr -n user.k -v value "$d/inline"
	chown 42:43 "$d/dir/repeats"
	chmod 640 "$d/dir/repeats"
	fallocate -l 1M "$d/prealloc" 2>/dev/null || true
	head -c 1048576 /dev/urandom >"$d/overwritten"
	sync
	# Partial writes: into a prealloc extent, over the middle of a written one.
	dd if=/dev/urandom of="$d/prealloc" bs=4096 seek=10 count=3 conv=notrunc 2>/dev/null
	dd if=/dev/urandom of="$d/overwritten" bs=4096 seek=100 count=4 conv=notrunc 2>/dev/null
	fallocate -o 4M -l 1M -n "$d/sparse" 2>/dev/null || true
	touch -d '2001-02-03 04:05:06.123456789' "$d/random"
}

# new_fs NAME "MKFS OPTIONS" NDEV: images $T/NAME.N.img, loop devices in $DEVS.
new_fs() {
	DEVS=""
	IMGS=""
	for i in $(seq 1 "$3"); do
		truncate -s 512M "$T/$1.$i.img"
		IMGS="$IMGS $T/$1.$i.img"
		attach "$T/$1.$i.img" || return 1
		DEVS="$DEVS $LOOP"
	done
	# shellcheck disable=SC2086
	mkfs.btrfs -q -f $2 $DEVS >"$T/mkfs.log" 2>&1
}

# check_extract NAME SRC [extract options]: extract the images and compare.
check_extract() {
	name=$1
	src=$2
	shift 2
	rm -rf "$T/out"
	# shellcheck disable=SC2086
	run "$name" 0 "$BTRSIM" extract "$@" $IMGS "$T/out"
	[ "$BAD" -eq 0 ] && compare_trees "$name" "$src" "$T/out" ns
	done_check
}

# check_clean NAME [options]: btrsim check finds no error where btrfs check finds none.
check_clean() {
	name=$1
	shift
	set -- $IMGS
	if [ $# -eq 1 ] && ! btrfs check --readonly "$1" >"$T/progs.log" 2>&1; then
		skip "$name" "btrfs check itself reports errors: $(grep -m1 ERROR "$T/progs.log")"
		return
	fi
	# shellcheck disable=SC2086
	run "$name" 0 "$BTRSIM" check ${CHECK_OPTS:-} $IMGS
	out_has '^no error found$'
	done_check
}

# kernel_case NAME "MKFS OPTIONS" "MOUNT OPTIONS" NDEV: fill, unmount, extract, compare.
kernel_case() {
	if ! new_fs "$1" "$2" "$4"; then
		skip "$1" "mkfs.btrfs $2 failed: $(tail -n 1 "$T/mkfs.log")"
		cleanup_mounts
		return
	fi
	# shellcheck disable=SC2086
	if ! mount_dev "$MP" "$3" $DEVS; then
		skip "$1" "mount -o $3 failed"
		cleanup_mounts
		return
	fi
	fill "$MP"
	rm -rf "$T/src"
	cp -a "$MP" "$T/src"
	unmount "$MP"
	cleanup_mounts
	check_extract "kernel-$1" "$T/src"
	check_clean "kernel-$1-check"
	rm -f $IMGS
}

kernel_case plain "" "" 1
kernel_case zlib "" "compress-force=zlib" 1
kernel_case lzo "" "compress-force=lzo" 1
kernel_case zstd "" "compress-force=zstd:3" 1
kernel_case xxhash "--csum xxhash" "" 1
kernel_case sha256 "--csum sha256" "" 1
kernel_case blake2 "--csum blake2" "" 1
kernel_case raid0 "-m raid0 -d raid0" "" 4
kernel_case raid1 "-m raid1 -d raid1" "" 4
kernel_case raid10 "-m raid10 -d raid10" "" 4
kernel_case raid1c3 "-m raid1c3 -d raid1c3" "" 4
kernel_case raid1c4 "-m raid1c4 -d raid1c4" "" 4
kernel_case raid5 "-m raid1 -d raid5" "" 4
kernel_case raid6 "-m raid1c3 -d raid6" "" 4

# Subvolumes, a read-only snapshot taken before more changes, reflinks.
if new_fs subvols "" 1 && mount_dev "$MP" "" $DEVS; then
	btrfs -q subvolume create "$MP/vol" >/dev/null
	fill "$MP/vol"
	cp --reflink=always "$MP/vol/random" "$MP/vol/reflinked"
	btrfs -q subvolume snapshot -r "$MP/vol" "$MP/snap" >/dev/null
	rm -rf "$T/snap-src"
	cp -a "$MP/snap" "$T/snap-src"
	echo changed >"$MP/vol/inline"
	rm "$MP/vol/text"
	btrfs -q subvolume create "$MP/vol/nested" >/dev/null
	echo nested >"$MP/vol/nested/n"
	rm -rf "$T/vol-src"
	cp -a "$MP/vol" "$T/vol-src"
	unmount "$MP"
	cleanup_mounts
	check_extract kernel-subvolume "$T/vol-src" --subvol /vol
	check_extract kernel-snapshot "$T/snap-src" --subvol /snap
	snapid=$("$BTRSIM" ls -i $IMGS / | awk '$2 == "snap" { split($1, a, ":"); print a[1] }')
	check_extract kernel-snapshot-by-id "$T/snap-src" --subvol "$snapid"
	check_clean kernel-subvolume-check
	run kernel-subvol-ls 0 "$BTRSIM" ls $IMGS /
	out_has '^vol$'
	out_has '^snap$'
	done_check
	rm -rf "$T/out"
	run kernel-top-without-snapshots 0 "$BTRSIM" extract $IMGS "$T/out"
	[ -d "$T/out/vol/nested" ] || fail "nested subvolume not extracted"
	[ -e "$T/out/snap" ] && fail "snapshot extracted without --snapshots"
	done_check
	rm -rf "$T/out"
	run kernel-top-with-snapshots 0 "$BTRSIM" extract --snapshots $IMGS "$T/out"
	cmp -s "$T/out/snap/random" "$T/snap-src/random" || fail "snapshot content differs"
	done_check
	rm -f $IMGS
else
	skip kernel-subvolume "could not make the subvolume image"
	cleanup_mounts
fi

# Hundreds of hard links in one directory: the INODE_REF item overflows into INODE_EXTREFs.
if new_fs links "" 1 && mount_dev "$MP" "" $DEVS; then
	mkdir "$MP/d"
	echo target >"$MP/d/t"
	long=$(printf 'L%.0s' $(seq 1 200))
	for i in $(seq 1 400); do ln "$MP/d/t" "$MP/d/$long-$i"; done
	rm -rf "$T/src"
	cp -a "$MP" "$T/src"
	unmount "$MP"
	cleanup_mounts
	check_extract kernel-hardlinks "$T/src"
	check_clean kernel-hardlinks-check
	rm -f $IMGS
else
	skip kernel-hardlinks "could not make the hard-link image"
	cleanup_mounts
fi

# degraded_case NAME "MKFS OPTIONS" KEEP: a 4-device volume read with only the
# images numbered in KEEP (e.g. "1 3 4"); the others are left out.
degraded_case() {
	if ! new_fs "$1" "$2" 4 || ! mount_dev "$MP" "" $DEVS; then
		skip "kernel-$1" "could not make the $2 image"
		cleanup_mounts
		return
	fi
	fill "$MP"
	rm -rf "$T/src"
	cp -a "$MP" "$T/src"
	unmount "$MP"
	cleanup_mounts
	all=$IMGS
	IMGS=""
	for i in $3; do IMGS="$IMGS $T/$1.$i.img"; done
	run "kernel-$1-refused" 1 "$BTRSIM" ls $IMGS /
	err_has 'missing device'
	done_check
	check_extract "kernel-$1" "$T/src" --degraded
	CHECK_OPTS=--degraded check_clean "kernel-$1-check"
	rm -f $all
}

# parity_repair NAME "MKFS OPTIONS": a data block of a RAID5/6 volume damaged on
# its disk is rebuilt from parity, its content right and the repair reported.
parity_repair() {
	if ! new_fs "$1" "$2" 4 || ! mount_dev "$MP" "" $DEVS; then
		skip "kernel-$1" "could not make the $2 image"
		cleanup_mounts
		return
	fi
	head -c 1048576 /dev/urandom >"$MP/data"
	cp "$MP/data" "$T/data.src"
	unmount "$MP"
	cleanup_mounts
	ino=$("$BTRSIM" ls -i $IMGS / | awk '$2 == "data" { split($1, a, ":"); print a[2] }')
	logical=$("$BTRSIM" dump-tree -t fs $IMGS 2>/dev/null |
		grep -A2 "key ($ino EXTENT_DATA 0)" | awk '/disk byte/ { print $5 }')
	where=$("$BTRSIM" map $IMGS $((logical + 8192)) 2>/dev/null | awk '/^copy 0:/ { print $3, $5 }')
	NAME="kernel-$1"
	set -- $where
	if [ $# -ne 2 ]; then
		fail "could not locate the data (logical '$logical')"
		done_check
		return
	fi
	printf 'garbage!' | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
	run "$NAME" 0 "$BTRSIM" cat $IMGS /data
	cmp -s "$OUT" "$T/data.src" || fail "wrong data after the repair"
	err_has 'served from copy 1'
	done_check
	rm -f $IMGS
}

parity_repair parity-raid5 "-m raid1 -d raid5"
parity_repair parity-raid6 "-m raid1c3 -d raid6"

degraded_case degraded-raid1 "-m raid1 -d raid1" "1 3 4"
degraded_case degraded-raid10 "-m raid10 -d raid10" "2 3 4"
degraded_case degraded-raid5 "-m raid1 -d raid5" "1 2 4"
degraded_case degraded-raid6 "-m raid1c3 -d raid6" "1 4"
degraded_case degraded-raid1c3 "-m raid1c3 -d raid1c3" "2 3"

# A log tree: an image copied while mounted, right after an fsync (as if power
# failed then).  dump-tree shows the log trees as progs does; reads see the last
# commit (log replay is not implemented), and check is clean.
if new_fs logtree "" 1 && mount_dev "$MP" "" $DEVS; then
	echo committed >"$MP/old"
	sync
	echo fsynced | dd of="$MP/new" conv=fsync status=none
	set -- $IMGS
	cp "$1" "$T/crashed.img"
	unmount "$MP"
	cleanup_mounts
	IMGS="$T/crashed.img"
	if btrfs inspect-internal dump-super "$IMGS" | grep -q '^log_root[[:space:]]*0$'; then
		skip kernel-log-tree "the copy has no log tree"
	else
		run kernel-log-tree-dump 0 "$BTRSIM" dump-tree $IMGS
		btrfs inspect-internal dump-tree $IMGS | tail -n +2 >"$T/progs.txt"
		cmp -s "$OUT" "$T/progs.txt" || fail "dump-tree differs from progs: $(diff "$OUT" "$T/progs.txt" | head -3 | tr '\n' '|')"
		out_has '^log root tree$'
		out_has '^log tree key \(TREE_LOG ROOT_ITEM 5\)'
		done_check
		run kernel-log-tree-read 0 "$BTRSIM" cat $IMGS /old
		out_has '^committed$'
		done_check
		check_clean kernel-log-tree-check
	fi
	rm -f $IMGS
else
	skip kernel-log-tree "could not make the image"
	cleanup_mounts
fi

# A subvolume with 'btrfs property set ... compression zstd' (the xattr
# btrfs.compression) extracted onto a file system that cannot hold that
# xattr: as btrfs restore, it is skipped with one line per name, and the
# rest of the tree comes out whole (issue 18).
if new_fs prop "" 1 && mount_dev "$MP" "" $DEVS && btrfs subvolume create "$MP/vol" >/dev/null &&
	btrfs property set "$MP/vol" compression zstd && mkdir "$MP/vol/d" &&
	btrfs property set "$MP/vol/d" compression zstd && seq 1 50000 >"$MP/vol/d/f" &&
	setfattr -n user.k -v v "$MP/vol/d/f"; then
	unmount "$MP"
	cleanup_mounts
	rm -rf "$T/out"
	run kernel-extract-prop-xattr 0 "$BTRSIM" extract --subvol /vol $IMGS "$T/out"
	err_has 'cannot hold xattr btrfs.compression .*skipped wherever it occurs'
	err_lines 1
	cmp -s "$T/out/d/f" /dev/stdin <<-X || fail "the file came out wrong"
	$(seq 1 50000)
	X
	[ "$(getfattr --only-values -n user.k "$T/out/d/f" 2>/dev/null)" = v ] ||
		fail "user.k was not restored"
	done_check
	run kernel-extract-no-xattr 0 "$BTRSIM" extract --no-xattr --subvol /vol $IMGS "$T/out2"
	err_empty
	getfattr -n user.k "$T/out2/d/f" >/dev/null 2>&1 && fail "--no-xattr restored user.k"
	done_check
	rm -f $IMGS
else
	skip kernel-extract-prop-xattr "could not make the image"
	cleanup_mounts
fi
