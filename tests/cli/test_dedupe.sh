#!/bin/sh
# btrsim dedupe: a tree put from a host directory with whole duplicate files,
# duplicate blocks at another offset in another file, a block alone in a
# sparse file, tails shorter than a sector, a reflink copy (cp
# --reflink=always: already shared, left alone), a file in a read-only
# snapshot whose extent differs from its writable twin (deduped into the
# snapshot), inline and unique files (nothing found).  --dry-run prints the
# ranges and leaves the image byte for byte; the real run keeps the content
# (manifest), frees exactly the extents no file references any more (the
# data block groups' used bytes, to the sector) and leaves both checkers
# clean; a second run with the same --hashfile reads no file and frees
# nothing; a file changed since is read again; a hash match whose bytes
# differ (a digest changed in the hash file) is no dedupe.  Bad input: a
# block size of 1000 and an unknown hash (exit 2), a missing PATH (ENOENT),
# a directory without -r, a hash file that is no SQLite database, of
# another block size, or of something else (exit 1).
. "$(dirname "$0")/lib.sh"
umask 022
B=$BTRSIM

src=$T/src
mkdir -p "$src/d" "$src/e"
head -c 1048576 /dev/urandom >"$src/d/big1"
cp "$src/d/big1" "$src/e/big2"
cp "$src/d/big1" "$src/big3"
# the first 512K of big1 at 128K in mix, between unique bytes
{ head -c 131072 /dev/urandom; head -c 524288 "$src/d/big1"; head -c 100000 /dev/urandom; } \
	>"$src/mix"
# big1's first block alone at 1M of a sparse file
dd if="$src/d/big1" of="$src/sparse" bs=128K count=1 seek=8 2>/dev/null
head -c 300000 /dev/urandom >"$src/uniq"
head -c 200000 /dev/urandom >"$src/t1" # 48 sectors and 3392 bytes
cp "$src/t1" "$src/t2"
echo small >"$src/small" # inline: nothing to share
cp "$src/small" "$src/small2"
img=$T/fs.img
$B mkfs --size 256M -f "$img" >/dev/null
$B put "$img" "$src" /src >/dev/null || fail "put"
$B cp --reflink=always "$img" /src/d/big1 /src/refl >/dev/null || fail "cp --reflink"
# /vol/t3 in a read-only snapshot, then written again with the same bytes:
# the snapshot keeps the old extent, /vol/t3 has a new one
$B subvolume create "$img" /vol >/dev/null
$B put "$img" "$src/t1" /vol/t3 >/dev/null
$B subvolume snapshot -r "$img" /vol /snap >/dev/null
$B write "$img" /vol/t3 "$src/t1" >/dev/null || fail "write"
NAME=setup
done_check

# What dedupe must find: big3, e/big2 and the sparse block deduped onto big1
# (the extent big1 shares with refl), mix's 512K too; t2, /vol/t3 and
# /snap/t3 onto t1; refl already shared.  Freed: the extents nothing refers
# to afterwards (mix keeps its extent: its other bytes still use it).
ranges=8
files=10
deduped=$((2 * 1048576 + 524288 + 131072 + 3 * 200000))
freed=$((2 * 1048576 + 131072 + 3 * 200704))

run help 0 "$B" dedupe --help
out_has '^usage: btrsim dedupe'; out_has 'read-only snapshots'; done_check

# ---- dry run: the ranges, nothing written ----
cp "$img" "$T/before.img"
run dry-run 0 "$B" dedupe -r --dry-run "$img" /src /vol /snap
out_has '^Scanned 11 files: 11 read, 0 from the hash file$'
out_has '^"/src/d/big1" 0 -> "/src/mix" 131072, 524288 bytes: would dedupe$'
out_has '^"/src/d/big1" 0 -> "/src/sparse" 1048576, 131072 bytes: would dedupe$'
out_has '^"/src/d/big1" 0 -> "/src/refl" 0, 1048576 bytes: already shared$'
out_has '^"/src/t1" 0 -> "/snap/t3" 0, 200000 bytes: would dedupe$'
out_has "^Found $ranges duplicate ranges in $files files; dry run: $deduped bytes "
grep -q small "$OUT" && fail "an inline file was a candidate"
grep -q uniq "$OUT" && fail "a unique file was a candidate"
cmp -s "$img" "$T/before.img" || fail "the image changed"
done_check
run dry-run-sha256 0 "$B" dedupe -r --dry-run --hash sha256 -b 64K "$img" /src /vol /snap
out_has "^Found [0-9]+ duplicate ranges in $files files; dry run: $deduped bytes "
cmp -s "$img" "$T/before.img" || fail "the image changed"
done_check

# ---- the real run, hashes kept ----
"$B" manifest "$img" >"$T/before.mf"
run dedupe 0 "$B" dedupe -r --hashfile "$T/h.db" "$img" /src /vol /snap
out_has '^Scanned 11 files: 11 read, 0 from the hash file$'
out_has '^"/src/d/big1" 0 -> "/src/big3" 0, 1048576 bytes: deduped$'
out_has '^"/src/t1" 0 -> "/snap/t3" 0, 200000 bytes: deduped$'
out_has '^"/src/d/big1" 0 -> "/src/refl" 0, 1048576 bytes: already shared$'
out_has "^Found $ranges duplicate ranges in $files files; deduped $deduped bytes \\(3\\.2 MiB\\), "
got=$(sed -n 's/.*, freed \(-*[0-9]*\) bytes$/\1/p' "$OUT")
[ -n "$got" ] || fail "no freed bytes"
[ -n "$got" ] && { [ "$got" -ge $((freed - 4096)) ] && [ "$got" -le $((freed + 4096)) ]; } ||
	fail "freed $got bytes, expected $freed"
done_check
run content 0 "$B" manifest "$img"
cmp -s "$OUT" "$T/before.mf" ||
	fail "differs: $(diff "$T/before.mf" "$OUT" | head -4 | tr '\n' '|')"
done_check
run shared 0 "$B" filefrag -v "$img" /src/e/big2
out_has 'shared'; done_check
check dedupe

# ---- again with the hash file: nothing read, nothing left to do ----
run hashfile-again 0 "$B" dedupe -r --hashfile "$T/h.db" "$img" /src /vol /snap
out_has '^Scanned 11 files: 0 read, 11 from the hash file$'
nothing="deduped 0 bytes \\(0\\.0 MiB\\), freed 0 bytes$"
out_has "^Found $ranges duplicate ranges in $files files; $nothing"
grep -q ': deduped$' "$OUT" && fail "deduped again"
done_check
printf 'new bytes' | "$B" write "$img" /src/uniq >/dev/null
run hashfile-changed 0 "$B" dedupe -r --hashfile "$T/h.db" "$img" /src /vol /snap
out_has '^Scanned 11 files: 1 read, 10 from the hash file$'; done_check
run quiet 0 "$B" dedupe -r -q --dry-run "$img" /src
out_empty; done_check

# a hash match is only a candidate: uniq's first block given big3's digest
q="UPDATE blocks SET digest = (SELECT digest FROM blocks b JOIN files f USING (subvol, ino)
	WHERE f.path = '/src/big3' AND b.off = 0)
	WHERE off = 0 AND ino = (SELECT ino FROM files WHERE path = '/src/uniq')"
cp "$T/h.db" "$T/lie.db"
sq "$T/lie.db" "$q" || fail "sqlite3"
"$B" manifest "$img" >"$T/before.mf"
run hash-collision 0 "$B" dedupe -r --hashfile "$T/lie.db" "$img" /src
out_has '^"/src/[a-z0-9/]+" 0 -> "/src/uniq" 0, 131072 bytes: differs$'
done_check
run hash-collision-content 0 "$B" manifest "$img"
cmp -s "$OUT" "$T/before.mf" || fail "content changed"
done_check
check collision

# ---- bad input ----
# (inline files are no candidates: small and small2 are not counted)
run bs-1000 2 "$B" dedupe -r -b 1000 "$img" /src
err_has 'multiple of 4K'; done_check
run bs-2k 2 "$B" dedupe -r -b 2K "$img" /src
done_check
run bad-hash 2 "$B" dedupe --hash md5 "$img" /src/t1
err_has 'xxhash or sha256'; done_check
run no-path 2 "$B" dedupe "$img"
done_check
run missing 1 "$B" dedupe "$img" /src/nope /src/t1 /src/t2
err_has '^btrsim dedupe: /src/nope: ENOENT \(No such file or directory\)$'
out_has '^Scanned 2 files: 2 read'
done_check
run no-r 1 "$B" dedupe "$img" /src
err_has '^btrsim dedupe: /src: omitting directory, -r not given$'
done_check
echo 'not a database, not at all, but text long enough to look at' >"$T/text.db"
cp "$img" "$T/before.img"
run not-sqlite 1 "$B" dedupe -r --hashfile "$T/text.db" "$img" /src
err_has 'text.db: not a hash file'
cmp -s "$img" "$T/before.img" || fail "the image changed"
done_check
run other-bs 1 "$B" dedupe -r -b 64K --hashfile "$T/h.db" "$img" /src
err_has 'made with block size 131072 and hash xxhash, not 65536 and xxhash'
done_check
run other-hash 1 "$B" dedupe -r --hash sha256 --hashfile "$T/h.db" "$img" /src
err_has 'not 131072 and sha256'
done_check
sq "$T/other.db" 'CREATE TABLE t (x)'
run other-db 1 "$B" dedupe -r --hashfile "$T/other.db" "$img" /src
err_has 'not a hash file of btrsim dedupe'
done_check
run hashfile-dir 1 "$B" dedupe -r --hashfile "$T" "$img" /src
err_has 'not a regular file'
done_check
check end
