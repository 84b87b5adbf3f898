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
	if (r)
		snprintf(err, errlen, "a temporary directory: %s", strerror(-r));
	return r;
}

static void seen_free(struct kseen *s);

void kern_free(struct kern *k)
{
	for (size_t i = 0; i < k->seencap; i++)
		seen_free(&k->seen[i]);
	free(k->seen);
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

/* What ref shows of the crash state (its log replayed in memory): the
 * description, or NULL with why. */
static char *ref_view(sim_volume *v, char *why, size_t whylen)
{
	sim_volume *c;
	if (sim_volume_clone(v, &c)) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	struct ref_open_opts oo = { .super_mirror = 0 };
	ref_fs *fs;
	char *text = NULL;
	if (ref_open(c, &oo, &fs, why, whylen) == 0) {
		text = explore_describe_ref(fs, why, whylen);
		ref_close(fs);
	}
	sim_volume_close(c);
	return text;
}

/* btrsim check of the images as the kernel left them: 0 clean, 1 errors
 * (their first lines in why), -errno when it could not run. */
static int ref_check_images(const struct kern *k, unsigned ndisks, uint32_t sector, char *why,
			    size_t whylen)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, ndisks, 0, 1);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	char paths[SIM_MAX_DISKS][300];
	for (unsigned d = 0; d < ndisks; d++) {
		snprintf(paths[d], sizeof(paths[d]), "%s/disk%u", k->imgdir, d);
		cfg.disk[d].image_path = paths[d];
		cfg.disk[d].sector_size = sector;
		cfg.disk[d].read_only = true;
	}
	sim_volume *v;
	if (sim_volume_open(&cfg, &v, why, whylen))
		return -EIO;
	struct ref_open_opts oo = { .super_mirror = 0, .nologreplay = true };
	ref_fs *fs;
	char err[512];
	int r;
	if (ref_open(v, &oo, &fs, err, sizeof(err))) {
		snprintf(why, whylen, "btrsim does not open what the kernel left: %s", err);
		r = 1;
	} else {
		char *report = NULL;
		size_t rlen = 0;
		FILE *out = open_memstream(&report, &rlen);
		struct ref_check_opts co = { .out = out };
		long errors = out ? ref_check(fs, &co) : -ENOMEM;
		if (out)
			fclose(out);
		r = errors < 0 ? (int)errors : errors > 0;
		if (r)
			snprintf(why, whylen, "btrsim check of what the kernel left: %.600s",
				 report ? report : "out of memory");
		free(report);
		ref_close(fs);
	}
	sim_volume_close(v);
	return r;
}

/* btrfs check --readonly of the first device (the others attached, found by
 * its scan), started; progs_check_wait gives 0 clean, 1 errors (its output
 * in why), -ETIMEDOUT, or -errno when it did not start. */
static int progs_check_start(const char *dev, struct kjob *j)
{
	char *argv[] = { "btrfs", "check", "--readonly", (char *)dev, NULL };
	return krun_start(argv, j);
}

static int progs_check_wait(const struct kern *k, struct kjob *j, char *why, size_t whylen)
{
	char out[2048];
	int r = krun_wait(j, k->timeout_ms, out, sizeof(out));
	if (r == 0)
		return 0;
	if (r == -ETIMEDOUT)
		snprintf(why, whylen, "btrfs check did not finish in time (a hang)");
	else
		snprintf(why, whylen, "btrfs check of what the kernel left: %.1500s", out);
	return r == -ETIMEDOUT ? r : 1;
}

/* The kernel's mount of the images: the tree and subvolume lines it shows
 * (NULL with why), then unmounted; *verdict says how it failed.  While the
 * kernel mounts, ref reads the same crash state from v: *mine (NULL with
 * myerr). */
static char *kernel_view(const struct ex *x, const struct kern *k, char (*devs)[32],
			 unsigned ndisks, sim_volume *v, char **mine, char *myerr, size_t myerrlen,
			 char **subv, enum explore_verdict *verdict, char *why, size_t whylen)
{
	const char *dv[SIM_MAX_DISKS];
	for (unsigned d = 0; d < ndisks; d++)
		dv[d] = devs[d];
	char err[1024];
	struct kjob mj;
	int r = kmount_start(dv, ndisks, k->mnt, k->opts, &mj, err, sizeof(err));
	*mine = ref_view(v, myerr, myerrlen);
	if (!r)
		r = kmount_wait(&mj, k->mnt, k->timeout_ms, err, sizeof(err));
	if (r) {
		if (r == -ETIMEDOUT)
			x->res->hangs++;
		snprintf(why, whylen, "the kernel does not mount it: %s", err);
		*verdict = EXPLORE_MOUNT;
		return NULL;
	}
	struct manifest m = { 0 };
	char *text = NULL;
	size_t len = 0;
	*subv = NULL;
	if (mf_walk_host(&m, k->mnt, x->subv ? subv : NULL, err, sizeof(err))) {
		snprintf(why, whylen, "reading the kernel's tree: %s", err);
		*verdict = EXPLORE_READ;
	} else {
		FILE *f = open_memstream(&text, &len);
		if (!f || mf_print(&m, f)) {
			snprintf(why, whylen, "out of memory");
			*verdict = EXPLORE_READ;
		}
		if (f)
			fclose(f);
		if (*verdict != EXPLORE_OK) {
			free(text);
			text = NULL;
		}
	}
	mf_free(&m);
	r = kumount(k->mnt, k->timeout_ms, err, sizeof(err));
	if (r && *verdict == EXPLORE_OK) {
		if (r == -ETIMEDOUT)
			x->res->hangs++;
		snprintf(why, whylen, "the kernel's unmount failed: %s", err);
		*verdict = EXPLORE_MOUNT;
		free(text);
		text = NULL;
	}
	if (!text) {
		free(*subv);
		*subv = NULL;
	}
	return text;
}

/* What the kernel, the checks and ref make of v's disks. */
static void view_of(const struct ex *x, sim_volume *v, struct kseen *view)
{
	const struct kern *k = x->kern;
	char why[4096] = "";
	size_t whylen = sizeof(why);
	unsigned nd = sim_volume_ndisks(v);
	enum explore_verdict verdict = EXPLORE_OK;
	for (unsigned d = 0; d < nd && verdict == EXPLORE_OK; d++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/disk%u", k->imgdir, d);
		kreg_file(path);
		if (sim_disk_save_image(v, d, path)) {
			snprintf(why, whylen, "writing the state's image: %s", sim_volume_error(v));
			verdict = EXPLORE_READ;
		}
	}
	char devs[SIM_MAX_DISKS][32];
	int holds[SIM_MAX_DISKS];
	unsigned nloops = 0;
	for (; nloops < nd && verdict == EXPLORE_OK; nloops++) {
		char path[300], err[512];
		snprintf(path, sizeof(path), "%s/disk%u", k->imgdir, nloops);
		if (kloop_attach(path, 4096, devs[nloops], sizeof(devs[0]), &holds[nloops], err,
				 sizeof(err))) {
			snprintf(why, whylen, "a loop device for the state: %s", err);
			verdict = EXPLORE_READ;
			break;
		}
	}
	char *mine = NULL, myerr[1024] = "";
	if (verdict == EXPLORE_OK)
		view->text = kernel_view(x, k, devs, nd, v, &mine, myerr, sizeof(myerr),
					 &view->subv, &verdict, why, whylen);
	char awhy[4096] = "", rwhy[4096] = "";
	view->after = EXPLORE_OK;
	if (view->text) {
		/* btrfs check of what the kernel left while ref checks it too */
		struct kjob cj;
		int c = progs_check_start(devs[0], &cj);
		bool same = mine && !strcmp(mine, view->text);
		int rc = same ? ref_check_images(k, nd, sim_disk_sector_size(v, 0), rwhy,
						 sizeof(rwhy))
			      : 0;
		if (c)
			snprintf(awhy, sizeof(awhy), "btrfs check did not start: %s", strerror(-c));
		else
			c = progs_check_wait(k, &cj, awhy, sizeof(awhy));
		if (c == -ETIMEDOUT)
			x->res->hangs++;
		if (c) {
			view->after = EXPLORE_CHECK;
		} else if (!same) {
			/* ref against the kernel: the same crash state */
			char d[1200];
			if (mine)
				explore_first_diff(view->text, mine, d, sizeof(d));
			snprintf(awhy, sizeof(awhy), "the kernel shows a legal state; ref %s: %s",
				 mine ? "shows another tree" : "does not read it", mine ? d : myerr);
			view->after = EXPLORE_DISAGREE;
		} else if (rc) {
			/* and against btrfs check, on what the kernel left */
			snprintf(awhy, sizeof(awhy), "%s", rwhy);
			view->after = EXPLORE_DISAGREE;
		}
	}
	free(mine);
	for (unsigned d = 0; d < nloops; d++)
		kloop_detach(devs[d], holds[d]);
	for (unsigned d = 0; d < nd; d++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/disk%u", k->imgdir, d);
		kunlink(path);
	}
	view->fail = verdict;
	view->why = strdup(why);
	view->after_why = strdup(awhy);
}

enum explore_verdict kernel_judge(const struct ex *x, sim_volume *v, size_t point, bool damaged,
				  char *why, size_t whylen)
{
	struct kern *k = x->kern;
	uint64_t h = disks_hash(v);
	struct kseen *s = h && k->seencap ? seen_slot(k, h) : NULL;
	struct kseen fresh = { .hash = h };
	if (s && s->hash == h) {
		x->res->cached++;
	} else {
		view_of(x, v, &fresh);
		s = &fresh;
	}
	enum explore_verdict verdict = s->fail;
	if (!s->why || !s->after_why) {
		snprintf(why, whylen, "out of memory");
		verdict = EXPLORE_READ;
	} else if (verdict != EXPLORE_OK) {
		snprintf(why, whylen, "%s", s->why);
	} else if ((verdict = explore_legal(x, point, s->text, subvols_of,
					    s->subv ? s->subv : "", damaged, why, whylen)) ==
		   EXPLORE_OK) {
		verdict = s->after;
		snprintf(why, whylen, "%s", s->after_why);
	}
	if (s == &fresh)
		seen_add(k, &fresh);
	return verdict;
}
