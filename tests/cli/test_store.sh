#!/bin/sh
# The trace store: `btrsim explore --db FILE` records each run, `btrsim runs
# --db FILE` lists them; the schema version and WAL mode; the workload stored
# once; databases that are corrupt, missing or too new are refused.
. "$(dirname "$0")/lib.sh"

cat >"$T/w.wl" <<'W'
create /a
write /a 0 5000 1
fsync /a
mkdir /d
rename /a /d/b
W
db="$T/runs.db"

run store-explore-1 0 "$BTRSIM" explore --max-subset 4 --samples 8 --db "$db" "$T/w.wl"
out_has ' 0 violations$'
out_has "^recorded as run 1 in $db\$"
done_check
run store-explore-2 0 "$BTRSIM" explore --max-subset 4 --samples 8 --seed 2 --db "$db" "$T/w.wl"
out_has "^recorded as run 2 in $db\$"
done_check

run store-runs 0 "$BTRSIM" runs --db "$db"
out_has '^ID +KIND +STARTED +WORKLOAD +HASH +OPS +IOS +STATES +VIOLATIONS$'
out_has "^1 +explore +[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z +$T/w.wl +[0-9a-f]{12} +5 +[0-9]+ +[0-9]+ +0\$"
out_has '^2 +explore '
[ "$(wc -l <"$OUT")" -eq 3 ] || fail "not a header and 2 runs: $(cat "$OUT" | tr '\n' '|')"
hashes=$(awk 'NR > 1 { print $5 }' "$OUT" | sort -u | wc -l)
[ "$hashes" -eq 1 ] || fail "the two runs have $hashes workload hashes"
done_check

if command -v sqlite3 >/dev/null 2>&1; then
	run store-version 0 sq "$db" 'PRAGMA user_version'
	out_has '^8$'
	done_check
	run store-wal 0 sq "$db" 'PRAGMA journal_mode'
	out_has '^wal$'
	done_check
	run store-one-workload 0 sq "$db" 'SELECT count(*) FROM workloads'
	out_has '^1$'
	done_check
	run store-run-columns 0 sq "$db" "SELECT seed, config, status, ops FROM runs WHERE id = 2"
	out_has '^2\|disks=1 disk-size=536870912 nodesize=16384 max-subset=4 samples=8 torn=4\|0\|5$'
	done_check

	sq "$T/new.db" 'PRAGMA user_version = 99' >/dev/null
	run store-newer-version 1 "$BTRSIM" runs --db "$T/new.db"
	err_has 'version 99 is newer than this btrsim knows \(8\)'
	err_lines 1
	done_check
	run store-newer-version-explore 1 "$BTRSIM" explore --db "$T/new.db" "$T/w.wl"
	err_has 'version 99 is newer'
	err_lines 1
	out_empty
	done_check

	# A version-1 database (the first schema) is migrated on open and its run kept.
	sq "$T/v1.db" <<'SQL'
CREATE TABLE workloads (id INTEGER PRIMARY KEY, hash TEXT UNIQUE NOT NULL, text TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, seed INTEGER, build TEXT,
  config TEXT, workload_id INTEGER REFERENCES workloads(id), started TEXT, ended TEXT,
  ops INTEGER, crash_points INTEGER, states INTEGER, violations INTEGER, seconds REAL,
  status INTEGER);
CREATE TABLE violations (id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id),
  description TEXT NOT NULL);
CREATE INDEX violations_run ON violations(run_id);
INSERT INTO workloads VALUES (1, 'abcdef0123456789', 'sync');
INSERT INTO runs VALUES (1, 'explore', 1, 'v0', 'max-subset=10', 1, '2026-01-01T00:00:00Z',
  '2026-01-01T00:00:01Z', 1, 1, 3, 0, 0.1, 0);
PRAGMA user_version = 1;
SQL
	run store-migrate-v1 0 "$BTRSIM" runs --db "$T/v1.db"
	out_has '^1 +explore +2026-01-01T00:00:00Z +- +abcdef012345 +1 +0 +3 +0$'
	done_check
	run store-migrated-version 0 sq "$T/v1.db" 'PRAGMA user_version; SELECT count(*) FROM crash_states'
	out_has '^8$'
	out_has '^0$'
	done_check
	run store-v1-run-not-replayable 1 "$BTRSIM" replay --db "$T/v1.db" 1
	err_has 'run 1 was recorded without its IO log'
	err_lines 1
	done_check
	run store-explore-into-migrated 0 "$BTRSIM" explore --max-subset 2 --samples 2 --db "$T/v1.db" "$T/w.wl"
	out_has 'recorded as run 2 in'
	done_check
else
	echo "SKIP store-version, store-wal, store-one-workload, store-newer-version: no sqlite3"
fi

head -c 8192 /dev/urandom >"$T/junk.db"
cp "$T/junk.db" "$T/junk.orig"
run store-corrupt-runs 1 "$BTRSIM" runs --db "$T/junk.db"
err_has 'junk.db: not an SQLite trace database'
err_lines 1
done_check
run store-corrupt-explore 1 "$BTRSIM" explore --db "$T/junk.db" "$T/w.wl"
err_has 'junk.db: not an SQLite trace database'
err_lines 1
cmp -s "$T/junk.db" "$T/junk.orig" || fail "the corrupt file was changed"
done_check

run store-missing 1 "$BTRSIM" runs --db "$T/none.db"
err_has "none.db: no such trace database"
err_lines 1
[ -e "$T/none.db" ] && fail "runs created the database"
done_check

run store-default-db 1 sh -c "cd '$T' && '$(cd "$(dirname "$BTRSIM")" && pwd)/$(basename "$BTRSIM")' runs"
err_has 'traces/btrsim.db: no such trace database'
done_check
run store-operand 2 "$BTRSIM" runs --db "$db" extra
done_check
run store-bad-option 2 "$BTRSIM" runs --bogus
done_check
run store-db-no-arg 2 "$BTRSIM" runs --db
done_check
run store-help 0 "$BTRSIM" runs --help
out_has '^usage: btrsim runs \[--db FILE\]'
done_check
