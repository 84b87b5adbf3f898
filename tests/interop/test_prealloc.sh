#!/bin/sh
# Prealloc extents the kernel made (issue 20): fallocate within and past
# i_size (-n, KEEP_SIZE), a write into the middle of one (the extent split
# into prealloc, regular, prealloc), and a file whose prealloc extent lies
# wholly past its end:
#   - ref reads every file as the kernel does (unwritten ranges as zeros) and
#     btrsim check's verdict equals btrfs check's (clean);
#   - ref writes into the prealloc ranges and past them; both checkers stay
#     clean and the kernel reads ref's result as ref does.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v fallocate >/dev/null || { skip prealloc "fallocate (util-linux) is not installed"; exit 0; }
if ! can_loop_mount; then
	skip prealloc "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"
mkdir -p "$MP"
img="$T/p.img"
truncate -s 256M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1
head -c 20000 /dev/urandom >"$T/data"

NAME=prealloc-make
if attach "$img" && mount_dev "$MP" "" "$LOOP"; then
	fallocate -l 1M "$MP/a"
	dd if="$T/data" of="$MP/a" bs=4096 seek=100 conv=notrunc 2>/dev/null
	: >"$MP/b"
	fallocate -n -l 512K "$MP/b"
	printf 'head\n' >"$MP/c"
	fallocate -n -o 1M -l 256K "$MP/c"
	unmount "$MP" || fail "umount"
else
	fail "the kernel does not mount a new file system"
fi
cleanup_mounts
n=$(btrfs inspect-internal dump-tree -t 5 "$img" | grep -c 'type 2 (prealloc)')
[ "$n" -ge 4 ] || fail "the kernel made $n prealloc extents, expected 4 or more"
done_check
check prealloc-kernel

# same_as_kernel NAME: ref and the kernel's read-only mount read a, b, c alike.
same_as_kernel() {
	NAME=$1
	for f in a b c; do
		"$BTRSIM" cat "$img" /$f >"$T/ref.$f" 2>"$T/err" || fail "btrsim cat /$f: $(head -c 200 "$T/err")"
	done
	if attach "$img" && mount_dev "$MP" ro "$LOOP"; then
		for f in a b c; do
			cmp -s "$MP/$f" "$T/ref.$f" || fail "/$f reads otherwise on the kernel"
		done
		unmount "$MP" || fail "umount"
	else
		fail "the kernel does not mount it"
	fi
	cleanup_mounts
	done_check
}
same_as_kernel prealloc-read

# ref writes into the unwritten parts, across a written part, and past them.
run prealloc-ref-write-a 0 "$BTRSIM" write -o 390000 "$img" /a "$T/data"
done_check
run prealloc-ref-write-b 0 "$BTRSIM" write -o 8192 "$img" /b "$T/data"
done_check
run prealloc-ref-write-c 0 "$BTRSIM" write -o 1100000 "$img" /c "$T/data"
done_check
check prealloc-after-ref
same_as_kernel prealloc-after-ref-read
