# Every kind of operation the kernel target's shell script translates (traces/kernel_script.c):
# tests/interop/test_kernel_explore.sh runs the script it makes and checks each result.
mkdir /d 0700
create /d/a 0600
write /d/a 0 20K 7
write /d/a 100 50 8 sync
truncate /d/a 10000
fallocate /d/a 0 4096 punch-hole
fallocate /d/a 20000 8192 keep-size
link /d/a /d/hard
symlink "a b" /d/sym
create /d/b
rename /d/b /d/c
rename /d/c /d/a noreplace = EEXIST
rename /d/c /d/hard exchange
setxattr /d/a user.k "v\x01"
removexattr /d/a user.k
chmod /d/a 0640
chown /d/a 12 34
utimes /d/a 1000000.5 2000000.25
fdatasync /d/a
mkdir /e
rmdir /e
unlink /d/sym
sync
subvol-create /sv
create /sv/f
write /sv/f 0 64K 9
create /sv/g
clone /sv/f /sv/g
clone-range /sv/f 0 4096 /sv/g 8192
dedupe /sv/f 0 4096 /sv/g 0
snapshot /sv /snap ro
defrag /sv/f
rmdir /nonexistent = ENOENT
fsync /d
