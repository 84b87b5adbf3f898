#!/bin/sh
# btrsim dump-super and dump-tree (ref/print*.c) against btrfs-progs' `btrfs
# inspect-internal dump-super` and `dump-tree` on images that mkfs.btrfs
# --rootdir makes in several feature mixes: the outputs must be the same but
# for the known differences that norm_* below remove, and nothing else.  Then
# garbage (a truncated image, zeroed superblocks, random bytes in a superblock
# and in a tree block) must give exit 1 with one line, or print, never crash.
#
# Known differences, removed before comparing:
# - progs' first line "btrfs-progs v6.2";
# - with --tree, progs' title line ("fs tree key (FS_TREE ROOT_ITEM 0) ") and
#   its closing "total bytes/bytes used/uuid" lines;
# - blank lines at the very end (progs' dump-super -a prints one more);
# - the traversal: btrsim may walk trees depth first, progs' default is
#   breadth first (they differ only for trees of 3 levels or more), so a dump
#   passes when it is the same as either progs' default or its --dfs output.
. "$(dirname "$0")/lib.sh"

if ! command -v mkfs.btrfs >/dev/null 2>&1 || ! command -v btrfs >/dev/null 2>&1; then
	echo "SKIP dump: btrfs-progs is not installed"
	exit 0
fi

# ---- Helpers ----

# The known differences, as filters on a dump (both sides get the same).
norm_head() { sed '1{/^btrfs-progs v/d;}'; }
norm_tail() { sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}'; }
norm_tree() { # one tree: also progs' title line and closing lines
	norm_head | sed -e '1{/^\(root\|chunk\|log root\) tree$/d;}' \
		-e '1{/^[a-z ]* tree key (.*) $/d;}' |
		sed -e '/^total bytes [0-9]*$/{N;N;/\nbytes used [0-9]*\nuuid [0-9a-f-]*$/d;}'
}

# same NORM FILE: fails unless the last run's stdout, normalized, equals FILE
# (or FILE.dfs when it exists) normalized.
same() {
	"$1" <"$OUT" | norm_tail >"$T/got"
	"$1" <"$2" | norm_tail >"$T/want"
	if ! cmp -s "$T/got" "$T/want"; then
		if [ -f "$2.dfs" ]; then
			"$1" <"$2.dfs" | norm_tail >"$T/want.dfs"
			cmp -s "$T/got" "$T/want.dfs" && return
		fi
		fail "differs from btrfs-progs: $(diff "$T/want" "$T/got" | head -n 6 | tr '\n\t' '| ')"
	fi
}

# progs NAME ARGS...: btrfs inspect-internal ARGS... into $T/NAME (stderr dropped)
progs() {
	name=$1
	shift
	btrfs inspect-internal "$@" >"$T/$name" 2>/dev/null
}

# ---- The files the images are made from ----

src=$T/src
mkdir -p "$src/d/sub" "$src/links" "$src/many"
printf 'hello\n' >"$src/d/a"
head -c 3000 /dev/zero | tr '\0' x >"$src/d/inline"
head -c 700000 /dev/urandom >"$src/d/big"
head -c 200000 /dev/zero >"$src/d/zeros"
: >"$src/d/empty"
truncate -s 3M "$src/sparse"
printf 'middle' | dd of="$src/sparse" bs=1 seek=1500000 conv=notrunc 2>/dev/null
printf 'end' >>"$src/sparse"
ln -s d/a "$src/sym"
ln -s "$(printf 'l%.0s' $(seq 1 1500))" "$src/longsym"
printf 'x' >"$src/$(printf 'n%.0s' $(seq 1 255))"
# Names with a tab, a newline, a control byte and UTF-8: progs prints them raw.
printf 'x' >"$src/$(printf 'a\tb\nc\001d\303\251')"
mkfifo "$src/fifo"
ln "$src/d/a" "$src/d/sub/hard"
# 200-byte names: more than a 4 KiB leaf of INODE_REFs, so INODE_EXTREFs too.
long=$(printf 'h%.0s' $(seq 1 200))
for i in $(seq 1 40); do ln "$src/d/a" "$src/links/${long}_$i"; done
# Enough files for a 3-level fs tree with 4 KiB nodes.
i=0
while [ $i -lt 2500 ]; do
	i=$((i + 1))
	echo "$i" >"$src/many/file-$i"
done
if command -v setfattr >/dev/null 2>&1; then
	setfattr -n user.one -v 1 "$src/d/a" 2>/dev/null
	setfattr -n user.bin -v 0x00ff10 "$src/d/a" 2>/dev/null
	setfattr -n user.big -v "$(head -c 1000 /dev/zero | tr '\0' v)" "$src/d/big" 2>/dev/null
	setfattr -n user.empty "$src/d/sub" 2>/dev/null
fi

# ---- Feature mixes: each image against progs ----

img=$T/fs.img
for mix in default holes-v1 xxhash-4k sha256-64k-single blake2-quota mixed-bg; do
	case $mix in
	default) opts="" ;;
	holes-v1) opts="-O ^no-holes,^skinny-metadata -R ^free-space-tree" ;;
	xxhash-4k) opts="--csum xxhash -n 4096" ;;
	sha256-64k-single) opts="--csum sha256 -n 65536 -m single -d single" ;;
	blake2-quota) opts="--csum blake2 -R quota -O ^extref -L dump-test" ;;
	mixed-bg) opts="-M" ;;
	esac
	rm -f "$img"
	truncate -s 300M "$img"
	# shellcheck disable=SC2086
	if ! mkfs.btrfs -q -f $opts --rootdir "$src" "$img" >"$T/mkfs.log" 2>&1; then
		echo "SKIP dump-$mix: mkfs.btrfs failed: $(tail -n 1 "$T/mkfs.log")"
		continue
	fi

	progs super dump-super -f "$img"
	run "dump-super-full-$mix" 0 "$BTRSIM" dump-super -f "$img"
	same norm_head "$T/super"
	done_check

	progs tree dump-tree "$img"
	progs tree.dfs dump-tree --dfs "$img"
	run "dump-tree-$mix" 0 "$BTRSIM" dump-tree "$img"
	same norm_head "$T/tree"
	err_empty
	done_check
done

# ---- One image, tree by tree, block by block, copy by copy ----

# The last image of the loop (mixed-bg) is replaced by a 4 KiB-node one.
rm -f "$img"
truncate -s 300M "$img"
mkfs.btrfs -q -f -n 4096 --rootdir "$src" "$img" >/dev/null 2>&1
# (free space tree by number, data reloc tree as -9 as a u64: progs knows
# neither "free-space" nor "-9")
for t in root chunk extent dev fs csum uuid 10 5 18446744073709551607; do
	progs tree dump-tree -t "$t" "$img"
	progs tree.dfs dump-tree --dfs -t "$t" "$img"
	run "dump-tree-t-$t" 0 "$BTRSIM" dump-tree -t "$t" "$img"
	same norm_tree "$T/tree"
	done_check
done

root=$(btrfs inspect-internal dump-super "$img" | awk '/^root\t/ {print $2}')
fsroot=$(btrfs inspect-internal dump-tree -t fs "$img" 2>/dev/null | awk '/^(node|leaf) / {print $2; exit}')
rm -f "$T/tree.dfs"
progs tree dump-tree -b "$root" "$img"
run dump-tree-block 0 "$BTRSIM" dump-tree -b "$root" "$img"
same norm_head "$T/tree"
done_check

progs tree dump-tree -b "$fsroot" --follow "$img"
progs tree.dfs dump-tree -b "$fsroot" --follow --dfs "$img"
run dump-tree-block-follow 0 "$BTRSIM" dump-tree -b "$fsroot" --follow "$img"
same norm_head "$T/tree"
done_check

rm -f "$T/tree.dfs"
progs super dump-super -s 1 "$img"
run dump-super-copy-1 0 "$BTRSIM" dump-super -s 1 "$img"
same norm_head "$T/super"
done_check

progs super dump-super -a "$img"
run dump-super-all 0 "$BTRSIM" dump-super -a "$img"
same norm_head "$T/super"
done_check

# ---- Garbage ----

good=$T/good.img
cp "$img" "$good"

cp "$good" "$img"
truncate -s 32K "$img"
run dump-super-truncated 1 "$BTRSIM" dump-super "$img"
err_has 'past the end'
err_lines 1
out_empty
done_check

cp "$good" "$img"
truncate -s 1M "$img"
run dump-tree-truncated 1 "$BTRSIM" dump-tree "$img"
err_lines 1
done_check

# Copy 0 zeroed: dump-super refuses it; copy 1 also zeroed: no file system.
cp "$good" "$img"
dd if=/dev/zero of="$img" bs=4096 seek=16 count=1 iflag=fullblock conv=notrunc 2>/dev/null
run dump-super-zeroed 1 "$BTRSIM" dump-super "$img"
err_has 'bad magic'
err_lines 1
out_has '^superblock: bytenr=65536, device=' # the heading, then the complaint, as progs
[ "$(wc -l <"$OUT")" -eq 2 ] || fail "more than the heading on stdout"
done_check

dd if=/dev/zero of="$img" bs=4096 seek=16384 count=1 conv=notrunc 2>/dev/null
run dump-tree-zeroed-supers 1 "$BTRSIM" dump-tree "$img"
err_lines 1
done_check

# Random bytes for the whole superblock, printed anyway: every field, the
# sys_chunk_array parsed from garbage, no crash.
for seed in 1 2 3 4 5; do
	cp "$good" "$img"
	head -c 4096 /dev/urandom | dd of="$img" bs=4096 seek=16 count=1 iflag=fullblock conv=notrunc 2>/dev/null
	run "dump-super-random-force-$seed" 0 "$BTRSIM" dump-super -F -f "$img"
	out_has "^magic.*DON'T MATCH"
	out_has '^backup_roots\[4\]:$'
	done_check
done

# Random bytes in every copy of the fs tree's root block: reported on one
# line, the rest of the dump still printed.
cp "$good" "$img"
if ! command -v btrfs-map-logical >/dev/null 2>&1 || [ -z "$fsroot" ]; then
	echo "SKIP dump-tree-random-block: cannot locate the fs tree's root block"
else
	btrfs-map-logical -l "$fsroot" "$img" 2>/dev/null | awk '/physical/ {print $6}' |
		while read -r phys; do
			head -c 2000 /dev/urandom |
				dd of="$img" bs=1 seek=$((phys + 300)) conv=notrunc 2>/dev/null
		done
	run dump-tree-random-block 1 "$BTRSIM" dump-tree "$img"
	err_has "$fsroot"
	err_lines 1
	out_has '^chunk tree$'
	out_has '^checksum tree key \(CSUM_TREE ROOT_ITEM 0\) $'
	done_check

	run dump-tree-random-block-t 1 "$BTRSIM" dump-tree -t fs "$img"
	err_lines 1
	done_check

	run dump-tree-random-block-b 1 "$BTRSIM" dump-tree -b "$fsroot" "$img"
	err_lines 1
	done_check
fi
