/*
 * explore.h - crash-state exploration: a workload runs on ref over memory
 * disks with every request recorded (mkfs included, from blank disks); then
 * the recorded IO is replayed onto a copy of the disks as mkfs left them, and
 * at every crash point (before each flush and each FUA write on any disk, and
 * at the end) the volatile writes of that moment are kept or dropped in every
 * combination (all subsets while there are at most K of them, seeded samples
 * beyond, and torn multi-sector writes).  On a volume of several disks each
 * disk's cache is crashed independently: the combinations range over the
 * volatile writes of every disk together.  Each crash state must mount, check
 * clean and show a state the oracle allows: the model's state after some
 * operation between the last completed persistence operation (fsync,
 * fdatasync, sync) and the last one started.
 *
 * A crash state is named by its crash point (the index in the IO log of the
 * first request that did not happen) and its picks, the volatile writes that
 * persisted, as text: for each disk that had volatile writes, "DISK:" and the
 * positions of the kept writes in that disk's list of volatile writes
 * (submission order, from 0), "-" for none; a torn write is "POS+SECTORS",
 * its first SECTORS sectors kept.  "0:0,2,5+3 1:-".  The same IO log and the
 * same picks rebuild the same disks (traces/replay.h).
 */
#ifndef BTRSIM_TRACES_EXPLORE_H
#define BTRSIM_TRACES_EXPLORE_H

#include "sim/sim.h"
#include "traces/workload.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct fault_plan;

/* How a crash state came out. */
enum explore_verdict {
	EXPLORE_OK,       /* mounted, checked clean, a legal state */
	EXPLORE_MOUNT,    /* ref could not mount it */
	EXPLORE_CHECK,    /* btrsim check found errors */
	EXPLORE_READ,     /* reading the recovered tree failed */
	EXPLORE_ORACLE,   /* consistent, but not a state the oracle allows */
	EXPLORE_DETECTED, /* corruption a fault plan injected, and detected: not a violation */
	/* the kernel target: the kernel's state is legal, but ref shows
	 * another tree for the same disks, or btrsim check finds errors btrfs
	 * check does not (a finding about ref, not the kernel) */
	EXPLORE_DISAGREE,
	/* legal for the file system, but the application's checker (explore
	 * --check) failed on it, or did not finish in time */
	EXPLORE_APP,
	EXPLORE_NVERDICTS
};
/* "ok", "mount", "check", "read", "oracle", "detected", "disagree", "app". */
const char *explore_verdict_name(enum explore_verdict v);

/* One judged crash state, as the sink sees it. */
struct explore_state {
	size_t k;          /* its number in the run, from 0 */
	size_t point;      /* crash point: index in the IO log */
	const char *picks; /* as described above */
	enum explore_verdict verdict;
	const char *detail; /* why, for any verdict but ok ("" for ok) */
};

/* Where a recorded run goes (traces/store.h records into the database). */
struct explore_sink {
	void *ctx;
	/* Once the workload has run: the IO log from blank disks (mkfs is the
	 * first `mkfs_ios` entries) and every op's result (0 or a positive errno). */
	int (*recorded)(void *ctx, const struct sim_io *log, size_t n, size_t mkfs_ios,
			const int *results, size_t nops);
	/* Each crash state as it is judged.  A nonzero return stops the run. */
	int (*state)(void *ctx, const struct explore_state *st);
};

/* What the workload runs on and the crash states are judged by. */
enum explore_target {
	EXPLORE_REF,    /* ref over memory disks; ref mounts each state */
	/* the running kernel's btrfs over loop devices on FUSE-served sim
	 * disks (traces/kernel.h); the kernel mounts each state, btrfs check
	 * and btrsim check check what it left, ref's view is compared */
	EXPLORE_KERNEL,
};

struct explore_opts {
	enum explore_target target;
	/* With the kernel target: more mount options (NULL: none), how the
	 * FUSE disks behave (enum kdisk_mode, honest by default), and the
	 * time a mount, an unmount, a check or an operation may take before
	 * it counts as a hang (30 s). */
	const char *mount_options;
	int disk_mode;
	unsigned timeout_ms;
	unsigned kernel_jobs; /* states judged side by side (0: one per core, at most 8) */
	uint64_t seed;       /* the sampling and tearing choices, and mkfs's uuids */
	unsigned max_subset; /* all subsets while at most this many writes are volatile (10) */
	unsigned samples;    /* random subsets beyond that (64) */
	unsigned torn;       /* states with one write torn, per crash point (4) */
	uint64_t disk_size;  /* bytes per disk (512 MiB) */
	uint32_t nodesize;   /* of the new file system (16 KiB) */
	unsigned ndisks;     /* disks of the volume (1) */
	uint64_t data_profile, meta_profile; /* BTRFS_BLOCK_GROUP_* for mkfs (single, DUP) */
	size_t skip_ops;     /* no crash points in the IO of the first skip_ops ops (a setup) */
	bool stop_first;     /* stop at the first violation (minimization) */
	bool minimize_picks; /* reduce the first violation's picks to a minimal set (true) */
	/* Each state that passes is judged again with each of its disks lost
	 * (opened degraded): what it shows must be a legal state, or fail to
	 * read (the write hole: a row whose data and parity the crash left
	 * disagreeing loses what the lost disk held); never wrong bytes. */
	bool lose_disk;
	/* fsync through the log tree (true by default, as the kernel's; false:
	 * ref_mount_opts.notreelog, each fsync a commit), judged by the
	 * log's promises (explore_logtree.c) rather than a commit's. */
	bool treelog;
	const struct fault_plan *faults; /* armed while the workload runs (NULL: none) */
	/* An application's checker (explore --check; explore_check.c): run
	 * under sh -c in each state the oracle accepts, mounted through FUSE
	 * on a writable copy; exit 0: consistent.  NULL: none.  The ref
	 * target only.  check_timeout_ms: its time limit (0: none). */
	const char *check_cmd;
	unsigned check_timeout_ms;
	/* What ref found in crash states already judged, by their disks'
	 * content (explore_memo_new), shared by the runs given it: a state
	 * whose disks an earlier state had takes that outcome instead of being
	 * mounted, checked and read again.  The ref target without --check or
	 * lose_disk; NULL: every state judged afresh. */
	struct explore_memo *memo;
	const struct explore_sink *sink; /* NULL: nothing recorded */
	FILE *log;           /* one line per crash point (NULL: quiet) */
	FILE *progress;      /* a progress line rewritten in place (NULL: none) */
};
/* Every option at its default (those in parentheses above; the rest zero, NULL, false). */
void explore_defaults(struct explore_opts *o);

/* A memo of judged crash states (explore_memo.c) holding at most about
 * `budget` bytes (the least recently used outcomes dropped first); NULL
 * when out of memory.  The states it answered are counted in
 * explore_result.cached. */
struct explore_memo;
struct explore_memo *explore_memo_new(size_t budget);
void explore_memo_free(struct explore_memo *m);
#define EXPLORE_MEMO_BUDGET (UINT64_C(64) << 20)

/* The disks' sector under o: 4096, but 512 for the kernel target's tearing
 * disks (kernel.h, KDISK_TEAR). */
uint32_t explore_sector_size(const struct explore_opts *o);

#define EXPLORE_MAX_FAULTS 32

struct explore_result {
	size_t ops, crash_points, states, violations, detected;
	/* With lose_disk: the states judged again with a disk lost, and of
	 * them those whose committed data a lost disk made unreadable (the
	 * RAID5/6 write hole: detected, never wrong). */
	size_t degraded_states, write_hole;
	/* The kernel target: states whose mount, walk, unmount or check did
	 * not finish in time (each also a violation).  cached: states judged on
	 * what an earlier state with the same disks showed (the kernel
	 * target's own cache, or ref's memo). */
	size_t hangs, cached;
	/* explore --check: states the checker ran in, states given the verdict
	 * of an earlier one with the same tree, and checker runs that hung. */
	size_t checked, check_cached, check_hangs;
	double seconds;
	/* The first violation: its state, verdict and picks (minimized when
	 * minimize_picks is set), and the text: where, and the diff. */
	size_t violation_k, violation_point;
	/* Where it lies: the operations that had returned before the crash
	 * point (all n: in the final unmount), and how many flushes and FUA
	 * writes since mkfs came before it. */
	size_t violation_ops_done, violation_flushes;
	size_t ios; /* requests in the IO log, mkfs's included */
	enum explore_verdict violation_verdict;
	char violation_picks[512];
	char violation[4096];
	int *results;        /* each op's result (0 or a positive errno); free() it */
	/* With a fault plan: how often each of its points was hit and fired
	 * while the workload ran (a point appears once in a plan, and the
	 * catalogue has fewer than EXPLORE_MAX_FAULTS). */
	struct explore_fault_count {
		char point[48];
		uint64_t hits, fired;
	} faults[EXPLORE_MAX_FAULTS];
	size_t nfaults;
};

/*
 * Tune the process's allocator to keep freed memory (explore_run calls it; a
 * fuzzing harness too): a loop that builds and frees file systems otherwise
 * pays page faults for the same memory every round.
 */
void explore_keep_freed_memory(void);

/* The volume a run starts from: o's blank disks (o->ndisks of o->disk_size,
 * o->seed), mkfs with o's node size and profiles, flushed; every request
 * recorded from the first (*mkfs_ios of them are mkfs's).  0 or -errno. */
int explore_make_volume(const struct explore_opts *o, sim_volume **out, size_t *mkfs_ios,
			char *err, size_t errlen);

/* Runs w and explores its crash states.  Returns 0 when every state is
 * consistent, 1 when some is not (res->violation says which), or -errno
 * when the exploration itself could not run (message in err).  Free
 * res->results afterwards, whatever the return. */
int explore_run(const struct wl_workload *w, const struct explore_opts *o,
		struct explore_result *res, char *err, size_t errlen);

/* Re-issues one recorded request that changes a disk (write, FUA write,
 * flush, discard; a failed or lost one changes nothing) on v: how the
 * explorer and traces/replay.c rebuild disks from an IO log.  0 or -errno. */
int explore_replay_io(sim_volume *v, const struct sim_io *io);

#endif
