#!/bin/sh
# Metadata without skinny extent items (issue 20): mkfs.btrfs -O
# ^skinny-metadata keeps a tree block's extent item as an EXTENT_ITEM with a
# tree block info (its first key and level).  ref writes on such a file
# system (files, a subvolume and its snapshot written on both sides, a tree
# removed from the shared subvolume, the snapshot deleted and dropped by the
# cleaner, quotas, a balance): both checkers pass after each step, no
# METADATA_ITEM appears, and the kernel mounts the result, reads every file,
# relocates the metadata itself (its balance finds blocks by their tree block
# info) and writes; ref then reads the kernel's result.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v mkfs.btrfs >/dev/null || { skip nonskinny "btrfs-progs is not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1
[ "$LOOP_OK" -eq 1 ] || skip nonskinny-kernel "$LOOP_WHY"
MP="$T/mnt"
mkdir -p "$MP" "$T/src"
i=1
while [ $i -le 300 ]; do head -c $((i * 53)) /dev/urandom >"$T/src/f$i"; i=$((i + 1)); done
head -c 400000 /dev/urandom >"$T/big"

IMG="$T/ns.img"
truncate -s 512M "$IMG"
mkfs.btrfs -q -f -O ^skinny-metadata -n 4096 "$IMG" >/dev/null 2>&1 || fail "mkfs.btrfs"

# both_clean NAME: btrsim check and btrfs check pass, and no METADATA_ITEM.
both_clean() {
	run "$1-checked" 0 "$BTRSIM" check "$IMG"
	progs_check "$IMG"
	btrfs inspect-internal dump-tree -t extent "$IMG" | grep -q METADATA_ITEM &&
		fail "a METADATA_ITEM on a file system without skinny metadata"
	done_check
}

run nonskinny-put 0 "$BTRSIM" put "$IMG" "$T/src" /a
done_check
both_clean nonskinny-put
run nonskinny-snapshot 0 "$BTRSIM" subvolume create "$IMG" /sv
run nonskinny-snapshot 0 "$BTRSIM" put "$IMG" "$T/src" /sv/t
run nonskinny-snapshot 0 "$BTRSIM" subvolume snapshot "$IMG" /sv /snap
run nonskinny-snapshot 0 "$BTRSIM" write "$IMG" /snap/t/f5 "$T/big"
run nonskinny-snapshot 0 "$BTRSIM" write --offset 8192 "$IMG" /sv/t/f9 "$T/big"
done_check
both_clean nonskinny-snapshot
run nonskinny-shared-removed 0 "$BTRSIM" rm -r "$IMG" /sv/t
run nonskinny-shared-removed 0 "$BTRSIM" subvolume delete "$IMG" /snap
run nonskinny-shared-removed 0 "$BTRSIM" subvolume sync "$IMG"
done_check
both_clean nonskinny-shared-removed
run nonskinny-quota-balance 0 "$BTRSIM" qgroup enable "$IMG"
run nonskinny-quota-balance 0 "$BTRSIM" put "$IMG" "$T/src" /b
run nonskinny-quota-balance 0 "$BTRSIM" balance start "$IMG"
done_check
both_clean nonskinny-quota-balance

if [ "$LOOP_OK" -eq 1 ]; then
	run nonskinny-kernel 0 true
	if attach "$IMG" && mount_dev "$MP" "" "$LOOP"; then
		diff -r "$T/src" "$MP/a" >/dev/null && diff -r "$T/src" "$MP/b" >/dev/null ||
			fail "the kernel reads other files"
		btrfs balance start -m "$MP" >/dev/null 2>&1 || fail "the kernel's metadata balance"
		cp "$T/big" "$MP/a/kernel-wrote"
		unmount "$MP" || fail "umount"
	else
		fail "the kernel cannot mount ref's image"
	fi
	cleanup_mounts
	progs_check "$IMG"
	done_check
	run nonskinny-ref-reads-kernel 0 "$BTRSIM" cat "$IMG" /a/kernel-wrote
	cmp -s "$OUT" "$T/big" || fail "ref reads another /a/kernel-wrote"
	done_check
	run nonskinny-ref-after-kernel 0 "$BTRSIM" rm -r "$IMG" /b
	done_check
	both_clean nonskinny-ref-after-kernel
fi
