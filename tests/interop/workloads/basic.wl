# Files, directories, links and attributes: the everyday operations.
mkdir /a
mkdir /a/b 0700
create /a/f
write /a/f 0 100 1                  # inline
create /a/g 0600
write /a/g 0 200K 2                 # regular extents
write /a/g 50000 3000 3             # overwrite in the middle: splits an extent
write /a/g 300K 10 4                # past the end: a hole, then data
link /a/g /a/b/g2
symlink ../a/f /a/b/s
symlink /nowhere /dangling
setxattr /a/f user.one "first value"
setxattr /a/f user.two 0x00ff00ff
setxattr /a/f user.one "replaced"
removexattr /a/f user.two
chmod /a/f 0751
chown /a/g 1000 100
utimes /a/b 1700000000.5 1600000000
rename /a/f /a/b/f
rename /a/b/g2 /a/g noreplace = EEXIST
rename /a/g /a/b/g2 exchange
mkdir /c
rename /c /a/b/c
fsync /a/b/f
