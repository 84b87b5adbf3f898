#!/bin/sh
# What a new user met in a first hour with btrsim (issue 18), each defect
# held down by a check that failed before its fix: a truncated image refused
# at open, a write that fails part-way judged without a false alarm, ctime
# after put, extract past xattrs the destination cannot hold, gen-workload's
# bound, mkfs of a disk too small, the seed line of a killed run, mutant
# builds named as such, messages that name the image or the database, and
# make deps waiting for the dpkg lock.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export TZ=UTC

# ---- A truncated image is refused by every command, and nothing is written
img=$T/trunc.img
truncate -s 1G "$img"
run trunc-mkfs 0 "$BTRSIM" mkfs --seed 1 --time 1700000000 "$img"
done_check
head -c 300000 /dev/urandom >"$T/blob"
run trunc-put 0 "$BTRSIM" put "$img" "$T/blob" /blob
done_check
truncate -s 512M "$img"
sum_before=$(cksum <"$img")
for c in "mkdir $img /newdir" "ls $img /" "cat $img /blob" "scrub $img" "stat $img /blob"; do
	# shellcheck disable=SC2086
	run "trunc-refused-${c%% *}" 1 "$BTRSIM" $c
	err_has "$img: .*device total_bytes should be at most 536870912 but found 1073741824"
	done_check
done
run trunc-check 1 "$BTRSIM" check "$img"
err_has "device total_bytes should be at most"
done_check
run trunc-untouched 0 true
[ "$(cksum <"$img")" = "$sum_before" ] || fail "the truncated image was written on"
done_check

# ---- A write that fails part-way with ENOSPC is no violation
printf 'create /f\nwrite /f 0 100G 1\n' >"$T/huge.wl"
run partial-write-no-false-alarm 0 "$BTRSIM" explore --quiet "$T/huge.wl"
out_has ' 0 violations'
done_check
# and the bytes that went in are the model's: a sync after them makes them durable
printf 'create /f\nwrite /f 0 100G 1\nsync\n' >"$T/huge2.wl"
run partial-write-synced 0 "$BTRSIM" explore --quiet "$T/huge2.wl"
out_has ' 0 violations'
done_check

# ---- put: the change time is never before the modify time (cp -a's order)
img2=$T/fs.img
run ctime-mkfs 0 "$BTRSIM" mkfs --size 256M "$img2"
done_check
echo data >"$T/fresh"
run ctime-put 0 "$BTRSIM" put "$img2" "$T/fresh" /fresh
done_check
run ctime-after-mtime 0 "$BTRSIM" stat "$img2" /fresh
m=$(sed -n 's/^Modify: //p' "$OUT")
c=$(sed -n 's/^Change: //p' "$OUT")
[ -n "$m" ] && [ -n "$c" ] || fail "no Modify or Change line: $(cat "$OUT")"
[ "$(printf '%s\n%s\n' "$m" "$c" | sort | head -n 1)" = "$m" ] || fail "Change $c is before Modify $m"
done_check

# ---- mkfs of a disk smaller than a sector: its real size, and no file left
run mkfs-too-small 1 "$BTRSIM" mkfs --size 1K "$T/small.img"
err_has "too small: 1024 bytes"
[ -e "$T/small.img" ] && fail "the image mkfs created is left behind"
done_check
: >"$T/mine.img"
truncate -s 1K "$T/mine.img"
run mkfs-too-small-keeps-existing 1 "$BTRSIM" mkfs "$T/mine.img"
[ -e "$T/mine.img" ] || fail "an image the user made was removed"
done_check

# ---- The seed line survives a run killed with stdout a file
printf 'create /a\nwrite /a 0 4K 1\nsync\n' >"$T/w.wl"
"$BTRSIM" campaign --quiet --seq 2 --random 1000 >"$T/c.out" 2>/dev/null &
pid=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[ -s "$T/c.out" ] && break
	sleep 0.5
done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
run seed-line-first 0 cat "$T/c.out"
out_has '^seed [0-9]+$'
done_check

# ---- Messages name what they are about
head -c 4M /dev/urandom >"$T/random.img"
for c in "ls IMG /" "scrub IMG" "check IMG" "dump-tree IMG" "mkdir IMG /d" "cat IMG /f"; do
	# shellcheck disable=SC2046
	run "random-bytes-named-${c%% *}" 1 "$BTRSIM" $(echo "$c" | sed "s#IMG#$T/random.img#")
	err_has "$T/random.img: "
	done_check
done

# ---- make deps waits for a package manager that holds the dpkg lock
mkdir -p "$T/fake"
cp "$(command -v sleep)" "$T/fake/apt-get"
# started_as PID NAME: waits (up to 5 s) until the process runs as NAME, so
# that a loaded machine cannot let deps.sh look before the fake exec'd
started_as() {
	i=0
	while [ "$(cat "/proc/$1/comm" 2>/dev/null)" != "$2" ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
"$T/fake/apt-get" 3 &
pid=$!
started_as "$pid" apt-get
run deps-waits-for-lock 0 env DEPS_LOCK_WAIT=30 sh "$ROOT/mk/deps.sh" --wait-lock
out_has "waiting for apt-get \(pid $pid\) to release the dpkg lock"
out_has "the dpkg lock is free"
done_check
wait "$pid" 2>/dev/null
"$T/fake/apt-get" 5 &
pid=$!
started_as "$pid" apt-get
run deps-lock-timeout 1 env DEPS_LOCK_WAIT=1 sh "$ROOT/mk/deps.sh" --wait-lock
err_has "still held after 1 s"
done_check
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

# ---- gen-workload: --ops is bounded, with a clear error and nothing printed
run gen-ops-bounded 2 "$BTRSIM" gen-workload --ops 99999999999999
err_has "^btrsim gen-workload: --ops takes 0 to 1000000, not '99999999999999'"
out_empty
done_check
# and a long workload is made (the model's namespace is bounded: linear time)
run gen-long 0 "$BTRSIM" gen-workload --seed 4 --ops 30000 --bad 0
[ "$(grep -cv '^#' "$OUT")" -eq 30000 ] || fail "not 30000 operations"
done_check

# ---- The trace store's commands: a directory named, nothing left beside the
# database, "no violations" said, runs named by their workload
printf 'create /a\nwrite /a 0 8K 3\nfsync /a\n' >"$T/small.wl"
mkdir "$T/dbdir"
run db-is-directory 1 "$BTRSIM" explore --quiet --db "$T/dbdir" "$T/small.wl"
err_has "$T/dbdir: is a directory, not a trace database"
done_check
run db-runs-directory 1 "$BTRSIM" runs --db "$T/dbdir"
err_has "$T/dbdir: is a directory"
done_check
db=$T/s.db
run db-explore 0 "$BTRSIM" explore --quiet --db "$db" "$T/small.wl"
done_check
run db-no-violations 0 "$BTRSIM" violations --db "$db"
out_has '^no violations$'
done_check
run db-no-violations-run 0 "$BTRSIM" violations --db "$db" --run 1
out_has '^no violations in run 1$'
done_check
run db-report-leaves-nothing 0 "$BTRSIM" report --db "$db" -o "$T/rep"
[ -e "$db-wal" ] && fail "report left $db-wal"
[ -e "$db-shm" ] && fail "report left $db-shm"
done_check
run db-runs-named 0 "$BTRSIM" runs --db "$db"
out_has "^1 +explore +[0-9T:Z-]+ +$T/small.wl +[0-9a-f]{12} "
done_check

# ---- BTRSIM_PROGRESS=1 draws the progress line of btrsim itself, too
run progress-env-on 0 env BTRSIM_PROGRESS=1 "$BTRSIM" explore "$T/small.wl"
grep -q 'crash points [0-9]*/[0-9]*' "$ERR" || fail "no progress line on stderr"
done_check
run progress-env-off 0 env BTRSIM_PROGRESS=0 "$BTRSIM" explore "$T/small.wl"
err_empty
done_check

# ---- A mutant says it is one, in --version and in the runs it records, and
# replaying its run with the real build says the builds differ
M="$ROOT/build/mutants/btrsim-skip-flush"
if [ -x "$M" ]; then
	run mutant-version 0 "$M" --version
	out_has 'MUTANT skip-flush'
	done_check
	run real-version 0 "$BTRSIM" --version
	grep -q MUTANT "$OUT" && fail "the real build says it is a mutant"
	done_check
	mdb=$T/m.db
	run mutant-records 1 "$M" explore --quiet --db "$mdb" "$T/small.wl"
	done_check
	run mutant-build-stored 0 sq "$mdb" 'SELECT build FROM runs WHERE id = 1'
	out_has ' mutant skip-flush$'
	done_check
	run mutant-replayed-by-real 1 "$BTRSIM" replay --db "$mdb" 1
	out_has 'run 1 was recorded by another build \(.* mutant skip-flush\); this is '
	err_has 'the builds differ: recorded by .* mutant skip-flush, replayed by '
	done_check
else
	echo "SKIP mutant-version: no $M (make mutants builds it; make test does)"
fi
