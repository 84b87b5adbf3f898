mkdir /d
create /d/old
write /d/old 0 40000 1
create /keep
write /keep 0 9000 2
sync
write /d/old 4096 8192 3
fallocate /d/old 20480 8192 punch-hole
fsync /d/old
mkdir /n
mkdir /n/m
create /n/m/f
write /n/m/f 0 30000 4
setxattr /n/m/f user.k v
link /d/old /n/hard
create /lost
write /lost 0 5000 5
fsync /n/m/f
fdatasync /d/old
truncate /keep 1000
fallocate /keep 4096 65536 keep-size
fsync /keep
write /keep 0 100 6
