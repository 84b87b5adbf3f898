#!/bin/sh
# Orphans the kernel leaves when power goes (issue 20): a file unlinked while
# a process still holds it open keeps its inode and an ORPHAN_ITEM; a
# deleted subvolume waits for the cleaner with an ORPHAN_ITEM in the root
# tree.  The backing file is copied while mounted, so the copy holds them.
#   - btrsim check agrees with btrfs check (clean: orphans are no errors);
#   - the reading commands show what the kernel's mount of a copy shows;
#   - a writing command cleans up as the kernel's mount does: the orphaned
#     inode and its extents gone, its orphan item too (orphan.c), the deleted
#     subvolume dropped by the cleaner; both checkers clean, the kernel
#     mounts the result with the same content.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip kernel-orphans "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"
mkdir -p "$MP"

orphans() {
	btrfs inspect-internal dump-tree -t "$2" "$1" 2>/dev/null | grep -c 'key (ORPHAN ORPHAN_ITEM'
}

NAME=kernel-leaves-orphans
BAD=0
truncate -s 512M "$T/o.img"
mkfs.btrfs -q -f "$T/o.img" >/dev/null 2>&1 || fail "mkfs.btrfs"
if attach "$T/o.img" && mount_dev "$MP" commit=300 "$LOOP"; then
	head -c 300000 /dev/urandom >"$MP/held"
	echo keep >"$MP/keep"
	btrfs subvolume create "$MP/sv" >/dev/null
	i=0
	while [ $i -lt 300 ]; do echo "$i" >"$MP/sv/f$i"; i=$((i + 1)); done
	btrfs filesystem sync "$MP"
	exec 7<"$MP/held"
	rm "$MP/held"
	btrfs subvolume delete "$MP/sv" >/dev/null
	btrfs filesystem sync "$MP"
	cp --sparse=always "$T/o.img" "$T/oc.img"
	exec 7<&-
	unmount "$MP"
else
	fail "mount"
fi
cleanup_mounts
[ "$(orphans "$T/oc.img" fs)" -ge 1 ] || fail "no orphan item in the copy (the test's premise)"
done_check

run check-orphans 0 "$BTRSIM" check "$T/oc.img"
out_has '^no error found$'
progs_check "$T/oc.img"
done_check

# The kernel's view: a mount of another copy (its orphan cleanup runs).
NAME=read-orphans
BAD=0
cp --sparse=always "$T/oc.img" "$T/ok.img"
if attach "$T/ok.img" && mount_dev "$MP" "" "$LOOP"; then
	"$BTRSIM" manifest --host "$MP" | grep -v '^/ ' >"$T/kernel.mf"
	unmount "$MP"
else
	fail "kernel mount of the copy"
fi
cleanup_mounts
"$BTRSIM" manifest "$T/oc.img" | grep -v '^/ ' >"$T/ref.mf" || fail "manifest"
cmp -s "$T/kernel.mf" "$T/ref.mf" || fail "ref shows another tree: $(diff "$T/kernel.mf" "$T/ref.mf" | head -4 | tr '\n' '|')"
done_check

cp --sparse=always "$T/oc.img" "$T/w.img"
run write-cleans-orphans 0 "$BTRSIM" mkdir "$T/w.img" /after
[ "$(orphans "$T/w.img" fs)" = 0 ] || fail "the orphan item of the unlinked file is still there"
btrfs inspect-internal dump-tree -t fs "$T/w.img" | grep -q 'key (257 INODE_ITEM' &&
	fail "the orphaned inode is still there"
progs_check "$T/w.img"
done_check
run write-cleans-orphans-check 0 "$BTRSIM" check "$T/w.img"
out_has '^no error found$'
done_check
# The subvolume the kernel deleted, if its cleaner had not finished.
if [ "$(orphans "$T/oc.img" root)" -ge 1 ]; then
	run write-drops-deleted-subvolume 0 "$BTRSIM" subvolume sync "$T/w.img"
	[ "$(orphans "$T/w.img" root)" = 0 ] || fail "the deleted subvolume's orphan item is still there"
	btrfs inspect-internal dump-tree -t root "$T/w.img" | grep -q 'key (256 ROOT_ITEM' &&
		fail "the deleted subvolume's root item is still there"
	progs_check "$T/w.img"
	done_check
else
	skip write-drops-deleted-subvolume "the kernel's cleaner finished before the copy"
fi
NAME=write-cleans-orphans-kernel-reads
BAD=0
if attach "$T/w.img" && mount_dev "$MP" "" "$LOOP"; then
	"$BTRSIM" manifest --host "$MP" | grep -v -e '^/ ' -e '^/after ' >"$T/after.mf"
	cmp -s "$T/kernel.mf" "$T/after.mf" || fail "the kernel reads other content: $(diff "$T/kernel.mf" "$T/after.mf" | head -4 | tr '\n' '|')"
	unmount "$MP"
else
	fail "the kernel does not mount the image ref cleaned"
fi
cleanup_mounts
progs_check "$T/w.img"
done_check
