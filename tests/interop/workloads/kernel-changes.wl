# Run by the kernel (btrsim run --host) on an image ref wrote: changes ref must read back.
mkdir /k
create /k/new
write /k/new 0 300K 11
write /k/new 100K 5 12
mkdir /k/sub
rename /k/new /k/sub/moved
create /k/small
write /k/small 0 40 13
setxattr /k/small user.kernel "set by the kernel"
link /k/small /k/small-link
symlink sub/moved /k/sym
truncate /k/sub/moved 150000
