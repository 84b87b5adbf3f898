# lib.sh - helpers for the interop tests: images made by mkfs.btrfs and by the
# kernel, read back by btrsim and compared with their source trees.
# Sourced after tests/cli/lib.sh (run, fail, done_check, $T).

# skip NAME REASON: a check that cannot run here, and why.
skip() {
	echo "SKIP $1: $2"
}

# The source tree as text: one line per entry with type, mode, owner, size,
# link count, mtime (seconds, or seconds.nanoseconds with PREC=ns), symlink
# target and xattrs; then the hard-link groups.  Content is compared apart.
tree_signature() {
	dir=$1
	prec=${2:-s}
	(
		cd "$dir" || exit 1
		if [ "$prec" = ns ]; then tfmt='%T@'; else tfmt='%Ts'; fi
		find . -mindepth 1 -printf "%P %y %m %U %G %s %n $tfmt %l\n" | LC_ALL=C sort
		# Directory sizes differ between file systems; btrfs reports them, so do we.
		echo "-- links"
		find . -mindepth 1 ! -type d -links +1 -printf '%i %P\n' | LC_ALL=C sort |
			awk '{ if ($1 != last && NR > 1) print line; if ($1 != last) line = $2; else line = line " " $2; last = $1 } END { if (NR) print line }' |
			LC_ALL=C sort
		echo "-- xattrs"
		if command -v getfattr >/dev/null 2>&1; then
			getfattr -R -h -d -m - --absolute-names . 2>/dev/null | grep -v '^security.selinux'
		fi
	)
}

# compare_trees NAME SRC OUT [PREC]: content and metadata of OUT equal SRC's.
compare_trees() {
	# Regular files by content; everything else (types, targets, devices) by signature.
	(cd "$2" && find . -type f) | while IFS= read -r f; do
		cmp -s "$2/$f" "$3/$f" || echo "$f"
	done >"$T/diff"
	if [ -s "$T/diff" ]; then
		fail "content differs: $(head -n 5 "$T/diff" | tr '\n' ' ')"
		return
	fi
	tree_signature "$2" "${4:-s}" | sed 's/^\(\S* d [0-9]* [0-9]* [0-9]*\) [0-9]* /\1 - /' >"$T/sig.src"
	tree_signature "$3" "${4:-s}" | sed 's/^\(\S* d [0-9]* [0-9]* [0-9]*\) [0-9]* /\1 - /' >"$T/sig.out"
	if ! cmp -s "$T/sig.src" "$T/sig.out"; then
		fail "metadata differs: $(diff "$T/sig.src" "$T/sig.out" | head -8 | tr '\n' '|')"
	fi
}

# can_loop_mount: 0 when this machine can mount a btrfs image over a loop device.
can_loop_mount() {
	[ "$(id -u)" -eq 0 ] || { LOOP_WHY="not root"; return 1; }
	command -v losetup >/dev/null 2>&1 || { LOOP_WHY="no losetup"; return 1; }
	grep -qw btrfs /proc/filesystems 2>/dev/null || modprobe btrfs 2>/dev/null
	grep -qw btrfs /proc/filesystems 2>/dev/null || { LOOP_WHY="the kernel has no btrfs"; return 1; }
	truncate -s 128M "$T/probe.img" && mkfs.btrfs -q -f "$T/probe.img" >/dev/null 2>&1 ||
		{ LOOP_WHY="mkfs.btrfs failed"; return 1; }
	mkdir -p "$T/probe"
	if ! mount -o loop "$T/probe.img" "$T/probe" 2>"$T/probe.err"; then
		LOOP_WHY="loop mount failed: $(head -c 200 "$T/probe.err")"
		return 1
	fi
	umount "$T/probe"
	rm -f "$T/probe.img"
	return 0
}

# leaf_patch_ready NAME: 0 when leaf_patch.py can patch and the kernel mount
# images here (python3, btrfs-map-logical, a loop mount), with PATCH set to
# the script and MP to a mount point made under $T; else a SKIP line for NAME
# saying why, and 1.
leaf_patch_ready() {
	command -v python3 >/dev/null || { skip "$1" "python3 is not installed"; return 1; }
	command -v btrfs-map-logical >/dev/null ||
		{ skip "$1" "btrfs-map-logical (btrfs-progs) is not installed"; return 1; }
	can_loop_mount || { skip "$1" "$LOOP_WHY"; return 1; }
	PATCH="$(dirname "$0")/leaf_patch.py"
	MP="$T/mnt"
	mkdir -p "$MP"
}

# Loop devices and mounts made by a test, undone on exit even after a failure.
LOOPS=""
MOUNTS=""
cleanup_mounts() {
	for m in $MOUNTS; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	for l in $LOOPS; do losetup -d "$l" 2>/dev/null; done
	MOUNTS=""
	LOOPS=""
}
trap 'cleanup_mounts; rm -rf "$T"' EXIT

# attach IMG: attaches a loop device, sets $LOOP to it and records it for cleanup.
# (Not in a command substitution: that subshell would lose the record.)
attach() {
	LOOP=$(losetup -f --show "$1") || return 1
	LOOPS="$LOOPS $LOOP"
}

# attach_all IMG...: a loop device for each, their names in $DEVS (in order);
# 1 after a failure when losetup fails.
attach_all() {
	DEVS=""
	for img in "$@"; do
		attach "$img" || { fail "losetup $img"; return 1; }
		DEVS="$DEVS $LOOP"
	done
}

# progs_check DEV: btrfs check --readonly on DEV (any device of the volume),
# a failure naming its first complaints.
progs_check() {
	btrfs check --readonly "$1" >"$T/progs.log" 2>&1 ||
		fail "btrfs check: $(grep -m3 -iE 'error|mismatch|missing' "$T/progs.log" | tr '\n' '|')"
}

# disk_bytes IMG: bytes the files of the top-level subvolume take on disk:
# each data extent once (disk_num_bytes) plus inline extents' stored bytes,
# from dump-tree (compression and defragmentation compare them).
disk_bytes() {
	btrfs inspect-internal dump-tree -t 5 "$1" 2>/dev/null | awk '
		/extent data disk byte/ { if ($5 != 0 && !seen[$5]++) sum += $7 }
		/inline extent data size/ { sum += $5 }
		END { print sum + 0 }'
}

# mount_dev MOUNTPOINT OPTIONS DEV...: mounts a (multi-device) btrfs.
mount_dev() {
	mp=$1
	opts=$2
	shift 2
	first=$1
	devs=""
	for d in "$@"; do devs="$devs${devs:+,}device=$d"; done
	mkdir -p "$mp"
	mount -t btrfs -o "$devs${opts:+,$opts}" "$first" "$mp" || return 1
	MOUNTS="$mp $MOUNTS"
}

unmount() {
	umount "$1" || return 1
	MOUNTS=$(echo "$MOUNTS" | sed "s#$1 ##")
}

detach_all() {
	cleanup_mounts
}
