#!/bin/sh
# The commands that change a file system on images: mkdir, mknod, rm, mv, ln,
# truncate, write and put.  Each one's success path, seen through ls, cat and
# stat; their failures (exit 1, one line naming the errno) and bad usage
# (exit 2); `put` of a host tree brought back by `extract` and compared; and
# `btrsim check` (and `btrfs check` when installed) clean after all of it.
. "$(dirname "$0")/lib.sh"
umask 022
export TZ=UTC

img=$T/fs.img
truncate -s 256M "$img"
run mkfs 0 "$BTRSIM" mkfs --seed 1 --time 1700000000 "$img"
done_check


# ---- Help and usage ----

run help-lists-them 0 "$BTRSIM" --help
for c in mkdir mknod rm mv ln truncate write put; do out_has "^  $c "; done
done_check

for c in mkdir mknod rm mv ln truncate write put; do
	run "$c-help" 0 "$BTRSIM" "$c" --help
	out_has "^usage: btrsim $c "; err_empty; done_check
	run "$c-no-operands" 2 "$BTRSIM" "$c"
	err_has "^btrsim $c: needs at least one image"; err_has "^usage: btrsim $c"; out_empty
	done_check
	run "$c-bad-option" 2 "$BTRSIM" "$c" --bogus "$img" /x /y
	err_has "^btrsim $c: unknown option '--bogus'"; err_has "^usage: btrsim $c"; done_check
done

run mkdir-image-only 2 "$BTRSIM" mkdir "$img"
err_has 'needs at least one image and PATH'; done_check
run mkdir-bad-mode 2 "$BTRSIM" mkdir -m 0999 "$img" /x
err_has "bad mode '0999'"; done_check
run mv-one-path 2 "$BTRSIM" mv "$img" /a
err_has 'needs at least one image and OLD NEW'; done_check
run mv-both-flags 2 "$BTRSIM" mv --noreplace --exchange "$img" /a /b
err_has 'exclude each other'; done_check
run truncate-no-size 2 "$BTRSIM" truncate "$img" /f
err_has 'needs -s SIZE'; done_check
run truncate-bad-size 2 "$BTRSIM" truncate -s 12Q "$img" /f
err_has "bad size '12Q'"; done_check
run write-bad-offset 2 "$BTRSIM" write --offset x "$img" /f
err_has "bad offset 'x'"; done_check
run write-too-many 2 "$BTRSIM" write "$img" /f "$T/a" "$T/b"
err_has 'the file system has 1 device: give 1 image, PATH and optionally SRC'; done_check
run put-two-operands 2 "$BTRSIM" put "$img" /x
err_has 'needs at least one image, SRC and DEST'; done_check

# ---- Images that cannot be used: exit 1, one line ----

run missing-image 1 "$BTRSIM" mkdir "$T/no-such.img" /a
err_has "^btrsim mkdir: $T/no-such.img: No such file or directory$"; err_lines 1; out_empty
done_check
head -c 1048576 /dev/zero >"$T/zero.img"
run not-btrfs 1 "$BTRSIM" rm "$T/zero.img" /a
err_has '^btrsim rm: '; err_lines 1; done_check
run put-missing-source 1 "$BTRSIM" put "$img" "$T/no-such-dir" /x
err_has "^btrsim put: $T/no-such-dir: ENOENT \(No such file or directory\)$"; err_lines 1
done_check

# ---- mknod ----

run mknod-no-type 2 "$BTRSIM" mknod "$img" /n
err_has 'needs at least one image, a NAME and a TYPE'; done_check
run mknod-no-numbers 2 "$BTRSIM" mknod "$img" /n c
err_has 'a character device needs MAJOR and MINOR'; done_check
run mknod-bad-numbers 2 "$BTRSIM" mknod "$img" /n b 4096 1
err_has 'bad device number 4096 1'; done_check
run mknod-fifo 0 "$BTRSIM" mknod "$img" /pipe p
done_check
run mknod-chr 0 "$BTRSIM" mknod -m 0600 "$img" /tty c 4 0x40
done_check
run mknod-blk 0 "$BTRSIM" mknod "$img" /loop b 7 9
done_check
run mknod-exists 1 "$BTRSIM" mknod "$img" /pipe p
err_has 'EEXIST'; done_check
run mknod-listed 0 "$BTRSIM" ls -l "$img" /
out_has '^p.* pipe$'; out_has '^crw------- .* tty$'; out_has '^b.* loop$'; done_check
run mknod-stat 0 "$BTRSIM" stat "$img" /tty
out_has 'Rdev: 4194368$'; out_has 'character special file'; done_check
for n in pipe tty loop; do run mknod-rm 0 "$BTRSIM" rm "$img" /$n; done
done_check

# ---- mkdir ----

run mkdir 0 "$BTRSIM" mkdir "$img" /a
out_empty; err_empty; done_check
run mkdir-mode 0 "$BTRSIM" mkdir -m 0700 "$img" /a/private
done_check
run mkdir-parents 0 "$BTRSIM" mkdir -p "$img" /a/b/c/d
done_check
run mkdir-parents-existing 0 "$BTRSIM" mkdir -p "$img" /a/b/c/
done_check
run mkdir-listed 0 "$BTRSIM" ls -l -R "$img" /
out_has '^drwxr-xr-x +1 +0 +0 +[0-9]+ .* a$'; out_has '^drwx------ .* private$'
out_has '^/a/b/c:$'; out_has ' d$'; done_check

run mkdir-exists 1 "$BTRSIM" mkdir "$img" /a
err_has '^btrsim mkdir: /a: EEXIST \(File exists\): '; err_lines 1; out_empty; done_check
run mkdir-no-parent 1 "$BTRSIM" mkdir "$img" /nosuch/x
err_has '^btrsim mkdir: /nosuch/x: ENOENT \(No such file or directory\): '; err_lines 1; done_check

# ---- write ----

printf 'hello, world\n' >"$T/hello"
head -c 3000000 /dev/urandom >"$T/random"
run write-create-stdin 0 sh -c "printf 'from stdin\n' | \"\$0\" write --create \"\$1\" /a/stdin" \
	"$BTRSIM" "$img"
done_check
run write-stdin-cat 0 "$BTRSIM" cat "$img" /a/stdin
out_has '^from stdin$'; done_check
run write-src 0 "$BTRSIM" write -c "$img" /a/big "$T/random"
done_check
run write-src-dash 0 sh -c '"$0" write "$1" /a/stdin - <"$2"' "$BTRSIM" "$img" "$T/hello"
done_check
run write-src-cat 0 "$BTRSIM" cat "$img" /a/big
cmp -s "$OUT" "$T/random" || fail "/a/big differs from what was written"; done_check
run write-offset 0 "$BTRSIM" write --offset 1M "$img" /a/big "$T/hello"
done_check
run write-offset-cat 0 "$BTRSIM" cat "$img" /a/big
{ head -c 1048576 "$T/random"; cat "$T/hello"; tail -c +$((1048576 + 14)) "$T/random"; } >"$T/expect"
cmp -s "$OUT" "$T/expect" || fail "/a/big after the write at 1M is not as expected"; done_check
run write-missing 1 "$BTRSIM" write "$img" /a/none "$T/hello"
err_has '^btrsim write: /a/none: ENOENT \(No such file or directory\): '; err_lines 1; done_check
run write-dir 1 "$BTRSIM" write "$img" /a "$T/hello"
err_has '^btrsim write: /a: EISDIR \(Is a directory\): '; err_lines 1; done_check
run write-missing-src 1 "$BTRSIM" write "$img" /a/stdin "$T/no-such"
err_has "^btrsim write: $T/no-such: ENOENT \(No such file or directory\)$"; err_lines 1; done_check

# ---- truncate ----

run truncate-grow 0 "$BTRSIM" truncate -s 1M "$img" /a/stdin
done_check
run truncate-grow-stat 0 "$BTRSIM" stat "$img" /a/stdin
out_has 'Size: 1048576 '; done_check
run truncate-shrink 0 "$BTRSIM" truncate --size 4 "$img" /a/stdin
done_check
run truncate-shrink-cat 0 "$BTRSIM" cat "$img" /a/stdin
[ "$(cat "$OUT")" = "hell" ] || fail "content '$(cat "$OUT")', expected 'hell'"; done_check
run truncate-creates 0 "$BTRSIM" truncate -s 10K "$img" /a/new
done_check
run truncate-creates-stat 0 "$BTRSIM" stat "$img" /a/new
out_has 'Size: 10240 .*regular file'; out_has 'Access: \(0644/'; done_check
run truncate-no-create 1 "$BTRSIM" truncate -c -s 1 "$img" /a/none
err_has '^btrsim truncate: /a/none: ENOENT '; err_lines 1; done_check
run truncate-dir 1 "$BTRSIM" truncate -s 0 "$img" /a
err_has '^btrsim truncate: /a: EISDIR '; done_check

# ---- ln ----

run ln-symbolic 0 "$BTRSIM" ln -s "$img" stdin /a/sym
done_check
run ln-hard 0 "$BTRSIM" ln "$img" /a/big /a/b/big2
done_check
run ln-listed 0 "$BTRSIM" ls -l -R "$img" /a
out_has '^lrwxrwxrwx .* sym -> stdin$'; out_has '^-rw-r--r-- +2 .* 3000000 .* big$'
out_has '^-rw-r--r-- +2 .* big2$'; done_check
run ln-exists 1 "$BTRSIM" ln -s "$img" x /a/sym
err_has '^btrsim ln: /a/sym: EEXIST '; err_lines 1; done_check
run ln-dir 1 "$BTRSIM" ln "$img" /a/b /a/b2
err_has '^btrsim ln: /a/b2: EPERM '; done_check

# ---- mv ----

run mv 0 "$BTRSIM" mv "$img" /a/new /a/renamed
done_check
run mv-old-gone 1 "$BTRSIM" stat "$img" /a/new
done_check
run mv-new-there 0 "$BTRSIM" stat "$img" /a/renamed
out_has 'Size: 10240 '; done_check
run mv-replace 0 "$BTRSIM" mv "$img" /a/renamed /a/stdin
done_check
run mv-replaced 0 "$BTRSIM" stat "$img" /a/stdin
out_has 'Size: 10240 '; done_check
run mv-noreplace 1 "$BTRSIM" mv --noreplace "$img" /a/stdin /a/big
err_has '^btrsim mv: /a/stdin -> /a/big: EEXIST \(File exists\)'; err_lines 1; done_check
run mv-exchange 0 "$BTRSIM" mv --exchange "$img" /a/stdin /a/big
done_check
run mv-exchanged 0 "$BTRSIM" stat "$img" /a/stdin
out_has 'Size: 3000000 '; done_check
run mv-dir-into-itself 1 "$BTRSIM" mv "$img" /a/b /a/b/c/d/b
err_has '^btrsim mv: /a/b -> /a/b/c/d/b: EINVAL \(Invalid argument\)'; err_lines 1; done_check
run mv-missing 1 "$BTRSIM" mv "$img" /a/none /a/x
err_has 'ENOENT'; done_check
run mv-dir 0 "$BTRSIM" mv "$img" /a/b/c /c
done_check
run mv-dir-listed 0 "$BTRSIM" ls -R "$img" /c
out_has '^d$'; done_check

# ---- rm ----

run rm-file 0 "$BTRSIM" rm "$img" /a/b/big2
done_check
run rm-file-nlink 0 "$BTRSIM" stat "$img" /a/stdin
out_has 'Links: 1$'; done_check
run rm-symlink 0 "$BTRSIM" rm "$img" /a/sym
done_check
run rm-missing 1 "$BTRSIM" rm "$img" /a/sym
err_has '^btrsim rm: /a/sym: ENOENT \(No such file or directory\)'; err_lines 1; done_check
run rm-force-missing 0 "$BTRSIM" rm -f "$img" /a/sym
err_empty; done_check
run rm-dir-without-r 1 "$BTRSIM" rm "$img" /a
err_has '^btrsim rm: /a: EISDIR \(Is a directory\)'; err_lines 1; done_check
run rm-d-not-empty 1 "$BTRSIM" rm -d "$img" /a
err_has '^btrsim rm: /a: ENOTEMPTY \(Directory not empty\)'; err_lines 1; done_check
run rm-d-empty 0 "$BTRSIM" rm -d "$img" /c/d
done_check
run rm-root 1 "$BTRSIM" rm -r "$img" /
err_has '^btrsim rm: /: EBUSY'; err_lines 1; done_check
run rm-dot 1 "$BTRSIM" rm -r "$img" /a/.
err_has '^btrsim rm: /a/.: EINVAL'; done_check
run rm-recursive 0 "$BTRSIM" rm -r "$img" /a
done_check
run rm-recursive-listed 0 "$BTRSIM" ls -l "$img" /
[ "$(grep -c ' a$' "$OUT")" -eq 0 ] || fail "/a is still listed"; out_has ' c$'; done_check

check ops

# ---- put ----

src=$T/src
mkdir -p "$src/dir/nested/deeper" "$src/empty"
: >"$src/zero"
printf 'small\n' >"$src/small"
head -c 5000 /dev/urandom >"$src/dir/5k"
head -c 3145728 /dev/urandom >"$src/dir/nested/3m"
truncate -s 100M "$src/sparse"
printf 'start' | dd of="$src/sparse" conv=notrunc 2>/dev/null
printf 'end' | dd of="$src/sparse" bs=1 seek=104857600 conv=notrunc 2>/dev/null
ln -s dir/5k "$src/link"
ln -s /nowhere/at/all "$src/dangling"
ln "$src/dir/5k" "$src/dir/nested/deeper/hard"
printf 'secret\n' >"$src/private"
chmod 0600 "$src/private"
chmod 0750 "$src/dir/nested"
chown 1234:5678 "$src/small" 2>/dev/null # as root: an owner put must keep
owner=$(stat -c '%u +%g' "$src/small")
has_xattrs=no
if command -v setfattr >/dev/null 2>&1 && setfattr -n user.colour -v blue "$src/small" 2>/dev/null
then
	has_xattrs=yes
	setfattr -n user.empty "$src/dir"
	setfattr -n trusted.t -v 0x00ff00 "$src/dir/5k" 2>/dev/null
fi
touch -d '2001-02-03 04:05:06.789' "$src/small" "$src/dir/nested/3m"
touch -d '1999-12-31 23:59:59' "$src/dir/nested" "$src/dir" "$src"

run put 0 "$BTRSIM" put "$img" "$src" /
err_empty; done_check
run put-listed 0 "$BTRSIM" ls -l -R "$img" /src
out_has '^-rw------- .* private$'; out_has '^lrwxrwxrwx .* link -> dir/5k$'
out_has '^-rw-r--r-- +2 .* 5000 .* 5k$'; out_has "^-rw-r--r-- +1 +$owner +6 2001-02-03 04:05 small\$"
out_has '^drwxr-x--- .* 1999-12-31 23:59 nested$'; done_check
run put-sparse-stat 0 "$BTRSIM" stat "$img" /src/sparse
out_has 'Size: 104857603 +Bytes: 8192 '; done_check
run put-small-stat 0 "$BTRSIM" stat "$img" /src/small
out_has 'Modify: 2001-02-03 04:05:06.789000000 '
out_has "Uid: $(stat -c '%u  Gid: %g' "$src/small")"; done_check

run put-exists 1 "$BTRSIM" put "$img" "$src" /
err_has '^btrsim put: /src: EEXIST \(File exists\)'; err_lines 1; done_check
run put-onto-file 1 "$BTRSIM" put "$img" "$src/small" /src/small
err_has '^btrsim put: /src/small: EEXIST \(File exists\): exists and is not a directory$'
err_lines 1; done_check
run put-file-renamed 0 "$BTRSIM" put "$img" "$src/small" /copy
done_check
run put-file-renamed-cat 0 "$BTRSIM" cat "$img" /copy
out_has '^small$'; done_check
run put-contents 0 "$BTRSIM" put "$img" "$src/dir/." /c
done_check
run put-contents-listed 0 "$BTRSIM" ls "$img" /c
out_has '^5k$'; out_has '^nested$'; done_check

mkfifo "$src/fifo"
run put-fifo 0 "$BTRSIM" put "$img" "$src" /src2
err_empty; done_check
run put-fifo-made 0 "$BTRSIM" stat "$img" /src2/fifo
out_has 'fifo'; done_check
rm -f "$src/fifo"
run put-fifo-rest-copied 0 "$BTRSIM" cat "$img" /src2/small
out_has '^small$'; done_check

check put

# What went in comes out: extract and compare.
run put-extract 0 "$BTRSIM" extract "$img" "$T/out"
done_check
run put-diff 0 diff -r --no-dereference "$src" "$T/out/src"
[ -s "$OUT" ] && fail "$(head -c 300 "$OUT")"
done_check
# stat of each: type, mode, owner, size, links and mtime; of symlinks type,
# size and links (they get root and the time of the copy), of directories no
# size or links (those of the host file system's own making).
desc() {
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort | while read -r f; do
		if [ -L "$f" ]; then
			stat -c '%n %F %s %h' "$f"
		elif [ -d "$f" ]; then
			stat -c '%n %F %a %u:%g %y' "$f"
		else
			stat -c '%n %F %a %u:%g %s %h %y' "$f"
		fi
	done)
}
desc "$src" >"$T/host.desc"
desc "$T/out/src" >"$T/fs.desc"
run put-stat-equal 0 diff "$T/host.desc" "$T/fs.desc"
[ -s "$OUT" ] && fail "$(head -c 600 "$OUT")"
done_check
if [ "$has_xattrs" = yes ]; then
	(cd "$src" && getfattr -R -d -m - -e hex . 2>/dev/null) >"$T/host.xattr"
	(cd "$T/out/src" && getfattr -R -d -m - -e hex . 2>/dev/null) >"$T/fs.xattr"
	run put-xattrs-equal 0 diff "$T/host.xattr" "$T/fs.xattr"
	[ -s "$OUT" ] && fail "$(head -c 600 "$OUT")"
	grep -q 'user.colour=0x626c7565' "$T/fs.xattr" || fail "user.colour was not copied"
	done_check
else
	echo "SKIP put-xattrs-equal: setfattr is missing or user xattrs are not supported here"
fi
