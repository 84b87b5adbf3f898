# Subvolumes and snapshots (btrfs subvolume create, snapshot [-r], delete, sync): what ref
# and Linux agree on (traces/README.md, "Random workloads", lists where they differ today).
subvol-create /sv
mkdir /sv/d
create /sv/d/f
write /sv/d/f 0 200K 31
write /sv/d/f 50000 3000 32
setxattr /sv/d/f user.tag "in a subvolume"
link /sv/d/f /sv/f2
symlink d/f /sv/lnk
subvol-create /sv/nested
create /sv/nested/x
write /sv/nested/x 0 10 33
subvol-create /sv = EEXIST
subvol-create /nope/x = ENOENT
snapshot /sv /snap
snapshot /sv /ro ro
snapshot /sv/d /x = EINVAL          # not a subvolume
snapshot /sv /snap = EEXIST
write /sv/d/f 100 100 34            # the snapshots keep the old data ...
write /snap/f2 150000 60000 35      # ... and the source keeps its own
truncate /snap/d/f 1000
unlink /snap/lnk
write /ro/d/f 0 1 = EROFS
mkdir /ro/new = EROFS
mkdir /ro/d = EEXIST
setxattr /ro/d/f user.x v = EROFS
unlink /ro/f2 = EROFS
link /sv/f2 /snap/f3 = EXDEV
rename /sv/f2 /snap/f3 = EXDEV
rmdir /snap/nested                  # the stand-in for the nested subvolume
snapshot /ro /ro2                   # a read-write snapshot of a read-only one
write /ro2/d/f 0 5 36
subvol-delete /sv = ENOTEMPTY
subvol-delete /sv/d = EINVAL
subvol-delete /nope = ENOENT
subvol-delete /ro2
subvol-sync
unlink /sv/nested = EISDIR
subvol-create /gone
create /gone/a
write /gone/a 0 1M 37
subvol-delete /gone
sync
