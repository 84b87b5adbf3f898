/*
 * harness_parse.c - the `parse` harness: the first byte picks a reader, the
 * rest is its input (fuzz/README.md, "The parse harness"):
 *
 *   byte % 3 == 0  the workload language: wl_parse_text; a parsed workload
 *                  must print back (wl_format) into lines that parse into
 *                  the same operations, and the oracle's model is fed every
 *                  operation as if it had succeeded, then describes itself;
 *   byte % 3 == 1  fault plans: fault_plan_parse_text; the canonical text
 *                  (fault_plan_format) must parse into a plan with the same
 *                  canonical text; the plan is armed on a small volume and
 *                  disarmed;
 *   byte % 3 == 2  the trace store: the bytes written to a file, opened with
 *                  store_open_existing, every reader run over runs 1 to 3
 *                  (runs, IO log, results, crash states, violations,
 *                  reproducers, findings, statistics).
 *
 * Oracle: the round trips above (a difference aborts with a violation);
 * otherwise nothing may crash, hang, leak or trip a sanitizer.
 */
#include "fuzz/fuzz.h"
#include "faults/plan.h"
#include "traces/findings.h"
#include "traces/model.h"
#include "traces/store.h"
#include "traces/workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_PREFIX "btrsim-fuzz-parse."
#define MODEL_MAX_OPS 256
#define MODEL_MAX_WRITE (UINT64_C(1) << 20)

static struct {
	char dir[512];      /* this process's temporary directory */
	char db[600];       /* the database file in it */
	sim_volume *vol;    /* for arming plans */
} G;

static void cleanup_files(void)
{
	static const char *const suffix[] = { "", "-wal", "-shm", "-journal" };
	char p[640];
	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", G.db, suffix[i]);
		unlink(p);
	}
}

static void cleanup_dir(void)
{
	if (!G.dir[0])
		return;
	cleanup_files();
	rmdir(G.dir);
}

/* Directories of harness processes that are gone (AFL++ ends its targets
 * with SIGKILL, so they cannot clean up after themselves). */
static void remove_stale(const char *base)
{
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)))
			continue;
		char *end;
		long pid = strtol(e->d_name + strlen(TMP_PREFIX), &end, 10);
		/* Only the directories of processes that no longer exist. */
		if (*end || pid <= 0 || !(kill((pid_t)pid, 0) && errno == ESRCH))
			continue;
		char p[1024];
		static const char *const files[] = { "db", "db-wal", "db-shm", "db-journal" };
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s/%s", base, e->d_name, files[i]);
			unlink(p);
		}
		snprintf(p, sizeof(p), "%s/%s", base, e->d_name);
		rmdir(p);
	}
	closedir(d);
}

static int parse_init(char *err, size_t errlen)
{
	int r = fuzz_process_init(err, errlen);
	if (r || G.dir[0])
		return r;
	const char *base = getenv("TMPDIR");
	if (!base || !base[0])
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	remove_stale(base);
	snprintf(G.dir, sizeof(G.dir), "%s/%s%ld", base, TMP_PREFIX, (long)getpid());
	if (mkdir(G.dir, 0700) && errno != EEXIST) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", G.dir, strerror(e));
		G.dir[0] = 0;
		return -e;
	}
	snprintf(G.db, sizeof(G.db), "%s/db", G.dir);
	atexit(cleanup_dir);
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 2, UINT64_C(64) << 20, 1);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	if (sim_volume_open(&cfg, &G.vol, err, errlen))
		return -ENOMEM;
	return 0;
}

/* ---- The workload language ---- */

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The fields of two ops that differ, or NULL when they are the same op. */
static const char *op_diff(const struct wl_op *a, const struct wl_op *b)
{
	if (a->kind != b->kind)
		return "kind";
	if (a->expect != b->expect)
		return "expect";
	if (!same_str(a->path, b->path) || !same_str(a->path2, b->path2))
		return "path";
	if (!same_str(a->name, b->name))
		return "name";
	if (a->vlen != b->vlen || (a->vlen && memcmp(a->value, b->value, a->vlen)))
		return "value";
	if (a->off != b->off || a->len != b->len || a->size != b->size || a->seed != b->seed)
		return "number";
	if (a->mode != b->mode || a->uid != b->uid || a->gid != b->gid || a->flags != b->flags)
		return "mode, owner or flags";
	if (a->atime.tv_sec != b->atime.tv_sec || a->atime.tv_nsec != b->atime.tv_nsec ||
	    a->mtime.tv_sec != b->mtime.tv_sec || a->mtime.tv_nsec != b->mtime.tv_nsec)
		return "times";
	return NULL;
}

static void roundtrip(const struct wl_workload *w, FILE *log)
{
	char small[512];
	for (size_t i = 0; i < w->n; i++) {
		const struct wl_op *op = &w->ops[i];
		int n = wl_format(op, small, sizeof(small));
		if (n < 0)
			fuzz_violation("parse: op %zu (line %zu) parsed but wl_format refuses it: %s", i,
				       op->line, strerror(-n));
		char *line = small;
		if ((size_t)n >= sizeof(small)) {
			line = malloc((size_t)n + 1);
			if (!line)
				return;
			wl_format(op, line, (size_t)n + 1);
		}
		struct wl_workload back = { 0 };
		char err[512];
		int r = wl_parse_text("formatted", line, (size_t)n, &back, err, sizeof(err));
		if (r == -ENOMEM) {
			if (line != small)
				free(line);
			return;
		}
		if (r || back.n != 1)
			fuzz_violation("parse: line %zu prints as '%.200s', which %s", op->line, line,
				       r ? err : "does not parse into one op");
		const char *d = op_diff(op, &back.ops[0]);
		if (d)
			fuzz_violation("parse: line %zu prints as '%.200s', which parses back with "
				       "another %s", op->line, line, d);
		wl_free(&back);
		if (line != small)
			free(line);
	}
	fuzz_log(log, "workload: %zu ops, each printed and parsed back the same", w->n);
}

static void feed_model(const struct wl_workload *w, FILE *log)
{
	struct model *m = model_new();
	if (!m)
		return;
	size_t applied = 0;
	for (size_t i = 0; i < w->n && i < MODEL_MAX_OPS; i++) {
		const struct wl_op *op = &w->ops[i];
		/* The model hashes every block a write touches when it describes
		 * itself: keep the writes small. */
		if (op->kind == WL_WRITE && op->len > MODEL_MAX_WRITE)
			continue;
		char err[256];
		int r = model_apply(m, op, 0, err, sizeof(err));
		if (r == -ENOMEM)
			break;
		applied += r == 0;
	}
	char *d = model_describe(m);
	fuzz_log(log, "model: %zu ops applied, description of %zu bytes", applied,
		 d ? strlen(d) : 0);
	free(d);
	model_free(m);
}

static void workload_text(const uint8_t *data, size_t len, FILE *log)
{
	struct wl_workload w = { 0 };
	char err[512];
	int r = wl_parse_text("input", (const char *)data, len, &w, err, sizeof(err));
	if (r) {
		fuzz_log(log, "workload refused: %s", err);
		return;
	}
	roundtrip(&w, log);
	feed_model(&w, log);
	wl_free(&w);
}

/* ---- Fault plans ---- */

static void plan_text(const uint8_t *data, size_t len, FILE *log)
{
	struct fault_plan *p, *q;
	char err[512];
	if (fault_plan_parse_text("input", (const char *)data, len, &p, err, sizeof(err))) {
		fuzz_log(log, "plan refused: %s", err);
		return;
	}
	char *t1 = NULL, *t2 = NULL;
	if (fault_plan_format(p, &t1)) {
		fault_plan_free(p);
		return;
	}
	int r = fault_plan_parse_text("canonical", t1, strlen(t1), &q, err, sizeof(err));
	if (r == -ENOMEM)
		goto out;
	if (r)
		fuzz_violation("parse: the canonical text of a plan is refused: %s; text: %.300s", err,
			       t1);
	if (fault_plan_format(q, &t2) == 0 && strcmp(t1, t2))
		fuzz_violation("parse: a plan's canonical text parses into another plan: '%.300s' "
			       "then '%.300s'", t1, t2);
	if (t2 && (fault_plan_npoints(p) != fault_plan_npoints(q) ||
		   fault_plan_nsims(p) != fault_plan_nsims(q)))
		fuzz_violation("parse: the canonical text has other line counts than the plan");
	fault_plan_free(q);
	/* Arming checks the sim lines against a volume of two 64 MiB disks. */
	r = fault_plan_arm(p, 1, G.vol, err, sizeof(err));
	fuzz_log(log, "plan: %zu points, %zu sim lines; arming: %s", fault_plan_npoints(p),
		 fault_plan_nsims(p), r ? err : "ok");
	if (r == 0) {
		size_t n;
		fault_plan_counts(&n);
		fault_plan_disarm();
	}
	sim_fault_clear(G.vol);
out:
	free(t1);
	free(t2);
	fault_plan_free(p);
}

/* ---- The trace store ---- */

static int write_file(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);
		if (n < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		done += (size_t)n;
	}
	return close(fd) ? -errno : 0;
}

static void store_file(const uint8_t *data, size_t len, FILE *log)
{
	cleanup_files();
	int r = write_file(G.db, data, len);
	if (r) {
		fuzz_log(log, "%s: %s", G.db, strerror(-r));
		return;
	}
	struct store *s;
	char err[1024];
	FILE *out = log ? log : fuzz_devnull();
	if (store_open_existing(G.db, &s, err, sizeof(err))) {
		fuzz_log(log, "store refused: %s", err);
		cleanup_files();
		return;
	}
	if (store_list_runs(s, 0, out, err, sizeof(err)))
		fuzz_log(log, "runs: %s", err);
	if (store_list_violations(s, 0, true, out, err, sizeof(err)))
		fuzz_log(log, "violations: %s", err);
	for (int64_t id = 1; id <= 3; id++) {
		struct store_run_row row;
		if (store_load_run(s, id, &row, err, sizeof(err)) == 0) {
			fuzz_log(log, "run %lld: %zu ops, %zu states", (long long)id, row.ops,
				 row.states);
			struct wl_workload w = { 0 };
			char werr[256];
			if (row.workload &&
			    wl_parse_text("stored", row.workload, strlen(row.workload), &w, werr,
					  sizeof(werr)) == 0)
				wl_free(&w);
			store_run_row_free(&row);
		} else {
			fuzz_log(log, "run %lld: %s", (long long)id, err);
		}
		struct sim_io *io;
		size_t n;
		if (store_load_log(s, id, &io, &n, err, sizeof(err)) == 0) {
			fuzz_log(log, "run %lld: IO log of %zu entries", (long long)id, n);
			store_log_free(io, n);
		} else {
			fuzz_log(log, "run %lld log: %s", (long long)id, err);
		}
		int *results;
		size_t nops;
		if (store_load_results(s, id, &results, &nops, err, sizeof(err)) == 0)
			free(results);
		else
			fuzz_log(log, "run %lld results: %s", (long long)id, err);
		for (size_t k = 0; k < 2; k++) {
			size_t point;
			char *picks, verdict[16];
			if (store_load_state(s, id, k, &point, &picks, verdict, err, sizeof(err)) == 0)
				free(picks);
		}
		if (store_print_reproducer(s, id, false, out, err, sizeof(err)))
			fuzz_log(log, "reproducer %lld: %s", (long long)id, err);
		struct finding f;
		if (findings_load(s, id, &f, err, sizeof(err)) == 0)
			finding_free(&f);
	}
	if (findings_list(s, NULL, out, err, sizeof(err)))
		fuzz_log(log, "findings: %s", err);
	if (fuzz_stats_list(s, NULL, out, err, sizeof(err)))
		fuzz_log(log, "statistics: %s", err);
	store_close(s);
	cleanup_files();
}

static int parse_one(const uint8_t *data, size_t len, FILE *log)
{
	if (!len) {
		fuzz_log(log, "empty input");
		return 0;
	}
	switch (data[0] % 3) {
	case 0: workload_text(data + 1, len - 1, log); break;
	case 1: plan_text(data + 1, len - 1, log); break;
	default: store_file(data + 1, len - 1, log); break;
	}
	return 0;
}

const struct fuzz_harness fuzz_harness_parse = {
	.name = "parse",
	.summary = "the workload, fault-plan and trace-store readers, with round trips",
	.init = parse_init,
	.one = parse_one,
};
