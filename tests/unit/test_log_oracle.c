/*
 * test_log_oracle.c - the crash oracle's promises for the fsync log
 * (traces/explore_logtree.c) judged on states written by hand: a workload
 * goes through the model, every op after the last sync is taken as having
 * returned, each fsync as a log sync, and explore_logtree_legal is asked
 * about recovered descriptions that replay may or may not produce.  The
 * explorer's own runs (tests/cli/test_explore.sh) only meet states ref makes;
 * these are the states a broken replay would make.
 */
#include "traces/explore_internal.h"
#include "traces/model.h"
#include "traces/workload.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(log_oracle);

struct run {
	struct wl_workload w;
	struct explore_opts o;
	struct explore_result res;
	struct ex x;
	size_t lo; /* the op after the last sync */
};

/* Applies the workload text to a model as if ref had run it, every op
 * succeeding, each fsync syncing the log. */
static void run_model(struct run *r, const char *text)
{
	memset(r, 0, sizeof(*r));
	char err[256];
	cr_assert_eq(wl_parse_text("t.wl", text, strlen(text), &r->w, err, sizeof(err)), 0, "%s", err);
	size_t n = r->w.n;
	r->o.treelog = true;
	r->x = (struct ex){ .o = &r->o, .res = &r->res, .w = &r->w, .nspans = n + 1 };
	r->x.spans = calloc(n + 1, sizeof(*r->x.spans));
	r->x.snaps = calloc(n + 2, sizeof(*r->x.snaps));
	r->x.ids = calloc(n + 2, sizeof(*r->x.ids));
	r->res.results = calloc(n + 1, sizeof(int));
	struct model *m = model_new();
	cr_assert(m && r->x.spans && r->x.snaps && r->x.ids && r->res.results);
	r->x.snaps[0] = model_describe(m);
	cr_assert_eq(model_inos(m, &r->x.ids[0].v, &r->x.ids[0].n), 0);
	for (size_t j = 0; j < n; j++) {
		const struct wl_op *op = &r->w.ops[j];
		cr_assert_eq(model_apply(m, op, 0, err, sizeof(err)), 0, "%s", err);
		struct span *s = &r->x.spans[j];
		*s = (struct span){ .start = 10 * j, .end = 10 * j + 5, .line = op->line };
		if (op->kind == WL_SYNC) {
			s->persist = true;
			r->lo = j + 1;
		} else if (op->kind == WL_FSYNC || op->kind == WL_FDATASYNC) {
			s->log_sync = true;
			s->logged = model_names_of(m, op->path);
			s->ino = model_ino_of(m, op->path);
		}
		r->x.snaps[j + 1] = model_describe(m);
		cr_assert_eq(model_inos(m, &r->x.ids[j + 1].v, &r->x.ids[j + 1].n), 0);
	}
	r->x.spans[n] = (struct span){ .start = 10 * n, .end = 10 * n + 5 };
	r->x.snaps[n + 1] = strdup(r->x.snaps[n]);
	model_free(m);
}

static void run_free(struct run *r)
{
	size_t n = r->w.n;
	for (size_t j = 0; j <= n + 1; j++) {
		free(r->x.snaps[j]);
		model_inos_free(r->x.ids[j].v, r->x.ids[j].n);
	}
	for (size_t j = 0; j <= n; j++)
		free(r->x.spans[j].logged);
	free(r->x.snaps);
	free(r->x.ids);
	free(r->x.spans);
	free(r->res.results);
	wl_free(&r->w);
}

/* Whether text is legal for a crash after every op (the last sync's commit
 * on disk with the log replayed on it). */
static int legal(const struct run *r, const char *text)
{
	size_t n = r->w.n;
	return explore_logtree_legal(&r->x, 10 * n, r->lo, n, text);
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The model's description after j ops with the line of path `from` copied
 * under the name `to` (a name replay left behind), sorted as manifest
 * sorts its lines. */
static char *with_extra_name(const struct run *r, size_t j, const char *from, const char *to)
{
	char *t = strdup(r->x.snaps[j]);
	char *v[256];
	size_t n = 0, fl = strlen(from), len = strlen(t) + 1;
	char extra[512] = "";
	for (char *save = NULL, *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		cr_assert_lt(n, 255);
		v[n++] = l;
		if (!strncmp(l, from, fl) && l[fl] == ' ')
			snprintf(extra, sizeof(extra), "%s%s", to, l + fl);
	}
	cr_assert(extra[0], "%s is not in the state", from);
	v[n++] = extra;
	len += strlen(extra) + 1;
	qsort(v, n, sizeof(*v), cmp_line);
	char *out = calloc(1, len);
	for (size_t i = 0; i < n; i++) {
		strcat(out, v[i]);
		strcat(out, "\n");
	}
	free(t);
	return out;
}

/* generic/039: a hard link removed, then the file fsynced: after replay
 * the removed name does not come back (replay unlinks the names the log
 * lacks in a directory where the file still has one). */
Test(log_oracle, a_hard_link_removed_before_the_fsync_stays_removed)
{
	struct run r;
	run_model(&r, "mkdir /d\n"
		      "create /d/a\n"
		      "write /d/a 0 5000 1\n"
		      "link /d/a /d/b\n"
		      "sync\n"
		      "unlink /d/b\n"
		      "write /d/a 0 100 2\n"
		      "fsync /d/a\n");
	size_t n = r.w.n;
	/* Replay's result: the state after the fsync. */
	cr_assert_eq(legal(&r, r.x.snaps[n]), 1);
	/* The same with /d/b back: no legal state. */
	char *bad = with_extra_name(&r, n, "/d/a", "/d/b");
	cr_assert_eq(legal(&r, bad), 0, "a removed hard link came back:\n%s", bad);
	free(bad);
	run_free(&r);
}

/* A name lost in another directory than the ones the file still has names
 * in is not promised gone: the kernel logs only the directories of its
 * current names, and such a name may stay. */
Test(log_oracle, a_name_removed_from_another_directory_may_stay)
{
	struct run r;
	run_model(&r, "mkdir /d\n"
		      "mkdir /e\n"
		      "create /d/a\n"
		      "write /d/a 0 5000 1\n"
		      "link /d/a /e/x\n"
		      "sync\n"
		      "unlink /e/x\n"
		      "fsync /d/a\n");
	size_t n = r.w.n;
	char *kept = with_extra_name(&r, n, "/d/a", "/e/x");
	cr_assert_eq(legal(&r, kept), 1, "a name in a directory not logged was judged:\n%s", kept);
	free(kept);
	run_free(&r);
}

/* A rename within a directory, then an fsync of the file: the old name is
 * gone with the new one there. */
Test(log_oracle, the_old_name_of_a_file_renamed_then_fsynced_is_gone)
{
	struct run r;
	run_model(&r, "mkdir /d\n"
		      "create /d/a\n"
		      "write /d/a 0 5000 1\n"
		      "sync\n"
		      "rename /d/a /d/n\n"
		      "fsync /d/n\n");
	size_t n = r.w.n;
	cr_assert_eq(legal(&r, r.x.snaps[n]), 1);
	char *both = with_extra_name(&r, n, "/d/n", "/d/a");
	cr_assert_eq(legal(&r, both), 0, "both names after the rename and fsync:\n%s", both);
	free(both);
	run_free(&r);
}

/* A name taken again by another file after the sync is not promised gone. */
Test(log_oracle, a_name_taken_again_is_not_promised_gone)
{
	struct run r;
	run_model(&r, "mkdir /d\n"
		      "create /d/a\n"
		      "link /d/a /d/b\n"
		      "sync\n"
		      "unlink /d/b\n"
		      "create /d/b\n"
		      "fsync /d/a\n");
	size_t n = r.w.n;
	cr_assert_eq(legal(&r, r.x.snaps[n]), 1);
	run_free(&r);
}

/* A state's description without the line of path `drop`, and with the line
 * of path `path` replaced by `line` (both may be NULL). */
static char *edited(const char *snap, const char *drop, const char *path, const char *line)
{
	char *out = calloc(1, strlen(snap) + (line ? strlen(line) : 0) + 2);
	cr_assert(out);
	for (const char *l = snap; *l;) {
		size_t len = strcspn(l, "\n");
		size_t dl = drop ? strlen(drop) : 0, pl = path ? strlen(path) : 0;
		if (drop && len > dl && !strncmp(l, drop, dl) && l[dl] == ' ') {
			/* dropped */
		} else if (path && len > pl && !strncmp(l, path, pl) && l[pl] == ' ') {
			strcat(out, line);
			strcat(out, "\n");
		} else {
			strncat(out, l, len + 1);
		}
		l += len + (l[len] == '\n');
	}
	return out;
}

/* A new directory fsynced, its xattrs changed, then a new file in it
 * fsynced: the kernel logs the directory again (need_log_inode: its xattrs
 * changed) with what it has now, so its later xattr and entries are legal,
 * and a sibling never synced is not there (found by a random campaign). */
Test(log_oracle, a_synced_new_directory_relogged_for_its_xattrs)
{
	struct run r;
	run_model(&r, "mkdir /d5\n"
		      "mkdir /d1\n"
		      "fdatasync /d5\n"
		      "create /d5/f5\n"
		      "setxattr /d5 user.a \"x\"\n"
		      "fsync /d5/f5\n");
	size_t n = r.w.n;
	/* Linux 6.18's replay: / holds d5 only (size 4), d5 with f5 and user.a. */
	char *kernel = edited(r.x.snaps[n], "/d1", "/", "/ d 755 0 0 1 4 -");
	cr_assert_eq(legal(&r, kernel), 1, "the kernel's replay was judged illegal:\n%s", kernel);
	free(kernel);
	/* A d5 without f5 (the fsynced file lost) is still no legal state. */
	char *lost = edited(r.x.snaps[n], "/d5/f5", NULL, NULL);
	cr_assert_eq(legal(&r, lost), 0, "a fsynced file lost was judged legal:\n%s", lost);
	free(lost);
	run_free(&r);
}
