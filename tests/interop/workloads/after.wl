# Run by ref on an image the kernel changed last: ref writes on top of the kernel's trees.
mkdir /r
create /r/f
write /r/f 0 70K 21
link /r/f /r/g
rename /r /r2
mkdir /r2/deeper
create /r2/deeper/x
write /r2/deeper/x 4095 2 22
setxattr /r2/f user.ref "from ref"
