/*
 * explore.c - crash-state exploration (see explore.h): record, replay onto a
 * copy of the disks, and at each crash point try the combinations of the
 * volatile writes; every state is mounted, checked and compared with the
 * oracle's model (model.c, which knows nothing of ref).
 */
#include "traces/explore.h"
#include "traces/manifest.h"
#include "traces/model.h"
#include "traces/run.h"
#include "ref/mkfs.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void explore_defaults(struct explore_opts *o)
{
	o->max_subset = 10;
	o->samples = 64;
	o->torn = 4;
	o->disk_size = UINT64_C(512) << 20;
	o->nodesize = 16384;
}

/* Where each operation's IO lies in the log, and whether it promised
 * durability on return. */
struct span {
	size_t start, end;
	bool persist;
	size_t line;
};

struct ex {
	const struct explore_opts *o;
	struct explore_result *res;
	const struct wl_workload *w;
	struct span *spans; /* nops + 1: the last is the final unmount */
	size_t nspans;
	char **snaps;       /* snaps[j]: the model's description after j operations */
	uint64_t rng;
	uint32_t sector;
};

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

static bool persists(enum wl_kind k)
{
	return k == WL_FSYNC || k == WL_FDATASYNC || k == WL_SYNC;
}

static int record(struct ex *x, sim_volume *vol, char *err, size_t errlen)
{
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 } };
	ref_fs *fs;
	if (ref_mount(vol, &mo, &fs, err, errlen))
		return -EIO;
	struct model *m = model_new();
	size_t n = x->w->n;
	x->spans = calloc(n + 1, sizeof(*x->spans));
	x->snaps = calloc(n + 2, sizeof(*x->snaps));
	if (!m || !x->spans || !x->snaps || !(x->snaps[0] = model_describe(m))) {
		model_free(m);
		ref_close(fs);
		return fail(err, errlen, ENOMEM, "%s", "out of memory");
	}
	int r = 0;
	for (size_t j = 0; j < n && !r; j++) {
		const struct wl_op *op = &x->w->ops[j];
		size_t before;
		sim_volume_log(vol, &before);
		int got = 0;
		char msg[256] = "";
		if (op->kind != WL_MARK && op->kind != WL_CRASH)
			got = -wl_exec_ref(fs, op, msg, sizeof(msg));
		size_t after;
		sim_volume_log(vol, &after);
		x->spans[j] = (struct span){ before, after, persists(op->kind) && got == 0, op->line };
		char merr[256];
		if (model_apply(m, op, got, merr, sizeof(merr))) {
			snprintf(err, errlen, "%s:%zu: the model cannot follow: %s",
				 x->w->name ? x->w->name : "workload", op->line, merr);
			r = -EINVAL;
		} else if (!(x->snaps[j + 1] = model_describe(m))) {
			r = fail(err, errlen, ENOMEM, "%s", "out of memory");
		}
		x->res->ops++;
	}
	size_t before;
	sim_volume_log(vol, &before);
	int u = ref_umount(fs);
	size_t after;
	sim_volume_log(vol, &after);
	x->spans[n] = (struct span){ before, after, u == 0, 0 };
	x->nspans = n + 1;
	if (!r && !(x->snaps[n + 1] = strdup(x->snaps[n])))
		r = fail(err, errlen, ENOMEM, "%s", "out of memory");
	if (!r && u)
		r = fail(err, errlen, EIO, "the final commit failed: %s", strerror(-u));
	model_free(m);
	return r;
}

/* ---- Judging one crash state ---- */

static char *describe(ref_fs *fs, char *why, size_t whylen)
{
	struct manifest m = { 0 };
	struct ref_ino root;
	char *text = NULL;
	size_t len = 0;
	if (ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &root)) {
		snprintf(why, whylen, "%s", ref_error(fs));
		return NULL;
	}
	if (mf_walk_ref(&m, fs, &root, why, whylen) == 0) {
		FILE *f = open_memstream(&text, &len);
		if (!f || mf_print(&m, f))
			snprintf(why, whylen, "out of memory");
		if (f)
			fclose(f);
	}
	mf_free(&m);
	return text;
}

/* The first line where two descriptions differ, as "expected X, found Y". */
static void first_diff(const char *want, const char *got, char *out, size_t len)
{
	while (*want && *got) {
		const char *we = strchr(want, '\n'), *ge = strchr(got, '\n');
		size_t wl = we ? (size_t)(we - want) : strlen(want), gl = ge ? (size_t)(ge - got) : strlen(got);
		if (wl != gl || memcmp(want, got, wl)) {
			snprintf(out, len, "expected \"%.*s\", found \"%.*s\"", (int)(wl > 300 ? 300 : wl), want,
				 (int)(gl > 300 ? 300 : gl), got);
			return;
		}
		want += wl + (we != NULL);
		got += gl + (ge != NULL);
	}
	if (*want)
		snprintf(out, len, "expected \"%.*s\", missing", (int)strcspn(want, "\n"), want);
	else if (*got)
		snprintf(out, len, "unexpected \"%.*s\"", (int)strcspn(got, "\n"), got);
	else
		snprintf(out, len, "no difference");
}

static void violation(struct ex *x, size_t point, const char *what)
{
	if (x->res->violations++ == 0)
		snprintf(x->res->violation, sizeof(x->res->violation), "crash at IO %zu: %s", point, what);
}

/* The legal states at log position i: the model after lo..hi operations. */
static void legal_range(const struct ex *x, size_t i, size_t *lo, size_t *hi)
{
	*lo = 0;
	*hi = 0;
	for (size_t j = 0; j < x->nspans; j++) {
		if (x->spans[j].persist && x->spans[j].end <= i)
			*lo = j + 1;
		if (x->spans[j].start < i || (x->spans[j].start == i && j < x->nspans - 1 &&
					      x->spans[j].end == i))
			*hi = j + 1;
	}
	if (*hi > x->nspans - 1)
		*hi = x->nspans - 1; /* the unmount changes nothing the model sees */
	if (*lo > *hi)
		*lo = *hi;
}

static void judge(struct ex *x, sim_volume *v, size_t point)
{
	char err[512], why[2048];
	ref_fs *fs;
	struct ref_open_opts oo = { .super_mirror = -1 };
	x->res->states++;
	if (ref_open(v, &oo, &fs, err, sizeof(err))) {
		snprintf(why, sizeof(why), "the file system does not mount: %s", err);
		violation(x, point, why);
		return;
	}
	char *report = NULL;
	size_t rlen = 0;
	FILE *out = open_memstream(&report, &rlen);
	struct ref_check_opts co = { .out = out };
	long errors = out ? ref_check(fs, &co) : -ENOMEM;
	if (out)
		fclose(out);
	if (errors != 0) {
		snprintf(why, sizeof(why), "check: %.400s", report ? report : "could not run");
		violation(x, point, why);
	} else {
		char *text = describe(fs, err, sizeof(err));
		size_t lo, hi;
		legal_range(x, point, &lo, &hi);
		bool ok = false;
		for (size_t j = lo; text && j <= hi && !ok; j++)
			ok = !strcmp(text, x->snaps[j]);
		if (!text) {
			snprintf(why, sizeof(why), "reading the recovered tree: %s", err);
			violation(x, point, why);
		} else if (!ok) {
			char d[1200];
			first_diff(x->snaps[hi], text, d, sizeof(d));
			snprintf(why, sizeof(why), "no legal state (after operations %zu..%zu, lines %zu..%zu): %s",
				 lo, hi, lo ? x->spans[lo - 1].line : 0, hi ? x->spans[hi - 1].line : 0, d);
			violation(x, point, why);
		}
		free(text);
	}
	free(report);
	ref_close(fs);
}

/* ---- Crash points ---- */

static void crash_with(struct ex *x, sim_volume *cursor, size_t point, const struct sim_crash_pick *picks,
		       size_t npicks)
{
	sim_volume *v;
	if (sim_volume_clone(cursor, &v)) {
		violation(x, point, "cloning the volume failed");
		return;
	}
	struct sim_crash_spec cs = { .policy = SIM_CRASH_EXPLICIT, .picks = picks, .npicks = npicks };
	if (sim_disk_crash(v, 0, &cs, NULL))
		violation(x, point, sim_volume_error(v));
	else
		judge(x, v, point);
	sim_volume_close(v);
}

static void explore_point(struct ex *x, sim_volume *cursor, size_t point)
{
	size_t np;
	const struct sim_pending *p = sim_disk_pending(cursor, 0, &np);
	struct sim_crash_pick *picks = calloc(np ? np : 1, sizeof(*picks));
	struct sim_pending *pend = np ? malloc(np * sizeof(*pend)) : NULL;
	if (!picks || (np && !pend)) {
		free(picks);
		free(pend);
		violation(x, point, "out of memory");
		return;
	}
	if (np)
		memcpy(pend, p, np * sizeof(*pend));
	x->res->crash_points++;
	if (x->o->log)
		fprintf(x->o->log, "crash point at IO %zu: %zu volatile writes\n", point, np);
	bool all = np <= x->o->max_subset;
	uint64_t rounds = all ? UINT64_C(1) << np : (uint64_t)x->o->samples + 2;
	for (uint64_t m = 0; m < rounds; m++) {
		size_t n = 0;
		for (size_t i = 0; i < np; i++) {
			bool keep = all ? (m >> i) & 1 : m == 0 ? false : m == 1 ? true : next(&x->rng) & 1;
			if (keep)
				picks[n++] = (struct sim_crash_pick){ pend[i].seq, 0, 0 };
		}
		crash_with(x, cursor, point, picks, n);
	}
	/* Torn writes: one multi-sector write cut short, the writes before it kept. */
	for (unsigned t = 0; t < x->o->torn && np; t++) {
		size_t k = (size_t)(next(&x->rng) % np);
		if (pend[k].nsectors < 2 || pend[k].discard)
			continue;
		size_t n = 0;
		for (size_t i = 0; i < k; i++)
			picks[n++] = (struct sim_crash_pick){ pend[i].seq, 0, 0 };
		uint32_t cnt = 1 + (uint32_t)(next(&x->rng) % (pend[k].nsectors - 1));
		picks[n++] = (struct sim_crash_pick){ pend[k].seq, 0, cnt };
		crash_with(x, cursor, point, picks, n);
	}
	free(picks);
	free(pend);
}

static int replay_one(sim_volume *v, const struct sim_io *io, uint32_t sector)
{
	switch (io->kind) {
	case SIM_IO_WRITE:
	case SIM_IO_WRITE_FUA:
		return sim_write(v, io->disk, io->sector * sector, io->payload,
				 (size_t)io->nsectors * sector, io->kind == SIM_IO_WRITE_FUA ? SIM_FUA : 0);
	case SIM_IO_FLUSH: return sim_flush(v, io->disk);
	case SIM_IO_DISCARD: return sim_discard(v, io->disk, io->sector * sector,
						(size_t)io->nsectors * sector);
	default: return 0;
	}
}

static int explore_log(struct ex *x, sim_volume *base, const struct sim_io *log, size_t n,
		       char *err, size_t errlen)
{
	sim_volume *cursor;
	if (sim_volume_clone(base, &cursor))
		return fail(err, errlen, ENOMEM, "%s", "cloning the volume failed");
	sim_volume_set_recording(cursor, false);
	int r = 0;
	for (size_t i = 0; i < n && !r; i++) {
		if (log[i].kind == SIM_IO_FLUSH || log[i].kind == SIM_IO_WRITE_FUA)
			explore_point(x, cursor, i);
		if (log[i].status == 0 && (r = replay_one(cursor, &log[i], x->sector)))
			snprintf(err, errlen, "replaying IO %zu: %s", i, sim_volume_error(cursor));
		if (i % 4096 == 0)
			sim_volume_log_clear(cursor);
	}
	if (!r)
		explore_point(x, cursor, n);
	sim_volume_close(cursor);
	return r;
}

int explore_run(const struct wl_workload *w, const struct explore_opts *o,
		struct explore_result *res, char *err, size_t errlen)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(res, 0, sizeof(*res));
	struct ex x = { .o = o, .res = res, .w = w, .rng = o->seed, .sector = 4096 };
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, o->disk_size, o->seed);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	cfg.record_payloads = true;
	sim_volume *vol = NULL, *base = NULL;
	int r = sim_volume_open(&cfg, &vol, err, errlen) ? -EIO : 0;
	struct ref_mkfs_opts mk;
	ref_mkfs_defaults(&mk);
	mk.seed = o->seed;
	mk.time = 1700000000;
	mk.nodesize = o->nodesize;
	if (!r && ref_mkfs(vol, &mk, NULL, err, errlen))
		r = -EIO;
	if (!r && (sim_flush(vol, 0) || sim_volume_clone(vol, &base)))
		r = fail(err, errlen, EIO, "%s", sim_volume_error(vol));
	if (!r) {
		sim_volume_log_clear(vol);
		r = record(&x, vol, err, errlen);
	}
	if (!r) {
		size_t n;
		const struct sim_io *log = sim_volume_log(vol, &n);
		r = explore_log(&x, base, log, n, err, errlen);
	}
	for (size_t j = 0; x.snaps && j <= w->n + 1; j++)
		free(x.snaps[j]);
	free(x.snaps);
	free(x.spans);
	if (base)
		sim_volume_close(base);
	if (vol)
		sim_volume_close(vol);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return r ? r : res->violations ? 1 : 0;
}
