#!/bin/sh
# Log trees the kernel wrote: it mounts with a long commit interval, makes a
# baseline commit, then changes files and fsyncs them (coreutils `sync FILE`
# is fsync(2)), and its backing file is copied while still mounted, so that
# the copy holds the log and its superblock names it.  Then
#   - the kernel's replay (a mount of one copy) and ref's (btrsim manifest of
#     another, replayed in memory) show the same tree, inode numbers and
#     mtimes included;
#   - the reading commands leave the image unchanged, and --nologreplay shows
#     the baseline commit and says so;
#   - ref's replay onto the image (a writing command) leaves a file system
#     that btrfs check and btrsim check pass and the kernel mounts with the
#     same content;
#   - btrsim check of the image with its log is clean, as btrfs check is.
# A copy taken after the kernel committed anyway (a sync elsewhere on the
# machine, or one of its full-commit cases) holds no log: that scenario
# reports SKIP.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip kernel-logreplay "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"
mkdir -p "$MP"

log_root() {
	btrfs inspect-internal dump-super "$1" 2>/dev/null | awk '$1 == "log_root" { print $2 }'
}

# scenario NAME BASELINE LOGGED [OPTS]: runs BASELINE in the mount (OPTS
# added to its options), commits, runs LOGGED (which fsyncs), copies the
# image with its log to $T/NAME.img.  0 when the copy holds a log.
scenario() {
	NAME=$1
	BAD=0
	img="$T/$1.kernel.img"
	rm -f "$img" "$T/$1.img"
	truncate -s 256M "$img"
	mkfs.btrfs -q -f "$img" >/dev/null 2>&1 || { fail "mkfs.btrfs"; return 1; }
	attach "$img" || { fail "losetup"; return 1; }
	mount_dev "$MP" "commit=300${4:+,$4}" "$LOOP" || { fail "mount"; return 1; }
	(cd "$MP" && sh -ec "$2") || fail "baseline commands failed"
	btrfs filesystem sync "$MP"
	(cd "$MP" && sh -ec "$3") || fail "logged commands failed"
	cp --sparse=always "$img" "$T/$1.img"
	unmount "$MP"
	cleanup_mounts
	[ "$BAD" -eq 0 ] || return 1
	if [ "$(log_root "$T/$1.img")" = 0 ]; then
		skip "$1" "the kernel committed before the copy: no log to replay"
		return 1
	fi
	return 0
}

# judge NAME: the checks above on $T/NAME.img.
judge() {
	img="$T/$1.img"
	cp --sparse=always "$img" "$T/k.img"
	cp --sparse=always "$img" "$T/r.img"
	before=$(md5sum <"$img")

	# The kernel's replay.
	attach "$T/k.img" || { fail "losetup"; return; }
	mount_dev "$MP" "" "$LOOP" || { fail "kernel mount of the copy"; return; }
	"$BTRSIM" manifest --host "$MP" --ino --times >"$T/kernel.mf" 2>"$T/kernel.err" ||
		fail "manifest --host: $(head -c 200 "$T/kernel.err")"
	unmount "$MP"
	cleanup_mounts

	run "$1-replay-in-memory" 0 "$BTRSIM" manifest --ino --times "$img"
	cp "$OUT" "$T/ref.mf"
	if ! cmp -s "$T/kernel.mf" "$T/ref.mf"; then
		fail "ref's replay differs from the kernel's: $(diff "$T/kernel.mf" "$T/ref.mf" | head -6 | tr '\n' '|')"
	fi
	[ "$(md5sum <"$img")" = "$before" ] || fail "a reading command changed the image"
	done_check

	run "$1-nologreplay" 0 "$BTRSIM" manifest --ino --times --nologreplay "$img"
	err_has 'log tree .* was not replayed: showing generation [0-9]+, the last commit'
	cmp -s "$OUT" "$T/ref.mf" && fail "--nologreplay shows the replayed state"
	done_check

	run "$1-check-with-log" 0 "$BTRSIM" check "$img"
	out_has '^no error found$'
	err_has 'checked as it is on disk'
	done_check

	# ref's replay onto the image: a writing command replays, then commits.
	run "$1-replay-onto-image" 0 "$BTRSIM" mkdir "$T/r.img" /after-replay
	[ "$(log_root "$T/r.img")" = 0 ] || fail "the log root is still set after the replay"
	progs_check "$T/r.img"
	run "$1-replay-onto-image" 0 "$BTRSIM" check "$T/r.img"
	out_has '^no error found$'
	attach "$T/r.img" || { fail "losetup"; return; }
	mount_dev "$MP" "" "$LOOP" || { fail "kernel mount after ref's replay"; return; }
	# (The top directory's line aside: /after-replay changed its mtime.)
	"$BTRSIM" manifest --host "$MP" --ino --times | grep -v -e '^/ ' -e '^/after-replay ' >"$T/after.mf"
	unmount "$MP"
	cleanup_mounts
	grep -v '^/ ' "$T/kernel.mf" >"$T/kernel.sub.mf"
	if ! cmp -s "$T/kernel.sub.mf" "$T/after.mf"; then
		fail "the kernel reads ref's replay differently: $(diff "$T/kernel.sub.mf" "$T/after.mf" | head -6 | tr '\n' '|')"
	fi
	done_check
}

try() {
	# Up to three tries: a sync elsewhere can commit the log away.
	for _ in 1 2 3; do
		if scenario "$@"; then
			judge "$1"
			return
		fi
		[ "$BAD" -eq 0 ] || return
	done
}

try new-files 'mkdir d' '
	echo one >d/f1; sync d/f1
	head -c 200000 /dev/urandom >d/f2; sync d/f2
	mkdir -p n1/n2/n3; echo deep >n1/n2/n3/f; sync n1/n2/n3/f'

try appends-overwrites '
	head -c 300000 /dev/urandom >a; seq 1 5000 >b; echo small >c' '
	head -c 50000 /dev/urandom >>a; sync a
	dd if=/dev/urandom of=b bs=4096 seek=3 count=2 conv=notrunc 2>/dev/null; sync b
	echo grown >>c; sync c'

try punch-fallocate '
	head -c 1048576 /dev/urandom >p; head -c 65536 /dev/urandom >q' '
	fallocate -p -o 131072 -l 262144 p; sync p
	fallocate -n -o 65536 -l 1048576 q; fallocate -o 1048576 -l 65536 p; sync q; sync p'

try rename-link-unlink '
	mkdir dir; echo a >a; echo b >b; echo c >dir/c; echo keep >dir/keep' '
	mv a dir/a2; sync dir/a2
	ln b dir/b2; sync dir/b2
	rm dir/c; sync dir'

try xattrs '
	echo x >f; setfattr -n user.old -v 1 f; setfattr -n user.keep -v 2 f' '
	setfattr -x user.old f; setfattr -n user.new -v 3 f; setfattr -n user.keep -v 4 f; sync f'

# Writes through O_SYNC and O_DSYNC descriptors (dd's oflag): each pwrite
# syncs the log as an fsync would.
try osync-writes '
	head -c 200000 /dev/urandom >s; echo t >t' '
	dd if=/dev/urandom of=s bs=4096 seek=5 count=3 oflag=sync conv=notrunc 2>/dev/null
	dd if=/dev/urandom of=t bs=1000 count=9 oflag=dsync 2>/dev/null
	dd if=/dev/urandom of=u bs=4096 count=2 oflag=sync 2>/dev/null'

# Compressed extents in the log: zstd by the mount option, zlib and lzo by
# the files' property, an inline compressed extent, data that does not
# compress (stored plain).
try compressed 'seq 1 50000 >base' '
	seq 1 200000 >z; sync z
	touch l g; btrfs property set l compression lzo; btrfs property set g compression zlib
	seq 1 100000 >l; seq 1 90000 >g; sync l; sync g
	head -c 3000 /dev/zero >small; sync small
	seq 1 30000 >>base; sync base
	head -c 131072 /dev/urandom >rnd; sync rnd' compress=zstd

try many-files 'mkdir m' '
	i=0; while [ $i -lt 300 ]; do echo "$i" >m/f$i; i=$((i + 1)); done
	i=0; while [ $i -lt 300 ]; do sync m/f$i; i=$((i + 7)); done; sync m'

# A log whose root block is damaged in every copy: the kernel refuses the
# mount, and so do btrsim's commands, saying why; --nologreplay still reads
# the last commit.
if [ -f "$T/new-files.img" ]; then
	cp --sparse=always "$T/new-files.img" "$T/bad.img"
	lr=$(log_root "$T/bad.img")
	for phys in $("$BTRSIM" map --nologreplay "$T/bad.img" "$lr" 2>/dev/null | awk '/physical/ { print $NF }'); do
		printf 'XXXXXXXX' | dd of="$T/bad.img" bs=1 seek=$((phys + 200)) conv=notrunc 2>/dev/null
	done
	run damaged-log 1 "$BTRSIM" ls "$T/bad.img" /
	err_has 'log replay: .*(checksum|csum)'
	out_empty
	attach "$T/bad.img" && mkdir -p "$MP" &&
		if mount -t btrfs "$LOOP" "$MP" 2>/dev/null; then
			MOUNTS="$MP $MOUNTS"
			fail "the kernel mounted an image whose log root is damaged (the test's premise)"
		fi
	cleanup_mounts
	done_check
	run damaged-log-nologreplay 0 "$BTRSIM" ls --nologreplay "$T/bad.img" /
	out_has '^d$'
	done_check
fi

# ref's own logs: a workload run with --treelog ends in a power loss, so the
# image holds the last commit and the fsync log.  The kernel replays ref's
# log at mount: its view equals ref's replay; btrfs check passes on the image
# with its log and after the kernel's replay.
cat >"$T/reflog.wl" <<'WL'
mkdir /d
create /d/old
write /d/old 0 300000 1
create /keep
write /keep 0 5000 2
sync
write /d/old 100000 20000 3
write /d/old 300000 40000 4
fallocate /d/old 8192 16384 punch-hole
fsync /d/old
mkdir /new
mkdir /new/deeper
create /new/deeper/f
write /new/deeper/f 0 123457 5
setxattr /new/deeper/f user.k v
link /d/old /new/hard
fsync /new/deeper/f
fsync /d/old
create /lost
write /lost 0 4096 6
truncate /keep 1000
fdatasync /keep
fallocate /keep 4096 65536 keep-size
fsync /keep
WL
# One workload of ref's with its log left by a power loss: NAME-written
# (btrfs check with the log), NAME-check, NAME-ref-replay (ref's view; the
# paths after the workload name must be there, then -PATH ones must not),
# NAME-kernel-replay (the kernel's replay equals ref's, btrfs check after).
ref_log_case() {
	c=$1
	wl=$2
	shift 2
	NAME=$c-written
	BAD=0
	rm -f "$T/$c.img"
	"$BTRSIM" mkfs --size 256M "$T/$c.img" >/dev/null 2>&1 || fail "btrsim mkfs"
	run "$c-written" 0 "$BTRSIM" run --treelog --power-off "$wl" "$T/$c.img"
	out_has '[1-9][0-9]* log syncs, then power lost'
	[ "$(log_root "$T/$c.img")" != 0 ] || fail "no log root in ref's image"
	progs_check "$T/$c.img"
	done_check
	run "$c-check" 0 "$BTRSIM" check "$T/$c.img"
	out_has '^no error found$'
	done_check
	run "$c-ref-replay" 0 "$BTRSIM" manifest --ino --times "$T/$c.img"
	cp "$OUT" "$T/$c.self.mf"
	for p in "$@"; do
		case $p in
		-*) grep -q "^${p#-} " "$T/$c.self.mf" && fail "${p#-} was neither fsynced nor committed" ;;
		*) grep -q "^$p " "$T/$c.self.mf" || fail "the fsynced $p is missing" ;;
		esac
	done
	done_check
	cp --sparse=always "$T/$c.img" "$T/$c.k.img"
	NAME=$c-kernel-replay
	BAD=0
	if attach "$T/$c.k.img" && mount_dev "$MP" "" "$LOOP"; then
		"$BTRSIM" manifest --host "$MP" --ino --times >"$T/$c.k.mf" 2>"$T/$c.k.err" ||
			fail "manifest --host: $(head -c 200 "$T/$c.k.err")"
		unmount "$MP"
		cleanup_mounts
		# Directories whose entries replay itself changed carry the
		# replaying mount's clock (the kernel's now, ref's own): their
		# mtimes are not compared.
		for p in ${STAMPED:-}; do
			for f in "$T/$c.k.mf" "$T/$c.self.mf"; do
				awk -v p="$p" '$1 == p { sub(/ m:[0-9.]+$/, "") } { print }' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
			done
		done
		if ! cmp -s "$T/$c.k.mf" "$T/$c.self.mf"; then
			fail "the kernel's replay of ref's log differs from ref's: $(diff "$T/$c.k.mf" "$T/$c.self.mf" | head -6 | tr '\n' '|')"
		fi
		[ "$(log_root "$T/$c.k.img")" = 0 ] || fail "the kernel left the log"
		progs_check "$T/$c.k.img"
	else
		fail "the kernel does not mount ref's image with its log"
		cleanup_mounts
	fi
	done_check
}
ref_log_case ref-log "$T/reflog.wl" /new/deeper/f -/lost

# ref's logs of directory fsyncs and of names changed since the commit: new
# entries (a file, a directory with a file, a symlink), unlinked ones, a
# removed directory, a rename within the directory, a hard link's other name
# fsynced after the first was unlinked; first, a rename in from another
# directory that neither was logged, which commits (as the kernel's does).
cat >"$T/dirlog.wl" <<'WL'
mkdir /d
create /d/old
write /d/old 0 50000 1
create /d/gone
mkdir /d/sub
create /d/sub/in
create /keep
write /keep 0 7000 2
link /keep /d/k2
mkdir /a
create /a/x
write /a/x 0 3000 3
sync
rename /a/x /d/x2
fsync /d/x2
create /d/new
write /d/new 0 9000 4
mkdir /d/nd
create /d/nd/f
write /d/nd/f 0 3000 5
symlink target-of-l /d/l
unlink /d/gone
unlink /d/sub/in
rmdir /d/sub
rename /d/old /d/renamed
fsync /d
unlink /keep
write /d/k2 0 100 6
fsync /d/k2
create /lost
WL
ref_log_case dir-log "$T/dirlog.wl" /d/new /d/nd/f /d/l /d/renamed /d/k2 /d/x2 \
	-/d/gone -/d/sub -/d/old -/keep -/a/x -/lost

# ref's writes through O_SYNC and O_DSYNC files (the language's `sync` and
# `dsync`): each logs as fsync and fdatasync do.
cat >"$T/osync.wl" <<'WL'
mkdir /d
create /d/a
write /d/a 0 40000 1
sync
write /d/a 4096 8192 3 sync
create /d/b
write /d/b 0 30000 4 dsync
create /lost
write /lost 0 5000 7
WL
ref_log_case osync-log "$T/osync.wl" /d/a /d/b -/lost

# Names the commit gave to other inodes: two directories swapped, one
# fsynced (the other is logged too, log_conflicts.c); a file renamed away
# and a new one made under its old name, fsynced.
cat >"$T/conflict.wl" <<'WL'
mkdir /a
create /a/kept
write /a/kept 0 5000 1
mkdir /b 0700
create /f
write /f 0 3000 2
mkdir /d
sync
rename /a /b exchange
fsync /b
rename /f /d/f
create /f
write /f 0 100 3
fsync /f
WL
STAMPED=/
ref_log_case conflict-log "$T/conflict.wl" /a /b/kept /d/f /f
STAMPED=

# Crash states of ref with a log (explore --db, then replay --crash-state K
# --out): the kernel replays ref's log in each, to ref's own view.
NAME=crash-states-kernel-replay
BAD=0
"$BTRSIM" explore --db "$T/cs.db" "$T/reflog.wl" >"$T/cs.out" 2>&1 || fail "explore: $(tail -2 "$T/cs.out")"
n=$(sqlite3 "$T/cs.db" 'SELECT count(*) FROM crash_states WHERE run_id = 1' 2>/dev/null || echo 0)
withlog=0
k=0
while [ "$k" -lt "$n" ] && [ "$BAD" -eq 0 ]; do
	rm -rf "$T/cs"
	"$BTRSIM" replay --db "$T/cs.db" 1 --crash-state "$k" --out "$T/cs" >/dev/null 2>&1 ||
		fail "replay --crash-state $k"
	k=$((k + 19))
	[ "$(log_root "$T/cs/disk0.img")" != 0 ] || continue
	withlog=$((withlog + 1))
	"$BTRSIM" manifest --ino --times "$T/cs/disk0.img" >"$T/cs.ref" 2>"$T/cs.err" ||
		fail "ref cannot read crash state $((k - 19)): $(head -c 200 "$T/cs.err")"
	if attach "$T/cs/disk0.img" && mount_dev "$MP" "" "$LOOP"; then
		"$BTRSIM" manifest --host "$MP" --ino --times >"$T/cs.kernel" 2>/dev/null
		unmount "$MP"
		cleanup_mounts
		cmp -s "$T/cs.ref" "$T/cs.kernel" ||
			fail "crash state $((k - 19)): the kernel's replay differs from ref's: $(diff "$T/cs.ref" "$T/cs.kernel" | head -4 | tr '\n' '|')"
	else
		cleanup_mounts
		fail "the kernel does not mount crash state $((k - 19))"
	fi
done
[ "$withlog" -gt 3 ] || fail "only $withlog of the sampled crash states hold a log"
done_check
