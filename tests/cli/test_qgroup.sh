#!/bin/sh
# btrsim qgroup: enable, rescan, show and limit.  Usage errors (exit 2), quotas off
# (ENOTCONN, exit 1), enable twice, the exact layout of btrfs-progs 6.2's
# `qgroup show` (columns, widths, units, Path), limits set, kept and removed
# (the other limit untouched), writes past a limit (EDQUOT), bad sizes and
# ids, a deleted snapshot's group gone once the cleaner is done, and
# `btrsim check` (and `btrfs check`, which recounts the groups) clean; groups
# above level 0: create, destroy, assign and remove with their errnos, the
# numbers moved or counted again, `show -pc` with progs 6.2's Path for them
# (NUL byte included).
. "$(dirname "$0")/lib.sh"
umask 022
export TZ=UTC

img=$T/fs.img
truncate -s 256M "$img"
run mkfs 0 "$BTRSIM" mkfs --seed 1 --time 1700000000 "$img"
done_check

# out_is NAME: stdout equals $T/want byte for byte.
out_is() {
	cmp -s "$OUT" "$T/want" || fail "stdout differs: $(diff "$T/want" "$OUT" | head -c 600)"
}


# ---- Help and usage ----

run help-lists-it 0 "$BTRSIM" --help
out_has '^  qgroup '; done_check
run help 0 "$BTRSIM" qgroup --help
out_has '^usage: btrsim qgroup '; out_has 'limit \[-e\] IMG\.\.\. SIZE\|none QGROUPID\|PATH'
err_empty; done_check
run help-via-help 0 "$BTRSIM" help qgroup
out_has '^usage: btrsim qgroup '; done_check
run no-command 2 "$BTRSIM" qgroup
err_has '^btrsim qgroup: needs a COMMAND'; err_has '^usage: btrsim qgroup'; out_empty; done_check
run unknown-command 2 "$BTRSIM" qgroup frob "$img"
err_has "^btrsim qgroup: unknown command 'frob'"; done_check
for c in enable rescan show; do
	run "$c-no-image" 2 "$BTRSIM" qgroup "$c"
	err_has "^btrsim qgroup: $c: needs at least one image"; out_empty; done_check
	run "$c-sub-help" 0 "$BTRSIM" qgroup "$c" -h
	out_has '^usage: btrsim qgroup '; done_check
done
run limit-too-few 2 "$BTRSIM" qgroup limit "$img" 1M
err_has '^btrsim qgroup: limit: needs at least one image, a SIZE and a QGROUPID or PATH'
done_check
run show-bad-option 2 "$BTRSIM" qgroup show -x "$img"
err_has "^btrsim qgroup: show: unknown option '-x'"; done_check
run enable-no-options 2 "$BTRSIM" qgroup enable -e "$img"
err_has "^btrsim qgroup: enable: unknown option '-e'"; done_check
run limit-no-r 2 "$BTRSIM" qgroup limit -r "$img" 1M 0/5
err_has "unknown option '-r'"; done_check
run limit-no-raw 2 "$BTRSIM" qgroup limit --raw "$img" 1M 0/5
err_has "unknown option '--raw'"; done_check
run limit-negative 2 "$BTRSIM" qgroup limit "$img" -1 0/5
err_has "invalid size '-1'"; done_check
for s in 1x 1.5M 1MiB '' 16777216T 0x; do
	run "limit-bad-size-'$s'" 2 "$BTRSIM" qgroup limit "$img" "$s" 0/5
	err_has "^btrsim qgroup: limit: invalid size '$s'"; out_empty; done_check
done
for q in abc 256 0/abc 0/ 1/2/3 70000/5 0/281474976710656 sub x/y; do
	run "limit-bad-id-'$q'" 2 "$BTRSIM" qgroup limit "$img" 1M "$q"
	err_has "^btrsim qgroup: limit: '$q' is neither a qgroupid"; done_check
done
run show-missing-image 1 "$BTRSIM" qgroup show "$T/nonexistent.img"
err_has '^btrsim qgroup: '; out_empty; done_check

# ---- Quotas off ----

run show-off 1 "$BTRSIM" qgroup show "$img"
err_has '^btrsim qgroup: show: ENOTCONN \(Transport endpoint is not connected\): quotas not enabled$'
err_lines 1; out_empty; done_check
run limit-off 1 "$BTRSIM" qgroup limit "$img" 1M 0/5
err_has '^btrsim qgroup: limit: ENOTCONN .*quotas not enabled$'; out_empty; done_check
run rescan-off 1 "$BTRSIM" qgroup rescan "$img"
err_has '^btrsim qgroup: rescan: ENOTCONN .*quota groups are not enabled$'; out_empty; done_check

# ---- Enable, twice ----

run enable 0 "$BTRSIM" qgroup enable "$img"
out_empty; err_empty; done_check
run enable-again 0 "$BTRSIM" qgroup enable "$img"
out_empty; err_empty; done_check

# A fresh file system: the top level's one leaf, 16 KiB (the kernel's numbers).
printf '%s\n' \
	'Qgroupid    Referenced    Exclusive   Path ' \
	'--------    ----------    ---------   ---- ' \
	'0/5           16.00KiB     16.00KiB   <toplevel>' >"$T/want"
run show-fresh 0 "$BTRSIM" qgroup show "$img"
out_is; err_empty; done_check
check enabled
run rescan 0 "$BTRSIM" qgroup rescan "$img"
out_empty; err_empty; done_check
run show-after-rescan 0 "$BTRSIM" qgroup show "$img"
out_is; err_empty; done_check

# ---- A subvolume with 1 MiB, and its snapshot ----

head -c 1048576 /dev/urandom >"$T/1m"
run subvol 0 "$BTRSIM" subvolume create "$img" /sub
done_check
run put 0 "$BTRSIM" put "$img" "$T/1m" /sub/f
done_check
run snapshot 0 "$BTRSIM" subvolume snapshot "$img" /sub /snap
done_check
run subvol2 0 "$BTRSIM" subvolume create "$img" /sub2
done_check

# Every column: rfer = the data + the subvolume's own leaf; the data shared,
# so each side's exclusive bytes are its leaf (what the kernel shows).
printf '%s\n' \
	'Qgroupid    Referenced    Exclusive  Max referenced  Max exclusive Parent   Child   Path ' \
	'--------    ----------    ---------  --------------  ------------- ------   -----   ---- ' \
	'0/5              16384        16384            none           none -        -       <toplevel>' \
	'0/256          1064960        16384            none           none -        -       sub' \
	'0/257          1064960        16384            none           none -        -       snap' \
	'0/258            16384        16384            none           none -        -       sub2' >"$T/want"
run show-pcre-raw 0 "$BTRSIM" qgroup show -pcre --raw "$img"
out_is; err_empty; done_check
run show-separate-flags 0 "$BTRSIM" qgroup show -p -c -r -e --raw "$img"
out_is; done_check

printf '%s\n' \
	'Qgroupid    Referenced    Exclusive   Path ' \
	'--------    ----------    ---------   ---- ' \
	'0/5           16.00KiB     16.00KiB   <toplevel>' \
	'0/256          1.02MiB     16.00KiB   sub' \
	'0/257          1.02MiB     16.00KiB   snap' \
	'0/258         16.00KiB     16.00KiB   sub2' >"$T/want"
run show-human 0 "$BTRSIM" qgroup show "$img"
out_is; done_check
run show-human-flag 0 "$BTRSIM" qgroup show --raw --human-readable "$img"
out_is; done_check

printf '%s\n' \
	'Qgroupid    Referenced    Exclusive Parent     Path ' \
	'--------    ----------    --------- ------     ---- ' \
	'0/5           16.00KiB     16.00KiB -          <toplevel>' >"$T/want"
run show-p 0 sh -c '"$1" qgroup show -p "$2" | head -n 3' sh "$BTRSIM" "$img"
out_is; done_check
printf '%s\n' \
	'Qgroupid    Referenced    Exclusive Child   Path ' \
	'--------    ----------    --------- -----   ---- ' \
	'0/5           16.00KiB     16.00KiB -       <toplevel>' >"$T/want"
run show-c 0 sh -c '"$1" qgroup show -c "$2" | head -n 3' sh "$BTRSIM" "$img"
out_is; done_check
check snapshot

# ---- Limits ----

run limit-path 0 "$BTRSIM" qgroup limit "$img" 1M /sub
out_empty; err_empty; done_check
run limit-excl-id 0 "$BTRSIM" qgroup limit -e "$img" 1m 0/257
done_check
run limit-top 0 "$BTRSIM" qgroup limit "$img" 12345 /
done_check
printf '%s\n' \
	'Qgroupid    Referenced    Exclusive  Max referenced  Max exclusive   Path ' \
	'--------    ----------    ---------  --------------  -------------   ---- ' \
	'0/5              16384        16384           12345           none   <toplevel>' \
	'0/256          1064960        16384         1048576           none   sub' \
	'0/257          1064960        16384            none        1048576   snap' \
	'0/258            16384        16384            none           none   sub2' >"$T/want"
run show-limits-raw 0 "$BTRSIM" qgroup show -re --raw "$img"
out_is; done_check
printf '%s\n' \
	'Qgroupid    Referenced    Exclusive  Max referenced   Path ' \
	'--------    ----------    ---------  --------------   ---- ' \
	'0/5           16.00KiB     16.00KiB        12.06KiB   <toplevel>' \
	'0/256          1.02MiB     16.00KiB         1.00MiB   sub' \
	'0/257          1.02MiB     16.00KiB            none   snap' \
	'0/258         16.00KiB     16.00KiB            none   sub2' >"$T/want"
run show-limits-r 0 "$BTRSIM" qgroup show -r "$img"
out_is; done_check

# The other limit stays: -e on 0/256 keeps its referenced limit, none removes one.
run limit-both 0 "$BTRSIM" qgroup limit -e "$img" 2M 0/256
done_check
run show-both 0 "$BTRSIM" qgroup show -re --raw "$img"
out_has '^0/256 +1064960 +16384 +1048576 +2097152   sub$'; done_check
run limit-none 0 "$BTRSIM" qgroup limit "$img" none 0/256
done_check
run show-none 0 "$BTRSIM" qgroup show -re --raw "$img"
out_has '^0/256 +1064960 +16384 +none +2097152   sub$'; done_check
run limit-none-upper 0 "$BTRSIM" qgroup limit -e "$img" NONE /sub
done_check
run show-none-both 0 "$BTRSIM" qgroup show -re --raw "$img"
out_has '^0/256 +1064960 +16384 +none +none   sub$'; done_check
run limit-zero 0 "$BTRSIM" qgroup limit "$img" 0 0/258
done_check
run show-zero 0 "$BTRSIM" qgroup show -r "$img"
out_has '^0/258 +16.00KiB +16.00KiB +0.00B   sub2$'; done_check
run limit-none-258 0 "$BTRSIM" qgroup limit "$img" none 0/258
done_check

# A value longer than the column widens it (progs' update_columns_max_len).
run limit-huge 0 "$BTRSIM" qgroup limit "$img" 1024T 0/257
done_check
run show-wide 0 "$BTRSIM" qgroup show -re --raw "$img"
out_has '^Qgroupid    Referenced    Exclusive   Max referenced  Max exclusive   Path $'
out_has '^--------    ----------    ---------   --------------  -------------   ---- $'
out_has '^0/257          1064960        16384 1125899906842624        1048576   snap$'
out_has '^0/5              16384        16384            12345           none   <toplevel>$'
done_check

# Unknown groups, paths that are not subvolumes.
run limit-unknown 1 "$BTRSIM" qgroup limit "$img" 1M 0/999
err_has '^btrsim qgroup: 0/999: ENOENT \(No such file or directory\): '
err_lines 1; done_check
run limit-level1 1 "$BTRSIM" qgroup limit "$img" 1M 1/256
err_has '^btrsim qgroup: 1/256: ENOENT '; done_check
run limit-file 1 "$BTRSIM" qgroup limit "$img" 1M /sub/f
err_has '^btrsim qgroup: /sub/f: EINVAL \(Invalid argument\): not a subvolume$'; done_check
run limit-missing-path 1 "$BTRSIM" qgroup limit "$img" 1M /nope
err_has '^btrsim qgroup: /nope: ENOENT '; done_check
check limits

# ---- A write past a limit fails with EDQUOT ----

run limit-sub2 0 "$BTRSIM" qgroup limit "$img" 1M /sub2
done_check
head -c 2097152 /dev/zero >"$T/2m"
run write-past-limit 1 "$BTRSIM" write --create "$img" /sub2/big "$T/2m"
err_has 'EDQUOT'; done_check
run show-after-edquot 0 "$BTRSIM" qgroup show -r --raw "$img"
awk '$1 == "0/258" { exit !($2 <= 1048576) }' "$OUT" || fail "0/258 past its limit: $(grep 0/258 "$OUT")"
done_check
run limit-sub2-none 0 "$BTRSIM" qgroup limit "$img" none /sub2
done_check
run write-no-limit 0 "$BTRSIM" write --create "$img" /sub2/big "$T/2m"
done_check
check edquot

# ---- A deleted snapshot ----

# Once the cleaner is done its data is the source's alone.  Linux 6.18
# removes the group of a dropped subvolume; a group left behind must be empty
# and shown as progs shows a group without a subvolume.
run delete 0 "$BTRSIM" subvolume delete "$img" /snap
done_check
run sync 0 "$BTRSIM" subvolume sync "$img"
done_check
run show-after-delete 0 "$BTRSIM" qgroup show --raw "$img"
out_has '^0/256 +1064960 +1064960   sub$'
grep '^0/257 ' "$OUT" | grep -qvE '^0/257 +0 +0   <stale>$' &&
	fail "the dropped snapshot's group: $(grep '^0/257 ' "$OUT")"
done_check
check deleted

# ---- Groups above level 0 ----

run create-no-id 2 "$BTRSIM" qgroup create "$img"
err_has '^btrsim qgroup: create: needs at least one image and a QGROUPID'; done_check
run create-bad-id 2 "$BTRSIM" qgroup create "$img" 1-5
err_has "^btrsim qgroup: create: '1-5' is not a qgroupid"; done_check
run create-path 2 "$BTRSIM" qgroup create "$img" /sub
err_has "is not a qgroupid"; done_check
run assign-too-few 2 "$BTRSIM" qgroup assign "$img" 0/256
err_has '^btrsim qgroup: assign: needs at least one image, a SRC and a DST'; done_check
run assign-bad-option 2 "$BTRSIM" qgroup assign -p "$img" 0/256 1/1
err_has "unknown option '-p'"; done_check
run create-1-1 0 "$BTRSIM" qgroup create "$img" 1/1
done_check
run create-2-1 0 "$BTRSIM" qgroup create "$img" 2/1
done_check
run create-again 1 "$BTRSIM" qgroup create "$img" 1/1
err_has 'EEXIST'; done_check
run assign-same-level 1 "$BTRSIM" qgroup assign "$img" 1/1 1/1
err_has 'EINVAL'; done_check
run assign-missing 1 "$BTRSIM" qgroup assign "$img" 0/256 1/7
err_has 'EINVAL'; done_check
run assign-up 0 "$BTRSIM" qgroup assign "$img" 1/1 2/1
out_empty; done_check
# /sub shares nothing: moved at once, no rescan.
run assign-sub 0 "$BTRSIM" qgroup assign "$img" /sub 1/1
out_empty; done_check
run assign-twice 1 "$BTRSIM" qgroup assign "$img" 0/256 1/1
err_has 'EEXIST'; done_check
run show-pc 0 "$BTRSIM" qgroup show -pc --raw "$img"
sub_rfer=$(awk '$1 == "0/256" { print $2 }' "$OUT")
awk -v r="$sub_rfer" '$1 == "1/1" || $1 == "2/1" { if ($2 != r || $3 != r) bad = 1; n++ }
	END { exit bad || n != 2 }' "$OUT" || fail "1/1 and 2/1 do not hold /sub's $sub_rfer: $(grep -a '^[12]/' "$OUT" | tr '\n' '|')"
grep -aq '^0/256 .* 1/1      -       sub$' "$OUT" || fail "0/256's line: $(grep -a '^0/256' "$OUT")"
# progs 6.2 prints a group's parents and their count in Path, a NUL for one.
grep -a '^1/1 ' "$OUT" | sed 's/^.*  2\/1</  2\/1</' | od -c >"$T/got1.od"
printf '  2/1<1 member qgroup\000>\n' | od -c >"$T/want1.od"
cmp -s "$T/got1.od" "$T/want1.od" || fail "1/1's Path: $(grep -a '^1/1 ' "$OUT" | od -c | head -3 | tr '\n' '|')"
grep -aq '^2/1 .* -        1/1     <0 member qgroups>$' "$OUT" || fail "2/1's line: $(grep -a '^2/1' "$OUT")"
done_check
check groups
run destroy-busy 1 "$BTRSIM" qgroup destroy "$img" 2/1
err_has 'EBUSY'; done_check
run destroy-level0-busy 1 "$BTRSIM" qgroup destroy "$img" 0/256
err_has 'EBUSY'; done_check
run destroy-missing 1 "$BTRSIM" qgroup destroy "$img" 3/3
err_has 'ENOENT'; done_check
run remove-not-member 1 "$BTRSIM" qgroup remove "$img" 0/258 1/1
err_has 'ENOENT'; done_check
run remove-sub 0 "$BTRSIM" qgroup remove "$img" /sub 1/1
out_empty; done_check
run show-after-remove 0 "$BTRSIM" qgroup show --raw "$img"
awk '$1 == "1/1" || $1 == "2/1" { if ($2 != 0 || $3 != 0) bad = 1 } END { exit bad }' "$OUT" ||
	fail "numbers left after the remove: $(grep -a '^[12]/' "$OUT" | tr '\n' '|')"
done_check
run destroy-1-1 0 "$BTRSIM" qgroup destroy "$img" 1/1
done_check
run show-after-destroy 0 "$BTRSIM" qgroup show -pc --raw "$img"
grep -aq '^1/1 ' "$OUT" && fail "1/1 still shown"
grep -aq '^2/1 .* -        -       <0 member qgroups>$' "$OUT" || fail "2/1's line: $(grep -a '^2/1' "$OUT")"
done_check
# A group whose members share extents: the numbers go stale; counted again
# (the default) or left marked (--no-rescan).
run create-1-2 0 "$BTRSIM" qgroup create "$img" 1/2
run create-1-2 0 "$BTRSIM" subvolume snapshot "$img" /sub /snap3
done_check
run assign-shared-no-rescan 0 "$BTRSIM" qgroup assign --no-rescan "$img" 0/256 1/2
err_has 'quotas may be inconsistent, rescan needed'; done_check
run show-stale 0 "$BTRSIM" qgroup show --raw "$img"
err_has 'qgroup data inconsistent, rescan recommended'; done_check
run remove-shared-rescan 0 "$BTRSIM" qgroup remove "$img" 0/256 1/2
out_has '^Quota data changed, rescan scheduled$'; done_check
run show-fresh 0 "$BTRSIM" qgroup show --raw "$img"
err_empty; done_check
check stale-then-rescanned
