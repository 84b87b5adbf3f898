#!/bin/sh
# btrsim receive against btrfs receive, on streams the kernel's btrfs send
# makes - full and incremental, protocol 1 and 2, --compressed-data (encoded
# writes), --no-data (update_extent), clones of reflinked files, names with
# spaces, tabs, newlines and UTF-8, xattrs with binary values, special files:
# --dump prints them line for line as btrfs receive --dump (TZ=UTC for both);
# applied to a ref image, each gives the tree of the snapshot it was sent
# from (btrsim manifest --times against the kernel's), the same tree as
# btrfs receive of the same streams on the kernel, and an image both
# checkers pass that the kernel mounts, showing the received UUID, stransid
# and read-only flag btrfs receive gives; a damaged copy is refused with its
# offset.
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
TOP=$MP
btrfs subvolume create "$TOP/src" >/dev/null
MP=$TOP/src
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
btrfs subvolume snapshot -r "$MP" "$TOP/s1" >/dev/null
rm "$MP/d/h"
mv "$MP/d/l" "$MP/l2"
echo more >>"$MP/d/f"
setfattr -x user.a "$MP/d/f"
chmod 600 "$MP/big"
truncate -s 100 "$MP/comp"
mkdir "$MP/new"
mv "$MP/a dir" "$MP/new/"
btrfs subvolume snapshot -r "$MP" "$TOP/s2" >/dev/null
MP=$TOP
btrfs send -q -f "$T/full1.st" "$MP/s1"
btrfs send -q --proto 2 -f "$T/full2.st" "$MP/s1"
btrfs send -q --proto 2 --compressed-data -f "$T/comp2.st" "$MP/s1"
btrfs send -q --no-data -f "$T/nodata.st" "$MP/s1"
btrfs send -q -p "$MP/s1" -f "$T/inc1.st" "$MP/s2"
btrfs send -q -p "$MP/s1" --proto 2 -f "$T/inc2.st" "$MP/s2"
btrfs send -q -f "$T/both.st" "$MP/s1" "$MP/s2"
"$BTRSIM" manifest --host "$MP/s1" --times >"$T/k1.mf"
"$BTRSIM" manifest --host "$MP/s2" --times >"$T/k2.mf"
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

# ---- Applying the streams ----------------------------------------------

# recv NAME STREAM...: a new ref image $T/NAME.img with each stream applied
# in turn under /; exit 0 for each.
recv() {
	name=$1
	shift
	img="$T/$name.img"
	truncate -s 512M "$img"
	"$BTRSIM" mkfs -f "$img" >/dev/null
	for s in "$@"; do
		run "receive-$name-$s" 0 "$BTRSIM" receive -f "$T/$s.st" "$img" /
		done_check
	done
}

# same_tree NAME SUBVOL WANT: ref's view of SUBVOL in $img equals WANT.
same_tree() {
	NAME="$1-tree-$2"
	"$BTRSIM" manifest -s "/$2" --times "$img" >"$T/got.mf" 2>"$T/got.err" ||
		fail "manifest: $(head -c 200 "$T/got.err")"
	cmp -s "$T/got.mf" "$3" || fail "differs: $(diff "$3" "$T/got.mf" | head -6 | tr '\n' '|')"
	done_check
}

for s in full1 full2 comp2; do
	recv "$s" "$s"
	same_tree "$s" s1 "$T/k1.mf"
	check "$s"
done
recv inc1 full1 inc1
same_tree inc1 s1 "$T/k1.mf"
same_tree inc1 s2 "$T/k2.mf"
check inc1
recv inc2 full2 inc2
same_tree inc2 s2 "$T/k2.mf"
recv both both
NAME=both-said
err_has '^At subvol s1$' && err_has '^At subvol s2$'
done_check
same_tree both s1 "$T/k1.mf"
same_tree both s2 "$T/k2.mf"
check both
# --no-data: the kernel's stream still clones (from a file the stream left
# empty), and btrfs receive fails there with the kernel's EINVAL (checked
# below); so does btrsim, at the same command, leaving a clean image.
img="$T/nodata.img"
truncate -s 512M "$img"
"$BTRSIM" mkfs -f "$img" >/dev/null
run receive-nodata 1 "$BTRSIM" receive -f "$T/nodata.st" "$img" /
err_has 'clone: /s1/clone: the range \[0, \+[0-9]+\) is past the end of /s1/comp'
done_check
check nodata

# The kernel on ref's image: the same files, each subvolume received and
# read-only, its received UUID the stream's, as `btrfs receive` leaves them.
img="$T/inc1.img"
NAME=kernel-reads-received
if mount -o loop,ro "$img" "$T/mnt" 2>"$T/m.err"; then
	MOUNTS="$T/mnt $MOUNTS"
	"$BTRSIM" manifest --host "$T/mnt/s2" --times >"$T/host.mf"
	cmp -s "$T/host.mf" "$T/k2.mf" || fail "kernel view differs: $(diff "$T/k2.mf" "$T/host.mf" | head -4 | tr '\n' '|')"
	for sv in s1 s2; do
		st=$([ $sv = s1 ] && echo full1 || echo inc1)
		want=$("$BTRSIM" receive --dump -f "$T/$st.st" | sed -n '1s/.*uuid=\([0-9a-f-]*\) transid=\([0-9]*\).*/\1 \2/p')
		btrfs subvolume show "$T/mnt/$sv" >"$T/show" 2>&1 || fail "subvolume show $sv"
		grep -q "Received UUID:[[:space:]]*${want% *}" "$T/show" || fail "$sv: received uuid is not ${want% *}"
		grep -q "Flags:[[:space:]]*readonly" "$T/show" || fail "$sv: not read-only"
		btrfs subvolume list -R "$T/mnt" | grep -q "received_uuid ${want% *} path $sv" ||
			fail "$sv: not in subvolume list -R"
	done
	unmount "$T/mnt"
else
	fail "mount: $(head -c 200 "$T/m.err")"
fi
done_check

# btrfs receive of the same streams on the kernel: the same trees as ref's.
NAME=progs-receive-agrees
kimg="$T/k.img"
truncate -s 512M "$kimg"
mkfs.btrfs -q -f "$kimg" >/dev/null 2>&1
if mount -o loop "$kimg" "$T/mnt" 2>"$T/m.err"; then
	MOUNTS="$T/mnt $MOUNTS"
	btrfs receive -q -f "$T/full1.st" "$T/mnt" && btrfs receive -q -f "$T/inc1.st" "$T/mnt" ||
		fail "btrfs receive failed"
	mkdir "$T/mnt/nd"
	btrfs receive -q -f "$T/nodata.st" "$T/mnt/nd" 2>"$T/nd.err" &&
		fail "btrfs receive of the --no-data stream succeeded"
	grep -q 'failed to clone extents to clone' "$T/nd.err" || fail "btrfs receive: $(cat "$T/nd.err")"
	"$BTRSIM" manifest --host "$T/mnt/s2" --times >"$T/pk2.mf"
	"$BTRSIM" manifest -s /s2 --times "$T/inc1.img" >"$T/rk2.mf"
	cmp -s "$T/pk2.mf" "$T/rk2.mf" || fail "differs: $(diff "$T/pk2.mf" "$T/rk2.mf" | head -4 | tr '\n' '|')"
	unmount "$T/mnt"
	# each subvolume's stransid: the stream's ctransid, on both
	for i in "$kimg" "$T/inc1.img"; do
		btrfs inspect-internal dump-tree -t root "$i" |
			sed -n 's/.*stransid \([0-9]*\) rtransid.*/\1/p' | grep -v '^0$' | sort -n | tr '\n' ' '
		echo
	done >"$T/stransid"
	[ "$(sort -u "$T/stransid" | wc -l)" -eq 1 ] && [ "$(head -1 "$T/stransid")" != " " ] ||
		fail "stransids differ: $(tr '\n' '|' <"$T/stransid")"
else
	fail "mount: $(head -c 200 "$T/m.err")"
fi
done_check

# The workload op `receive STREAM DIR` on both targets: the kernel through
# btrfs-progs' own receive (run --host), ref through ref_receive; the same
# errno op by op (a missing parent ENOENT, a name received twice EEXIST),
# and the same tree after.
cat >"$T/rx.wl" <<'W'
mkdir /r
receive inc1.st /r = ENOENT
receive full1.st /r
receive full1.st /r = EEXIST
receive inc1.st /r
create /r/s2/x = EROFS
W
kimg="$T/kw.img"
truncate -s 512M "$kimg"
mkfs.btrfs -q -f "$kimg" >/dev/null 2>&1
if mount -o loop "$kimg" "$T/mnt" 2>"$T/m.err"; then
	MOUNTS="$T/mnt $MOUNTS"
	run receive-op-kernel 0 "$BTRSIM" run --host "$T/mnt" "$T/rx.wl"
	done_check
	"$BTRSIM" manifest --host "$T/mnt" >"$T/kw.mf"
	unmount "$T/mnt"
	img="$T/rw.img"
	truncate -s 512M "$img"
	"$BTRSIM" mkfs -f "$img" >/dev/null
	run receive-op-ref 0 "$BTRSIM" run "$T/rx.wl" "$img"
	done_check
	NAME=receive-op-same-tree
	"$BTRSIM" manifest "$img" >"$T/rw.mf"
	cmp -s "$T/kw.mf" "$T/rw.mf" || fail "differs: $(diff "$T/kw.mf" "$T/rw.mf" | head -4 | tr '\n' '|')"
	done_check
	check receive-op
else
	NAME=receive-op-kernel
	fail "mount: $(head -c 200 "$T/m.err")"
	done_check
fi
