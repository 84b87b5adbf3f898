#!/bin/sh
# btrsim manifest: bad usage (exit 2), failures (exit 1, one line, nothing on
# stdout), the manifest of a fresh btrsim mkfs image, and the exact output for
# a host directory of known content (names that need escaping, every type the
# format names, modes, owners, hard links, xattrs, sorting).
. "$(dirname "$0")/lib.sh"

# ---- Usage ----

run manifest-help 0 "$BTRSIM" help manifest
out_has '^usage: btrsim manifest'; out_has '--host DIR'; out_has 'PATH TYPE PERM UID GID NLINK SIZE CONTENT'
err_empty; done_check

run manifest-no-arguments 2 "$BTRSIM" manifest
err_has '^btrsim manifest: needs at least one image'; err_has '^usage: btrsim manifest'; out_empty
done_check

run manifest-host-without-dir 2 "$BTRSIM" manifest --host
err_has "^btrsim manifest: option '--host' needs a value"; err_has '^usage: btrsim manifest'
out_empty; done_check

run manifest-host-empty-dir 2 "$BTRSIM" manifest --host ''
err_has '^btrsim manifest: --host needs a directory'; out_empty; done_check

run manifest-unknown-option 2 "$BTRSIM" manifest --bogus x.img
err_has "^btrsim manifest: unknown option '--bogus'"; err_has '^usage: btrsim manifest'; out_empty
done_check

run manifest-host-and-image 2 "$BTRSIM" manifest --host "$T" x.img
err_has "^btrsim manifest: --host takes no image, not 'x.img'"; out_empty; done_check

run manifest-host-and-subvol 2 "$BTRSIM" manifest --host "$T" --subvol 5
err_has '^btrsim manifest: --subvol is for images'; out_empty; done_check

run manifest-host-and-degraded 2 "$BTRSIM" manifest --degraded --host "$T"
err_has '^btrsim manifest: --degraded is for images'; out_empty; done_check

# ---- Failures: exit 1, one line ----

run manifest-no-such-image 1 "$BTRSIM" manifest "$T/no-such.img"
err_has "^btrsim manifest: $T/no-such.img: No such file or directory$"; err_lines 1; out_empty
done_check

head -c 1048576 /dev/zero >"$T/zero.img"
run manifest-not-btrfs 1 "$BTRSIM" manifest "$T/zero.img"
err_has '^btrsim manifest: '; err_lines 1; out_empty; done_check

run manifest-host-missing 1 "$BTRSIM" manifest --host "$T/no-such-dir"
err_has "^btrsim manifest: $T/no-such-dir: No such file or directory$"; err_lines 1; out_empty
done_check

run manifest-host-not-dir 1 "$BTRSIM" manifest --host "$T/zero.img"
err_has "^btrsim manifest: $T/zero.img: Not a directory$"; err_lines 1; out_empty; done_check

# ---- A fresh image ----

"$BTRSIM" mkfs --size 128M --time 1000000000 "$T/fresh.img" >/dev/null 2>&1
run manifest-fresh-image 0 "$BTRSIM" manifest "$T/fresh.img"
printf '/ d 755 0 0 1 0 -\n' | cmp -s - "$OUT" || fail "got: $(head -c 200 "$OUT")"
err_empty; done_check

run manifest-fresh-image-ino-times 0 "$BTRSIM" manifest --ino --times "$T/fresh.img"
printf '/ d 755 0 0 1 0 - i:256 m:1000000000.000000000\n' | cmp -s - "$OUT" ||
	fail "got: $(head -c 200 "$OUT")"
done_check

run manifest-fresh-image-no-times 0 "$BTRSIM" manifest --times --no-times "$T/fresh.img"
printf '/ d 755 0 0 1 0 -\n' | cmp -s - "$OUT" || fail "got: $(head -c 200 "$OUT")"
done_check

run manifest-fresh-subvol-5 0 "$BTRSIM" manifest --subvol 5 "$T/fresh.img"
printf '/ d 755 0 0 1 0 -\n' | cmp -s - "$OUT" || fail "got: $(head -c 200 "$OUT")"
done_check

run manifest-no-such-subvol 1 "$BTRSIM" manifest --subvol 300 "$T/fresh.img"
err_has '^btrsim manifest: subvolume 300: '; err_lines 1; out_empty; done_check

# ---- A host directory of known content ----

H="$T/host"
mkdir -p "$H/dir/sub" "$H/b"
printf 'hello\n' >"$H/dir/file"
ln "$H/dir/file" "$H/hard"
: >"$H/empty"
printf 'x' >"$H/a b"
printf 'y' >"$H/$(printf 'new\nline')"
printf 'z' >"$H/back\\slash"
printf 'u' >"$H/$(printf 'caf\303\251')"
ln -s 'dir/file' "$H/link"
ln -s 'has space' "$H/dangling"
mkfifo "$H/fifo"
chmod 755 "$H" "$H/dir" "$H/dir/sub" "$H/b"
chmod 644 "$H/dir/file" "$H/empty" "$H/a b" "$H/new
line" "$H/back\\slash" "$H/café"
chmod 600 "$H/fifo"
# Owners: the runner's, and for one file another (when root).
ug="$(id -u) $(id -g)"
chown -h "$(id -u):$(id -g)" "$H" "$H"/* "$H/dir/sub"
chown 1234:5678 "$H/a b" 2>/dev/null || true
chmod 4751 "$H/empty" # after chown, which clears set-user-ID
have_xattr=0
if command -v setfattr >/dev/null 2>&1 && setfattr -n user.k -v 'v=1' "$H/dir/file" 2>/dev/null; then
	setfattr -n user.empty "$H/dir/file"
	setfattr -n user.bin -v 0x00ff0a "$H/b"
	setfattr -n 'user.a=b' -v '' "$H/b"
	have_xattr=1
fi
# Directory sizes and link counts are the host file system's own.
dline() { printf '%s d 755 %s %s %s -' "$1" "$ug" "$(stat -c %h "$2")" "$(stat -c %s "$2")"; }
# The manifest's content digest, computed independently here for small files:
# sha256 of (offset 0 as 8 bytes LE, the data zero-padded to 4096, the size
# as 8 bytes LE); for an empty file just the size.
sha() { sha256sum | cut -d' ' -f1; }
le64() { v=$1; i=0; while [ $i -lt 8 ]; do printf "\\$(printf %03o $((v % 256)))"; v=$((v / 256)); i=$((i + 1)); done; }
mfsha() {
	cat >"$T/mfsha.in"
	n=$(wc -c <"$T/mfsha.in")
	{ le64 0; cat "$T/mfsha.in"; head -c $((4096 - n)) /dev/zero; le64 "$n"; } | sha
}
e3=$(le64 0 | sha)
{
	echo "$(dline / "$H")"
	echo "/a\\x20b f 644 $(stat -c '%u %g' "$H/a b") 1 1 $(printf x | mfsha)"
	if [ $have_xattr -eq 1 ]; then echo "$(dline /b "$H/b") x:user.a\\x3db= x:user.bin=00ff0a"; else dline /b "$H/b"; echo; fi
	echo "/back\\x5cslash f 644 $ug 1 1 $(printf z | mfsha)"
	echo "/caf\\xc3\\xa9 f 644 $ug 1 1 $(printf u | mfsha)"
	echo "/dangling l 777 $ug 1 9 -> has\\x20space"
	dline /dir "$H/dir"; echo
	if [ $have_xattr -eq 1 ]; then x=" x:user.empty= x:user.k=763d31"; else x=""; fi
	echo "/dir/file f 644 $ug 2 6 $(printf 'hello\n' | mfsha)$x"
	dline /dir/sub "$H/dir/sub"; echo
	echo "/empty f 4751 $ug 1 0 $e3"
	echo "/fifo p 600 $ug 1 0 -"
	echo "/hard f 644 $ug 2 6 $(printf 'hello\n' | mfsha)$x"
	echo "/link l 777 $ug 1 8 -> dir/file"
	echo "/new\\x0aline f 644 $ug 1 1 $(printf y | mfsha)"
} >"$T/want"

run manifest-host-known 0 "$BTRSIM" manifest --host "$H"
cmp -s "$T/want" "$OUT" || fail "differs: $(diff "$T/want" "$OUT" | head -6 | tr '\n' '|')"
err_empty; done_check

run manifest-host-trailing-slash 0 "$BTRSIM" manifest --host "$H/"
cmp -s "$T/want" "$OUT" || fail "differs from without the slash"
done_check

run manifest-host-sorted 0 "$BTRSIM" manifest --host "$H"
LC_ALL=C sort "$OUT" | cmp -s - "$OUT" || fail "LC_ALL=C sort changes the order"
done_check

run manifest-host-ino-times 0 "$BTRSIM" manifest --ino --times --host "$H"
want="/dir/file f 644 $ug 2 6 $(printf 'hello\n' | mfsha) i:$(stat -c %i "$H/dir/file") m:$(stat -c %.9Y "$H/dir/file")$x"
grep -qxF -- "$want" "$OUT" || fail "no line '$want' in: $(grep '^/dir/file' "$OUT")"
done_check

# An unreadable file: one line naming it, nothing on stdout (root reads
# anything, so the walk runs as nobody where setpriv can do that).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	U="$T/unreadable"
	mkdir -p "$U/d"
	echo secret >"$U/d/f"
	chmod 700 "$U/d/f"
	chmod 755 "$T" "$U" "$U/d"
	# Under the coverage build, nobody cannot write the .gcda files: send them aside.
	mkdir -p "$T/gcov-nobody" && chmod 777 "$T/gcov-nobody"
	export GCOV_PREFIX="$T/gcov-nobody"
	run manifest-host-unreadable 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$BTRSIM" manifest --host "$U"
	err_has "^btrsim manifest: $U/d/f: Permission denied$"; err_lines 1; out_empty; done_check
	chmod 000 "$U/d"
	run manifest-host-unreadable-dir 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$BTRSIM" manifest --host "$U"
	err_has "^btrsim manifest: $U/d: Permission denied$"; err_lines 1; out_empty; done_check
	chmod 755 "$U/d"
	unset GCOV_PREFIX
else
	echo "SKIP manifest-host-unreadable: needs root and setpriv"
fi

# Holes and written zeros hash alike; the data around them still counts.
Z="$T/zeros"
mkdir -p "$Z"
truncate -s 1M "$Z/sparse" && printf x | dd of="$Z/sparse" bs=1 seek=614400 conv=notrunc 2>/dev/null
{ head -c 614400 /dev/zero; printf x; head -c $((1048576 - 614401)) /dev/zero; } >"$Z/dense"
{ head -c 614400 /dev/zero; printf y; head -c $((1048576 - 614401)) /dev/zero; } >"$Z/other"
run manifest-holes-hash-as-zeros 0 "$BTRSIM" manifest --host "$Z"
s1=$(awk '$1 == "/sparse" { print $8 }' "$OUT")
s2=$(awk '$1 == "/dense" { print $8 }' "$OUT")
s3=$(awk '$1 == "/other" { print $8 }' "$OUT")
[ -n "$s1" ] && [ "$s1" = "$s2" ] || fail "sparse $s1, dense $s2"
[ "$s1" != "$s3" ] || fail "a changed byte did not change the digest"
done_check

# ---- Files far larger than their data ----
# A byte written just below 2^63: the image side finds the data through the
# extents (ref_next_data) instead of reading 2^63 bytes of holes (which never
# ended), and preallocated and punched ranges read as zeros, all with the
# digest of every byte read: the oracle's model computes it from its own
# extents (explore compares the two in every crash state), and the host side
# from SEEK_DATA on a tmpfs copy (whose SEEK_DATA misses the last page below
# 2^63: that page is always read).
cat >"$T/big.wl" <<'W'
create /huge
write /huge 0x7fffffffffffff00 1 1
create /late
write /late 0x7fffffffffff0000 65535 5
write /late 0x7fffffffffff0000 65536 6 = EINVAL
create /sparse
write /sparse 0 5000 2
fallocate /sparse 1M 2M
write /sparse 1536K 10 3
write /sparse 5M 8K 4
fallocate /sparse 5M 4K punch-hole
fallocate /sparse 9M 1M keep-size
truncate /sparse 12M
write /sparse 12582911 1 7
create /prealloc
fallocate /prealloc 0 3M
W
truncate -s 256M "$T/big.img"
"$BTRSIM" mkfs "$T/big.img" >/dev/null 2>&1
run manifest-huge-sparse-run 0 "$BTRSIM" run "$T/big.wl" "$T/big.img"
done_check
run manifest-huge-sparse 0 "$BTRSIM" manifest "$T/big.img"
out_has '^/huge f 644 0 0 1 9223372036854775553 [0-9a-f]{64}$'
out_has '^/late f 644 0 0 1 9223372036854775807 [0-9a-f]{64}$'
out_has '^/sparse f 644 0 0 1 12582912 [0-9a-f]{64}$'
out_has '^/prealloc f 644 0 0 1 3145728 [0-9a-f]{64}$'
done_check
grep -v '^/ ' "$OUT" >"$T/big.ref"
run manifest-huge-sparse-model 0 "$BTRSIM" explore --max-subset 2 --samples 2 "$T/big.wl"
out_has ' 0 violations$'
done_check
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && S=$(mktemp -d /dev/shm/btrsim-XXXXXX); then
	run manifest-huge-sparse-host 0 "$BTRSIM" run --host "$S" "$T/big.wl"
	"$BTRSIM" manifest --host "$S" 2>&1 | grep -v '^/ ' >"$T/big.host"
	cmp -s "$T/big.ref" "$T/big.host" ||
		fail "ref and tmpfs differ: $(diff "$T/big.ref" "$T/big.host" | head -4 | tr '\n' '|')"
	rm -rf "$S"
	done_check
else
	echo "SKIP manifest-huge-sparse-host: /dev/shm is not a tmpfs"
fi
