#!/bin/sh
# btrsim du and btrsim filefrag against the real tools on the kernel's loop
# mount of the same image, written by btrsim (put with and without each
# compression, run with preallocation, holes, overwrites, scattered writes,
# a subvolume and its snapshot, 320 compressed extents and 400 scattered
# ones, more than one FIEMAP call of filefrag holds): `filefrag -v` of every
# file and directory equals `btrsim filefrag -v` (the kernel's FIEMAP sees
# exactly the extents ref reports, shared flags included); `compsize` (when
# installed; its "fragments" count only where its version prints it) equals
# `btrsim du` over files, directories, the whole tree and -x, else each
# file's Referenced equals the Total of `btrfs filesystem du`.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v filefrag >/dev/null || { skip du "filefrag (e2fsprogs) is not installed"; exit 0; }
can_loop_mount || { skip du "$LOOP_WHY"; exit 0; }

img=$T/du.img
truncate -s 2G "$img"
src=$T/src
mkdir -p "$src/tree/sub" "$src/emptydir"
yes 'hello world' | head -c 1048576 >"$src/text1m"
yes 'compressible text' | head -c 41943040 >"$src/text40m"
head -c 1048576 /dev/urandom >"$src/rand1m"
head -c 300000 /dev/urandom >"$src/tree/rand"
yes hello | head -c 1000 >"$src/tree/small"
head -c 3000 /dev/urandom >"$src/tree/sub/inline-rand"
: >"$src/tree/empty"
truncate -s 5M "$src/tree/sparse"
printf 'in the middle' | dd of="$src/tree/sparse" bs=1 seek=2097152 conv=notrunc 2>/dev/null
printf 'at the end' >>"$src/tree/sparse"

{
	echo "create /scatter"
	i=399
	while [ "$i" -ge 0 ]; do
		echo "write /scatter $((i * 8))K 4K $i"
		i=$((i - 1))
	done
} >"$T/scatter.wl"
cat >"$T/w.wl" <<'EOF'
create /pre
fallocate /pre 0 1M
write /pre 256K 8K 3
fallocate /pre 2M 64K keep-size
create /hole
write /hole 0 64K 1
write /hole 1M 64K 2
create /split
write /split 0 1M 1
write /split 256K 4K 2
write /split 900K 8K 3
create /many
write /many 0 4K 1
write /many 8K 4K 2
write /many 16K 4K 3
write /many 4K 4K 4
subvol-create /sv
create /sv/f
write /sv/f 0 300K 5
mkdir /sv/dir
create /sv/dir/g
write /sv/dir/g 0 64K 6
snapshot /sv /snap
write /sv/f 100K 4K 7
EOF
NAME=du-setup
{
	"$BTRSIM" mkfs "$img" &&
		"$BTRSIM" put "$img" "$src/tree" /tree &&
		"$BTRSIM" put "$img" "$src/emptydir" /emptydir &&
		"$BTRSIM" put "$img" "$src/rand1m" /rand1m &&
		"$BTRSIM" put --compress=zstd "$img" "$src/text1m" /zstd1m &&
		"$BTRSIM" put --compress=zlib "$img" "$src/text1m" /zlib1m &&
		"$BTRSIM" put --compress=lzo "$img" "$src/text1m" /lzo1m &&
		"$BTRSIM" put --compress-force=zstd "$img" "$src/rand1m" /forced-rand &&
		"$BTRSIM" put --compress=zstd "$img" "$src/text40m" /text40m &&
		"$BTRSIM" put --compress=zlib "$img" "$src/tree" /ztree &&
		"$BTRSIM" run "$T/w.wl" "$img" &&
		"$BTRSIM" run "$T/scatter.wl" "$img" &&
		"$BTRSIM" put --compress=zstd "$img" "$src/text1m" /sv/zstd1m
} >"$T/setup.log" 2>&1 || fail "$(tail -n 3 "$T/setup.log" | tr '\n' '|')"
done_check

attach "$img" && mount_dev "$T/mnt" ro "$LOOP" || { NAME=du-mount; fail "the kernel cannot mount the image"; exit 0; }
M=$T/mnt

# Every file and directory, as the kernel lists them.
(cd "$M" && find . \( -type f -o -type d \) | LC_ALL=C sort | sed 's|^\.||; s|^$|/|') >"$T/paths"

# ---- filefrag ----

# kfilefrag PATH...: the real filefrag on the mount, paths shown as in the image.
kfilefrag() {
	(cd "$M" && for p in "$@"; do echo ".$p"; done | xargs filefrag -v) 2>/dev/null |
		sed 's|^\(File size of \)\.|\1|; s|^\./|/|'
}

while IFS= read -r p; do
	NAME="filefrag-v$p"
	kfilefrag "$p" >"$T/kernel.ff"
	"$BTRSIM" filefrag -v "$img" "$p" >"$T/ref.ff" 2>"$T/ref.err"
	rc=$?
	if [ -d "$M$p" ] && [ -n "$(ls -A "$M$p")" ]; then
		[ "$rc" -eq 1 ] && grep -q 'FIBMAP/FIEMAP unsupported' "$T/ref.err" ||
			fail "a directory with entries: exit $rc, $(head -c 200 "$T/ref.err")"
	elif [ "$rc" -ne 0 ]; then
		fail "exit $rc: $(head -c 200 "$T/ref.err")"
	fi
	cmp -s "$T/kernel.ff" "$T/ref.ff" ||
		fail "filefrag -v differs (kernel < > ref): $(diff "$T/kernel.ff" "$T/ref.ff" | head -8 | tr '\n' '|')"
	done_check
done <"$T/paths"

# All of them in one call: the type line again at each subvolume, the
# columns widening for the longest file.
NAME=filefrag-v-all
# shellcheck disable=SC2046
kfilefrag $(cat "$T/paths") >"$T/kernel.ff"
# shellcheck disable=SC2046
"$BTRSIM" filefrag -v "$img" $(cat "$T/paths") >"$T/ref.ff" 2>/dev/null
cmp -s "$T/kernel.ff" "$T/ref.ff" ||
	fail "filefrag -v differs (kernel < > ref): $(diff "$T/kernel.ff" "$T/ref.ff" | head -8 | tr '\n' '|')"
done_check

NAME=filefrag-counts
(cd "$M" && filefrag ./text40m ./scatter ./zstd1m ./rand1m ./tree/empty ./hole) 2>&1 | sed 's|^\./|/|' >"$T/kernel.ff"
"$BTRSIM" filefrag "$img" /text40m /scatter /zstd1m /rand1m /tree/empty /hole >"$T/ref.ff" 2>&1
cmp -s "$T/kernel.ff" "$T/ref.ff" || fail "differs: $(diff "$T/kernel.ff" "$T/ref.ff" | tr '\n' '|')"
grep -q '^/text40m: 320 extents found$' "$T/ref.ff" || fail "text40m: $(grep text40m "$T/ref.ff")"
grep -q '^/scatter: 400 extents found$' "$T/ref.ff" || fail "scatter: $(grep scatter "$T/ref.ff")"
grep -q '^/zstd1m: 8 extents found$' "$T/ref.ff" || fail "zstd1m: $(grep zstd1m "$T/ref.ff")"
grep -q '^/rand1m: 1 extent found$' "$T/ref.ff" || fail "rand1m: $(grep rand1m "$T/ref.ff")"
done_check

# ---- du ----

# The same paths for du: the files, directories, the whole tree.
grep -v '^/$' "$T/paths" >"$T/du-paths"
if command -v compsize >/dev/null 2>&1 && [ -z "${DU_NO_COMPSIZE:-}" ]; then
	# kcompsize ARGS... PATH...: compsize on the mount; the fragments count
	# dropped from ours when this compsize does not print it.
	frag=1
	compsize "$M/tree" 2>/dev/null | grep -q 'fragments\.$' || frag=0
	ours() {
		if [ "$frag" -eq 1 ]; then cat; else sed 's/, [0-9]* fragments\.$/./'; fi
	}
	# compare NAME OPTS PATH...: compsize and btrsim du agree, exit status too.
	compare() {
		NAME=$1
		opts=$2
		shift 2
		kargs=""
		for p in "$@"; do kargs="$kargs $M$p"; done
		# shellcheck disable=SC2086
		compsize $opts $kargs >"$T/kernel.du" 2>&1
		krc=$?
		# shellcheck disable=SC2086
		"$BTRSIM" du $opts "$img" "$@" >"$T/ref.out" 2>&1
		rrc=$?
		ours <"$T/ref.out" >"$T/ref.du"
		[ "$krc" -eq "$rrc" ] || fail "exit $rrc, compsize's $krc"
		cmp -s "$T/kernel.du" "$T/ref.du" ||
			fail "differs (compsize < > btrsim du): $(diff "$T/kernel.du" "$T/ref.du" | head -8 | tr '\n' '|')"
		done_check
	}
	while IFS= read -r p; do
		compare "du$p" -b "$p"
	done <"$T/du-paths"
	compare du-all "" /
	compare du-all-bytes -b /
	compare du-one-file-system -x /
	compare du-subvolume-and-snapshot -b /sv /snap
	compare du-snapshot-x "-x -b" /snap
	compare du-several "" /tree /ztree /zstd1m /pre
	compare du-empty-file "" /tree/empty
	compare du-empty-dir "" /emptydir
else
	skip du-compsize "compsize is not installed: Referenced compared with btrfs filesystem du"
	command -v btrfs >/dev/null || { skip du-btrfs-du "btrfs-progs is not installed"; exit 0; }
	while IFS= read -r p; do
		[ -f "$M$p" ] || continue
		NAME="du-referenced$p"
		"$BTRSIM" du -b "$img" "$p" >"$T/ref.du" 2>&1
		rrc=$?
		# Inline data counts in Referenced but not in btrfs filesystem du.
		if grep -q ' [1-9][0-9]* inline' "$T/ref.du"; then
			BAD=0
			continue
		fi
		total=$(btrfs filesystem du --raw "$M$p" 2>/dev/null | awk 'NR == 2 { print $1 }')
		if [ "$total" = 0 ]; then
			[ "$rrc" -eq 1 ] || fail "exit $rrc for a file the kernel counts nothing of"
		else
			refd=$(awk '$1 == "TOTAL" { print $5 }' "$T/ref.du")
			[ "$refd" = "$total" ] || fail "Referenced $refd, btrfs filesystem du's Total $total"
		fi
		done_check
	done <"$T/du-paths"
fi
