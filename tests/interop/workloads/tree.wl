# A deeper tree, many names and hard links, and removing most of it again.
mkdir /t
mkdir /t/1
mkdir /t/1/2
mkdir /t/1/2/3
mkdir /t/1/2/3/4
create /t/1/2/3/4/leaf
write /t/1/2/3/4/leaf 0 5000 1
link /t/1/2/3/4/leaf /t/l1
link /t/1/2/3/4/leaf /t/1/l2
link /t/1/2/3/4/leaf /t/1/2/l3
rename /t/1/2 /t/1/2/3/4/x = EINVAL
rename /t/1/2/3 /t/moved
rmdir /t/1 = ENOTEMPTY
unlink /t/1/l2
unlink /t/1/2/l3
rmdir /t/1/2
rmdir /t/1
unlink /t/moved/4/leaf
rmdir /t/moved/4
rmdir /t/moved
