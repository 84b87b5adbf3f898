# Reflinks (issue 23): FICLONE, FICLONERANGE and FIDEDUPERANGE with the
# errnos Linux 6.18 gives on btrfs (the kernel runs this file first and must
# agree): aligned ranges, the tail at the source's end (only at or past the
# destination's end), zero lengths, a gap past the destination's end, one
# file into itself, inline sources, holes and preallocated ranges,
# directories, a read-only snapshot (EROFS for a clone, allowed for a
# dedupe), differing bytes (EBADE).
create /a
write /a 0 64K 1
create /b
write /b 0 16K 2
clone-range /a 8K 16K /b 4K
clone-range /a 0 4K /b 1 = EINVAL
clone-range /a 1 4K /b 0 = EINVAL
clone-range /a 0 5000 /b 0 = EINVAL
clone-range /a 60K 8K /b 0 = EINVAL
clone-range /a 64K 0 /b 0
clone-range /a 65K 0 /b 0 = EINVAL
create /c
clone /a /c
write /a 0 4K 3
dedupe /a 16K 16K /c 16K
dedupe /a 0 4K /c 0 = EBADE
dedupe /a 0 4K /c 1 = EINVAL
dedupe /a 60K 8K /c 0 = EINVAL
create /d
write /d 0 10000 4
clone-range /d 8K 0 /b 20K
clone-range /d 8K 1808 /a 8K = EINVAL
clone /d /a = EINVAL
clone-range /a 0 16K /a 8K = EINVAL
clone-range /a 0 16K /a 32K
clone /a /a = EINVAL
clone-range /a 0 8K /b 1M
create /small
write /small 0 100 5
create /empty
clone /small /empty
create /mid
write /mid 0 4K 6
clone-range /small 0 0 /mid 4K
create /sparse
write /sparse 0 8K 7
fallocate /sparse 16K 8K keep-size
write /sparse 32K 4K 8
clone-range /sparse 0 36K /b 4K
mkdir /dir
clone /a /dir = EISDIR
clone /dir /a = EISDIR
clone /missing /a = ENOENT
dedupe /a 0 4K /dir 0 = EISDIR
subvol-create /sv
create /sv/x
write /sv/x 0 20000 9
clone-range /sv/x 0 8K /a 48K
snapshot /sv /ro ro
clone /a /ro/x = EROFS
dedupe /sv/x 0 20000 /ro/x 0
create /sv/y
clone /ro/x /sv/y
fsync /sv/y
