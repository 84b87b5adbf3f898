#!/bin/sh
# btrsim explore: every crash state of small workloads is consistent on ref,
# and every deliberately broken build (make mutants, ref/mutant.h) is caught.
. "$(dirname "$0")/lib.sh"

cat >"$T/w1.wl" <<'W'
create /a
write /a 0 5000 1
fsync /a
mkdir /d
rename /a /d/b
create /d/c
write /d/c 0 70000 2
sync
unlink /d/b
write /d/c 10000 3000 3
setxattr /d/c user.x "v"
fsync /d/c
truncate /d/c 100
W
cat >"$T/w2.wl" <<'W'
mkdir /x
create /x/1
create /x/2
link /x/1 /x/3
write /x/2 0 20000 4
fdatasync /x/2
rename /x/2 /x/1
rmdir /x = ENOTEMPTY
W
# File capabilities go with writes, truncates, fallocate and chown of a
# non-directory (Linux's file_remove_privs, ATTR_KILL_PRIV), in ref and in
# the oracle's model alike; a write of no bytes and a directory's chown keep them.
cap=0x0100000200200000000000000000000000000000
cat >"$T/w3.wl" <<W
create /c 04755
setxattr /c security.capability $cap
setxattr /c user.keep k
write /c 0 0 1
fsync /c
write /c 0 5000 5
fsync /c
setxattr /c security.capability $cap
truncate /c 100
sync
setxattr /c security.capability $cap
fallocate /c 0 8K keep-size
setxattr /c security.capability $cap
fallocate /c 0 10 punch-hole
setxattr /c security.capability $cap
chown /c -1 -1
fsync /c
mkdir /d
setxattr /d security.capability $cap
chown /d 1 1
fsync /d
W

# Subvolumes: snapshots (read-write and read-only) of data that both sides
# then change, a nested subvolume (a stand-in in the snapshot), a snapshot
# of a snapshot, deletions with the cleaner; each subvolume operation
# commits.  The oracle also compares which directories are subvolumes (and
# read-only) and which are stand-ins.
cat >"$T/w4.wl" <<'W'
subvol-create /S
mkdir /S/A
create /S/A/foo
write /S/A/foo 0 40000 1
link /S/A/foo /S/bar
setxattr /S/bar user.a v1
subvol-create /S/N
create /S/N/x
snapshot /S /T
write /S/A/foo 4096 8192 2
write /T/bar 30000 20000 3
snapshot /S /R ro
write /R/bar 0 1 = EROFS
unlink /T/A/foo
fsync /T
rmdir /T/N
snapshot /T /U
link /S/bar /T/baz = EXDEV
subvol-delete /S = ENOTEMPTY
subvol-delete /S/N
subvol-delete /S
truncate /U/bar 100
fdatasync /U/bar
subvol-sync
W
# A snapshot inside its own source, made in the transaction that changed the
# source (4 KiB nodes: a source tree of two levels, its leaves dirty): the
# snapshot holds the source as it was before its own entry existed (ref
# commits before it copies the source's root).
{
	echo 'mkdir /a'
	for i in $(seq 0 39); do echo "create /a/f$i"; done
	echo 'mkdir /d'
	echo 'snapshot / /d/s'
} >"$T/w5.wl"
# Quota groups: enabled first, then data in subvolumes, snapshots (one
# read-only) that inherit their source's numbers, writes over shared data on
# both sides, a deletion and the cleaner.  Every crash state's numbers must
# be the recount's (btrsim check) and not marked inconsistent.
cat >"$T/w6.wl" <<'W'
quota-enable
subvol-create /S
create /S/f
write /S/f 0 40000 1
mkdir /S/d
create /S/d/g
write /S/d/g 0 9000 2
snapshot /S /T
write /T/f 4096 8192 3
snapshot /T /U ro
truncate /S/f 1000
fsync /S/f
subvol-delete /T
write /U/f 0 1 = EROFS
subvol-sync
quota-enable
W
# Explore options a workload needs.
wl_opts() {
	case $1 in
	w5) echo --nodesize 4k ;;
	w7) echo --treelog ;;
	esac
}

for w in w1 w2 w3 w4 w5 w6; do
	run "explore-$w" 0 "$BTRSIM" explore $(wl_opts $w) "$T/$w.wl"
	out_has '^seed 1$'
	out_has ' 0 violations$'
	states=$(sed -n 's/.* crash points, \([0-9]*\) crash states.*/\1/p' "$OUT")
	[ "${states:-0}" -gt 20 ] || fail "only ${states:-0} crash states"
	done_check
done

# --treelog: fsync writes the log tree; every crash state (inside the log
# writes too) must be the last commit with the log replayed as the log's
# promises say (traces/README.md).  w7 logs new files in new directories,
# overwrites, a punched hole, a hard link, xattrs, truncate and prealloc
# past EOF, with files neither fsynced nor committed beside them.
cat >"$T/w7.wl" <<'W'
mkdir /d
create /d/old
write /d/old 0 40000 1
create /keep
write /keep 0 9000 2
sync
write /d/old 4096 8192 3
fallocate /d/old 20480 8192 punch-hole
fsync /d/old
mkdir /n
mkdir /n/m
create /n/m/f
write /n/m/f 0 30000 4
setxattr /n/m/f user.k v
link /d/old /n/hard
create /lost
write /lost 0 5000 5
fsync /n/m/f
fdatasync /d/old
truncate /keep 1000
fallocate /keep 4096 65536 keep-size
fsync /keep
write /keep 0 100 6
W
run explore-treelog 0 "$BTRSIM" explore --treelog --db "$T/tl.db" "$T/w7.wl"
out_has ' 0 violations$'
states=$(sed -n 's/.* crash points, \([0-9]*\) crash states.*/\1/p' "$OUT")
[ "${states:-0}" -gt 50 ] || fail "only ${states:-0} crash states"
if command -v sqlite3 >/dev/null; then
	[ "$(sq "$T/tl.db" 'SELECT treelog FROM runs WHERE id = 1')" = 1 ] ||
		fail "the run is not stored as a treelog run"
	"$BTRSIM" replay --db "$T/tl.db" 1 >"$T/tl.rep" 2>&1 || fail "the run does not replay: $(head -c 300 "$T/tl.rep")"
fi
done_check
# Without it, the same workload's fsyncs commit (the kernel's notreelog).
run explore-notreelog 0 "$BTRSIM" explore "$T/w7.wl"
out_has ' 0 violations$'
done_check

# Writes through files opened O_SYNC and O_DSYNC sync the log as fsync and
# fdatasync do: what they wrote survives every crash state, and the log
# mutants below are caught on them alone.
cat >"$T/w9.wl" <<'W'
mkdir /d
create /d/a
write /d/a 0 40000 1
create /keep
write /keep 0 9000 2
sync
write /d/a 4096 8192 3 sync
create /d/b
write /d/b 0 30000 4 dsync
write /keep 100 100 5
write /d/a 60000 5000 6 sync
write /d/a 0 0 8 sync
create /lost
write /lost 0 5000 7
W
run explore-osync 0 "$BTRSIM" explore "$T/w9.wl"
out_has ' 0 violations$'
done_check
truncate -s 256M "$T/osync.img"
"$BTRSIM" mkfs "$T/osync.img" >/dev/null
run run-osync-log-syncs 0 "$BTRSIM" run "$T/w9.wl" "$T/osync.img"
out_has '^fsync: 3 log syncs, 0 full commits'
done_check

# Names a file lost before its fsync stay lost (generic/039): a hard link
# unlinked, another renamed within the directory, one in another directory.
cat >"$T/w10.wl" <<'W'
mkdir /d
create /d/a
write /d/a 0 5000 1
link /d/a /d/b
link /d/a /d/c
mkdir /e
link /d/a /e/x
sync
unlink /d/b
write /d/a 0 100 2
fsync /d/a
rename /d/c /d/n
unlink /e/x
fsync /d/n
create /d/z
W
run explore-stale-names 0 "$BTRSIM" explore "$T/w10.wl"
out_has ' 0 violations$'
done_check

# An fsync inside a snapshot whose directory in the parent subvolume moved
# in this transaction commits (the subvolume's log cannot reach above it):
# every crash state has the file where the model has it.
cat >"$T/w11.wl" <<'W'
mkdir /d0
snapshot / /d0/s3
mkdir /d0/d2
snapshot /d0/s3 /d0/d2/s3
rename /d0/d2 /d3 noreplace
mkdir /d3/s3/d4
create /d3/s3/d4/f4
write /d3/s3/d4/f4 0 3000 1
link /d3/s3/d4/f4 /d3/s3/d4/f0
fdatasync /d3/s3/d4/f0
W
run explore-fsync-below-moved-subvolume-parent 0 "$BTRSIM" explore "$T/w11.wl"
out_has ' 0 violations$'
done_check

# Directory fsyncs (traces/README.md): new entries there, removed ones gone,
# entries of the commit kept; renames within and out of a logged directory,
# a hard link's other name fsynced after one was unlinked.
cat >"$T/w8.wl" <<'W'
mkdir /d
create /d/old
write /d/old 0 40000 1
create /d/gone
mkdir /d/sub
create /d/sub/in
create /keep
link /keep /d/k2
sync
create /d/new
write /d/new 0 9000 2
mkdir /d/nd
create /d/nd/f
unlink /d/gone
unlink /d/sub/in
rmdir /d/sub
rename /d/old /d/renamed
fsync /d
write /d/new 0 100 3
unlink /d/k2
write /keep 0 5000 4
fsync /keep
create /d/after
fsync /d/new
rename /d/renamed /x
fsync /x
W
run explore-treelog-dirs 0 "$BTRSIM" explore "$T/w8.wl"
out_has ' 0 violations$'
done_check

# --quota puts quota-enable before the workload's first op, recorded like
# any op: the stored workload has it, and the run replays.
run explore-quota-flag 0 "$BTRSIM" explore --quota --max-subset 4 --samples 4 --db "$T/q.db" \
	"$T/w4.wl"
out_has '^25 operations, [0-9]+ crash points, [0-9]+ crash states .*, 0 violations$'
if command -v sqlite3 >/dev/null; then
	sq "$T/q.db" "SELECT w.text FROM runs r JOIN workloads w ON w.id = r.workload_id" |
		head -n 1 | grep -qx 'quota-enable' || fail "the stored workload does not start with quota-enable"
	"$BTRSIM" replay --db "$T/q.db" 1 >/dev/null 2>&1 || fail "the run does not replay"
fi
done_check
run explore-quota-once 0 "$BTRSIM" explore --quota --max-subset 2 --samples 2 "$T/w6.wl"
out_has '^16 operations, '
done_check

# Seeded random workloads: every crash state consistent.
for seed in 1 2; do
	"$BTRSIM" gen-workload --seed "$seed" --ops 50 --max-offset 1M --max-len 64K >"$T/g$seed.wl"
	run "explore-random-seed-$seed" 0 "$BTRSIM" explore --max-subset 6 --samples 8 "$T/g$seed.wl"
	out_has ' 0 violations$'
	done_check
done
# (seeds whose 80 ops hold a snapshot: 2 has none since writes may be O_SYNC)
for seed in 1 3; do
	"$BTRSIM" gen-workload --seed "$seed" --ops 80 --max-offset 1M --max-len 64K --subvols \
		>"$T/gs$seed.wl"
	grep -q '^snapshot ' "$T/gs$seed.wl" || echo "FAIL explore-random-subvols-seed-$seed: no snapshot"
	run "explore-random-subvols-seed-$seed" 0 "$BTRSIM" explore --max-subset 6 --samples 8 \
		"$T/gs$seed.wl"
	out_has ' 0 violations$'
	done_check
done

# A snapshot is there complete or not at all in every crash state, read-only
# as made, whatever its source went through after it: checked on the images
# of the crash states themselves (btrsim replay --crash-state), not by the
# oracle.  The content /T/f must have: /S/f as the snapshot saw it.
cat >"$T/snap.wl" <<'W'
subvol-create /S
create /S/f
write /S/f 0 20000 1
sync
snapshot /S /T ro
write /S/f 0 20000 2
fsync /S/f
unlink /S/f
sync
W
printf 'subvol-create /S\ncreate /S/f\nwrite /S/f 0 20000 1\n' >"$T/pre.wl"
truncate -s 512M "$T/pre.img"
"$BTRSIM" mkfs "$T/pre.img" >/dev/null
"$BTRSIM" run "$T/pre.wl" "$T/pre.img" >/dev/null
snapshot_view=$("$BTRSIM" manifest "$T/pre.img" | sed -n 's|^/S/f \(.*\)|/T/f \1|p')
run explore-snapshot-states 0 "$BTRSIM" explore --max-subset 4 --samples 4 --torn 2 \
	--db "$T/snap.db" "$T/snap.wl"
out_has ' 0 violations$'
if command -v sqlite3 >/dev/null; then
	with=0 without=0
	for k in $(sq "$T/snap.db" "SELECT k FROM crash_states WHERE run_id = 1"); do
		rm -rf "$T/cs"
		"$BTRSIM" replay --db "$T/snap.db" 1 --crash-state "$k" --out "$T/cs" >/dev/null 2>&1 ||
			{ fail "replay of crash state $k"; break; }
		"$BTRSIM" manifest "$T/cs/disk0.img" >"$T/cs.view" 2>/dev/null ||
			{ fail "manifest of crash state $k"; break; }
		if grep -q '^/T ' "$T/cs.view"; then
			with=$((with + 1))
			[ "$(grep '^/T/' "$T/cs.view")" = "$snapshot_view" ] ||
				{ fail "crash state $k: /T is not /S as snapshotted: $(grep '^/T' "$T/cs.view" | tr '\n' '|')"; break; }
			"$BTRSIM" subvolume show "$T/cs/disk0.img" /T | grep -q 'Flags:.*readonly' ||
				{ fail "crash state $k: /T is not read-only"; break; }
		else
			without=$((without + 1))
		fi
	done
	[ "$with" -gt 5 ] && [ "$without" -gt 0 ] ||
		fail "crash states with the snapshot: $with, without: $without"
else
	echo "SKIP explore-snapshot-states: no sqlite3"
fi
done_check

run explore-deterministic 0 "$BTRSIM" explore --seed 5 --max-subset 3 --samples 5 "$T/w1.wl"
sed 's/ ([0-9]*\/s)//' "$OUT" >"$T/e1"
"$BTRSIM" explore --seed 5 --max-subset 3 --samples 5 "$T/w1.wl" | sed 's/ ([0-9]*\/s)//' >"$T/e2"
cmp -s "$T/e1" "$T/e2" || fail "two runs differ"
done_check

# receive (issue 22): a full stream, then an incremental one on it (renames,
# an unlink, a rewrite, xattrs, owners, a mode, a symlink, a hard link),
# made with btrsim send.  A crash part-way may leave the subvolume writable
# and not received, holding any part, or received and writable; never
# received before the whole stream is in.  The incremental stream on a file
# system without its parent fails before it makes anything (ENOENT), a
# second receive of a name fails (EEXIST).
rsrc="$T/rsrc"
mkdir -p "$rsrc/d/e"
printf 'hello\n' >"$rsrc/d/f"
ln "$rsrc/d/f" "$rsrc/hard"
ln -s d/f "$rsrc/sym"
head -c 70000 /dev/urandom >"$rsrc/big"
printf x >"$rsrc/gone"
"$BTRSIM" mkfs --size 256M -f "$T/rsend.img" >/dev/null
"$BTRSIM" subvolume create "$T/rsend.img" /vol >/dev/null
"$BTRSIM" put "$T/rsend.img" "$rsrc/." /vol >/dev/null || fail "put"
"$BTRSIM" subvolume snapshot -r "$T/rsend.img" /vol /s1 >/dev/null
printf changed | "$BTRSIM" write "$T/rsend.img" /vol/big >/dev/null
"$BTRSIM" mv "$T/rsend.img" /vol/d /vol/moved >/dev/null
"$BTRSIM" rm "$T/rsend.img" /vol/gone >/dev/null
"$BTRSIM" subvolume snapshot -r "$T/rsend.img" /vol /s2 >/dev/null
"$BTRSIM" send -q -f "$T/s1.stream" "$T/rsend.img" /s1 || fail "send s1"
"$BTRSIM" send -q -p /s1 -f "$T/s2.stream" "$T/rsend.img" /s2 || fail "send s2"
cat >"$T/w12.wl" <<'W'
mkdir /r
receive s2.stream /r = ENOENT
receive s1.stream /r
create /r/s1/x = EROFS
receive s1.stream /r = EEXIST
receive s2.stream /r
W
run explore-receive 0 "$BTRSIM" explore "$T/w12.wl"
out_has ' 0 violations$'
done_check

# Reflinks (issue 23): clones into another file, into itself, past its
# end; dedupes of equal and differing ranges (EBADE), an fsync after a
# clone.  A dedupe never changes a byte, in any crash state.
cat >"$T/w13.wl" <<'W'
create /a
write /a 0 64K 1
create /b
write /b 0 64K 1
create /c
write /c 0 64K 2
sync
dedupe /a 0 64K /b 0
dedupe /a 0 64K /c 0 = EBADE
clone-range /a 0 16K /c 16K
fsync /c
clone-range /a 32K 8K /a 0
create /d
clone /c /d
dedupe /c 0 32K /d 0
clone-range /b 0 4K /d 128K
fdatasync /d
W
run explore-reflink 0 "$BTRSIM" explore "$T/w13.wl"
out_has ' 0 violations$'
done_check

# The oracle catches each deliberately broken build: those of the commit
# path on two small workloads, those of snapshots on the workloads above
# that exercise what they break (a read-only snapshot; a snapshot inside its
# own source with a two-level tree).
catch_workloads() {
	case $1 in
	snap-rw) echo w4 ;;
	snap-no-commit) echo w5 ;;
	qgroup-no-inherit) echo w6 ;;
	log-no-dir-ranges) echo w8 ;;
	log-no-unlink) echo w10 ;;
	receive-early) echo w12 ;;
	dedupe-no-compare) echo w13 ;;
	log-super-first | log-no-csum) echo w9 ;;
	log-*) echo w7 ;;
	*) echo w1 w2 ;;
	esac
}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
for name in skip-flush cow-in-place super-first drop-dirty early-reuse snap-rw snap-no-commit \
	qgroup-no-inherit log-super-first log-no-csum log-no-names log-no-holes log-no-dir-ranges \
	log-no-unlink receive-early dedupe-no-compare; do
	M="$ROOT/build/mutants/btrsim-$name"
	if [ ! -x "$M" ]; then
		echo "SKIP explore-catches-$name: no $M (make mutants builds it; make test does)"
		continue
	fi
	NAME="explore-catches-$name"
	caught=0
	for w in $(catch_workloads $name); do
		"$M" explore --no-minimize $(wl_opts $w) "$T/$w.wl" >"$T/m.out" 2>"$T/m.err"
		rc=$?
		[ $rc -eq 1 ] && grep -q 'crash at IO' "$T/m.err" && caught=1
		[ $rc -gt 1 ] && fail "exit $rc: $(head -c 200 "$T/m.err")"
	done
	[ $caught -eq 1 ] || fail "no violation found in a build that $name breaks"
	done_check
done

# ... and still under the bit-flip plan of `make run`: damage excuses a failed
# mount, check or read (verdict detected) only in a crash state that holds
# injected damage.  The mutants' broken states mostly fail on a checksum too
# (a superblock naming a root tree never written: "root tree unreadable:
# checksum mismatch"), and without damage in the state that is a violation.
# Not drop-dirty and early-reuse: the plan flips 5% of all writes, mkfs's
# included, so nearly every state holds damage that reached the media, and
# their broken states fail on checksums too; telling those apart needs the
# judge to match the failing block against the damaged sectors (not yet).
for name in skip-flush cow-in-place super-first; do
	M="$ROOT/build/mutants/btrsim-$name"
	if [ ! -x "$M" ]; then
		echo "SKIP explore-catches-$name-bitflip: no $M (make mutants builds it; make test does)"
		continue
	fi
	NAME="explore-catches-$name-bitflip"
	caught=0
	for w in w1 w2; do
		"$M" explore --no-minimize --faults "$ROOT/faults/plans/bitflip.plan" "$T/$w.wl" \
			>"$T/m.out" 2>"$T/m.err"
		rc=$?
		[ $rc -eq 1 ] && grep -q 'crash at IO' "$T/m.err" && caught=1
		[ $rc -gt 1 ] && fail "exit $rc: $(head -c 200 "$T/m.err")"
	done
	[ $caught -eq 1 ] || fail "the bit-flip plan hides what $name breaks"
	done_check
done

printf 'mkdir /a\nbogus /b\n' >"$T/bad.wl"
run explore-parse-error 1 "$BTRSIM" explore "$T/bad.wl"
err_has 'bad.wl:2:1: '
done_check
run explore-missing 1 "$BTRSIM" explore "$T/none.wl"
err_lines 1
done_check
run explore-no-args 2 "$BTRSIM" explore
done_check
run explore-two-args 2 "$BTRSIM" explore "$T/w1.wl" "$T/w2.wl"
done_check
run explore-bad-subset 2 "$BTRSIM" explore --max-subset 99 "$T/w1.wl"
done_check
