#!/bin/sh
# Images made by mkfs.btrfs --rootdir, in several feature mixes: btrsim must
# read back every file, byte for byte and in metadata.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v mkfs.btrfs >/dev/null || { skip rootdir "mkfs.btrfs is not installed"; exit 0; }

# A source tree with the shapes that matter to the format.
make_tree() {
	d=$1
	mkdir -p "$d/empty-dir" "$d/sub/deeper"
	: >"$d/empty"
	printf 'x' >"$d/one-byte"
	head -c 2048 /dev/urandom >"$d/inline-2048"
	head -c 4095 /dev/urandom >"$d/sector-minus-1"
	head -c 4097 /dev/urandom >"$d/sector-plus-1"
	head -c 3145728 /dev/urandom >"$d/large-3M"
	truncate -s 10M "$d/sparse"
	printf 'in the middle' | dd of="$d/sparse" bs=1 seek=5242880 conv=notrunc 2>/dev/null
	truncate -s 1M "$d/all-hole"
	ln -s large-3M "$d/symlink"
	ln -s "$(printf 'x%.0s' $(seq 1 300))" "$d/long-symlink"
	echo linked >"$d/sub/hard"
	ln "$d/sub/hard" "$d/hard-2"
	ln "$d/sub/hard" "$d/sub/deeper/hard-3"
	long=$(printf 'n%.0s' $(seq 1 255))
	echo long >"$d/$long"
	p=$d/deep
	for i in $(seq 1 40); do p=$p/level$i; done
	mkdir -p "$p"
	echo bottom >"$p/file"
	echo owned >"$d/owned"
	chown 1234:5678 "$d/owned"
	chmod 4750 "$d/owned"
	chmod 1777 "$d/empty-dir"
	mkfifo "$d/fifo"
	mknod "$d/chardev" c 1 3 2>/dev/null || true
	if command -v setfattr >/dev/null 2>&1; then
		setfattr -n user.comment -v "hello xattr" "$d/one-byte"
		setfattr -n user.empty "$d/large-3M"
		setfattr -n user.dir -v 0x00ff00 "$d/sub"
	fi
	for i in $(seq 1 300); do echo "$i" >"$d/sub/many-$i"; done
}

make_tree "$T/src"

for variant in default no-holes-off xxhash sha256 blake2 node64k single-meta small-node; do
	case $variant in
	default) opts="" ;;
	no-holes-off) opts="-O ^no-holes" ;;
	xxhash) opts="--csum xxhash" ;;
	sha256) opts="--csum sha256" ;;
	blake2) opts="--csum blake2" ;;
	node64k) opts="-n 65536" ;;
	single-meta) opts="-m single -d single" ;;
	small-node) opts="-n 4096" ;;
	esac
	img="$T/$variant.img"
	truncate -s 512M "$img"
	NAME="rootdir-$variant-mkfs"
	# shellcheck disable=SC2086
	if ! mkfs.btrfs -q -f $opts --rootdir "$T/src" "$img" >"$T/mkfs.log" 2>&1; then
		skip "rootdir-$variant" "mkfs.btrfs $opts failed: $(tail -n 1 "$T/mkfs.log")"
		continue
	fi
	rm -rf "$T/out"
	run "rootdir-$variant-extract" 0 "$BTRSIM" extract "$img" "$T/out"
	compare_trees "$NAME" "$T/src" "$T/out" s
	done_check
	run "rootdir-$variant-cat" 0 "$BTRSIM" cat "$img" /large-3M
	cmp -s "$OUT" "$T/src/large-3M" || fail "cat output differs from the source"
	done_check
	run "rootdir-$variant-ls" 0 "$BTRSIM" ls "$img" /sub/deeper
	out_has '^hard-3$'
	done_check
	if btrfs check --readonly "$img" >"$T/progs.log" 2>&1; then
		run "rootdir-$variant-check" 0 "$BTRSIM" check "$img"
		out_has '^no error found$'
		done_check
	else
		skip "rootdir-$variant-check" "btrfs check itself reports errors"
	fi
	rm -f "$img"
done
