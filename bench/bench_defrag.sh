#!/bin/sh
# bench_defrag.sh BTRSIM [MIB]: a MIB-MiB file (256) written at once, then
# fragmented by random 4 KiB overwrites (one per 64 KiB of file, committed);
# its extent count (filefrag) and cold read throughput (page cache dropped)
# before and after `btrsim filesystem defragment`, beside the kernel's
# `btrfs filesystem defragment` of a copy of the same image on a loop mount
# (extents by the real filefrag, reads by cat).  Issue 21's figure.  Needs
# root and loop devices: SKIP otherwise.
set -u
B=${1:?usage: bench_defrag.sh BTRSIM [MIB]}
MIB=${2:-256}
T=$(mktemp -d)
MP="$T/mnt"
cleanup() { umount "$MP" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ] || ! command -v filefrag >/dev/null; then
	echo "bench_defrag: SKIP (needs root, loop devices and filefrag)"
	exit 0
fi
mkdir -p "$MP"
img="$T/ref.img"
truncate -s $((MIB * 3 + 256))M "$img"
"$B" mkfs "$img" >/dev/null || exit 1
n=$((MIB * 16))
{
	echo "create /f"
	echo "write /f 0 ${MIB}M 1"
	echo "sync"
	i=0
	x=12345
	while [ $i -lt $n ]; do
		x=$(( (x * 1103515245 + 12345) % 2147483648 ))
		echo "write /f $(( (x % (MIB * 256)) * 4096 )) 4K $((i + 2))"
		i=$((i + 1))
	done
	echo "sync"
} >"$T/frag.wl"
"$B" run "$T/frag.wl" "$img" >/dev/null || exit 1
cp "$img" "$T/kernel.img"
cold_ref() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s.%N)
	"$B" cat "$img" /f >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v m="$MIB" 'BEGIN { printf "%.0f", m * 1.048576 / (b - a) }'
}
cold_kernel() {
	mount -o loop,ro "$T/kernel.img" "$MP" || return 1
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s.%N)
	cat "$MP/f" >/dev/null
	t1=$(date +%s.%N)
	umount "$MP"
	awk -v a="$t0" -v b="$t1" -v m="$MIB" 'BEGIN { printf "%.0f", m * 1.048576 / (b - a) }'
}
kcount() {
	mount -o loop,ro "$T/kernel.img" "$MP" || return 1
	filefrag "$MP/f" | awk '{ print $(NF-2) }'
	umount "$MP"
}
rc=$("$B" filefrag "$img" /f | awk '{ print $(NF-2) }')
rr=$(cold_ref)
kc=$(kcount)
kr=$(cold_kernel)
"$B" filesystem defragment "$img" /f || exit 1
rc2=$("$B" filefrag "$img" /f | awk '{ print $(NF-2) }')
rr2=$(cold_ref)
mount -o loop "$T/kernel.img" "$MP" && btrfs filesystem defragment "$MP/f" && sync && umount "$MP"
kc2=$(kcount)
kr2=$(cold_kernel)
echo "defragment: a $MIB MiB file after $n random 4 KiB overwrites; extents and cold read MB/s"
echo "  ref:    $rc extents, $rr MB/s -> $rc2 extents, $rr2 MB/s"
echo "  kernel: $kc extents, $kr MB/s -> $kc2 extents, $kr2 MB/s"
