/*
 * kernel_judge.c - one crash state judged by the running kernel: its disks
 * written out as images (on tmpfs where there is one), loop devices over
 * them, the kernel's mount (which replays the fsync log), the tree it shows
 * read through the system calls and judged by the same oracle as ref's
 * states; then, on the images the kernel left, `btrfs check` and btrsim's
 * check; and ref's view of the same crash state (ref replays the log in
 * memory) compared with the kernel's.
 *
 * Verdicts: mount (the kernel refuses it, or hangs), read (walking it fails),
 * check (btrfs check finds errors in what the kernel left), oracle (not a
 * legal state), disagree (the kernel is right, ref shows another tree or its
 * check flags what btrfs check passes).  States whose disks hash alike take
 * the verdict of the first one judged.
 */
#include "traces/kernel_internal.h"
#include "traces/manifest.h"
#include "traces/model.h"
#include "traces/workload.h"
#include "ref/ref.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kern_init(struct kern *k, const struct ex *x, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	const struct explore_opts *o = x->o;
	char wo[256];
	wl_mount_format(&x->w->mount, wo, sizeof(wo));
	const char *user = o->mount_options ? o->mount_options : "";
	/*
	 * flushoncommit unless the user says otherwise: the oracle's model holds
	 * that a commit (a snapshot, a subvolume made or deleted, a balance)
	 * makes every write before it durable, as ref's commits do.  Without it
	 * the kernel commits a file's metadata while its delayed-allocation data
	 * waits (tests/interop/workloads/subvol.wl: a file in a nested
	 * subvolume shows its old size after the snapshot's commit), which the
	 * model does not describe yet.
	 */
	bool foc = !strstr(user, "flushoncommit");
	snprintf(k->opts, sizeof(k->opts), "%s%s%s%s%s", wo, wo[0] ? "," : "",
		 o->treelog ? "" : "notreelog,", foc ? "flushoncommit," : "", user);
	size_t ol = strlen(k->opts);
	if (ol && k->opts[ol - 1] == ',')
		k->opts[ol - 1] = 0;
	k->timeout_ms = o->timeout_ms ? o->timeout_ms : 30000;
	/* The images on tmpfs: a state costs memory copies, not disk writes. */
	int r = access("/dev/shm", W_OK) == 0 ? ktmpdir("/dev/shm", "imgs", k->imgdir,
							 sizeof(k->imgdir))
					      : -ENOENT;
	if (r)
		r = ktmpdir(NULL, "imgs", k->imgdir, sizeof(k->imgdir));
	if (!r)
		r = ktmpdir(NULL, "judge", k->mnt, sizeof(k->mnt));
	if (!r) {
		snprintf(k->lock, sizeof(k->lock), "%s/lock", k->imgdir);
		kreg_file(k->lock);
	}
	/* states judged side by side, one worker a core (a kernel mount is
	 * mostly the kernel's CPU time and a few waits) */
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	k->jobs = o->kernel_jobs ? o->kernel_jobs : n < 1 ? 1 : n > KERN_MAX_WORKERS ? KERN_MAX_WORKERS : (unsigned)n;
	if (r)
		snprintf(err, errlen, "a temporary directory: %s", strerror(-r));
	return r;
}

static void seen_free(struct kseen *s);

void kern_free(struct kern *k)
{
	kworkers_stop(k);
	for (size_t i = 0; i < k->seencap; i++)
		seen_free(&k->seen[i]);
	free(k->seen);
	kunlink(k->lock);
	krmdir(k->mnt);
	krmdir(k->imgdir);
	memset(k, 0, sizeof(*k));
}

/* ---- States already judged ---- */

static uint64_t disks_hash(sim_volume *v)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (unsigned d = 0; d < sim_volume_ndisks(v); d++) {
		uint64_t dh = 0;
		if (sim_disk_durable_hash(v, d, &dh))
			return 0; /* 0: not cached */
		h = (h ^ dh) * UINT64_C(0x100000001b3);
	}
	return h ? h : 1;
}

static struct kseen *seen_slot(struct kern *k, uint64_t h)
{
	size_t i = (size_t)h & (k->seencap - 1);
	while (k->seen[i].hash && k->seen[i].hash != h)
		i = (i + 1) & (k->seencap - 1);
	return &k->seen[i];
}

static void seen_free(struct kseen *s)
{
	free(s->why);
	free(s->text);
	free(s->subv);
	free(s->after_why);
}

/* Keeps *view under hash h (it is the table's then, or freed). */
static void seen_add(struct kern *k, struct kseen *view)
{
	if (!view->hash) {
		seen_free(view);
		return;
	}
	if (2 * (k->nseen + 1) > k->seencap) {
		size_t cap = k->seencap ? 2 * k->seencap : 64;
		struct kseen *old = k->seen, *nw = calloc(cap, sizeof(*nw));
		if (!nw) {
			seen_free(view);
			return;
		}
		size_t oldcap = k->seencap;
		k->seen = nw;
		k->seencap = cap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].hash)
				*seen_slot(k, old[i].hash) = old[i];
		free(old);
	}
	*seen_slot(k, view->hash) = *view;
	k->nseen++;
}

/* ---- One state ---- */

static char *subvols_of(void *ctx, char *err, size_t errlen)
{
	char *s = strdup((const char *)ctx);
	if (!s)
		snprintf(err, errlen, "out of memory");
	return s;
}

/* The oracle's verdict at crash point `point` on a state the kernel viewed. */
static enum explore_verdict verdict_of(const struct ex *x, const struct kseen *s, size_t point,
				       bool damaged, char *why, size_t whylen)
{
	enum explore_verdict verdict = s->fail;
	/* damage injected into this state's disks, and caught: detected */
	damaged = damaged && x->sim_faults;
	if (!s->why || !s->after_why) {
		snprintf(why, whylen, "out of memory");
		verdict = EXPLORE_READ;
	} else if (verdict != EXPLORE_OK) {
		snprintf(why, whylen, "%s", s->why);
		if (damaged && explore_detected(s->why))
			verdict = EXPLORE_DETECTED;
	} else if ((verdict = explore_legal(x, point, s->text, subvols_of,
					    s->subv ? s->subv : "", damaged, why, whylen)) ==
		   EXPLORE_OK) {
		verdict = s->after;
		snprintf(why, whylen, "%s", s->after_why);
		if (verdict == EXPLORE_CHECK && damaged && explore_detected(s->after_why))
			verdict = EXPLORE_DETECTED;
	}
	return verdict;
}

/* Writes v's disks as DIR/disk0.. (registered for release). */
static int save_images(sim_volume *v, const char *dir, char *why, size_t whylen)
{
	for (unsigned d = 0; d < sim_volume_ndisks(v); d++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/disk%u", dir, d);
		kreg_file(path);
		if (sim_disk_save_image(v, d, path)) {
			snprintf(why, whylen, "writing the state's image: %s", sim_volume_error(v));
			return -EIO;
		}
	}
	return 0;
}

static void drop_images(unsigned ndisks, const char *dir)
{
	for (unsigned d = 0; d < ndisks; d++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/disk%u", dir, d);
		kunlink(path);
	}
}

static struct kview_in view_in(const struct ex *x, const struct kern *k, sim_volume *v,
			       const char *imgdir, const char *mnt)
{
	return (struct kview_in){ imgdir,	       mnt,
				  k->opts,	       k->lock,
				  sim_volume_ndisks(v), sim_disk_sector_size(v, 0),
				  k->timeout_ms,       x->subv != NULL,
				  false };
}

/* Keeps a fresh view in the cache (or frees it). */
static void keep(const struct ex *x, struct kseen *view)
{
	x->res->hangs += view->hangs;
	seen_add(x->kern, view);
}

static struct kseen *cached(struct kern *k, uint64_t h)
{
	struct kseen *s = h && k->seencap ? seen_slot(k, h) : NULL;
	return s && s->hash == h ? s : NULL;
}

enum explore_verdict kernel_judge(const struct ex *x, sim_volume *v, size_t point, bool damaged,
				  char *why, size_t whylen)
{
	struct kern *k = x->kern;
	uint64_t h = disks_hash(v);
	struct kseen *s = cached(k, h);
	if (s) {
		x->res->cached++;
		return verdict_of(x, s, point, damaged, why, whylen);
	}
	struct kseen fresh = { .hash = h };
	if (save_images(v, k->imgdir, why, whylen)) {
		drop_images(sim_volume_ndisks(v), k->imgdir);
		return EXPLORE_READ;
	}
	struct kview_in in = view_in(x, k, v, k->imgdir, k->mnt);
	kview(&in, &fresh);
	drop_images(in.ndisks, k->imgdir);
	enum explore_verdict verdict = verdict_of(x, &fresh, point, damaged, why, whylen);
	keep(x, &fresh);
	return verdict;
}

/* ---- Queued judging, by the workers ---- */

bool kernel_parallel(struct ex *x)
{
	struct kern *k = x->kern;
	if (!k || k->jobs < 2)
		return false;
	if (!k->nworkers) {
		char err[512];
		if (kworkers_start(k, err, sizeof(err))) {
			k->jobs = 1; /* judged here, one at a time, instead */
			return false;
		}
	}
	return true;
}

void kernel_submit(struct ex *x, sim_volume *v, bool damaged, struct kticket *t)
{
	struct kern *k = x->kern;
	char why[512];
	*t = (struct kticket){ .hash = disks_hash(v), .damaged = damaged, .worker = -1 };
	if (cached(k, t->hash)) {
		t->ready = true; /* judged at completion, by the cache */
		return;
	}
	int i = kworkers_free(k);
	struct kview_in in;
	if (i >= 0) {
		in = view_in(x, k, v, k->w[i].imgdir, k->w[i].mnt);
		if (save_images(v, in.imgdir, why, sizeof(why)) ||
		    kworker_ask(k, i, &in, why, sizeof(why))) {
			drop_images(in.ndisks, in.imgdir);
			i = -1;
		}
	} else {
		snprintf(why, sizeof(why), "no free worker to judge the state");
	}
	if (i < 0) {
		t->ready = true;
		t->verdict = EXPLORE_READ;
		t->why = strdup(why);
		return;
	}
	t->worker = i;
}

enum explore_verdict kernel_complete(struct ex *x, struct kticket *t, size_t point, char *why,
				     size_t whylen)
{
	struct kern *k = x->kern;
	if (t->ready && t->why) {
		snprintf(why, whylen, "%s", t->why);
		free(t->why);
		t->why = NULL;
		return t->verdict;
	}
	struct kseen *s = cached(k, t->hash);
	if (t->ready && s) {
		x->res->cached++;
		return verdict_of(x, s, point, t->damaged, why, whylen);
	}
	if (t->ready) { /* (a cache that could not keep it) */
		snprintf(why, whylen, "out of memory");
		return EXPLORE_READ;
	}
	struct kseen fresh = { .hash = t->hash };
	char err[512];
	int r = kworker_answer(k, t->worker, &fresh, err, sizeof(err));
	drop_images(x->o->ndisks, k->w[t->worker].imgdir);
	if (r) {
		snprintf(why, whylen, "%s", err);
		x->res->hangs += r == -ETIMEDOUT;
		return r == -ETIMEDOUT ? EXPLORE_MOUNT : EXPLORE_READ;
	}
	enum explore_verdict verdict = verdict_of(x, &fresh, point, t->damaged, why, whylen);
	if (cached(k, fresh.hash)) { /* the same disks judged meanwhile */
		x->res->hangs += fresh.hangs;
		seen_free(&fresh);
	} else {
		keep(x, &fresh);
	}
	return verdict;
}
