#!/bin/sh
# btrsim du (compsize's output) and btrsim filefrag (e2fsprogs filefrag's) on
# images written by put and run: compressed, incompressible, inline and
# preallocated data counted exactly, extents shared by a snapshot counted
# once, -b, -x, several paths and a volume of two images; filefrag's counts
# for a file written at once, the same compressed, an empty file, a file with
# holes, a fragmented one, a directory, a symlink; -v's table; bad input.
# The same images against compsize and the kernel's FIEMAP:
# tests/interop/test_du.sh.
. "$(dirname "$0")/lib.sh"
umask 022

img=$T/fs.img
truncate -s 1G "$img"
run mkfs 0 "$BTRSIM" mkfs --seed 1 --time 1700000000 "$img"
done_check

# out_is NAME: stdout is exactly the text on standard input.
out_is() {
	cat >"$T/want"
	cmp -s "$T/want" "$OUT" || fail "stdout differs (want < > got): $(diff "$T/want" "$OUT" | head -8 | tr '\n' '|')"
}

src=$T/src
mkdir -p "$src"
yes hello | head -c 300000 >"$src/yes.txt"
head -c 300000 /dev/urandom >"$src/rand.bin"
yes hello | head -c 1000 >"$src/small.txt"
yes hello | head -c 1048576 >"$src/text1m"
head -c 1048576 /dev/urandom >"$src/rand1m"
: >"$src/empty"

"$BTRSIM" mkdir "$img" /z && "$BTRSIM" mkdir "$img" /plain && "$BTRSIM" mkdir "$img" /emptydir &&
	"$BTRSIM" put --compress=zstd "$img" "$src/yes.txt" /z/yes.txt &&
	"$BTRSIM" put --compress=zstd "$img" "$src/rand.bin" /z/rand.bin &&
	"$BTRSIM" put --compress=zstd "$img" "$src/text1m" /z/text1m &&
	"$BTRSIM" put "$img" "$src/small.txt" /plain/small.txt &&
	"$BTRSIM" put "$img" "$src/rand.bin" /plain/rand.bin &&
	"$BTRSIM" put "$img" "$src/rand1m" /plain/rand1m &&
	"$BTRSIM" put "$img" "$src/empty" /plain/empty &&
	"$BTRSIM" ln -s "$img" plain/rand1m /link >"$T/setup.log" 2>&1 ||
	echo "FAIL du-setup: $(cat "$T/setup.log")"
cat >"$T/w.wl" <<'EOF'
create /pre
fallocate /pre 0 1M
create /hole
write /hole 0 64K 1
write /hole 1M 64K 2
create /frag
write /frag 0 4K 1
write /frag 8K 4K 2
write /frag 16K 4K 3
write /frag 4K 4K 4
subvol-create /sv
create /sv/f
write /sv/f 0 300K 5
EOF
run setup-workload 0 "$BTRSIM" run "$T/w.wl" "$img"
done_check

# ---- Help and usage ----

run help-lists-them 0 "$BTRSIM" --help
out_has '^  du +disk usage'; out_has '^  filefrag +how many extents'; done_check
for c in du filefrag; do
	run "$c-help" 0 "$BTRSIM" "$c" --help
	out_has "^usage: btrsim $c \[options\] IMG\.\.\. PATH\.\.\."; err_empty; done_check
	run "$c-no-operands" 2 "$BTRSIM" "$c"
	err_has "^btrsim $c: needs at least one image and a path"; err_has "^usage: btrsim $c"
	out_empty; done_check
	run "$c-image-only" 2 "$BTRSIM" "$c" "$img"
	err_has "^btrsim $c: needs at least one image and a path"; done_check
	run "$c-bad-option" 2 "$BTRSIM" "$c" --bogus "$img" /z
	err_has "^btrsim $c: unknown option '--bogus'"; err_has "^usage: btrsim $c"; done_check
done

# ---- du: compsize's numbers and layout ----

# 300000 bytes of text under zstd: three extents (128K, 128K, 40K of
# input), each a sector on disk, written one after another: one fragment.
run du-zstd 0 "$BTRSIM" du "$img" /z/yes.txt
out_is <<'EOF'
Processed 1 file, 3 regular extents (3 refs), 0 inline, 1 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL        4%       12K         296K         296K       
zstd         4%       12K         296K         296K       
EOF
err_empty; done_check

# Random bytes do not compress: stored as they are, one extent.
run du-incompressible 0 "$BTRSIM" du "$img" /z/rand.bin
out_is <<'EOF'
Processed 1 file, 1 regular extents (1 refs), 0 inline, 1 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL      100%      296K         296K         296K       
none       100%      296K         296K         296K       
EOF
done_check

run du-inline 0 "$BTRSIM" du "$img" /plain/small.txt
out_is <<'EOF'
Processed 1 file, 0 regular extents (0 refs), 1 inline, 1 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL      100%     1000B        1000B        1000B       
none       100%     1000B        1000B        1000B       
EOF
done_check

run du-bytes 0 "$BTRSIM" du -b "$img" /plain/rand.bin
out_is <<'EOF'
Processed 1 file, 1 regular extents (1 refs), 0 inline, 1 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL      100%     303104       303104       303104      
none       100%     303104       303104       303104      
EOF
done_check

run du-bytes-long 0 "$BTRSIM" du --bytes "$img" /z/yes.txt
out_has '^TOTAL        4%     12288        303104       303104      $'; done_check

# Several paths, directories walked: the totals of every file named.
run du-several 0 "$BTRSIM" du "$img" /z/yes.txt /z/rand.bin /plain/small.txt
out_is <<'EOF'
Processed 3 files, 4 regular extents (4 refs), 1 inline, 3 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL       52%      308K         592K         592K       
none       100%      296K         296K         296K       
zstd         4%       12K         296K         296K       
EOF
done_check

# A file named twice is two files, its extents counted once.
run du-same-file-twice 0 "$BTRSIM" du -b "$img" /plain/rand.bin /plain/rand.bin
out_is <<'EOF'
Processed 2 files, 1 regular extents (2 refs), 0 inline, 2 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL      100%     303104       303104       606208      
none       100%     303104       303104       606208      
EOF
done_check

# A preallocated file: its own row, after the compression types.
run du-prealloc 0 "$BTRSIM" du "$img" /pre
out_is <<'EOF'
Processed 1 file, 1 regular extents (1 refs), 0 inline, 1 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL      100%      1.0M         1.0M         1.0M       
prealloc   100%      1.0M         1.0M         1.0M       
EOF
done_check

run du-prealloc-last 0 "$BTRSIM" du "$img" /pre /z/yes.txt
out_has '^TOTAL       78%      1.0M         1.2M         1.2M       $'
out_has '^zstd         4%       12K         296K         296K       $'
out_has '^prealloc   100%      1.0M         1.0M         1.0M       $'
sed -n 4p "$OUT" | grep -q '^zstd' || fail "zstd is not the row before prealloc"; done_check

# Holes count nothing: two extents of 64 KiB.
run du-holes 0 "$BTRSIM" du -b "$img" /hole
out_has '^Processed 1 file, 2 regular extents \(2 refs\), 0 inline, [12] fragments\.$'
out_has '^TOTAL      100%     131072       131072       131072      $'; done_check

# The whole tree: 11 files (the empty one and the subvolume's included),
# the symlink not followed; without the subvolume's with -x.
run du-all 0 "$BTRSIM" du -b "$img" /
out_has '^Processed 11 files, '; done_check
run du-one-file-system 0 "$BTRSIM" du -x -b "$img" /
out_has '^Processed 10 files, '; done_check
run du-into-subvolume 0 "$BTRSIM" du -x -b "$img" /sv
out_has '^Processed 1 file, 1 regular extents \(1 refs\), 0 inline, 1 fragments\.$'
out_has '^none       100%     307200       307200       307200      $'; done_check

# A snapshot shares every extent: counted once, referenced twice.
run snapshot 0 "$BTRSIM" subvolume snapshot "$img" /sv /snap
done_check
run du-snapshot-shared 0 "$BTRSIM" du -b "$img" /sv /snap
out_is <<'EOF'
Processed 2 files, 1 regular extents (2 refs), 0 inline, 2 fragments.
Type       Perc     Disk Usage   Uncompressed Referenced  
TOTAL      100%     307200       307200       614400      
none       100%     307200       307200       614400      
EOF
done_check

# Nothing regular to count.
run du-empty-file 1 "$BTRSIM" du "$img" /plain/empty
out_empty; err_has '^All empty or still-delalloced files\.$'; err_lines 1; done_check
run du-empty-dir 1 "$BTRSIM" du "$img" /emptydir
out_empty; err_has '^No files\.$'; err_lines 1; done_check
run du-symlink-not-followed 1 "$BTRSIM" du "$img" /link
err_has '^No files\.$'; done_check

# A path that is not there is said; the others are still counted.
run du-no-such-path 1 "$BTRSIM" du "$img" /nope
err_has '^btrsim du: /nope: ENOENT \(No such file or directory\)$'; err_has '^No files\.$'
out_empty; done_check
run du-no-such-path-and-one 1 "$BTRSIM" du "$img" /nope /z/yes.txt
err_has '^btrsim du: /nope: ENOENT'; out_has '^Processed 1 file, 3 regular extents'; done_check
run du-not-a-directory 1 "$BTRSIM" du "$img" /plain/small.txt/x
err_has '^btrsim du: /plain/small.txt/x: ENOTDIR'; done_check

# Not an image.
head -c 1048576 /dev/zero >"$T/zeros"
run du-not-an-image 1 "$BTRSIM" du "$T/zeros" /
err_has "^btrsim du: $T/zeros: "; out_empty; done_check
run du-no-such-image 1 "$BTRSIM" du "$T/none.img" /
err_has "^btrsim du: $T/none.img: No such file"; out_empty; done_check

# ---- filefrag: the kernel's FIEMAP extents, filefrag's count ----

run filefrag-counts 0 "$BTRSIM" filefrag "$img" /plain/rand1m /z/text1m /plain/empty /hole /frag /plain/small.txt /emptydir
out_is <<'EOF'
/plain/rand1m: 1 extent found
/z/text1m: 8 extents found
/plain/empty: 0 extents found
/hole: 1 extent found
/frag: 3 extents found
/plain/small.txt: 1 extent found
/emptydir: 0 extents found
EOF
err_empty; done_check

# A symlink is followed (open(2)).
run filefrag-symlink 0 "$BTRSIM" filefrag "$img" /link
out_is <<'EOF'
/link: 1 extent found
EOF
done_check

# The table: a file written at once, compressed extents, inline data.
run filefrag-v 0 "$BTRSIM" filefrag -v "$img" /plain/rand1m
out_has '^Filesystem type is: 9123683e$'
out_has '^File size of /plain/rand1m is 1048576 \(256 blocks of 4096 bytes\)$'
out_has '^ ext:     logical_offset:        physical_offset: length:   expected: flags:$'
out_has '^   0:        0\.\.     255: +[0-9]+\.\. +[0-9]+:    256:             last,eof$'
out_has '^/plain/rand1m: 1 extent found$'; done_check
run filefrag-v-compressed 0 "$BTRSIM" filefrag -v "$img" /z/yes.txt
out_has '^   0:        0\.\.      31: +[0-9]+\.\. +[0-9]+:     32:             encoded$'
out_has '^   1:       32\.\.      63: +[0-9]+\.\. +[0-9]+:     32: +[0-9]+: encoded$'
out_has '^   2:       64\.\.      73: +[0-9]+\.\. +[0-9]+:     10: +[0-9]+: last,encoded,eof$'
out_has '^/z/yes.txt: 3 extents found$'; done_check
run filefrag-v-inline 0 "$BTRSIM" filefrag -v "$img" /plain/small.txt
out_has '^File size of /plain/small.txt is 1000 \(1 block of 4096 bytes\)$'
out_has '^   0:        0\.\.    4095:          0\.\.      4095:   4096:             last,not_aligned,inline,eof$'
done_check
run filefrag-v-prealloc-shared 0 "$BTRSIM" filefrag -v "$img" /pre /snap/f
out_has '^   0:        0\.\.     255: +[0-9]+\.\. +[0-9]+:    256:             last,unwritten,eof$'
out_has '^   0:        0\.\.      74: +[0-9]+\.\. +[0-9]+:     75:             last,shared,eof$'
# Another subvolume is another device: the type again.
n=$(grep -c '^Filesystem type is' "$OUT"); [ "$n" -eq 2 ] || fail "$n 'Filesystem type' lines"
done_check

# A directory with entries: no FIEMAP there, nor FIBMAP.
run filefrag-directory 1 "$BTRSIM" filefrag "$img" /plain /z/yes.txt
err_has '^btrsim filefrag: /plain: FIBMAP/FIEMAP unsupported$'
out_is <<'EOF'
/z/yes.txt: 3 extents found
EOF
done_check
run filefrag-no-such-path 1 "$BTRSIM" filefrag "$img" /nope
err_has '^btrsim filefrag: /nope: ENOENT \(No such file or directory\)$'; out_empty; done_check
run filefrag-not-an-image 1 "$BTRSIM" filefrag "$T/zeros" /x
err_has "^btrsim filefrag: $T/zeros: "; out_empty; done_check

# ---- Two images: one volume, the operands split where the paths begin ----

a=$T/a.img
b=$T/b.img
truncate -s 512M "$a" "$b"
"$BTRSIM" mkfs -d raid1 "$a" "$b" >/dev/null && "$BTRSIM" put --compress=zstd "$a" "$b" "$src/yes.txt" /y >/dev/null ||
	echo "FAIL du-two-images-setup"
run du-two-images 0 "$BTRSIM" du "$a" "$b" /y
out_has '^zstd         4%       12K         296K         296K       $'; done_check
run filefrag-two-images 0 "$BTRSIM" filefrag "$b" "$a" /y
out_is <<'EOF'
/y: 3 extents found
EOF
done_check
run du-one-of-two-images 1 "$BTRSIM" du "$a" /y
out_empty; done_check
