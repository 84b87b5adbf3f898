#!/bin/sh
# A balance or a device removal interrupted mid-relocation (issue 20): the
# kernel balances a volume served through FUSE (explore --target kernel), or
# removes a device of a three-disk RAID1 volume, and every crash state is
# rebuilt from the recorded IO.  The states caught between the commit that
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

# verify_cleanup NAME IMG...: a mid-relocation state that ref changes: the
# change first drops the relocation trees and the data relocation inode
# (reloc_recover.c); both checkers are clean, the content is as before but
# for the change, and the kernel mounts the result (resuming a balance) and
# shows the same files.  $KEPT, when set, is a root-tree item the change must
# leave (the balance item, for the kernel's next mount to resume).
KEPT=""
verify_cleanup() {
	name=$1
	shift
	# shellcheck disable=SC2086
	run "$name-view" 0 "$BTRSIM" manifest "$@"
	sed 1d "$OUT" >"$T/before.man"
	done_check
	run "$name-write" 0 "$BTRSIM" mkdir "$@" /after
	done_check
	run "$name-dropped" 0 "$BTRSIM" dump-tree -t root "$@"
	grep -q 'TREE_RELOC ROOT_ITEM' "$OUT" && fail "relocation trees left after a change"
	[ -z "$KEPT" ] || grep -q "$KEPT" "$OUT" || fail "$KEPT is gone (it is kept, to be resumed)"
	"$BTRSIM" dump-tree -t data-reloc "$@" 2>/dev/null | grep -q 'EXTENT_DATA\|ORPHAN_ITEM' &&
		fail "the data relocation inode is left"
	done_check
	run "$name-check" 0 "$BTRSIM" check "$@"
	done_check
	run "$name-content" 0 "$BTRSIM" manifest "$@"
	grep -v '^/after ' "$OUT" | sed 1d >"$T/after.man"
	cmp -s "$T/before.man" "$T/after.man" ||
		fail "content changed: $(diff "$T/before.man" "$T/after.man" | head -4 | tr '\n' '|')"
	grep -q '^/after d' "$OUT" || fail "the new directory is missing"
	sed 1d "$OUT" >"$T/ref.man"
	done_check
	NAME=$name-kernel
	attach_all "$@" || return
	set -- $DEVS
	progs_check "$1" # ref's result
	# shellcheck disable=SC2086
	if mount_dev "$T/mp" "" $DEVS; then
		"$BTRSIM" manifest --host "$T/mp" >"$T/k.man" 2>"$T/kerr" || fail "manifest --host: $(head -c 200 "$T/kerr")"
		unmount "$T/mp" || fail "umount"
		sed 1d "$T/k.man" | cmp -s - "$T/ref.man" ||
			fail "the kernel's mount differs: $(sed 1d "$T/k.man" | diff "$T/ref.man" - | head -4 | tr '\n' '|')"
		progs_check "$1" # and the kernel's after it
	else
		fail "the kernel does not mount ref's result"
	fi
	cleanup_mounts
	done_check
}

if [ -f "$T/mid.img" ]; then
	btrfs inspect-internal dump-tree -t data_reloc "$T/mid.img" >"$T/dr" 2>&1
	run reloc-state-shape 0 true
	grep -q 'EXTENT_DATA' "$T/dr" || fail "the data relocation inode holds no moved copy"
	grep -q 'ORPHAN_ITEM' "$T/dr" || fail "the data relocation inode has no orphan item"
	done_check
	KEPT='BALANCE TEMPORARY_ITEM'
	verify_cleanup reloc-balance "$T/mid.img"
	KEPT=""
	img="$T/mid.img"
	check reloc-balance-after-kernel
fi

# ---- A device removal: the same relocation, no balance item ----
# Three disks in RAID1; device 3 leaves.  The explorer judges every state
# (ref's view against the kernel's after its recovery; btrsim check of the
# state as it is, and btrfs check where it finds errors).  Ref must agree
# with the kernel in every state (no 'disagree'), and every state caught
# mid-relocation must be judged sound.  Two findings about the kernel and
# btrfs-progs show at the removal's end and are not ref's (traces/README.md,
# "What the kernel target found"): the leaving device's superblocks are wiped
# before the transaction that drops its device item commits (a crash between
# leaves a volume that mounts only degraded), and btrfs check calls the
# shrunk device's window "super total bytes smaller than real device(s)
# size".
{
	echo "mkdir /d"
	i=1
	while [ $i -le 60 ]; do
		echo "create /d/f$i"
		echo "write /d/f$i 0 $((i * 53 % 9000 + 5000)) $i"
		i=$((i + 1))
	done
	echo "subvol-create /v"
	echo "create /v/big"
	echo "write /v/big 0 1M 7"
	echo "snapshot /v /s"
	echo "sync"
	echo "device-remove 3"
	echo "create /d/after"
	echo "write /d/after 0 10K 9"
	echo "fsync /d/after"
} >"$T/rm.wl"
NAME=reloc-remove-explore
"$BTRSIM" explore --target kernel --disks 3 --profile raid1 --max-subset 0 --samples 0 \
	--torn 0 --db "$T/rm.db" "$T/rm.wl" >"$OUT" 2>"$ERR"
rc=$?
[ $rc -le 1 ] || fail "exit $rc: $(head -c 300 "$ERR")"
grep -qE 'Sanitizer|runtime error:' "$ERR" && fail "sanitizer: $(grep -m1 -E 'Sanitizer|runtime error:' "$ERR")"
out_has '^130 operations, [0-9]+ crash points, [0-9]+ crash states'
d=$(sqlite3 "$T/rm.db" "select count(*) from crash_states where verdict = 'disagree'" 2>/dev/null || echo x)
[ "$d" = 0 ] || fail "$d states where ref disagrees with the kernel"
done_check

n=$(sqlite3 "$T/rm.db" "select count(*) from crash_states" 2>/dev/null || echo 0)
reloc=0
wiped=0
k=0
NAME=reloc-remove-states
rm -f "$T/rmid.0"
while [ "$k" -lt "$n" ]; do
	rm -rf "$T/s"
	if ! "$BTRSIM" replay --db "$T/rm.db" 1 --crash-state "$k" --out "$T/s" >/dev/null 2>"$T/rerr"; then
		fail "state $k: replay: $(head -c 200 "$T/rerr")"
		break
	fi
	if "$BTRSIM" dump-tree -t root "$T"/s/disk*.img 2>/dev/null | grep -q 'TREE_RELOC ROOT_ITEM'; then
		reloc=$((reloc + 1))
		v=$(sqlite3 "$T/rm.db" "select verdict from crash_states where run_id = 1 and k = $k")
		[ "$v" = ok ] || fail "state $k, mid-relocation, is judged $v"
		if [ ! -f "$T/rmid.0" ]; then
			for d in 0 1 2; do cp "$T/s/disk$d.img" "$T/rmid.$d"; done
		fi
	fi
	"$BTRSIM" dump-super "$T/s/disk2.img" 2>/dev/null | grep -q '_BHRfS_M \[match\]' || wiped=$((wiped + 1))
	k=$((k + 1))
done
[ "$reloc" -gt 0 ] || fail "no crash state of the $n caught the removal mid-relocation"
[ "$wiped" -gt 0 ] || fail "no crash state of the $n has the device removed"
done_check
echo "# $reloc of $n crash states hold relocation trees, $wiped have device 3 gone"

if [ -f "$T/rmid.0" ]; then
	run reloc-remove-no-balance-item 0 "$BTRSIM" dump-tree -t root "$T/rmid.0" "$T/rmid.1" "$T/rmid.2"
	grep -q 'BALANCE' "$OUT" && fail "a device removal left a balance item"
	done_check
	verify_cleanup reloc-remove "$T/rmid.0" "$T/rmid.1" "$T/rmid.2"
	run reloc-remove-after-kernel 0 "$BTRSIM" check "$T/rmid.0" "$T/rmid.1" "$T/rmid.2"
	done_check
fi
