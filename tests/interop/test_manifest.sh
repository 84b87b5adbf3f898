#!/bin/sh
# btrsim manifest as the judge of interop: the manifest of an image as btrsim
# reads it (ref/) must equal, byte for byte, the manifest of the same image
# mounted by the kernel (--host on the mount point), inode numbers and mtimes
# included.  Images: mkfs.btrfs --rootdir of a tree with every shape that
# matters, then the same image after the kernel changed it (writes, renames,
# unlinks, subvolumes, snapshots, zstd compression, reflinks, devices), a
# two-device RAID1 read whole and degraded, and a file whose only copy is
# damaged (exit 1, one line).  Without loop mounts each check says SKIP and why.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v mkfs.btrfs >/dev/null || { skip manifest-kernel "mkfs.btrfs is not installed"; exit 0; }
if ! can_loop_mount; then
	skip manifest-kernel "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"
MFLAGS="--ino --times"

# A source tree: files empty, inline, 200 KiB, sparse; nested directories;
# symlinks; hard links; odd names; xattrs; modes; owners; a fifo and a device.
make_tree() {
	d=$1
	mkdir -p "$d/a/b/c/d" "$d/empty-dir" "$d/many"
	: >"$d/empty"
	printf 'small inline file\n' >"$d/inline"
	head -c 204800 /dev/urandom >"$d/a/200k"
	truncate -s 3M "$d/sparse"
	printf 'in the middle' | dd of="$d/sparse" bs=1 seek=1200000 conv=notrunc 2>/dev/null
	seq 1 30000 >"$d/a/b/text"
	echo deep >"$d/a/b/c/d/bottom"
	ln -s a/200k "$d/rel-link"
	ln -s /nonexistent/target "$d/dangling"
	ln -s "$(printf 'x%.0s' $(seq 1 300))" "$d/long-link"
	echo linked >"$d/a/hard"
	ln "$d/a/hard" "$d/hard-2"
	ln "$d/a/hard" "$d/a/b/c/hard-3"
	echo space >"$d/with space"
	echo nl >"$d/$(printf 'new\nline')"
	echo tab >"$d/$(printf 'tab\there')"
	echo bs >"$d/back\\slash"
	echo dash >"$d/-dash"
	echo utf >"$d/$(printf '\303\251t\303\251 \342\202\254 \360\237\230\200')"
	echo long >"$d/$(printf 'n%.0s' $(seq 1 255))"
	for i in $(seq 1 150); do echo "$i" >"$d/many/f$i"; done
	setfattr -n user.comment -v "hello xattr" "$d/inline"
	setfattr -n user.empty "$d/a/200k"
	setfattr -n user.bin -v 0x00ff0a20 "$d/a"
	setfattr -n trusted.t -v x "$d/empty-dir" 2>/dev/null || true
	chmod 4750 "$d/inline"
	chmod 1777 "$d/empty-dir"
	chmod 2755 "$d/a/b"
	chmod 000 "$d/a/b/text"
	chown 1234:5678 "$d/a/200k" "$d/a/b/c"
	chown -h 77:88 "$d/rel-link"
	mkfifo "$d/fifo"
	mknod "$d/null-dev" c 1 3
}

# compare NAME IMAGES...: the manifest of the images equals the kernel's view
# of them (mounted read-only, so nothing changes in between).  MANIFEST_OPTS
# go to the image side only (e.g. --degraded); HOST_SUB names a directory
# below the mount point (both set for one call and reset after, as a prefix
# assignment to a function call may outlive the call in some shells).  The caller adds its checks, then done_check.
compare() {
	name=$1
	shift
	# shellcheck disable=SC2086
	run "$name" 0 "$BTRSIM" manifest $MFLAGS ${MANIFEST_OPTS:-} "$@"
	cp "$OUT" "$T/ref.txt"
	if [ "$BAD" -eq 0 ]; then
		if ! mount_dev "$MP" ro $DEVS; then
			fail "the kernel could not mount the image"
		else
			# shellcheck disable=SC2086
			"$BTRSIM" manifest $MFLAGS --host "$MP${HOST_SUB:-}" >"$T/kernel.txt" 2>"$T/kernel.err" ||
				fail "manifest --host failed: $(head -c 300 "$T/kernel.err")"
			unmount "$MP"
			[ "$BAD" -eq 0 ] && ! cmp -s "$T/ref.txt" "$T/kernel.txt" &&
				fail "ref's view differs from the kernel's (< ref, > kernel): $(diff "$T/ref.txt" "$T/kernel.txt" | head -12 | tr '\n' '|')"
		fi
	fi
}

# ---- (1) mkfs.btrfs --rootdir ----

make_tree "$T/src"
IMG="$T/rootdir.img"
truncate -s 512M "$IMG"
if ! mkfs.btrfs -q -f --rootdir "$T/src" "$IMG" >"$T/mkfs.log" 2>&1; then
	skip manifest-rootdir "mkfs.btrfs --rootdir failed: $(tail -n 1 "$T/mkfs.log")"
	exit 0
fi
attach "$IMG" || { skip manifest-rootdir "losetup failed"; exit 0; }
DEVS=$LOOP
compare manifest-rootdir "$IMG"
done_check

# The manifest is reproducible and its lines sorted as LC_ALL=C sort sorts.
run manifest-rootdir-again 0 "$BTRSIM" manifest $MFLAGS "$IMG"
cmp -s "$OUT" "$T/ref.txt" || fail "two runs differ"
LC_ALL=C sort "$OUT" | cmp -s - "$OUT" || fail "not in LC_ALL=C sort order"
grep -q '^/new\\x0aline f ' "$OUT" || fail "the name with a newline is not escaped"
[ "$(grep -c '^/many/f' "$OUT")" -eq 150 ] || fail "not 150 files in /many"
done_check

# The host walk enters the subvolumes of its own btrfs only: a tmpfs and
# another btrfs mounted below are listed (their mount points) but not entered.
NAME=manifest-host-other-fs
truncate -s 256M "$T/other.img"
mkdir -p "$T/osrc"
echo other >"$T/osrc/other-file"
mkfs.btrfs -q -f --rootdir "$T/osrc" "$T/other.img" >/dev/null 2>&1
if ! mount_dev "$MP" ro $DEVS; then
	fail "mount failed"
elif ! mount -t tmpfs none "$MP/a/b/c/d"; then
	fail "mount -t tmpfs failed"
else
	MOUNTS="$MP/a/b/c/d $MOUNTS"
	echo hidden >"$MP/a/b/c/d/tmpfs-file"
	if ! mount -o loop,ro "$T/other.img" "$MP/empty-dir"; then
		fail "mounting a second btrfs failed"
	else
		MOUNTS="$MP/empty-dir $MOUNTS"
		run manifest-host-other-fs 0 "$BTRSIM" manifest --host "$MP"
		out_has '^/a/b/c/d d '
		out_has '^/empty-dir d '
		grep -q '^/a/b/c/d/' "$OUT" && fail "entered the tmpfs"
		grep -q '^/empty-dir/' "$OUT" && fail "entered the other btrfs"
	fi
fi
done_check
cleanup_mounts
attach "$IMG"
DEVS=$LOOP

# ---- (2) the kernel changes the image ----

if ! mount_dev "$MP" compress=zstd $DEVS; then
	fail "mount -o compress=zstd failed"
else
	(
		cd "$MP" || exit 1
		seq 1 200000 >compressible
		head -c 300000 /dev/urandom >random
		echo appended >>inline
		dd if=/dev/urandom of=a/200k bs=4096 seek=10 count=3 conv=notrunc 2>/dev/null
		truncate -s 1000 a/b/c/d/bottom
		truncate -s 5M sparse
		mv "with space" a/b/moved
		mv a/b/c a/c-renamed
		rm "hard-2" "$(printf 'tab\there')"
		rm -r many
		mkdir -p new/dir
		ln a/hard new/dir/hard-4
		chmod 640 random
		chown 4321:8765 compressible
		setfattr -n user.comment -v "changed" inline
		setfattr -x user.empty a/200k
		setfattr -n user.new -v 0x0102 new
		mknod kernel-dev c 1 3
		mknod kernel-blk b 8 1
		fallocate -l 1M prealloc 2>/dev/null || true
		dd if=/dev/urandom of=prealloc bs=4096 seek=5 count=2 conv=notrunc 2>/dev/null
		btrfs -q subvolume create vol >/dev/null
		seq 1 5000 >vol/text
		echo v >vol/small
		mkdir vol/d
		ln -s ../text vol/d/link
		cp --reflink=always random vol/reflinked 2>/dev/null || cp random vol/reflinked
		btrfs -q subvolume snapshot vol snap >/dev/null
		btrfs -q subvolume snapshot -r vol rosnap >/dev/null
		echo changed >vol/small
		rm vol/text
		btrfs -q subvolume create vol/nested >/dev/null
		echo nested >vol/nested/n
		echo in-snap >snap/added
	) || fail "changing the mounted image failed"
	unmount "$MP" || fail "umount failed"
fi
compare manifest-kernel-changed "$IMG"
grep -q '^/vol/nested/n f ' "$T/ref.txt" || fail "no /vol/nested/n"
grep -q '^/kernel-dev c 644 0 0 1 0 1,3' "$T/ref.txt" || fail "the device is not c 1,3: $(grep '^/kernel-dev' "$T/ref.txt")"
done_check

# One subvolume, by path and by id, against the kernel's view of its directory.
HOST_SUB=/vol
compare manifest-kernel-subvol-path --subvol /vol "$IMG"
done_check
snapid=$("$BTRSIM" ls -i "$IMG" / | awk '$2 == "snap" { split($1, a, ":"); print a[1] }')
HOST_SUB=/snap
compare manifest-kernel-subvol-id --subvol "$snapid" "$IMG"
done_check
HOST_SUB=""
cleanup_mounts

# ---- A snapshot of a directory that holds a subvolume ----
# The snapshot keeps the directory entry of the subvolume, but no ROOT_REF
# backs it: the kernel shows an empty directory there (inode 2, mode 0755,
# owner 0:0, size 0, one link, no xattrs) and ref must too.
IMG="$T/stale.img"
truncate -s 512M "$IMG"
mkfs.btrfs -q -f "$IMG" >/dev/null 2>&1
attach "$IMG"
DEVS=$LOOP
if mount_dev "$MP" "" $DEVS; then
	btrfs -q subvolume create "$MP/outer" >/dev/null
	btrfs -q subvolume create "$MP/outer/inner" >/dev/null
	echo in >"$MP/outer/inner/f"
	btrfs -q subvolume snapshot "$MP/outer" "$MP/snap-of-outer" >/dev/null
	btrfs -q subvolume snapshot "$MP" "$MP/snap-of-top" >/dev/null
	unmount "$MP"
	# (No --times: the kernel stamps that empty directory with the time it
	# made its in-memory inode.)
	MFLAGS=--ino
	compare manifest-kernel-stale-subvol-entry "$IMG"
	done_check
	MFLAGS="--ino --times"
else
	skip manifest-kernel-stale-subvol-entry "mount failed"
fi
cleanup_mounts

# ---- Two devices, RAID1: any order, and degraded ----

truncate -s 512M "$T/r1.1.img" "$T/r1.2.img"
attach "$T/r1.1.img"
DEVS=$LOOP
attach "$T/r1.2.img"
DEVS="$DEVS $LOOP"
# shellcheck disable=SC2086
if mkfs.btrfs -q -f -m raid1 -d raid1 --rootdir "$T/src" $DEVS >"$T/mkfs.log" 2>&1 ||
	{ mkfs.btrfs -q -f -m raid1 -d raid1 $DEVS >"$T/mkfs.log" 2>&1 &&
		mount_dev "$MP" "" $DEVS && cp -a "$T/src/." "$MP/" && unmount "$MP"; }; then
	compare manifest-raid1 "$T/r1.2.img" "$T/r1.1.img"
	done_check
	MANIFEST_OPTS=--degraded
	compare manifest-raid1-degraded "$T/r1.2.img"
	done_check
	MANIFEST_OPTS=""
	run manifest-raid1-missing 1 "$BTRSIM" manifest "$T/r1.1.img"
	err_has 'missing device'; err_lines 1; out_empty; done_check
else
	skip manifest-raid1 "mkfs.btrfs -m raid1 -d raid1 failed: $(tail -n 1 "$T/mkfs.log")"
fi
cleanup_mounts

# ---- A file whose only copy is damaged: exit 1, one line naming it ----

IMG="$T/damaged.img"
truncate -s 512M "$IMG"
mkdir -p "$T/dsrc/dir"
head -c 65536 /dev/urandom >"$T/dsrc/dir/data"
echo fine >"$T/dsrc/fine"
mkfs.btrfs -q -f -d single -m dup --rootdir "$T/dsrc" "$IMG" >/dev/null 2>&1
ino=$("$BTRSIM" ls -i "$IMG" /dir | awk '$2 == "data" { split($1, a, ":"); print a[2] }')
logical=$("$BTRSIM" dump-tree -t fs "$IMG" 2>/dev/null |
	grep -A2 "key ($ino EXTENT_DATA 0)" | awk '/disk byte/ { print $5 }')
where=$("$BTRSIM" map "$IMG" "$((logical + 4096))" 2>/dev/null | awk '/^copy 0:/ { print $5 }')
NAME=manifest-damaged-file
if [ -z "$where" ]; then
	fail "could not locate the data (inode '$ino', logical '$logical')"
	done_check
else
	printf 'garbage!' | dd of="$IMG" bs=1 seek="$where" conv=notrunc 2>/dev/null
	run manifest-damaged-file 1 "$BTRSIM" manifest "$IMG"
	err_has '^btrsim manifest: /dir/data: '; err_lines 1; out_empty; done_check
fi
