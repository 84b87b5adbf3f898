# A small workload for the exploration figure: files, a rename over a
# directory move, overwrites, fsync and sync points.
create /a
write /a 0 5000 1
fsync /a
mkdir /d
rename /a /d/b
create /d/c
write /d/c 0 70000 2
sync
unlink /d/b
write /d/c 10000 3000 3
setxattr /d/c user.x "v"
fsync /d/c
truncate /d/c 100
link /d/c /e
sync
