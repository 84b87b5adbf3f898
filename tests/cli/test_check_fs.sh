#!/bin/sh
# btrsim check's subvolume pass (ref/check_fs*.c) on images that mkfs.btrfs
# --rootdir makes: no error on clean ones (with and without NO_HOLES, with
# INODE_EXTREFs, xattrs, symlinks, sparse files), and an fs tree leaf that
# cannot be read is reported without stopping the check.  The corruptions of
# single fields are in tests/unit/test_check_fs.c.
. "$(dirname "$0")/lib.sh"

if ! command -v mkfs.btrfs >/dev/null 2>&1; then
	echo "SKIP check-fs: mkfs.btrfs is not installed"
	exit 0
fi

src=$T/src
mkdir -p "$src/d/sub" "$src/links" "$src/empty"
printf 'hello\n' >"$src/d/a"
head -c 300000 /dev/urandom >"$src/d/big"
head -c 2000 /dev/urandom >"$src/d/inline"
truncate -s 1M "$src/sparse"
printf 'middle' | dd of="$src/sparse" bs=1 seek=500000 conv=notrunc 2>/dev/null
ln -s d/a "$src/sym"
ln -s "$(printf 'x%.0s' $(seq 1 300))" "$src/longsym"
ln "$src/d/a" "$src/d/sub/a2"
long=$(printf 'n%.0s' $(seq 1 200))
# Names of 200 bytes: more than one leaf's worth of INODE_REF, so INODE_EXTREFs.
for i in $(seq 1 120); do ln "$src/d/a" "$src/links/${long}_$i"; done
mkfifo "$src/fifo"
if command -v setfattr >/dev/null 2>&1; then
	setfattr -n user.one -v 1 "$src/d/a" 2>/dev/null
	setfattr -n user.big -v "$(head -c 3000 /dev/zero | tr '\0' v)" "$src/d/big" 2>/dev/null
fi

img=$T/fs.img
for mix in default no-holes-off; do
	opts=""
	[ "$mix" = no-holes-off ] && opts="-O ^no-holes"
	rm -f "$img"
	truncate -s 160M "$img"
	# shellcheck disable=SC2086
	if ! mkfs.btrfs -q -f $opts --rootdir "$src" "$img" >"$T/mkfs.log" 2>&1; then
		echo "SKIP check-fs-clean-$mix: mkfs.btrfs failed: $(tail -n 1 "$T/mkfs.log")"
		continue
	fi
	run "check-fs-clean-$mix" 0 "$BTRSIM" check -v "$img"
	out_has '^no error found$'
	out_has '^fs tree 5: [0-9]+ inodes, [0-9]+ names'
	out_has '^fs tree -9: 1 inodes'
	done_check
done

# Every copy of the fs tree's first leaf gets a wrong byte (checksum not fixed).
leaf=$(btrfs inspect-internal dump-tree -t 5 "$img" 2>/dev/null | awk '/^leaf / {print $2; exit}')
if [ -z "$leaf" ] || ! command -v btrfs-map-logical >/dev/null 2>&1; then
	echo "SKIP check-fs-unreadable-leaf: cannot locate the fs tree's leaf"
else
	btrfs-map-logical -l "$leaf" "$img" 2>/dev/null | awk '/physical/ {print $6}' |
		while read -r phys; do
			printf '\377' | dd of="$img" bs=1 seek=$((phys + 200)) conv=notrunc 2>/dev/null
		done
	run check-fs-unreadable-leaf 1 "$BTRSIM" check "$img"
	out_has '^ERROR: root 5: cannot read'
	out_has '^found [0-9]+ errors?$'
	done_check
fi
