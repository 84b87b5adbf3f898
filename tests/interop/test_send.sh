#!/bin/sh
# btrsim send against the kernel's btrfs: a read-only snapshot the kernel
# made (directories of higher inode number than their entries, hard links
# across directories, renames of whole subtrees, xattrs and ACLs, special
# files, symlinks, sparse, preallocated, compressed, inline and large
# files, names with spaces and newlines, a nested subvolume) is sent by
# btrsim from the kernel's own image, protocol 1 and 2; btrfs receive
# applies each stream on a kernel mount and the received tree equals the
# snapshot (btrsim manifest --host --times of both), received UUID the
# snapshot's UUID; btrfs receive --dump reads them; btrsim receive applies
# them to a ref image with the same tree; --no-data gives update_extent
# commands; two subvolumes make one stream; a writable subvolume is refused;
# inode flags changed since the parent go as the kernel's fileattr (v2).
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip send "$LOOP_WHY"
	exit 0
fi
export TZ=UTC

# progs_receive NAME STREAM...: btrfs receive of $T/STREAM.st, each in turn,
# on a fresh btrfs loop-mounted at $MP: 0 with it mounted, else 1 after
# saying why (unmounted).
progs_receive() {
	kimg="$T/$1.img"
	shift
	truncate -s 512M "$kimg"
	mkfs.btrfs -q -f "$kimg" >/dev/null 2>&1
	mount -o loop "$kimg" "$MP" 2>"$T/m.err" || { fail "mount: $(head -c 200 "$T/m.err")"; return 1; }
	MOUNTS="$MP $MOUNTS"
	for st in "$@"; do
		if ! btrfs receive -q -f "$T/$st.st" "$MP" 2>"$T/recv.err"; then
			fail "btrfs receive $st: $(head -3 "$T/recv.err")"
			unmount "$MP"
			return 1
		fi
	done
}

# same_host SUBVOL WANT: the kernel's view of $MP/SUBVOL (times included) is WANT.
same_host() {
	"$BTRSIM" manifest --host "$MP/$1" --times >"$T/got.mf"
	cmp -s "$T/got.mf" "$2" || fail "$1 differs: $(diff "$2" "$T/got.mf" | head -6 | tr '\n' '|')"
}
MP="$T/mnt"
mkdir -p "$MP"
img="$T/k.img"
truncate -s 512M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1
mount -o loop "$img" "$MP" && MOUNTS="$MP $MOUNTS" || { fail "mount"; exit 0; }
S=$MP/src
btrfs subvolume create "$S" >/dev/null
mkdir -p "$S/a/b/c" "$S/x"
echo one >"$S/a/f"
echo two >"$S/x/g"
mkdir "$S/late" # a directory made after the files moved into it
mv "$S/a/f" "$S/late/f"
mv "$S/a" "$S/late/a" # a whole subtree under a newer directory
ln "$S/late/f" "$S/x/f-link"
ln "$S/late/f" "$S/late/a/b/c/deep-link"
mkdir "$S/newest"
ln "$S/x/g" "$S/newest/g-link"
printf 'sp ace' >"$S/name with space"
printf 'nl' >"$S/$(printf 'new\nline')"
setfattr -n user.k -v value "$S/x/g"
setfattr -n user.bin -v 0x00ff00 "$S/late"
setfacl -m u:1234:rwx "$S/x" 2>/dev/null
setfacl -d -m g:55:r-x "$S/x" 2>/dev/null
chown 1000:1000 "$S/x/g"
chmod 4755 "$S/x/g"
chmod 1777 "$S/late/a"
ln -s ../late/f "$S/x/sym"
ln -s "dangling target" "$S/dangle"
mkfifo "$S/fifo"
mknod "$S/cdev" c 1 3
mknod "$S/bdev" b 7 300
python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind('$S/sock')"
head -c 5000000 /dev/urandom >"$S/big"
truncate -s 3M "$S/sparse"
printf tail >>"$S/sparse"
dd if=/dev/urandom of="$S/sparse" bs=4096 seek=100 count=3 conv=notrunc 2>/dev/null
fallocate -l 1M "$S/prealloc"
printf x | dd of="$S/prealloc" bs=1 seek=5000 conv=notrunc 2>/dev/null
chattr +c "$S/x" 2>/dev/null
yes compressible | head -c 400000 >"$S/x/comp"
# file capabilities (cap_net_raw), which a receiver's write, truncate or chown drops
setfattr -n security.capability -v 0x0100000200200000000000000000000000000000 "$S/x/comp"
: >"$S/empty"
printf small >"$S/inline"
touch -d '2001-02-03 04:05:06.789' "$S/inline"
cp --reflink=always "$S/big" "$S/x/big-reflink" # shared within the snapshot: a clone
btrfs subvolume create "$S/nested" >/dev/null
echo inside >"$S/nested/n"
rm "$S/x/g" # the first name goes, the later link stays
btrfs subvolume snapshot -r "$S" "$MP/s1" >/dev/null
# s2: every kind of change an incremental stream carries
mv "$S/late" "$S/x/late-moved"           # a subtree moves under another directory
mv "$S/x/late-moved/a/b" "$S/b-top"      # and part of it back up
mkdir "$S/swap1" "$S/swap2"
rm -r "$S/newest"                        # a directory deleted, a link with it
mv "$S/inline" "$S/tmp" && mv "$S/empty" "$S/inline" && mv "$S/tmp" "$S/empty" # names swapped
ln "$S/x/f-link" "$S/new-link"           # a link added
rm "$S/x/late-moved/a/b/c/deep-link" 2>/dev/null || rm "$S/b-top/c/deep-link"
setfattr -x user.k "$S/x/g-link" 2>/dev/null || true
setfattr -n user.bin -v 0x01 "$S/x/late-moved"
setfattr -n user.new -v new "$S/big"
dd if=/dev/urandom of="$S/big" bs=4096 seek=300 count=5 conv=notrunc 2>/dev/null
fallocate -p -o 8192 -l 16384 "$S/big"
truncate -s 1000 "$S/sparse"
chmod 700 "$S/x/comp"
echo more >>"$S/x/comp" # the write drops its capabilities, set again after it: the
setfattr -n security.capability -v 0x0100000200200000000000000000000000000000 "$S/x/comp" # stream must keep them
chown 7:8 "$S/fifo"
rm "$S/cdev" && mkdir "$S/cdev" && echo now-a-dir >"$S/cdev/in" # a name changes type
rm "$S/dangle" && echo now-a-file >"$S/dangle"
mkdir -p "$S/new/deep/er" && echo n >"$S/new/deep/er/n"
mv "$S/b-top" "$S/new/deep/b"            # into a directory newer than itself
echo changed >>"$S/x/f-link"
chattr +A "$S/big" # its inode flags: a fileattr command in a v2 stream
btrfs subvolume snapshot -r "$S" "$MP/s2" >/dev/null
# s3..s10: a chain of snapshots, each a little changed
prev=""
for i in 3 4 5 6 7 8 9 10; do
	mkdir "$S/gen$i"
	echo "$i" >"$S/gen$i/file"
	[ -n "$prev" ] && mv "$S/gen$prev" "$S/gen$i/"
	printf 'chunk %s' "$i" | dd of="$S/big" bs=1 seek=$((i * 70000)) conv=notrunc 2>/dev/null
	mv "$S/new" "$S/new$i" 2>/dev/null || mv "$S/new$((i - 1))" "$S/new$i"
	touch -d "2020-01-0$((i % 9 + 1)) 00:00:00" "$S/x"
	btrfs subvolume snapshot -r "$S" "$MP/s$i" >/dev/null
	prev=$i
done
for i in 3 4 5 6 7 8 9 10; do "$BTRSIM" manifest --host "$MP/s$i" --times >"$T/s$i.mf"; done
btrfs send -q -p "$MP/s1" -f "$T/kernel-inc.st" "$MP/s2"
btrfs send -q --proto 2 -p "$MP/s1" -f "$T/kernel-inc2.st" "$MP/s2"
"$BTRSIM" manifest --host "$MP/s1" --times >"$T/s1.mf"
"$BTRSIM" manifest --host "$MP/s2" --times >"$T/s2.mf"
sparse_blocks=$(stat -c %b "$MP/s1/sparse") # 512-byte blocks allocated: the holes stay holes
btrfs subvolume show "$MP/s1" | sed -n 's/^[[:space:]]*UUID:[[:space:]]*//p' >"$T/s1.uuid"
btrfs send -q -f "$T/kernel.st" "$MP/s1"
unmount "$MP"
# the nested subvolume is not sent (its entry is no inode of the snapshot's
# tree; the kernel's send leaves it out too): no /nested, and the root's
# size (twice its names' length) 12 smaller
for s in s1 s2 s3 s4 s5 s6 s7 s8 s9 s10; do
	grep -v '^/nested' "$T/$s.mf" | awk '$1 == "/" { $7 -= 12 } { print }' >"$T/$s.want"
done

for p in 1 2; do
	run "send-proto$p" 0 "$BTRSIM" send --proto $p -f "$T/ref$p.st" "$img" /s1
	err_has '^At subvol /s1$'
	done_check
	NAME="dump-proto$p"
	btrfs receive --dump -f "$T/ref$p.st" >"$T/dump$p" 2>&1 || fail "btrfs receive --dump: $(tail -2 "$T/dump$p")"
	head -1 "$T/dump$p" | grep -q "^subvol  *./s1  *uuid=$(cat "$T/s1.uuid") " || fail "first line: $(head -1 "$T/dump$p")"
	done_check
	NAME="progs-receive-proto$p"
	if progs_receive "r$p" "ref$p"; then
		same_host s1 "$T/s1.want"
		btrfs subvolume show "$MP/s1" | grep -q "Received UUID:[[:space:]]*$(cat "$T/s1.uuid")" ||
			fail "received uuid is not the snapshot's"
		sync
		b=$(stat -c %b "$MP/s1/sparse")
		[ "$b" -le $((sparse_blocks * 2)) ] || fail "sparse: $b blocks allocated, the source $sparse_blocks"
		unmount "$MP"
	fi
	done_check
done
printf 'stream sizes: btrsim proto 1 %s, proto 2 %s, kernel proto 1 %s bytes\n' \
	"$(wc -c <"$T/ref1.st")" "$(wc -c <"$T/ref2.st")" "$(wc -c <"$T/kernel.st")"

# ref applies its own stream and the kernel's alike
for st in ref1 kernel; do
	rimg="$T/$st-ref.img"
	"$BTRSIM" mkfs --size 512M -f "$rimg" >/dev/null
	run "btrsim-receive-$st" 0 "$BTRSIM" receive -q -f "$T/$st.st" "$rimg" /
	done_check
	run "btrsim-receive-$st-tree" 0 "$BTRSIM" manifest -s /s1 --times "$rimg"
	cmp -s "$OUT" "$T/s1.want" || fail "differs: $(diff "$T/s1.want" "$OUT" | head -6 | tr '\n' '|')"
	done_check
	img=$rimg check "btrsim-receive-$st"
done

# Incremental: s1 to s2 on top of a received s1, then the chain s2 to s10,
# each on the one before; btrfs receive on the kernel and btrsim receive on
# a ref image rebuild every snapshot
run send-inc 0 "$BTRSIM" send -q -p /s1 -f "$T/inc.st" "$img" /s2
done_check
prev=2
for i in 3 4 5 6 7 8 9 10; do
	run "send-inc-s$i" 0 "$BTRSIM" send -q --proto $((i % 2 + 1)) -p /s$prev -f "$T/inc$i.st" "$img" /s$i
	done_check
	prev=$i
done
printf 'incremental s1 to s2: btrsim %s bytes, the kernel %s\n' "$(wc -c <"$T/inc.st")" "$(wc -c <"$T/kernel-inc.st")"
# v2: the flags chattr changed go as a fileattr command, as the kernel's
NAME=fileattr-as-the-kernel
"$BTRSIM" send -q --proto 2 -p /s1 -f "$T/inc2.st" "$img" /s2 || fail "send --proto 2 -p"
btrfs receive --dump -f "$T/kernel-inc2.st" | grep '^fileattr ' | sed 's/  */ /g' >"$T/kfa"
btrfs receive --dump -f "$T/inc2.st" | grep '^fileattr ' | sed 's/  */ /g' >"$T/rfa"
grep -q 'big fileattr=' "$T/kfa" || fail "set-up: the kernel sent no fileattr for big: $(cat "$T/kfa")"
cmp -s "$T/kfa" "$T/rfa" || fail "differs: $(diff "$T/kfa" "$T/rfa" | tr '\n' '|')"
done_check
NAME=progs-receive-incremental
if progs_receive inc ref1 inc inc3 inc4 inc5 inc6 inc7 inc8 inc9 inc10; then
	for i in 2 3 4 5 6 7 8 9 10; do same_host s$i "$T/s$i.want"; done
	btrfs subvolume show "$MP/s2" | grep -q 'Flags:[[:space:]]*readonly' || fail "s2 is not read-only"
	unmount "$MP"
fi
done_check
NAME=btrsim-receive-incremental
rimg="$T/inc-ref.img"
"$BTRSIM" mkfs --size 512M -f "$rimg" >/dev/null
for st in ref1 inc inc3 inc4 inc5 inc6 inc7 inc8 inc9 inc10; do
	"$BTRSIM" receive -q -f "$T/$st.st" "$rimg" / 2>"$T/recv.err" || fail "$st: $(head -3 "$T/recv.err")"
done
for i in 2 3 4 5 6 7 8 9 10; do
	"$BTRSIM" manifest -s /s$i --times "$rimg" >"$T/got.mf"
	cmp -s "$T/got.mf" "$T/s$i.want" || fail "s$i differs: $(diff "$T/s$i.want" "$T/got.mf" | head -6 | tr '\n' '|')"
done
done_check
img=$rimg check btrsim-receive-incremental
# the kernel's incremental stream, applied by btrsim on its own s1
NAME=btrsim-receive-kernel-incremental
"$BTRSIM" receive -q -f "$T/kernel-inc.st" "$T/kernel-ref.img" / 2>"$T/recv.err" || fail "$(head -3 "$T/recv.err")"
"$BTRSIM" manifest -s /s2 --times "$T/kernel-ref.img" >"$T/got.mf"
cmp -s "$T/got.mf" "$T/s2.want" || fail "differs: $(diff "$T/s2.want" "$T/got.mf" | head -6 | tr '\n' '|')"
done_check
run send-inc-parent-writable 1 "$BTRSIM" send -q -p /src -f "$T/w.st" "$img" /s2
err_has 'subvolume src is not read-only'; done_check
run send-inc-parent-missing 1 "$BTRSIM" send -q -p /nope -f "$T/w.st" "$img" /s2
err_has '-p /nope: '; done_check

# --no-data: the same commands, update_extent for the data
run send-no-data 0 "$BTRSIM" send -q --no-data -f "$T/nd.st" "$img" /s1
done_check
NAME=no-data-dump
btrfs receive --dump -f "$T/nd.st" >"$T/nd.dump" 2>&1 || fail "btrfs receive --dump failed"
grep -q '^update_extent  *./s1/big  *offset=0 len=5000000$' "$T/nd.dump" || fail "no update_extent of big"
grep -q '^write ' "$T/nd.dump" && fail "a write in a --no-data stream"
done_check

# two subvolumes, one stream (one end command), received whole by both
run send-two 0 "$BTRSIM" send -q -f "$T/two.st" "$img" /s1 /s2
done_check
NAME=two-progs-receive
if progs_receive two two; then
	same_host s2 "$T/s2.want"
	unmount "$MP"
fi
[ "$(btrfs receive --dump -f "$T/two.st" | grep -c '^subvol ')" -eq 2 ] || fail "not two subvol commands"
done_check

# refused: a writable subvolume, a directory that is no subvolume, no SUBVOL
run send-writable 1 "$BTRSIM" send -q -f "$T/w.st" "$img" /src
err_has '/src: subvolume src is not read-only'; done_check
run send-not-subvol 1 "$BTRSIM" send -q -f "$T/w.st" "$img" /s1/x
err_has '/s1/x: not a subvolume'; done_check
run send-usage 2 "$BTRSIM" send -f "$T/w.st" "$img"
done_check
run send-bad-proto 2 "$BTRSIM" send --proto 3 -f "$T/w.st" "$img" /s1
done_check

# Clones: a file shared with the parent (-p) or a clone source (-c, the
# parent then found as btrfs send finds it), sent as clone commands; btrfs
# receive shares the extents again and the trees are the same
NAME=clone-setup
cimg="$T/c.img"
truncate -s 512M "$cimg"
mkfs.btrfs -q -f "$cimg" >/dev/null 2>&1
if mount -o loop "$cimg" "$MP" 2>"$T/m.err"; then
	MOUNTS="$MP $MOUNTS"
	btrfs subvolume create "$MP/src" >/dev/null
	head -c 1000000 /dev/urandom >"$MP/src/big"
	btrfs subvolume snapshot -r "$MP/src" "$MP/c1" >/dev/null
	cp --reflink=always "$MP/c1/big" "$MP/src/big-copy"
	btrfs subvolume snapshot -r "$MP/src" "$MP/c2" >/dev/null
	"$BTRSIM" manifest --host "$MP/c2" --times >"$T/c2.mf"
	btrfs subvolume create "$MP/lone" >/dev/null # no parent: -c alone cannot send it
	btrfs property set -ts "$MP/lone" ro true
	unmount "$MP"
else
	fail "mount: $(head -c 200 "$T/m.err")"
fi
done_check
run send-c-full 0 "$BTRSIM" send -q -f "$T/c1.st" "$cimg" /c1
done_check
run send-c 0 "$BTRSIM" send -q -c /c1 -f "$T/c2.st" "$cimg" /c2
done_check
run send-c-dump 0 "$BTRSIM" receive --dump -f "$T/c2.st"
out_has '^snapshot  *./c2 '
out_has '^clone  *./c2/big-copy  *offset=0 len=1000000 from=./c2/big clone_offset=0$'
grep -q '^write ' "$OUT" && fail "data written, not cloned"
done_check
NAME=clone-progs-receive
if progs_receive cr c1 c2; then
	same_host c2 "$T/c2.mf"
	sync
	shared=$(btrfs filesystem du -s --raw "$MP/c2" | awk 'NR == 2 { print $3 }')
	[ "${shared:-0}" -ge 1000000 ] || fail "the clone shares $shared bytes, not the file's 1000000"
	unmount "$MP"
fi
done_check
run send-c-no-parent 1 "$BTRSIM" send -q -c /c1 -f "$T/w.st" "$cimg" /lone
err_has 'parent determination failed'; done_check
run send-c-missing 1 "$BTRSIM" send -q -c /nope -f "$T/w.st" "$cimg" /c2
err_has "-c /nope: "; done_check

# --compressed-data: compressed extents as encoded writes, as the kernel's
# send --compressed-data makes them (the same commands, counted); btrfs
# receive and btrsim receive rebuild the tree
NAME=compressed-setup
zimg="$T/z.img"
truncate -s 512M "$zimg"
mkfs.btrfs -q -f "$zimg" >/dev/null 2>&1
if mount -o loop,compress=zstd "$zimg" "$MP" 2>"$T/m.err"; then
	MOUNTS="$MP $MOUNTS"
	btrfs subvolume create "$MP/src" >/dev/null
	yes 'compressible text' | head -c 700000 >"$MP/src/t"
	dd if=/dev/urandom of="$MP/src/t" bs=4096 seek=20 count=1 conv=notrunc 2>/dev/null
	printf 'small small small small small small' >"$MP/src/inline"
	head -c 300000 /dev/urandom >"$MP/src/random"
	sync
	btrfs subvolume snapshot -r "$MP/src" "$MP/z1" >/dev/null
	"$BTRSIM" manifest --host "$MP/z1" --times >"$T/z1.mf"
	btrfs send -q --compressed-data -f "$T/kz.st" "$MP/z1"
	unmount "$MP"
else
	fail "mount: $(head -c 200 "$T/m.err")"
fi
done_check
run send-compressed 0 "$BTRSIM" send -q --compressed-data -f "$T/z.st" "$zimg" /z1
done_check
NAME=compressed-like-kernel
for f in z kz; do
	btrfs receive --dump -f "$T/$f.st" | awk '{ print $1 }' | sort | uniq -c >"$T/$f.count"
done
grep -q encoded_write "$T/z.count" || fail "no encoded_write"
cmp -s "$T/z.count" "$T/kz.count" || fail "commands differ: $(diff "$T/kz.count" "$T/z.count" | tr '\n' '|')"
done_check
NAME=compressed-progs-receive
if progs_receive zr z; then
	same_host z1 "$T/z1.mf"
	unmount "$MP"
fi
done_check
NAME=compressed-btrsim-receive
rimg="$T/zref.img"
"$BTRSIM" mkfs --size 256M -f "$rimg" >/dev/null
"$BTRSIM" receive -q -f "$T/z.st" "$rimg" / 2>"$T/recv.err" || fail "$(head -3 "$T/recv.err")"
"$BTRSIM" manifest -s /z1 --times "$rimg" >"$T/got.mf"
cmp -s "$T/got.mf" "$T/z1.mf" || fail "differs: $(diff "$T/z1.mf" "$T/got.mf" | head -4 | tr '\n' '|')"
done_check
run send-compressed-proto1 2 "$BTRSIM" send --proto 1 --compressed-data -f "$T/w.st" "$zimg" /z1
err_has 'needs --proto 2'; done_check
