#!/bin/sh
# The fuzzing harnesses (fuzz/README.md): the plain builds of fuzz-image,
# fuzz-workload, fuzz-parse and fuzz-stream next to $BTRSIM (build/debug/fuzz/
# under `make test`: ASan+UBSan, leaks checked at exit) run the regression
# corpus fuzz/regress/ and some seeds without a crash, a sanitizer report or a
# violation (every stream seed received whole); fuzz-stream's outcomes (crc32c
# rewritten, a cut stream, a missing parent, -o and the image it writes
# checked); fuzz-mkseed round trips; `btrsim findings` records, lists,
# exports, replays and marks findings and imports AFL++'s statistics; and a
# short real AFL++ campaign (make fuzz-run HARNESS=parse SECONDS=10) into a
# temporary database, skipped with the reason when afl-fuzz cannot run.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$(dirname "$BTRSIM")" && pwd)
F="$B/fuzz"
for h in image workload parse stream mkseed; do
	[ -x "$F/fuzz-$h" ] || { echo "FAIL fuzz-build: $F/fuzz-$h is missing"; exit 1; }
done

# Runs the plain harness H over the files given; one check per call.
corpus() {
	name=$1 h=$2
	shift 2
	[ "$#" -gt 0 ] || { echo "SKIP $name: no input"; return; }
	run "$name" 0 "$F/fuzz-$h" "$@"
	err_lacks_violation
	done_check
}
err_lacks_violation() { ! grep -q 'btrsim-fuzz: violation' "$ERR" || fail "violation: $(grep -m1 violation "$ERR")"; }

# ---- The regression corpus: every fixed finding, run each time ----
for h in image workload parse stream; do
	set -- "$ROOT"/fuzz/regress/$h/*
	[ -f "$1" ] || set --
	corpus "fuzz-regress-$h" "$h" "$@"
done

# ---- Seeds: every image and parse seed, three workload seeds ----
set -- "$ROOT"/fuzz/seeds/image/*
[ -f "$1" ] || set --
corpus fuzz-seeds-image image "$@"
set -- "$ROOT"/fuzz/seeds/parse/*
[ -f "$1" ] || set --
corpus fuzz-seeds-parse parse "$@"
set -- $(ls "$ROOT"/fuzz/seeds/workload/* 2>/dev/null | head -n 3)
corpus fuzz-seeds-workload workload "$@"
# Every stream seed, each received whole (a seed ref now refuses is a change
# in ref/send/ to look at).
set -- "$ROOT"/fuzz/seeds/stream/*
if [ -f "$1" ]; then
	n=$#
	corpus fuzz-seeds-stream stream -v "$@"
	NAME=fuzz-seeds-stream-received
	got=$(grep -c '^receive: 0$' "$ERR")
	[ "$got" -eq "$n" ] || fail "$got of $n seeds received: $(grep -m1 '^receive: -' "$ERR")"
	[ "$(grep -c '^check: 0$' "$ERR")" -eq "$n" ] || fail "a check found errors"
	done_check
else
	echo "SKIP fuzz-seeds-stream: no input"
fi

# ---- fuzz-stream: what it makes of streams ----
S="$ROOT/fuzz/seeds/stream"
if [ -f "$S/full-then-snapshot" ] && [ -f "$S/incremental-on-parent" ]; then
	run fuzz-stream-snapshot 0 "$F/fuzz-stream" -v "$S/full-then-snapshot"
	err_has '^at subvol a$'
	err_has '^at snapshot b$'
	err_has '^receive: 0$'
	err_has '^2 streams, [0-9]+ commands, 2 subvolumes finished, [0-9]+ bytes written$'
	err_has '^umount: 0$'
	err_has '^check: 0$'
	err_has "^received subvolumes: 3 \(the base's 1 included\)$"
	err_lacks_violation
	done_check
	# A byte of the first write's data changed: the harness rewrites the crc32c.
	python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[2000] ^= 0x55; open(sys.argv[2], "wb").write(d)' \
		"$S/full-then-snapshot" "$T/flip.st"
	run fuzz-stream-crc-rewritten 0 "$F/fuzz-stream" -v "$T/flip.st"
	err_has '^1 crc32c rewritten$'
	err_has '^receive: 0$'
	err_lacks_violation
	done_check
	# Cut in its second stream: the first subvolume received, the second left
	# writable and not received; the file system consistent.
	len=$(wc -c <"$S/full-then-snapshot")
	head -c $((len - 300)) "$S/full-then-snapshot" >"$T/cut.st"
	run fuzz-stream-cut 0 "$F/fuzz-stream" -v "$T/cut.st"
	err_has '^receive: -74: offset [0-9]+: the stream ends inside'
	err_has '^2 streams, [0-9]+ commands, 1 subvolumes finished'
	err_has '^check: 0$'
	err_has "^received subvolumes: 2 \(the base's 1 included\)$"
	err_lacks_violation
	done_check
	# An incremental stream whose parent is nowhere.
	python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(d.replace(b"btrsim-parent-01", b"btrsim-parent-02"))' \
		"$S/incremental-on-parent" "$T/orphan.st"
	: >"$T/empty.st"
	run fuzz-stream-refused 0 "$F/fuzz-stream" -v "$T/orphan.st" "$T/empty.st"
	err_has '^receive: -2: offset 17: snapshot: cannot find the parent subvolume$'
	err_has '^receive: -22: empty stream is not considered valid$'
	err_lacks_violation
	done_check
	# -o: the disk as the receive left it, clean for btrsim check and btrfs check.
	mkdir -p "$T/stream-out"
	run fuzz-stream-save 0 "$F/fuzz-stream" -o "$T/stream-out" "$S/incremental-on-parent"
	done_check
	img="$T/stream-out/disk0.img"
	run fuzz-stream-save-subvols 0 "$BTRSIM" subvolume list "$img"
	out_has ' path parent$'
	out_has ' path child$'
	done_check
	check fuzz-stream-save
else
	echo "SKIP fuzz-stream: no seeds full-then-snapshot and incremental-on-parent (make fuzz-seeds HARNESS=stream)"
fi

# ---- fuzz-mkseed: a btrsim image as a compact image, run whole ----
truncate -s 128M "$T/a.img"
mkdir -p "$T/src/d"
printf 'hello\n' >"$T/src/a"
head -c 30000 /dev/zero | tr '\0' 'x' >"$T/src/d/b"
ln -s a "$T/src/l"
"$BTRSIM" mkfs --seed 3 "$T/a.img" >/dev/null && "$BTRSIM" put "$T/a.img" "$T/src" /s >/dev/null
run fuzz-mkseed-image 0 "$F/fuzz-mkseed" -o "$T/a.bfz" "$T/a.img"
err_has 'tree blocks, [0-9]+ data extents'
done_check
run fuzz-image-clean 0 "$F/fuzz-image" -v "$T/a.bfz"
err_has '^check: 0$'
err_has '^walk: 5 entries, 30006 bytes read, 0 errors$'
err_has '^new file: mkdir 0 create 0 write 0 0 setxattr 0 rename 0$'
err_has '^umount: 0$'
err_lacks_violation
done_check
# Deterministic: the same compact image from the same image.
"$F/fuzz-mkseed" -o "$T/a2.bfz" "$T/a.img" 2>/dev/null
run fuzz-mkseed-deterministic 0 cmp "$T/a.bfz" "$T/a2.bfz"
done_check
# What the format refuses, and what it takes whole.
printf 'BFZ' >"$T/short"
printf 'XXXX\001\000\001\000\000\000\000\000' >"$T/magic"
printf 'BFZI\001\007\001\000\000\000\000\000' >"$T/disks"
printf 'BFZI\001\000\000\000\000\000\000\000' >"$T/size0"
: >"$T/empty"
run fuzz-image-refused 0 "$F/fuzz-image" -v "$T/short" "$T/magic" "$T/disks" "$T/size0" "$T/empty"
err_has 'input refused: 3 bytes: shorter than the 12-byte header'
err_has 'input refused: not a compact image'
err_has 'input refused: 8 disks: at most 4'
err_has 'input refused: disk size 0 MiB'
done_check
# Truncated records: the rest is zeros, nothing breaks.
head -c 5000 "$T/a.bfz" >"$T/cut"
run fuzz-image-truncated 0 "$F/fuzz-image" -v "$T/cut"
err_has '^laid [0-9]+ records'
err_lacks_violation
done_check

# ---- fuzz-mkseed --workload: the decoder gives back the operations ----
cat >"$T/w.wl" <<'W'
mkdir /d0
create /d0/f0 0644
write /d0/f0 0 5000 7
setxattr /d0/f0 user.a "v"
fsync /d0/f0
symlink f0 /d0/l0
rename /d0/f0 /d0/f1 noreplace
truncate /d0/f1 100
sync
W
run fuzz-mkseed-workload 0 "$F/fuzz-mkseed" --workload --plan "$ROOT/faults/plans/commit-eio.plan" \
	-o "$T/w.bfw" "$T/w.wl"
err_has '9 of 9 operations and 1 fault lines encoded'
done_check
run fuzz-workload-decoded 0 "$F/fuzz-workload" -v "$T/w.bfw"
err_has '^ref/commit/flush nth=2 errno=EIO$'
err_has '^write /d0/f0 0 5000 7$'
err_has '^symlink f0 /d0/l0$'
err_has '^rename /d0/f0 /d0/f1 noreplace$'
err_has '^9 ops, [0-9]+ crash points, [0-9]+ states'
err_lacks_violation
done_check

# The decoder's special offset, 2^63 - 256: a short write or fallocate there
# succeeds and makes a file of nearly 2^63 bytes, which every crash state's
# judge hashes by its extents (it read every byte of the holes before and
# never ended); a longer one fails.
cat >"$T/big.wl" <<'W'
create /f0 0644
write /f0 0x7fffffffffffff00 1 9
write /f0 0x7fffffffffffff00 4096 9 = EINVAL
fsync /f0
create /f1 0644
fallocate /f1 0x7fffffffffffff00 255
fallocate /f1 0x7fffffffffffff00 256 = EFBIG
sync
W
run fuzz-mkseed-workload-big-offset 0 "$F/fuzz-mkseed" --workload -o "$T/big.bfw" "$T/big.wl"
err_has '8 of 8 operations and 0 fault lines encoded'
done_check
run fuzz-workload-big-offset 0 "$F/fuzz-workload" -v "$T/big.bfw"
err_has '^write /f0 9223372036854775552 1 9$'
err_has '^fallocate /f1 9223372036854775552 255$'
err_has '^8 ops, [0-9]+ crash points, [0-9]+ states'
err_lacks_violation
done_check

# ---- btrsim findings ----
db="$T/f.db"
printf '\000mkdir /a\n' >"$T/in"
printf 'fuzz-image-top fuzz/harness_image.c:1\n' >"$T/stack"
run findings-record 0 "$BTRSIM" findings --db "$db" --record --harness parse --kind crash \
	--signal SIGSEGV --stack-hash 00112233aabbccdd --stack "$T/stack" --input "$T/in" --minimized "$T/in"
out_has '^new finding 1$'
done_check
run findings-record-known 0 "$BTRSIM" findings --db "$db" --record --harness parse --kind crash \
	--stack-hash 00112233aabbccdd --input "$T/in"
out_has '^known finding 1$'
done_check
run findings-list 0 "$BTRSIM" findings --db "$db"
out_has '^1 +parse +[0-9T:Z-]+ +crash +SIGSEGV +00112233aabbccdd +10 +10 +no fuzz-image-top'
done_check
run findings-export 0 "$BTRSIM" findings --db "$db" --export 1 "$T/out"
done_check
run findings-export-same 0 cmp "$T/in" "$T/out"
done_check
run findings-replay-clean 0 "$BTRSIM" findings --db "$db" --replay 1
out_has '^replayed: the harness ran it to the end'
done_check
run findings-fixed 0 "$BTRSIM" findings --db "$db" --fixed 1
out_has 'marked fixed'
done_check
run findings-missing 1 "$BTRSIM" findings --db "$db" --replay 7
err_has 'finding 7: no such finding'
done_check
run findings-bad-kind 2 "$BTRSIM" findings --db "$db" --record --harness parse --kind oops \
	--stack-hash x --input "$T/in"
err_has "--kind is crash, hang or violation"
done_check
run findings-no-db 1 "$BTRSIM" findings --db "$T/none.db"
err_has 'no such trace database'
done_check
mkdir -p "$T/afl/main" "$T/afl/s1"
for i in main s1; do
	printf 'start_time        : 1700000000\nlast_update       : 1700000020\nrun_time          : 20\nexecs_done        : 2000\nexecs_per_sec     : 100.00\ncorpus_count      : 7\nsaved_crashes     : 1\nsaved_hangs       : 0\n' \
		>"$T/afl/$i/fuzzer_stats"
	printf '# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found\n5, 0, 0, 5, 1, 1, 1.00%%, 0, 0, 1, 90.00, 500, 10\n10, 0, 0, 6, 1, 1, 1.00%%, 1, 0, 1, 110.00, 1000, 10\n' \
		>"$T/afl/$i/plot_data"
done
run findings-import-stats 0 "$BTRSIM" findings --db "$db" --import-stats parse "$T/afl"
out_has '^3 statistics samples of 2 instances recorded: 4000 execs in 20 s, 200.0 execs/s, corpus 7, 2 crashes, 0 hangs$'
done_check
run findings-stats 0 "$BTRSIM" findings --db "$db" --stats
out_has '^1 +parse +2023-11-14T22:13:25Z +5 +1000 +180.0 +5 +0 +0$'
out_has '^2 +parse +2023-11-14T22:13:30Z +10 +2000 +220.0 +6 +2 +0$'
done_check

# An open finding (fuzz/pending/): it must still fail until it is fixed.
for p in "$ROOT"/fuzz/pending/*/*; do
	[ -f "$p" ] || continue
	h=$(basename "$(dirname "$p")")
	name="fuzz-pending-$h-$(basename "$p")"
	"$F/fuzz-$h" "$p" >"$OUT" 2>"$ERR"
	if grep -q 'btrsim-fuzz: violation\|Sanitizer' "$ERR"; then
		echo "PASS $name"
	else
		echo "SKIP $name: runs clean now: the bug is fixed, move it to fuzz/regress/$h/"
	fi
done

# ---- A short real AFL++ campaign ----
AB=${FUZZ_B:-build/afl}
if ! command -v afl-fuzz >/dev/null 2>&1 || ! command -v afl-clang-fast >/dev/null 2>&1; then
	echo "SKIP fuzz-run-parse: AFL++ is not installed (make deps)"
elif find "$B" -name '*.gcno' -print -quit 2>/dev/null | grep -q .; then
	# fuzz-run rebuilds its triage harnesses with MODE=debug into FUZZ_DBG_B: not into a
	# gcov build (make coverage), whose objects it would overwrite.  make test runs it.
	echo "SKIP fuzz-run-parse: $B is a coverage build; the AFL++ campaign runs from the debug build (make test)"
else
	# Not through run: afl-fuzz may not be able to run on this machine.
	NAME=fuzz-run-parse
	BAD=0
	# The build directories as make -C ROOT names them (relative, as make test does).
	DB_REL=$(realpath --relative-to="$ROOT" "$B")
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" fuzz-run HARNESS=parse SECONDS=10 \
		JOBS=1 FUZZ_DB="$T/run.db" FUZZ_OUT="$T/afl-out" FUZZ_B="$AB" FUZZ_DBG_B="$DB_REL" \
		>"$OUT" 2>"$ERR"
	rc=$?
	# fuzz-run.sh exits 3 when afl-fuzz cannot run (make reports it as 2).
	if [ "$rc" -ne 0 ] && grep -q '^fuzz-run: afl-fuzz could not run here' "$ERR"; then
		echo "SKIP fuzz-run-parse: afl-fuzz cannot run here: $(grep -v '^fuzz-run: afl-fuzz could not' "$ERR" | tr '\n' ' ' | head -c 300)"
	else
		[ "$rc" -eq 0 ] || fail "exit $rc; stderr: $(tail -c 300 "$ERR")"
		out_has '^fuzz-triage: parse: [0-9]+ crashes and hangs'
		done_check
		run fuzz-run-stats 0 "$BTRSIM" findings --db "$T/run.db" --stats
		out_has '^1 +parse +'
		n=$(awk 'NR > 1 && $5 > 0' "$OUT" | wc -l)
		[ "$n" -ge 1 ] || fail "no sample with executions"
		done_check
	fi
fi
