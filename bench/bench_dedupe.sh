#!/bin/sh
# bench_dedupe.sh BTRSIM [MIB]: btrsim dedupe against duperemove (issue 23).
# A data set of about MIB MiB (BENCH_DEDUPE_MIB, 1024) in a few hundred files
# of 1-6 MiB of seeded random data, about 30% of it duplicated: a fifth of the
# files are byte copies of earlier ones, another fifth take half of their
# 128K blocks from earlier files at other aligned offsets.  Made on tmpfs,
# put into a ref image by btrsim put.  Timed, best of 3, each round on fresh
# copies of that image, page cache dropped before each:
#   btrsim dedupe -r on one copy (unmounted, ref reading the image file);
#   duperemove -dr -b 128K --lookup-extents=no --dedupe-options=partial,same
#     (block-based, as tests/interop/test_dedupe.sh runs it) on the kernel's
#     loop mount of the other, the unmount (its writeback) included.
# Neither keeps a hash file (both hold the hashes in memory).  Throughput is
# the bytes of the files scanned / wall time; the ratio is btrsim's over
# duperemove's (above 1: btrsim is faster).  Freed bytes: the data block
# groups' used bytes before and after, on the unmounted images, the same way
# for both.  Needs root, loop devices, btrfs-progs and duperemove: SKIP
# otherwise.
set -u
B=${1:?usage: bench_dedupe.sh BTRSIM [MIB]}
MIB=${2:-${BENCH_DEDUPE_MIB:-1024}}
D=$(mktemp -d /dev/shm/bench_dedupe.XXXXXX 2>/dev/null || mktemp -d)
MP="$D/mnt"
. "$(dirname "$0")/../mk/progress.sh"
cleanup() {
	progress_clear
	umount "$MP" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.btrfs >/dev/null; then
	echo "bench_dedupe: SKIP (needs root, loop devices and btrfs-progs)"
	exit 0
fi
if ! command -v duperemove >/dev/null; then
	echo "bench_dedupe: SKIP (no duperemove; make deps installs it)"
	exit 0
fi
mkdir -p "$MP"
size=$((MIB * 2 + 512))
img="$D/orig.img"
truncate -s ${size}M "$D/probe.img"
mkfs.btrfs -q -f "$D/probe.img" >/dev/null 2>&1 || exit 1
if ! mount -o loop "$D/probe.img" "$MP" 2>"$D/err"; then
	echo "bench_dedupe: SKIP (loop mount failed: $(head -c 200 "$D/err"))"
	exit 0
fi
umount "$MP"
rm -f "$D/probe.img"

progress_init bench_dedupe
STEPS=8
progress_steps 0 $STEPS "data set"
python3 - "$D/tree" "$MIB" >"$D/stats" <<'PY'
import os, random, sys
root, mib = sys.argv[1], int(sys.argv[2])
rnd = random.Random(23)
B = 128 * 1024
files, total, dup, i = [], 0, 0, 0
while total < mib << 20:
    d = os.path.join(root, 'd%02d' % (i // 50))
    if i % 50 == 0:
        os.makedirs(d)
    kind = rnd.random()
    if files and kind < 0.22:  # a byte copy of an earlier file
        data = rnd.choice(files)
        dup += len(data)
    else:
        nb = rnd.randrange(8, 48)
        blocks = [rnd.randbytes(B) for _ in range(nb)]
        if files and kind < 0.42:  # half its blocks from earlier files
            for slot in rnd.sample(range(nb), nb // 2):
                src = rnd.choice(files)
                k = rnd.randrange(len(src) // B)
                blocks[slot] = src[k * B:(k + 1) * B]
                dup += B
        data = b''.join(blocks) + rnd.randbytes(rnd.randrange(0, 4096))
        if len(files) < 64:  # the sources kept in memory
            files.append(data)
        elif rnd.random() < 0.1:
            files[rnd.randrange(64)] = data
    with open(os.path.join(d, 'f%04d' % i), 'wb') as f:
        f.write(data)
    total += len(data)
    i += 1
print(i, total, dup)
PY
read -r nfiles bytes dupbytes <"$D/stats"
progress_steps 1 $STEPS "btrsim put"
"$B" mkfs --size ${size}M -f "$img" >/dev/null || exit 1
"$B" put "$img" "$D/tree/." / >/dev/null || exit 1
rm -rf "$D/tree"

data_used() {
	{
		btrfs inspect-internal dump-tree -t extent "$1"
		btrfs inspect-internal dump-tree -t 11 "$1" 2>/dev/null
	} | awk '/block group used/ && / flags DATA/ { s += $4 } END { print s + 0 }'
}
now() { date +%s.%N; }
cold() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
mbs() { awk -v n="$bytes" -v s="$1" 'BEGIN { printf "%.1f", n / 1e6 / s }'; }
base=$(data_used "$img")

rsec=""
ksec=""
step=2
for round in 1 2 3; do
	progress_steps $step $STEPS "btrsim dedupe, round $round of 3"
	cp --sparse=always "$img" "$D/r.img"
	cold
	t0=$(now)
	"$B" dedupe -q -r "$D/r.img" / || exit 1
	t1=$(now)
	rsec=$(best "$rsec" "$(secs "$t0" "$t1")")
	rfreed=$((base - $(data_used "$D/r.img")))
	rm -f "$D/r.img"
	step=$((step + 1))

	progress_steps $step $STEPS "duperemove, round $round of 3"
	cp --sparse=always "$img" "$D/k.img"
	mount -o loop "$D/k.img" "$MP" || exit 1
	cold
	t0=$(now)
	duperemove -q -dr -b 128K --lookup-extents=no --dedupe-options=partial,same "$MP" \
		>"$D/dr.out" 2>&1 || { echo "bench_dedupe: duperemove failed: $(tail -n 3 "$D/dr.out")"; exit 1; }
	umount "$MP"
	t1=$(now)
	ksec=$(best "$ksec" "$(secs "$t0" "$t1")")
	kfreed=$((base - $(data_used "$D/k.img")))
	rm -f "$D/k.img"
	step=$((step + 1))
done

progress_echo "dedupe: $nfiles files, $bytes bytes ($dupbytes duplicated); MB/s scanned (best of 3), ratio btrsim/duperemove"
progress_echo "$(printf '  scan and dedupe: duperemove %6s MB/s (%ss)  btrsim %6s MB/s (%ss)  ratio %s' \
	"$(mbs "$ksec")" "$ksec" "$(mbs "$rsec")" "$rsec" \
	"$(awk -v k="$ksec" -v r="$rsec" 'BEGIN { printf "%.2f", k / r }')")"
progress_echo "$(printf '  freed:           duperemove %s bytes  btrsim %s bytes (%s)' "$kfreed" "$rfreed" \
	"$(awk -v k="$kfreed" -v r="$rfreed" 'BEGIN { printf "%.3f", k ? r / k : 0 }')")"
