/*
 * test_gen.c - random workloads (wl_generate, traces/gen.c): a pure function
 * of the options, the exact number of operations, every op valid and every
 * expectation 0, the printed text parses back to itself, every kind of the
 * mix appears, the deliberately bad operations appear at about the rate
 * asked, and no `crash` or `mark` is ever generated; with subvols, the
 * subvolume operations too, and the default mix stays as it was without.
 */
#include "traces/run.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The workload of (seed, ops) with the defaults (plus tweaks by the caller). */
static void gen(struct wl_gen_opts *o, uint64_t seed, size_t ops, struct wl_workload *w)
{
	o->seed = seed;
	o->ops = ops;
	int r = wl_generate(o, w);
	cr_assert_eq(r, 0, "wl_generate: %d", r);
}

static void gen_default(uint64_t seed, size_t ops, struct wl_workload *w)
{
	struct wl_gen_opts o;
	memset(&o, 0xa5, sizeof(o)); /* defaults must set every field but seed and ops */
	wl_gen_defaults(&o);
	gen(&o, seed, ops, w);
}

/* wl_print's text of w, malloc'd. */
static char *text(const struct wl_workload *w)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	cr_assert_eq(wl_print(f, w), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

Test(gen, defaults)
{
	struct wl_gen_opts o = { .seed = 7, .ops = 9 };
	wl_gen_defaults(&o);
	cr_assert_eq(o.seed, 7);
	cr_assert_eq(o.ops, 9);
	cr_assert_eq(o.names, 6);
	cr_assert_eq(o.depth, 3);
	cr_assert_eq(o.max_offset, UINT64_C(1) << 30);
	cr_assert_eq(o.max_len, UINT64_C(1) << 20);
	cr_assert_eq(o.bad_percent, 5);
	cr_assert(o.syncs);
	cr_assert(!o.subvols);
	cr_assert(!o.quota);
}

Test(gen, same_seed_same_workload)
{
	struct wl_workload a = { 0 }, b = { 0 };
	gen_default(42, 500, &a);
	gen_default(42, 500, &b);
	char *ta = text(&a), *tb = text(&b);
	cr_assert_str_eq(ta, tb);
	/* a prefix: the first ops do not depend on how many follow */
	struct wl_workload c = { 0 };
	gen_default(42, 100, &c);
	char *tc = text(&c);
	cr_assert(!strncmp(ta, tc, strlen(tc)), "100 ops are a prefix of 500");
	free(ta);
	free(tb);
	free(tc);
	wl_free(&a);
	wl_free(&b);
	wl_free(&c);
}

Test(gen, different_seeds_differ)
{
	struct wl_workload a = { 0 }, b = { 0 };
	gen_default(1, 200, &a);
	gen_default(2, 200, &b);
	char *ta = text(&a), *tb = text(&b);
	cr_assert_str_neq(ta, tb);
	free(ta);
	free(tb);
	wl_free(&a);
	wl_free(&b);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return s ? fnv(h, s, strlen(s) + 1) : fnv(h, "", 0) * 31;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		h = (h ^ ((v >> (8 * i)) & 0xff)) * UINT64_C(0x100000001b3);
	return h;
}

/* Pins the ops of one workload (every field, not the printed text): the
 * generator gives the same ops on every machine and build, and a change to
 * it shows here (then update the value, on purpose: last for writes through
 * O_SYNC and O_DSYNC files, issue 19). */
Test(gen, pinned)
{
	struct wl_workload w = { 0 };
	gen_default(1, 2000, &w);
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (size_t i = 0; i < w.n; i++) {
		const struct wl_op *op = &w.ops[i];
		h = fnv_u64(h, (uint64_t)op->kind);
		h = fnv_str(h, op->path);
		h = fnv_str(h, op->path2);
		h = fnv_str(h, op->name);
		h = fnv_u64(h, op->vlen);
		h = fnv(h, op->value, op->vlen);
		h = fnv_u64(h, op->off);
		h = fnv_u64(h, op->len);
		h = fnv_u64(h, op->size);
		h = fnv_u64(h, op->seed);
		h = fnv_u64(h, op->mode);
		h = fnv_u64(h, op->uid);
		h = fnv_u64(h, op->gid);
		h = fnv_u64(h, (uint64_t)op->flags);
		h = fnv_u64(h, (uint64_t)op->atime.tv_sec);
		h = fnv_u64(h, (uint64_t)op->atime.tv_nsec);
		h = fnv_u64(h, (uint64_t)op->mtime.tv_sec);
		h = fnv_u64(h, (uint64_t)op->mtime.tv_nsec);
	}
	cr_assert_eq(h, UINT64_C(0xc4e122cc14c3f456), "seed 1, 2000 ops: hash %016llx", (unsigned long long)h);
	wl_free(&w);
}

Test(gen, exact_count_valid_ops)
{
	static const size_t counts[] = { 0, 1, 2, 17, 1000 };
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (uint64_t seed = 0; seed < 5; seed++) {
			struct wl_workload w = { 0 };
			gen_default(seed * 0x1234567 + 3, counts[c], &w);
			cr_assert_eq(w.n, counts[c], "seed %llu: %zu ops, want %zu",
				     (unsigned long long)seed, w.n, counts[c]);
			for (size_t i = 0; i < w.n; i++) {
				const struct wl_op *op = &w.ops[i];
				const char *why = wl_op_problem(op);
				cr_assert_null(why, "op %zu: %s", i, why);
				cr_assert_eq(op->expect, 0, "op %zu expects %d", i, op->expect);
				cr_assert_eq(op->line, i + 1, "op %zu: line %zu", i, op->line);
				cr_assert_neq(op->kind, WL_CRASH, "op %zu is a crash", i);
				cr_assert_neq(op->kind, WL_MARK, "op %zu is a mark", i);
			}
			wl_free(&w);
		}
	}
}

Test(gen, prints_and_parses_back)
{
	for (uint64_t seed = 10; seed < 14; seed++) {
		struct wl_workload w = { 0 };
		struct wl_gen_opts o;
		wl_gen_defaults(&o);
		o.bad_percent = 30; /* plenty of odd names and numbers */
		gen(&o, seed, 1500, &w);
		char *t = text(&w);
		struct wl_workload back = { 0 };
		char err[512];
		int r = wl_parse_text("gen.txt", t, strlen(t), &back, err, sizeof(err));
		cr_assert_eq(r, 0, "seed %llu: %s", (unsigned long long)seed, err);
		cr_assert_eq(back.n, w.n);
		char *t2 = text(&back);
		cr_assert_str_eq(t, t2, "seed %llu: the text does not parse back to itself",
				 (unsigned long long)seed);
		for (size_t i = 0; i < w.n; i++) {
			cr_assert_eq(back.ops[i].kind, w.ops[i].kind);
			cr_assert_eq(back.ops[i].line, w.ops[i].line, "line numbers are the text's");
		}
		free(t);
		free(t2);
		wl_free(&w);
		wl_free(&back);
	}
}

/* How many ops of each kind in w. */
static void count_kinds(const struct wl_workload *w, size_t n[WL_NKINDS])
{
	memset(n, 0, WL_NKINDS * sizeof(n[0]));
	for (size_t i = 0; i < w->n; i++)
		n[w->ops[i].kind]++;
}

Test(gen, every_kind_in_the_mix)
{
	struct wl_workload w = { 0 };
	gen_default(99, 2000, &w);
	size_t n[WL_NKINDS];
	count_kinds(&w, n);
	for (int k = 0; k < WL_NKINDS; k++) {
		cr_log_info("%-12s %zu", wl_kind_name(k), n[k]);
		if (k == WL_MARK || k == WL_CRASH || k >= WL_SUBVOL_CREATE) /* subvols: off */
			cr_assert_eq(n[k], 0, "%s generated", wl_kind_name(k));
		else
			cr_assert_gt(n[k], 0, "no %s in 2000 ops", wl_kind_name(k));
	}
	/* roughly the weights: write 25%, create 15%, chown 1% */
	cr_assert(n[WL_WRITE] > 350 && n[WL_WRITE] < 650, "write: %zu", n[WL_WRITE]);
	cr_assert(n[WL_CREATE] > 200 && n[WL_CREATE] < 500, "create: %zu", n[WL_CREATE]);
	cr_assert(n[WL_CHOWN] < 80, "chown: %zu", n[WL_CHOWN]);
	/* every rename and fallocate flavour */
	bool ren[3] = { 0 }, fal[5] = { 0 };
	size_t small = 0, aligned = 0, sparse = 0;
	for (size_t i = 0; i < w.n; i++) {
		const struct wl_op *op = &w.ops[i];
		if (op->kind == WL_RENAME)
			ren[op->flags] = true;
		if (op->kind == WL_FALLOCATE) {
			int f = op->flags;
			fal[f == 0 ? 0 : f == 1 ? 1 : f == 3 ? 2 : f == 0x10 ? 3 : 4] = true;
		}
		if (op->kind == WL_WRITE && op->off < (UINT64_C(1) << 62)) {
			small += op->len < 4096;
			aligned += op->len % 4096 == 0 && op->off % 4096 == 0;
			sparse += op->off >= 256 * 1024;
		}
	}
	cr_assert(ren[0] && ren[1] && ren[2], "rename: plain, noreplace and exchange");
	cr_assert(fal[0] && fal[1] && fal[2] && fal[3] && fal[4],
		  "fallocate: plain, keep-size, punch-hole, zero-range and zero-range-keep-size");
	cr_assert_gt(small, n[WL_WRITE] / 4, "many small writes: %zu", small);
	cr_assert_gt(aligned, 10, "some sector-aligned writes: %zu", aligned);
	cr_assert_gt(sparse, 10, "some writes far out: %zu", sparse);
	wl_free(&w);
}

/* The subvolume operations: with subvols they appear (snapshots read-only
 * too, of the top level too), every op is valid and prints back; nothing is
 * steered around the corners where ref once differed from Linux:
 * subvolumes' roots (names s*) are renamed and removed with rmdir (traces/README.md, "Random workloads"). */
Test(gen, subvols_in_the_mix)
{
	struct wl_gen_opts o;
	wl_gen_defaults(&o);
	o.subvols = true;
	struct wl_workload w = { 0 }, w2 = { 0 };
	gen(&o, 99, 3000, &w);
	gen(&o, 99, 3000, &w2);
	char *t1 = text(&w), *t2 = text(&w2);
	cr_assert_str_eq(t1, t2, "a pure function of the options");
	struct wl_workload back = { 0 };
	char err[256];
	cr_assert_eq(wl_parse_text("gen", t1, strlen(t1), &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.n, w.n);
	size_t n[WL_NKINDS];
	count_kinds(&w, n);
	for (int k = WL_SUBVOL_CREATE; k <= WL_SUBVOL_SYNC; k++) {
		cr_log_info("%-14s %zu", wl_kind_name(k), n[k]);
		cr_assert_gt(n[k], 5, "only %zu %s in 3000 ops", n[k], wl_kind_name(k));
	}
	cr_assert_lt(n[WL_SNAPSHOT], 150, "snapshots: %zu", n[WL_SNAPSHOT]);
	size_t ro = 0, top = 0, sv_renamed = 0, sv_rmdir = 0;
	for (size_t i = 0; i < w.n; i++) {
		const struct wl_op *op = &w.ops[i];
		cr_assert_null(wl_op_problem(op), "op %zu", i);
		if (op->kind == WL_SNAPSHOT) {
			ro += op->flags == WL_SNAP_RDONLY;
			top += !strcmp(op->path, "/");
		}
		const char *last = op->path ? strrchr(op->path, '/') : NULL;
		bool sv = last && last[1] == 's';
		sv_renamed += op->kind == WL_RENAME && sv;
		sv_rmdir += op->kind == WL_RMDIR && sv;
	}
	cr_assert_gt(sv_renamed, 5, "renames of subvolumes: %zu", sv_renamed);
	cr_assert_gt(sv_rmdir, 5, "rmdir of subvolumes: %zu", sv_rmdir);
	cr_assert_gt(ro, 2, "read-only snapshots: %zu", ro);
	cr_assert_gt(top, 0, "snapshots of the top level: %zu", top);
	free(t1);
	free(t2);
	wl_free(&w);
	wl_free(&w2);
	wl_free(&back);
}

/* Without subvols the stream is the one it was: the pinned hash holds (gen,
 * pinned) and nothing of the subvolume mix appears at any bad share. */
Test(gen, no_subvol_ops_when_off)
{
	struct wl_gen_opts o;
	wl_gen_defaults(&o);
	o.bad_percent = 50;
	struct wl_workload w = { 0 };
	gen(&o, 5, 3000, &w);
	size_t n[WL_NKINDS];
	count_kinds(&w, n);
	for (int k = WL_SUBVOL_CREATE; k <= WL_SUBVOL_SYNC; k++)
		cr_assert_eq(n[k], 0, "%s generated", wl_kind_name(k));
	wl_free(&w);
}

/* With quota: quota-enable first, then the very ops of the same options
 * without it (subvolumes or not); never quota-enable otherwise. */
Test(gen, quota_enable_first_then_the_same_ops)
{
	for (int sv = 0; sv < 2; sv++) {
		struct wl_gen_opts o;
		wl_gen_defaults(&o);
		o.subvols = sv;
		struct wl_workload plain = { 0 }, q = { 0 };
		gen(&o, 11, 400, &plain);
		o.quota = true;
		gen(&o, 11, 400, &q);
		cr_assert_eq(q.n, plain.n + 1);
		cr_assert_eq(q.ops[0].kind, WL_QUOTA_ENABLE);
		cr_assert_eq(q.ops[0].line, 1);
		cr_assert_null(wl_op_problem(&q.ops[0]));
		for (size_t i = 0; i < plain.n; i++) {
			char a[8192], b[8192];
			cr_assert_geq(wl_format(&plain.ops[i], a, sizeof(a)), 0);
			cr_assert_geq(wl_format(&q.ops[i + 1], b, sizeof(b)), 0);
			cr_assert_str_eq(b, a, "op %zu", i);
			cr_assert_neq(plain.ops[i].kind, WL_QUOTA_ENABLE, "op %zu", i);
			cr_assert_neq(q.ops[i + 1].kind, WL_QUOTA_ENABLE, "op %zu", i + 1);
		}
		wl_free(&plain);
		wl_free(&q);
	}
}

Test(gen, no_syncs_when_off)
{
	struct wl_workload w = { 0 };
	struct wl_gen_opts o;
	wl_gen_defaults(&o);
	o.syncs = false;
	gen(&o, 5, 2000, &w);
	size_t n[WL_NKINDS];
	count_kinds(&w, n);
	cr_assert_eq(n[WL_FSYNC] + n[WL_FDATASYNC] + n[WL_SYNC], 0);
	cr_assert_eq(w.n, 2000);
	wl_free(&w);
}

/* A component of 256 bytes anywhere in op's paths. */
static bool has_long_name(const char *p, size_t len)
{
	if (!p)
		return false;
	size_t run = 0;
	for (; *p; p++) {
		run = *p == '/' ? 0 : run + 1;
		if (run == len && (p[1] == 0 || p[1] == '/'))
			return true;
	}
	return false;
}

Test(gen, bad_operations)
{
	/* none of the odd ones at 0%, plenty at 50% */
	for (int pct = 0; pct <= 50; pct += 50) {
		struct wl_workload w = { 0 };
		struct wl_gen_opts o;
		wl_gen_defaults(&o);
		o.bad_percent = (unsigned)pct;
		gen(&o, 77, 2000, &w);
		size_t dots = 0, n256 = 0, n255 = 0, huge = 0;
		for (size_t i = 0; i < w.n; i++) {
			const struct wl_op *op = &w.ops[i];
			for (int j = 0; j < 2; j++) {
				const char *p = j ? op->path2 : op->path;
				if (!p || (j && op->kind == WL_SYMLINK))
					continue;
				size_t l = strlen(p);
				dots += (l >= 2 && !strcmp(p + l - 2, "/.")) ||
					(l >= 3 && !strcmp(p + l - 3, "/.."));
				n256 += has_long_name(p, 256);
				n255 += has_long_name(p, 255);
			}
			huge += (op->kind == WL_WRITE || op->kind == WL_FALLOCATE) &&
				op->off >= (UINT64_C(1) << 62);
		}
		if (pct == 0) {
			cr_assert_eq(dots + n256 + n255 + huge, 0, "bad ops at 0%%: %zu %zu %zu %zu",
				     dots, n256, n255, huge);
		} else {
			cr_assert_gt(dots, 10, "dots: %zu", dots);
			cr_assert_gt(n256, 10, "256-byte names: %zu", n256);
			cr_assert_gt(n255, 10, "255-byte names: %zu", n255);
			cr_assert_gt(huge, 10, "huge offsets: %zu", huge);
		}
		wl_free(&w);
	}
}

/* Components of path p. */
static unsigned components(const char *p)
{
	unsigned n = 0;
	for (; *p; p++)
		n += *p != '/' && (p[-1] == '/');
	return n;
}

Test(gen, depth_respected)
{
	for (unsigned depth = 0; depth <= 4; depth++) {
		struct wl_workload w = { 0 };
		struct wl_gen_opts o;
		wl_gen_defaults(&o);
		o.depth = depth;
		o.bad_percent = 0;
		gen(&o, 1000 + depth, 3000, &w);
		unsigned deepest = 0;
		for (size_t i = 0; i < w.n; i++) {
			const struct wl_op *op = &w.ops[i];
			unsigned c = components(op->path ? op->path : "/");
			if (op->kind == WL_MKDIR)
				cr_assert_leq(c, depth, "line %zu: mkdir %s deeper than %u", i + 1,
					      op->path, depth);
			cr_assert_leq(c, depth + 1, "line %zu: %s", i + 1, op->path);
			if (op->path2 && op->kind != WL_SYMLINK)
				cr_assert_leq(components(op->path2), depth + 1, "line %zu: %s",
					      i + 1, op->path2);
			deepest = c > deepest ? c : deepest;
		}
		cr_assert_eq(deepest, depth + 1, "depth %u: deepest path %u", depth, deepest);
		wl_free(&w);
	}
}

Test(gen, small_options)
{
	/* depth 0, one name, tiny ranges, no syncs: still exact and valid */
	struct wl_gen_opts o = { .names = 1, .depth = 0, .max_offset = 0, .max_len = 1,
				 .bad_percent = 100, .syncs = false };
	for (int bad = 0; bad < 2; bad++) {
		o.bad_percent = bad ? 100 : 0;
		struct wl_workload w = { 0 };
		gen(&o, 3, 300, &w);
		cr_assert_eq(w.n, 300);
		for (size_t i = 0; i < w.n; i++) {
			cr_assert_null(wl_op_problem(&w.ops[i]));
			if (!bad && (w.ops[i].kind == WL_WRITE || w.ops[i].kind == WL_FALLOCATE))
				cr_assert(w.ops[i].off == 0 && w.ops[i].len <= 1);
			if (!bad)
				cr_assert_neq(w.ops[i].kind, WL_MKDIR, "mkdir at depth 0: %s",
					      w.ops[i].path);
		}
		wl_free(&w);
	}
}
