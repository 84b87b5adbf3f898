#!/usr/bin/env python3
"""replace_check.py: `data` holds the old content or the new, whole (replace_app.py's promise)."""
import sys

b = open("data", "rb").read()
if b not in (b"old\n" * 1000, b"new\n" * 1000):
    sys.exit("data is neither old nor new: %d bytes, %r..." % (len(b), b[:16]))
