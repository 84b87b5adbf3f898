#!/bin/sh
# btrsim receive --dump against btrfs receive --dump (issue 22, first slice):
# streams the kernel's btrfs send makes - full and incremental, protocol 1
# and 2, --compressed-data (encoded writes), --no-data (update_extent),
# clones of reflinked files, names with spaces, tabs, newlines and UTF-8,
# xattrs with binary values, special files - printed line for line the same
# (TZ=UTC for both); a damaged copy of each refused with its offset.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip receive "$LOOP_WHY"
	exit 0
fi
export TZ=UTC
MP="$T/mnt"
mkdir -p "$MP"
img="$T/s.img"
truncate -s 512M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1
mount -o loop,compress=zstd "$img" "$MP" && MOUNTS="$MP $MOUNTS" || { fail "mount"; exit 0; }
mkdir "$MP/a dir" "$MP/d"
printf x >"$MP/a dir/tab	name"
printf y >"$MP/$(printf 'nl\nname')"
echo e >"$MP/café"
echo hello >"$MP/d/f"
ln "$MP/d/f" "$MP/d/h"
ln -s f "$MP/d/l"
mkfifo "$MP/p"
mknod "$MP/c" c 1 3
setfattr -n user.a -v "v 1" "$MP/d/f"
setfattr -n user.bin -v 0x00ff41 "$MP/d/f"
chown 1000:100 "$MP/d/f"
yes text | head -c 300000 >"$MP/comp"
cp --reflink=always "$MP/comp" "$MP/clone"
head -c 200000 /dev/urandom >"$MP/big"
truncate -s 1M "$MP/sparse"
fallocate -l 64K "$MP/pre"
btrfs subvolume snapshot -r "$MP" "$MP/s1" >/dev/null
rm "$MP/d/h"
mv "$MP/d/l" "$MP/l2"
echo more >>"$MP/d/f"
setfattr -x user.a "$MP/d/f"
chmod 600 "$MP/big"
truncate -s 100 "$MP/comp"
mkdir "$MP/new"
mv "$MP/a dir" "$MP/new/"
btrfs subvolume snapshot -r "$MP" "$MP/s2" >/dev/null
btrfs send -q -f "$T/full1.st" "$MP/s1"
btrfs send -q --proto 2 -f "$T/full2.st" "$MP/s1"
btrfs send -q --proto 2 --compressed-data -f "$T/comp2.st" "$MP/s1"
btrfs send -q --no-data -f "$T/nodata.st" "$MP/s1"
btrfs send -q -p "$MP/s1" -f "$T/inc1.st" "$MP/s2"
btrfs send -q -p "$MP/s1" --proto 2 -f "$T/inc2.st" "$MP/s2"
btrfs send -q -f "$T/both.st" "$MP/s1" "$MP/s2"
unmount "$MP"

for s in full1 full2 comp2 nodata inc1 inc2 both; do
	NAME="dump-$s"
	btrfs receive --dump -f "$T/$s.st" >"$T/k.dump" 2>&1 || fail "btrfs receive --dump failed"
	run "$NAME" 0 "$BTRSIM" receive --dump -f "$T/$s.st"
	cmp -s "$OUT" "$T/k.dump" || fail "differs: $(diff "$T/k.dump" "$OUT" | head -6 | tr '\n' '|')"
	done_check
done
NAME=dump-covers
cat "$T"/*.st >/dev/null
for c in subvol snapshot mkfile mkdir mknod mkfifo symlink rename link unlink set_xattr \
	remove_xattr write clone truncate chmod chown utimes update_extent encoded_write; do
	for s in full1 comp2 nodata inc1; do "$BTRSIM" receive --dump -f "$T/$s.st"; done |
		grep -q "^$c " || fail "no $c command in the streams"
done
done_check

# a byte of the first write's data changed: the crc32c says so, with the offset
python3 - "$T/full1.st" "$T/bad.st" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
d[len(d) // 2] ^= 0x40
open(sys.argv[2], 'wb').write(d)
PY
run bad-crc 1 "$BTRSIM" receive --dump -f "$T/bad.st"
err_has 'offset [0-9]+: crc32c mismatch'; done_check
head -c 1000 "$T/full1.st" >"$T/short.st"
run truncated 1 "$BTRSIM" receive --dump -f "$T/short.st"
err_has 'offset [0-9]+: the stream ends inside'; done_check
