#!/bin/sh
# btrsim filesystem defragment: a file fragmented by small overwrites becomes
# one extent (btrsim filefrag) with its bytes unchanged; -t leaves extents at
# least that long alone; -c compresses every extent (dump-tree), --nocomp
# rewrites them plain; -s/-l limit the range; -r walks a directory; a
# directory without -r defragments its tree (progs' warnings); extents shared
# with a snapshot are rewritten (the snapshot keeps its own); the workload op
# defrag (run and explore, with compression); bad input: usage errors (exit
# 2), a start past the end (EINVAL), a missing path, a read-only snapshot
# (EROFS), each counted in "total N failures" (exit 1) with the other paths
# done; ENOSPC on a full file system leaves every file as it was.  Both
# checkers clean.  The kernel's counts: tests/interop/test_defrag.sh.
. "$(dirname "$0")/lib.sh"
umask 022
export TZ=UTC

img=$T/fs.img
truncate -s 256M "$img"
run mkfs 0 "$BTRSIM" mkfs --seed 1 --time 1700000000 "$img"
done_check


# extents PATH: btrsim filefrag's count
extents() { "$BTRSIM" filefrag "$img" "$1" | awk '{ print $(NF-2) }'; }
same() { "$BTRSIM" cat "$img" "$1" | cmp -s - "$2" || fail "$1 changed"; }

cat >"$T/frag.wl" <<'WL'
create /f
write /f 0 2M 1
sync
write /f 4K 4K 2
write /f 100K 8K 3
write /f 500K 4K 4
write /f 1M 12K 5
write /f 1500K 4K 6
sync
mkdir /d
create /d/a
write /d/a 0 256K 7
write /d/a 8K 4K 8
write /d/a 64K 4K 9
create /d/b
write /d/b 0 300K t10
write /d/b 20K 4K 11
snapshot / /snap ro
sync
WL
run setup 0 "$BTRSIM" run "$T/frag.wl" "$img"
done_check
for f in /f /d/a /d/b; do "$BTRSIM" cat "$img" $f >"$T/$(echo $f | tr / _)"; done

run help 0 "$BTRSIM" filesystem defragment --help
out_has '^usage: btrsim filesystem defragment'; out_has '-c\[ALG\]'; done_check
run usage-none 2 "$BTRSIM" filesystem defragment "$img"
done_check
run usage-sub 2 "$BTRSIM" filesystem bogus "$img" /f
err_has "unknown subcommand 'bogus'"; done_check
run usage-alg 2 "$BTRSIM" filesystem defragment -cgzip "$img" /f
err_has 'unknown compression type: gzip'; done_check
run usage-both 2 "$BTRSIM" filesystem defragment -czstd --nocomp "$img" /f
err_has 'cannot use --nocomp with compression set'; done_check
run usage-size 2 "$BTRSIM" filesystem defragment -t 12Q "$img" /f
done_check
run bad-level 1 "$BTRSIM" filesystem defragment -czlib -L 20 "$img" /f
err_has 'EINVAL.*level 20'; done_check

n=$(extents /f)
NAME=fragmented; [ "$n" -ge 8 ] || fail "/f has $n extents before"; done_check
# -t 4K: every extent is at least 4 KiB: nothing to do
run thresh 0 "$BTRSIM" filesystem defragment -t 4K "$img" /f
done_check
NAME=thresh-count; [ "$(extents /f)" -eq "$n" ] || fail "-t 4K changed /f"; done_check
# a range: only its extents
run range 0 "$BTRSIM" filesystem defragment -s 0 -l 256K "$img" /f
done_check
NAME=range-count; m=$(extents /f); [ "$m" -lt "$n" ] && [ "$m" -gt 1 ] || fail "$m extents after -s 0 -l 256K (had $n)"; done_check
run default 0 "$BTRSIM" filesystem defragment -v "$img" /f
out_has '^/f$'; done_check
# one extent but the last 512 KiB: that piece of the first extent starts a
# cluster and reaches the end of the file, so nothing makes it a target (the
# kernel leaves the same two, tests/interop/test_defrag.sh)
NAME=default-count; [ "$(extents /f)" -eq 2 ] || fail "/f: $(extents /f) extents"; same /f "$T/_f"; done_check
# the snapshot keeps its own extents and bytes
NAME=snapshot-kept; [ "$(extents /snap/f)" -ge 8 ] || fail "the snapshot's /f changed"; same /snap/f "$T/_f"; done_check
check default

# -c: every extent compressed; --nocomp: rewritten plain
run compress 0 "$BTRSIM" filesystem defragment -czstd "$img" /d/b
done_check
run dump 0 "$BTRSIM" dump-tree -t 5 "$img"
out_has 'extent compression 3 \(zstd\)'; done_check
NAME=compress-content; same /d/b "$T/_d_b"; done_check
run nocomp 0 "$BTRSIM" filesystem defragment --nocomp "$img" /d/b
done_check
run du-nocomp 0 "$BTRSIM" du "$img" /d/b
out_has '^none '; done_check
# -r over a directory, and a directory without -r
run recursive 0 "$BTRSIM" filesystem defragment -r -v "$img" /d
out_has '^/d/a$'; out_has '^/d/b$'; done_check
NAME=recursive-count; [ "$(extents /d/a)" -eq 1 ] || fail "/d/a: $(extents /d/a) extents"; same /d/a "$T/_d_a"; done_check
run tree 0 "$BTRSIM" filesystem defragment "$img" /d
err_has 'WARNING: directory specified but recursive mode not requested: /d'; done_check
check dirs

# bad paths: counted failures, the others done
run failures 1 "$BTRSIM" filesystem defragment "$img" /nope /snap/f /f -s 8M
done_check
run failures-list 1 "$BTRSIM" filesystem defragment -s 8M "$img" /nope /snap/f /f
err_has '/nope: ENOENT'; err_has '/snap/f: EROFS'; err_has '/f: EINVAL'
err_has 'defrag failed on /f'; err_has '^total 3 failures$'; done_check

# the workload op, run and explored with compression
cat >"$T/op.wl" <<'WL'
mount-options compress=lzo
create /w
write /w 0 512K t3
fsync /w
write /w 4K 4K t4
write /w 64K 4K 5
defrag /w
defrag /w zstd
defrag /nope = ENOENT
fdatasync /w
WL
run op-run 0 "$BTRSIM" run "$T/op.wl" "$img"
done_check
run op-explore 0 "$BTRSIM" explore --seed 4 --samples 8 "$T/op.wl"
out_has ' 0 violations'; done_check
check op

# ENOSPC: a full file system; every file keeps its bytes
small=$T/small.img
truncate -s 128M "$small"
"$BTRSIM" mkfs --seed 2 "$small" >/dev/null
cat >"$T/fill.wl" <<'WL'
create /x
write /x 0 20M 1
sync
write /x 4K 4K 2
write /x 1M 4K 3
write /x 5M 4K 4
sync
create /fill
WL
"$BTRSIM" run "$T/fill.wl" "$small" >/dev/null
"$BTRSIM" cat "$small" /x >"$T/x"
i=0
while "$BTRSIM" write -o $((i * 8388608)) "$small" /fill "$T/x" >/dev/null 2>&1 && [ $i -lt 40 ]; do
	i=$((i + 1))
done
run enospc 1 "$BTRSIM" filesystem defragment -r -czlib "$small" /
err_has 'ENOSPC'; err_has '^total [0-9]+ failures$'; done_check
NAME=enospc-content
"$BTRSIM" cat "$small" /x | cmp -s - "$T/x" || fail "/x changed"
"$BTRSIM" check "$small" >/dev/null 2>&1 || fail "btrsim check after ENOSPC"
done_check
