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
};

/* The kernel target's state for one run (struct ex's kern). */
struct kern {
	char opts[1024];    /* the mount options: the workload's, notreelog, the user's */
	unsigned timeout_ms;
	char imgdir[256];   /* where a state's images are written (tmpfs when there is one) */
	char mnt[256];      /* where a state is mounted */
	struct kseen *seen; /* open addressing, cap a power of two */
	size_t nseen, seencap;
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

/* Sets up k for judging (temporary directories); frees it. */
int kern_init(struct kern *k, const struct ex *x, char *err, size_t errlen);
void kern_free(struct kern *k);

#endif
