/*
 * explore.c - crash-state exploration (see explore.h): record from blank
 * disks, replay onto a copy of the disks as mkfs left them, and at each crash
 * point try the combinations of the volatile writes of every disk; each state
 * is judged by explore_judge.c against the oracle's model (model.c, which
 * knows nothing of ref).
 */
#include "traces/explore_internal.h"
#include "traces/kernel_internal.h"
#include "traces/model.h"
#include "traces/run.h"
#include "faults/plan.h"
#include "ref/mkfs.h"
#include "ref/vfs.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void explore_defaults(struct explore_opts *o)
{
	*o = (struct explore_opts){ 0 };
	o->max_subset = 10;
	o->samples = 64;
	o->torn = 4;
	o->disk_size = UINT64_C(512) << 20;
	o->nodesize = 16384;
	o->ndisks = 1;
	o->data_profile = 0;
	o->meta_profile = BTRFS_BLOCK_GROUP_DUP;
	o->minimize_picks = true;
	o->treelog = true; /* the kernel's default */
	o->timeout_ms = 30000;
	o->check_timeout_ms = 60000;
}

uint32_t explore_sector_size(const struct explore_opts *o)
{
	return o->target == EXPLORE_KERNEL && o->disk_mode == KDISK_TEAR ? 512 : 4096;
}

const char *explore_verdict_name(enum explore_verdict v)
{
	static const char *const names[EXPLORE_NVERDICTS] = { "ok",	"mount",    "check",
							       "read",	"oracle",   "detected",
							       "disagree", "app" };
	return (unsigned)v < EXPLORE_NVERDICTS ? names[v] : "?";
}

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static int fail(char *err, size_t errlen, int e, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -e;
}

/* ---- Recording ---- */

static bool persists(const struct wl_op *op)
{
	/* A subvolume's creation, snapshot and deletion commit before they
	 * return (ref/vfs.h; `btrfs subvolume snapshot` waits for the commit
	 * too); subvol-sync commits only when the cleaner has work.  A write
	 * to a file opened O_SYNC or O_DSYNC syncs it as fsync would. */
	enum wl_kind k = op->kind;
	if (k == WL_WRITE)
		return op->len && (op->flags & (WL_WRITE_SYNC | WL_WRITE_DSYNC));
	if (k == WL_PWRITE)
		return op->vlen && (op->flags & (WL_WRITE_SYNC | WL_WRITE_DSYNC));
	return k == WL_FSYNC || k == WL_FDATASYNC || k == WL_SYNC || k == WL_SUBVOL_CREATE ||
	       k == WL_SNAPSHOT || k == WL_SUBVOL_DELETE || k == WL_BALANCE || k == WL_RECEIVE ||
	       k == WL_DEVICE_REMOVE;
}

/* Whether the workload has subvolume operations: then the oracle compares the
 * subvolumes too (model_describe_subvols). */
static bool has_subvol_ops(const struct wl_workload *w)
{
	for (size_t j = 0; j < w->n; j++)
		if (w->ops[j].kind == WL_SUBVOL_CREATE || w->ops[j].kind == WL_SNAPSHOT ||
		    w->ops[j].kind == WL_SUBVOL_DELETE || w->ops[j].kind == WL_SUBVOL_SYNC ||
		    w->ops[j].kind == WL_RECEIVE)
			return true;
	return false;
}

/* The arrays for the workload's operations and the model at the start. */
int explore_rec_begin(struct ex *x, struct model **mp, char *err, size_t errlen)
{
	struct model *m = model_new();
	size_t n = x->w->n;
	x->spans = calloc(n + 1, sizeof(*x->spans));
	x->snaps = calloc(n + 2, sizeof(*x->snaps));
	if (m && x->o->treelog && (x->ids = calloc(n + 2, sizeof(*x->ids))))
		(void)model_inos(m, &x->ids[0].v, &x->ids[0].n);
	x->res->results = calloc(n ? n : 1, sizeof(int));
	bool subv = has_subvol_ops(x->w);
	if (subv && (x->subv = calloc(n + 2, sizeof(*x->subv))))
		x->subv[0] = model_describe_subvols(m);
	if (!m || !x->spans || !x->snaps || !x->res->results || !(x->snaps[0] = model_describe(m)) ||
	    (x->o->treelog && (!x->ids || !x->ids[0].v)) ||
	    (subv && (!x->subv || !x->subv[0]))) {
		model_free(m);
		return fail(err, errlen, ENOMEM, "%s", "out of memory");
	}
	*mp = m;
	return 0;
}

int explore_rec_op(struct ex *x, struct model *m, size_t j, int got, uint64_t written,
		   size_t before, size_t after, bool log_sync, bool skipped, char *err,
		   size_t errlen)
{
	const struct wl_op *op = &x->w->ops[j];
	int r = 0;
	x->res->results[j] = got;
	x->spans[j] = (struct span){ before, after,
				     persists(op) && got == 0 && !log_sync && !skipped, op->line,
				     log_sync, NULL };
	/* A write that failed part-way (ENOSPC, EDQUOT, EIO): the model
	 * takes the bytes that went in, as a short write. */
	struct wl_op part;
	const struct wl_op *mop = op;
	if (got && written) {
		part = *op;
		part.len = written;
		mop = &part;
	}
	char merr[512];
	/* a receive's part-way states are the model's before it plus one */
	struct model *pre = NULL;
	if (op->kind == WL_RECEIVE && got == 0 && !(pre = model_clone(m)))
		return fail(err, errlen, ENOMEM, "%s", "out of memory");
	if (model_apply(m, mop, mop == op ? got : 0, merr, sizeof(merr))) {
		snprintf(err, errlen, "%s:%zu: the model cannot follow: %s",
			 x->w->name ? x->w->name : "workload", op->line, merr);
		r = -EINVAL;
	} else if (!(x->snaps[j + 1] = model_describe(m)) ||
		   (x->subv && !(x->subv[j + 1] = model_describe_subvols(m))) ||
		   (log_sync && !(x->spans[j].logged = model_names_of(m, op->path))) ||
		   (x->ids && model_inos(m, &x->ids[j + 1].v, &x->ids[j + 1].n))) {
		r = fail(err, errlen, ENOMEM, "%s", "out of memory");
	}
	if (!r && pre) {
		r = explore_receive_span(x, j, pre, op, merr, sizeof(merr));
		if (r == -EINVAL)
			snprintf(err, errlen, "%s:%s", x->w->name ? x->w->name : "workload", merr);
		else if (r)
			r = fail(err, errlen, ENOMEM, "%s", "out of memory");
	}
	model_free(pre);
	if (log_sync)
		x->spans[j].ino = model_ino_of(m, op->path);
	x->res->ops++;
	return r;
}

int explore_rec_end(struct ex *x, struct model *m, size_t before, size_t after, bool umounted,
		    char *err, size_t errlen)
{
	size_t n = x->w->n;
	x->spans[n] = (struct span){ before, after, umounted, 0 };
	x->nspans = n + 1;
	model_free(m);
	if (!x->snaps[n])
		return 0; /* the recording stopped at an error of its own */
	if (!(x->snaps[n + 1] = strdup(x->snaps[n])) ||
	    (x->subv && !(x->subv[n + 1] = strdup(x->subv[n]))))
		return fail(err, errlen, ENOMEM, "%s", "out of memory");
	return 0;
}

static int record(struct ex *x, sim_volume *vol, char *err, size_t errlen)
{
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 },
				     .notreelog = !x->o->treelog,
				     .compress = x->w->mount.compress,
				     .compress_level = x->w->mount.compress_level,
				     .compress_force = x->w->mount.compress_force };
	ref_fs *fs;
	if (ref_mount(vol, &mo, &fs, err, errlen))
		return -EIO;
	/* Armed after the mount: the plan's hits count from the first op. */
	if (x->o->faults) {
		x->sim_faults = fault_plan_nsims(x->o->faults) > 0;
		if (fault_plan_arm(x->o->faults, x->o->seed, vol, err, errlen)) {
			ref_close(fs);
			return -EINVAL;
		}
	}
	struct model *m;
	int r = explore_rec_begin(x, &m, err, errlen);
	if (r) {
		ref_close(fs);
		return r;
	}
	size_t n = x->w->n;
	for (size_t j = 0; j < n && !r; j++) {
		const struct wl_op *op = &x->w->ops[j];
		size_t before;
		sim_volume_log(vol, &before);
		int got = 0;
		uint64_t written = 0;
		char msg[256] = "";
		struct ref_log_stats ls0, ls1;
		ref_log_stats(fs, &ls0);
		if (op->kind != WL_MARK && op->kind != WL_CRASH)
			got = -wl_exec_ref_partial(fs, op, &written, msg, sizeof(msg));
		ref_log_stats(fs, &ls1);
		size_t after;
		sim_volume_log(vol, &after);
		/* An fsync that synced the log committed nothing: what it promised
		 * is the log's (explore_logtree.c), not a commit's.  One with
		 * nothing to log promised nothing new: no commit either. */
		r = explore_rec_op(x, m, j, got, written, before, after,
				   ls1.log_syncs > ls0.log_syncs, ls1.skipped > ls0.skipped, err,
				   errlen);
	}
	size_t before;
	sim_volume_log(vol, &before);
	int u = ref_umount(fs);
	size_t after;
	sim_volume_log(vol, &after);
	int e = explore_rec_end(x, m, before, after, u == 0, err, errlen);
	if (!r)
		r = e;
	/* With faults armed a failed final commit is an outcome to judge, not a
	 * broken run: the crash states show what is on the disks. */
	if (!r && u && !x->o->faults)
		r = fail(err, errlen, EIO, "the final commit failed: %s", strerror(-u));
	return r;
}

/* ---- Crash states ---- */

/* One volatile write of some disk at a crash point. */
struct pend {
	unsigned disk;
	size_t pos;   /* in that disk's list */
	uint64_t seq;
	uint32_t nsectors;
	bool discard;
};

/* A chosen write: pend index and how many sectors (0: all). */
struct choice {
	size_t i;
	uint32_t count;
};

/* The picks text of explore.h for the chosen writes (in pend order). */
static void picks_text(const struct pend *p, size_t np, const struct choice *c, size_t nc,
		       char *out, size_t len)
{
	size_t o = 0, ci = 0;
	out[0] = 0;
	for (size_t i = 0; i < np; i++) {
		bool first_of_disk = i == 0 || p[i].disk != p[i - 1].disk;
		bool last_of_disk = i + 1 == np || p[i + 1].disk != p[i].disk;
		if (first_of_disk && o < len)
			o += (size_t)snprintf(out + o, len - o, "%s%u:", o ? " " : "", p[i].disk);
		bool kept = ci < nc && c[ci].i == i;
		if (kept && o < len) {
			char *tail = out + o - 1;
			o += (size_t)snprintf(out + o, len - o, "%s%zu", *tail == ':' ? "" : ",", p[i].pos);
			if (c[ci].count && o < len)
				o += (size_t)snprintf(out + o, len - o, "+%u", c[ci].count);
		}
		if (kept)
			ci++;
		if (last_of_disk && o < len && out[o - 1] == ':')
			o += (size_t)snprintf(out + o, len - o, "-");
	}
	if (np == 0)
		snprintf(out, len, "-");
}

/* ---- Injected damage ---- */

/* Notes what replaying io (whose request, if any, took seq on the cursor)
 * did to the disks: a fault that changed what they hold.  A failed request
 * or a failed completion changes nothing ref was not told of, and a flip on
 * read changes nothing stored: none of them is damage. */
static int note_damage(struct ex *x, sim_volume *cursor, const struct sim_io *io, uint64_t seq)
{
	bool write = io->kind == SIM_IO_WRITE || io->kind == SIM_IO_WRITE_FUA;
	if (io->kind == SIM_IO_FAULT) {
		if (io->fault != SIM_FAULT_FLAKY)
			x->damage_durable = true; /* flipped at rest, latent, device lost */
		return 0;
	}
	if (!write || io->status)
		return 0;
	if (io->fault == SIM_FAULT_LOST_WRITE) {
		/* Missing from every later state (it may have been volatile
		 * still, but a later flush would have kept it). */
		x->damage_durable = true;
		return 0;
	}
	if (io->fault != SIM_FAULT_FLIP_ON_WRITE && io->fault != SIM_FAULT_MISDIRECT)
		return 0;
	size_t n;
	const struct sim_pending *pd = sim_disk_pending(cursor, io->disk, &n);
	if (!n || pd[n - 1].seq < seq) { /* FUA: on the media at once */
		x->damage_durable = true;
		return 0;
	}
	if (x->ndmg == x->dmg_cap) {
		size_t cap = x->dmg_cap ? 2 * x->dmg_cap : 16;
		struct dmg *d = realloc(x->dmg, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		x->dmg = d;
		x->dmg_cap = cap;
	}
	x->dmg[x->ndmg++] = (struct dmg){ io->disk, pd[n - 1].seq };
	return 0;
}

/* At a crash point: the damaged writes no longer in a cache were flushed to
 * the media, where every state has them. */
static void settle_damage(struct ex *x, const struct pend *p, size_t np)
{
	size_t k = 0;
	for (size_t j = 0; j < x->ndmg; j++) {
		bool cached = false;
		for (size_t i = 0; i < np && !cached; i++)
			cached = p[i].disk == x->dmg[j].disk && p[i].seq == x->dmg[j].seq;
		if (cached)
			x->dmg[k++] = x->dmg[j];
		else
			x->damage_durable = true;
	}
	x->ndmg = k;
}

/* Does the state that persists the chosen writes hold injected damage? */
static bool state_damaged(const struct ex *x, const struct pend *p, const struct choice *c,
			  size_t nc)
{
	if (x->damage_durable)
		return true;
	for (size_t j = 0; j < nc; j++)
		for (size_t k = 0; k < x->ndmg; k++)
			if (p[c[j].i].disk == x->dmg[k].disk && p[c[j].i].seq == x->dmg[k].seq)
				return true;
	return false;
}

/* A clone of cursor crashed with the chosen writes persisted (a disk at a
 * time: its caches fail independently); NULL with why when it cannot be. */
static sim_volume *crashed(sim_volume *cursor, const struct pend *p, const struct choice *c,
			   size_t nc, char *why, size_t whylen)
{
	sim_volume *v;
	if (sim_volume_clone(cursor, &v)) {
		snprintf(why, whylen, "cloning the volume failed");
		return NULL;
	}
	struct sim_crash_pick picks[64];
	struct sim_crash_pick *pk = nc <= 64 ? picks : calloc(nc, sizeof(*pk));
	bool ok = pk != NULL;
	if (!pk)
		snprintf(why, whylen, "out of memory");
	for (unsigned d = 0; ok && d < sim_volume_ndisks(v); d++) {
		size_t n = 0;
		for (size_t j = 0; j < nc; j++)
			if (p[c[j].i].disk == d)
				pk[n++] = (struct sim_crash_pick){ p[c[j].i].seq, 0, c[j].count };
		struct sim_crash_spec cs = { .policy = SIM_CRASH_EXPLICIT, .picks = pk, .npicks = n };
		if (sim_disk_crash(v, d, &cs, NULL)) {
			snprintf(why, whylen, "crashing disk %u: %s", d, sim_volume_error(v));
			ok = false;
		}
	}
	if (pk && pk != picks)
		free(pk);
	if (!ok) {
		sim_volume_close(v);
		return NULL;
	}
	return v;
}

/* Crashes a clone of cursor with the chosen writes persisted and judges it. */
static enum explore_verdict crash_with(struct ex *x, sim_volume *cursor, size_t point,
				       const struct pend *p, const struct choice *c, size_t nc,
				       char *why, size_t whylen)
{
	sim_volume *v = crashed(cursor, p, c, nc, why, whylen);
	if (!v)
		return EXPLORE_MOUNT;
	if (!x->kern) /* nobody reads a judged state's requests */
		sim_volume_set_log(v, false);
	enum explore_verdict verdict = (x->kern ? kernel_judge : explore_judge)(
		x, v, point, state_damaged(x, p, c, nc), why, whylen);
	sim_volume_close(v);
	return verdict;
}

/* Drops chosen writes one at a time while the state stays a violation of
 * the same kind: the persisted writes a reproducer needs (delta debugging's
 * one-minimal reduction over the picks). */
static size_t minimize(struct ex *x, sim_volume *cursor, size_t point, const struct pend *p,
		       struct choice *c, size_t nc, enum explore_verdict want)
{
	char why[4096];
	struct choice *t = malloc((nc ? nc : 1) * sizeof(*t));
	if (!t)
		return nc;
	for (size_t drop = 0; drop < nc;) {
		size_t n = 0;
		for (size_t j = 0; j < nc; j++)
			if (j != drop)
				t[n++] = c[j];
		if (crash_with(x, cursor, point, p, t, n, why, sizeof(why)) == want) {
			memcpy(c, t, n * sizeof(*t));
			nc = n;
		} else {
			drop++;
		}
	}
	free(t);
	return nc;
}

/* A judged state counted, its violation (the first) minimized and kept, and
 * handed to the sink. */
static void state_done(struct ex *x, sim_volume *cursor, size_t point, const struct pend *p,
		       size_t np, struct choice *c, size_t nc, enum explore_verdict v,
		       const char *why)
{
	char picks[512];
	struct explore_result *res = x->res;
	size_t k = res->states++;
	picks_text(p, np, c, nc, picks, sizeof(picks));
	if (v == EXPLORE_DETECTED)
		res->detected++;
	if (v != EXPLORE_OK && v != EXPLORE_DETECTED && res->violations++ == 0) {
		char minimal[512];
		snprintf(minimal, sizeof(minimal), "%s", picks);
		if (x->o->minimize_picks) {
			size_t m = minimize(x, cursor, point, p, c, nc, v);
			picks_text(p, np, c, m, minimal, sizeof(minimal));
		}
		res->violation_k = k;
		res->violation_point = point;
		res->violation_flushes = x->flushes_before;
		res->violation_ops_done = 0;
		for (size_t j = 0; j + 1 < x->nspans; j++)
			if (x->spans[j].end <= point)
				res->violation_ops_done = j + 1;
		res->violation_verdict = v;
		snprintf(res->violation_picks, sizeof(res->violation_picks), "%s", minimal);
		char also[560] = "";
		if (strcmp(minimal, picks))
			snprintf(also, sizeof(also), " (minimal: %s)", minimal);
		snprintf(res->violation, sizeof(res->violation),
			 "crash state %zu: crash at IO %zu, persisted writes %s%s: %s: %.2900s", k, point,
			 picks, also, explore_verdict_name(v), why);
		if (x->o->stop_first)
			x->stop = true;
	}
	if (x->o->sink && x->o->sink->state) {
		struct explore_state st = { k, point, picks, v, v == EXPLORE_OK ? "" : why };
		if (x->o->sink->state(x->o->sink->ctx, &st))
			x->stop = true;
	}
}

static void state(struct ex *x, sim_volume *cursor, size_t point, const struct pend *p, size_t np,
		  struct choice *c, size_t nc)
{
	char why[4096];
	enum explore_verdict v = crash_with(x, cursor, point, p, c, nc, why, sizeof(why));
	state_done(x, cursor, point, p, np, c, nc, v, why);
}

/* ---- The kernel's states, judged side by side ----
 * States go to the kernel target's workers in order and are counted in the
 * same order (a FIFO as deep as there are workers): the run's numbering,
 * sink and first violation are what judging them one by one gives. */

struct qent {
	struct choice *c;
	size_t nc;
	struct kticket t;
};

struct queue {
	struct qent e[KERN_MAX_WORKERS + 1];
	size_t head, n;
};

static void finish_oldest(struct ex *x, sim_volume *cursor, size_t point, const struct pend *p,
			  size_t np, struct queue *q)
{
	struct qent *e = &q->e[q->head];
	char why[4096];
	/* every answer is read, even when stopping: the workers' pipes stay in step */
	enum explore_verdict v = kernel_complete(x, &e->t, point, why, sizeof(why));
	if (!x->stop)
		state_done(x, cursor, point, p, np, e->c, e->nc, v, why);
	free(e->c);
	q->head = (q->head + 1) % (KERN_MAX_WORKERS + 1);
	q->n--;
}

static void queued_state(struct ex *x, sim_volume *cursor, size_t point, const struct pend *p,
			 size_t np, const struct choice *c, size_t nc, struct queue *q)
{
	while (q->n && (kworkers_free(x->kern) < 0 || q->n > KERN_MAX_WORKERS - 1))
		finish_oldest(x, cursor, point, p, np, q);
	if (x->stop)
		return;
	struct qent *e = &q->e[(q->head + q->n) % (KERN_MAX_WORKERS + 1)];
	char why[512];
	e->c = malloc((nc ? nc : 1) * sizeof(*c));
	e->nc = nc;
	sim_volume *v = e->c ? crashed(cursor, p, c, nc, why, sizeof(why)) : NULL;
	if (!e->c)
		snprintf(why, sizeof(why), "out of memory");
	if (!v) {
		e->t = (struct kticket){ .ready = true, .verdict = EXPLORE_MOUNT, .why = strdup(why) };
	} else {
		memcpy(e->c, c, nc * sizeof(*c));
		kernel_submit(x, v, state_damaged(x, p, c, nc), &e->t);
		sim_volume_close(v);
	}
	q->n++;
	while (q->n && q->e[q->head].t.ready)
		finish_oldest(x, cursor, point, p, np, q);
}

/* Every volatile write of every disk, disk by disk in submission order. */
static struct pend *pending(sim_volume *cursor, size_t *np)
{
	size_t total = 0, n;
	for (unsigned d = 0; d < sim_volume_ndisks(cursor); d++) {
		sim_disk_pending(cursor, d, &n);
		total += n;
	}
	struct pend *p = calloc(total ? total : 1, sizeof(*p));
	if (!p)
		return NULL;
	size_t k = 0;
	for (unsigned d = 0; d < sim_volume_ndisks(cursor); d++) {
		const struct sim_pending *sp = sim_disk_pending(cursor, d, &n);
		for (size_t i = 0; i < n; i++)
			p[k++] = (struct pend){ d, i, sp[i].seq, sp[i].nsectors, sp[i].discard };
	}
	*np = total;
	return p;
}

static void explore_point(struct ex *x, sim_volume *cursor, size_t point)
{
	size_t np = 0;
	struct pend *p = pending(cursor, &np);
	struct choice *c = calloc(np ? np : 1, sizeof(*c));
	if (!p || !c) {
		free(p);
		free(c);
		x->res->violations++;
		snprintf(x->res->violation, sizeof(x->res->violation), "out of memory");
		x->stop = true;
		return;
	}
	settle_damage(x, p, np);
	x->res->crash_points++;
	struct queue q = { .n = 0 };
	struct queue *qp = kernel_parallel(x) ? &q : NULL;
	if (x->o->log)
		fprintf(x->o->log, "crash point at IO %zu: %zu volatile writes\n", point, np);
	bool all = np <= x->o->max_subset;
	uint64_t rounds = all ? UINT64_C(1) << np : (uint64_t)x->o->samples + 2;
	for (uint64_t m = 0; m < rounds && !x->stop; m++) {
		size_t n = 0;
		for (size_t i = 0; i < np; i++) {
			bool keep = all ? (m >> i) & 1 : m == 0 ? false : m == 1 ? true : next(&x->rng) & 1;
			if (keep)
				c[n++] = (struct choice){ i, 0 };
		}
		if (qp)
			queued_state(x, cursor, point, p, np, c, n, qp);
		else
			state(x, cursor, point, p, np, c, n);
	}
	/* Torn writes: one multi-sector write cut short, the writes before it kept. */
	for (unsigned t = 0; t < x->o->torn && np && !x->stop; t++) {
		size_t k = (size_t)(next(&x->rng) % np);
		if (p[k].nsectors < 2 || p[k].discard)
			continue;
		size_t n = 0;
		for (size_t i = 0; i < k; i++)
			c[n++] = (struct choice){ i, 0 };
		c[n++] = (struct choice){ k, 1 + (uint32_t)(next(&x->rng) % (p[k].nsectors - 1)) };
		if (qp)
			queued_state(x, cursor, point, p, np, c, n, qp);
		else
			state(x, cursor, point, p, np, c, n);
	}
	while (qp && qp->n)
		finish_oldest(x, cursor, point, p, np, qp);
	free(p);
	free(c);
}

/* A write as the disk stored it: misdirected to fault_arg, or with the bit
 * fault_arg flipped (a flip of several bits logs its first only). */
static int replay_write(sim_volume *v, const struct sim_io *io, uint32_t sector)
{
	size_t len = (size_t)io->nsectors * sector;
	uint64_t at = io->fault == SIM_FAULT_MISDIRECT ? io->fault_arg : io->sector;
	unsigned flags = io->kind == SIM_IO_WRITE_FUA ? SIM_FUA : 0;
	if (!io->payload)
		return -EINVAL;
	if (io->fault != SIM_FAULT_FLIP_ON_WRITE || io->fault_arg / 8 >= len)
		return sim_write(v, io->disk, at * sector, io->payload, len, flags);
	uint8_t *copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, io->payload, len);
	copy[io->fault_arg / 8] ^= (uint8_t)(1u << (io->fault_arg % 8));
	int r = sim_write(v, io->disk, at * sector, copy, len, flags);
	free(copy);
	return r;
}

int explore_replay_io(sim_volume *v, const struct sim_io *io)
{
	/* The requests that change a disk, as they acted: a failed request or a
	 * write a fault lost changed nothing. */
	if (io->status || io->fault == SIM_FAULT_LOST_WRITE)
		return 0;
	uint32_t sector = sim_disk_sector_size(v, io->disk);
	switch (io->kind) {
	case SIM_IO_WRITE:
	case SIM_IO_WRITE_FUA: return replay_write(v, io, sector);
	case SIM_IO_FLUSH: return sim_flush(v, io->disk);
	case SIM_IO_DISCARD:
		return sim_discard(v, io->disk, io->sector * sector, (size_t)io->nsectors * sector);
	case SIM_IO_FAULT:
		if (io->fault == SIM_FAULT_FLIP_AT_REST)
			return sim_disk_flip_bit(v, io->disk, io->sector, (uint32_t)io->fault_arg);
		if (io->fault == SIM_FAULT_LATENT)
			return sim_disk_add_latent(v, io->disk, io->sector, io->nsectors);
		/* A disk that vanished comes back when the power does: the crash
		 * states show it as it was when it went (its later requests
		 * failed and changed nothing). */
		return 0;
	default: return 0;
	}
}

static bool crash_point(const struct sim_io *io)
{
	return io->kind == SIM_IO_FLUSH || io->kind == SIM_IO_WRITE_FUA;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* "\rcrash points D/T, S states (R/s), ETA E s" at most twice a second, and
 * a last one with a newline. */
static void progress(struct ex *x, size_t done, size_t total, double t0, double *last, bool final)
{
	FILE *p = x->o->progress;
	double t = now();
	if (!p || (!final && t - *last < 0.5))
		return;
	*last = t;
	double el = t - t0;
	double eta = done ? el / (double)done * (double)(total - done) : 0;
	fprintf(p, "\rcrash points %zu/%zu, %zu states (%.0f/s), ETA %.0f s  %s", done, total,
		x->res->states, el > 0 ? (double)x->res->states / el : 0.0, eta, final ? "\n" : "");
	fflush(p);
}

static int explore_log(struct ex *x, sim_volume *base, const struct sim_io *log, size_t first,
		       size_t n, char *err, size_t errlen)
{
	sim_volume *cursor;
	if (sim_volume_clone(base, &cursor))
		return fail(err, errlen, ENOMEM, "%s", "cloning the volume failed");
	sim_volume_set_recording(cursor, false);
	if (!x->kern) {
		/* the replay's own requests: nobody reads them */
		sim_volume_set_log(cursor, false);
		/* its crash states' content identities, for the memo (explore_judge.c) */
		if (x->o->memo)
			sim_volume_track_content(cursor, true);
	}
	int r = 0;
	size_t from = first;
	size_t skip = wl_setup_ops(x->w) > x->o->skip_ops ? wl_setup_ops(x->w) : x->o->skip_ops;
	if (skip && skip < x->nspans)
		from = x->spans[skip].start;
	size_t total = 1, done = 0;
	for (size_t i = from; i < n; i++)
		total += crash_point(&log[i]);
	double t0 = now(), last = t0;
	for (size_t i = first; i < n && !r && !x->stop; i++) {
		if (i >= from && crash_point(&log[i])) {
			explore_point(x, cursor, i);
			progress(x, ++done, total, t0, &last, false);
		}
		x->flushes_before += crash_point(&log[i]);
		uint64_t seq = sim_volume_next_seq(cursor);
		if ((r = explore_replay_io(cursor, &log[i])))
			snprintf(err, errlen, "replaying IO %zu: %s", i, sim_volume_error(cursor));
		else if ((r = note_damage(x, cursor, &log[i], seq)))
			snprintf(err, errlen, "out of memory");
		if (i % 4096 == 0)
			sim_volume_log_clear(cursor);
	}
	if (!r && !x->stop)
		explore_point(x, cursor, n);
	if (done)
		progress(x, done + 1, total, t0, &last, true);
	sim_volume_close(cursor);
	return r;
}

int explore_make_volume(const struct explore_opts *o, sim_volume **out, size_t *mkfs_ios,
			char *err, size_t errlen)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, o->ndisks, o->disk_size, o->seed);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	cfg.record_payloads = true;
	sim_volume *vol;
	if (sim_volume_open(&cfg, &vol, err, errlen))
		return -EINVAL;
	struct ref_mkfs_opts mk;
	ref_mkfs_defaults(&mk);
	mk.seed = o->seed;
	mk.time = 1700000000;
	mk.nodesize = o->nodesize;
	mk.data_profile = o->data_profile;
	mk.meta_profile = o->meta_profile;
	int r = ref_mkfs(vol, &mk, NULL, err, errlen);
	for (unsigned d = 0; !r && d < o->ndisks; d++)
		if (sim_flush(vol, d))
			r = fail(err, errlen, EIO, "%s", sim_volume_error(vol));
	if (r) {
		sim_volume_close(vol);
		return r;
	}
	sim_volume_log(vol, mkfs_ios);
	*out = vol;
	return 0;
}

void explore_keep_freed_memory(void)
{
	/*
	 * Each crash state opens, replays, checks and reads a file system, then
	 * frees it all, thousands of times a second.  With glibc's defaults the
	 * freed top of the heap goes back to the kernel (trim threshold 128 KiB)
	 * and large blocks are mmap'd, so every state paid page faults and TLB
	 * shootdowns (perf: a third of an fsync-heavy explore in brk and
	 * exc_page_fault).  Keeping freed memory makes the next state reuse it.
	 * (No effect under ASan, whose allocator is its own.)
	 */
	static bool done;
	if (done)
		return;
	done = true;
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
}

int explore_run(const struct wl_workload *w, const struct explore_opts *o,
		struct explore_result *res, char *err, size_t errlen)
{
	explore_keep_freed_memory();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(res, 0, sizeof(*res));
	struct ex x = { .o = o, .res = res, .w = w, .rng = o->seed, .sector = 4096 };
	sim_volume *vol = NULL, *base = NULL;
	size_t mkfs_ios = 0;
	struct kern kern;
	int r;
	if (o->target == EXPLORE_KERNEL) {
		if (!(r = kern_init(&kern, &x, err, errlen)))
			x.kern = &kern;
		if (!r)
			r = kernel_record(&x, &vol, &base, &mkfs_ios, err, errlen);
	} else {
		r = explore_check_init(&x, err, errlen);
		if (!r)
			r = explore_make_volume(o, &vol, &mkfs_ios, err, errlen);
		if (!r && sim_volume_clone(vol, &base))
			r = fail(err, errlen, ENOMEM, "%s", "cloning the volume failed");
		if (!r)
			r = record(&x, vol, err, errlen);
	}
	if (o->faults) {
		size_t nc;
		const struct fault_count *fc = fault_plan_counts(&nc);
		for (size_t i = 0; fc && i < nc && i < EXPLORE_MAX_FAULTS; i++) {
			struct explore_fault_count *f = &res->faults[res->nfaults++];
			snprintf(f->point, sizeof(f->point), "%s", fc[i].point);
			f->hits = fc[i].hits;
			f->fired = fc[i].fired;
		}
		fault_plan_disarm();
	}
	size_t n = 0;
	const struct sim_io *log = vol ? sim_volume_log(vol, &n) : NULL;
	if (!r && o->sink && o->sink->recorded &&
	    o->sink->recorded(o->sink->ctx, log, n, mkfs_ios, res->results, w->n))
		r = fail(err, errlen, EIO, "%s", "recording the run failed");
	res->ios = n;
	if (!r)
		r = explore_log(&x, base, log, mkfs_ios, n, err, errlen);
	for (size_t j = 0; x.snaps && j <= w->n + 1; j++)
		free(x.snaps[j]);
	free(x.snaps);
	for (size_t j = 0; x.subv && j <= w->n + 1; j++)
		free(x.subv[j]);
	free(x.subv);
	for (size_t j = 0; x.ids && j <= w->n + 1; j++)
		model_inos_free(x.ids[j].v, x.ids[j].n);
	free(x.ids);
	for (size_t j = 0; x.spans && j <= w->n; j++) {
		free(x.spans[j].logged);
		explore_receive_free(&x.spans[j]);
	}
	free(x.spans);
	free(x.dmg);
	explore_check_free(&x);
	if (x.kern)
		kern_free(x.kern);
	if (base)
		sim_volume_close(base);
	if (vol)
		sim_volume_close(vol);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return r ? r : res->violations ? 1 : 0;
}
