#!/bin/sh
# The corruption sweep (tests/sweep/corrupt_sweep.c) over images made by
# mkfs.btrfs: every tree block corrupted in turn, with and without a fixed-up
# checksum, on DUP and on single metadata.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

SWEEP="$(dirname "$BTRSIM")/tests/corrupt-sweep"
command -v mkfs.btrfs >/dev/null || { skip sweep "mkfs.btrfs is not installed"; exit 0; }
[ -x "$SWEEP" ] || { echo "FAIL sweep: $SWEEP is not built"; exit 1; }

mkdir -p "$T/src/d"
echo small >"$T/src/small"
head -c 300000 /dev/urandom >"$T/src/d/big"
ln -s small "$T/src/link"
for i in $(seq 1 150); do echo "$i" >"$T/src/d/f$i"; done

for meta in dup single; do
	truncate -s 256M "$T/$meta.img"
	mkfs.btrfs -q -f -m "$meta" -n 4096 --rootdir "$T/src" "$T/$meta.img" >/dev/null 2>&1 ||
		{ skip "sweep-$meta" "mkfs.btrfs failed"; continue; }
	run "sweep-$meta" 0 timeout 600 "$SWEEP" "$T/$meta.img"
	out_has '^[0-9]+ passed, 0 failed$'
	done_check
done
