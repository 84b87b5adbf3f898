#!/bin/sh
# btrsim device stats: usage errors (exit 2), the layout of btrfs device stats
# (devid order), zeros on a new volume, a data copy scribbled then met by a
# scrub mounted for writing (corruption_errs 1 on that image, kept across
# opens; -c exits 64), a read-only read counts nothing that lasts, -z resets
# (printing the old values first); device replace: usage errors, a target
# holding a file system (refused, -f), a devid that is no device, a present
# device replaced (the volume with the new image reads, checks and scrubs
# clean; the old image is no device any more).
. "$(dirname "$0")/lib.sh"

run no-command 2 "$BTRSIM" device
err_has '^btrsim device: needs a COMMAND'; done_check
run unknown-command 2 "$BTRSIM" device explode "$T/x.img"
err_has "^btrsim device: unknown command 'explode'"; done_check
run help 0 "$BTRSIM" device --help
out_has '^usage: btrsim device stats \[-z\] \[-c\] IMG\.\.\.'; done_check
run no-image 2 "$BTRSIM" device stats
err_has '^btrsim device: stats: needs at least one image'; done_check
run bad-option 2 "$BTRSIM" device stats -q "$T/x.img"
err_has "unknown option '-q'"; done_check
run missing-image 1 "$BTRSIM" device stats "$T/none.img"
err_has '^btrsim device: '; done_check

A=$T/a.img
B=$T/b.img
truncate -s 256M "$A" "$B"
head -c 300000 /dev/urandom >"$T/f"
{ "$BTRSIM" mkfs -d raid1 -m raid1 --seed 4 "$A" "$B" && "$BTRSIM" put "$A" "$B" "$T/f" /f; } >/dev/null ||
	{ echo "FAIL setup"; exit 0; }

zeros() {
	for i in "$A" "$B"; do
		for k in "write_io_errs    " "read_io_errs     " "flush_io_errs    " "corruption_errs  " "generation_errs  "; do
			echo "[$i].${k}0"
		done
	done
}
zeros >"$T/want"
run fresh 0 "$BTRSIM" device stats -c "$B" "$A"
cmp -s "$OUT" "$T/want" || fail "stdout differs: $(diff "$T/want" "$OUT" | head -c 400)"
done_check

L=$("$BTRSIM" dump-tree -t 5 "$A" "$B" | awk '/extent data disk byte/ { print $5; exit }')
# shellcheck disable=SC2046
set -- $("$BTRSIM" map "$A" "$B" "$L" | awk '/^copy 0:/ { print $3, $5 }')
head -c 4096 /dev/urandom | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
BADIMG=$1

run read-only-read 0 "$BTRSIM" cat "$A" "$B" /f
cmp -s "$OUT" "$T/f" || fail "/f reads back different"
done_check
run read-only-counts-nothing-lasting 0 "$BTRSIM" device stats -c "$A" "$B"
done_check

run scrub 0 "$BTRSIM" scrub "$A" "$B"
done_check
run counted 64 "$BTRSIM" device stats -c "$A" "$B"
out_has "^\[$BADIMG\]\.corruption_errs  1$"
[ "$(grep -c ' 0$' "$OUT")" -eq 9 ] || fail "other counters: $(grep -v ' 0$' "$OUT" | tr '\n' '|')"
done_check
run reset 0 "$BTRSIM" device stats -z "$A" "$B"
out_has "^\[$BADIMG\]\.corruption_errs  1$"; done_check
run after-reset 0 "$BTRSIM" device stats -c "$A" "$B"
cmp -s "$OUT" "$T/want" || fail "not zero after -z: $(grep -v ' 0$' "$OUT" | tr '\n' '|')"
done_check
run check 0 "$BTRSIM" check "$A" "$B"
done_check

# ---- replace ----

run replace-few 2 "$BTRSIM" device replace 1 "$T/n.img"
err_has 'replace: needs SRC, TARGET and at least one image'; done_check
run replace-bad-src 2 "$BTRSIM" device replace nope "$T/n.img" "$A" "$B"
err_has "SRC 'nope' is neither a devid nor one of the images"; done_check
run replace-target-is-image 2 "$BTRSIM" device replace 1 "$B" "$A" "$B"
err_has 'TARGET .* is one of the images'; done_check
cp "$A" "$T/other.img"
run replace-target-holds-fs 1 "$BTRSIM" device replace 1 "$T/other.img" "$A" "$B"
err_has 'holds a btrfs file system; -f to overwrite it'; done_check
run replace-no-such-devid 1 "$BTRSIM" device replace 7 "$T/n7.img" "$A" "$B"
err_has 'ENOENT .*no device with devid 7'; done_check

# The device of $A, present, onto a new image; then $A is no device.
run replace-present 0 "$BTRSIM" device replace "$A" "$T/n.img" "$A" "$B"
out_has "^replaced devid 1 with $T/n.img: [1-9][0-9]* bytes copied"; done_check
run replaced-reads 0 "$BTRSIM" cat "$T/n.img" "$B" /f
cmp -s "$OUT" "$T/f" || fail "/f reads back different"
done_check
run replaced-check 0 "$BTRSIM" check "$T/n.img" "$B"
done_check
run replaced-scrub 0 "$BTRSIM" scrub -r "$T/n.img" "$B"
out_has '^Error summary:    no errors found$'; done_check
run old-disk-is-no-device 1 "$BTRSIM" check "$A" "$B"
err_has 'no valid btrfs superblock'; done_check
# -f: the old disk (wiped) and a copy of a file system both serve as targets.
run replace-force 0 "$BTRSIM" device replace -f 2 "$T/other.img" "$T/n.img" "$B"
done_check
run replace-force-reads 0 "$BTRSIM" cat "$T/n.img" "$T/other.img" /f
cmp -s "$OUT" "$T/f" || fail "/f reads back different"
done_check

# ---- add ----

run add-few 2 "$BTRSIM" device add "$T/n.img"
err_has 'add: needs NEW and at least one image'; done_check
run add 0 "$BTRSIM" device add "$T/c.img" "$T/n.img" "$T/other.img"
out_has "^added $T/c.img as devid 3$"; done_check
run added-check 0 "$BTRSIM" check "$T/n.img" "$T/other.img" "$T/c.img"
out_has '^no error found$'; done_check
run added-stats 0 "$BTRSIM" device stats "$T/n.img" "$T/other.img" "$T/c.img"
out_has "^\[$T/c.img\]\.write_io_errs    0$"; done_check
run add-again-refused 1 "$BTRSIM" device add "$T/c.img" "$T/n.img" "$T/other.img"
err_has 'holds a btrfs file system'; done_check
