#!/bin/sh
# The btrsim command's conventions: help, version, usage errors (exit 2),
# failures (exit 1, one line), as btrfs-progs behaves.
. "$(dirname "$0")/lib.sh"

run help-long 0 "$BTRSIM" --help
out_has '^usage: btrsim'; out_has 'demo'; err_empty; done_check

run help-short 0 "$BTRSIM" -h
out_has '^usage: btrsim'; done_check

run no-arguments 2 "$BTRSIM"
err_has '^usage: btrsim'; out_empty; done_check

run version-option 0 "$BTRSIM" --version
out_has '^btrsim v[0-9]+\.[0-9]+\.[0-9]+ '; err_empty; done_check

run version-command 0 "$BTRSIM" version
out_has '^btrsim v[0-9]'; done_check

run version-extra-argument 2 "$BTRSIM" version now
err_has 'takes no arguments'; done_check

run help-command 0 "$BTRSIM" help demo
out_has '^usage: btrsim demo'; out_has '--seed'; err_empty; done_check

run help-unknown-command 2 "$BTRSIM" help nosuch
err_has 'unknown command'; out_empty; done_check

run help-two-names 2 "$BTRSIM" help demo demo
err_has 'takes one command name'; done_check

run unknown-command 2 "$BTRSIM" nosuch
err_has "unknown command 'nosuch'"; err_has '^usage: btrsim'; out_empty; done_check

run unknown-global-option 2 "$BTRSIM" --bogus
err_has "unknown option '--bogus'"; out_empty; done_check

run subcommand-help 0 "$BTRSIM" demo --help
out_has '^usage: btrsim demo'; err_empty; done_check

run subcommand-bad-option 2 "$BTRSIM" demo --bogus
err_has "^btrsim demo: unknown option '--bogus'"; err_has '^usage: btrsim demo'; out_empty; done_check

run subcommand-missing-value 2 "$BTRSIM" demo --seed
err_has '^btrsim demo:'; err_has '^usage: btrsim demo'; done_check

run bad-seed 2 "$BTRSIM" demo --seed abc
err_has "bad seed 'abc'"; done_check

run negative-seed 2 "$BTRSIM" demo --seed -1
err_has "bad seed"; done_check

run zero-disks 2 "$BTRSIM" demo --disks 0
err_has '--disks takes 1 to 16'; done_check

run too-many-disks 2 "$BTRSIM" demo --disks 17
err_has '--disks takes 1 to 16'; done_check

run bad-sector-size 2 "$BTRSIM" demo --sector-size 1000
err_has '--sector-size takes 512 or 4096'; done_check

run stray-argument 2 "$BTRSIM" demo extra
err_has "unexpected argument 'extra'"; done_check

run failure-is-one-line 1 "$BTRSIM" demo --seed 1 --report /proc/btrsim-no/such
err_has '^btrsim demo: cannot write the report in /proc/btrsim-no/such'; err_lines 1; done_check
