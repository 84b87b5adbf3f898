#!/bin/sh
# bench_fs.sh - the write path's figures (bench/bench_fs.c), each beside its
# baseline in the same run:
#   - sequential write of SEQ_MIB (default 1024) MiB vs memcpy + crc32c;
#   - metadata: N (100000) empty files in D (1000) directories created, stat'ed
#     and deleted, on ref (memory disk) and on the kernel's btrfs over a loop
#     device on a tmpfs file (mkfs.btrfs defaults); ratio = kernel time / ref
#     time per phase (>= 1.0: ref at least as fast); ref's peak RSS.
# The kernel half needs root and loop mounts; it says SKIP and why otherwise.
# On a terminal, a progress line of its 3 steps (mk/progress.sh).
# Usage: bench/bench_fs.sh BENCH_FS [SEQ_MIB] [N] [D]
set -u
B=${1:?usage: bench_fs.sh BENCH_FS [SEQ_MIB] [N] [D]}
SEQ=${2:-1024}
N=${3:-100000}
D=${4:-1000}
T=$(mktemp -d)
. "$(dirname "$0")/../mk/progress.sh"
LOOP=""
cleanup() {
	progress_clear
	mountpoint -q "$T/mnt" 2>/dev/null && umount "$T/mnt"
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	mountpoint -q "$T/tmpfs" 2>/dev/null && umount "$T/tmpfs"
	rm -rf "$T"
}
trap cleanup EXIT

progress_init bench_fs
progress_steps 0 3 "sequential write, $SEQ MiB"
out=$("$B" write "$SEQ") || exit 1
progress_echo "$out"

progress_steps 1 3 "metadata on ref, $N files"
ref=$("$B" meta-ref "$N" "$D") || exit 1
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.btrfs >/dev/null; then
	progress_echo "$ref"
	echo "bench-fs metadata: SKIP kernel baseline (needs root and btrfs-progs)"
	exit 0
fi
progress_steps 2 3 "metadata on the kernel, $N files"
mkdir -p "$T/tmpfs" "$T/mnt"
if ! mount -t tmpfs -o size=6G tmpfs "$T/tmpfs" 2>/dev/null ||
	! truncate -s 4G "$T/tmpfs/img" || ! mkfs.btrfs -q -f "$T/tmpfs/img" >/dev/null ||
	! LOOP=$(losetup -f --show "$T/tmpfs/img" 2>/dev/null) || ! mount "$LOOP" "$T/mnt" 2>/dev/null; then
	progress_echo "$ref"
	echo "bench-fs metadata: SKIP kernel baseline (no tmpfs or loop mount here)"
	exit 0
fi
kern=$("$B" meta-host "$T/mnt" "$N" "$D") || exit 1
progress_clear
echo "metadata, $N files in $D directories (seconds; ratio = kernel / ref, goal >= 1.0):"
echo "$kern"
echo "$ref"
echo "$kern $ref" | awk '{ printf "ratio create %.2f stat %.2f delete %.2f; ref peak RSS %.0f MiB (bound: 64 MiB dirty metadata + 128 MiB block cache + the working set)\n", $3 / $12, $5 / $14, $7 / $16, $18 / 1024 }'
