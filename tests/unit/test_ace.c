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
	cr_assert_eq(ace_count(a), 198);
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
