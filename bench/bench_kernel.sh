#!/bin/sh
# bench_kernel.sh BTRSIM - the kernel as the crash harness's target (issue 24):
#   record   the FUSE recording's overhead: one IO job (64 files of 1 MiB, each
#            written and fsynced with dd conv=fsync, then 128 MiB written and
#            synced) on a btrfs over a loop device whose file is on tmpfs,
#            and on one whose file is a sim disk served by 'btrsim
#            kernel-disks'; best of 3 each, side by side: the ratio is the
#            FUSE disk's time over tmpfs's (1.0: no overhead);
#   explore  'btrsim campaign --target kernel --seq 1', all 222 workloads
#            (BENCH_KERNEL_LIMIT=N: the first N; the first ones have a single
#            crash state each), defaults (--max-subset 6 --samples 24 --torn 4,
#            one worker per core): kernel crash states judged per second
#            and seconds per workload, beside CrashMonkey's published anchor
#            for btrfs (about 2.2 s per seq-1 workload, crash points at fsync
#            only, no reordering; goal: at least 2x faster while exploring
#            the reorderings within each flush epoch).
# Needs root, /dev/fuse, loop devices and btrfs-progs: SKIP otherwise.
set -u
B=${1:?usage: bench_kernel.sh BTRSIM}
LIMIT=${BENCH_KERNEL_LIMIT:-0}
D=$(mktemp -d /dev/shm/bench_kernel.XXXXXX 2>/dev/null || mktemp -d)
MP="$D/mnt"
KD="$D/fuse"
. "$(dirname "$0")/../mk/progress.sh"
LOOP=""
SERVER=""
cleanup() {
	progress_clear
	umount "$MP" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	[ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ] || ! command -v mkfs.btrfs >/dev/null; then
	echo "bench_kernel: SKIP (needs root, /dev/fuse, loop devices and btrfs-progs)"
	exit 0
fi
mkdir -p "$MP" "$KD"
progress_init bench_kernel
STEPS=$((6 + 1))
step=0

# job FILE: mkfs, mount, the IO job, unmount on a loop device over FILE;
# prints the seconds it took.
job() {
	LOOP=$(losetup -f --show -b 4096 "$1") || return 1
	t0=$(date +%s.%N)
	mkfs.btrfs -q -f -K "$LOOP" >/dev/null 2>&1 && mount "$LOOP" "$MP" || return 1
	i=0
	while [ $i -lt 64 ]; do
		dd if=/dev/zero of="$MP/f$i" bs=1M count=1 conv=fsync status=none
		i=$((i + 1))
	done
	dd if=/dev/zero of="$MP/big" bs=1M count=128 status=none && sync -f "$MP"
	umount "$MP"
	t1=$(date +%s.%N)
	losetup -d "$LOOP"
	LOOP=""
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
}

best() { sort -n | head -n 1; }
: >"$D/tmpfs.t"
: >"$D/fuse.t"
for r in 1 2 3; do
	progress_steps $step $STEPS "record, round $r of 3"
	truncate -s 512M "$D/disk.img"
	job "$D/disk.img" >>"$D/tmpfs.t" || { echo "bench_kernel: the tmpfs job failed"; exit 1; }
	rm -f "$D/disk.img"
	step=$((step + 1))
	"$B" kernel-disks --size 512m "$KD" >"$D/server.out" 2>&1 &
	SERVER=$!
	n=0
	while [ ! -e "$KD/disk0" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
	job "$KD/disk0" >>"$D/fuse.t" || { echo "bench_kernel: the FUSE job failed: $(cat "$D/server.out")"; exit 1; }
	kill -TERM "$SERVER"
	wait "$SERVER"
	SERVER=""
	step=$((step + 1))
done
a=$(best <"$D/tmpfs.t")
b=$(best <"$D/fuse.t")
progress_echo "record: the IO job (64 x 1 MiB fsynced, 128 MiB synced) on a loop device: over tmpfs $a s, over a FUSE sim disk $b s (best of 3)"
progress_echo "record: FUSE recording overhead $(echo "$a $b" | awk '{ printf "%.2f", $2 / $1 }')x tmpfs's time"

progress_steps $step $STEPS "explore: seq-1 on the kernel"
line=$("$B" campaign --target kernel --seq 1 $([ "$LIMIT" -gt 0 ] && echo --limit "$LIMIT") 2>/dev/null |
	grep ' workloads, ') ||
	{ echo "bench_kernel: the kernel campaign failed"; exit 1; }
progress_echo "explore: $line"
echo "$line" | awk -v anchor=2.2 '{
	for (i = 1; i <= NF; i++) {
		if ($i == "workloads,") w = $(i - 1)
		if ($i == "crash" && $(i + 1) == "states") s = $(i - 1)
		if ($i == "in") t = $(i + 1)
	}
	if (w > 0 && t > 0)
		printf "explore: %.1f kernel crash states judged per second, %.2f s per seq-1 workload (CrashMonkey: about %.1f s, crash points at fsync only): %.2fx its speed (goal >= 2x)\n", s / t, t / w, anchor, anchor / (t / w)
}'
