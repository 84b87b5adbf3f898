/*
 * explore_logtree.c - the oracle's promises when fsync writes the log tree
 * (explore_opts.treelog).  A crash state is legal when it can be the state
 * of the last commit that can have been durable, snaps[c], with the log of
 * one log sync s after it replayed on top - every log sync that had returned
 * before the crash point included, the one in flight optional.
 *
 * What the log of s must bring is promised path by path, each sync after c
 * in turn overriding the earlier ones:
 * - each name of an fsynced inode: its line as the model had it after that
 *   fsync (exact; a directory's without its size, which after replay counts
 *   only the names the log brought);
 * - the directories above such a name that the commit lacked (the kernel
 *   logs new ancestors): their lines, exact but for the size;
 * - an fsynced directory's entries: every name it had then is there with
 *   its type (a new file's content is not promised: the kernel logs it
 *   "exists only", and it comes back empty), and every name it had at the
 *   commit and no longer had then is gone;
 * - a name the fsynced inode had at the commit, in a directory that is still
 *   where it was and where the inode still has a name, and that no longer
 *   exists at the sync: it is gone (replay unlinks the inode's names there
 *   that the log lacks, the kernel's unlink_old_inode_refs: fstests
 *   generic/039, a hard link removed then the file fsynced).
 * A rename, unlink or rmdir after a sync takes back what it promised on
 * the names it touched (and below them): the log still holds the inode,
 * under whichever of its names replay finds.
 * Every other path is as some state between the commit and the sync had it
 * (nlink and directory sizes aside: replay may bring a file's new name
 * while the old one stays, as the kernel's does when only the new
 * directory was logged), or an empty file where some such state had a file
 * (logged "exists only" with a directory), or a name of the commit that
 * stayed showing a file an fsync logged (its hard link), or a name some
 * such state had showing what one had under another name (a rename the
 * log brought without the data written since); a path of the commit may
 * be missing only where some such state lacks it.  traces/README.md states
 * these promises case by case.
 */
#include "traces/explore_internal.h"
#include "traces/manifest.h"
#include "traces/workload.h"

#include <limits.h>
#include <stdio.h>
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

/* The parent path of an escaped manifest path ("/" for "/x"). */
static size_t parent_len(const char *p, size_t pl)
{
	size_t i = pl;
	while (i > 1 && p[i - 1] != '/')
		i--;
	return i > 1 ? i - 1 : 1;
}


/* The type letter of a line (field 1). */
static char type_of(const struct mline *m)
{
	size_t l;
	const char *t = field(m, 1, &l);
	return l == 1 ? *t : '?';
}

#define F_NLINK (1u << 5)
#define F_SIZE (1u << 6)

/* Equal lines but for the fields in skip (a bit per field number). */
static bool equal_but(const struct mline *a, const struct mline *b, unsigned skip)
{
	const char *pa = a->line, *ea = a->line + a->len;
	const char *pb = b->line, *eb = b->line + b->len;
	for (unsigned i = 0;; i++) {
		size_t la = strcspn(pa, " \n"), lb = strcspn(pb, " \n");
		if (pa + la > ea)
			la = (size_t)(ea - pa);
		if (pb + lb > eb)
			lb = (size_t)(eb - pb);
		if (!(i < 32 && skip & (1u << i)) && (la != lb || memcmp(pa, pb, la)))
			return false;
		pa += la;
		pb += lb;
		if (pa >= ea || pb >= eb)
			return pa >= ea && pb >= eb;
		pa++;
		pb++;
	}
}

/* A promised line: exact but for nlink (a name of the last commit the log
 * did not remove may stay beside the logged ones, as on Linux when its
 * directory was logged before the unlink) and a directory's size. */
static bool exact_ok(const struct mline *want, const struct mline *got)
{
	return equal_but(want, got, F_NLINK | (type_of(want) == 'd' ? F_SIZE : 0));
}

/* An unpromised line against a state's: equal but for nlink and a
 * directory's size; or an empty file where the state had a file. */
static bool loose_ok(const struct mline *m, const struct mline *got)
{
	char t = type_of(m);
	if (t != type_of(got))
		return false;
	if (equal_but(m, got, F_NLINK | (t == 'd' ? F_SIZE : 0)))
		return true;
	size_t l;
	const char *sz = field(got, 6, &l);
	return t == 'f' && l == 1 && *sz == '0';
}

/* Whether fields first..last of a and b are equal (last UINT_MAX: to the
 * end of both lines, which must have as many fields). */
static bool fields_equal(const struct mline *a, const struct mline *b, unsigned first, unsigned last)
{
	for (unsigned i = first; i <= last; i++) {
		size_t la, lb;
		const char *fa = field(a, (int)i, &la), *fb = field(b, (int)i, &lb);
		bool enda = fa >= a->line + a->len || !la, endb = fb >= b->line + b->len || !lb;
		if (enda || endb)
			return last == UINT_MAX ? enda && endb : enda == endb;
		if (la != lb || memcmp(fa, fb, la))
			return false;
	}
	return true;
}

enum pkind { P_EXACT, P_TYPE, P_ABSENT };

struct promise {
	const char *path;
	size_t plen;
	enum pkind kind;
	const struct mline *m; /* P_EXACT, P_TYPE: the model's line */
};

struct promises {
	struct promise *v;
	size_t n, cap;
};

/* Promises path; a later sync's promise replaces an earlier one, but an
 * entry's type alone does not replace what an fsync of it promised (the
 * kernel leaves an inode logged in this transaction as it is). */
/* The promise on path p, or NULL. */
static struct promise *promise_on(struct promises *ps, const char *p, size_t pl)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].plen == pl && !memcmp(ps->v[i].path, p, pl))
			return &ps->v[i];
	return NULL;
}

/* The xattr fields of a line (" x:name=value", sorted, at its end), from
 * the first; "" when it has none. */
static const char *xattrs_of(const struct mline *m, size_t *len)
{
	for (size_t i = 0; i + 3 <= m->len; i++)
		if (!memcmp(m->line + i, " x:", 3)) {
			*len = m->len - i;
			return m->line + i;
		}
	*len = 0;
	return "";
}

static bool same_xattrs(const struct mline *a, const struct mline *b)
{
	size_t la, lb;
	const char *xa = xattrs_of(a, &la), *xb = xattrs_of(b, &lb);
	while (la && (xa[la - 1] == '\n'))
		la--;
	while (lb && (xb[lb - 1] == '\n'))
		lb--;
	return la == lb && !memcmp(xa, xb, la);
}

static int promise(struct promises *ps, const char *p, size_t pl, enum pkind kind,
		   const struct mline *m)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct promise *o = &ps->v[i];
		if (o->plen != pl || memcmp(o->path, p, pl))
			continue;
		if (!(kind == P_TYPE && o->kind == P_EXACT && type_of(o->m) == type_of(m)))
			*o = (struct promise){ p, pl, kind, m };
		return 0;
	}
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 32;
		struct promise *nv = realloc(ps->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		ps->v = nv;
		ps->cap = cap;
	}
	ps->v[ps->n++] = (struct promise){ p, pl, kind, m };
	return 0;
}

/* Whether line m's path is an entry of directory d (path d, length dl). */
static bool entry_of(const struct mline *m, const char *d, size_t dl)
{
	return m->plen > dl && parent_len(m->path, m->plen) == dl && !memcmp(m->path, d, dl);
}

/* Whether one of the names (model_names_of lines) is in directory d. */
static bool has_name_in(const char *names, const char *d, size_t dl)
{
	for (const char *p = names; p && *p;) {
		size_t l = strcspn(p, "\n");
		if (parent_len(p, l) == dl && !memcmp(p, d, dl))
			return true;
		p += l + (p[l] == '\n');
	}
	return false;
}

/* The names the inode fsynced at op k had in state c and lost by then, in
 * directories where it still has a name and that are where they were:
 * promised absent (replay unlinks the inode's names there that the log
 * lacks).  A name that exists at k (another inode's now) is not promised. */
static int stale_names(const struct ex *x, size_t c, size_t k, const struct lines *after,
		       struct promises *ps)
{
	const struct idents *ci = &x->ids[c], *ki = &x->ids[k + 1];
	uint32_t ino = x->spans[k].ino;
	for (size_t i = 0; ino != MODEL_NO_INO && i < ci->n; i++) {
		const char *p = ci->v[i].path;
		size_t l = strlen(p);
		if (ci->v[i].ino != ino || l < 2 || find(after, p, l))
			continue;
		size_t dl = parent_len(p, l);
		char *d = strndup(p, dl);
		if (!d)
			return -1;
		uint32_t dc = model_ino_find(ci->v, ci->n, d), dk = model_ino_find(ki->v, ki->n, d);
		free(d);
		if (dc == dk && dc != MODEL_NO_INO && has_name_in(x->spans[k].logged, p, dl) &&
		    promise(ps, p, l, P_ABSENT, NULL))
			return -1;
	}
	return 0;
}

/* The promises of the log sync of op k (after: the model after it; base:
 * state c, the commit).  An earlier sync's promise on a path whose name
 * came or went since (an unlink takes a new entry out of the log again) no
 * longer holds. */
static int promises_of(const struct ex *x, size_t c, size_t k, const struct lines *base,
		       const struct lines *after, struct promises *ps)
{
	for (size_t i = 0; i < ps->n;) {
		const struct mline *m = find(after, ps->v[i].path, ps->v[i].plen);
		if (ps->v[i].kind == P_ABSENT ? m != NULL : !m || type_of(m) != type_of(ps->v[i].m))
			ps->v[i] = ps->v[--ps->n];
		else
			i++;
	}
	for (const char *p = x->spans[k].logged; p && *p;) {
		size_t l = strcspn(p, "\n");
		const struct mline *m = find(after, p, l);
		if (m && promise(ps, p, l, P_EXACT, m))
			return -1;
		/* Directories above it that the last commit did not have:
		 * there, as directories.  Their mode and owner are what a
		 * sync logged them with: the kernel logs a new ancestor that
		 * a sync of this transaction logged already only when its
		 * xattrs changed (need_log_inode), so a chmod since stays out. */
		for (size_t pl = parent_len(p, l); m && pl > 1; pl = parent_len(p, pl)) {
			if (find(base, p, pl))
				break;
			const struct mline *d = find(after, p, pl);
			/* ... unless its xattrs changed: then it is logged again,
			 * with what it has now (the earlier sync's exact promise
			 * no longer holds). */
			struct promise *o = d ? promise_on(ps, p, pl) : NULL;
			if (o && o->kind == P_EXACT && !same_xattrs(o->m, d))
				*o = (struct promise){ p, pl, P_TYPE, d };
			if (d && promise(ps, p, pl, P_TYPE, d))
				return -1;
		}
		/* A directory: its names then, and none it lost since the commit. */
		for (size_t i = 0; m && type_of(m) == 'd' && i < after->n; i++)
			if (entry_of(&after->v[i], p, l) &&
			    promise(ps, after->v[i].path, after->v[i].plen, P_TYPE, &after->v[i]))
				return -1;
		for (size_t i = 0; m && type_of(m) == 'd' && i < base->n; i++)
			if (entry_of(&base->v[i], p, l) &&
			    !find(after, base->v[i].path, base->v[i].plen) &&
			    promise(ps, base->v[i].path, base->v[i].plen, P_ABSENT, NULL))
				return -1;
		p += l + (p[l] == '\n');
	}
	return x->ids ? stale_names(x, c, k, after, ps) : 0;
}

/* A workload path as the description writes it (escaped, no "." or
 * empty components), malloc'd; NULL when out of memory. */
static char *norm_path(const char *raw)
{
	char *p = strdup("/");
	for (const char *c = raw; p && *c;) {
		size_t l = strcspn(c, "/");
		if (l) {
			char *q = mf_path_join(p, c, l);
			free(p);
			p = q;
		}
		c += l + (c[l] == '/');
	}
	return p;
}

/* Drops the promises on raw path and below it: a name moved or removed
 * after the sync that promised it (what was promised of the inode, the
 * log still holds, but under which name is the log's business). */
static int unpromise(struct promises *ps, const char *raw)
{
	char *p = norm_path(raw);
	if (!p)
		return -1;
	size_t pl = strlen(p);
	for (size_t i = 0; i < ps->n;) {
		const struct promise *o = &ps->v[i];
		if (o->plen >= pl && !memcmp(o->path, p, pl) && (o->plen == pl || o->path[pl] == '/'))
			ps->v[i] = ps->v[--ps->n];
		else
			i++;
	}
	free(p);
	return 0;
}

static int cmp_promise(const void *a, const void *b)
{
	const struct promise *x = a, *y = b;
	size_t n = x->plen < y->plen ? x->plen : y->plen;
	int c = memcmp(x->path, y->path, n);
	return c ? c : (x->plen > y->plen) - (x->plen < y->plen);
}

static const struct promise *promised(const struct promises *ps, const char *p, size_t pl)
{
	struct promise key = { p, pl, P_ABSENT, NULL };
	return bsearch(&key, ps->v, ps->n, sizeof(*ps->v), cmp_promise);
}

/* Whether got line g, a name some state gave an object, shows the type,
 * size and content that object had in some state and its mode, owner and
 * xattrs as it had them in some state (st[0..nst): states c..): what replay
 * makes of an inode logged "exists only" (the kernel's LOG_INODE_EXISTS: its
 * inode item and xattrs as they are, the size and data as the log or the
 * commit had them), which a directory's fsync does for its new entries, an
 * fsync for new ancestors and for inodes whose names it takes, and a link or
 * rename for an inode logged before (btrfs_log_new_name). */
/* Whether g shows object ino's data (type, size, content) as it was in
 * some state, its mode and owner as in some state and its xattrs as in
 * some state: replay keeps an existing inode's item when the log has it
 * "exists only", and replays the xattrs logged with it. */
static bool mix_of(const struct ex *x, size_t c, const struct lines *st, size_t nst,
		   const struct mline *g, uint32_t ino)
{
	bool data = false, attrs = false, xattrs = false;
	for (size_t j = 0; j < nst && !(data && attrs && xattrs); j++) {
		const struct idents *id = &x->ids[c + j];
		for (size_t i = 0; i < id->n; i++) {
			if (id->v[i].ino != ino)
				continue;
			const struct mline *m = find(&st[j], id->v[i].path, strlen(id->v[i].path));
			if (!m || !fields_equal(m, g, 1, 1))
				continue;
			data = data || fields_equal(m, g, 6, 7);
			attrs = attrs || fields_equal(m, g, 2, 4);
			xattrs = xattrs || fields_equal(m, g, 8, UINT_MAX);
			break; /* one line of the object per state is enough */
		}
	}
	return data && attrs && xattrs;
}

/* The path of object ino in identities id, or NULL. */
static const char *path_of(const struct idents *id, uint32_t ino)
{
	for (size_t i = 0; i < id->n; i++)
		if (id->v[i].ino == ino)
			return id->v[i].path;
	return NULL;
}

/* Whether got line g is, by the identity of its directory, what some state
 * had: replay puts a logged name into its directory by inode number, and a
 * directory the log did not rename keeps the name it had at the commit c,
 * so a name can show up under a directory path no state had (a file moved
 * into a directory that was itself renamed, the file then logged). */
static bool by_dir_identity(const struct ex *x, size_t c, const struct lines *st, size_t nst,
			    const struct mline *g)
{
	if (!x->ids || g->plen < 2)
		return false;
	size_t pl = parent_len(g->path, g->plen);
	const char *name = g->path + pl + (pl > 1);
	size_t nl = g->plen - (size_t)(name - g->path);
	char *pp = strndup(g->path, pl);
	if (!pp)
		return false;
	uint32_t dir = model_ino_find(x->ids[c].v, x->ids[c].n, pp);
	free(pp);
	bool ok = false;
	for (size_t j = 0; dir != MODEL_NO_INO && j < nst && !ok; j++) {
		const char *dp = path_of(&x->ids[c + j], dir);
		if (!dp || (strlen(dp) == pl && !memcmp(dp, g->path, pl)))
			continue; /* gone, or where it was: the path rules judged it */
		char *q = NULL;
		if (asprintf(&q, "%s/%.*s", strcmp(dp, "/") ? dp : "", (int)nl, name) < 0)
			return false;
		const struct mline *m = find(&st[j], q, strlen(q));
		uint32_t ino = model_ino_find(x->ids[c + j].v, x->ids[c + j].n, q);
		ok = m && (loose_ok(m, g) || mix_of(x, c, st, nst, g, ino));
		free(q);
	}
	return ok;
}

/* Whether got line g's path can be reached entry by entry, each directory's
 * entry as some state had it (replay brings names into directories by
 * inode, whatever names those directories have now), to an object whose
 * line in some state g shows, loosely or as an "exists only" mix. */
static bool by_entries(const struct ex *x, size_t c, const struct lines *st, size_t nst,
		       const struct mline *g)
{
	if (!x->ids || g->plen < 2)
		return false;
	enum { MAXC = 8 };
	uint32_t cur[MAXC] = { 0 }; /* the root, ROOT */
	size_t ncur = 1;
	const char *p = g->path + 1, *end = g->path + g->plen;
	bool ok = true;
	while (ok && p < end) {
		size_t l = strcspn(p, "/");
		if (p + l > end)
			l = (size_t)(end - p);
		uint32_t next[MAXC];
		size_t nn = 0;
		for (size_t a = 0; a < ncur; a++)
			for (size_t j = 0; j < nst && nn < MAXC; j++) {
				const char *dp = path_of(&x->ids[c + j], cur[a]);
				char *q = NULL;
				if (!dp || asprintf(&q, "%s/%.*s", strcmp(dp, "/") ? dp : "", (int)l, p) < 0)
					continue;
				uint32_t o = model_ino_find(x->ids[c + j].v, x->ids[c + j].n, q);
				free(q);
				bool seen = o == MODEL_NO_INO;
				for (size_t k = 0; k < nn && !seen; k++)
					seen = next[k] == o;
				if (!seen)
					next[nn++] = o;
			}
		memcpy(cur, next, nn * sizeof(*cur));
		ncur = nn;
		ok = nn > 0;
		p += l + 1;
	}
	for (size_t a = 0; ok && a < ncur; a++)
		for (size_t j = 0; j < nst; j++) {
			const char *op = path_of(&x->ids[c + j], cur[a]);
			const struct mline *m = op ? find(&st[j], op, strlen(op)) : NULL;
			if (m && (loose_ok(m, g) || mix_of(x, c, st, nst, g, cur[a])))
				return true;
		}
	return false;
}

static bool exists_only_mix(const struct ex *x, size_t c, const struct lines *st, size_t nst,
			    const struct mline *g)
{
	if (!x->ids)
		return false;
	char *p = strndup(g->path, g->plen);
	if (!p)
		return false;
	uint32_t inos[8];
	size_t ni = 0;
	for (size_t j = 0; j < nst && ni < 8; j++) {
		uint32_t i = model_ino_find(x->ids[c + j].v, x->ids[c + j].n, p);
		bool seen = i == MODEL_NO_INO;
		for (size_t q = 0; q < ni && !seen; q++)
			seen = inos[q] == i;
		if (!seen)
			inos[ni++] = i;
	}
	free(p);
	bool ok = false;
	for (size_t q = 0; q < ni && !ok; q++)
		ok = mix_of(x, c, st, nst, g, inos[q]);
	return ok;
}

/* Whether got can be snaps[c] with the log of the sync at op s replayed on
 * top (st[0..nst): the parsed states snaps[c..s+1]): 1, 0, -1. */
/* Drops the promises on the directories above path that the commit
 * (base) lacked. */
static int unpromise_new_ancestors(struct promises *ps, const struct lines *base, const char *path)
{
	char *p = strdup(path);
	if (!p)
		return -1;
	for (size_t pl = parent_len(p, strlen(p)); pl > 1; pl = parent_len(p, pl)) {
		p[pl] = 0;
		if (find(base, p, pl))
			break;
		for (size_t i = 0; i < ps->n;) {
			if (ps->v[i].plen == pl && !memcmp(ps->v[i].path, p, pl))
				ps->v[i] = ps->v[--ps->n];
			else
				i++;
		}
	}
	free(p);
	return 0;
}

/* Drops the promises on every name object ino has before or after op k. */
static int unpromise_object(const struct ex *x, size_t k, uint32_t ino, struct promises *ps)
{
	for (size_t i = 0; ino != MODEL_NO_INO && i < ps->n;) {
		char *p = strndup(ps->v[i].path, ps->v[i].plen);
		if (!p)
			return -1;
		bool named = model_ino_find(x->ids[k].v, x->ids[k].n, p) == ino ||
			     model_ino_find(x->ids[k + 1].v, x->ids[k + 1].n, p) == ino;
		free(p);
		if (named)
			ps->v[i] = ps->v[--ps->n];
		else
			i++;
	}
	return 0;
}

/* A link or rename at op k after a log sync since c: an inode the log
 * holds is logged again "exists only" (btrfs_log_new_name), with the
 * directories above its new name that the commit lacked.  The promises on
 * every name of the inodes the op moved, and on those directories, are
 * taken back; exists_only_mix judges what replay shows there. */
static int unpromise_relogged(const struct ex *x, size_t c, size_t k, const struct lines *base,
			      struct promises *ps)
{
	const struct wl_op *op = &x->w->ops[k];
	if (!x->ids || (op->kind != WL_LINK && op->kind != WL_RENAME))
		return 0;
	bool synced = false;
	for (size_t j = c; j < k && !synced; j++)
		synced = x->spans[j].log_sync;
	if (!synced)
		return 0;
	bool exchange = op->kind == WL_RENAME && op->flags & WL_RENAME_EXCHANGE;
	char *a = norm_path(op->path), *b = norm_path(op->path2);
	int r = a && b ? 0 : -1;
	if (!r)
		r = unpromise_object(x, k, model_ino_find(x->ids[k].v, x->ids[k].n, a), ps);
	if (!r && exchange)
		r = unpromise_object(x, k, model_ino_find(x->ids[k].v, x->ids[k].n, b), ps);
	if (!r)
		r = unpromise_new_ancestors(ps, base, b);
	if (!r && exchange)
		r = unpromise_new_ancestors(ps, base, a);
	free(a);
	free(b);
	return r;
}

static int judge(const struct ex *x, size_t c, size_t s, const struct lines *st, size_t nst,
		 const struct lines *got)
{
	struct promises ps = { 0 };
	int r = 1;
	for (size_t k = c; k <= s && r > 0; k++) {
		const struct wl_op *op = &x->w->ops[k];
		if (x->spans[k].log_sync && promises_of(x, c, k, &st[0], &st[k + 1 - c], &ps))
			r = -1;
		else if ((op->kind == WL_RENAME || op->kind == WL_UNLINK || op->kind == WL_RMDIR ||
			  op->kind == WL_LINK) &&
			 !x->res->results[k] &&
			 (unpromise(&ps, op->path) || (op->kind == WL_RENAME && unpromise(&ps, op->path2)) ||
			  unpromise_relogged(x, c, k, &st[0], &ps)))
			r = -1;
	}
	if (r > 0)
		qsort(ps.v, ps.n, sizeof(*ps.v), cmp_promise);
	for (size_t i = 0; r > 0 && i < ps.n; i++) {
		const struct promise *p = &ps.v[i];
		const struct mline *g = find(got, p->path, p->plen);
		if (p->kind == P_ABSENT ? g != NULL
					: !g || (p->kind == P_EXACT ? !exact_ok(p->m, g)
								    : type_of(p->m) != type_of(g)))
			r = 0;
		if (!r && getenv("BTRSIM_LOG_ORACLE_VERBOSE"))
			fprintf(stderr, "promise %d on %.*s broken\n", p->kind, (int)p->plen, p->path);
	}
	/* Every other path as some state between the commit and the sync had it. */
	for (size_t i = 0; r > 0 && i < got->n; i++) {
		const struct mline *g = &got->v[i];
		if (promised(&ps, g->path, g->plen))
			continue;
		/* Or a name of the commit that stayed, of an inode an fsync logged. */
		bool ok = false;
		for (size_t j = 0; j < ps.n && !ok; j++)
			ok = ps.v[j].kind == P_EXACT && type_of(ps.v[j].m) == 'f' &&
			     find(&st[0], g->path, g->plen) &&
			     equal_but(ps.v[j].m, g, 1u | F_NLINK);
		bool named = false;
		for (size_t j = 0; j < nst && !ok; j++) {
			const struct mline *m = find(&st[j], g->path, g->plen);
			ok = m && loose_ok(m, g);
			named = named || (m && type_of(m) == type_of(g));
		}
		/* Or a name some state had, showing what some state had under
		 * another name: the log brought a rename, not the data since. */
		unsigned skip = 1u | F_NLINK | (type_of(g) == 'd' ? F_SIZE : 0);
		for (size_t j = 0; j < nst && named && !ok; j++)
			for (size_t i2 = 0; i2 < st[j].n && !ok; i2++)
				ok = equal_but(&st[j].v[i2], g, skip);
		/* Or an inode logged "exists only": data of one state,
		 * attributes of another. */
		if (!ok)
			ok = exists_only_mix(x, c, st, nst, g);
		if (!ok)
			ok = by_dir_identity(x, c, st, nst, g);
		if (!ok)
			ok = by_entries(x, c, st, nst, g);
		r = ok;
		if (!r && getenv("BTRSIM_LOG_ORACLE_VERBOSE"))
			fprintf(stderr, "unpromised %.*s in no state\n", (int)g->len, g->line);
	}
	/* A path of the commit gone only where some such state lacks it. */
	for (size_t i = 0; r > 0 && i < st[0].n; i++) {
		const struct mline *b = &st[0].v[i];
		if (find(got, b->path, b->plen) || promised(&ps, b->path, b->plen))
			continue;
		bool gone = false;
		for (size_t j = 1; j < nst && !gone; j++)
			gone = !find(&st[j], b->path, b->plen);
		/* Or a name another object took since: the commit's object lost
		 * it, and replay unlinks the names a logged inode's log lacks
		 * (unlink_old_inode_refs) whoever has them now. */
		if (!gone && x->ids) {
			char *p = strndup(b->path, b->plen);
			uint32_t was = p ? model_ino_find(x->ids[c].v, x->ids[c].n, p) : MODEL_NO_INO;
			for (size_t j = 1; p && j < nst && !gone; j++)
				gone = model_ino_find(x->ids[c + j].v, x->ids[c + j].n, p) != was;
			free(p);
		}
		r = gone;
		if (!r && getenv("BTRSIM_LOG_ORACLE_VERBOSE"))
			fprintf(stderr, "%.*s missing\n", (int)b->len, b->line);
	}
	free(ps.v);
	return r;
}

/* The same with the states parsed. */
static int try_state(const struct ex *x, size_t c, size_t s, const struct lines *got)
{
	size_t nst = s + 2 - c;
	struct lines *st = calloc(nst, sizeof(*st));
	int r = st ? 1 : -1;
	for (size_t j = 0; j < nst && r > 0; j++)
		if (parse(x->snaps[c + j], &st[j]))
			r = -1;
	if (r > 0)
		r = judge(x, c, s, st, nst, got);
	for (size_t j = 0; st && j < nst; j++)
		free(st[j].v);
	free(st);
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
		if (must != SIZE_MAX)
			legal = try_state(x, c, must, &got);
		if (!legal && last != must)
			legal = try_state(x, c, last, &got);
	}
	free(got.v);
	return legal;
}
