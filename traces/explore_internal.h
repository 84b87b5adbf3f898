/*
 * explore_internal.h - what explore.c (recording, replay, crash points) and
 * explore_judge.c (one crash state: mount, check, oracle) share.
 */
#ifndef BTRSIM_TRACES_EXPLORE_INTERNAL_H
#define BTRSIM_TRACES_EXPLORE_INTERNAL_H

#include "traces/explore.h"
#include "traces/model.h"
#include "ref/ref.h"

#include <stdbool.h>
#include <stddef.h>

/* Where each operation's IO lies in the log, and whether it promised
 * durability on return. */
struct span {
	size_t start, end;
	bool persist; /* a commit that had returned holds the ops up to here */
	size_t line;
	/* With treelog: the op was an fsync that synced the log (no commit),
	 * the names of the inode it logged (model_names_of, after it) and its
	 * number in the model (model_ino_of). */
	bool log_sync;
	char *logged;
	uint32_t ino;
	/* A receive (explore_receive.c): the subvolume it makes (escaped),
	 * the description before it with that subvolume empty and its lines
	 * left out, the subvolumes then, and those after it with the
	 * subvolume not yet read-only; NULL for other ops. */
	char *rx_path, *rx_text, *rx_subv, *rx_rw_subv;
};

/* With treelog: the model's identities after j operations (model_inos). */
struct idents {
	struct model_ino *v;
	size_t n;
};

struct ex {
	const struct explore_opts *o;
	struct explore_result *res;
	const struct wl_workload *w;
	struct span *spans; /* nops + 1: the last is the final unmount */
	size_t nspans;
	char **snaps;       /* snaps[j]: the model's description after j operations */
	struct idents *ids; /* ids[j]: with treelog, the identities after j operations; else NULL */
	char **subv;        /* subv[j]: its subvolumes after j operations (model_describe_subvols);
			     * NULL when the workload has no subvolume operation */
	uint64_t rng;
	uint32_t sector;
	bool sim_faults;    /* the plan damages disks: detected corruption is no violation */
	bool stop;          /* the sink or stop_first asked to stop */
	/* Injected damage on the replayed disks (explore.c): damage_durable once
	 * a fault changed what a disk holds for every crash state from then on
	 * (a flipped or misdirected write that reached the media, a lost write,
	 * bits flipped at rest, latent sectors, a lost device); dmg the damaged
	 * writes still in a disk cache, which damage only the states that
	 * persist them. */
	bool damage_durable;
	/* Crash points (flushes and FUA writes) since mkfs before the current one. */
	size_t flushes_before;
	/* The kernel target's state (kernel_internal.h); NULL for ref. */
	struct kern *kern;
	/* explore --check (explore_check.c); NULL without a checker. */
	struct app_check *app;
	struct dmg {
		unsigned disk;
		uint64_t seq; /* in the replaying volume's log */
	} *dmg;
	size_t ndmg, dmg_cap;
};

/* explore_check.c: the checker's mount point and the verdicts by tree
 * (init: 0, or -errno with err set; nothing without o->check_cmd), and the
 * checker's verdict on state v whose description is text (the oracle
 * accepted it). */
int explore_check_init(struct ex *x, char *err, size_t errlen);
void explore_check_free(struct ex *x);
enum explore_verdict explore_check_app(const struct ex *x, sim_volume *v, size_t point,
				       const char *text, char *why, size_t whylen);
/* explore_judge.c: the operations a state at log position i may be after:
 * lo (those before the last persistence point that completed) to hi
 * (those that had returned). */
void explore_legal_range(const struct ex *x, size_t i, size_t *lo, size_t *hi);

/* Recording (explore.c), for each target's driver: begin makes the arrays
 * for the workload's operations and the model; each operation j, once run,
 * gives its result (0 or a positive errno), the bytes a failed write put in
 * all the same, where its IO lies in the log, and whether it synced the
 * fsync log (log_sync) or found nothing new to make durable (skipped); end
 * takes the final unmount's IO and frees m.  0 or -errno with err set. */
int explore_rec_begin(struct ex *x, struct model **m, char *err, size_t errlen);
int explore_rec_op(struct ex *x, struct model *m, size_t j, int got, uint64_t written,
		   size_t before, size_t after, bool log_sync, bool skipped, char *err,
		   size_t errlen);
int explore_rec_end(struct ex *x, struct model *m, size_t before, size_t after, bool umounted,
		    char *err, size_t errlen);

/* Judges the crashed volume v at crash point `point`: returns its verdict,
 * with the reason in why (for every verdict but ok).  damaged: injected
 * faults changed what this state's disks hold, so damage that checksums
 * catch (a mount, check or read failing on a checksum or EIO) is the right
 * outcome (detected); without it every such failure is a violation. */
/* explore_logtree.c: whether the recovered description text is legal at crash
 * point `point` with the fsync log replayed on some commit c in [lo, hi]:
 * 1, 0, or -1 out of memory. */
/* receive (explore_receive.c): span j's alternatives from the model before
 * op j, a receive that succeeded (x->snaps and x->subv filled up to j + 1);
 * 0, -EINVAL with why in err (not one subvolume; the model cannot make the
 * part-way state), -ENOMEM. */
int explore_receive_span(struct ex *x, size_t j, const struct model *before,
			 const struct wl_op *op, char *err, size_t errlen);
void explore_receive_free(struct span *s);
/* 1 when text (and subv, unless NULL) is a state a crash inside a receive
 * among ops lo..hi - 1 may leave; 0 when not; -ENOMEM. */
int explore_receive_legal(const struct ex *x, size_t lo, size_t hi, const char *text,
			  const char *subv);
int explore_logtree_legal(const struct ex *x, size_t point, size_t lo, size_t hi, const char *text);
/* The first state the plain comparison may take: none before a log sync
 * that had returned (what it logged must be there; explore_logtree_legal
 * judges the states of earlier commits with the log on top). */
size_t explore_logtree_floor(const struct ex *x, size_t point, size_t lo, size_t hi);

/* The verdict on a recovered state whose tree is text (model_describe's
 * form): whether it is one of the legal states at crash point `point`;
 * subvols(ctx) gives its subvolume lines (model_describe_subvols's form;
 * NULL with err set when they do not read), asked only when needed. */
enum explore_verdict explore_legal(const struct ex *x, size_t point, const char *text,
				   char *(*subvols)(void *ctx, char *err, size_t errlen), void *ctx,
				   bool damaged, char *why, size_t whylen);
/* ref's view of a file system's top subvolume in model_describe's form
 * (NULL with why set when it does not read). */
char *explore_describe_ref(ref_fs *fs, char *why, size_t whylen);
/* Whether a mount, check or read failure's text shows damage that checksums
 * or the device caught (csum, checksum, EIO, no valid superblock). */
bool explore_detected(const char *text);
/* What a crash state's disks alone say when ref judges them (explore_judge.c),
 * the part of a judgement explore_memo.c keeps: ref's mount failing, its
 * check's errors, quota numbers marked stale, the tree not reading, or the
 * tree (and, when asked, the subvolumes) it shows. */
enum judged_kind { JUDGED_MOUNT, JUDGED_CHECK, JUDGED_QUOTA, JUDGED_READ, JUDGED_TREE };
struct judged {
	enum judged_kind kind;
	bool detected;  /* the failure's full text names checksums or EIO (explore_detected) */
	char *why;      /* MOUNT, READ: the error; CHECK: the report's ERROR lines */
	char *text;     /* TREE: explore_describe_ref's description */
	bool has_subv;  /* TREE: the subvolumes were read: */
	char *subv;     /* their lines, or NULL with */
	char *subv_err; /* why they did not read */
};
void judged_free(struct judged *j);
/* The outcome kept for content identity id, or NULL (one kept without
 * subvolumes does not answer need_subv).  Valid until the next put. */
const struct judged *explore_memo_get(struct explore_memo *m, const uint64_t id[2],
				      bool need_subv);
/* Keeps *j (its strings become the memo's, *j is emptied) under id,
 * replacing what was there. */
void explore_memo_put(struct explore_memo *m, const uint64_t id[2], struct judged *j);
/* btrsim check of fs: its error count (or -errno), the report in *report
 * (malloc'd, or NULL when out of memory). */
long explore_ref_check(ref_fs *fs, char **report);
/* The first line where two descriptions differ, as "PATH: expected X,
 * found Y". */
void explore_first_diff(const char *want, const char *got, char *out, size_t len);

enum explore_verdict explore_judge(const struct ex *x, sim_volume *v, size_t point, bool damaged,
				   char *why, size_t whylen);

#endif
