#!/bin/sh
# bench_mount.sh - `btrsim mount` (issue 25) against the kernel's btrfs on a
# loop device over tmpfs, and against a null FUSE file system
# (bench-nullfs: the same libfuse3 loop doing nothing, FUSE's own ceiling),
# all three measured in the same run with the same programs: a sequential
# write of SIZE MiB of random data (dd bs=1M conv=fsync, from tmpfs) and its
# sequential read after the caches are dropped; then bench-meta's FILES
# empty files created, stat'ed and deleted.  Images and data live in
# /dev/shm.  Each data figure is the best of 2.  Prints MB/s and files/s,
# and the ratios btrsim/kernel (the goal: 0.5 or more), null/kernel (what
# FUSE itself allows) and btrsim/null (how near the ceiling btrsim is).
# Needs root, /dev/fuse and loop mounts; says SKIP and why otherwise.
# Usage: bench/bench_mount.sh BUILD_DIR [SIZE_MIB] [FILES]
set -u
B=${1:?usage: bench_mount.sh BUILD_DIR [SIZE_MIB] [FILES]}
MIB=${2:-1024}
FILES=${3:-100000}
BTRSIM="$B/btrsim"
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ] || ! command -v mkfs.btrfs >/dev/null ||
	! command -v fusermount3 >/dev/null; then
	echo "bench-mount: SKIP (needs root, /dev/fuse, fusermount3 and btrfs-progs)"
	exit 0
fi
T=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
MP="$T/mnt"
mkdir -p "$MP"
PID=""
LOOP=""
cleanup() {
	mountpoint -q "$MP" && { umount "$MP" 2>/dev/null || fusermount3 -u "$MP" 2>/dev/null || umount -l "$MP"; }
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }
secs() { t0=$(now); "$@" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; return 1; }; echo "$(now) - $t0" | bc; }
min() { if [ "$(echo "$1 < $2" | bc)" -eq 1 ]; then echo "$1"; else echo "$2"; fi; }

head -c $((MIB * 1048576)) /dev/urandom >"$T/src"

# mount_TARGET: mounts it at $MP (a fresh file system each time)
mount_kernel() {
	truncate -s $((MIB * 3 + 2048))M "$T/k.img" && mkfs.btrfs -q -f "$T/k.img" >/dev/null 2>&1 &&
		LOOP=$(losetup -f --show "$T/k.img") && mount "$LOOP" "$MP"
}
umount_kernel() { umount "$MP" && losetup -d "$LOOP" && LOOP="" && rm -f "$T/k.img"; }
# served: the FUSE server $PID has mounted $MP (within 10 s)
served() {
	i=0
	while ! mountpoint -q "$MP"; do
		kill -0 "$PID" 2>/dev/null || return 1
		i=$((i + 1)); [ $i -gt 200 ] && return 1
		sleep 0.05
	done
}
mount_btrsim() {
	truncate -s $((MIB * 3 + 2048))M "$T/b.img" && mkfs.btrfs -q -f "$T/b.img" >/dev/null 2>&1 || return 1
	"$BTRSIM" mount -f "$T/b.img" "$MP" 2>"$T/mount.err" &
	PID=$!
	served
}
umount_btrsim() { fusermount3 -u "$MP" && wait "$PID"; r=$?; PID=""; rm -f "$T/b.img"; return $r; }
mount_null() {
	"$B/bench/bench-nullfs" "$MP" 2>"$T/mount.err" &
	PID=$!
	served
}
umount_null() { fusermount3 -u "$MP" && wait "$PID"; r=$?; PID=""; return $r; }

measure() { # TARGET: sets W R C S D (seconds)
	W="" R=""
	for _ in 1 2; do
		"mount_$1" || { echo "bench-mount: SKIP ($1: the mount failed: $(head -c 200 "$T/mount.err" 2>/dev/null))"; exit 0; }
		w=$(secs dd if="$T/src" of="$MP/f" bs=1M conv=fsync) || return 1
		drop
		r=$(secs dd if="$MP/f" of=/dev/null bs=1M) || return 1
		W=$(min "${W:-$w}" "$w")
		R=$(min "${R:-$r}" "$r")
		rm -f "$MP/f"
		"umount_$1" || return 1
	done
	"mount_$1" || return 1
	set -- $("$B/bench/bench-meta" "$MP" "$FILES") || return 1
	C=$2 S=$4 D=$6
	"umount_${TARGET}" || return 1
}

rate() { echo "scale=1; $1 / $2" | bc; }
for TARGET in kernel btrsim null; do
	measure "$TARGET" || { echo "bench-mount: $TARGET failed"; exit 1; }
	eval "W_$TARGET=$W R_$TARGET=$R C_$TARGET=$C S_$TARGET=$S D_$TARGET=$D"
done
printf 'bench-mount: %s MiB, %s files, tmpfs under each\n' "$MIB" "$FILES"
printf '%-16s %10s %10s %10s %14s %12s %12s\n' "" "kernel" "btrsim" "null FUSE" "btrsim/kernel" \
	"null/kernel" "btrsim/null"
row() { # NAME UNITS kernel btrsim null (seconds): rates and ratios
	printf '%-16s %10.0f %10.0f %10.0f %14.2f %12.2f %12.2f\n' "$1" "$(rate "$2" "$3")" \
		"$(rate "$2" "$4")" "$(rate "$2" "$5")" "$(echo "scale=4; $3 / $4" | bc)" \
		"$(echo "scale=4; $3 / $5" | bc)" "$(echo "scale=4; $5 / $4" | bc)"
}
row "write MB/s" "$((MIB * 1048576 / 1000000))" "$W_kernel" "$W_btrsim" "$W_null"
row "read MB/s" "$((MIB * 1048576 / 1000000))" "$R_kernel" "$R_btrsim" "$R_null"
row "create files/s" "$FILES" "$C_kernel" "$C_btrsim" "$C_null"
row "stat files/s" "$FILES" "$S_kernel" "$S_btrsim" "$S_null"
row "delete files/s" "$FILES" "$D_kernel" "$D_btrsim" "$D_null"
