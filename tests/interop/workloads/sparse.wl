# Large and sparse files, truncate, holes and preallocation.
create /big
write /big 1G 64K 1                 # a 1 GiB hole, then 64 KiB
write /big 0 1M 2
truncate /big 700M                  # the tail goes
create /pre
fallocate /pre 0 4M                 # preallocated, size 4 MiB
write /pre 1M 8K 3                  # written into the middle
fallocate /pre 8M 1M keep-size      # past the end, size unchanged
fallocate /pre 100K 2M punch-hole
fallocate /pre 3M 300K zero-range   # zeros over written and preallocated bytes
create /z
write /z 0 50000 8
fallocate /z 1000 20000 zero-range  # partial sectors at both edges
fallocate /z 45000 20000 zero-range-keep-size
fallocate /z 60000 9000 zero-range  # past the end: the size grows
create /t
write /t 0 10000 4
truncate /t 5000                    # inside a sector
truncate /t 20000                   # zeros after 5000
write /t 30000 1 5
create /small
write /small 0 3000 6               # inline
write /small 2500 3000 7            # no longer fits: becomes a regular extent
truncate /small 100
sync
