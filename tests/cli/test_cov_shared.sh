#!/bin/sh
# Data extents shared by many files: the kernel makes 150 reflinked copies of
# a file (so the extent's back references no longer fit inline in its extent
# item and go to keyed EXTENT_DATA_REF items), then ref writes on top: a write
# into the middle of one copy, a hole punched in another, truncates, unlinks of
# the original and of 60 copies, a copy overwritten whole.  Every reference
# change decodes the extent's inline and keyed references and writes them back;
# btrfs check and btrsim check must find the image clean, the kernel's view of
# every file must equal ref's, and once the kernel has removed the rest the
# image must be clean again.  Skipped without root, loop devices or btrfs-progs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../interop/lib.sh"

command -v btrfs >/dev/null || { skip shared "btrfs-progs is not installed"; exit 0; }
can_loop_mount || { skip shared "$LOOP_WHY"; exit 0; }

img="$T/fs.img"
truncate -s 1G "$img"
"$BTRSIM" mkfs "$img" >/dev/null || { NAME=shared-mkfs; fail "mkfs"; exit 1; }

# clean NAME IMG: both checkers pass.
clean() {
	NAME=$1
	btrfs check --readonly "$2" >"$T/progs.log" 2>&1 ||
		fail "btrfs check: $(grep -m3 -iE 'error|wrong|mismatch|ref' "$T/progs.log" | tr '\n' '|')"
	"$BTRSIM" check "$2" >"$T/ref.log" 2>&1 ||
		fail "btrsim check: $(grep -m3 -i error "$T/ref.log" | tr '\n' '|')"
	done_check
}

NAME=shared-kernel-reflinks
head -c 300000 /dev/urandom >"$T/src"
if attach "$img" && mount_dev "$T/mnt" "" "$LOOP"; then
	cp "$T/src" "$T/mnt/a"
	i=1
	while [ $i -le 150 ]; do
		cp --reflink=always "$T/mnt/a" "$T/mnt/r$i" || { fail "cp --reflink r$i"; break; }
		i=$((i + 1))
	done
	detach_all
else
	fail "the kernel cannot mount ref's image"
fi
done_check
clean shared-kernel-clean "$img"
# the extent item holds some references, keyed items the rest
NAME=shared-keyed-refs
"$BTRSIM" dump-tree -t extent "$img" >"$T/extent.txt" 2>&1 || fail "dump-tree"
grep -q 'EXTENT_DATA_REF' "$T/extent.txt" || fail "no keyed EXTENT_DATA_REF items"
done_check

# ref changes the shared extent's references
{
	echo "write /r1 4096 8192 7"
	echo "fallocate /r5 8192 4096 punch-hole"
	echo "truncate /r3 1000"
	echo "truncate /r6 500000"
	echo "unlink /a"
	echo "unlink /r2"
	i=10
	while [ $i -le 69 ]; do
		echo "unlink /r$i"
		i=$((i + 1))
	done
	echo "write /r100 0 300000 9"
	echo "write /r101 299000 4000 3"
} >"$T/w.wl"
run shared-ref-writes 0 "$BTRSIM" run "$T/w.wl" "$img"
done_check
clean shared-ref-clean "$img"

NAME=shared-kernel-view
"$BTRSIM" manifest "$img" >"$T/ref.view" 2>"$T/err" || fail "manifest: $(cat "$T/err")"
if attach "$img" && mount_dev "$T/mnt" "" "$LOOP"; then
	"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view" || fail "manifest --host"
	cmp -s "$T/ref.view" "$T/kernel.view" ||
		fail "views differ (ref < > kernel): $(diff "$T/ref.view" "$T/kernel.view" | head -6 | tr '\n' '|')"
	cmp -s "$T/src" "$T/mnt/r4" || fail "r4 is no longer the original"
	[ "$(head -c 1000 "$T/src" | md5sum)" = "$(md5sum <"$T/mnt/r3")" ] || fail "r3 is not the first 1000 bytes"
	[ ! -e "$T/mnt/a" ] && [ ! -e "$T/mnt/r2" ] && [ ! -e "$T/mnt/r69" ] || fail "unlinked files are back"
	# the kernel drops every remaining reference
	rm -f "$T/mnt"/r*
	detach_all
else
	fail "the kernel cannot mount the image ref wrote"
fi
done_check
clean shared-kernel-removes-rest "$img"
NAME=shared-extent-gone
"$BTRSIM" dump-tree -t extent "$img" >"$T/extent.txt" 2>&1 || fail "dump-tree"
grep -q 'EXTENT_DATA_REF' "$T/extent.txt" && fail "references left behind"
done_check
