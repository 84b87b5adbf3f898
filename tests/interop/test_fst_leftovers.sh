#!/bin/sh
# Free-space-tree entries of no block group, and FREE_SPACE_INFO flag bits
# nobody defines (issue 20):
#   (1) mkfs.btrfs (6.2) makes temporary chunks, removes them, and leaves
#       their FREE_SPACE_INFO and extents in the free-space tree, ranges where
#       no block group exists (yet).  The kernel mounts and writes around
#       them, btrfs check says nothing; btrsim check neither, ref writes and
#       balances around them (its new chunks go above the highest), both
#       checkers stay clean and the kernel reads ref's result.
#   (2) a FREE_SPACE_INFO of a real block group with flag bit 0x80 (no
#       meaning): Linux 6.18's tree-checker has no rule for it (it mounts,
#       allocates from the group and writes the item back as it is) and
#       btrfs check says nothing: btrsim check says nothing either, and ref
#       writes into the group.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

leaf_patch_ready fst-leftovers || exit 0

# orphan_infos IMG: the FREE_SPACE_INFO starts that no block group has.
orphan_infos() {
	btrfs inspect-internal dump-tree -t extent "$1" 2>/dev/null |
		sed -n 's/.*key (\([0-9]*\) BLOCK_GROUP_ITEM .*/\1/p' | sort >"$T/bgs"
	btrfs inspect-internal dump-tree -t 10 "$1" 2>/dev/null |
		sed -n 's/.*key (\([0-9]*\) FREE_SPACE_INFO .*/\1/p' | sort >"$T/infos"
	comm -13 "$T/bgs" "$T/infos"
}

# kernel_reads NAME IMG: the kernel mounts ref's result and shows its files.
kernel_reads() {
	NAME=$1
	if attach "$2" && mount_dev "$MP" "" "$LOOP"; then
		"$BTRSIM" manifest --host "$MP" >"$T/k.man" 2>"$T/err" || fail "manifest --host: $(head -c 200 "$T/err")"
		unmount "$MP" || fail "umount"
	else
		fail "the kernel does not mount ref's result"
	fi
	cleanup_mounts
	"$BTRSIM" manifest "$2" >"$T/r.man" 2>"$T/err" || fail "btrsim manifest: $(head -c 200 "$T/err")"
	sed 1d "$T/k.man" >"$T/k.rest"
	sed 1d "$T/r.man" >"$T/r.rest"
	cmp -s "$T/k.rest" "$T/r.rest" || fail "the kernel shows another tree: $(diff "$T/r.rest" "$T/k.rest" | head -4 | tr '\n' '|')"
	done_check
}

head -c 3000000 /dev/urandom >"$T/data"

# (1)
img="$T/leftover.img"
truncate -s 512M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1
orphan_infos "$img" >"$T/left0"
run fst-leftovers-made 0 true
[ -s "$T/left0" ] || fail "mkfs.btrfs left no free-space entries outside block groups (nothing to test)"
done_check
check fst-leftovers-fresh
run fst-leftovers-write 0 "$BTRSIM" write -c "$img" /data "$T/data"
done_check
run fst-leftovers-mkdir 0 "$BTRSIM" mkdir "$img" /dir
done_check
run fst-leftovers-balance 0 "$BTRSIM" balance start "$img"
done_check
check fst-leftovers-after-ref
run fst-leftovers-kept 0 true
orphan_infos "$img" >"$T/left1"
cmp -s "$T/left0" "$T/left1" || fail "the entries changed: $(tr '\n' ' ' <"$T/left1")"
done_check
kernel_reads fst-leftovers-kernel "$img"
check fst-leftovers-after-kernel

# (2)
img="$T/flags.img"
truncate -s 512M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1
data_bg=$(btrfs inspect-internal dump-tree -t extent "$img" |
	sed -n 's/.*key (\([0-9]*\) BLOCK_GROUP_ITEM \([0-9]*\)).*/\1 \2/p' | while read -r s l; do
		btrfs inspect-internal dump-tree -t extent "$img" | grep -A1 "key ($s BLOCK_GROUP_ITEM $l)" |
			grep -q 'flags DATA' && echo "$s $l" && break
	done)
run fst-flags-patch 0 python3 "$PATCH" item-u32 "$img" 10 "${data_bg% *} FREE_SPACE_INFO ${data_bg#* }" 4 0x80
done_check
check fst-flags
run fst-flags-write 0 "$BTRSIM" write -c "$img" /data "$T/data"
done_check
check fst-flags-after-ref
kernel_reads fst-flags-kernel "$img"
check fst-flags-after-kernel
