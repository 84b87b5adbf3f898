#!/bin/sh
# An inode flag of the ro-compat half that Linux does not know (bit 33: the
# high 32 bits hold ro-compat inode flags, VERITY the only one known), set
# by leaf_patch.py on a file the kernel wrote (issue 20, the tree-checker's
# check_inode_item):
#   - the kernel mounts it read-only and reads the file; btrfs check is clean;
#     ref reads the file alike and btrsim check is clean;
#   - the kernel refuses a writable mount ("unknown ro-compat flags detected
#     on writeable mount": the top level's root leaf holds the inode), and so
#     does ref (EUCLEAN), writing nothing.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

leaf_patch_ready inode-roflags || exit 0
img="$T/ro.img"
truncate -s 256M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1
head -c 300000 /dev/urandom >"$T/data"
NAME=inode-roflags-make
if attach "$img" && mount_dev "$MP" "" "$LOOP"; then
	cp "$T/data" "$MP/f"
	unmount "$MP" || fail "umount"
else
	fail "the kernel does not mount a new file system"
fi
cleanup_mounts
done_check

run inode-roflags-patch 0 python3 "$PATCH" inode-flags "$img" 5 257 0x200000000
done_check
check inode-roflags
run inode-roflags-ref-reads 0 "$BTRSIM" cat "$img" /f
cmp -s "$OUT" "$T/data" || fail "ref reads /f otherwise"
done_check

NAME=inode-roflags-kernel-ro
if attach "$img" && mount_dev "$MP" ro "$LOOP"; then
	cmp -s "$MP/f" "$T/data" || fail "the kernel reads /f otherwise"
	unmount "$MP" || fail "umount"
else
	fail "the kernel does not mount it read-only"
fi
cleanup_mounts
done_check

NAME=inode-roflags-kernel-rw
if attach "$img" && mount_dev "$MP" "" "$LOOP" 2>/dev/null; then
	fail "the kernel mounts it writable"
	unmount "$MP"
fi
cleanup_mounts
done_check

sum0=$(md5sum <"$img")
run inode-roflags-ref-write 1 "$BTRSIM" mkdir "$img" /x
err_has 'EUCLEAN.*unknown ro-compat inode flags on a writable mount'
[ "$(md5sum <"$img")" = "$sum0" ] || fail "the image changed"
done_check
