#!/bin/sh
# A balance interrupted mid-relocation (issue 20): the kernel balances a
# volume served through FUSE (explore --target kernel) and every crash state
# is rebuilt from the recorded IO.  The states caught between the commit that
# wrote the relocation trees and the end of the merge carry TREE_RELOC root
# items, blocks with HEADER_FLAG_RELOC, and the data relocation inode with
# the moved copies; on each:
#   - btrsim check's verdict equals btrfs check's (no false alarm);
#   - ref's view equals what the kernel shows after its own recovery (the
#     explorer compares them in every state: 0 violations);
#   - a change by ref first drops the relocation trees and the relocation
#     inode (reloc_recover.c): both checkers clean, the content unchanged,
#     and the kernel mounts the result (resuming the balance) with the same
#     content, both checkers clean after it.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip reloc "$LOOP_WHY"
	exit 0
fi
if [ ! -c /dev/fuse ]; then
	skip reloc "no /dev/fuse"
	exit 0
fi

# A subvolume of 150 files (a tree of two levels), its snapshot sharing it,
# data in the top level, then a full balance.
{
	echo "mkdir /d"
	echo "create /d/a"
	echo "write /d/a 0 1M 1"
	echo "subvol-create /v"
	i=1
	while [ $i -le 150 ]; do
		echo "create /v/f$i"
		echo "write /v/f$i 0 $((i * 37 % 9000 + 5000)) $i"
		i=$((i + 1))
	done
	echo "snapshot /v /s"
	echo "write /s/f7 0 100 9"
	echo "sync"
	echo "balance"
} >"$T/bal.wl"

run reloc-explore 0 "$BTRSIM" explore --target kernel --max-subset 0 --samples 0 --torn 0 \
	--db "$T/bal.db" "$T/bal.wl"
out_has '^308 operations, [0-9]+ crash points, [0-9]+ crash states .*, 0 violations'
done_check

n=$(sqlite3 "$T/bal.db" "select count(*) from crash_states" 2>/dev/null || echo 0)
reloc=0
k=0
NAME=reloc-states
while [ "$k" -lt "$n" ]; do
	rm -rf "$T/s"
	if ! "$BTRSIM" replay --db "$T/bal.db" 1 --crash-state "$k" --out "$T/s" >/dev/null 2>"$T/rerr"; then
		fail "state $k: replay: $(head -c 200 "$T/rerr")"
		break
	fi
	img="$T/s/disk0.img"
	btrfs check --readonly "$img" >/dev/null 2>&1
	a=$?
	"$BTRSIM" check "$img" >"$T/ck" 2>&1
	b=$?
	if [ "$a" -ne "$b" ]; then
		fail "state $k: btrfs check exits $a, btrsim check $b: $(grep -m3 ERROR "$T/ck" | tr '\n' '|')"
		break
	fi
	if btrfs inspect-internal dump-tree -t root "$img" 2>/dev/null | grep -q 'TREE_RELOC ROOT_ITEM'; then
		reloc=$((reloc + 1))
		[ -f "$T/mid.img" ] || cp "$img" "$T/mid.img"
	fi
	k=$((k + 1))
done
[ "$n" -gt 0 ] || fail "no crash state recorded"
[ "$reloc" -gt 0 ] || fail "no crash state of the $n caught the balance mid-relocation"
done_check
echo "# $reloc of $n crash states hold relocation trees"

if [ -f "$T/mid.img" ]; then
	img="$T/mid.img"
	btrfs inspect-internal dump-tree -t data_reloc "$img" >"$T/dr" 2>&1
	run reloc-state-shape 0 true
	grep -q 'EXTENT_DATA' "$T/dr" || fail "the data relocation inode holds no moved copy"
	grep -q 'ORPHAN_ITEM' "$T/dr" || fail "the data relocation inode has no orphan item"
	done_check

	run reloc-view 0 "$BTRSIM" manifest "$img"
	cp "$OUT" "$T/before.man"
	done_check

	run reloc-write 0 "$BTRSIM" mkdir "$img" /after
	done_check
	run reloc-dropped 0 true
	btrfs inspect-internal dump-tree -t root "$img" 2>/dev/null | grep -q 'TREE_RELOC ROOT_ITEM' &&
		fail "relocation trees left after a change"
	btrfs inspect-internal dump-tree -t root "$img" 2>/dev/null | grep -q 'BALANCE TEMPORARY_ITEM' ||
		fail "the balance item is gone (it is kept, to be resumed)"
	btrfs inspect-internal dump-tree -t data_reloc "$img" 2>/dev/null | grep -q 'EXTENT_DATA\|ORPHAN_ITEM' &&
		fail "the data relocation inode is left"
	done_check
	check reloc-after-write

	run reloc-content 0 "$BTRSIM" manifest "$img"
	grep -v '^/after ' "$OUT" | sed 1d >"$T/after.man"
	sed 1d "$T/before.man" >"$T/before.rest"
	cmp -s "$T/before.rest" "$T/after.man" ||
		fail "content changed: $(diff "$T/before.rest" "$T/after.man" | head -4 | tr '\n' '|')"
	grep -q '^/after d' "$OUT" || fail "the new directory is missing"
	cp "$OUT" "$T/ref.man"
	done_check

	NAME=reloc-kernel-mount
	if attach "$img" && mount_dev "$T/mp" "" "$LOOP"; then
		"$BTRSIM" manifest --host "$T/mp" >"$T/k.man" 2>"$T/kerr" || fail "manifest --host: $(head -c 200 "$T/kerr")"
		unmount "$T/mp" || fail "umount"
		cleanup_mounts
		sed 1d "$T/k.man" >"$T/k.rest"
		sed 1d "$T/ref.man" >"$T/r.rest"
		cmp -s "$T/k.rest" "$T/r.rest" ||
			fail "the kernel's mount differs: $(diff "$T/r.rest" "$T/k.rest" | head -4 | tr '\n' '|')"
	else
		fail "the kernel does not mount ref's result"
	fi
	done_check
	check reloc-after-kernel
fi
