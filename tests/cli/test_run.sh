#!/bin/sh
# btrsim run and gen-workload: results checked against '= ERRNO', the first
# mismatch named as FILE:LINE, parse errors as FILE:LINE:COL, power loss with
# `crash` (what was committed survives, nothing else), annotation, and bad
# input of every kind.
. "$(dirname "$0")/lib.sh"

img="$T/disk.img"
truncate -s 512M "$img"
"$BTRSIM" mkfs "$img" >/dev/null

cat >"$T/ok.wl" <<'W'
mkdir /a
create /a/f 0600
write /a/f 0 10000 3
rmdir /a = ENOTEMPTY
rename /a /a/b = EINVAL
W
run run-ok 0 "$BTRSIM" run "$T/ok.wl" "$img"
out_has '^5 operations, 0 unexpected results, 0 crashes$'
out_has '^seed 1$'
done_check
run run-check-clean 0 "$BTRSIM" check "$img"
done_check
run run-content 0 "$BTRSIM" stat "$img" /a/f
out_has 'Size: 10000'
done_check

printf 'mkdir /a\n' >"$T/again.wl"
run run-mismatch 1 "$BTRSIM" run "$T/again.wl" "$img"
err_has "again.wl:1: mkdir /a: expected success, got EEXIST"
err_lines 1
done_check

printf 'create /x\nmkdir /a = ENOENT\nmkdir /a = EEXIST\nunlink /nope\n' >"$T/many.wl"
run run-keep-going 1 "$BTRSIM" run -k "$T/many.wl" "$img"
out_has '^4 operations, 2 unexpected results'
err_has 'many.wl:2: mkdir /a: expected ENOENT, got EEXIST'
done_check

run run-annotate 0 "$BTRSIM" run --record --annotate "$T/ann.wl" "$T/many.wl" "$img"
grep -qx 'create /x = EEXIST' "$T/ann.wl" || fail "annotation: $(cat "$T/ann.wl" | tr '\n' '|')"
grep -qx 'unlink /nope = ENOENT' "$T/ann.wl" || fail "annotation: $(cat "$T/ann.wl" | tr '\n' '|')"
grep -qx 'mkdir /a = EEXIST' "$T/ann.wl" || fail "annotation: $(cat "$T/ann.wl" | tr '\n' '|')"
done_check

# Power loss: what a sync committed survives; what came after it is gone
# (ref commits only at sync, fsync and when dirty metadata outgrows its limit).
cat >"$T/crash.wl" <<'W'
create /kept
write /kept 0 5000 1
sync
create /lost
write /kept 0 100 2
crash
unlink /lost = ENOENT
create /lost
W
truncate -s 512M "$T/fresh.img"
"$BTRSIM" mkfs "$T/fresh.img" >/dev/null
cp --sparse=always "$T/fresh.img" "$T/control.img"
printf 'create /kept\nwrite /kept 0 5000 1\n' >"$T/control.wl"
"$BTRSIM" run "$T/control.wl" "$T/control.img" >/dev/null
"$BTRSIM" cat "$T/control.img" /kept >"$T/kept.want"
for seed in 1 2 3; do
	cp --sparse=always "$T/fresh.img" "$T/crash.img"
	run "run-crash-seed-$seed" 0 "$BTRSIM" run --seed "$seed" "$T/crash.wl" "$T/crash.img"
	out_has "^8 operations, 0 unexpected results, 1 crash$"
	"$BTRSIM" cat "$T/crash.img" /kept >"$T/kept" || fail "cat /kept"
	cmp -s "$T/kept" "$T/kept.want" || fail "/kept is not what the sync committed"
	"$BTRSIM" check "$T/crash.img" >/dev/null || fail "check after the crash"
	done_check
done

# Bad input: parse errors name the place; nothing runs.
printf 'mkdir /p\nmkdri /q\n' >"$T/typo.wl"
run run-parse-error 1 "$BTRSIM" run "$T/typo.wl" "$img"
err_has 'typo.wl:2:1: '
err_lines 1
done_check
run run-parse-error-changed-nothing 1 "$BTRSIM" stat "$img" /p
done_check
printf 'write /f 0 12Q\n' >"$T/num.wl"
run run-bad-number 1 "$BTRSIM" run "$T/num.wl" "$img"
err_has 'num.wl:1:'
done_check
run run-missing-workload 1 "$BTRSIM" run "$T/none.wl" "$img"
err_has 'none.wl'
err_lines 1
done_check
run run-missing-image 1 "$BTRSIM" run "$T/ok.wl" "$T/none.img"
err_lines 1
done_check
head -c 1M /dev/urandom >"$T/junk.img"
run run-not-btrfs 1 "$BTRSIM" run "$T/ok.wl" "$T/junk.img"
err_lines 1
done_check
run run-no-args 2 "$BTRSIM" run
done_check
run run-no-image 2 "$BTRSIM" run "$T/ok.wl"
done_check
run run-bad-option 2 "$BTRSIM" run --bogus "$T/ok.wl" "$img"
done_check
run run-host-and-image 2 "$BTRSIM" run --host "$T" "$T/ok.wl" "$img"
done_check
run run-host-crash 1 "$BTRSIM" run --host "$T" "$T/crash.wl"
err_has 'crash'
done_check
run run-help 0 "$BTRSIM" run --help
out_has '^usage: btrsim run'
done_check

# gen-workload: deterministic, parseable, and its usage errors.
run gen-deterministic 0 "$BTRSIM" gen-workload --seed 9 --ops 300
cp "$OUT" "$T/g1"
"$BTRSIM" gen-workload --seed 9 --ops 300 >"$T/g2"
cmp -s "$T/g1" "$T/g2" || fail "two runs differ"
[ "$(grep -vc '^#' "$T/g1")" -eq 300 ] || fail "not 300 operations"
done_check
run gen-other-seed 0 "$BTRSIM" gen-workload --seed 10 --ops 300
cmp -s "$T/g1" "$OUT" && fail "seeds 9 and 10 gave the same workload"
done_check
run gen-runs-on-ref 0 "$BTRSIM" run --record "$T/g1" "$img"
out_has '^300 operations'
"$BTRSIM" check "$img" >/dev/null || fail "check after a random workload"
done_check
# --quota: quota-enable first, then the same operations as without it; the
# workload runs on ref with quota groups counted right to the end.
run gen-quota 0 "$BTRSIM" gen-workload --seed 9 --ops 300 --quota --subvols
out_has '^# btrsim gen-workload --seed 9 --ops 300 --subvols --quota$'
[ "$(grep -v '^#' "$OUT" | head -n 1)" = quota-enable ] || fail "quota-enable is not first"
[ "$(grep -c '^quota-enable$' "$OUT")" -eq 1 ] || fail "more than one quota-enable"
"$BTRSIM" gen-workload --seed 9 --ops 300 --subvols | grep -v '^#' >"$T/gs"
grep -v '^#' "$OUT" | tail -n +2 | cmp -s - "$T/gs" || fail "the other operations differ"
cp "$OUT" "$T/gq"
done_check
truncate -s 512M "$T/q.img"
"$BTRSIM" mkfs "$T/q.img" >/dev/null
run gen-quota-runs-on-ref 0 "$BTRSIM" run --record "$T/gq" "$T/q.img"
out_has '^301 operations'
"$BTRSIM" check "$T/q.img" >"$T/q.check" 2>&1 || fail "check: $(grep -m1 ERROR "$T/q.check")"
grep -q 'checking quota groups$' "$T/q.check" || fail "the quota groups were not checked"
done_check
run gen-quota-help 0 "$BTRSIM" gen-workload --help
out_has '--quota'
done_check
run gen-bad-number 2 "$BTRSIM" gen-workload --ops lots
done_check
run gen-operand 2 "$BTRSIM" gen-workload extra
done_check
