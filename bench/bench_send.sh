#!/bin/sh
# bench_send.sh BTRSIM [FILES] [KIB]: send and receive against the kernel's
# (issue 22's figure).  The kernel writes FILES files (10000) of KIB KiB
# (105: about 1 GiB) of random data into a subvolume on a loop mount over
# tmpfs and snapshots it read-only (s1); then 1% of the files get 8 KiB
# overwritten and s2 is taken.  Timed, page cache dropped before each run:
#   full send of s1 and incremental send of s2 (-p s1): btrfs send on the
#     mount against btrsim send on the same image (unmounted), stream sizes;
#   receive of btrsim's full stream: btrfs receive on a fresh loop mount
#     (with its sync) against btrsim receive into a fresh ref image.
# Ratios are kernel time / btrsim time (above 1: btrsim is faster).  Needs
# root and loop devices: SKIP otherwise.
set -u
B=${1:?usage: bench_send.sh BTRSIM [FILES] [KIB]}
FILES=${2:-10000}
KIB=${3:-105}
D=$(mktemp -d /dev/shm/bench_send.XXXXXX 2>/dev/null || mktemp -d)
MP="$D/mnt"
cleanup() {
	umount "$MP" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.btrfs >/dev/null; then
	echo "bench_send: SKIP (needs root, loop devices and btrfs-progs)"
	exit 0
fi
mkdir -p "$MP"
mib=$((FILES * KIB / 1024))
size=$((mib * 2 + 512))
img="$D/k.img"
truncate -s ${size}M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1 || exit 1
if ! mount -o loop "$img" "$MP" 2>"$D/err"; then
	echo "bench_send: SKIP (loop mount failed: $(head -c 200 "$D/err"))"
	exit 0
fi
btrfs subvolume create "$MP/src" >/dev/null
python3 - "$MP/src" "$FILES" "$KIB" <<'PY'
import os, random, sys
root, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(22)
for i in range(n):
    d = os.path.join(root, 'd%03d' % (i // 100))
    if i % 100 == 0:
        os.mkdir(d)
    with open(os.path.join(d, 'f%05d' % i), 'wb') as f:
        f.write(rnd.randbytes(kib * 1024))
PY
btrfs subvolume snapshot -r "$MP/src" "$MP/s1" >/dev/null
python3 - "$MP/src" "$FILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(23)
for i in range(0, n, 100):  # 1% of the files: 8 KiB overwritten in each
    with open(os.path.join(root, 'd%03d' % (i // 100), 'f%05d' % i), 'r+b') as f:
        f.seek(4096)
        f.write(rnd.randbytes(8192))
PY
btrfs subvolume snapshot -r "$MP/src" "$MP/s2" >/dev/null
sync

now() { date +%s.%N; }
cold() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}
ratio() { awk -v k="$1" -v r="$2" 'BEGIN { printf "%.2f", k / r }'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

cold
t0=$(now)
btrfs send -q -f "$D/kfull.st" "$MP/s1"
t1=$(now)
cold
btrfs send -q -p "$MP/s1" -f "$D/kinc.st" "$MP/s2"
t2=$(now)
umount "$MP"
kfull=$(secs "$t0" "$t1")
kinc=$(secs "$t1" "$t2")
cold
t0=$(now)
"$B" send -q -f "$D/rfull.st" "$img" /s1 || exit 1
t1=$(now)
rfull=$(secs "$t0" "$t1")
cold
t1=$(now)
"$B" send -q -p /s1 -f "$D/rinc.st" "$img" /s2 || exit 1
t2=$(now)
rinc=$(secs "$t1" "$t2")
rm -f "$img"

# receive of btrsim's full stream: the kernel's, then btrsim's
kimg="$D/kr.img"
truncate -s ${size}M "$kimg"
mkfs.btrfs -q -f "$kimg" >/dev/null 2>&1
mount -o loop "$kimg" "$MP" || exit 1
cold
t0=$(now)
btrfs receive -q -f "$D/rfull.st" "$MP" || exit 1
sync
t1=$(now)
umount "$MP"
rm -f "$kimg"
krecv=$(secs "$t0" "$t1")
rimg="$D/rr.img"
"$B" mkfs --size ${size}M -f "$rimg" >/dev/null || exit 1
cold
t0=$(now)
"$B" receive -q -f "$D/rfull.st" "$rimg" / || exit 1
t1=$(now)
rrecv=$(secs "$t0" "$t1")

sz() { wc -c <"$1" | tr -d ' '; }
echo "send/receive: $FILES files of $KIB KiB (~$mib MiB), then 1% changed; seconds, ratio kernel/btrsim"
printf '  full send:        kernel %6ss  btrsim %6ss  ratio %s; stream %s vs %s bytes (%s)\n' \
	"$kfull" "$rfull" "$(ratio "$kfull" "$rfull")" "$(sz "$D/kfull.st")" "$(sz "$D/rfull.st")" \
	"$(ratio "$(sz "$D/rfull.st")" "$(sz "$D/kfull.st")")"
printf '  incremental send: kernel %6ss  btrsim %6ss  ratio %s; stream %s vs %s bytes (%s)\n' \
	"$kinc" "$rinc" "$(ratio "$kinc" "$rinc")" "$(sz "$D/kinc.st")" "$(sz "$D/rinc.st")" \
	"$(ratio "$(sz "$D/rinc.st")" "$(sz "$D/kinc.st")")"
printf '  receive (full):   kernel %6ss  btrsim %6ss  ratio %s\n' "$krecv" "$rrecv" \
	"$(ratio "$krecv" "$rrecv")"
