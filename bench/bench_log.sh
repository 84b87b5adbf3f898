#!/bin/sh
# bench_log.sh - the fsync log tree's figures (bench/bench_log.c): bytes
# written and time per fsync of a 4 KiB append in a file system of 10,000
# files, with the log against a full commit per fsync, on ref (memory disk)
# and, side by side, on the kernel's btrfs (a 1 GiB mkfs.btrfs image with its
# defaults, as ref's, on a tmpfs file over a loop device; mounted with
# commit=3600 so that only the benchmark's own commits happen, then again with
# notreelog).  The kernel's ratio is the yardstick for ref's.
# The kernel half needs root and loop mounts; it says SKIP and why otherwise.
# Usage: bench/bench_log.sh BENCH_LOG
set -u
B=${1:?usage: bench_log.sh BENCH_LOG}
T=$(mktemp -d)
LOOP=""
cleanup() {
	mountpoint -q "$T/mnt" 2>/dev/null && umount "$T/mnt"
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	mountpoint -q "$T/tmpfs" 2>/dev/null && umount "$T/tmpfs"
	rm -rf "$T"
}
trap cleanup EXIT

"$B" fsync || exit 1
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.btrfs >/dev/null; then
	echo "bench-log fsync: SKIP kernel baseline (needs root and btrfs-progs)"
	exit 0
fi
mkdir -p "$T/tmpfs" "$T/mnt"
if ! mount -t tmpfs -o size=2G tmpfs "$T/tmpfs" 2>/dev/null; then
	echo "bench-log fsync: SKIP kernel baseline (no tmpfs mount here)"
	exit 0
fi
for opt in "" notreelog; do
	rm -f "$T/tmpfs/img"
	if ! truncate -s 1G "$T/tmpfs/img" || ! mkfs.btrfs -q -f "$T/tmpfs/img" >/dev/null ||
		! LOOP=$(losetup -f --show "$T/tmpfs/img" 2>/dev/null) ||
		! mount -o "commit=3600${opt:+,$opt}" "$LOOP" "$T/mnt" 2>/dev/null; then
		echo "bench-log fsync: SKIP kernel baseline (no loop mount here)"
		exit 0
	fi
	out=$("$B" fsync-host "$T/mnt" "/sys/block/$(basename "$LOOP")/stat" $opt) || exit 1
	echo "$out"
	case $opt in
	"") klog=$(echo "$out" | awk '{ print $4 }') ;;
	*) kfull=$(echo "$out" | awk '{ print $4 }') ;;
	esac
	umount "$T/mnt"
	losetup -d "$LOOP"
	LOOP=""
done
echo "$klog $kfull" | awk '{ printf "  kernel ratio: %.1fx fewer bytes with the log (the yardstick for ref'"'"'s)\n", $2 / $1 }'
