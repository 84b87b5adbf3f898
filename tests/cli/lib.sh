# lib.sh - helpers for the command-line tests, sourced by each tests/cli/*.sh.
# run EXPECTED_EXIT CMD...: runs CMD with stdout in $OUT and stderr in $ERR,
# then the checks below report PASS or FAIL lines that tests/run.sh counts.
set -u
: "${BTRSIM:?set BTRSIM to the btrsim binary}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
OUT="$T/stdout"
ERR="$T/stderr"
NAME=""
BAD=0

# run NAME EXPECTED_EXIT CMD...
run() {
	NAME=$1
	want=$2
	shift 2
	"$@" >"$OUT" 2>"$ERR"
	got=$?
	BAD=0
	if grep -qE 'Sanitizer|runtime error:' "$ERR"; then
		fail "sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error:' "$ERR")"
	elif [ "$got" -ne "$want" ]; then
		fail "exit $got, expected $want; stderr: $(head -c 300 "$ERR")"
	fi
}

fail() {
	[ "$BAD" -eq 1 ] && return
	BAD=1
	echo "FAIL $NAME: $*"
}

# Each check applies to the last run.
out_has() { grep -qE -- "$1" "$OUT" || fail "stdout lacks /$1/"; }
err_has() { grep -qE -- "$1" "$ERR" || fail "stderr lacks /$1/"; }
out_empty() { [ ! -s "$OUT" ] || fail "stdout is not empty"; }
err_empty() { [ ! -s "$ERR" ] || fail "stderr is not empty: $(head -c 200 "$ERR")"; }
err_lines() { n=$(wc -l <"$ERR"); [ "$n" -eq "$1" ] || fail "stderr has $n lines, expected $1"; }
done_check() { [ "$BAD" -eq 0 ] && echo "PASS $NAME"; BAD=0; }

# check NAME: the image $img is clean for btrsim check and, when installed,
# btrfs check --readonly (two checks: NAME-btrsim-check, NAME-btrfs-check).
check() {
	run "$1-btrsim-check" 0 "$BTRSIM" check "$img"
	done_check
	if command -v btrfs >/dev/null 2>&1; then
		run "$1-btrfs-check" 0 btrfs check --readonly "$img"
		done_check
	fi
}

# sq ARGS...: the sqlite3 shell with a busy timeout, so that a query right
# after btrsim closed the database never fails with "database is locked".
sq() { sqlite3 -cmd '.timeout 10000' "$@"; }
