#!/bin/sh
# The seed corpora of the harnesses (`make fuzz-seeds`; fuzz/README.md, "Seeds"):
#   image     mkfs.btrfs --rootdir images of a small tree (node sizes, checksum
#             types, profiles, features) and btrsim mkfs + put images (one and
#             two devices), each turned into a compact image by fuzz-mkseed;
#   workload  btrsim gen-workload workloads over the harness's names, the
#             interop and bench workloads, some with the shipped fault plans,
#             encoded by fuzz-mkseed --workload;
#   parse     workload files, the shipped fault plans and a plan of every
#             kind of line, and small trace databases (an explore run, a
#             campaign, findings and statistics), each behind its selector byte;
#   stream    send streams written by mk/stream-seeds.py (every command, v1 to
#             v3, fallocate and zlib encoded writes, a full stream then a
#             snapshot of it, an incremental one on the harness's /parent, a
#             snapshot of its top level), btrsim send (ref's sender: full v1
#             and v2, --no-data, two subvolumes, --compressed-data) of a small
#             tree, and, as root with a loop mount, the kernel's btrfs send of
#             one (full and -p incremental, --proto 2 --compressed-data with
#             zlib, zstd and lzo, two subvolumes); uuids and times made
#             deterministic.
# Each raw corpus is reduced by afl-cmin (AFL++ build in AFL_B) into
# fuzz/seeds/HARNESS/ (replacing what was there); without afl-cmin the raw
# seeds are kept whole.  HARNESS... (make fuzz-seeds HARNESS=NAME) replaces
# only those corpora (default: all four).
# Usage: mk/fuzz-seeds.sh TOOLS_BUILD AFL_BUILD [HARNESS...]
#        (btrsim and fuzz-mkseed from TOOLS_BUILD)
set -eu
TB=${1:?usage: mk/fuzz-seeds.sh TOOLS_BUILD AFL_BUILD [HARNESS...]}
AB=${2:?usage: mk/fuzz-seeds.sh TOOLS_BUILD AFL_BUILD [HARNESS...]}
shift 2
ONLY=${*:-image workload parse stream}
for h in $ONLY; do
	case $h in image | workload | parse | stream) ;;
	*) echo "fuzz-seeds: $h: no such harness (image, workload, parse, stream)" >&2; exit 1 ;;
	esac
done
want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BTRSIM="$TB/btrsim"
MKSEED="$TB/fuzz/fuzz-mkseed"
for p in "$BTRSIM" "$MKSEED"; do
	[ -x "$p" ] || { echo "fuzz-seeds: $p is missing (make MODE=debug cmd fuzz-bins)" >&2; exit 1; }
done
# Not under /tmp: afl-cmin refuses to work there.
T=$(mktemp -d "$TB/fuzz-seeds.XXXXXX")
T=$(cd "$T" && pwd)
MOUNTED=""
trap '[ -z "$MOUNTED" ] || umount "$MOUNTED"; rm -rf "$T"' EXIT
RAW="$T/raw"
mkdir -p "$RAW/image" "$RAW/workload" "$RAW/parse" "$RAW/stream"
# The sanitized tools must not fail on a leak report of their own: any report is an error.
export ASAN_OPTIONS="detect_leaks=1"

# ---- image ----------------------------------------------------------------
# A small tree: inline and regular files, a sparse one, a symlink, a hard
# link, nested and empty directories, xattrs when setfattr is there.
tree="$T/tree"
mkdir -p "$tree/dir/sub" "$tree/empty"
printf 'small inline file\n' >"$tree/small"
yes 'btrsim fuzz seed data, a line of text' | head -c 20000 >"$tree/dir/text"
awk 'BEGIN { x = 7; for (i = 0; i < 40000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%c", 32 + x % 95 } }' \
	>"$tree/dir/sub/noise"
dd if=/dev/zero of="$tree/sparse" bs=1 count=0 seek=300000 2>/dev/null
printf 'tail' >>"$tree/sparse"
ln -s small "$tree/link"
ln -s /nowhere "$tree/dir/dangling"
ln "$tree/small" "$tree/dir/hardlink"
if command -v setfattr >/dev/null 2>&1; then
	setfattr -n user.seed -v value "$tree/small" 2>/dev/null || true
	setfattr -n user.big -v "$(head -c 300 "$tree/dir/text")" "$tree/dir" 2>/dev/null || true
fi
find "$tree" -exec touch -h -d @1700000000 {} +

n=0
kimage() { # NAME MKFS-OPTIONS...: a mkfs.btrfs --rootdir image
	name=$1
	shift
	img="$T/$name.img"
	truncate -s 128M "$img"
	if mkfs.btrfs -q -f -U 0f0e0d0c-0b0a-0908-0706-050403020100 --rootdir "$tree" "$@" "$img" \
		>"$T/mkfs.log" 2>&1; then
		"$MKSEED" --data 8192 -o "$RAW/image/$name" "$img" 2>>"$T/mkseed.log" && n=$((n + 1))
	else
		echo "fuzz-seeds: mkfs.btrfs $* failed (skipped): $(tail -n 1 "$T/mkfs.log")" >&2
	fi
	rm -f "$img"
}
if command -v mkfs.btrfs >/dev/null 2>&1; then
	kimage k-default
	kimage k-node4k -n 4096
	kimage k-node64k -n 65536
	kimage k-xxhash --csum xxhash -n 4096
	kimage k-sha256 --csum sha256
	kimage k-blake2 --csum blake2
	kimage k-single -m single -d single
	kimage k-nofst -R ^free-space-tree
	kimage k-bgt -O block-group-tree
	kimage k-holes -O ^no-holes
else
	echo "fuzz-seeds: no mkfs.btrfs: image seeds from btrsim mkfs only" >&2
fi
bimage() { # NAME MKFS-OPTIONS... -- IMAGES...: btrsim mkfs + put
	name=$1
	shift
	opts=""
	while [ "$1" != "--" ]; do opts="$opts $1"; shift; done
	shift
	imgs=""
	for i in "$@"; do imgs="$imgs $T/$i"; truncate -s 128M "$T/$i"; done
	# shellcheck disable=SC2086
	"$BTRSIM" mkfs --seed 7 --time 1700000000 $opts $imgs >/dev/null &&
		"$BTRSIM" put $imgs "$tree" /tree >/dev/null &&
		"$BTRSIM" mkdir $imgs /tree/made-by-btrsim >/dev/null &&
		"$MKSEED" --data 8192 -o "$RAW/image/$name" $imgs 2>>"$T/mkseed.log" && n=$((n + 1))
	# shellcheck disable=SC2086
	rm -f $imgs
}
bsnapshots() { # NAME: a subvolume with two read-only snapshots of it (send's input)
	i="$T/b0.img"
	truncate -s 128M "$i"
	"$BTRSIM" mkfs --seed 7 --time 1700000000 "$i" >/dev/null &&
		"$BTRSIM" subvolume create "$i" /sv >/dev/null &&
		"$BTRSIM" put "$i" "$tree/." /sv >/dev/null &&
		"$BTRSIM" subvolume snapshot -r "$i" /sv /ro1 >/dev/null &&
		"$BTRSIM" mkdir "$i" /sv/later >/dev/null &&
		"$BTRSIM" mv "$i" /sv/dir /sv/later/dir >/dev/null &&
		"$BTRSIM" subvolume snapshot -r "$i" /sv /ro2 >/dev/null &&
		"$MKSEED" --data 8192 -o "$RAW/image/$1" "$i" 2>>"$T/mkseed.log" && n=$((n + 1))
	rm -f "$i"
}
bimage b-default -- b0.img
bimage b-node4k -n 4k --csum xxhash -- b0.img
bsnapshots b-snapshots
bimage b-raid1 -d raid1 -m raid1 -- b0.img b1.img
bimage b-raid0 -d raid0 -m raid1 -- b0.img b1.img
echo "fuzz-seeds: $n image seeds"

# ---- workload --------------------------------------------------------------
n=0
enc() { # NAME WORKLOAD HEADER [PLAN]
	if [ -n "${4:-}" ]; then
		"$MKSEED" --workload --header "$3" --plan "$4" -o "$RAW/workload/$1" "$2" 2>>"$T/mkseed.log"
	else
		"$MKSEED" --workload --header "$3" -o "$RAW/workload/$1" "$2" 2>>"$T/mkseed.log"
	fi
	n=$((n + 1))
}
for s in 1 2 3 4 5 6 7 8; do
	"$BTRSIM" gen-workload --seed "$s" --ops 16 --names 3 --depth 2 --max-offset 1M --max-len 64K \
		>"$T/g$s.wl"
	# header: seed, crash bounds (max-subset, samples, torn), volume (4 KiB nodes,
	# two disks), crash points from op N
	case $s in
	1) h=0,37,0,0 ;; 2) h=1,6,1,0 ;; 3) h=2,37,2,4 ;; 4) h=3,3,3,8 ;;
	*) h=$s,$((s * 13 % 128)),$((s % 4)),$s ;;
	esac
	enc "gen-$s" "$T/g$s.wl" "$h"
done
enc gen-1-commit-eio "$T/g1.wl" 0,37,0,0 "$ROOT/faults/plans/commit-eio.plan"
enc gen-2-bitflip "$T/g2.wl" 1,37,0,0 "$ROOT/faults/plans/bitflip.plan"
for w in "$ROOT"/tests/interop/workloads/*.wl "$ROOT"/bench/workloads/*.wl; do
	enc "$(basename "$w" .wl)" "$w" 4,37,0,0
done
echo "fuzz-seeds: $n workload seeds"

# ---- parse -----------------------------------------------------------------
n=0
sel() { # SELECTOR NAME FILE: the selector byte, then the file
	{ printf "\\$(printf '%03o' "$1")"; cat "$3"; } >"$RAW/parse/$2"
	n=$((n + 1))
}
for w in "$ROOT"/tests/interop/workloads/*.wl "$ROOT"/bench/workloads/*.wl; do
	sel 0 "wl-$(basename "$w" .wl)" "$w"
done
"$BTRSIM" gen-workload --seed 11 --ops 60 >"$T/gen.wl"
sel 0 wl-gen "$T/gen.wl"
for p in "$ROOT"/faults/plans/*.plan; do
	sel 1 "plan-$(basename "$p" .plan)" "$p"
done
cat >"$T/every.plan" <<'PLAN'
# every kind of line
ref/alloc/tree-block p=0.01 count=3 errno=ENOMEM
ref/commit/flush nth=2 errno=EIO
sim/write count=2
ref/io/read
sim/device-vanish nth=40
sim flip-at-rest,disk=0,after=100,bits=3
sim latent,disk=1,sector=17,n=4
sim misdirect,p=0.5,shift=-3
sim lost-write,count=1
sim flaky,disk=0,p=0.25
PLAN
sel 1 plan-every "$T/every.plan"
# Trace databases: rows in every table, in 512-byte pages to keep them small.
small_db() { # NAME: vacuum "$T/$1.db" and add it
	if command -v sqlite3 >/dev/null 2>&1; then
		sqlite3 "$T/$1.db" 'PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM;' >/dev/null
	fi
	sel 2 "db-$1" "$T/$1.db"
}
printf 'mkdir /d\ncreate /d/a\nwrite /d/a 0 5000 1\nfsync /d/a\nrename /d/a /d/b\n' >"$T/tiny.wl"
"$BTRSIM" explore --max-subset 2 --samples 1 --torn 1 --faults "$ROOT/faults/plans/commit-eio.plan" \
	--db "$T/explore.db" "$T/tiny.wl" >/dev/null
small_db explore
"$BTRSIM" campaign --seq 1 --limit 2 --max-subset 1 --samples 1 --torn 0 -q --db "$T/campaign.db" \
	>/dev/null
small_db campaign
printf 'BFZI\001' >"$T/input"
"$BTRSIM" findings --db "$T/findings.db" --record --harness image --kind crash --signal SIGSEGV \
	--stack-hash 0123456789abcdef --input "$T/input" --minimized "$T/input" >/dev/null
mkdir -p "$T/afl/main"
printf 'start_time        : 1700000000\nlast_update       : 1700000060\nrun_time          : 60\nexecs_done        : 1000\nexecs_per_sec     : 16.6\ncorpus_count      : 3\nsaved_crashes     : 1\nsaved_hangs       : 0\n' \
	>"$T/afl/main/fuzzer_stats"
printf '# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found\n30, 0, 0, 2, 1, 1, 1.00%%, 0, 0, 1, 20.00, 500, 10\n' \
	>"$T/afl/main/plot_data"
"$BTRSIM" findings --db "$T/findings.db" --import-stats image "$T/afl" >/dev/null
small_db findings
echo "fuzz-seeds: $n parse seeds"

# ---- stream ----------------------------------------------------------------
# kstreams: the kernel's streams of a small tree on a loop-mounted btrfs
# (compress=zlib and two files with the zstd and lzo properties, so that
# --compressed-data gives encoded writes of each; commit=300: no periodic
# commit moves the transids), each seed under 64 KiB.
kstreams() {
	k="$T/ksend"
	mkdir -p "$k/mnt"
	m="$k/mnt"
	truncate -s 256M "$k/img" && mkfs.btrfs -q -f "$k/img" >"$T/mkfs.log" 2>&1 || return 1
	mount -o loop,compress=zlib,commit=300 "$k/img" "$m" 2>"$T/mount.log" || return 1
	MOUNTED=$m
	mkdir "$m/d" "$m/e" &&
		printf 'small inline file\n' >"$m/small" &&
		yes 'btrsim fuzz seed data, a line of text' | head -c 12000 >"$m/d/text" &&
		awk 'BEGIN { x = 7; for (i = 0; i < 5000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%c", 32 + x % 95 } }' \
			>"$m/d/noise" &&
		touch "$m/d/zst" "$m/d/lzo" &&
		btrfs property set "$m/d/zst" compression zstd &&
		btrfs property set "$m/d/lzo" compression lzo &&
		yes 'zstd compressed, a line of text' | head -c 12000 >"$m/d/zst" &&
		yes 'lzo compressed, a line of text' | head -c 12000 >"$m/d/lzo" &&
		cp --reflink=always "$m/d/text" "$m/d/clone" &&
		ln "$m/small" "$m/d/hard" &&
		ln -s small "$m/link" &&
		mkfifo "$m/fifo" &&
		truncate -s 100000 "$m/sparse" && printf tail >>"$m/sparse" &&
		fallocate -l 16K "$m/pre" &&
		chown 1000:100 "$m/d/text" && chmod 640 "$m/d/text" || return 1
	if command -v setfattr >/dev/null 2>&1; then
		setfattr -n user.a -v 'v 1' "$m/d/text" && setfattr -n user.bin -v 0x00ff41 "$m/small" ||
			return 1
	fi
	find "$m" -exec touch -h -d @1700000000 {} + &&
		btrfs -q subvolume snapshot -r "$m" "$m/s1" >/dev/null || return 1
	rm "$m/d/hard" && mv "$m/link" "$m/e/link2" && echo more >>"$m/d/text" &&
		printf x | dd of="$m/d/noise" bs=1 seek=100 conv=notrunc 2>/dev/null &&
		chmod 600 "$m/d/noise" && truncate -s 100 "$m/d/clone" && mkdir "$m/new" &&
		mv "$m/e" "$m/new/" && cp --reflink=always "$m/d/noise" "$m/new/noise2" &&
		rm "$m/fifo" && mknod "$m/c" c 1 3 || return 1
	if command -v setfattr >/dev/null 2>&1; then setfattr -x user.a "$m/d/text" || return 1; fi
	find "$m" -path "$m/s1" -prune -o -exec touch -h -d @1700000000 {} + &&
		btrfs -q subvolume snapshot -r "$m" "$m/s2" >/dev/null &&
		btrfs -q send -f "$k/full1" "$m/s1" &&
		btrfs -q send --proto 2 --compressed-data -f "$k/full2" "$m/s1" &&
		btrfs -q send -p "$m/s1" -f "$k/inc1" "$m/s2" &&
		btrfs -q send -p "$m/s1" --proto 2 --compressed-data -f "$k/inc2" "$m/s2" &&
		btrfs -q send --proto 2 --compressed-data -f "$k/both" "$m/s1" "$m/s2" || return 1
	umount "$m" && MOUNTED="" || return 1
	py="$ROOT/mk/stream-seeds.py"
	python3 "$py" --normalize "$RAW/stream/k-full-v1" "$k/full1" &&
		python3 "$py" --normalize "$RAW/stream/k-full-v2-compressed" "$k/full2" &&
		python3 "$py" --normalize "$RAW/stream/k-full-inc-v1" "$k/full1" "$k/inc1" &&
		python3 "$py" --normalize "$RAW/stream/k-full-inc-v2" "$k/full2" "$k/inc2" &&
		python3 "$py" --normalize "$RAW/stream/k-two-subvols" "$k/both"
}
# bstreams: ref's own sender (btrsim send: full streams) of a small tree put
# into a subvolume, snapshotted read-only before and after a few changes; and
# --compressed-data of files put compressed with each algorithm.
bstreams() {
	b="$T/bsend"
	mkdir -p "$b/src/d"
	printf 'small inline file\n' >"$b/src/small"
	yes 'btrsim send seed, a line of text' | head -c 9000 >"$b/src/d/text"
	ln -s small "$b/src/link"
	ln "$b/src/small" "$b/src/d/hard"
	truncate -s 50000 "$b/src/sparse" && printf tail >>"$b/src/sparse"
	mkfifo "$b/src/fifo"
	if command -v setfattr >/dev/null 2>&1; then
		setfattr -n user.a -v 'v 1' "$b/src/d/text" 2>/dev/null || true
	fi
	find "$b/src" -exec touch -h -d @1700000000 {} +
	truncate -s 128M "$b/img"
	"$BTRSIM" mkfs --seed 7 --time 1700000000 "$b/img" >/dev/null &&
		"$BTRSIM" subvolume create "$b/img" /sv >/dev/null &&
		"$BTRSIM" put "$b/img" "$b/src" /sv/tree >/dev/null &&
		"$BTRSIM" subvolume snapshot -r "$b/img" /sv /snap1 >/dev/null &&
		"$BTRSIM" mv "$b/img" /sv/tree/d/text /sv/tree/text2 >/dev/null &&
		"$BTRSIM" rm "$b/img" /sv/tree/link >/dev/null &&
		"$BTRSIM" mkdir "$b/img" /sv/tree/new >/dev/null &&
		"$BTRSIM" subvolume snapshot -r "$b/img" /sv /snap2 >/dev/null &&
		"$BTRSIM" send -q -f "$b/full1" "$b/img" /snap1 &&
		"$BTRSIM" send -q --proto 2 -f "$b/full2" "$b/img" /snap1 &&
		"$BTRSIM" send -q --no-data -f "$b/nodata" "$b/img" /snap1 &&
		"$BTRSIM" send -q -f "$b/two" "$b/img" /snap1 /snap2 || return 1
	# compressed extents (regular and inline) of each algorithm, sent encoded
	mkdir -p "$b/c/zlib" "$b/c/zstd" "$b/c/lzo"
	for a in zlib zstd lzo; do
		yes "$a compressed, a line of text" | head -c 12000 >"$b/c/$a/big"
		yes "$a inline" | head -c 1000 >"$b/c/$a/small"
	done
	find "$b/c" -exec touch -h -d @1700000000 {} +
	"$BTRSIM" subvolume create "$b/img" /svc >/dev/null &&
		for a in zlib zstd lzo; do
			"$BTRSIM" put --compress=$a "$b/img" "$b/c/$a" /svc/$a >/dev/null || return 1
		done &&
		"$BTRSIM" subvolume snapshot -r "$b/img" /svc /snapc >/dev/null &&
		"$BTRSIM" send -q --compressed-data -f "$b/comp" "$b/img" /snapc || return 1
	rm -f "$b/img"
	py="$ROOT/mk/stream-seeds.py"
	python3 "$py" --normalize "$RAW/stream/b-full-v1" "$b/full1" &&
		python3 "$py" --normalize "$RAW/stream/b-full-v2" "$b/full2" &&
		python3 "$py" --normalize "$RAW/stream/b-no-data" "$b/nodata" &&
		python3 "$py" --normalize "$RAW/stream/b-two-subvols" "$b/two" &&
		python3 "$py" --normalize "$RAW/stream/b-compressed-data" "$b/comp"
}
if want stream; then
	# The uuid of the harness's top level (ref_mkfs's, from its seed), for a
	# snapshot of it.
	mkdir -p "$T/base"
	: >"$T/empty.st"
	top=""
	if "$TB/fuzz/fuzz-stream" -o "$T/base" "$T/empty.st" 2>/dev/null; then
		top=$("$BTRSIM" subvolume show "$T/base/disk0.img" / | sed -n 's/^[[:space:]]*UUID:[[:space:]]*//p')
	fi
	[ -n "$top" ] || echo "fuzz-seeds: stream: the base's top-level uuid is unknown: no snapshot of it" >&2
	python3 "$ROOT/mk/stream-seeds.py" "$RAW/stream" ${top:+--top-uuid "$top"}
	if ! "$BTRSIM" help send >/dev/null 2>&1; then
		echo "fuzz-seeds: stream: no btrsim send in $BTRSIM: no streams of ref's sender" >&2
	elif ! bstreams 2>"$T/bsend.log"; then
		echo "fuzz-seeds: stream: btrsim send failed: $(tail -n 1 "$T/bsend.log")" >&2
		exit 1
	fi
	if [ "$(id -u)" != 0 ] || ! command -v btrfs >/dev/null 2>&1 ||
		! command -v mkfs.btrfs >/dev/null 2>&1; then
		echo "fuzz-seeds: stream: no kernel streams (they need root, btrfs and mkfs.btrfs)" >&2
	elif ! kstreams; then
		echo "fuzz-seeds: stream: no kernel streams: making them failed: $(tail -n 1 "$T/mount.log" 2>/dev/null)" >&2
		[ -z "$MOUNTED" ] || umount "$MOUNTED"
		MOUNTED=""
		rm -f "$RAW"/stream/k-*
	fi
	# Every seed must receive whole (a seed that fails tells of a broken
	# generator, or of a change in ref).
	for f in "$RAW"/stream/*; do
		if ! "$TB/fuzz/fuzz-stream" -v "$f" 2>"$T/stream.log" ||
			! grep -q '^receive: 0$' "$T/stream.log"; then
			echo "fuzz-seeds: stream: $(basename "$f") does not receive: $(grep -m1 -e '^receive' -e violation "$T/stream.log")" >&2
			exit 1
		fi
	done
	echo "fuzz-seeds: $(ls "$RAW/stream" | wc -l) stream seeds"
fi

# ---- afl-cmin ----------------------------------------------------------------
for h in $ONLY; do
	out="$ROOT/fuzz/seeds/$h"
	rm -rf "$out"
	mkdir -p "$(dirname "$out")"
	if command -v afl-cmin >/dev/null 2>&1 && [ -x "$AB/fuzz/fuzz-$h" ]; then
		if AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 afl-cmin -i "$RAW/$h" -o "$out" -t 10000 -- \
			"$AB/fuzz/fuzz-$h" >"$T/cmin.log" 2>&1; then
			echo "fuzz-seeds: $h: afl-cmin kept $(ls "$out" | wc -l) of $(ls "$RAW/$h" | wc -l)"
			continue
		fi
		echo "fuzz-seeds: $h: afl-cmin failed, keeping every seed: $(tail -n 3 "$T/cmin.log")" >&2
		rm -rf "$out"
	else
		echo "fuzz-seeds: $h: no afl-cmin or no $AB/fuzz/fuzz-$h: keeping every seed" >&2
	fi
	cp -r "$RAW/$h" "$out"
done
