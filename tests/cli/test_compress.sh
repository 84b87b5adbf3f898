#!/bin/sh
# Compression on write from the command line: put and write with --compress
# and --compress-force (every algorithm, levels, bad values: exit 2), the
# compression property (btrsim property get|set|list) and the inode flags c
# and m (btrsim lsattr / chattr) with Linux 6.18's errnos, inheritance by new
# files, the extents that result (dump-tree), content read back, and both
# checkers clean.  Sizes against the kernel's: tests/interop/test_compress.sh.
. "$(dirname "$0")/lib.sh"
umask 022
export TZ=UTC

img=$T/fs.img
truncate -s 256M "$img"
run mkfs 0 "$BTRSIM" mkfs --seed 1 --time 1700000000 "$img"
done_check


# text LEN: LEN bytes of compressible text
text() { yes 'the quick brown fox jumps over the lazy dog' | head -c "$1"; }
text 1048576 >"$T/text"
head -c 300000 /dev/urandom >"$T/random"

# ---- put / write options ----

run help-put 0 "$BTRSIM" put --help
out_has '--compress\[=ALG\[:LEVEL\]\]'; out_has '--compress-force'; done_check
run bad-alg 2 "$BTRSIM" put --compress=gzip "$img" "$T/text" /x
err_has 'unknown compression'; done_check
run bad-level 2 "$BTRSIM" write --compress=zstd:abc "$img" /x "$T/text"
err_has 'level must be a number'; done_check
run bad-level-empty 2 "$BTRSIM" put --compress=zstd: "$img" "$T/text" /x
done_check

for alg in zlib lzo zstd zstd:15 zlib:9; do
	name=$(echo "$alg" | tr : _)
	run "put-$name" 0 "$BTRSIM" put --compress="$alg" "$img" "$T/text" "/$name"
	done_check
	run "cat-$name" 0 "$BTRSIM" cat "$img" "/$name"
	cmp -s "$OUT" "$T/text" || fail "content differs"; done_check
done
# 1 MiB of text: 8 extents of 128 KiB, each compressed with the algorithm
run dump-zstd 0 "$BTRSIM" dump-tree -t 5 "$img"
n=$(grep -c 'extent compression 3 (zstd)' "$OUT")
[ "$n" -eq 16 ] || fail "$n zstd extents, expected 16 (two files of 8)"
n=$(grep -c 'extent compression 2 (lzo)' "$OUT")
[ "$n" -eq 8 ] || fail "$n lzo extents, expected 8"
done_check
# random data: the heuristic declines, nothing compressed, no NOCOMPRESS
run put-random 0 "$BTRSIM" put --compress=zstd "$img" "$T/random" /random
done_check
run lsattr-random 0 "$BTRSIM" lsattr "$img" /random
out_has '^---------------------- /random$'; done_check
# compress-force on random data: tried, fails, still no NOCOMPRESS
run force-random 0 "$BTRSIM" write --compress-force=lzo -c "$img" /forced "$T/random"
done_check
run lsattr-forced 0 "$BTRSIM" lsattr "$img" /forced
out_has '^---------------------- /forced$'; done_check
# a small random file under compress=zlib: the codec gives up: m
head -c 1000 "$T/random" >"$T/r1000"
run small-random 0 "$BTRSIM" put --compress "$img" "$T/r1000" /small
done_check
run lsattr-small 0 "$BTRSIM" lsattr "$img" /small
out_has '^---------------------m /small$'; done_check
check options

# ---- property ----

run prop-help 0 "$BTRSIM" property --help
out_has '^usage: btrsim property get'; done_check
run prop-list 0 "$BTRSIM" property list "$img" /
out_has '^compression +Set/get compression'; done_check
run mkdir 0 "$BTRSIM" mkdir "$img" /d
done_check
run prop-get-none 0 "$BTRSIM" property get "$img" /d
out_empty; done_check
run prop-set 0 "$BTRSIM" property set "$img" /d compression lzo
done_check
run prop-get 0 "$BTRSIM" property get "$img" /d compression
out_has '^compression=lzo$'; done_check
run prop-bad 1 "$BTRSIM" property set "$img" /d compression gzip
err_has 'EINVAL'; done_check
run prop-unknown 2 "$BTRSIM" property set "$img" /d label x
err_has "unknown property 'label'"; done_check
run prop-missing 1 "$BTRSIM" property get "$img" /nope
err_has 'no such file'; done_check
# new files inherit it: compressed without any mount option
run put-inherit 0 "$BTRSIM" put "$img" "$T/text" /d/f
done_check
run prop-inherited 0 "$BTRSIM" property get "$img" /d/f
out_has '^compression=lzo$'; done_check
run lsattr-inherited 0 "$BTRSIM" lsattr "$img" /d/f
out_has '^--------c------------- /d/f$'; done_check
run dump-inherit 0 "$BTRSIM" dump-tree -t 5 "$img"
n=$(grep -c 'extent compression 2 (lzo)' "$OUT")
[ "$n" -eq 16 ] || fail "$n lzo extents, expected 16"; done_check
run prop-reset 0 "$BTRSIM" property set "$img" /d compression ""
done_check
run prop-after-reset 0 "$BTRSIM" property get "$img" /d
out_empty; done_check

# ---- chattr / lsattr ----

run chattr-c 0 "$BTRSIM" chattr "$img" +c /d
done_check
run chattr-c-prop 0 "$BTRSIM" property get "$img" /d
out_has '^compression=zlib$'; done_check
run chattr-cm 1 "$BTRSIM" chattr "$img" +m /d
err_has 'EINVAL'; done_check
run chattr-swap 0 "$BTRSIM" chattr "$img" -c +m /d
done_check
run lsattr-m 0 "$BTRSIM" lsattr "$img" /d
out_has '^---------------------m /d$'; done_check
run chattr-m-prop 0 "$BTRSIM" property get "$img" /d
out_empty; done_check
run chattr-other 1 "$BTRSIM" chattr "$img" +i /d
err_has 'EOPNOTSUPP'; done_check
run chattr-bad 1 "$BTRSIM" chattr "$img" +Q /d
err_has 'EINVAL'; done_check
run chattr-usage 2 "$BTRSIM" chattr "$img" /d
done_check
check attrs
