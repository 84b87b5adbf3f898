#!/bin/sh
# btrsim send, no kernel needed: a tree copied in with put (hard links,
# symlinks, a sparse file, xattrs, owners, a directory moved under a newer
# one) snapshotted read-only and sent, v1 and v2; btrsim receive applies the
# stream to another image and the received tree equals the snapshot
# (manifest --times), received UUID the snapshot's UUID; several
# subvolumes make one stream; --no-data; the errors: a writable subvolume,
# a path that is no subvolume, a bad --proto, no SUBVOL, an unwritable
# output, a terminal.  (The kernel's btrfs receive of btrsim's streams:
# tests/interop/test_send.sh.)
. "$(dirname "$0")/lib.sh"
export TZ=UTC

src="$T/src"
mkdir -p "$src/d/e" "$src/z"
printf 'hello\n' >"$src/d/f"
ln "$src/d/f" "$src/z/hard"
ln -s ../d/f "$src/z/sym"
head -c 150000 /dev/urandom >"$src/big"
dd if=/dev/zero of="$src/sparse" bs=1 count=0 seek=2000000 2>/dev/null
printf end >>"$src/sparse"
setfattr -n user.k -v v "$src/d/f" 2>/dev/null
touch -d '2010-01-01 00:00:00' "$src/d/e"
img="$T/a.img"
"$BTRSIM" mkfs --size 256M -f "$img" >/dev/null
"$BTRSIM" subvolume create "$img" /vol >/dev/null
"$BTRSIM" put "$img" "$src/." /vol >/dev/null || fail "put"
# a directory made after its entries: its inode number is higher
"$BTRSIM" mkdir "$img" /vol/late >/dev/null
"$BTRSIM" mv "$img" /vol/d /vol/late/d >/dev/null || fail "mv"
"$BTRSIM" subvolume snapshot -r "$img" /vol /s1 >/dev/null
printf changed | "$BTRSIM" write "$img" /vol/big >/dev/null || fail "write"
"$BTRSIM" subvolume snapshot -r "$img" /vol /s2 >/dev/null
"$BTRSIM" manifest -s /s1 --times "$img" >"$T/s1.mf"
"$BTRSIM" manifest -s /s2 --times "$img" >"$T/s2.mf"
grep -q '^/late/d/f ' "$T/s1.mf" || fail "set-up: no /late/d/f"
cmp -s "$T/s1.mf" "$T/s2.mf" && fail "set-up: s2 is s1"

for p in 1 2; do
	run "send-proto$p" 0 "$BTRSIM" send --proto $p -f "$T/s$p.st" "$img" /s1
	err_has '^At subvol /s1$'
	done_check
	r="$T/r$p.img"
	"$BTRSIM" mkfs --size 256M -f "$r" >/dev/null
	run "receive-proto$p" 0 "$BTRSIM" receive -q -f "$T/s$p.st" "$r" /
	done_check
	run "tree-proto$p" 0 "$BTRSIM" manifest -s /s1 --times "$r"
	cmp -s "$OUT" "$T/s1.mf" || fail "differs: $(diff "$T/s1.mf" "$OUT" | head -6 | tr '\n' '|')"
	done_check
	img=$r check "proto$p"
done
NAME=received-uuid
"$BTRSIM" subvolume show "$img" /s1 | sed -n 's/^[[:space:]]*UUID:[[:space:]]*//p' >"$T/uuid"
"$BTRSIM" subvolume show "$T/r1.img" /s1 >"$T/show"
grep -q "Received UUID:[[:space:]]*$(cat "$T/uuid")$" "$T/show" || fail "received uuid is not $(cat "$T/uuid")"
done_check
NAME=version-header
[ "$(od -An -tu4 -j13 -N4 "$T/s2.st" | tr -d ' ')" = 2 ] || fail "--proto 2 wrote another version"
done_check

run send-stdout 0 sh -c "\"$BTRSIM\" send -q \"$img\" /s1 /s2 >\"$T/two.st\""
done_check
run two-dump 0 "$BTRSIM" receive --dump -f "$T/two.st"
[ "$(grep -c '^subvol ' "$OUT")" -eq 2 ] || fail "not two subvol commands"
done_check
r="$T/two.img"
"$BTRSIM" mkfs --size 256M -f "$r" >/dev/null
run two-receive 0 "$BTRSIM" receive -q -f "$T/two.st" "$r" /
done_check
run two-tree 0 "$BTRSIM" manifest -s /s2 --times "$r"
cmp -s "$OUT" "$T/s2.mf" || fail "differs: $(diff "$T/s2.mf" "$OUT" | head -6 | tr '\n' '|')"
done_check

# incremental: s2 on the received s1, then s3 (a rename, a move into a new
# directory, a removal, a new link, a truncate, a name of another type) on s2
B=$BTRSIM
$B mv "$img" /vol/z /vol/late/z-moved >/dev/null && $B mkdir "$img" /vol/newdir >/dev/null &&
	$B mv "$img" /vol/late/d /vol/newdir/d >/dev/null && $B rm "$img" /vol/sparse >/dev/null &&
	$B mkdir "$img" /vol/sparse >/dev/null && $B ln "$img" /vol/big /vol/newdir/big-link >/dev/null &&
	$B truncate -s 1000 "$img" /vol/big >/dev/null || fail "set-up of s3"
$B subvolume snapshot -r "$img" /vol /s3 >/dev/null
$B manifest -s /s3 --times "$img" >"$T/s3.mf"
run send-inc 0 "$B" send -q -p /s1 -f "$T/i2.st" "$img" /s2
done_check
run send-inc3 0 "$B" send -q --proto 2 -p /s2 -f "$T/i3.st" "$img" /s3
done_check
run inc-dump 0 "$B" receive --dump -f "$T/i3.st"
out_has '^snapshot        ./s3 '; out_has '^rename '; out_has '^link '; out_has '^truncate '
done_check
run receive-inc 0 "$B" receive -q -f "$T/i2.st" "$T/r1.img" /
done_check
run receive-inc3 0 "$B" receive -q -f "$T/i3.st" "$T/r1.img" /
done_check
for i in 2 3; do
	run "inc-tree-s$i" 0 "$B" manifest -s /s$i --times "$T/r1.img"
	cmp -s "$OUT" "$T/s$i.mf" || fail "differs: $(diff "$T/s$i.mf" "$OUT" | head -6 | tr '\n' '|')"
	done_check
done
img="$T/r1.img" check incremental
# a parent the receiving side lacks: the snapshot command finds none
r="$T/lonely.img"
"$B" mkfs --size 256M -f "$r" >/dev/null
run receive-inc-no-parent 1 "$B" receive -q -f "$T/i3.st" "$r" /
err_has 'offset 17: snapshot: cannot find the parent subvolume'; done_check

run no-data 0 "$BTRSIM" send -q --no-data -f "$T/nd.st" "$img" /s1
done_check
run no-data-dump 0 "$BTRSIM" receive --dump -f "$T/nd.st"
out_has '^update_extent   ./s1/big                        offset=0 len=150000$'
grep -q '^write ' "$OUT" && fail "a write in a --no-data stream"
done_check

# --compressed-data: a file written compressed goes as encoded writes
# (version 2 implied) and is received whole
zimg="$T/z.img"
"$BTRSIM" mkfs --size 256M -f "$zimg" >/dev/null
"$BTRSIM" subvolume create "$zimg" /v >/dev/null
yes 'compressible text' | head -c 300000 >"$T/text"
"$BTRSIM" put --compress=zstd "$zimg" "$T/text" /v/t >/dev/null
"$BTRSIM" subvolume snapshot -r "$zimg" /v /z1 >/dev/null
run compressed 0 "$BTRSIM" send -q --compressed-data -f "$T/z.st" "$zimg" /z1
done_check
run compressed-dump 0 "$BTRSIM" receive --dump -f "$T/z.st"
out_has '^encoded_write   ./z1/t  .*compression=2'
[ "$(od -An -tu4 -j13 -N4 "$T/z.st" | tr -d ' ')" = 2 ] || fail "not a version 2 stream"
done_check
r="$T/zr.img"
"$BTRSIM" mkfs --size 256M -f "$r" >/dev/null
run compressed-receive 0 "$BTRSIM" receive -q -f "$T/z.st" "$r" /
done_check
run compressed-content 0 "$BTRSIM" cat "$r" /z1/t
cmp -s "$OUT" "$T/text" || fail "the received file differs"
done_check
run compressed-proto1 2 "$BTRSIM" send --proto 1 --compressed-data -f "$T/w.st" "$zimg" /z1
err_has 'needs --proto 2'; done_check

run writable 1 "$BTRSIM" send -q -f "$T/w.st" "$img" /vol
err_has '/vol: subvolume vol is not read-only'; done_check
run top-level 1 "$BTRSIM" send -q -f "$T/w.st" "$img" /
err_has 'not read-only'; done_check
run not-subvol 1 "$BTRSIM" send -q -f "$T/w.st" "$img" /s1/late
err_has '/s1/late: not a subvolume'; done_check
run missing 1 "$BTRSIM" send -q -f "$T/w.st" "$img" /nope
err_has '/nope: '; done_check
run bad-proto 2 "$BTRSIM" send --proto 3 -f "$T/w.st" "$img" /s1
err_has '--proto 3: 1 or 2'; done_check
run no-subvol 2 "$BTRSIM" send -f "$T/w.st" "$img"
err_has 'needs at least one image and one SUBVOL'; done_check
run unwritable 1 "$BTRSIM" send -q -f "$T/no/such/dir/x.st" "$img" /s1
err_has 'x.st: No such file or directory'; done_check
run not-image 1 "$BTRSIM" send -q -f "$T/w.st" "$T/s1.mf" /s1
done_check
if command -v script >/dev/null 2>&1; then
	run terminal 2 script -qec "\"$BTRSIM\" send \"$img\" /s1" /dev/null </dev/null
	grep -q 'not writing a send stream to a terminal' "$OUT" || fail "no refusal: $(head -c 200 "$OUT")"
	done_check
fi
run help 0 "$BTRSIM" send --help
out_has '^usage: btrsim send '; done_check
