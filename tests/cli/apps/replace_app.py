#!/usr/bin/env python3
"""replace_app.py [--fsync]: replaces the file `data` (in the working directory) with new
content the usual way - write data.tmp, rename it over data, fsync the directory - but
without fsync of data.tmp before the rename unless --fsync: the bug ALICE found in many
applications.  After a power loss `data` may then be empty (btrfs, like ext4, orders no
data before a rename)."""
import os
import sys

fd = os.open("data.tmp", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"new\n" * 1000)
if "--fsync" in sys.argv:
    os.fsync(fd)
os.close(fd)
os.rename("data.tmp", "data")
d = os.open(".", os.O_RDONLY)
os.fsync(d)
os.close(d)
