/* replay.c - verifying a recorded run, rebuilding a crash state (replay.h). */
#include "traces/replay.h"
#include "faults/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Re-execution, compared with the record ---- */

struct cmp {
	struct store *s;
	int64_t id;
	const struct sim_io *log;  /* recorded */
	size_t nlog, mkfs_ios;
	const int *results;        /* recorded */
	size_t nresults;
	struct explore_sink sink;
	size_t states;
	int diverged;
	char why[1024];
	/* A kernel run: the kernel's requests differ in detail from run to run
	 * (timestamps, generations, allocation), so only their shape is
	 * compared: the flushes and the writes on each disk. */
	bool kernel;
	size_t flushes[2], writes[2]; /* recorded, replayed */
};

/* The flushes and writes of log[from, n). */
static void shape(const struct sim_io *log, size_t from, size_t n, size_t *flushes,
		  size_t *writes)
{
	*flushes = *writes = 0;
	for (size_t i = from; i < n; i++) {
		*flushes += log[i].kind == SIM_IO_FLUSH;
		*writes += log[i].kind == SIM_IO_WRITE || log[i].kind == SIM_IO_WRITE_FUA;
	}
}

static int diverge(struct cmp *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int diverge(struct cmp *c, const char *fmt, ...)
{
	if (!c->diverged) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->why, sizeof(c->why), fmt, ap);
		va_end(ap);
		c->diverged = 1;
	}
	return -1; /* stops the exploration */
}

static void io_text(const struct sim_io *io, char *buf, size_t len)
{
	int n = snprintf(buf, len, "disk %u %s sectors %llu+%u epoch %llu status %d csum %016llx",
			 io->disk, sim_io_kind_name(io->kind), (unsigned long long)io->sector,
			 io->nsectors, (unsigned long long)io->epoch, io->status,
			 (unsigned long long)io->csum);
	if (io->fault && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " fault %s", sim_fault_kind_name(io->fault));
}

static bool same_io(const struct sim_io *a, const struct sim_io *b)
{
	return a->disk == b->disk && a->kind == b->kind && a->sector == b->sector &&
	       a->nsectors == b->nsectors && a->epoch == b->epoch && a->status == b->status &&
	       a->fault == b->fault && a->csum == b->csum;
}

static int on_recorded(void *ctx, const struct sim_io *log, size_t n, size_t mkfs_ios,
		       const int *results, size_t nops)
{
	struct cmp *c = ctx;
	for (size_t j = 0; j < nops && j < c->nresults; j++)
		if (results[j] != c->results[j])
			return diverge(c, "op %zu: recorded result %s, replayed %s", j + 1,
				       wl_errno_name(c->results[j]) ? wl_errno_name(c->results[j]) : "?",
				       wl_errno_name(results[j]) ? wl_errno_name(results[j]) : "?");
	if (nops != c->nresults)
		return diverge(c, "recorded %zu op results, replayed %zu", c->nresults, nops);
	if (c->kernel) {
		shape(c->log, c->mkfs_ios, c->nlog, &c->flushes[0], &c->writes[0]);
		shape(log, mkfs_ios, n, &c->flushes[1], &c->writes[1]);
		if (c->flushes[0] != c->flushes[1])
			return diverge(c, "the kernel flushed %zu times when recorded, %zu now",
				       c->flushes[0], c->flushes[1]);
		return 0;
	}
	if (mkfs_ios != c->mkfs_ios)
		return diverge(c, "mkfs made %zu requests when recorded, %zu now", c->mkfs_ios,
			       mkfs_ios);
	for (size_t i = 0; i < n && i < c->nlog; i++)
		if (!same_io(&log[i], &c->log[i])) {
			char want[160], got[160];
			io_text(&c->log[i], want, sizeof(want));
			io_text(&log[i], got, sizeof(got));
			return diverge(c, "IO %zu: recorded \"%s\", replayed \"%s\"", i, want, got);
		}
	if (n != c->nlog)
		return diverge(c, "recorded %zu IO requests, replayed %zu (the first %zu agree)",
			       c->nlog, n, n < c->nlog ? n : c->nlog);
	return 0;
}

static int on_state(void *ctx, const struct explore_state *st)
{
	struct cmp *c = ctx;
	size_t point;
	char *picks, verdict[16], err[512];
	if (c->kernel) { /* other writes, other states: counted only */
		c->states++;
		return 0;
	}
	if (store_load_state(c->s, c->id, st->k, &point, &picks, verdict, err, sizeof(err)))
		return diverge(c, "crash state %zu: %s", st->k, err);
	int r = 0;
	if (point != st->point || strcmp(picks, st->picks) ||
	    strcmp(verdict, explore_verdict_name(st->verdict)))
		r = diverge(c, "crash state %zu: recorded IO %zu picks %s verdict %s, replayed IO %zu "
			    "picks %s verdict %s", st->k, point, picks, verdict, st->point, st->picks,
			    explore_verdict_name(st->verdict));
	free(picks);
	c->states++;
	return r;
}

int replay_verify(struct store *s, int64_t id, const char *build, FILE *out,
		  char *err, size_t errlen)
{
	struct store_run_row row;
	if (store_load_run(s, id, &row, err, errlen))
		return -1;
	bool other_build = build && row.build && strcmp(build, row.build);
	if (other_build)
		fprintf(out, "run %lld was recorded by another build (%s); this is %s\n", (long long)id,
			row.build, build);
	struct wl_workload w = { 0 };
	struct cmp c = { .s = s, .id = id, .mkfs_ios = row.mkfs_ios,
			 .kernel = row.o.target == EXPLORE_KERNEL };
	int *results = NULL;
	struct sim_io *log = NULL;
	struct fault_plan *plan = NULL;
	int ret = -1;
	if (wl_parse_text("recorded workload", row.workload, strlen(row.workload), &w, err, errlen))
		goto out;
	if (row.faults && fault_plan_parse_text("the run's fault plan", row.faults, strlen(row.faults),
						&plan, err, errlen))
		goto out;
	if (store_load_log(s, id, &log, &c.nlog, err, errlen) ||
	    store_load_results(s, id, &results, &c.nresults, err, errlen))
		goto out;
	c.log = log;
	c.results = results;
	c.sink = (struct explore_sink){ &c, on_recorded, on_state };
	struct explore_opts o = row.o;
	o.sink = &c.sink;
	o.faults = plan;
	/* The run's own pick minimization is part of what it recorded. */
	struct explore_result res;
	int r = explore_run(&w, &o, &res, err, errlen);
	free(res.results);
	if (c.diverged) {
		snprintf(err, errlen, "run %lld diverges: %s", (long long)id, c.why);
		ret = 1;
	} else if (r < 0) {
		/* err holds explore's message */
	} else if (c.kernel && (res.violations > 0) != (row.violations > 0)) {
		snprintf(err, errlen, "run %lld diverges: recorded %zu violations, replayed on the "
			 "kernel %zu", (long long)id, row.violations, res.violations);
		ret = 1;
	} else if (c.kernel) {
		fprintf(out, "run %lld replayed on the kernel: %zu op results the same; %zu flushes "
			"as recorded, %zu writes (recorded %zu); %zu crash states (recorded %zu), %zu "
			"violations (recorded %zu)\n", (long long)id, c.nresults, c.flushes[1],
			c.writes[1], c.writes[0], c.states, row.states, res.violations, row.violations);
		ret = 0;
	} else if (c.states != row.states || res.violations != row.violations) {
		snprintf(err, errlen, "run %lld diverges: recorded %zu crash states and %zu violations, "
			 "replayed %zu and %zu", (long long)id, row.states, row.violations, c.states,
			 res.violations);
		ret = 1;
	} else {
		fprintf(out, "run %lld replayed: %zu op results, %zu IO requests and %zu crash states "
			"are the same\n", (long long)id, c.nresults, c.nlog, c.states);
		ret = 0;
	}
out:
	if (ret == 1 && other_build) {
		size_t len = strlen(err);
		snprintf(err + len, errlen - len, " (the builds differ: recorded by %s, replayed by %s)",
			 row.build, build);
	}
	fault_plan_free(plan);
	store_log_free(log, c.nlog);
	free(results);
	wl_free(&w);
	store_run_row_free(&row);
	return ret;
}

/* ---- One crash state as disk images ---- */

/* Parses picks text (explore.h) against the volume's pending writes and
 * crashes every disk with them. */
static int crash_picks(sim_volume *v, const char *picks, char *err, size_t errlen)
{
	unsigned nd = sim_volume_ndisks(v);
	struct sim_crash_pick *pk[SIM_MAX_DISKS] = { 0 };
	size_t npk[SIM_MAX_DISKS] = { 0 };
	int ret = -1;
	const char *p = picks;
	while (*p == ' ')
		p++;
	if (!strcmp(p, "-"))
		p += 1;
	while (*p) {
		char *end;
		unsigned long d = strtoul(p, &end, 10);
		size_t np;
		if (end == p || *end != ':' || d >= nd)
			goto bad;
		const struct sim_pending *pend = sim_disk_pending(v, (unsigned)d, &np);
		p = end + 1;
		free(pk[d]);
		pk[d] = calloc(np ? np : 1, sizeof(**pk));
		if (!pk[d]) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		if (*p == '-') {
			p++;
		} else {
			for (;;) {
				unsigned long pos = strtoul(p, &end, 10);
				if (end == p || pos >= np || npk[d] >= np)
					goto bad;
				uint32_t count = 0;
				if (*end == '+') {
					p = end + 1;
					unsigned long cnt = strtoul(p, &end, 10);
					if (end == p || cnt == 0 || cnt >= pend[pos].nsectors)
						goto bad;
					count = (uint32_t)cnt;
				}
				pk[d][npk[d]++] = (struct sim_crash_pick){ pend[pos].seq, 0, count };
				p = end;
				if (*p != ',')
					break;
				p++;
			}
		}
		while (*p == ' ')
			p++;
	}
	for (unsigned d = 0; d < nd; d++) {
		struct sim_crash_spec cs = { .policy = SIM_CRASH_EXPLICIT, .picks = pk[d], .npicks = npk[d] };
		if (sim_disk_crash(v, d, &cs, NULL)) {
			snprintf(err, errlen, "crashing disk %u: %s", d, sim_volume_error(v));
			goto out;
		}
	}
	ret = 0;
	goto out;
bad:
	snprintf(err, errlen, "malformed picks \"%s\" (or they do not match the log's volatile writes)",
		 picks);
out:
	for (unsigned d = 0; d < nd; d++)
		free(pk[d]);
	return ret;
}

int replay_crash_state(struct store *s, int64_t id, size_t k, const char *dir, FILE *out,
		       char *err, size_t errlen)
{
	struct store_run_row row;
	if (store_load_run(s, id, &row, err, errlen))
		return -1;
	size_t point, nlog = 0;
	char *picks = NULL, verdict[16];
	struct sim_io *log = NULL;
	sim_volume *v = NULL;
	int ret = -1;
	if (store_load_state(s, id, k, &point, &picks, verdict, err, errlen) ||
	    store_load_log(s, id, &log, &nlog, err, errlen))
		goto out;
	if (point > nlog || point < row.mkfs_ios) {
		snprintf(err, errlen, "crash state %zu: crash point %zu is outside the log (%zu requests)",
			 k, point, nlog);
		goto out;
	}
	struct sim_volume_config cfg;
	sim_config_init(&cfg, row.o.ndisks, row.o.disk_size, row.o.seed);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	for (unsigned d = 0; d < row.o.ndisks; d++)
		cfg.disk[d].sector_size = explore_sector_size(&row.o);
	if (sim_volume_open(&cfg, &v, err, errlen))
		goto out;
	for (size_t i = 0; i < point; i++)
		if (explore_replay_io(v, &log[i])) {
			snprintf(err, errlen, "replaying IO %zu: %s", i, sim_volume_error(v));
			goto out;
		}
	if (crash_picks(v, picks, err, errlen))
		goto out;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	for (unsigned d = 0; d < row.o.ndisks; d++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/disk%u.img", dir, d);
		if (sim_disk_save_image(v, d, path)) {
			snprintf(err, errlen, "%s: %s", path, sim_volume_error(v));
			goto out;
		}
		fprintf(out, "%s\n", path);
	}
	fprintf(out, "run %lld crash state %zu: power lost before IO %zu, persisted %s; recorded "
		"verdict: %s\n", (long long)id, k, point, picks, verdict);
	ret = 0;
out:
	if (v)
		sim_volume_close(v);
	store_log_free(log, nlog);
	free(picks);
	store_run_row_free(&row);
	return ret;
}
