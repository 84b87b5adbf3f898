#!/bin/sh
# btrsim replay: a recorded run re-executes to the same results, IO log and
# crash states; a tampered record is caught at its first divergence; a crash
# state is rebuilt from the stored log as images that btrsim (and btrfs
# check, when present) accepts; bad input is refused.
. "$(dirname "$0")/lib.sh"
db="$T/r.db"
cat >"$T/w.wl" <<'W'
mkdir /d
create /d/a
write /d/a 0 20000 1
fsync /d/a
rename /d/a /d/b
sync
truncate /d/b 100
W

run replay-record 0 "$BTRSIM" explore --max-subset 5 --samples 4 --db "$db" "$T/w.wl"
out_has "^recorded as run 1 in $db"
done_check

run replay-same 0 "$BTRSIM" replay --db "$db" 1
out_has '^run 1 replayed: 7 op results, [0-9]+ IO requests and [0-9]+ crash states are the same$'
done_check

run replay-state 0 "$BTRSIM" replay --db "$db" 1 --crash-state 3 --out "$T/cs3"
out_has "/cs3/disk0.img$"
out_has '^run 1 crash state 3: power lost before IO [0-9]+, persisted .*; recorded verdict: ok$'
done_check
run replay-state-checks 0 "$BTRSIM" check "$T/cs3/disk0.img"
done_check
if command -v btrfs >/dev/null 2>&1; then
	run replay-state-btrfs-check 0 btrfs check "$T/cs3/disk0.img"
	done_check
else
	echo "SKIP replay-state-btrfs-check: no btrfs (btrfs-progs)"
fi

if command -v sqlite3 >/dev/null 2>&1; then
	NAME=replay-states-all-rebuild
	last=$(sq "$db" "SELECT max(k) FROM crash_states WHERE run_id = 1")
	"$BTRSIM" replay --db "$db" 1 --crash-state "$last" --out "$T/last" >/dev/null 2>&1 || fail "state $last"
	"$BTRSIM" ls "$T/last/disk0.img" /d >"$T/ls" 2>&1 || fail "ls: $(cat "$T/ls")"
	grep -q 'b$' "$T/ls" || fail "the last state lacks /d/b: $(cat "$T/ls")"
	done_check

	# Tampering: a changed IO record and a changed result are caught where they are.
	cp "$db" "$T/t1.db"
	sq "$T/t1.db" "UPDATE io SET csum = csum + 1 WHERE run_id = 1 AND idx = (SELECT mkfs_ios + 2 FROM runs WHERE id = 1)"
	run replay-diverges-io 1 "$BTRSIM" replay --db "$T/t1.db" 1
	err_has 'run 1 diverges: IO [0-9]+: recorded "disk 0 '
	err_lines 1
	done_check
	cp "$db" "$T/t2.db"
	sq "$T/t2.db" "UPDATE results SET result = 'ENOENT' WHERE run_id = 1 AND idx = 4"
	run replay-diverges-result 1 "$BTRSIM" replay --db "$T/t2.db" 1
	err_has 'run 1 diverges: op 5: recorded result ENOENT, replayed 0'
	done_check
	cp "$db" "$T/t3.db"
	sq "$T/t3.db" "UPDATE crash_states SET verdict = 'oracle' WHERE run_id = 1 AND k = 2"
	run replay-diverges-state 1 "$BTRSIM" replay --db "$T/t3.db" 1
	err_has 'crash state 2: recorded .* verdict oracle, replayed .* verdict ok'
	done_check
	cp "$db" "$T/t4.db"
	sq "$T/t4.db" "UPDATE payloads SET zdata = x'00' WHERE rowid IN (SELECT rowid FROM payloads LIMIT 1)" 2>/dev/null ||
		sq "$T/t4.db" "UPDATE payloads SET zdata = x'00' WHERE hash = (SELECT hash FROM payloads LIMIT 1)"
	run replay-corrupt-payload 1 "$BTRSIM" replay --db "$T/t4.db" 1 --crash-state 3 --out "$T/x"
	err_has 'a payload of the IO log is corrupt'
	done_check
	cp "$db" "$T/t5.db"
	sq "$T/t5.db" "UPDATE crash_states SET picks = '0:99' WHERE run_id = 1 AND k = 3"
	run replay-bad-picks 1 "$BTRSIM" replay --db "$T/t5.db" 1 --crash-state 3 --out "$T/y"
	err_has 'malformed picks "0:99"'
	done_check
else
	echo "SKIP replay-states-all-rebuild, replay-diverges-*: no sqlite3"
fi

run replay-no-run 1 "$BTRSIM" replay --db "$db" 99
err_has 'run 99: no such run'
err_lines 1
done_check
run replay-no-state 1 "$BTRSIM" replay --db "$db" 1 --crash-state 100000 --out "$T/z"
err_has 'run 1 has no crash state 100000'
done_check
run replay-missing-db 1 "$BTRSIM" replay --db "$T/none.db" 1
err_has 'no such trace database'
done_check
run replay-default-db 1 sh -c "cd '$T' && '$(cd "$(dirname "$BTRSIM")" && pwd)/$(basename "$BTRSIM")' replay 1"
err_has 'traces/btrsim.db: no such trace database'
done_check
run replay-bad-id 2 "$BTRSIM" replay --db "$db" x1
done_check
run replay-state-no-out 2 "$BTRSIM" replay --db "$db" 1 --crash-state 1
err_has '--crash-state and --out go together'
done_check
run replay-help 0 "$BTRSIM" replay --help
out_has '^usage: btrsim replay \[--db FILE\] RUN$'
done_check

# Two disks: each disk's cache crashes on its own; the state's images hold one
# RAID1 file system that btrsim opens from both.
run replay-two-disks-record 0 "$BTRSIM" explore --disks 2 --max-subset 6 --samples 6 --db "$db" "$T/w.wl"
out_has ' 0 violations$'
out_has "^recorded as run 2 in $db"
done_check
run replay-two-disks-same 0 "$BTRSIM" replay --db "$db" 2
out_has '^run 2 replayed: '
done_check
# RAID5 on three disks and RAID6 on four (--profile), each disk's cache
# crashing on its own: every state clean, and a recorded RAID5 run replays
# the same, its profile kept with the run.
run explore-raid5 0 "$BTRSIM" explore --disks 3 --profile raid5 --max-subset 6 --samples 6 --db "$db" "$T/w.wl"
out_has ' 0 violations$'; out_has "^recorded as run 3 in $db"
done_check
run replay-raid5-same 0 "$BTRSIM" replay --db "$db" 3
out_has '^run 3 replayed: '
done_check
run explore-raid6 0 "$BTRSIM" explore --disks 4 --profile raid6 --max-subset 5 --samples 4 "$T/w.wl"
out_has ' 0 violations$'
done_check
# The write hole: every state judged again with each disk lost.  RAID5 rows
# that a crash left with data and parity disagreeing lose what the lost disk
# held (unreadable, counted, never wrong); RAID1 has no write hole: every
# state reads with either disk lost.
printf 'mkdir /d\ncreate /d/a\nwrite /d/a 0 70000 1\nfsync /d/a\ncreate /d/b\nwrite /d/b 0 20000 2\nsync\n' >"$T/hole.wl"
run explore-write-hole-raid5 0 "$BTRSIM" explore --disks 3 --profile raid5 --lose-disk "$T/hole.wl"
out_has ' 0 violations; [1-9][0-9]* states with a disk lost, [1-9][0-9]* of them unreadable \(the write hole\)$'
done_check
run explore-write-hole-raid1 0 "$BTRSIM" explore --disks 2 --profile raid1 --lose-disk "$T/hole.wl"
out_has ' 0 violations; [1-9][0-9]* states with a disk lost, 0 of them unreadable'
done_check
run explore-lose-disk-not-recorded 2 "$BTRSIM" explore --disks 2 --lose-disk --db "$db" "$T/hole.wl"
err_has 'lose-disk is not recorded: not with --db'
done_check
run explore-profile-needs-disks 1 "$BTRSIM" explore --profile raid6 --disks 2 "$T/w.wl"
err_has 'RAID6 needs at least 3 devices'
done_check
run explore-bad-profile 2 "$BTRSIM" explore --profile raid7 "$T/w.wl"
err_has "--profile takes single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5 or raid6, not 'raid7'"
done_check
if command -v sqlite3 >/dev/null 2>&1; then
	NAME=replay-two-disks-independent
	k=$(sq "$db" "SELECT k FROM crash_states WHERE run_id = 2 AND picks LIKE '0:%1:%' AND picks NOT LIKE '%0:-%' AND picks NOT LIKE '%1:-%' LIMIT 1")
	[ -n "$k" ] || fail "no crash state keeps writes of both disks"
	"$BTRSIM" replay --db "$db" 2 --crash-state "${k:-0}" --out "$T/two" >"$T/two.out" 2>&1 || fail "replay: $(cat "$T/two.out")"
	"$BTRSIM" check "$T/two/disk0.img" "$T/two/disk1.img" >"$T/two.check" 2>&1 || fail "check: $(tail -3 "$T/two.check")"
	done_check
fi
