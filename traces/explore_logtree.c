/*
 * explore_logtree.c - the oracle's promises when fsync writes the log tree
 * (explore_opts.treelog): a crash state is legal when it is the state of the
 * last commit that can have been durable, snaps[c], with the log of one log
 * sync s after it replayed on top - every log sync that had returned before
 * the crash point included, the one in flight optional.  What the log of s
 * holds is every inode an fsync logged since c, as that fsync saw it: each
 * of its names with its content and attributes (the model after that fsync),
 * and the directories above them that the last commit did not have (logged
 * "exists only" by ref, as the kernel logs new ancestors).  Directories are
 * compared without their size: one gains a name on replay without its other
 * new entries, so its size is neither the commit's nor the fsync's (btrfs
 * check holds the size to the names it has).  traces/README.md states these
 * promises case by case.
 */
#include "traces/explore_internal.h"

#include <stdlib.h>
#include <string.h>

/* One manifest line: its path (the first field) and the whole line. */
struct mline {
	const char *path;
	size_t plen;
	const char *line;
	size_t len;
};

struct lines {
	struct mline *v;
	size_t n, cap;
};

static int cmp_path(const struct mline *a, const char *p, size_t pl)
{
	size_t n = a->plen < pl ? a->plen : pl;
	int c = memcmp(a->path, p, n);
	return c ? c : (a->plen > pl) - (a->plen < pl);
}

static int cmp_mline(const void *x, const void *y)
{
	const struct mline *b = y;
	return cmp_path(x, b->path, b->plen);
}

/* The lines of a manifest text, sorted by path (pointers into text). */
static int parse(const char *text, struct lines *out)
{
	out->v = NULL;
	out->n = out->cap = 0;
	for (const char *p = text; p && *p;) {
		size_t l = strcspn(p, "\n");
		if (out->n == out->cap) {
			size_t cap = out->cap ? 2 * out->cap : 64;
			struct mline *nv = realloc(out->v, cap * sizeof(*nv));
			if (!nv)
				return -1;
			out->v = nv;
			out->cap = cap;
		}
		out->v[out->n++] = (struct mline){ p, strcspn(p, " \n"), p, l };
		p += l + (p[l] == '\n');
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_mline);
	return 0;
}

static const struct mline *find(const struct lines *l, const char *p, size_t pl)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = cmp_path(&l->v[mid], p, pl);
		if (!c)
			return &l->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Sets (or adds) the line for its path in the expected state. */
static int put(struct lines *e, const struct mline *m)
{
	for (size_t i = 0; i < e->n; i++)
		if (!cmp_path(&e->v[i], m->path, m->plen)) {
			e->v[i] = *m;
			return 0;
		}
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 64;
		struct mline *nv = realloc(e->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		e->v = nv;
		e->cap = cap;
	}
	e->v[e->n++] = *m;
	return 0;
}

/* Field i (0-based, space-separated) of a line: where and how long. */
static const char *field(const struct mline *m, int i, size_t *len)
{
	const char *p = m->line, *end = m->line + m->len;
	for (int k = 0; k < i && p < end; k++) {
		p += strcspn(p, " \n");
		if (p < end)
			p++;
	}
	*len = strcspn(p, " \n");
	if (p + *len > end)
		*len = (size_t)(end - p);
	return p;
}

/* Equal lines; a directory's without its SIZE (field 6). */
static bool same(const struct mline *a, const struct mline *b)
{
	size_t tl;
	const char *t = field(a, 1, &tl);
	if (!(tl == 1 && *t == 'd'))
		return a->len == b->len && !memcmp(a->line, b->line, a->len);
	size_t al, bl;
	const char *as = field(a, 6, &al), *bs = field(b, 6, &bl);
	size_t ah = (size_t)(as - a->line), bh = (size_t)(bs - b->line);
	return ah == bh && !memcmp(a->line, b->line, ah) &&
	       a->len - ah - al == b->len - bh - bl &&
	       !memcmp(as + al, bs + bl, a->len - ah - al);
}

/* The parent path of an escaped manifest path ("/" for "/x"). */
static size_t parent_len(const char *p, size_t pl)
{
	size_t i = pl;
	while (i > 1 && p[i - 1] != '/')
		i--;
	return i > 1 ? i - 1 : 1;
}

/* Overlays the log sync of op k onto e: its logged paths as snaps[k+1] has
 * them, and their directories that the commit c lacks. */
static int overlay(const struct ex *x, size_t k, const struct lines *base,
		   const struct lines *after, struct lines *e)
{
	for (const char *p = x->spans[k].logged; p && *p;) {
		size_t l = strcspn(p, "\n");
		const struct mline *m = find(after, p, l);
		if (m && put(e, m))
			return -1;
		/* Directories above it that the last commit did not have. */
		for (size_t pl = parent_len(p, l); m && pl > 1; pl = parent_len(p, pl)) {
			if (find(base, p, pl))
				break;
			const struct mline *d = find(after, p, pl);
			if (d && put(e, d))
				return -1;
		}
		p += l + (p[l] == '\n');
	}
	return 0;
}

static bool equal_states(struct lines *e, const struct lines *s)
{
	if (e->n != s->n)
		return false;
	qsort(e->v, e->n, sizeof(*e->v), cmp_mline);
	for (size_t i = 0; i < e->n; i++)
		if (cmp_path(&e->v[i], s->v[i].path, s->v[i].plen) || !same(&e->v[i], &s->v[i]))
			return false;
	return true;
}

/* The state of commit c with the log syncs of ops c..s (s: SIZE_MAX for
 * none) replayed on top: 1 when it is the recovered state, 0 when not. */
static int try_state(const struct ex *x, size_t c, size_t s, const struct lines *base,
		     const struct lines *got)
{
	struct lines e = { malloc((base->n + 16) * sizeof(struct mline)), base->n, base->n + 16 };
	if (!e.v)
		return -1;
	memcpy(e.v, base->v, base->n * sizeof(*e.v));
	int r = 0;
	for (size_t k = c; s != SIZE_MAX && k <= s && !r; k++) {
		if (!x->spans[k].log_sync)
			continue;
		struct lines after;
		if (parse(x->snaps[k + 1], &after) || overlay(x, k, base, &after, &e))
			r = -1;
		free(after.v); /* (e keeps pointers into snaps[k + 1], not into after) */
	}
	if (!r)
		r = equal_states(&e, got);
	free(e.v);
	return r;
}

size_t explore_logtree_floor(const struct ex *x, size_t point, size_t lo, size_t hi)
{
	size_t nops = x->nspans ? x->nspans - 1 : 0;
	for (size_t k = lo; k < nops; k++)
		if (x->spans[k].log_sync && x->spans[k].end <= point && k + 1 > lo)
			lo = k + 1;
	return lo < hi ? lo : hi;
}

int explore_logtree_legal(const struct ex *x, size_t point, size_t lo, size_t hi, const char *text)
{
	struct lines got;
	if (parse(text, &got))
		return -1;
	int legal = 0;
	size_t nops = x->nspans ? x->nspans - 1 : 0;
	for (size_t c = lo; c <= hi && !legal; c++) {
		/* The log syncs after the commit c: the last that had returned
		 * before the crash point is in (with every earlier one: each sync
		 * writes the whole log); one in flight may be. */
		size_t must = SIZE_MAX, last = SIZE_MAX;
		for (size_t k = c; k < nops; k++) {
			if (!x->spans[k].log_sync || x->spans[k].start >= point)
				continue;
			last = k;
			if (x->spans[k].end <= point)
				must = k;
		}
		if (last == SIZE_MAX)
			continue; /* no log after c: the plain comparison said no */
		struct lines base;
		if (parse(x->snaps[c], &base)) {
			legal = -1;
			break;
		}
		legal = try_state(x, c, must, &base, &got);
		if (!legal && last != must)
			legal = try_state(x, c, last, &base, &got);
		free(base.v);
	}
	free(got.v);
	return legal;
}
