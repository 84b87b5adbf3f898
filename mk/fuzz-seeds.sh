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
#             campaign, findings and statistics), each behind its selector byte.
# Each raw corpus is reduced by afl-cmin (AFL++ build in AFL_B) into
# fuzz/seeds/HARNESS/ (replacing what was there); without afl-cmin the raw
# seeds are kept whole.
# Usage: mk/fuzz-seeds.sh TOOLS_BUILD AFL_BUILD   (btrsim and fuzz-mkseed from TOOLS_BUILD)
set -eu
TB=${1:?usage: mk/fuzz-seeds.sh TOOLS_BUILD AFL_BUILD}
AB=${2:?usage: mk/fuzz-seeds.sh TOOLS_BUILD AFL_BUILD}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BTRSIM="$TB/btrsim"
MKSEED="$TB/fuzz/fuzz-mkseed"
for p in "$BTRSIM" "$MKSEED"; do
	[ -x "$p" ] || { echo "fuzz-seeds: $p is missing (make MODE=debug cmd fuzz-bins)" >&2; exit 1; }
done
# Not under /tmp: afl-cmin refuses to work there.
T=$(mktemp -d "$TB/fuzz-seeds.XXXXXX")
T=$(cd "$T" && pwd)
trap 'rm -rf "$T"' EXIT
RAW="$T/raw"
mkdir -p "$RAW/image" "$RAW/workload" "$RAW/parse"
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
bimage b-default -- b0.img
bimage b-node4k -n 4k --csum xxhash -- b0.img
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

# ---- afl-cmin ----------------------------------------------------------------
for h in image workload parse; do
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
