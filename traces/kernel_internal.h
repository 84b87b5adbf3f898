/*
 * kernel_internal.h - what the kernel target's recording (kernel_record.c)
 * and judge (kernel_judge.c) share with explore.c.
 */
#ifndef BTRSIM_TRACES_KERNEL_INTERNAL_H
#define BTRSIM_TRACES_KERNEL_INTERNAL_H

#include "traces/explore_internal.h"
#include "traces/kernel.h"

/* What the kernel made of one state's disks (keyed by a hash of every
 * disk's durable media): crash states that persist different writes often
 * leave the same disks, and the kernel need not mount them twice.  Only the
 * oracle's comparison depends on the crash point; it is made each time. */
struct kseen {
	uint64_t hash;
	/* OK, or how the kernel failed (mount, read) with why */
	enum explore_verdict fail;
	char *why;
	char *text, *subv; /* what it showed (with fail OK) */
	/* what the checks and ref said of a legal state: OK, check or disagree */
	enum explore_verdict after;
	char *after_why;
	unsigned hangs; /* mounts, unmounts or checks that did not finish in time */
};

/* One state's images to view: DIR/disk0.. of ndisks disks of sector bytes,
 * mounted at mnt with opts. */
struct kview_in {
	const char *imgdir, *mnt, *opts;
	/* held (flock) from the loop devices' attaching to their detaching:
	 * one state of a run in the kernel at a time (below) */
	const char *lock;
	unsigned ndisks;
	uint32_t sector;
	unsigned timeout_ms;
	bool want_subvols; /* the subvolume lines too */
	/* mount and unmount in this process, not in a child with the timeout:
	 * a worker, whose parent times the whole view out instead */
	bool direct;
};
/* Fills view (all but its hash) from the images (kernel_view.c). */
void kview(const struct kview_in *in, struct kseen *view);

/* A worker process that views states (kernel_workers.c): its own image
 * directory and mount point, a request and an answer at a time. */
struct kworker {
	pid_t pid;
	int to, from;
	char imgdir[256], mnt[256];
	bool busy;
};
#define KERN_MAX_WORKERS 8

/* A state handed to the workers (explore.c queues them, in order). */
struct kticket {
	bool ready;       /* judged at once (its disks seen before, or a failure) */
	enum explore_verdict verdict; /* when ready */
	char *why;        /* when ready: malloc'd */
	int worker;       /* else: the worker viewing it */
	uint64_t hash;
	bool damaged;
};

/* The kernel target's state for one run (struct ex's kern). */
struct kern {
	char opts[1024];    /* the mount options: the workload's, notreelog, the user's */
	unsigned timeout_ms;
	char imgdir[256];   /* where a state's images are written (tmpfs when there is one) */
	char mnt[256];      /* where a state is mounted */
	/* The run's kernel lock (a file in imgdir): the crash states of one run
	 * share its fsid, and the kernel mounts one file system of an fsid at a
	 * time well (two at once take its temp-fsid path, which failed them:
	 * "failed to init sysfs fsid interface: -17", "dev_item UUID does not
	 * match metadata fsid"), nor does btrfs check's device scan tell two
	 * states apart.  Workers overlap only the rest: ref's views, btrsim
	 * check, the images. */
	char lock[300];
	struct kseen *seen; /* open addressing, cap a power of two */
	size_t nseen, seencap;
	struct kworker w[KERN_MAX_WORKERS];
	unsigned nworkers;  /* started (0: states are viewed in this process) */
	unsigned jobs;      /* workers to start */
};

/* Runs x's workload on the kernel over FUSE-served sim disks: *vol the
 * volume with the whole IO log (mkfs.btrfs's first, *mkfs_ios entries),
 * *base a copy of it as mkfs left it; x's spans and model states filled as
 * explore.c's record does for ref.  0 or -errno with err set (-EOPNOTSUPP
 * when this machine cannot run the kernel target: the reason in err). */
int kernel_record(struct ex *x, sim_volume **vol, sim_volume **base, size_t *mkfs_ios, char *err,
		  size_t errlen);

/* Judges the crashed volume v with the kernel (explore_judge's contract). */
enum explore_verdict kernel_judge(const struct ex *x, sim_volume *v, size_t point, bool damaged,
				  char *why, size_t whylen);

/* The workers (kernel_workers.c): started when first needed (after the
 * recording: nothing of the FUSE server is forked), stopped by kern_free. */
int kworkers_start(struct kern *k, char *err, size_t errlen);
void kworkers_stop(struct kern *k);
/* A free worker's index, or -1 when all are busy. */
int kworkers_free(const struct kern *k);
/* Hands worker i the state whose images are in its imgdir; its answer is
 * read by kworker_answer, which fills view (all but the hash).  0 or -errno
 * (the worker is gone: respawned for the next state). */
int kworker_ask(struct kern *k, int i, const struct kview_in *in, char *err, size_t errlen);
int kworker_answer(struct kern *k, int i, struct kseen *view, char *err, size_t errlen);
/* How long a worker may take over one state before it counts as a hang:
 * its mount, walk, unmount and checks, each within the timeout. */
#define KWORKER_TIMEOUT_MS(timeout_ms) (4 * (timeout_ms) + 10000)

/* The queued judging of explore.c: kernel_submit takes the crashed volume v
 * (the caller closes it after): a ticket judged at once (cached disks) or
 * handed to a free worker (kworkers_free must have one); kernel_complete
 * waits for its answer and gives the verdict at crash point `point` (why
 * filled), which only then matters.  kernel_parallel: whether states go to workers at all. */
bool kernel_parallel(struct ex *x);
void kernel_submit(struct ex *x, sim_volume *v, bool damaged, struct kticket *t);
enum explore_verdict kernel_complete(struct ex *x, struct kticket *t, size_t point, char *why,
				     size_t whylen);

/* Sets up k for judging (temporary directories); frees it. */
int kern_init(struct kern *k, const struct ex *x, char *err, size_t errlen);
void kern_free(struct kern *k);

#endif
