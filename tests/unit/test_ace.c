/*
 * test_ace.c - the bounded workload enumeration (traces/ace.c): its size,
 * workload i as a pure function of (seq, ops, files, i), every workload a
 * setup then N core ops whose last has a persistence point, shards of the
 * index space, and bad sets refused with a message.
 */
#include "traces/ace.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *text_of(const struct wl_workload *w)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	cr_assert_eq(wl_print(f, w), 0);
	fclose(f);
	return buf;
}

static struct ace *make(unsigned seq, const char *ops, const char *files)
{
	struct ace *a;
	char err[256];
	int r = ace_new(seq, ops, files, &a, err, sizeof(err));
	cr_assert_eq(r, 0, "ace_new: %s", err);
	return a;
}

static bool persists(enum wl_kind k)
{
	return k == WL_FSYNC || k == WL_FDATASYNC || k == WL_SYNC;
}

Test(ace, seq1_default_size_and_shape)
{
	struct ace *a = make(1, NULL, NULL);
	cr_assert_eq(ace_count(a), 222);
	size_t setup = ace_setup_ops(a);
	cr_assert_eq(setup, 8, "mkdir /A, 2 x (create, write, setxattr), sync: %zu", setup);
	for (uint64_t i = 0; i < ace_count(a); i++) {
		struct wl_workload w;
		char err[256];
		cr_assert_eq(ace_workload(a, i, &w, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(w.n, setup + 2, "workload %lu has %zu ops", (unsigned long)i, w.n);
		cr_assert_eq(w.ops[setup - 1].kind, WL_SYNC);
		cr_assert(!persists(w.ops[setup].kind));
		cr_assert(persists(w.ops[setup + 1].kind));
		char name[32];
		snprintf(name, sizeof(name), "seq-1/%lu", (unsigned long)i);
		cr_assert_str_eq(w.name, name);
		wl_free(&w);
	}
	ace_free(a);
}

Test(ace, pure_function_of_index)
{
	struct ace *a = make(2, "write,rename,unlink", "/x,/D/y,/D/z");
	struct ace *b = make(2, "write,rename,unlink", "/x,/D/y,/D/z");
	cr_assert_eq(ace_count(a), ace_count(b));
	uint64_t n = ace_count(a);
	uint64_t idx[] = { 0, 1, n / 3, n / 2, n - 1 };
	char *prev = NULL;
	for (size_t j = 0; j < sizeof(idx) / sizeof(idx[0]); j++) {
		struct wl_workload w1, w2;
		char err[256];
		cr_assert_eq(ace_workload(a, idx[j], &w1, err, sizeof(err)), 0);
		cr_assert_eq(ace_workload(b, idx[j], &w2, err, sizeof(err)), 0);
		char *t1 = text_of(&w1), *t2 = text_of(&w2);
		cr_assert_str_eq(t1, t2);
		if (prev)
			cr_assert_str_neq(prev, t1, "two indices give one workload");
		free(prev);
		prev = t1;
		free(t2);
		wl_free(&w1);
		wl_free(&w2);
	}
	free(prev);
	ace_free(a);
	ace_free(b);
}

Test(ace, seq2_is_steps_times_final_steps)
{
	struct ace *one = make(1, "create,link", NULL);
	struct ace *two = make(2, "create,link", NULL);
	uint64_t final = ace_count(one);
	uint64_t n = ace_count(two);
	cr_assert_eq(n % final, 0);
	/* The first op ranges over the final steps and the same ops without a persistence point. */
	cr_assert_gt(n / final, final);
	struct wl_workload w;
	char err[256];
	cr_assert_eq(ace_workload(two, n - 1, &w, err, sizeof(err)), 0);
	cr_assert(persists(w.ops[w.n - 1].kind));
	wl_free(&w);
	cr_assert_eq(ace_workload(two, n, &w, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "beyond the enumeration"));
	ace_free(one);
	ace_free(two);
}

Test(ace, bad_sets_refused)
{
	struct ace *a;
	char err[256];
	cr_assert_eq(ace_new(0, NULL, NULL, &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(4, NULL, NULL, &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, "write,bogus", NULL, &a, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown operation 'bogus'"), "%s", err);
	cr_assert_eq(ace_new(1, ",,", NULL, &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "/a", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "/a,/b,/c,/d,/e", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "/a/b/c,/d", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "a,/d", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "/a,/a", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "/a,/B", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "/a,/x y", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new(1, NULL, "/a,/../b", &a, err, sizeof(err)), -EINVAL);
}

/* ---- The subvolume set (ace_new_subvol) ---- */

static struct ace *make_subvol(unsigned seq, const char *ops, const char *files)
{
	struct ace *a;
	char err[256];
	int r = ace_new_subvol(seq, ops, files, &a, err, sizeof(err));
	cr_assert_eq(r, 0, "ace_new_subvol: %s", err);
	return a;
}

static bool commits(enum wl_kind k)
{
	return persists(k) || k == WL_SUBVOL_CREATE || k == WL_SNAPSHOT || k == WL_SUBVOL_DELETE;
}

Test(ace, subvol_seq1_size_and_shape)
{
	struct ace *a = make_subvol(1, NULL, NULL);
	cr_assert_eq(ace_count(a), 141);
	size_t setup = ace_setup_ops(a);
	cr_assert_eq(setup, 7, "subvol-create /S, mkdir /S/A, create, write, setxattr /S/foo, "
			       "snapshot /S /T, sync: %zu", setup);
	size_t kinds[WL_NKINDS] = { 0 };
	for (uint64_t i = 0; i < ace_count(a); i++) {
		struct wl_workload w;
		char err[256];
		cr_assert_eq(ace_workload(a, i, &w, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(w.n, setup + 2, "workload %lu has %zu ops", (unsigned long)i, w.n);
		cr_assert_eq(w.ops[0].kind, WL_SUBVOL_CREATE);
		cr_assert_str_eq(w.ops[0].path, "/S");
		cr_assert_eq(w.ops[setup - 2].kind, WL_SNAPSHOT);
		cr_assert_str_eq(w.ops[setup - 2].path2, "/T");
		cr_assert(!persists(w.ops[setup].kind));
		cr_assert(persists(w.ops[setup + 1].kind));
		/* the subvolume operations commit: a sync is their only persistence point */
		if (commits(w.ops[setup].kind))
			cr_assert_eq(w.ops[setup + 1].kind, WL_SYNC);
		kinds[w.ops[setup].kind]++;
		char name[40];
		snprintf(name, sizeof(name), "seq-1-subvol/%lu", (unsigned long)i);
		cr_assert_str_eq(w.name, name);
		wl_free(&w);
	}
	cr_assert_eq(kinds[WL_SNAPSHOT], 3, "snapshot /S /U, /S /U ro, /T /U");
	cr_assert_eq(kinds[WL_SUBVOL_CREATE], 1);
	cr_assert_eq(kinds[WL_SUBVOL_DELETE], 4, "/S/N, /T, /S, /U");
	cr_assert_eq(kinds[WL_SUBVOL_SYNC], 1);
	cr_assert_eq(kinds[WL_MKDIR] + kinds[WL_SYMLINK] + kinds[WL_SETXATTR] + kinds[WL_CHMOD], 0);
	ace_free(a);
}

Test(ace, subvol_seq2_and_subsets)
{
	struct ace *one = make_subvol(1, NULL, NULL), *two = make_subvol(2, NULL, NULL);
	uint64_t final = ace_count(one), n = ace_count(two);
	cr_assert_eq(n % final, 0);
	cr_assert_eq(n, 26367, "the seq-2 subvolume campaign: %lu", (unsigned long)n);
	struct wl_workload w;
	char err[256];
	cr_assert_eq(ace_workload(two, n - 1, &w, err, sizeof(err)), 0);
	cr_assert_str_eq(w.name, "seq-2-subvol/26366");
	wl_free(&w);
	ace_free(one);
	ace_free(two);
	/* a subset, other files (in /S and /T) */
	struct ace *s = make_subvol(1, "snapshot,write", "/x,/D/y");
	cr_assert_eq(ace_count(s), 3 + (2 * 2 * 2 + 1) * 4,
		     "3 snapshots; 2 writes of 2 files in /S and in /T and one to /U, each with "
		     "4 persistence points: %lu", (unsigned long)ace_count(s));
	cr_assert_eq(ace_workload(s, 0, &w, err, sizeof(err)), 0);
	cr_assert_str_eq(w.ops[1].path, "/S/D");
	cr_assert_str_eq(w.ops[2].path, "/S/x");
	wl_free(&w);
	ace_free(s);
	/* the default set stays as it was */
	struct ace *d = make(1, NULL, NULL);
	cr_assert_eq(ace_count(d), 222);
	ace_free(d);
}

Test(ace, subvol_bad_sets_refused)
{
	struct ace *a;
	char err[256];
	cr_assert_eq(ace_new_subvol(1, "mkdir", NULL, &a, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown operation 'mkdir' (known with --subvol: create,write,"), "%s",
		  err);
	cr_assert_eq(ace_new(1, "snapshot", NULL, &a, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown operation 'snapshot' (known: create,"), "%s", err);
	cr_assert_eq(ace_new_subvol(4, NULL, NULL, &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new_subvol(1, NULL, "/a", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(ace_new_subvol(1, "rmdir", "/a,/b", &a, err, sizeof(err)), 0,
		     "rmdir of the stand-in and of the empty subvolume: %s", err);
	cr_assert_eq(ace_count(a), 2);
	ace_free(a);
}

/* ---- Quota groups (ace_set_quota) ---- */

/* quota-enable goes first in the setup, which the explorer does not crash:
 * every workload is the one without it, one op later, named "-quota". */
Test(ace, quota_enable_leads_the_setup)
{
	struct ace *sets[2] = { make(2, "write,rename", NULL), make_subvol(1, NULL, NULL) };
	const char *names[2] = { "seq-2-quota/", "seq-1-subvol-quota/" };
	for (int s = 0; s < 2; s++) {
		struct ace *a = sets[s];
		size_t setup = ace_setup_ops(a);
		uint64_t n = ace_count(a);
		struct wl_workload plain[3];
		char err[256];
		for (uint64_t i = 0; i < 3; i++)
			cr_assert_eq(ace_workload(a, i * (n - 1) / 2, &plain[i], err, sizeof(err)), 0);
		cr_assert_eq(ace_set_quota(a), 0);
		cr_assert_eq(ace_set_quota(a), 0, "a second call does nothing");
		cr_assert_eq(ace_setup_ops(a), setup + 1);
		cr_assert_eq(ace_count(a), n);
		for (uint64_t i = 0; i < 3; i++) {
			struct wl_workload w;
			cr_assert_eq(ace_workload(a, i * (n - 1) / 2, &w, err, sizeof(err)), 0);
			cr_assert_eq(w.n, plain[i].n + 1);
			cr_assert_eq(w.ops[0].kind, WL_QUOTA_ENABLE);
			for (size_t j = 0; j < plain[i].n; j++) {
				char x[512], y[512];
				cr_assert_geq(wl_format(&plain[i].ops[j], x, sizeof(x)), 0);
				cr_assert_geq(wl_format(&w.ops[j + 1], y, sizeof(y)), 0);
				cr_assert_str_eq(y, x, "op %zu", j);
			}
			char name[48];
			snprintf(name, sizeof(name), "%s%lu", names[s],
				 (unsigned long)(i * (n - 1) / 2));
			cr_assert_str_eq(w.name, name);
			wl_free(&w);
			wl_free(&plain[i]);
		}
		ace_free(a);
	}
}
