#!/bin/sh
# Compressed extents in a NODATASUM file (issue 20): what older kernels left
# (they compressed such files, writing no checksums), made here on a file the
# kernel compressed (-o compress-force=zstd), with leaf_patch.py setting the
# inode's NODATASUM flag and emptying the csum tree (btrfs-progs and Linux
# 6.18 have no tool that makes the state; 6.18 no longer compresses such
# files).  The same with the checksum items left in place.  On each:
#   - the kernel and ref read the file alike;
#   - btrsim check's verdict equals btrfs check's: both call the extents
#     bad (btrfs check: "bad file extent", its test of compressed extents
#     without csum);
#   - ref writes into the file and beside it; the kernel reads ref's result
#     alike, and the verdicts stay equal.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

leaf_patch_ready nodatasum || exit 0

# The kernel compresses one file, 1.4 MB of text (eleven zstd extents), and
# nothing else holds data: the csum tree is one leaf of its checksums.
base="$T/base.img"
truncate -s 256M "$base"
mkfs.btrfs -q -f "$base" >/dev/null 2>&1
NAME=nodatasum-make
if attach "$base" && mount_dev "$MP" compress-force=zstd "$LOOP"; then
	i=0
	while [ $i -lt 40000 ]; do
		printf 'line %06d of a compressible file\n' $i
		i=$((i + 1))
	done >"$MP/f"
	unmount "$MP" || fail "umount"
else
	fail "the kernel does not mount a new file system"
fi
cleanup_mounts
btrfs inspect-internal dump-tree -t 5 "$base" | grep -q 'extent compression 3 (zstd)' ||
	fail "the kernel did not compress the file"
done_check
head -c 10000 /dev/urandom >"$T/patch.bin"

# verdicts NAME IMG: btrfs check and btrsim check both find errors, btrsim's
# naming the extents.
verdicts() {
	run "$1-btrfs-check" 1 btrfs check --readonly "$2"
	cat "$OUT" "$ERR" | grep -q 'bad file extent' || fail "btrfs check does not say 'bad file extent'"
	done_check
	run "$1-btrsim-check" 1 "$BTRSIM" check "$2"
	out_has 'compressed file extent in a NODATASUM file'
	done_check
}

# kernel_reads NAME IMG: the kernel's read-only mount shows /f as ref does.
kernel_reads() {
	NAME=$1-kernel-reads
	"$BTRSIM" cat "$2" /f >"$T/ref.f" 2>"$T/err" || fail "btrsim cat: $(head -c 200 "$T/err")"
	if attach "$2" && mount_dev "$MP" ro "$LOOP"; then
		cmp -s "$MP/f" "$T/ref.f" || fail "the kernel reads /f otherwise than ref"
		if [ -n "${3:-}" ]; then
			cmp -s "$MP/new" "$T/patch.bin" || fail "the kernel reads ref's /new otherwise"
		fi
		unmount "$MP" || fail "umount"
	else
		fail "the kernel does not mount it"
	fi
	cleanup_mounts
	done_check
}

for variant in no-csums with-csums; do
	img="$T/$variant.img"
	cp "$base" "$img"
	run "$variant-patch" 0 python3 "$PATCH" inode-flags "$img" 5 257 1
	done_check
	if [ $variant = no-csums ]; then
		run "$variant-empty-csum-tree" 0 python3 "$PATCH" empty "$img" csum
		done_check
	fi
	run "$variant-state" 0 true
	btrfs inspect-internal dump-tree -t 5 "$img" | grep -q 'flags 0x1(NODATASUM)' ||
		fail "the flag is not set"
	n=$(btrfs inspect-internal dump-tree -t csum "$img" | grep -c EXTENT_CSUM)
	if [ $variant = no-csums ]; then [ "$n" -eq 0 ] || fail "$n csum items left"; fi
	if [ $variant = with-csums ]; then [ "$n" -gt 0 ] || fail "no csum item"; fi
	done_check
	verdicts "$variant" "$img"
	kernel_reads "$variant" "$img"

	# ref overwrites part of a compressed extent and writes a new file
	run "$variant-ref-write" 0 "$BTRSIM" write -o 200000 "$img" /f "$T/patch.bin"
	done_check
	run "$variant-ref-create" 0 "$BTRSIM" write -c "$img" /new "$T/patch.bin"
	done_check
	verdicts "$variant-after-write" "$img"
	kernel_reads "$variant-after-write" "$img" new
done
