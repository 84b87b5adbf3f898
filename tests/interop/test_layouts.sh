#!/bin/sh
# Extent-tree layouts other than mkfs.btrfs's default (issue 20), each
# written by ref and judged by both checkers and the kernel:
#   nonskinny  mkfs.btrfs -O ^skinny-metadata: a tree block's extent item is
#              an EXTENT_ITEM with a tree block info (first key and level);
#              no METADATA_ITEM may appear;
#   mixed      mkfs.btrfs -M: data and metadata share block groups
#              (DATA|METADATA), new chunks are mixed ones too.
# ref writes (files, a subvolume and its snapshot written on both sides, a
# tree removed from the shared subvolume, the snapshot deleted and dropped by
# the cleaner, quotas, a file large enough for new chunks, a balance): both
# checkers pass after each step; the kernel mounts the result, reads every
# file, relocates the metadata itself and writes; ref reads that back.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v mkfs.btrfs >/dev/null || { skip layouts "btrfs-progs is not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1
[ "$LOOP_OK" -eq 1 ] || skip layouts-kernel "$LOOP_WHY"
MP="$T/mnt"
mkdir -p "$MP" "$T/src"
i=1
while [ $i -le 300 ]; do head -c $((i * 53)) /dev/urandom >"$T/src/f$i"; i=$((i + 1)); done
head -c 400000 /dev/urandom >"$T/big"
head -c 150000000 /dev/urandom >"$T/huge"

# both_clean NAME: btrsim check and btrfs check pass, and the layout holds.
both_clean() {
	run "$1-checked" 0 "$BTRSIM" check "$IMG"
	progs_check "$IMG"
	case $LAYOUT in
	nonskinny)
		btrfs inspect-internal dump-tree -t extent "$IMG" | grep -q METADATA_ITEM &&
			fail "a METADATA_ITEM on a file system without skinny metadata" ;;
	mixed)
		btrfs inspect-internal dump-tree -t chunk "$IMG" | grep 'stripe_len .* type ' |
			grep -v SYSTEM | grep -qv 'DATA|METADATA' && fail "a chunk that is not mixed" ;;
	esac
	done_check
}

for LAYOUT in nonskinny mixed; do
IMG="$T/$LAYOUT.img"
truncate -s 1G "$IMG"
case $LAYOUT in
nonskinny) opts="-O ^skinny-metadata -n 4096" ;;
mixed) opts="-M" ;;
esac
# shellcheck disable=SC2086
mkfs.btrfs -q -f $opts "$IMG" >/dev/null 2>&1 || fail "mkfs.btrfs $opts"

run $LAYOUT-put 0 "$BTRSIM" put "$IMG" "$T/src" /a
done_check
both_clean $LAYOUT-put
run $LAYOUT-snapshot 0 "$BTRSIM" subvolume create "$IMG" /sv
run $LAYOUT-snapshot 0 "$BTRSIM" put "$IMG" "$T/src" /sv/t
run $LAYOUT-snapshot 0 "$BTRSIM" subvolume snapshot "$IMG" /sv /snap
run $LAYOUT-snapshot 0 "$BTRSIM" write "$IMG" /snap/t/f5 "$T/big"
run $LAYOUT-snapshot 0 "$BTRSIM" write --offset 8192 "$IMG" /sv/t/f9 "$T/big"
done_check
both_clean $LAYOUT-snapshot
run $LAYOUT-shared-removed 0 "$BTRSIM" rm -r "$IMG" /sv/t
run $LAYOUT-shared-removed 0 "$BTRSIM" subvolume delete "$IMG" /snap
run $LAYOUT-shared-removed 0 "$BTRSIM" subvolume sync "$IMG"
done_check
both_clean $LAYOUT-shared-removed
run $LAYOUT-quota-balance 0 "$BTRSIM" qgroup enable "$IMG"
run $LAYOUT-quota-balance 0 "$BTRSIM" put "$IMG" "$T/src" /b
run $LAYOUT-quota-balance 0 "$BTRSIM" put "$IMG" "$T/huge" /huge
run $LAYOUT-quota-balance 0 "$BTRSIM" balance start "$IMG"
if [ "$LAYOUT" = mixed ]; then
	# as the kernel: mixed groups take data and metadata filters together
	run mixed-balance-m-alone 1 "$BTRSIM" balance start -m "$IMG"
	err_has 'EINVAL.*mixed groups data and metadata options must be the same'
fi
done_check
both_clean $LAYOUT-quota-balance

if [ "$LOOP_OK" -eq 1 ]; then
	run $LAYOUT-kernel 0 true
	if attach "$IMG" && mount_dev "$MP" "" "$LOOP"; then
		diff -r "$T/src" "$MP/a" >/dev/null && diff -r "$T/src" "$MP/b" >/dev/null ||
			fail "the kernel reads other files"
		# (mixed groups take data and metadata filters together)
		bal="-m"
		[ "$LAYOUT" = mixed ] && bal="-d -m"
		# shellcheck disable=SC2086
		btrfs balance start $bal "$MP" >/dev/null 2>&1 || fail "the kernel's balance $bal"
		cp "$T/big" "$MP/a/kernel-wrote"
		unmount "$MP" || fail "umount"
	else
		fail "the kernel cannot mount ref's image"
	fi
	cleanup_mounts
	progs_check "$IMG"
	done_check
	run $LAYOUT-ref-reads-kernel 0 "$BTRSIM" cat "$IMG" /a/kernel-wrote
	cmp -s "$OUT" "$T/big" || fail "ref reads another /a/kernel-wrote"
	done_check
	run $LAYOUT-ref-after-kernel 0 "$BTRSIM" rm -r "$IMG" /b
	done_check
	both_clean $LAYOUT-ref-after-kernel
fi
done

# A nearly full mixed volume, balanced by the kernel until ENOSPC stops it,
# then by ref, three times: both checkers clean after each of ref's.  (This
# caught a tree block's extent item left at another block's level: a block
# made in one round of a commit, let go and its space given to a block of
# another level in the next round, reused the item without changing it.)
if [ "$LOOP_OK" -eq 1 ]; then
	IMG="$T/full-mixed.img"
	truncate -s 512M "$IMG"
	mkfs.btrfs -q -f -M "$IMG" >/dev/null 2>&1 || fail "mkfs.btrfs -M"
	head -c 300000000 /dev/urandom >"$T/huge"
	run full-mixed-build 0 "$BTRSIM" put "$IMG" "$T/src" /a
	run full-mixed-build 0 "$BTRSIM" put "$IMG" "$T/huge" /huge
	run full-mixed-build 0 "$BTRSIM" balance start "$IMG"
	done_check
	for round in 1 2 3; do
		run "full-mixed-round-$round" 0 true
		if attach "$IMG" && mount_dev "$MP" "" "$LOOP"; then
			btrfs balance start "$MP" >/dev/null 2>&1 # (ENOSPC part-way, or done)
			unmount "$MP" || fail "umount"
		else
			fail "mount"
		fi
		cleanup_mounts
		"$BTRSIM" balance start -d -m "$IMG" >/dev/null 2>"$T/err" || fail "ref's balance: $(cat "$T/err")"
		"$BTRSIM" check "$IMG" >"$T/ref.log" 2>&1 ||
			fail "btrsim check: $(grep -m2 ERROR "$T/ref.log" | tr '\n' '|')"
		progs_check "$IMG"
		done_check
	done
fi
