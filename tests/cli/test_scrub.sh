#!/bin/sh
# btrsim scrub: usage errors (exit 2), a missing image (exit 1), a clean
# RAID5 volume (exit 0, "no errors found", the same counters twice), damage
# on one copy found with -r (nothing written: the images keep their bytes,
# exit 0 with the warning, as btrfs scrub -r counts what it could mend as
# corrected), mended by a scrub that writes (a second scrub finds nothing,
# btrsim check clean), a parity sector counted as parity=, and a data sector
# bad on both RAID1 copies (uncorrectable: exit 3).
. "$(dirname "$0")/lib.sh"
umask 022

# ---- Help and usage ----

run help-lists-it 0 "$BTRSIM" --help
out_has '^  scrub '; done_check
run help 0 "$BTRSIM" scrub --help
out_has '^usage: btrsim scrub \[options\] IMG\.\.\.'; err_empty; done_check
run no-image 2 "$BTRSIM" scrub
err_has '^btrsim scrub: needs at least one image'; out_empty; done_check
run bad-option 2 "$BTRSIM" scrub -x "$T/none.img"
err_has "^btrsim scrub: unknown option '-x'"; done_check
run missing-image 1 "$BTRSIM" scrub "$T/none.img"
err_has '^btrsim scrub: '; out_empty; done_check

# ---- A RAID5 volume of three images ----

IMGS="$T/a.img $T/b.img $T/c.img"
for i in $IMGS; do truncate -s 256M "$i"; done
head -c 700000 /dev/urandom >"$T/f1"
head -c 300000 /dev/urandom >"$T/f2"
# shellcheck disable=SC2086
run mkfs 0 "$BTRSIM" mkfs -d raid5 -m raid1 --seed 2 --time 1700000000 $IMGS
done_check
# shellcheck disable=SC2086
{ "$BTRSIM" put $IMGS "$T/f1" /f1 && "$BTRSIM" put $IMGS "$T/f2" /f2; } >/dev/null ||
	{ echo "FAIL setup: put"; exit 0; }

# shellcheck disable=SC2086
run clean 0 "$BTRSIM" scrub $IMGS
out_has '^Error summary:    no errors found$'; out_has '^Total scrubbed:   [0-9]+ bytes'
err_empty; done_check
cp "$OUT" "$T/first"
# shellcheck disable=SC2086
run clean-again 0 "$BTRSIM" scrub -r $IMGS
cmp -s "$OUT" "$T/first" || fail "a second scrub counts differently"
done_check
# shellcheck disable=SC2086
run per-device-raw 0 "$BTRSIM" scrub -d -R $IMGS
out_has '^Scrub device .*a\.img \(id 1\) done$'; out_has '^Scrub device .*c\.img \(id 3\) done$'
out_has '^	data_bytes_scrubbed: [1-9]'; out_has '^	parity_errors: 0$'; out_has '^	last_physical: '
done_check

# where IMG... LOGICAL COPY: "image physical" of a copy (from btrsim map).
where() {
	copy=$1
	shift
	"$BTRSIM" map "$@" | awk -v c="copy $copy:" 'index($0, c) == 1 { print $3, $5 }'
}

# The first data extent of /f1: its first column scribbled.
# shellcheck disable=SC2086
L=$("$BTRSIM" dump-tree -t 5 $IMGS | awk '/extent data disk byte/ { print $5; exit }')
# shellcheck disable=SC2086
set -- $(where 0 $IMGS "$L")
head -c 4096 /dev/urandom | dd of="$1" bs=1 seek=$(($2 + 4096)) conv=notrunc status=none
for i in $IMGS; do cp "$i" "$i.before"; done
# shellcheck disable=SC2086
run damaged-readonly 0 "$BTRSIM" scrub -r $IMGS
out_has '^Error summary:    csum=1$'; out_has '^  Corrected:      1$'; out_has '^  Uncorrectable:  0$'
err_has 'WARNING: errors detected during scrubbing, corrected'
for i in $IMGS; do cmp -s "$i" "$i.before" || fail "-r changed ${i##*/}"; done
done_check
# shellcheck disable=SC2086
run damaged-mend 0 "$BTRSIM" scrub $IMGS
out_has '^Error summary:    csum=1$'; out_has '^  Corrected:      1$'; done_check
# shellcheck disable=SC2086
run mended 0 "$BTRSIM" scrub -r $IMGS
out_has '^Error summary:    no errors found$'; done_check
# shellcheck disable=SC2086
run mended-reads 0 "$BTRSIM" cat $IMGS /f1
cmp -s "$OUT" "$T/f1" || fail "/f1 reads back different"
done_check
# shellcheck disable=SC2086
run mended-check 0 "$BTRSIM" check $IMGS
done_check

# A parity sector of the same row: parity=1, mended.
# shellcheck disable=SC2086
P=$("$BTRSIM" dump-tree -t chunk $IMGS | awk -v l="$L" '
	$0 ~ "CHUNK_ITEM " l "\\)" { on = 1 } on && /stripe 2 devid/ { print $4, $6; exit }')
set -- $P
head -c 512 /dev/urandom | dd of="$T/$(echo abc | cut -c"$1")".img bs=1 seek=$(($2 + 100)) conv=notrunc status=none
# shellcheck disable=SC2086
run parity 0 "$BTRSIM" scrub $IMGS
out_has '^Error summary:    parity=1$'; out_has '^  Corrected:      1$'; done_check
# shellcheck disable=SC2086
run parity-mended 0 "$BTRSIM" scrub -r $IMGS
out_has '^Error summary:    no errors found$'; done_check

# ---- Both copies bad: uncorrectable ----

R1="$T/r1.img $T/r2.img"
for i in $R1; do truncate -s 256M "$i"; done
# shellcheck disable=SC2086
{ "$BTRSIM" mkfs -d raid1 -m raid1 --seed 3 $R1 && "$BTRSIM" put $R1 "$T/f2" /f2; } >/dev/null ||
	{ echo "FAIL setup: raid1"; exit 0; }
# shellcheck disable=SC2086
L=$("$BTRSIM" dump-tree -t 5 $R1 | awk '/extent data disk byte/ { print $5; exit }')
for c in 0 1; do
	# shellcheck disable=SC2086
	set -- $(where $c $R1 "$L")
	head -c 4096 /dev/urandom | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
done
# shellcheck disable=SC2086
run uncorrectable 3 "$BTRSIM" scrub $R1
out_has '^Error summary:    csum=2$'; out_has '^  Uncorrectable:  2$'
err_has 'ERROR: there are uncorrectable errors'; done_check
