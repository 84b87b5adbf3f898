# mutant_args.sh - catch_args NAME: the campaign arguments that catch the
# deliberately broken build NAME (make mutants; ref/mutant.h), sourced by
# test_campaign.sh (each caught, minimized) and test_memo.sh (the same
# verdicts with and without the memo).
# Those of the commit path by its first workloads, snap-rw by the subvolume
# set's snapshots (snapshot /S /U ro).  Not snap-no-commit: it shows only in
# a snapshot made inside its own source in the transaction that changed a
# source tree of two levels or more.  No campaign makes one: a bounded
# workload follows each operation with a persistence point (a commit in ref)
# and its setup snapshots /S into the top level; random workloads never
# snapshot into the source's own subvolume (traces/README.md).  Neither
# --seq 1 --subvol nor --random with --subvol finds it, with 16k or 4k nodes;
# test_explore.sh catches it with such a workload.  qgroup-no-inherit by the
# subvolume set with quotas on (its setup snapshots /S as /T: ref's
# accounting then loses track of the numbers and marks them inconsistent).
# The log's by seq-1's data ops (create, write, fallocate; fsync writes the
# log tree by default), the directory ranges' by its name ops (create,
# unlink, rename, with a directory fsync as persistence point) and replay's
# unlinking too, whose
# reproducers fail with the log again.
catch_args() {
	case $1 in
	snap-rw) echo --seq 1 --subvol --ops snapshot ;;
	qgroup-no-inherit) echo --seq 1 --subvol --quota --ops snapshot ;;
	log-no-dir-ranges | log-no-unlink) echo --seq 1 --ops create,unlink,rename ;;
	log-*) echo --seq 1 --ops create,write,fallocate ;;
	dedupe-no-compare) echo --seq 1 --ops dedupe ;;
	*) echo --seq 1 --limit 40 ;;
	esac
}
