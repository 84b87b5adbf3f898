#!/bin/sh
# Defragmentation against the real Btrfs (issue 21).  One image with files
# fragmented by btrsim (a 4 MiB file under 4-12 KiB random overwrites, a
# compressible text file under small overwrites, a file with a hole and a
# preallocated range, a file shared with a snapshot), copied; btrsim
# filesystem defragment on one copy and the kernel's btrfs filesystem
# defragment on the other with the same options (default, -t 64K, -t 8K,
# -czstd, -clzo, -s/-l, -r over a directory, a directory without -r): the
# same extent count for every file (the real filefrag on the kernel's mount of
# each image), the same bytes on disk, contents unchanged, both checkers
# clean; and the kernel then mounts ref's result.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip defrag "$LOOP_WHY"
	exit 0
fi
command -v filefrag >/dev/null || { skip defrag "no filefrag (e2fsprogs)"; exit 0; }
MP="$T/mnt"
mkdir -p "$MP"


# counts IMG: "NAME EXTENTS" for each file, by the real filefrag on the
# kernel's read-only mount (after a fresh mount: nothing in flight).
counts() {
	mount -o loop,ro "$1" "$MP" && MOUNTS="$MP $MOUNTS" || { fail "mount $1"; return; }
	for f in big txt holes shared d/a d/b; do
		echo "$f $(filefrag "$MP/$f" | awk '{ print $(NF-2) }')"
	done
	unmount "$MP"
}

# ---- the fragmented image ----
base="$T/base.img"
truncate -s 256M "$base"
"$BTRSIM" mkfs "$base" >/dev/null
head -c 4M /dev/urandom >"$T/big"
yes 'extent tree block commit checksum' | head -c 400000 >"$T/txt"
"$BTRSIM" put "$base" "$T/big" /big >/dev/null
"$BTRSIM" put "$base" "$T/txt" /txt >/dev/null
i=1
while [ $i -le 40 ]; do
	o=$(( (i * 7919 % 1000) * 4096 ))
	head -c $(( 4096 * (1 + i % 3) )) /dev/urandom >"$T/p"
	"$BTRSIM" write -o $o "$base" /big "$T/p"
	dd if="$T/p" of="$T/big" bs=4096 seek=$((o / 4096)) conv=notrunc status=none
	if [ $((i % 4)) -eq 0 ]; then
		"$BTRSIM" write -o $((i * 9000)) "$base" /txt "$T/p"
		dd if="$T/p" of="$T/txt" bs=1 seek=$((i * 9000)) conv=notrunc status=none
	fi
	i=$((i + 1))
done
cat >"$T/setup.wl" <<'WL'
create /holes
write /holes 0 64K 1
write /holes 256K 8K 2
fallocate /holes 300K 64K keep-size
write /holes 400K 4K 3
sync
write /holes 20K 4K 4
mkdir /d
create /d/a
write /d/a 0 100K 5
write /d/a 8K 4K 6
write /d/a 40K 4K 7
create /d/b
write /d/b 0 50K 8
write /d/b 12K 4K 9
create /shared
write /shared 0 256K 10
snapshot / /snap ro
write /shared 4K 4K 11
write /shared 64K 8K 12
WL
run setup 0 "$BTRSIM" run "$T/setup.wl" "$base"
done_check
"$BTRSIM" cat "$base" /holes >"$T/holes"
"$BTRSIM" cat "$base" /shared >"$T/shared"
"$BTRSIM" cat "$base" /d/a >"$T/a"
"$BTRSIM" cat "$base" /d/b >"$T/b"

# scenario NAME PATHS... -- OPTIONS: both sides defragment PATHS with OPTIONS.
scenario() {
	name=$1
	shift
	paths=""
	while [ "$1" != "--" ]; do paths="$paths $1"; shift; done
	shift
	ri="$T/ref-$name.img"
	ki="$T/kernel-$name.img"
	cp "$base" "$ri"
	cp "$base" "$ki"
	run "$name-btrsim" 0 "$BTRSIM" filesystem defragment "$@" "$ri" $paths
	done_check
	mount -o loop "$ki" "$MP" && MOUNTS="$MP $MOUNTS" || { fail "mount"; return; }
	kpaths=""
	for p in $paths; do kpaths="$kpaths $MP$p"; done
	btrfs filesystem defragment "$@" $kpaths 2>"$T/kerr" || fail "kernel defrag: $(head -c 200 "$T/kerr")"
	unmount "$MP"
	NAME="$name-extents"
	counts "$ri" >"$T/c.ref"
	counts "$ki" >"$T/c.kernel"
	cmp -s "$T/c.ref" "$T/c.kernel" ||
		fail "extent counts differ: $(diff "$T/c.kernel" "$T/c.ref" | grep '^[<>]' | tr '\n' '|')"
	r=$(disk_bytes "$ri")
	k=$(disk_bytes "$ki")
	[ "$r" = "$k" ] || fail "ref $r bytes on disk, kernel $k"
	done_check
	NAME="$name-content"
	for f in big txt holes shared; do
		"$BTRSIM" cat "$ri" "/$f" | cmp -s - "$T/$f" || fail "/$f changed"
	done
	"$BTRSIM" cat "$ri" /d/a | cmp -s - "$T/a" || fail "/d/a changed"
	"$BTRSIM" cat "$ri" /d/b | cmp -s - "$T/b" || fail "/d/b changed"
	progs_check "$ri"
	"$BTRSIM" check "$ri" >"$T/ref.log" 2>&1 || fail "btrsim check: $(grep -m3 -i error "$T/ref.log")"
	done_check
}

scenario default /big /txt /holes /shared --
scenario t64k /big /txt /holes /shared -- -t 64K
scenario t8k /big /txt /holes -- -t 8K
scenario zstd /big /txt /holes /shared -- -czstd
scenario lzo /big /txt -- -clzo
scenario range /big /txt -- -s 256K -l 1M
scenario recursive /d -- -r
scenario tree /d --
