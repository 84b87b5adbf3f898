#!/bin/sh
# The v1 space cache (issue 20): a file system made with `mkfs.btrfs -R
# ^free-space-tree` and used by the kernel with space_cache=v1 holds a
# free-space file per block group of 100 MiB or more (inodes of the root
# tree, FREE_SPACE items).  On such images:
#   - btrsim check agrees with btrfs check (both clean: the cache files'
#     extents are referenced, the loaded caches equal the extent tree), and
#     the reading commands show what the kernel's mount shows;
#   - a cache page whose crc32c is damaged is not loaded (no error, as btrfs
#     check and the kernel);
#   - a writing command converts the file system to the free-space tree in a
#     commit of its own, as the kernel's space_cache=v2 does: no FREE_SPACE
#     item nor cache inode left, compat_ro FREE_SPACE_TREE(_VALID),
#     cache_generation 0; both checkers clean, the kernel mounts the same
#     content and writes on;
#   - a log the kernel wrote on a v1 file system is replayed by ref (the
#     cache then stale, cache_generation behind: the kernel rebuilds it).
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip kernel-space-cache-v1 "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"
mkdir -p "$MP"

sb_field() {
	btrfs inspect-internal dump-super "$1" 2>/dev/null | awk -v f="$2" '$1 == f { print $2 }'
}
cache_items() {
	btrfs inspect-internal dump-tree -t root "$1" 2>/dev/null | grep -c 'key (FREE_SPACE UNTYPED'
}

# An 8 GiB sparse image: its data and metadata block groups pass the
# kernel's 100 MiB floor for a cache file.
NAME=kernel-writes-v1-cache
BAD=0
truncate -s 8G "$T/v1.img"
mkfs.btrfs -q -f -R ^free-space-tree "$T/v1.img" >/dev/null 2>&1 || fail "mkfs.btrfs -R ^free-space-tree"
if attach "$T/v1.img" && mount_dev "$MP" space_cache=v1,nodiscard "$LOOP"; then
	mkdir "$MP/d"
	seq 1 100000 >"$MP/d/f"
	head -c 3000000 /dev/urandom >"$MP/big"
	ln "$MP/big" "$MP/d/big2"
	sync
	echo x >"$MP/y"
	rm "$MP/d/f"
	"$BTRSIM" manifest --host "$MP" >"$T/kernel.mf" 2>"$T/kernel.err" || fail "manifest --host"
	unmount "$MP"
else
	fail "mount -o space_cache=v1"
fi
cleanup_mounts
[ "$(cache_items "$T/v1.img")" -ge 2 ] || fail "the kernel wrote no v1 cache (the test's premise)"
[ "$(sb_field "$T/v1.img" cache_generation)" = "$(sb_field "$T/v1.img" generation)" ] ||
	fail "the cache is not of the last generation (the test's premise)"
done_check

run check-v1-cache 0 "$BTRSIM" check "$T/v1.img"
out_has '^\[6/7\] checking the free space cache$'
out_has '^no error found$'
progs_check "$T/v1.img"
done_check

run read-v1-cache 0 "$BTRSIM" manifest "$T/v1.img"
cmp -s "$OUT" "$T/kernel.mf" || fail "ref shows another tree: $(diff "$T/kernel.mf" "$OUT" | head -4 | tr '\n' '|')"
done_check

# A damaged cache page: neither checker loads that cache, neither complains.
NAME=check-v1-cache-damaged
BAD=0
cp --sparse=always "$T/v1.img" "$T/bad.img"
ino=$(btrfs inspect-internal dump-tree -t root "$T/bad.img" | awk '/key \(FREE_SPACE UNTYPED/ { getline; sub(/.*location key \(/, ""); print $1; exit }')
logical=$(btrfs inspect-internal dump-tree -t root "$T/bad.img" |
	awk -v k="key ($ino EXTENT_DATA 0)" 'index($0, k) { f = 1 } f && /disk byte/ { print $5; exit }')
phys=$("$BTRSIM" map "$T/bad.img" "$logical" 2>/dev/null | awk '/physical/ { print $NF; exit }')
if [ -n "$phys" ]; then
	printf 'XXXX' | dd of="$T/bad.img" bs=1 seek=$((phys + 300)) conv=notrunc 2>/dev/null
	run check-v1-cache-damaged 0 "$BTRSIM" check -v "$T/bad.img"
	out_has 'not loaded: csum mismatch on free space cache page 0'
	out_has '^no error found$'
	progs_check "$T/bad.img"
else
	fail "no physical address for the cache file of inode $ino at $logical"
fi
done_check

# ref writes: the file system becomes a free-space-tree one.
cp --sparse=always "$T/v1.img" "$T/w.img"
run write-converts-to-fst 0 "$BTRSIM" mkdir "$T/w.img" /new
[ "$(cache_items "$T/w.img")" = 0 ] || fail "v1 cache items left"
[ "$(sb_field "$T/w.img" cache_generation)" = 0 ] || fail "cache_generation not 0"
[ "$(sb_field "$T/w.img" compat_ro_flags)" = 0x3 ] || fail "compat_ro_flags $(sb_field "$T/w.img" compat_ro_flags), expected 0x3"
progs_check "$T/w.img"
done_check
run write-converts-check 0 "$BTRSIM" check "$T/w.img"
out_has '^\[6/7\] checking the free space tree$'
out_has '^no error found$'
done_check
NAME=write-converts-kernel-reads
BAD=0
if attach "$T/w.img" && mount_dev "$MP" "" "$LOOP"; then
	"$BTRSIM" manifest --host "$MP" | grep -v -e '^/ ' -e '^/new ' >"$T/after.mf"
	grep -v '^/ ' "$T/kernel.mf" >"$T/before.mf"
	cmp -s "$T/before.mf" "$T/after.mf" || fail "the kernel reads other content: $(diff "$T/before.mf" "$T/after.mf" | head -4 | tr '\n' '|')"
	[ -d "$MP/new" ] || fail "/new is missing"
	head -c 5000000 /dev/urandom >"$MP/more" || fail "the kernel cannot write on"
	unmount "$MP"
else
	fail "the kernel does not mount the converted image"
fi
cleanup_mounts
progs_check "$T/w.img"
done_check

# A log the kernel wrote on a v1 file system: ref's replay commits without a
# free-space tree, leaving the cache behind the generation.
NAME=v1-log-replay
BAD=0
cp --sparse=always "$T/v1.img" "$T/l.img"
if attach "$T/l.img" && mount_dev "$MP" space_cache=v1,nodiscard,commit=300 "$LOOP"; then
	btrfs filesystem sync "$MP"
	head -c 200000 /dev/urandom >"$MP/logged"
	sync "$MP/logged"
	cp --sparse=always "$T/l.img" "$T/lc.img"
	"$BTRSIM" manifest --host "$MP" | grep '^/logged ' >"$T/logged.mf"
	unmount "$MP"
else
	fail "mount -o space_cache=v1"
fi
cleanup_mounts
if [ "$(sb_field "$T/lc.img" log_root)" = 0 ]; then
	skip v1-log-replay "the kernel committed before the copy: no log to replay"
else
	run v1-log-replay 0 "$BTRSIM" manifest "$T/lc.img"
	grep -q "^$(cut -d' ' -f1-8 "$T/logged.mf")" "$OUT" || fail "the fsynced file is not replayed as the kernel had it"
	"$BTRSIM" check "$T/lc.img" >"$T/lc.check" 2>&1 || fail "btrsim check of the image with its log"
	progs_check "$T/lc.img"
	done_check
fi
# ... and a writing command on it: replay, then the conversion.
if [ -f "$T/lc.img" ] && [ "$(sb_field "$T/lc.img" log_root)" != 0 ]; then
	cp --sparse=always "$T/lc.img" "$T/lw.img"
	run v1-log-replay-then-convert 0 "$BTRSIM" mkdir "$T/lw.img" /after
	[ "$(sb_field "$T/lw.img" log_root)" = 0 ] || fail "the log is still there"
	[ "$(sb_field "$T/lw.img" compat_ro_flags)" = 0x3 ] || fail "not converted"
	progs_check "$T/lw.img"
	"$BTRSIM" manifest "$T/lw.img" | grep -q "^$(cut -d' ' -f1-8 "$T/logged.mf")" || fail "the fsynced file is lost"
	done_check
fi
