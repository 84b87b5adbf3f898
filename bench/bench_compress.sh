#!/bin/sh
# bench_compress.sh BTRSIM BENCH_COMPRESS: compressed size against the kernel's
# (issue 21: within 2%): the text corpus of bench-compress (64 MiB) and this
# machine's /usr/bin (binaries), written by `btrsim put --compress=ALG` and by
# the kernel's cp onto a loop mount with -o compress=ALG, for zlib, lzo and
# zstd: bytes of data extents on disk (each once) plus inline bytes, from
# dump-tree.  Needs root and loop devices: SKIP otherwise.
set -u
B=${1:?usage: bench_compress.sh BTRSIM BENCH_COMPRESS}
BC=${2:?usage: bench_compress.sh BTRSIM BENCH_COMPRESS}
T=$(mktemp -d)
MP="$T/mnt"
cleanup() { umount "$MP" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.btrfs >/dev/null; then
	echo "bench_compress: SKIP (needs root, loop devices and btrfs-progs)"
	exit 0
fi
mkdir -p "$MP" "$T/src/bin"
"$BC" corpus "$T/src/text" 64 || exit 1
for f in /usr/bin/*; do
	[ -f "$f" ] && [ ! -L "$f" ] && cp "$f" "$T/src/bin/" 2>/dev/null
done
size=$(du -sm "$T/src" | cut -f1)
disk_bytes() {
	btrfs inspect-internal dump-tree -t 5 "$1" 2>/dev/null | awk '
		/extent data disk byte/ { if ($5 != 0 && !seen[$5]++) sum += $7 }
		/inline extent data size/ { sum += $5 }
		END { print sum + 0 }'
}
echo "compressed size against the kernel's: $size MiB (64 MiB of text, /usr/bin); goal within 2%"
for alg in zlib lzo zstd; do
	img="$T/img"
	rm -f "$img"
	truncate -s $((size * 3 + 512))M "$img"
	"$B" mkfs "$img" >/dev/null && "$B" put --compress=$alg "$img" "$T/src" / || exit 1
	r=$(disk_bytes "$img")
	rm -f "$img"
	truncate -s $((size * 3 + 512))M "$img"
	mkfs.btrfs -q -f "$img" >/dev/null 2>&1
	if ! mount -o loop,compress=$alg "$img" "$MP" 2>/dev/null; then
		echo "bench_compress: SKIP (loop mount failed)"
		exit 0
	fi
	cp -a "$T/src" "$MP/" && sync
	umount "$MP"
	k=$(disk_bytes "$img")
	awk -v a=$alg -v r="$r" -v k="$k" 'BEGIN { printf "  %-5s ref %d bytes, kernel %d: %.4fx\n", a, r, k, r / k }'
done
