#!/bin/sh
# btrsim record and explore --check (issue 25): applications recorded through
# the FUSE mount and their crash states judged by their own checkers.
#   - SQLite in rollback-journal and WAL mode (apps/sqlite_txs.sh): the
#     recording replays on ref; every crash state passes apps/sqlite_check.sh
#     (PRAGMA integrity_check, whole transactions, a prefix, every commit
#     made before the last persistence point there); a database broken on
#     purpose after the last commit is caught (the checker can fail);
#   - git commit in a repository copied in with --setup: git fsck in every
#     state;
#   - an application written to be wrong (apps/replace_app.py: a rename over
#     a file without fsync of the new one) is caught, its reproducer keeping
#     the setup, the create and the rename; fixed (--fsync), it passes;
#   - a checker that hangs is killed at --check-timeout and recorded in the
#     trace store as an app violation; the run replays (the checker with it);
#   - bad input: a command that cannot run or fails before any call, usage
#     errors, --check with the kernel target.
. "$(dirname "$0")/lib.sh"

APPS=$(cd "$(dirname "$0")/apps" && pwd)
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP record: needs root, /dev/fuse and fusermount3"
	exit 0
fi

# The ops of a workload that are not comments.
ops() { grep -c '^[a-z]' "$1"; }

# ---- SQLite, both journal modes ----
for mode in delete wal; do
	sh "$APPS/sqlite_txs.sh" "$mode" 5 40 >"$T/$mode.sql"
	run "record-sqlite-$mode" 0 "$BTRSIM" record -o "$T/$mode.wl" -- sh -c "sqlite3 t.db <$T/$mode.sql >/dev/null"
	err_has "ops recorded into .*$mode.wl .*they replay on ref with every result as recorded"
	[ "$(grep -c '^fdatasync /t.db' "$T/$mode.wl")" -ge 5 ] || fail "fewer than 5 fdatasyncs of the database's files"
	grep -q '^pwrite /t.db 0 0x53514c69746520666f726d6174203300' "$T/$mode.wl" || fail "no pwrite of the database header"
	done_check
	run "explore-sqlite-$mode" 0 "$BTRSIM" explore --no-minimize "$T/$mode.wl" \
		--check "sh $APPS/sqlite_check.sh t.db 5 40"
	out_has ' 0 violations; the checker ran in [1-9][0-9]* states'
	done_check
done
(cat "$T/delete.wl" && echo "truncate /t.db 5000") >"$T/broken.wl"
run explore-sqlite-broken 1 "$BTRSIM" explore --no-minimize "$T/broken.wl" --check "sh $APPS/sqlite_check.sh t.db 5 40"
err_has 'app: the checker failed \(exit 1\): .*malformed'
done_check

# ---- git commit in a repository set up first ----
mkdir -p "$T/gs"
(cd "$T/gs" && git init -q r && cd r && git config user.email t@example.org && git config user.name t &&
	echo a >f && git add f && git commit -qm one) || fail "git setup"
run record-git 0 "$BTRSIM" record -o "$T/git.wl" --setup "$T/gs" -- sh -c 'cd r && echo b >>f && git add f && git commit -qm two'
grep -q '^mark setup$' "$T/git.wl" || fail "no mark setup"
grep -q '^rename /r/.git/refs/heads/master.lock /r/.git/refs/heads/master$\|^rename /r/.git/refs/heads/main.lock /r/.git/refs/heads/main$' "$T/git.wl" ||
	fail "no ref update recorded"
done_check
run explore-git 0 "$BTRSIM" explore "$T/git.wl" --check 'cd r && git fsck --no-progress --strict && git log --oneline -1'
out_has ' 0 violations; the checker ran in'
done_check

# ---- an application written to be wrong, then fixed ----
mkdir -p "$T/setup"
python3 -c "open('$T/setup/data', 'wb').write(b'old\n' * 1000)"
run record-replace-bad 0 "$BTRSIM" record -o "$T/bad.wl" --setup "$T/setup" -- python3 "$APPS/replace_app.py"
done_check
run explore-replace-bad 1 "$BTRSIM" explore "$T/bad.wl" --check "python3 $APPS/replace_check.py"
err_has 'app: the checker failed \(exit 1\): data is neither old nor new: 0 bytes'
out_has '^minimized reproducer:'
out_has '^mark setup$'
out_has '^create /data.tmp'
out_has '^rename /data.tmp /data$'
done_check
run record-replace-fixed 0 "$BTRSIM" record -o "$T/good.wl" --setup "$T/setup" -- python3 "$APPS/replace_app.py" --fsync
grep -q '^fsync /data.tmp$' "$T/good.wl" || fail "no fsync of data.tmp"
done_check
run explore-replace-fixed 0 "$BTRSIM" explore "$T/good.wl" --check "python3 $APPS/replace_check.py"
out_has ' 0 violations; the checker ran in'
done_check

# ---- a checker that hangs: killed, recorded ----
run explore-check-hangs 1 "$BTRSIM" explore --no-minimize --db "$T/t.db" --check-timeout 1 "$T/good.wl" --check 'sleep 600'
err_has 'app: the checker did not finish in 1 s \(killed with all it started\)'
done_check
run violations-app 0 "$BTRSIM" violations --db "$T/t.db"
out_has 'app'
out_has 'did not finish in 1 s'
done_check
run replay-app-run 0 "$BTRSIM" replay --db "$T/t.db" 1
out_has '^run 1 replayed: .* crash states are the same$'
done_check
pgrep -f 'sleep 600' >/dev/null && { NAME=checker-killed; fail "the hung checker still runs"; pkill -f 'sleep 600'; }

# ---- bad input ----
run record-cannot-run 1 "$BTRSIM" record -o "$T/x.wl" -- /nonexistent/app
err_has 'cannot run /nonexistent/app: No such file or directory'
[ -e "$T/x.wl" ] && fail "a workload was written"
done_check
run record-fails-first 1 "$BTRSIM" record -o "$T/x.wl" -- false
err_has 'false failed before any file-system call; nothing recorded'
[ -e "$T/x.wl" ] && fail "a workload was written"
done_check
run record-fails-later 1 "$BTRSIM" record -o "$T/x.wl" -- sh -c 'echo x >f; exit 3'
err_has 'sh exited with status 3; [0-9]+ ops recorded into'
[ "$(ops "$T/x.wl")" -ge 2 ] || fail "the calls made were not written"
done_check
run record-timeout 1 "$BTRSIM" record --timeout 1 -o "$T/x.wl" -- sh -c 'echo x >f; sleep 600'
err_has 'timed out after 1 s and was killed'
done_check
run record-no-output 2 "$BTRSIM" record -- true
err_has '\-o FILE is required'
done_check
run record-no-command 2 "$BTRSIM" record -o "$T/x.wl"
err_has 'no command to run'
done_check
run record-bad-size 2 "$BTRSIM" record -o "$T/x.wl" --size 1M -- true
err_has 'is not a size from 128M to 1T'
done_check
run record-bad-setup 2 "$BTRSIM" record -o "$T/x.wl" --setup "$T/none" -- true
err_has 'is not a directory'
done_check
run explore-check-kernel 2 "$BTRSIM" explore --target kernel --check true "$T/good.wl"
err_has 'not with --target kernel'
done_check
run explore-check-empty 2 "$BTRSIM" explore --check '' "$T/good.wl"
err_has '\-\-check takes a command'
done_check
