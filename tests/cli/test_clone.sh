#!/bin/sh
# btrsim cp and btrsim clone (issue 23), no kernel needed: cp makes a
# reflink by default (the copy shares the source's extents: du's referenced
# bytes twice its disk usage), into a directory as DIR/NAME, over an existing
# file; --reflink=never copies the bytes (holes kept); clone --range shares
# a range; the kernel's refusals: an unaligned range EINVAL, a read-only
# snapshot EROFS, a directory EISDIR, a missing file ENOENT; bad usage.
# Every image passes both checkers.  (The kernel reading ref's clones:
# tests/interop/test_write.sh's reflink workload.)
. "$(dirname "$0")/lib.sh"

img="$T/a.img"
"$BTRSIM" mkfs --size 256M -f "$img" >/dev/null
(head -c 100000 /dev/urandom; head -c 200000 /dev/zero; head -c 5000 /dev/urandom) >"$T/src"
"$BTRSIM" write --create "$img" /a "$T/src" >/dev/null || fail "set-up: write"
"$BTRSIM" mkdir "$img" /dir >/dev/null

# disk usage and referenced bytes of du's TOTAL line, in KiB
usage() { "$BTRSIM" du "$img" "$@" | awk '$1 == "TOTAL" { print $3, $5 }'; }

run cp-reflink 0 "$BTRSIM" cp "$img" /a /b
out_empty
set -- $(usage /a /b)
[ "$1" = "300K" ] && [ "$2" = "600K" ] || fail "disk usage $1, referenced $2: not shared"
"$BTRSIM" cat "$img" /b | cmp -s - "$T/src" || fail "/b differs from the source"
done_check

run cp-into-dir 0 "$BTRSIM" cp --reflink=always "$img" /a /dir
"$BTRSIM" cat "$img" /dir/a | cmp -s - "$T/src" || fail "/dir/a differs"
done_check

run cp-never 0 "$BTRSIM" cp --reflink=never "$img" /a /c
set -- $(usage /a /c)
[ "$1" = "408K" ] && [ "$2" = "408K" ] || fail "disk usage $1, referenced $2: the copy shares or lost its holes"
"$BTRSIM" cat "$img" /c | cmp -s - "$T/src" || fail "/c differs"
"$BTRSIM" filefrag "$img" /c | grep -q '1 extent found' || fail "the zeros were written"
done_check

printf short >"$T/short"
"$BTRSIM" write --create "$img" /over "$T/short" >/dev/null
run cp-over-a-file 0 "$BTRSIM" cp "$img" /a /over
"$BTRSIM" cat "$img" /over | cmp -s - "$T/src" || fail "/over differs"
done_check

run clone-range 0 "$BTRSIM" clone --range 0 64K 128K "$img" /a /b
"$BTRSIM" cat "$img" /b >"$T/b"
head -c 65536 "$T/src" | cmp -s - "$T/b" -i 0:131072 -n 65536 || fail "the range differs"
done_check

run clone-new-dst 0 "$BTRSIM" clone "$img" /a /new
"$BTRSIM" cat "$img" /new | cmp -s - "$T/src" || fail "/new differs"
done_check

run clone-unaligned 1 "$BTRSIM" clone --range 100 4K 0 "$img" /a /b
err_has 'EINVAL'
done_check
run clone-tail-into-middle 1 "$BTRSIM" clone --range 300K 0 0 "$img" /a /b
err_has 'EINVAL'
done_check
"$BTRSIM" subvolume create "$img" /sv >/dev/null
"$BTRSIM" write --create "$img" /sv/f "$T/short" >/dev/null
"$BTRSIM" subvolume snapshot -r "$img" /sv /ro >/dev/null
run clone-into-ro 1 "$BTRSIM" clone "$img" /a /ro/f
err_has 'EROFS'
done_check
run clone-from-ro 0 "$BTRSIM" clone "$img" /ro/f /fromro
done_check
run clone-dir 1 "$BTRSIM" clone "$img" /a /dir
err_has 'EISDIR'
done_check
run clone-missing 1 "$BTRSIM" clone "$img" /nothing /b
err_has 'ENOENT'
done_check
run cp-dir 1 "$BTRSIM" cp "$img" /dir /x
err_has 'omitting directory'
done_check
run cp-bad-when 2 "$BTRSIM" cp --reflink=sometimes "$img" /a /b
err_has 'always, auto or never'
done_check
run clone-bad-range 2 "$BTRSIM" clone --range 0 x 0 "$img" /a /b
done_check
run clone-no-operands 2 "$BTRSIM" clone "$img" /a
done_check
check clone
