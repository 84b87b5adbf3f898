#!/bin/sh
# bench_read.sh - `btrsim cat` of a 1 GiB file against `cat` of the same file
# from the kernel's loop mount of the same image, measured in the same run,
# uncompressed and zstd-compressed.  "cold": the page cache dropped before each
# run (IO-bound, and noisy on a virtual disk); "warm": the image file already in
# the host's page cache (the kernel still mounts afresh, so its own cache of
# the file is empty): the CPU cost of each reader.  Each figure is the best of 3.  Needs root and loop mounts; says
# SKIP and why otherwise.  On a terminal, a progress line of its 10 steps
# (mk/progress.sh).  Usage: bench/bench_read.sh BTRSIM [SIZE_MIB]
set -u
BTRSIM=${1:?usage: bench_read.sh BTRSIM [SIZE_MIB]}
MIB=${2:-1024}
T=$(mktemp -d)
MP="$T/mnt"
. "$(dirname "$0")/../mk/progress.sh"
LOOP=""
cleanup() {
	progress_clear
	mountpoint -q "$MP" 2>/dev/null && umount "$MP"
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.btrfs >/dev/null; then
	echo "bench-read: SKIP (needs root and btrfs-progs)"
	exit 0
fi
now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }
COLD=1
best() { # best of 3 runs of "$@" (seconds)
	b=""
	for _ in 1 2 3; do
		[ "$COLD" -eq 1 ] && drop
		t0=$(now)
		"$@" >/dev/null || return 1
		t=$(echo "$(now) - $t0" | bc)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" -eq 1 ]; then b=$t; fi
	done
	echo "$b"
}
kernel_cat() { mount -o ro,loop "$T/img" "$MP" && cat "$MP/file" && umount "$MP"; }

printf '%-14s %12s %12s %8s\n' "file" "kernel MB/s" "btrsim MB/s" "ratio"
progress_init bench_read
step=0
for kind in plain zstd; do
	progress_steps $step 10 "$kind: writing the $MIB MiB file"
	truncate -s $((MIB * 3 + 512))M "$T/img"
	mkfs.btrfs -q -f "$T/img" >/dev/null 2>&1 || { progress_echo "bench-read: SKIP (mkfs failed)"; exit 0; }
	mkdir -p "$MP"
	opts=""
	[ "$kind" = zstd ] && opts="compress-force=zstd"
	if ! mount -o "loop${opts:+,$opts}" "$T/img" "$MP" 2>/dev/null; then
		progress_echo "bench-read: SKIP (loop mount not possible here)"
		exit 0
	fi
	if [ "$kind" = plain ]; then
		head -c $((MIB * 1048576)) /dev/urandom >"$MP/file"
	else
		# Compressible but not trivial: numbered text lines.
		seq 1 200000000 | head -c $((MIB * 1048576)) >"$MP/file"
	fi
	umount "$MP"
	step=$((step + 1))
	for COLD in 1 0; do
		label="$kind $([ "$COLD" -eq 1 ] && echo cold || echo warm)"
		progress_steps $step 10 "$label: the kernel, best of 3"
		k=$(best kernel_cat) || { progress_echo "bench-read: kernel read failed"; exit 1; }
		step=$((step + 1))
		progress_steps $step 10 "$label: btrsim cat, best of 3"
		b=$(best "$BTRSIM" cat "$T/img" /file) || { progress_echo "bench-read: btrsim cat failed"; exit 1; }
		step=$((step + 1))
		progress_clear
		printf '%-14s %12.0f %12.0f %7.2fx\n' "$label" "$(echo "$MIB * 1.048576 / $k" | bc -l)" \
			"$(echo "$MIB * 1.048576 / $b" | bc -l)" "$(echo "$k / $b" | bc -l)"
	done
	rm -f "$T/img"
done
echo "${MIB} MiB file; ratio = kernel time / btrsim time (best of 3); goal: >= 1.0x"
