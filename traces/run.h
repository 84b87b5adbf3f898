/*
 * run.h - running workloads (traces/workload.h) on a target and checking
 * each operation's result against the errno the workload expects.
 *
 * Two targets run the same operations:
 *  - ref: the reference Btrfs (ref/vfs.h) on a sim volume (run_ref.c);
 *  - host: a directory of the running kernel, typically a btrfs mounted over
 *    a loop device (run_host.c), through the system calls, with every path
 *    resolved inside that directory (openat2 RESOLVE_IN_ROOT), so that a
 *    workload can never reach outside it.
 * The kernel is the judge: a workload run on the host can be annotated with
 * the errno of every operation (wl_run's `annotate`), and the annotated
 * workload run on ref must give the same errnos, operation by operation.
 */
#ifndef BTRSIM_TRACES_RUN_H
#define BTRSIM_TRACES_RUN_H

#include "traces/workload.h"

#include <stdbool.h>
#include <stdio.h>

/* Executes one operation; returns 0 or a negative errno (with a message in
 * err when the target has one).  `crash` and `mark` are the runner's. */
typedef int (*wl_exec_fn)(void *target, const struct wl_op *op, char *err, size_t errlen);

/* What `crash` does on a target that supports it (NULL: unsupported, the
 * run fails at a crash line). */
typedef int (*wl_crash_fn)(void *target, char *err, size_t errlen);

struct wl_run_opts {
	FILE *log;          /* one line per operation and result (NULL: quiet) */
	FILE *annotate;     /* when set: every op written back with "= ERRNO" as it came out */
	bool keep_going;    /* report every mismatch instead of stopping at the first */
	bool record;        /* compare nothing: the results are what `annotate` writes */
	wl_crash_fn crash;  /* the target's power loss */
};

struct wl_run_result {
	size_t ops;         /* operations run */
	size_t mismatches;  /* results that differed from the expectation */
	size_t crashes;
};

/* Runs w on a target.  Returns 0 when every result matched its expectation,
 * 1 when some did not (a line "FILE:LINE: OP: expected X, got Y (message)"
 * on stderr-like `err` for the first), or a negative errno when the run could
 * not go on (the target failed in a way no workload expects, e.g. EIO from
 * the device). */
int wl_run(const struct wl_workload *w, wl_exec_fn exec, void *target,
	   const struct wl_run_opts *opts, struct wl_run_result *res, char *err, size_t errlen);

/* ---- Targets ---- */

/* ref: target is a ref_fs * mounted with ref_mount. */
int wl_exec_ref(void *fs, const struct wl_op *op, char *err, size_t errlen);
/* The same; a write that fails part-way sets *written to the bytes from
 * op->off that are in the file all the same (0 for other operations): the
 * oracle's model takes those, not "nothing changed". */
int wl_exec_ref_partial(void *fs, const struct wl_op *op, uint64_t *written, char *err,
			size_t errlen);

/* host: target is a struct wl_host opened with wl_host_open. */
struct wl_host {
	int rootfd;       /* O_PATH of the directory that stands for "/" */
	char *root;       /* its path */
};
int wl_host_open(const char *dir, struct wl_host *h, char *err, size_t errlen);
void wl_host_close(struct wl_host *h);
int wl_exec_host(void *host, const struct wl_op *op, char *err, size_t errlen);
/* The host's receive: `btrfs receive` of the stream's len bytes into the
 * directory dirfd (run_host_receive.c); 0, or the errno its last ERROR line
 * names (EIO when none) with that line in err. */
int wl_host_receive(int dirfd, const uint8_t *stream, size_t len, char *err, size_t errlen);

/* ---- Random workloads ---- */

/* The most operations one workload may have (each is held in memory until
 * printed: about 300 MB at this bound). */
#define WL_GEN_MAX_OPS 1000000u

struct wl_gen_opts {
	uint64_t seed;
	size_t ops;          /* how many operations */
	unsigned names;      /* names per directory level to pick from (default 6) */
	unsigned depth;      /* directory depth (default 3) */
	uint64_t max_offset; /* writes and fallocate start below this (default 1 GiB) */
	uint64_t max_len;    /* and are at most this long (default 1 MiB) */
	unsigned bad_percent;/* share of deliberately bad operations (default 5) */
	bool syncs;          /* include fsync, fdatasync and sync (default true) */
	bool subvols;        /* include subvol-create, snapshot, subvol-delete and
			      * subvol-sync, and ops in read-only snapshots (default
			      * false: the mix of the other ops is then as it was) */
	bool quota;          /* start with quota-enable, then the same ops as
			      * without it (default false) */
	bool text;           /* writes with an odd seed write text data (tN, WL_WRITE_TEXT),
			      * for compression; the same ops otherwise (default false) */
	bool defrag;         /* include defrag (default false: the mix of the other ops
			      * is then as it was) */
	bool reflink;        /* include clone, clone-range and dedupe (default false: the
			      * mix of the other ops is then as it was) */
};
/* Fills opts with the defaults (seed and ops left as they are). */
void wl_gen_defaults(struct wl_gen_opts *o);
/* A random workload, a pure function of opts: no expectations (every op
 * "= 0"), to be annotated by a run on the host.  0 or -ENOMEM. */
int wl_generate(const struct wl_gen_opts *o, struct wl_workload *out);
/* (opts.ops above WL_GEN_MAX_OPS is -EINVAL.) */

#endif
