#!/bin/sh
# `btrsim mount` (issue 25): ref served through FUSE to ordinary programs.
#   - fsops_probe.py's 112 calls give the same results on the kernel's btrfs
#     and on the FUSE mount of a copy of one image (every errno, inode
#     numbers, sizes, xattrs, readdir, a file unlinked while open);
#   - real programs pass on it: cp -a of /usr/include and tar of two of its folders verified
#     against the source, rsync -aX with xattrs, git clone then git fsck,
#     sqlite3 transactions in rollback-journal and WAL mode with
#     PRAGMA integrity_check and every row, fio with verify=crc32c; after the
#     unmount both checkers are clean and the kernel shows the same tree
#     (btrsim manifest --host of both mounts, inode numbers and mtimes too);
#   - a file unlinked while open when btrsim dies leaves an orphan that both
#     checkers accept and the next mount (kernel's or btrsim's) removes;
#   - ro leaves the image's bytes as they were; subvol= and subvolid= show
#     the subvolume;
#   - bad input: each refusal is one clear line, and no mount is left.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip fuse-mount "needs root, /dev/fuse and fusermount3"
	exit 0
fi
if ! can_loop_mount; then
	skip fuse-mount "$LOOP_WHY"
	exit 0
fi
FMP="$T/fmp"
KMP="$T/kmp"
mkdir -p "$FMP" "$KMP"
FPID=""

# fmount IMG [OPTIONS]: btrsim mount -f in the background, ready when the
# mount shows; its stderr in $T/fmount.err.
fmount() {
	"$BTRSIM" mount -f ${2:+-o "$2"} "$1" "$FMP" 2>"$T/fmount.err" &
	FPID=$!
	i=0
	while ! mountpoint -q "$FMP"; do
		kill -0 "$FPID" 2>/dev/null || { FPID=""; return 1; }
		i=$((i + 1))
		[ $i -gt 100 ] && return 1
		sleep 0.1
	done
}

# funmount: unmounts and waits for btrsim to commit and exit; 1 when it
# failed or said anything on stderr.
funmount() {
	fusermount3 -u "$FMP" 2>/dev/null || umount "$FMP" 2>/dev/null
	[ -n "$FPID" ] || return 1
	wait "$FPID"
	rc=$?
	FPID=""
	[ "$rc" -eq 0 ] && [ ! -s "$T/fmount.err" ]
}

cleanup_fuse() {
	mountpoint -q "$FMP" && { fusermount3 -u "$FMP" 2>/dev/null || umount -l "$FMP"; }
	[ -n "$FPID" ] && kill "$FPID" 2>/dev/null
	cleanup_mounts
	rm -rf "$T"
}
trap cleanup_fuse EXIT

newimg() {
	truncate -s "$2" "$1" && mkfs.btrfs -q -f "$1" >/dev/null 2>&1
}

# ---- the kernel's answers, call for call ----
NAME=probe-like-kernel
BAD=0
newimg "$T/k.img" 1G || fail "mkfs.btrfs"
cp --sparse=always "$T/k.img" "$T/f.img"
if attach "$T/k.img" && mount_dev "$KMP" "" "$LOOP"; then
	python3 "$HERE/fsops_probe.py" "$KMP" >"$T/k.out" 2>&1 || fail "probe on the kernel: $(tail -1 "$T/k.out")"
	unmount "$KMP"
else
	fail "kernel mount"
fi
cleanup_mounts
if fmount "$T/f.img"; then
	python3 "$HERE/fsops_probe.py" "$FMP" >"$T/f.out" 2>&1 || fail "probe on btrsim: $(tail -1 "$T/f.out")"
	funmount || fail "unmount: $(head -c 300 "$T/fmount.err")"
	[ "$(wc -l <"$T/k.out")" -ge 100 ] || fail "the probe stopped early: $(tail -1 "$T/k.out")"
	cmp -s "$T/k.out" "$T/f.out" || fail "answers differ: $(diff "$T/k.out" "$T/f.out" | head -6 | tr '\n' '|')"
else
	fail "btrsim mount: $(head -c 300 "$T/fmount.err")"
fi
done_check
run probe-checked 0 "$BTRSIM" check "$T/f.img"
progs_check "$T/f.img"
done_check

# ---- real programs ----
NAME=programs
BAD=0
newimg "$T/p.img" 2G || fail "mkfs.btrfs"
SRC=/usr/include
if fmount "$T/p.img"; then
	cp -a "$SRC" "$FMP/cp" || fail "cp -a"
	diff -r --no-dereference "$SRC" "$FMP/cp" >/dev/null || fail "cp -a: the copy differs"
	[ "$(rsync -a -n -i --checksum "$SRC/" "$FMP/cp/" | wc -l)" = 0 ] ||
		fail "cp -a: modes, owners or times differ: $(rsync -a -n -i --checksum "$SRC/" "$FMP/cp/" | head -3 | tr '\n' '|')"
	mkdir "$FMP/tar" && tar -C "$SRC" -cf - linux asm-generic | tar -C "$FMP/tar" -xf - || fail "tar"
	for d in linux asm-generic; do
		diff -r --no-dereference "$SRC/$d" "$FMP/tar/$d" >/dev/null || fail "tar: the copy of $d differs"
	done
	# rsync -aX of a tree with xattrs, hard links, a sparse file, a fifo
	mkdir -p "$T/x/sub" && cp -a "$SRC/linux" "$T/x/sub/" &&
		setfattr -n user.one -v 1 "$T/x/sub" && setfattr -n user.two -v 0x00ff "$T/x/sub/linux/fs.h" &&
		ln "$T/x/sub/linux/fs.h" "$T/x/hard" && truncate -s 100M "$T/x/sparse" &&
		printf x | dd of="$T/x/sparse" bs=1 seek=50M conv=notrunc status=none && mkfifo "$T/x/fifo" ||
		fail "making the rsync source"
	rsync -aXHS "$T/x/" "$FMP/rsync/" || fail "rsync -aXHS"
	[ "$(rsync -aXH -n -i --checksum "$T/x/" "$FMP/rsync/" | wc -l)" = 0 ] ||
		fail "rsync -aXH: differs: $(rsync -aXH -n -i --checksum "$T/x/" "$FMP/rsync/" | head -3 | tr '\n' '|')"
	[ "$(getfattr --only-values -n user.two "$FMP/rsync/sub/linux/fs.h" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 00ff ] ||
		fail "rsync -aX: the binary xattr"
	[ "$(stat -c %h "$FMP/rsync/hard")" = 2 ] || fail "rsync -H: the hard link"
	[ "$(stat -c %b "$FMP/rsync/sparse")" -lt 100 ] || fail "rsync: the sparse file takes $(stat -c %b "$FMP/rsync/sparse") blocks"
	git clone -q "$HERE/../.." "$FMP/repo" 2>"$T/git.err" || fail "git clone: $(head -c 200 "$T/git.err")"
	git -C "$FMP/repo" fsck --strict >/dev/null 2>"$T/git.err" || fail "git fsck: $(head -c 200 "$T/git.err")"
	for mode in delete wal; do
		sql() {
			echo "PRAGMA journal_mode=$mode; CREATE TABLE t(a INTEGER PRIMARY KEY, b);"
			for tx in 1 2 3 4 5; do
				echo "BEGIN;"
				i=0
				while [ $i -lt 400 ]; do echo "INSERT INTO t(b) VALUES (randomblob(700));"; i=$((i + 1)); done
				echo "DELETE FROM t WHERE a % 7 = $tx; COMMIT;"
			done
		}
		sql | sqlite3 "$FMP/$mode.db" >/dev/null 2>"$T/sq.err" || fail "sqlite3 $mode: $(head -c 200 "$T/sq.err")"
		sql | sqlite3 "$T/$mode.db" >/dev/null # the rows a correct file system keeps
		want="ok $(sqlite3 "$T/$mode.db" 'SELECT count(*) FROM t;') "
		[ "$(sqlite3 "$FMP/$mode.db" 'PRAGMA integrity_check; SELECT count(*) FROM t;' | tr '\n' ' ')" = "$want" ] ||
			fail "sqlite3 $mode: $(sqlite3 "$FMP/$mode.db" 'PRAGMA integrity_check; SELECT count(*) FROM t;' | tr '\n' ' ')"
	done
	fio --name=v --directory="$FMP" --size=48M --bs=16k --rw=randwrite --verify=crc32c \
		--ioengine=psync --fsync=32 --fallocate=none >"$T/fio.log" 2>&1 || fail "fio: $(grep -m2 -i 'err\|verify' "$T/fio.log" | tr '\n' '|')"
	grep -q 'err= 0' "$T/fio.log" || fail "fio reported errors"
	"$BTRSIM" manifest --ino --times --host "$FMP" >"$T/fuse.mf" || fail "manifest of the mount"
	funmount || fail "unmount: $(head -c 300 "$T/fmount.err")"
else
	fail "btrsim mount: $(head -c 300 "$T/fmount.err")"
fi
done_check
run programs-checked 0 "$BTRSIM" check "$T/p.img"
out_has '^no error found$'
progs_check "$T/p.img"
done_check
NAME=programs-kernel-view
BAD=0
if attach "$T/p.img" && mount_dev "$KMP" ro "$LOOP"; then
	"$BTRSIM" manifest --ino --times --host "$KMP" >"$T/kernel.mf" || fail "manifest of the kernel's mount"
	cmp -s "$T/fuse.mf" "$T/kernel.mf" || fail "the kernel shows another tree: $(diff "$T/fuse.mf" "$T/kernel.mf" | head -4 | tr '\n' '|')"
	git -C "$KMP/repo" fsck >/dev/null 2>&1 || fail "git fsck on the kernel's mount"
	[ "$(sqlite3 "file:$KMP/wal.db?immutable=1" 'PRAGMA integrity_check;')" = ok ] || fail "sqlite on the kernel's mount"
	unmount "$KMP"
else
	fail "kernel mount"
fi
cleanup_mounts
done_check

# ---- a file open and unlinked when btrsim dies ----
NAME=orphan-at-crash
BAD=0
newimg "$T/o.img" 512M || fail "mkfs.btrfs"
# notreelog: the directory's fsync commits, so the orphan reaches the image
if fmount "$T/o.img" notreelog; then
	head -c 200000 /dev/urandom >"$FMP/held"
	echo keep >"$FMP/keep"
	exec 7<"$FMP/held"
	rm "$FMP/held"
	python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$FMP" || fail "fsync of the directory"
	kill -9 "$FPID"
	wait "$FPID" 2>/dev/null
	FPID=""
	exec 7<&-
	fusermount3 -u "$FMP" 2>/dev/null || umount -l "$FMP"
	btrfs inspect-internal dump-tree -t fs "$T/o.img" 2>/dev/null | grep -q 'key (ORPHAN ORPHAN_ITEM 257)' ||
		fail "no orphan item for the unlinked file"
else
	fail "btrsim mount: $(head -c 300 "$T/fmount.err")"
fi
done_check
run orphan-checked 0 "$BTRSIM" check "$T/o.img"
out_has '^no error found$'
progs_check "$T/o.img"
done_check
NAME=orphan-cleaned
BAD=0
if fmount "$T/o.img"; then
	[ "$(cat "$FMP/keep")" = keep ] || fail "keep"
	touch "$FMP/after" # the first change: the orphan cleanup
	funmount || fail "unmount: $(head -c 300 "$T/fmount.err")"
	btrfs inspect-internal dump-tree -t fs "$T/o.img" | grep -q 'ORPHAN_ITEM\|key (257 INODE_ITEM' &&
		fail "the orphan or its inode is still there"
	progs_check "$T/o.img"
else
	fail "btrsim mount: $(head -c 300 "$T/fmount.err")"
fi
done_check

# ---- ro, subvol=, subvolid= ----
NAME=ro-unchanged
BAD=0
"$BTRSIM" subvolume create "$T/o.img" /sv >/dev/null && "$BTRSIM" put "$T/o.img" "$HERE/lib.sh" /sv/lib.sh >/dev/null ||
	fail "making a subvolume"
sum=$(sha256sum <"$T/o.img")
if fmount "$T/o.img" ro; then
	touch "$FMP/x" 2>"$T/touch.err" && fail "a write on ro"
	grep -q 'Read-only file system' "$T/touch.err" || fail "not EROFS: $(cat "$T/touch.err")"
	cmp -s "$FMP/sv/lib.sh" "$HERE/lib.sh" || fail "reading ro"
	funmount || fail "unmount: $(head -c 300 "$T/fmount.err")"
else
	fail "btrsim mount -o ro: $(head -c 300 "$T/fmount.err")"
fi
[ "$(sha256sum <"$T/o.img")" = "$sum" ] || fail "the image changed"
done_check
for opt in subvol=/sv subvol=sv subvolid=256; do
	NAME="mount-$opt"
	BAD=0
	if fmount "$T/o.img" "$opt,ro"; then
		[ "$(ls "$FMP")" = lib.sh ] || fail "shows $(ls "$FMP" | tr '\n' ' ')"
		[ "$(stat -c %i "$FMP")" = 256 ] || fail "the root's inode is $(stat -c %i "$FMP")"
		funmount || fail "unmount: $(head -c 300 "$T/fmount.err")"
	else
		fail "btrsim mount: $(head -c 300 "$T/fmount.err")"
	fi
	done_check
done

# ---- bad input: one line, exit 1 (2 for usage), no mount left ----
no_mount_left() { mountpoint -q "$FMP" && { fail "a mount was left"; fusermount3 -u "$FMP"; }; }
mkfs.ext4 -q -F "$T/ext4.img" 64M >/dev/null 2>&1 || truncate -s 64M "$T/ext4.img"
run mount-foreign 1 "$BTRSIM" mount -f "$T/ext4.img" "$FMP"
err_has "ext4.img"
err_lines 1
no_mount_left
done_check
run mount-missing-image 1 "$BTRSIM" mount -f "$T/none.img" "$FMP"
err_has "none.img: No such file"
no_mount_left
done_check
run mount-missing-dir 1 "$BTRSIM" mount -f "$T/o.img" "$T/nodir"
err_has "nodir: No such file or directory"
done_check
run mount-not-dir 1 "$BTRSIM" mount -f "$T/o.img" "$T/o.img"
err_has "not a directory"
done_check
run mount-bad-option 2 "$BTRSIM" mount -o compress=lz4 "$T/o.img" "$FMP"
err_has "compress=lz4"
no_mount_left
done_check
run mount-unknown-option 2 "$BTRSIM" mount -o noatime,bogus "$T/o.img" "$FMP"
err_has "unknown mount option 'noatime'"
done_check
run mount-nologreplay-rw 2 "$BTRSIM" mount -o nologreplay "$T/o.img" "$FMP"
err_has "nologreplay must be used with ro"
done_check
run mount-no-operands 2 "$BTRSIM" mount "$T/o.img"
err_has "needs at least one image and a mount point"
done_check
run mount-no-subvol 1 "$BTRSIM" mount -f -o subvol=/nothere "$T/o.img" "$FMP"
err_has "nothere"
no_mount_left
done_check
run mount-subvol-not-subvol 1 "$BTRSIM" mount -f -o subvol=/keep "$T/o.img" "$FMP"
err_has "not a subvolume"
no_mount_left
done_check
NAME=mount-in-use
BAD=0
if fmount "$T/o.img"; then
	cp --sparse=always "$T/k.img" "$T/k2.img"
	"$BTRSIM" mount -f "$T/k2.img" "$FMP" >"$OUT" 2>"$ERR" && fail "mounted twice on $FMP"
	err_has "in use"
	"$BTRSIM" mount -f "$T/o.img" "$KMP" >"$OUT" 2>"$ERR" && fail "the image mounted twice"
	err_has "o.img: in use by another btrsim mount"
	mountpoint -q "$KMP" && { fail "a mount was left on $KMP"; fusermount3 -u "$KMP"; }
	funmount || fail "unmount: $(head -c 300 "$T/fmount.err")"
else
	fail "btrsim mount: $(head -c 300 "$T/fmount.err")"
fi
done_check
