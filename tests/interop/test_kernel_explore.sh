#!/bin/sh
# The kernel's btrfs as the crash harness's target (btrsim explore --target
# kernel): the workload runs on the kernel's mount of loop devices over
# FUSE-served sim disks, every crash state is mounted by the kernel, checked
# by btrfs check and btrsim check, and compared with ref's view.
#   - with honest disks the workloads here show no violation;
#   - disks that acknowledge flushes without persisting, that drop the flush
#     of a FUA write, or that tear 4 KiB writes at 512 bytes make the same
#     workload report violations (the harness catches what it exists for);
#   - every loop device, mount and temporary directory is released, after a
#     violation, a bad argument, and SIGTERM in the middle of a run.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip kernel-explore "$LOOP_WHY"
	exit 0
fi
if [ ! -c /dev/fuse ]; then
	skip kernel-explore "no /dev/fuse"
	exit 0
fi

# What a run may leave behind: loop devices over btrsim's files, mounts of
# its directories, the directories themselves (by the kernel target's names
# only: other suites, running meanwhile, mount images of their own).
leftovers() {
	{
		losetup -a 2>/dev/null | grep -E 'btrsim-(imgs|disks)\.'
		grep -E 'btrsim-(judge|mnt|disks)\.' /proc/mounts
		ls -d "${TMPDIR:-/tmp}"/btrsim-disks.* "${TMPDIR:-/tmp}"/btrsim-mnt.* \
			"${TMPDIR:-/tmp}"/btrsim-judge.* /dev/shm/btrsim-imgs.* 2>/dev/null
	} | sort
}
leftovers >"$T/before"
released() {
	leftovers >"$T/after"
	cmp -s "$T/before" "$T/after" ||
		fail "left behind: $(comm -13 "$T/before" "$T/after" | head -5 | tr '\n' ' ')"
}

# A file fsynced, a new name in a directory fsynced (the fsync log's two
# promises), then a subvolume and a snapshot (commits).
cat >"$T/w1.wl" <<'EOF'
mkdir /d
create /d/a 0644
write /d/a 0 16K 1
fsync /d/a
create /d/b
write /d/b 0 8K 2
rename /d/b /d/c
fsync /d
EOF
cat >"$T/w2.wl" <<'EOF'
subvol-create /sv
create /sv/f
write /sv/f 0 20K 3
subvol-create /sv/nested
create /sv/nested/x
write /sv/nested/x 0 10 4
snapshot /sv /snap ro
write /sv/f 0 100 5
fsync /sv/f
EOF
SMALL="--max-subset 4 --samples 8 --torn 1"

run kernel-honest-fsync 0 "$BTRSIM" explore --target kernel $SMALL "$T/w1.wl"
out_has '^8 operations, [0-9]+ crash points, [0-9]+ crash states .*, 0 violations'
released
done_check

run kernel-honest-subvol 0 "$BTRSIM" explore --target kernel $SMALL "$T/w2.wl"
out_has '^9 operations, .*, 0 violations'
released
done_check

# Two disks in RAID1, each crashing on its own.
run kernel-honest-raid1 0 "$BTRSIM" explore --target kernel --disks 2 $SMALL "$T/w1.wl"
out_has '^8 operations, .*, 0 violations'
released
done_check

# Misbehaving disks: violations, and a minimized reproducer that says how
# to run it again.
run kernel-no-flush 1 "$BTRSIM" explore --target kernel --disk-mode no-flush $SMALL "$T/w1.wl"
out_has ', [1-9][0-9]* violations?'
err_has 'oracle: no legal state|mount: the kernel does not mount'
out_has '# again: btrsim explore .* --target kernel --disk-mode no-flush'
released
done_check

run kernel-no-fua 1 "$BTRSIM" explore --target kernel --disk-mode no-fua --no-minimize $SMALL \
	"$T/w1.wl"
out_has ', [1-9][0-9]* violations?'
released
done_check

# Tearing needs the torn states (a superblock cut at 512 bytes).
run kernel-tear 1 "$BTRSIM" explore --target kernel --disk-mode tear --no-minimize \
	--max-subset 2 --samples 2 --torn 8 "$T/w1.wl"
out_has ', [1-9][0-9]* violations?'
released
done_check

# A disk that stops answering: the first fsync hangs in the kernel; after
# --timeout the run says so, aborts the FUSE connection (what waits lets go)
# and releases everything.
run kernel-stall 1 "$BTRSIM" explore --target kernel --disk-mode stall --timeout 3 "$T/w1.wl"
err_has 'did not return in time \(a hang in the kernel\)'
released
done_check

# A fault plan's sim lines act on the disks the kernel writes: every other
# write stored with a bit flipped.  Btrfs's checksums must catch what a state
# reads (detected), never show it as good (a violation).
echo 'sim flip-on-write,disk=0,p=0.5,bits=1' >"$T/flip.plan"
run kernel-bitflip 0 "$BTRSIM" explore --target kernel --faults "$T/flip.plan" $SMALL "$T/w1.wl"
out_has '^8 operations, .*, 0 violations, [1-9][0-9]* with injected damage detected'
released
done_check

# Bad arguments: refused before anything is set up.
run kernel-bad-mode 2 "$BTRSIM" explore --target kernel --disk-mode sometimes "$T/w1.wl"
err_has "--disk-mode takes honest, no-flush, no-fua, tear or stall"
done_check
run kernel-bad-target 2 "$BTRSIM" explore --target qemu "$T/w1.wl"
err_has "--target takes ref or kernel"
done_check
run kernel-mode-needs-kernel 1 "$BTRSIM" explore --disk-mode no-flush "$T/w1.wl"
err_has "--disk-mode is for --target kernel"
done_check
run kernel-bad-timeout 2 "$BTRSIM" explore --target kernel --timeout 0 "$T/w1.wl"
err_has "--timeout takes 1 to 3600 seconds"
done_check
run kernel-bad-options 2 "$BTRSIM" explore --target kernel --mount-options "a b" "$T/w1.wl"
err_has "--mount-options takes one -o list"
done_check
run kernel-no-lose-disk 1 "$BTRSIM" explore --target kernel --lose-disk "$T/w1.wl"
err_has "--lose-disk judges with ref's degraded mounts"
released
done_check
run kernel-bad-mount-option 1 "$BTRSIM" explore --target kernel --mount-options nosuchoption \
	"$T/w1.wl"
err_has "does not mount|mount .*: Invalid argument"
released
done_check

# interrupted NAME SIGNAL: a run ended by SIGNAL in the middle of judging
# leaves nothing behind: after SIGTERM it releases everything itself; after
# SIGKILL nothing of it runs, but its mounts die with its mount namespace,
# autoclear frees their loop devices, and its workers, seeing it gone,
# remove its directories.
interrupted() {
	NAME=$1
	BAD=0
	"$BTRSIM" explore --target kernel --max-subset 10 "$T/w1.wl" >"$OUT" 2>"$ERR" &
	pid=$!
	sleep 2
	kill -"$2" "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	case $2 in
	TERM) [ "$rc" -eq 143 ] || [ "$rc" -eq 0 ] ||
		fail "exit $rc after SIGTERM; stderr: $(head -c 300 "$ERR")" ;;
	esac
	sleep 2
	released
	done_check
}
interrupted kernel-sigterm TERM
interrupted kernel-sigkill KILL

# One worker or three: the violations are found all the same.  (The counts
# are not compared: the kernel's writes between two flushes vary from run
# to run, and with them the number of states.)
run kernel-jobs-1 1 "$BTRSIM" explore --target kernel --jobs 1 --disk-mode no-fua --no-minimize \
	$SMALL "$T/w1.wl"
out_has ', [1-9][0-9]* violations?'
done_check
run kernel-jobs-3 1 "$BTRSIM" explore --target kernel --jobs 3 --disk-mode no-fua --no-minimize \
	$SMALL "$T/w1.wl"
out_has ', [1-9][0-9]* violations?'
released
done_check
run kernel-bad-jobs 2 "$BTRSIM" explore --target kernel --jobs 9 "$T/w1.wl"
err_has "--jobs takes 1 to 8"
done_check

# Recorded in the trace store: listed with its target, replayed on the
# kernel, and a crash state rebuilt as an image from the stored log.
run kernel-db 0 "$BTRSIM" explore --target kernel --db "$T/k.db" $SMALL "$T/w1.wl"
out_has 'recorded as run 1'
done_check
run kernel-db-tear 1 "$BTRSIM" explore --target kernel --disk-mode tear --no-minimize \
	--max-subset 2 --samples 2 --torn 8 --db "$T/k.db" "$T/w1.wl"
out_has 'recorded as run 2'
err_has 'superblock checksum mismatch|the kernel says'
done_check
run kernel-runs 0 "$BTRSIM" runs --db "$T/k.db"
out_has '^1 +explore:kernel '
out_has '^2 +explore:kernel '
done_check
run kernel-report 0 "$BTRSIM" report --db "$T/k.db" -o "$T/report"
grep -q 'explore:kernel' "$T/report/index.html" || fail "the report does not name the kernel runs"
done_check
run kernel-replay 0 "$BTRSIM" replay --db "$T/k.db" 1
out_has 'run 1 replayed on the kernel: 8 op results the same; [0-9]+ flushes as recorded'
released
done_check
k=$(sq "$T/k.db" "SELECT k FROM crash_states WHERE run_id = 2 AND verdict = 'mount' LIMIT 1")
run kernel-crash-state 0 "$BTRSIM" replay --db "$T/k.db" 2 --crash-state "$k" --out "$T/cs"
out_has "recorded verdict: mount"
# the rebuilt image is the state the kernel refused: so does btrfs check
btrfs check --readonly "$T/cs/disk0.img" >/dev/null 2>&1 && fail "btrfs check passes the torn state"
done_check

# A violation's stand-alone shell script: every kind of operation it
# translates (tests/interop/workloads/kernel-script.wl), run for real here,
# gives the result the kernel gave under btrsim (no FAILED, no SUCCEEDED).
W="$(dirname "$0")/workloads/kernel-script.wl"
run kernel-script-record 1 "$BTRSIM" explore --target kernel --disk-mode no-flush --no-minimize \
	--max-subset 2 --samples 2 --torn 0 --db "$T/s.db" "$W"
out_has 'as a shell script for the kernel'
done_check
run kernel-script-print 0 "$BTRSIM" violations --db "$T/s.db" --script 1
out_has '^#!/bin/sh'
out_has 'the power fails'
out_has 'disks misbehaved \(--disk-mode no-flush\)'
cp "$OUT" "$T/script.sh"
done_check
if command -v xfs_io >/dev/null 2>&1 && command -v setfattr >/dev/null 2>&1; then
	run kernel-script-runs 0 sh "$T/script.sh"
	grep -E 'FAILED|SUCCEEDED' "$OUT" && fail "a result differs from btrsim's: $(grep -E 'FAILED|SUCCEEDED' "$OUT" | head -3)"
	released
	done_check
else
	skip kernel-script-runs "no xfs_io or setfattr (xfsprogs, attr)"
fi
run kernel-no-script 1 "$BTRSIM" violations --db "$T/k.db" --script 999
err_has 'no such violation'
done_check

# A campaign on the kernel: seq-1 workloads, each recorded as a run.
run kernel-campaign 0 "$BTRSIM" campaign --target kernel --seq 1 --limit 2 --max-subset 2 \
	--samples 2 --torn 1 --db "$T/c.db"
out_has '^2 workloads, [0-9]+ crash states .*, 0 violations'
released
done_check
