# Bad input: the errnos Linux gives, and nothing changes.
mkdir /d
create /d/f
write /d/f 0 10 1
mkdir /d = EEXIST
mkdir / = EEXIST
mkdir /d/. = EEXIST
mkdir /d/.. = EEXIST
mkdir /missing/x = ENOENT
mkdir /d/f/x = ENOTDIR
create /xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = ENAMETOOLONG
create /yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy
rmdir /d = ENOTEMPTY
rmdir /d/f = ENOTDIR
rmdir /d/. = EINVAL
rmdir /d/.. = ENOTEMPTY
rmdir / = EBUSY
unlink /d = EISDIR
unlink /d/missing = ENOENT
write /d 0 1 1 = EISDIR
write /d/f 0x7fffffffffffff00 4096 1 = EINVAL
truncate /d 0 = EISDIR
fallocate /d/f 0 10 punch-hole
rename /d /d/inside = EINVAL
link /d /dlink = EPERM
link /d/f /d/f = EEXIST
setxattr /d/f user.a b
removexattr /d/f user.nope = ENODATA
rename /d/f/ /g = ENOTDIR
truncate /missing 0xffffffffffffffff = EINVAL   # the length is checked before the path
fallocate /missing 0 0 = ENOENT                 # the file is opened before the range is checked
fallocate /d/f 0 0 = EINVAL
utimes /missing omit omit                       # nothing to change: not even a lookup
