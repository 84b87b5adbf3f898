/*
 * gen.c - random workloads (wl_generate): a pure function of the options,
 * the same text on every machine.  A private splitmix64 stream drives every
 * choice; a light model of the namespace (which paths were made, of which
 * type, with which xattrs) lets most operations aim at names that exist, so
 * that most of them succeed.  The model is only a guess: a failure the model
 * did not foresee is fine, the run on the host records what the kernel said.
 * traces/README.md, "Random workloads", lists the mix.
 */
#include "traces/run.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* utimes times run past 2038: the same ops on every machine need a 64-bit time_t. */
_Static_assert(sizeof(time_t) >= 8, "wl_generate needs a 64-bit time_t");

#define KiB UINT64_C(1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)

void wl_gen_defaults(struct wl_gen_opts *o)
{
	o->names = 6;
	o->depth = 3;
	o->max_offset = GiB;
	o->max_len = MiB;
	o->bad_percent = 5;
	o->syncs = true;
	o->subvols = false;
	o->quota = false;
	o->text = false;
	o->defrag = false;
	o->reflink = false;
}

/* ---- the random stream: splitmix64 ------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* ---- the generator's state ---------------------------------------------- */

enum { E_DIR = 1, E_FILE = 2, E_LINK = 4, E_ANY = 7 };

/* xattr names the generator sets and removes (bit i of ent.xattrs: set). */
static const char *const xnames[] = {
	"user.a", "user.b", "user.tag", "user.checksum", "user.x0", "user.a_rather_longer_name",
};
#define NXNAMES (sizeof(xnames) / sizeof(xnames[0]))

struct ent {
	char *path; /* "/" or "/d0/f1": no trailing or doubled slash */
	int type;   /* E_DIR, E_FILE, E_LINK */
	int target; /* a symlink: the type its target had when it was made (0: none) */
	unsigned xattrs;
	unsigned lvl; /* level(path) */
	/* Subvolumes (wl_gen_opts.subvols): the subvolume it is in (0: the top
	 * level; a subvolume's root is in its own), whether it is a
	 * subvolume's root, in a read-only one, a snapshot's stand-in. */
	unsigned svid;
	bool subvol, ro, standin;
};

struct gen {
	const struct wl_gen_opts *o;
	uint64_t s;	  /* random state */
	unsigned names;	  /* >= 1 */
	struct ent *e;	  /* sorted by strcmp of path: a directory's subtree follows it */
	size_t n, cap;
	size_t *idx, idxcap; /* pick's scratch */
	char **tmp;	  /* strings of the op being built, freed after it */
	size_t ntmp, tmpcap;
	int err;	  /* the first -ENOMEM */
	unsigned svids;	  /* subvolume ids given out (0 is the top level) */
	struct wl_workload *w;
};

static uint64_t below(struct gen *g, uint64_t n)
{
	return n ? rnd(&g->s) % n : 0;
}

static bool chance(struct gen *g, unsigned pct)
{
	return below(g, 100) < pct;
}

/* A formatted string living until the op is emitted ("/" when out of memory:
 * the generation then fails with -ENOMEM anyway). */
static __attribute__((format(printf, 2, 3))) const char *str(struct gen *g, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r >= 0 && g->ntmp == g->tmpcap) {
		size_t cap = g->tmpcap ? 2 * g->tmpcap : 16;
		char **t = realloc(g->tmp, cap * sizeof(*t));
		if (t) {
			g->tmp = t;
			g->tmpcap = cap;
		}
	}
	if (r < 0 || g->ntmp == g->tmpcap) {
		if (r >= 0)
			free(s);
		g->err = -ENOMEM;
		return "/";
	}
	return g->tmp[g->ntmp++] = s;
}

static const char *join(struct gen *g, const char *dir, const char *name)
{
	return str(g, "%s%s%s", dir, dir[1] ? "/" : "", name);
}

/* A name of n copies of c. */
static const char *long_name(struct gen *g, char c, size_t n)
{
	char buf[300];
	memset(buf, c, n);
	buf[n] = 0;
	return str(g, "%s", buf);
}

/* Appends op (expect 0, line = its line in the printed workload). */
static void emit(struct gen *g, struct wl_op *op)
{
	op->expect = 0;
	op->line = g->w->n + 1;
	int r = wl_append(g->w, op);
	if (r && !g->err)
		g->err = r;
	for (size_t i = 0; i < g->ntmp; i++)
		free(g->tmp[i]);
	g->ntmp = 0;
}

/* ---- the model ----------------------------------------------------------- */

/* path is dir or inside it. */
static bool within(const char *path, const char *dir)
{
	if (!dir[1])
		return true;
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

static unsigned level(const char *path)
{
	unsigned l = 0;
	for (const char *c = path + 1; *c; c++)
		l += *c == '/';
	return path[1] ? l + 1 : 0;
}

/* The index of path, or where it would go (*found false). */
static size_t lookup(const struct gen *g, const char *path, bool *found)
{
	size_t lo = 0, hi = g->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(g->e[mid].path, path);
		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static long find(const struct gen *g, const char *path)
{
	bool found;
	size_t i = lookup(g, path, &found);
	return found ? (long)i : -1;
}

static void add(struct gen *g, const char *path, int type, int target)
{
	bool found;
	size_t i = lookup(g, path, &found);
	if (found)
		return;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		struct ent *e = realloc(g->e, cap * sizeof(*e));
		if (!e) {
			g->err = -ENOMEM;
			return;
		}
		g->e = e;
		g->cap = cap;
	}
	char *p = strdup(path);
	if (!p) {
		g->err = -ENOMEM;
		return;
	}
	/* In its parent's subvolume (the parent is there: it sorts before). */
	unsigned svid = 0;
	bool ro = false;
	char *slash = strrchr(p, '/');
	if (slash && slash != p) {
		*slash = 0;
		long pi = find(g, p);
		*slash = '/';
		if (pi >= 0) {
			svid = g->e[pi].svid;
			ro = g->e[pi].ro;
		}
	} else if (slash && p[1]) {
		svid = g->e[0].svid; /* "/" */
	}
	memmove(&g->e[i + 1], &g->e[i], (g->n - i) * sizeof(*g->e));
	g->e[i] = (struct ent){ p, type, target, 0, level(p), svid, false, ro, false };
	g->n++;
}

static void del(struct gen *g, size_t i)
{
	free(g->e[i].path);
	memmove(&g->e[i], &g->e[i + 1], (g->n - i - 1) * sizeof(*g->e));
	g->n--;
}

/* Entry i is a directory with something in it (its subtree follows it). */
static bool has_children(const struct gen *g, size_t i)
{
	return i + 1 < g->n && within(g->e[i + 1].path, g->e[i].path); /* paths are unique */
}

/* The entry of path's parent directory, or -1. */
static long find_parent(struct gen *g, const char *path)
{
	const char *sl = strrchr(path, '/');
	if (!sl)
		return -1;
	char *par = sl == path ? strdup("/") : strndup(path, (size_t)(sl - path));
	if (!par) {
		g->err = -ENOMEM;
		return -1;
	}
	long pi = find(g, par);
	free(par);
	return pi;
}

/* Whether a new name at path is likely made: its directory is there, not in
 * a read-only subvolume (EROFS) and not a snapshot's stand-in (EPERM, EACCES,
 * ENOTTY).  Always without subvolumes (the stream stays what it was). */
static bool names_go_in(struct gen *g, const char *path)
{
	if (!g->o->subvols)
		return true;
	long pi = find_parent(g, path);
	return pi >= 0 && !g->e[pi].ro && !g->e[pi].standin;
}

/* Whether the name at path is likely removed: its directory is writable. */
static bool names_go_from(struct gen *g, const char *path)
{
	if (!g->o->subvols)
		return true;
	long pi = find_parent(g, path);
	return pi >= 0 && !g->e[pi].ro;
}

/* The deepest level entry i's parent may have when it moves: directories
 * stay at depth or above, anything else at depth + 1, its subtree included.
 * Negative when no level will do. */
static int max_parent(const struct gen *g, size_t i)
{
	int d = (int)g->o->depth, l0 = (int)g->e[i].lvl, m = d;
	for (size_t j = i; j < g->n && within(g->e[j].path, g->e[i].path); j++) {
		int rel = (int)g->e[j].lvl - l0;
		int lim = (g->e[j].type == E_DIR ? d : d + 1) - rel - 1;
		if (lim < m)
			m = lim;
	}
	return m;
}

/* Entry i may move to level lv. */
static bool fits_level(const struct gen *g, size_t i, unsigned lv)
{
	return (int)lv - 1 <= max_parent(g, i);
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->path, ((const struct ent *)b)->path);
}

/* Replaces prefix `from` of e->path with `to`. */
static void reprefix(struct gen *g, struct ent *e, const char *from, const char *to)
{
	size_t fl = from[1] ? strlen(from) : 0;
	char *p = NULL;
	if (asprintf(&p, "%s%s", to, e->path + fl) < 0) {
		g->err = -ENOMEM;
		return;
	}
	free(e->path);
	e->path = p;
	e->lvl = level(p);
}

/* Whether Linux lets the rename of entry oi to new (entry ni, or -1) by for
 * subvolumes' sake (btrfs_rename, btrfs_rename_exchange, btrfs_permission):
 * both directories writable and NEW's no stand-in, a directory of a read-only
 * subvolume (its root) keeps its parent, only a subvolume's root crosses a
 * subvolume boundary (an exchange: two of them), a stand-in does not move,
 * nothing goes over a subvolume's root. */
static bool subvol_rename_ok(struct gen *g, long oi, long ni, const char *new, int flags)
{
	long op = find_parent(g, g->e[oi].path), np = find_parent(g, new);
	if (op < 0 || np < 0)
		return false;
	const struct ent *o = &g->e[oi], *n = ni >= 0 ? &g->e[ni] : NULL;
	bool exchange = flags & WL_RENAME_EXCHANGE;
	if (g->e[op].ro || g->e[np].ro || g->e[np].standin)
		return false;
	if (op != np && ((o->type == E_DIR && o->ro) || (exchange && n && n->type == E_DIR && n->ro)))
		return false;
	if (g->e[op].svid != g->e[np].svid && (!o->subvol || (exchange && !(n && n->subvol))))
		return false;
	return !o->standin && !(n && (exchange ? n->standin : n->subvol));
}

/* What rename(old, new, flags) does to the model when it is likely to
 * succeed; nothing when it is likely to fail. */
static void model_rename(struct gen *g, const char *old, const char *new, int flags)
{
	long oi = find(g, old), ni = find(g, new);
	if (oi <= 0 || !strcmp(old, new) || within(new, old) || within(old, new))
		return;
	if (g->o->subvols && !subvol_rename_ok(g, oi, ni, new, flags))
		return;
	char *o = strdup(old), *n = strdup(new);
	if (!o || !n) {
		free(o);
		free(n);
		g->err = -ENOMEM;
		return;
	}
	if (flags & WL_RENAME_EXCHANGE) {
		if (ni < 0)
			goto out;
		for (size_t i = 0; i < g->n; i++) {
			if (within(g->e[i].path, o))
				reprefix(g, &g->e[i], o, n);
			else if (within(g->e[i].path, n))
				reprefix(g, &g->e[i], n, o);
		}
	} else {
		if (ni >= 0) {
			int ot = g->e[oi].type, nt = g->e[ni].type;
			if ((flags & WL_RENAME_NOREPLACE) || (ot == E_DIR) != (nt == E_DIR) ||
			    (nt == E_DIR && has_children(g, (size_t)ni)))
				goto out;
			del(g, (size_t)ni);
		}
		/* the new name's parent must exist as a directory */
		char *slash = strrchr(n, '/');
		*slash = 0;
		long pi = find(g, slash == n ? "/" : n);
		*slash = '/';
		if (pi < 0 || g->e[pi].type != E_DIR)
			goto out;
		for (size_t i = 0; i < g->n; i++)
			if (within(g->e[i].path, o))
				reprefix(g, &g->e[i], o, n);
	}
	qsort(g->e, g->n, sizeof(*g->e), cmp_ent);
out:
	free(o);
	free(n);
}

/* ---- choosing paths ------------------------------------------------------- */

struct filt {
	int types;	       /* E_* mask */
	bool nonroot;
	int maxlevel;	       /* directories only: level at most this (-1: any) */
	const char *not_within; /* exclude this path and its subtree */
	int children;	       /* directories: 1 only with children, -1 only empty, 0 any */
	bool xattrs;	       /* only entries with an xattr set */
	int target;	       /* symlinks: only those to this type (0: any) */
	/* With subvolumes (every op may aim into read-only subvolumes, at
	 * stand-ins and subvolumes' roots): svid: only in subvolume svid - 1
	 * (0: any). */
	unsigned svid;
	bool only_subvols, only_ro, only_standins; /* only such entries */
};

static bool fits(const struct gen *g, size_t i, const struct filt *f)
{
	const struct ent *e = &g->e[i];
	if (!(e->type & f->types) || (f->nonroot && i == 0))
		return false;
	if (f->maxlevel >= 0 && e->type == E_DIR && e->lvl > (unsigned)f->maxlevel)
		return false;
	if (f->not_within && within(e->path, f->not_within))
		return false;
	if (f->children && (has_children(g, i) ? 1 : -1) != f->children)
		return false;
	if (f->xattrs && !e->xattrs)
		return false;
	if (f->target && e->type == E_LINK && e->target != f->target)
		return false;
	if (f->svid && e->svid != f->svid - 1)
		return false;
	if ((f->only_subvols && !e->subvol) || (f->only_ro && !e->ro) ||
	    (f->only_standins && !e->standin))
		return false;
	return true;
}

/* A random entry that fits f, or -1. */
static long pick(struct gen *g, const struct filt *f)
{
	if (g->idxcap < g->n) {
		size_t *idx = realloc(g->idx, g->cap * sizeof(*idx));
		if (!idx) {
			g->err = -ENOMEM;
			return -1;
		}
		g->idx = idx;
		g->idxcap = g->cap;
	}
	size_t count = 0;
	for (size_t i = 0; i < g->n; i++)
		if (fits(g, i, f))
			g->idx[count++] = i;
	return count ? (long)g->idx[below(g, count)] : -1;
}

static long pick_type(struct gen *g, int types, bool nonroot)
{
	return pick(g, &(struct filt){ .types = types, .nonroot = nonroot, .maxlevel = -1 });
}

/* A directory to create something in (level below depth for a directory). */
static const char *pick_dir(struct gen *g, bool for_dir)
{
	int maxl = for_dir ? (int)g->o->depth - 1 : (int)g->o->depth;
	long i = pick(g, &(struct filt){ .types = E_DIR, .maxlevel = maxl });
	return i < 0 ? "/" : g->e[i].path;
}

/* With subvolumes: mostly (85 %) a directory of entry i's subvolume, for a
 * link or rename that stays inside it (else EXDEV); as pick_dir else. */
static const char *pick_dir_near(struct gen *g, size_t i, int maxl, const char *not_within)
{
	unsigned svid = g->o->subvols && chance(g, 85) ? g->e[i].svid + 1 : 0;
	long di = maxl < 0 ? -1
			   : pick(g, &(struct filt){ .types = E_DIR, .maxlevel = maxl,
						      .not_within = not_within,
						      .svid = svid });
	return di < 0 ? "/" : g->e[di].path;
}

/* Whether path's parent is in entry i's subvolume (a link or rename there
 * does not give EXDEV). */
static bool same_subvol(struct gen *g, size_t i, const char *path)
{
	long pi = find_parent(g, path);
	return pi >= 0 && g->e[pi].svid == g->e[i].svid;
}

/* A file (sometimes a symlink to one, followed) for data operations; -1 if none. */
static long pick_file(struct gen *g)
{
	long i = -1;
	if (chance(g, 10))
		i = pick(g, &(struct filt){ .types = E_LINK, .maxlevel = -1, .target = E_FILE });
	return i >= 0 ? i : pick_type(g, E_FILE, true);
}

/* Any entry, files most often (the root when nothing else is there). */
static size_t pick_any_i(struct gen *g)
{
	int r = (int)below(g, 100);
	long i = pick(g, &(struct filt){ .types = r < 60 ? E_FILE : r < 90 ? E_DIR : E_LINK,
					 .maxlevel = -1 });
	return i < 0 ? 0 : (size_t)i;
}

static const char *pick_any(struct gen *g)
{
	return g->e[pick_any_i(g)].path;
}

/* A path in dir named prefix<k>, k < names, preferably one not in use. */
static const char *new_name(struct gen *g, const char *dir, char prefix)
{
	const char *p = "/";
	for (int tries = 0; tries < 4; tries++) {
		p = join(g, dir, str(g, "%c%u", prefix, (unsigned)below(g, g->names)));
		if (find(g, p) < 0)
			break;
	}
	return p;
}

/* target relative to directory `from` (both model paths). */
static const char *relpath(struct gen *g, const char *from, const char *to)
{
	size_t fl = from[1] ? strlen(from) : 0, tl = to[1] ? strlen(to) : 0;
	size_t c = fl < tl ? fl : tl;
	for (;; c--) {
		if (!strncmp(from, to, c) && (c == fl || from[c] == '/') && (c == tl || to[c] == '/'))
			break;
	}
	unsigned ups = 0;
	for (size_t i = c; i < fl; i++)
		ups += from[i] == '/';
	const char *rest = c < tl ? to + c + 1 : "";
	char buf[64] = "";
	for (unsigned i = 0; i < ups && i < 20; i++)
		strcat(buf, i ? "/.." : "..");
	if (!ups)
		return rest[0] ? str(g, "%s", rest) : ".";
	return str(g, "%s%s%s", buf, rest[0] ? "/" : "", rest);
}

/* ---- numbers -------------------------------------------------------------- */

static uint64_t umin(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* A write or fallocate offset: mostly in the first 256 KiB, sometimes
 * anywhere below max_offset (sparse files); half of them 4 KiB aligned. */
static uint64_t gen_off(struct gen *g)
{
	uint64_t lim = chance(g, 85) ? umin(256 * KiB, g->o->max_offset) : g->o->max_offset;
	uint64_t off = below(g, lim);
	if (chance(g, 50))
		off &= ~(4 * KiB - 1);
	return off;
}

/* A length 1..max_len: many under 4 KiB, some whole sectors. */
static uint64_t gen_len(struct gen *g)
{
	uint64_t max = g->o->max_len ? g->o->max_len : 1;
	int r = (int)below(g, 100);
	if (r < 50 || max < 4 * KiB)
		return 1 + below(g, umin(max, 4 * KiB - 1));
	if (r < 75)
		return 4 * KiB * (1 + below(g, 1 + below(g, max / (4 * KiB))));
	return 1 + below(g, max);
}

static uint32_t gen_mode(struct gen *g, uint32_t dflt, bool dir)
{
	static const uint32_t fmodes[] = { 0600, 0640, 0444, 0755, 0700, 0666, 0400, 04755, 02644 };
	static const uint32_t dmodes[] = { 0700, 0750, 0777, 0555, 01777, 02755, 0711 };
	if (chance(g, 75))
		return dflt;
	return dir ? dmodes[below(g, sizeof(dmodes) / sizeof(dmodes[0]))]
		   : fmodes[below(g, sizeof(fmodes) / sizeof(fmodes[0]))];
}

static uint32_t gen_id(struct gen *g)
{
	static const uint32_t ids[] = { 0, 1, 1000, 1001, 65534, UINT32_MAX };
	return ids[below(g, sizeof(ids) / sizeof(ids[0]))];
}

static struct timespec gen_time(struct gen *g)
{
	struct timespec t = { 0 };
	int r = (int)below(g, 100);
	if (r < 10) {
		t.tv_nsec = WL_UTIME_OMIT;
		return t;
	}
	t.tv_sec = r < 15 ? -(time_t)(1 + below(g, 1000000000)) : (time_t)below(g, UINT64_C(4000000000));
	t.tv_nsec = chance(g, 50) ? (long)below(g, 1000000000) : 0;
	return t;
}

/* ---- operations ----------------------------------------------------------- */

static void op_init(struct wl_op *op, enum wl_kind k)
{
	memset(op, 0, sizeof(*op));
	op->kind = k;
	op->mode = k == WL_MKDIR ? 0755 : k == WL_CREATE ? 0644 : 0;
}

static void gen_create(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_CREATE);
	op.path = (char *)new_name(g, pick_dir(g, false), 'f');
	op.mode = gen_mode(g, 0644, false);
	if (names_go_in(g, op.path))
		add(g, op.path, E_FILE, 0);
	emit(g, &op);
}

static void gen_mkdir(struct gen *g)
{
	if (!g->o->depth) {
		gen_create(g);
		return;
	}
	struct wl_op op;
	op_init(&op, WL_MKDIR);
	op.path = (char *)new_name(g, pick_dir(g, true), 'd');
	op.mode = gen_mode(g, 0755, true);
	if (names_go_in(g, op.path))
		add(g, op.path, E_DIR, 0);
	emit(g, &op);
}

/* A write's seed: 1..1000; with opts.text, an odd one gives text data (op
 * flags WL_WRITE_TEXT; no extra random draw: the workloads are otherwise as
 * without it). */
static uint64_t gen_seed(struct gen *g, int *flags)
{
	uint64_t seed = 1 + below(g, 1000);
	if (g->o->text && (seed & 1))
		*flags |= WL_WRITE_TEXT;
	return seed;
}

static void gen_data(struct gen *g, enum wl_kind k)
{
	long i = pick_file(g);
	if (i < 0) {
		gen_create(g);
		return;
	}
	struct wl_op op;
	op_init(&op, k);
	op.path = g->e[i].path;
	if (k == WL_WRITE) {
		op.off = gen_off(g);
		op.len = gen_len(g);
		int text = 0;
		op.seed = gen_seed(g, &text);
		/* one in twenty through a file opened O_SYNC or O_DSYNC */
		int r = (int)below(g, 100);
		op.flags = (r < 3 ? WL_WRITE_SYNC : r < 5 ? WL_WRITE_DSYNC : 0) | text;
	} else if (k == WL_TRUNCATE) {
		int r = (int)below(g, 100);
		op.size = r < 25 ? 0
			  : r < 70 ? below(g, umin(256 * KiB, g->o->max_offset) + 1)
			  : r < 85 ? 4 * KiB * below(g, 64)
				   : below(g, g->o->max_offset + 1);
	} else {
		op.off = gen_off(g);
		uint64_t max = umin(g->o->max_len ? g->o->max_len : 1, MiB);
		op.len = 1 + below(g, max);
		if (chance(g, 50) && ((op.len + 4 * KiB - 1) & ~(4 * KiB - 1)) <= max)
			op.len = (op.len + 4 * KiB - 1) & ~(4 * KiB - 1);
		int r = (int)below(g, 100);
		op.flags = r < 30   ? 0
			   : r < 55 ? WL_FALLOC_KEEP_SIZE
			   : r < 80 ? WL_FALLOC_KEEP_SIZE | WL_FALLOC_PUNCH_HOLE
			   : r < 90 ? WL_FALLOC_ZERO_RANGE
				    : WL_FALLOC_ZERO_RANGE | WL_FALLOC_KEEP_SIZE;
	}
	emit(g, &op);
}

static void gen_link(struct gen *g)
{
	long i = chance(g, 15) ? pick_type(g, E_LINK, true) : -1;
	if (i < 0 && (i = pick_type(g, E_FILE, true)) < 0) {
		gen_create(g);
		return;
	}
	struct wl_op op;
	op_init(&op, WL_LINK);
	op.path = g->e[i].path;
	int type = g->e[i].type, target = g->e[i].target;
	const char *dir = g->o->subvols ? pick_dir_near(g, (size_t)i, (int)g->o->depth, NULL)
					: pick_dir(g, false);
	op.path2 = (char *)new_name(g, dir, type == E_LINK ? 'l' : 'f');
	if (!g->o->subvols || (same_subvol(g, (size_t)i, op.path2) && names_go_in(g, op.path2)))
		add(g, op.path2, type, target);
	emit(g, &op);
}

static void gen_symlink(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_SYMLINK);
	const char *dir = pick_dir(g, false);
	op.path = (char *)new_name(g, dir, 'l');
	int r = (int)below(g, 100), target = 0;
	if (r < 75) {
		size_t t = pick_any_i(g);
		target = g->e[t].type == E_LINK ? g->e[t].target : g->e[t].type;
		op.path2 = (char *)(r < 40 ? relpath(g, dir, g->e[t].path) : str(g, "%s", g->e[t].path));
	} else if (r < 88)
		op.path2 = (char *)str(g, "missing%u", (unsigned)below(g, g->names));
	else
		op.path2 = (char *)str(g, "/nowhere/d%u/f%u", (unsigned)below(g, g->names),
				       (unsigned)below(g, g->names));
	if (names_go_in(g, op.path))
		add(g, op.path, E_LINK, target);
	emit(g, &op);
}

/* A new name for entry i: in a directory outside it, the moved subtree
 * within depth. */
static const char *rename_target(struct gen *g, size_t i)
{
	int type = g->e[i].type;
	int maxl = max_parent(g, i);
	const char *nw = type == E_DIR ? g->e[i].path : NULL;
	if (g->o->subvols)
		return new_name(g, pick_dir_near(g, i, maxl, nw),
				type == E_DIR ? 'd' : type == E_LINK ? 'l' : 'f');
	long di = maxl < 0 ? -1
			   : pick(g, &(struct filt){ .types = E_DIR, .maxlevel = maxl,
						      .not_within = nw });
	return new_name(g, di < 0 ? "/" : g->e[di].path,
			type == E_DIR ? 'd' : type == E_LINK ? 'l' : 'f');
}

static void gen_rename(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_RENAME);
	int r = (int)below(g, 100);
	op.flags = r < 60 ? 0 : r < 80 ? WL_RENAME_NOREPLACE : WL_RENAME_EXCHANGE;
	int t = (int)below(g, 100);
	long oi = pick_type(g, t < 55 ? E_FILE : t < 85 ? E_DIR : E_LINK, true);
	if (oi < 0 && (oi = pick_type(g, E_ANY, true)) < 0) {
		gen_mkdir(g);
		return;
	}
	const char *old = g->e[oi].path;
	int type = g->e[oi].type;
	long ni = -1;
	if (op.flags == WL_RENAME_EXCHANGE || chance(g, 30)) {
		/* an existing target: the same kind for a plain rename (an empty
		 * directory for a directory), mostly the same kind to exchange */
		int same = type == E_DIR ? E_DIR : E_FILE | E_LINK;
		int types = op.flags == WL_RENAME_EXCHANGE && chance(g, 30) ? E_ANY : same;
		for (int tries = 0; tries < 4 && ni < 0; tries++) {
			ni = pick(g, &(struct filt){ .types = types, .nonroot = true, .maxlevel = -1,
						     .not_within = old,
						     .children = type == E_DIR && !op.flags ? -1 : 0,
						     .svid = g->o->subvols ? g->e[oi].svid + 1 : 0 });
			if (ni >= 0 &&
			    (within(old, g->e[ni].path) ||
			     !fits_level(g, (size_t)oi, g->e[ni].lvl) ||
			     (op.flags == WL_RENAME_EXCHANGE &&
			      !fits_level(g, (size_t)ni, level(old)))))
				ni = -1; /* an ancestor of old, or too deep */
		}
	}
	const char *new = ni >= 0 ? g->e[ni].path : rename_target(g, (size_t)oi);
	long ei = find(g, new);
	if (op.flags == WL_RENAME_EXCHANGE && ei >= 0 && !fits_level(g, (size_t)ei, level(old)))
		op.flags = WL_RENAME_NOREPLACE; /* the other side would go too deep */
	/* No exchange with a snapshot's stand-in: Linux 6.18 aborts the
	 * transaction (the file system turns read-only; traces/README.md). */
	if (op.flags == WL_RENAME_EXCHANGE && (g->e[oi].standin || (ei >= 0 && g->e[ei].standin)))
		op.flags = 0;
	op.path = (char *)str(g, "%s", old);
	op.path2 = (char *)str(g, "%s", new);
	model_rename(g, op.path, op.path2, op.flags);
	emit(g, &op);
}

static void gen_unlink(struct gen *g)
{
	long i = pick_type(g, chance(g, 25) ? E_LINK : E_FILE, true);
	if (i < 0 && (i = pick_type(g, E_FILE | E_LINK, true)) < 0) {
		gen_create(g);
		return;
	}
	struct wl_op op;
	op_init(&op, WL_UNLINK);
	op.path = (char *)str(g, "%s", g->e[i].path);
	if (names_go_from(g, op.path))
		del(g, (size_t)i);
	emit(g, &op);
}

static void gen_rmdir(struct gen *g)
{
	long i = -1;
	if (g->o->subvols && chance(g, 25)) /* a snapshot's stand-in goes */
		i = pick(g, &(struct filt){ .types = E_DIR, .nonroot = true, .maxlevel = -1,
					    .only_standins = true });
	if (i < 0)
		i = pick(g, &(struct filt){ .types = E_DIR, .nonroot = true, .maxlevel = -1,
					    .children = chance(g, 85) ? -1 : 0 });
	if (i < 0) {
		gen_mkdir(g);
		return;
	}
	struct wl_op op;
	op_init(&op, WL_RMDIR);
	op.path = (char *)str(g, "%s", g->e[i].path);
	/* (an empty subvolume goes as a directory does) */
	if (!has_children(g, (size_t)i) && names_go_from(g, op.path))
		del(g, (size_t)i);
	emit(g, &op);
}

static void gen_setxattr(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_SETXATTR);
	int r = (int)below(g, 100);
	long i = pick_type(g, r < 60 ? E_FILE : r < 95 ? E_DIR : E_LINK, false);
	if (i < 0)
		i = 0;
	unsigned x = (unsigned)below(g, NXNAMES);
	op.path = g->e[i].path;
	op.name = (char *)xnames[x];
	uint8_t value[300];
	int kind = (int)below(g, 100);
	op.vlen = kind < 10 ? 0 : 1 + (size_t)below(g, sizeof(value));
	for (size_t k = 0; k < op.vlen; k++)
		value[k] = kind < 55 ? (uint8_t)('a' + below(g, 26)) : (uint8_t)below(g, 256);
	op.value = op.vlen ? value : NULL;
	if (!g->e[i].ro && !g->e[i].standin) /* else EROFS, EOPNOTSUPP */
		g->e[i].xattrs |= 1u << x;
	emit(g, &op);
}

static void gen_removexattr(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_REMOVEXATTR);
	long i = pick(g, &(struct filt){ .types = E_DIR | E_FILE, .maxlevel = -1, .xattrs = true });
	unsigned x;
	if (i >= 0 && chance(g, 90)) {
		do
			x = (unsigned)below(g, NXNAMES);
		while (!(g->e[i].xattrs & (1u << x)));
		if (!g->e[i].ro)
			g->e[i].xattrs &= ~(1u << x);
	} else {
		i = pick_type(g, E_FILE | E_DIR, false);
		x = (unsigned)below(g, NXNAMES);
	}
	op.path = g->e[i].path;
	op.name = (char *)xnames[x];
	emit(g, &op);
}

/* Whether directory i holds a snapshot's stand-in. */
static bool holds_standin(const struct gen *g, size_t i)
{
	for (size_t j = i + 1; j < g->n && within(g->e[j].path, g->e[i].path); j++)
		if (g->e[j].standin && g->e[j].lvl == g->e[i].lvl + 1)
			return true;
	return false;
}

/* Whether a chown of entry i (followed) leaves every stand-in's owner alone:
 * not a directory holding one, nor a symlink that may lead to a directory. */
static bool owner_is_safe(const struct gen *g, size_t i)
{
	const struct ent *e = &g->e[i];
	return e->type == E_FILE || (e->type == E_DIR && !holds_standin(g, i)) ||
	       (e->type == E_LINK && e->target == E_FILE);
}

static void gen_attr(struct gen *g, enum wl_kind k)
{
	struct wl_op op;
	op_init(&op, k);
	size_t i = pick_any_i(g);
	op.path = g->e[i].path;
	/* With subvolumes, no directory holding a stand-in changes owner: the
	 * stand-in shows its parent's owner, but Linux's keeps the one of its
	 * first lookup while it is cached (traces/README.md). */
	if (k == WL_CHOWN && g->o->subvols && !owner_is_safe(g, i)) {
		long f = pick_type(g, E_FILE, true);
		op.path = f < 0 ? (char *)"/f0" : g->e[f].path;
	}
	if (k == WL_CHMOD) {
		bool dir = g->e[find(g, op.path)].type == E_DIR;
		op.mode = gen_mode(g, dir ? 0755 : 0644, dir);
	} else if (k == WL_CHOWN) {
		op.uid = gen_id(g);
		op.gid = gen_id(g);
	} else {
		op.atime = gen_time(g);
		op.mtime = gen_time(g);
	}
	emit(g, &op);
}

static void gen_sync(struct gen *g)
{
	struct wl_op op;
	int r = (int)below(g, 100);
	op_init(&op, r < 40 ? WL_FSYNC : r < 70 ? WL_FDATASYNC : WL_SYNC);
	if (op.kind != WL_SYNC)
		op.path = (char *)pick_any(g);
	emit(g, &op);
}

/* ---- subvolumes (wl_gen_opts.subvols) ------------------------------------ */

/* The new entry at path, a subvolume's root of a new subvolume. */
static void make_subvol_root(struct gen *g, const char *path, bool ro)
{
	long i = find(g, path);
	if (i < 0)
		return;
	g->e[i].subvol = true;
	g->e[i].svid = ++g->svids;
	g->e[i].ro = ro;
}

static void gen_subvol_create(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_SUBVOL_CREATE);
	op.path = (char *)new_name(g, pick_dir(g, true), 's');
	if (find(g, op.path) < 0 && names_go_in(g, op.path)) {
		add(g, op.path, E_DIR, 0);
		make_subvol_root(g, op.path, false);
	}
	emit(g, &op);
}

/* What snapshot src dst does to the model: src's subvolume copied, nested
 * subvolumes as stand-ins. */
static void model_snapshot(struct gen *g, const char *src, const char *dst, bool ro)
{
	long si = find(g, src);
	if (si < 0 || find(g, dst) >= 0 || !names_go_in(g, dst))
		return;
	unsigned sv = g->e[si].svid;
	struct ent *c = calloc(g->n, sizeof(*c));
	size_t nc = 0, sl = src[1] ? strlen(src) : 0;
	if (!c) {
		g->err = -ENOMEM;
		return;
	}
	for (size_t i = (size_t)si; i < g->n && within(g->e[i].path, src); i++) {
		const struct ent *e = &g->e[i];
		bool nested = e->svid != sv;
		if (nested) { /* in a nested subvolume: only its root, as a stand-in */
			if (!e->subvol)
				continue;
			const char *sl2 = strrchr(e->path, '/');
			char *par = sl2 == e->path ? strdup("/") : strndup(e->path, (size_t)(sl2 - e->path));
			long pi = par ? find(g, par) : -1;
			free(par);
			if (pi < 0 || g->e[pi].svid != sv)
				continue;
		}
		char *p = NULL;
		if (asprintf(&p, "%s%s", dst, (size_t)i == (size_t)si ? "" : e->path + sl) < 0) {
			g->err = -ENOMEM;
			break;
		}
		c[nc++] = (struct ent){ p, nested ? E_DIR : e->type, nested ? 0 : e->target,
					nested ? 0 : e->xattrs, 0, 0, false, ro,
					nested || e->standin };
	}
	unsigned nsv = ++g->svids;
	for (size_t k = 0; k < nc; k++) { /* sorted: parents before children */
		add(g, c[k].path, c[k].type, c[k].target);
		long i = find(g, c[k].path);
		if (i >= 0) {
			g->e[i].xattrs = c[k].xattrs;
			g->e[i].svid = nsv;
			g->e[i].ro = ro;
			g->e[i].standin = c[k].standin;
			g->e[i].subvol = k == 0;
		}
		free(c[k].path);
	}
	free(c);
}

/* A subvolume's root, or -1. */
static long pick_subvol(struct gen *g)
{
	return pick(g, &(struct filt){ .types = E_DIR, .nonroot = true, .maxlevel = -1,
				       .only_subvols = true });
}

static void gen_snapshot(struct gen *g)
{
	long si = chance(g, 10) ? 0 : pick_subvol(g); /* 0: the top level */
	if (si < 0) {
		gen_subvol_create(g);
		return;
	}
	struct wl_op op;
	op_init(&op, WL_SNAPSHOT);
	op.path = (char *)str(g, "%s", g->e[si].path);
	/* DEST anywhere, inside SRC's subvolume too (the snapshot does not
	 * hold its own entry) */
	long di = pick(g, &(struct filt){ .types = E_DIR, .maxlevel = (int)g->o->depth - 1 });
	if (di < 0) {
		gen_subvol_create(g);
		return;
	}
	op.path2 = (char *)new_name(g, g->e[di].path, 's');
	op.flags = chance(g, 25) ? WL_SNAP_RDONLY : 0;
	model_snapshot(g, op.path, op.path2, op.flags);
	emit(g, &op);
}

/* A subvolume holds another below it (subvol-delete gives ENOTEMPTY). */
static bool holds_subvol(const struct gen *g, size_t i)
{
	for (size_t j = i + 1; j < g->n && within(g->e[j].path, g->e[i].path); j++)
		if (g->e[j].subvol)
			return true;
	return false;
}

static void gen_subvol_delete(struct gen *g)
{
	long i = pick_subvol(g);
	if (i < 0) {
		gen_subvol_create(g);
		return;
	}
	struct wl_op op;
	op_init(&op, WL_SUBVOL_DELETE);
	op.path = (char *)str(g, "%s", g->e[i].path);
	char *sl = strrchr(op.path, '/');
	*sl = 0;
	long pi = find(g, sl == op.path ? "/" : op.path);
	*sl = '/';
	if (pi >= 0 && !g->e[pi].ro && !holds_subvol(g, (size_t)i)) {
		while ((size_t)i + 1 < g->n && within(g->e[i + 1].path, g->e[i].path))
			del(g, (size_t)i + 1);
		del(g, (size_t)i);
	}
	emit(g, &op);
}

/* An operation on something in a read-only snapshot, of those ref and the
 * kernel refuse alike (EROFS, or EEXIST for a name that exists). */
static void gen_ro_probe(struct gen *g)
{
	long i = pick(g, &(struct filt){ .types = E_ANY, .nonroot = true, .maxlevel = -1,
					 .only_ro = true });
	if (i < 0) {
		gen_snapshot(g);
		return;
	}
	const struct ent *e = &g->e[i];
	struct wl_op op;
	int r = (int)below(g, 5);
	if (e->standin) {
		op_init(&op, WL_RMDIR);
		op.path = e->path;
	} else if (e->type == E_DIR) {
		static const enum wl_kind ks[] = { WL_MKDIR, WL_CREATE, WL_SYMLINK, WL_MKDIR,
						   WL_CHMOD };
		op_init(&op, ks[r]);
		op.path = (char *)(r == 3 ? e->path : join(g, e->path, str(g, "n%u", (unsigned)below(g, 100))));
		op.path2 = (char *)"target";
		op.mode = r == 4 ? 0700 : r < 4 && r != 1 ? 0755 : 0644;
	} else {
		static const enum wl_kind ks[] = { WL_WRITE, WL_TRUNCATE, WL_SETXATTR, WL_UNLINK,
						   WL_RENAME };
		op_init(&op, ks[r]);
		op.path = e->path;
		op.len = 1 + below(g, 8 * KiB);
		int text = 0;
		op.seed = gen_seed(g, &text);
		if (op.kind == WL_WRITE)
			op.flags |= text;
		op.name = (char *)"user.a";
		op.value = (uint8_t *)"v";
		op.vlen = 1;
		op.path2 = (char *)str(g, "%s.moved", e->path);
	}
	emit(g, &op);
}

static void gen_subvol_sync(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_SUBVOL_SYNC);
	emit(g, &op);
}

/* ---- deliberately bad operations ----------------------------------------- */

static const char *any_dir(struct gen *g)
{
	return g->e[pick_type(g, E_DIR, false)].path; /* the root is always there */
}

static void gen_bad(struct gen *g)
{
	struct wl_op op;
	int what = (int)below(g, g->o->subvols ? 14 : 12);
	switch (what) {
	case 0: { /* "." or ".." as the last component */
		const char *p = join(g, any_dir(g), chance(g, 50) ? "." : "..");
		static const enum wl_kind ks[] = { WL_MKDIR, WL_RMDIR, WL_UNLINK, WL_CREATE,
						   WL_RENAME, WL_RENAME, WL_LINK, WL_SYMLINK };
		enum wl_kind k = ks[below(g, sizeof(ks) / sizeof(ks[0]))];
		op_init(&op, k);
		op.path = (char *)p;
		if (k == WL_SYMLINK) {
			op.path2 = (char *)"target";
		} else if (k == WL_LINK) {
			op.path = (char *)pick_any(g);
			op.path2 = (char *)p;
		} else if (k == WL_RENAME) {
			op.path2 = (char *)new_name(g, pick_dir(g, false), 'f');
			if (chance(g, 50)) { /* the dots as NEW */
				op.path = (char *)pick_any(g);
				op.path2 = (char *)p;
			}
		}
		break;
	}
	case 1: /* a 256-byte name: ENAMETOOLONG */
	case 2: { /* a 255-byte name: valid */
		bool bad = what == 1;
		static const enum wl_kind ks[] = { WL_CREATE, WL_MKDIR, WL_SYMLINK, WL_RENAME, WL_LINK };
		enum wl_kind k = ks[below(g, bad ? 5 : 2)];
		if (k == WL_MKDIR && !g->o->depth)
			k = WL_CREATE;
		op_init(&op, k);
		const char *dir = pick_dir(g, k == WL_MKDIR);
		const char *p = join(g, dir, long_name(g, k == WL_MKDIR ? 'y' : 'x', bad ? 256 : 255));
		op.path = (char *)p;
		if (k == WL_SYMLINK) {
			op.path2 = (char *)relpath(g, dir, pick_any(g));
		} else if (k == WL_RENAME || k == WL_LINK) {
			long i = pick_type(g, E_FILE, true);
			op.path = i < 0 ? (char *)"/f0" : g->e[i].path;
			op.path2 = (char *)p;
		}
		if (!bad && names_go_in(g, p))
			add(g, p, k == WL_MKDIR ? E_DIR : E_FILE, 0);
		break;
	}
	case 3: { /* data operations on a directory: EISDIR */
		static const enum wl_kind ks[] = { WL_WRITE, WL_WRITE, WL_TRUNCATE, WL_FALLOCATE };
		op_init(&op, ks[below(g, 4)]);
		op.path = (char *)any_dir(g);
		op.off = op.kind == WL_TRUNCATE ? 0 : gen_off(g);
		op.len = op.kind == WL_TRUNCATE ? 0 : 1 + below(g, 8 * KiB);
		op.size = op.kind == WL_TRUNCATE ? below(g, 8 * KiB) : 0;
		op.seed = op.kind == WL_WRITE ? gen_seed(g, &op.flags) : 0;
		break;
	}
	case 4: { /* rmdir of a directory with something in it (else of "/": EBUSY) */
		op_init(&op, WL_RMDIR);
		long i = pick(g, &(struct filt){ .types = E_DIR, .nonroot = true, .maxlevel = -1,
						 .children = 1 });
		op.path = i < 0 ? (char *)"/" : g->e[i].path;
		break;
	}
	case 5: { /* a directory renamed into its own subtree: EINVAL */
		op_init(&op, WL_RENAME);
		long i = pick_type(g, E_DIR, true);
		if (i < 0) {
			op.path = (char *)"/";
			op.path2 = (char *)"/d0";
			break;
		}
		/* a directory within it (or itself) as the new parent */
		size_t j = (size_t)i, n = 1;
		while (j + n < g->n && within(g->e[j + n].path, g->e[j].path))
			n++;
		size_t k;
		do /* (with subvolumes: in a nested one or a stand-in too) */
			k = j + (size_t)below(g, n);
		while (g->e[k].type != E_DIR);
		op.path = g->e[i].path;
		op.path2 = (char *)join(g, g->e[k].path, str(g, "d%u", (unsigned)below(g, g->names)));
		op.flags = chance(g, 20) ? WL_RENAME_NOREPLACE : 0;
		break;
	}
	case 6: /* link of a directory: EPERM */
		op_init(&op, WL_LINK);
		op.path = (char *)any_dir(g);
		op.path2 = (char *)new_name(g, pick_dir(g, false), 'f');
		break;
	case 7: { /* offsets and sizes at the end of the 64-bit range */
		int r = (int)below(g, 5);
		op_init(&op, r < 2 ? WL_WRITE : r < 4 ? WL_TRUNCATE : WL_FALLOCATE);
		long i = pick_file(g);
		op.path = i < 0 ? (char *)"/f0" : g->e[i].path;
		if (r == 0) { /* ends past 2^63 - 1 */
			op.off = UINT64_C(0x7fffffffffffff00);
			op.len = 4096;
		} else if (r == 1) { /* starts past it */
			op.off = UINT64_C(0x8000000000000000) + 4096 * below(g, 4);
			op.len = 1 + below(g, 4096);
		} else if (r == 2) {
			op.size = UINT64_C(0x8000000000000000);
		} else if (r == 3) {
			op.size = UINT64_C(0xffffffffffffffff);
		} else {
			op.off = UINT64_C(0x7fffffffffff0000);
			op.len = MiB;
		}
		op.seed = op.kind == WL_WRITE ? gen_seed(g, &op.flags) : 0;
		break;
	}
	case 8: /* removexattr of a name never set: ENODATA */
		op_init(&op, WL_REMOVEXATTR);
		op.path = (char *)pick_any(g);
		op.name = (char *)"user.never_set";
		break;
	case 9: { /* rename with a trailing slash on OLD (or NEW) */
		op_init(&op, WL_RENAME);
		long i = pick_type(g, E_ANY, true);
		const char *old = i < 0 ? "/f0" : str(g, "%s", g->e[i].path);
		const char *new = i < 0 ? "/f1" : rename_target(g, (size_t)i);
		bool on_new = chance(g, 30);
		op.path = (char *)(on_new ? old : str(g, "%s/", old));
		op.path2 = (char *)(on_new ? str(g, "%s/", new) : new);
		/* a directory moves; a file gives ENOTDIR */
		if (i >= 0 && g->e[i].type == E_DIR)
			model_rename(g, old, new, 0);
		break;
	}
	case 10: { /* names that exist, or do not */
		int r = (int)below(g, 6);
		static const enum wl_kind ks[] = { WL_MKDIR, WL_CREATE, WL_UNLINK, WL_RMDIR, WL_WRITE,
						   WL_RMDIR };
		op_init(&op, ks[r]);
		if (r <= 1) { /* EEXIST */
			op.path = (char *)pick_any(g);
		} else if (r == 2) { /* ENOENT */
			op.path = (char *)join(g, any_dir(g), str(g, "gone%u", (unsigned)below(g, 100)));
		} else if (r == 3) { /* ENOTDIR */
			long i = pick_type(g, E_FILE, true);
			op.path = i < 0 ? (char *)"/f0" : g->e[i].path;
		} else if (r == 4) { /* a file as a directory: ENOTDIR */
			long i = pick_type(g, E_FILE, true);
			op.path = (char *)join(g, i < 0 ? "/f0" : g->e[i].path, "x");
			op.len = 1 + below(g, 100);
		} else {
			op.path = (char *)(chance(g, 50) ? "/" : "//");
		}
		break;
	}
	case 12: { /* a snapshot of what is not a subvolume (EINVAL), or onto a name that exists */
		op_init(&op, WL_SNAPSHOT);
		long si = chance(g, 30) ? pick_subvol(g) : -1;
		if (si >= 0) {
			op.path = g->e[si].path;
			op.path2 = (char *)pick_any(g);
			break;
		}
		long i = pick_type(g, chance(g, 50) ? E_DIR : E_FILE, true);
		op.path = i < 0 ? (char *)"/f0" : g->e[i].path;
		/* DEST new or existing: SRC is checked first (EINVAL before EEXIST) */
		op.path2 = chance(g, 50) ? (char *)pick_any(g)
					 : (char *)join(g, pick_dir(g, true),
							str(g, "x%u", (unsigned)below(g, 1000)));
		break;
	}
	case 13: { /* subvol-delete of a directory (EINVAL) or of a subvolume holding
		    * one (ENOTEMPTY); subvol-create of a name that exists (EEXIST) */
		int r = (int)below(g, 3);
		long i = -1;
		if (r == 1)
			for (size_t j = 1; j < g->n && i < 0; j++)
				if (g->e[j].subvol && !g->e[j].ro && holds_subvol(g, j))
					i = (long)j;
		op_init(&op, r == 2 ? WL_SUBVOL_CREATE : WL_SUBVOL_DELETE);
		if (i < 0 && r < 2) {
			i = pick_type(g, E_DIR, true);
			op.path = i < 0 ? (char *)"/d0" : g->e[i].path;
		} else if (i >= 0) {
			op.path = g->e[i].path;
		} else {
			op.path = (char *)pick_any(g);
		}
		break;
	}
	default: /* xattr names out of range: ERANGE */
		op_init(&op, WL_SETXATTR);
		op.path = (char *)pick_any(g);
		op.name = (char *)(chance(g, 50) ? "" : str(g, "user.%s", long_name(g, 'n', 251)));
		op.value = (uint8_t *)"v";
		op.vlen = 1;
		if (chance(g, 50)) {
			op.kind = WL_REMOVEXATTR;
			op.value = NULL;
			op.vlen = 0;
		}
		break;
	}
	emit(g, &op);
}

/* defrag of a file (now and then a directory: its subvolume's tree, or a
 * symlink, followed), one time in three with -c and an algorithm. */
static void gen_defrag(struct gen *g)
{
	struct wl_op op;
	op_init(&op, WL_DEFRAG);
	op.path = g->e[pick_any_i(g)].path;
	op.flags = chance(g, 33) ? 1 + (int)below(g, 3) : 0;
	emit(g, &op);
}

/* clone (three in ten), clone-range (half) or dedupe between two files (the
 * same one now and then): whole 4 KiB blocks mostly, a length of 0 (to the
 * source's end) or an odd offset or length sometimes, for the kernel's
 * EINVAL; a dedupe half the time of a range just cloned, so that its bytes
 * are equal. */
static void gen_reflink(struct gen *g)
{
	long s = pick_file(g), d = chance(g, 10) ? s : pick_file(g);
	if (s < 0 || d < 0) {
		gen_create(g);
		return;
	}
	int r = (int)below(g, 100);
	struct wl_op op;
	op_init(&op, r < 30 ? WL_CLONE : r < 80 ? WL_CLONE_RANGE : WL_DEDUPE);
	op.path = g->e[s].path;
	op.path2 = g->e[d].path;
	if (op.kind != WL_CLONE) {
		uint64_t blocks = umin(g->o->max_offset, 4 * MiB) / (4 * KiB) + 1;
		op.off = 4 * KiB * below(g, blocks);
		op.off2 = chance(g, 50) ? op.off : 4 * KiB * below(g, blocks);
		op.len = chance(g, 15) ? 0 : 4 * KiB * (1 + below(g, 64));
		if (chance(g, 8))
			op.off += 1 + below(g, 4095);
		else if (chance(g, 8))
			op.len += 1 + below(g, 4095);
	}
	emit(g, &op);
	if (op.kind == WL_CLONE_RANGE && chance(g, 50)) {
		op.kind = WL_DEDUPE;
		emit(g, &op);
	}
}

/* ---- the mix ----------------------------------------------------------- */

enum gk { G_CREATE, G_MKDIR, G_WRITE, G_TRUNCATE, G_FALLOCATE, G_LINK, G_SYMLINK, G_RENAME,
	  G_UNLINK, G_RMDIR, G_SETXATTR, G_REMOVEXATTR, G_CHMOD, G_CHOWN, G_UTIMES, G_SYNC,
	  G_SUBVOL, G_SNAPSHOT, G_SVDELETE, G_SVSYNC, G_ROPROBE, G_DEFRAG, G_REFLINK, G_N };

/* Approximate weights (percent); G_SYNC: fsync, fdatasync and sync together. */
static const unsigned weights[G_N] = {
	[G_CREATE] = 15, [G_MKDIR] = 8,	 [G_WRITE] = 25,    [G_TRUNCATE] = 6,
	[G_FALLOCATE] = 5, [G_LINK] = 5,	 [G_SYMLINK] = 3,   [G_RENAME] = 7,
	[G_UNLINK] = 7,	 [G_RMDIR] = 4,	 [G_SETXATTR] = 4,  [G_REMOVEXATTR] = 2,
	[G_CHMOD] = 2,	 [G_CHOWN] = 1,	 [G_UTIMES] = 1,    [G_SYNC] = 2,
	/* only with subvols */
	[G_SUBVOL] = 2,	 [G_SNAPSHOT] = 2, [G_SVDELETE] = 1, [G_SVSYNC] = 1, [G_ROPROBE] = 1,
	/* only with defrag */
	[G_DEFRAG] = 3,
	/* only with reflink */
	[G_REFLINK] = 6,
};

/* Entries the model holds at most: past it nothing new is made (creates,
 * mkdirs, links, symlinks, subvolumes and snapshots wait for removals), so
 * that a pick costs a bounded scan and generation stays linear in --ops.
 * Workloads of ordinary length never reach it (20,000 ops hold about 1,800
 * entries), so they are what they were before the bound. */
#define MAX_ENTRIES 2048

static unsigned weight(const struct gen *g, int k)
{
	if (k == G_DEFRAG)
		return g->o->defrag ? weights[k] : 0;
	if (k == G_REFLINK)
		return g->o->reflink ? weights[k] : 0;
	if (k >= G_SUBVOL && !g->o->subvols)
		return 0;
	if (g->n >= MAX_ENTRIES && (k == G_CREATE || k == G_MKDIR || k == G_LINK ||
				    k == G_SYMLINK || k == G_SUBVOL || k == G_SNAPSHOT))
		return 0;
	return k == G_SYNC && !g->o->syncs ? 0 : weights[k];
}

static void gen_one(struct gen *g)
{
	if (g->o->bad_percent && below(g, 100) < g->o->bad_percent) {
		gen_bad(g);
		return;
	}
	unsigned total = 0;
	for (int k = 0; k < G_N; k++)
		total += weight(g, k);
	unsigned r = (unsigned)below(g, total);
	int k = 0;
	while (r >= weight(g, k))
		r -= weight(g, k++);
	switch ((enum gk)k) {
	case G_CREATE: gen_create(g); break;
	case G_MKDIR: gen_mkdir(g); break;
	case G_WRITE: gen_data(g, WL_WRITE); break;
	case G_TRUNCATE: gen_data(g, WL_TRUNCATE); break;
	case G_FALLOCATE: gen_data(g, WL_FALLOCATE); break;
	case G_LINK: gen_link(g); break;
	case G_SYMLINK: gen_symlink(g); break;
	case G_RENAME: gen_rename(g); break;
	case G_UNLINK: gen_unlink(g); break;
	case G_RMDIR: gen_rmdir(g); break;
	case G_SETXATTR: gen_setxattr(g); break;
	case G_REMOVEXATTR: gen_removexattr(g); break;
	case G_CHMOD: gen_attr(g, WL_CHMOD); break;
	case G_CHOWN: gen_attr(g, WL_CHOWN); break;
	case G_UTIMES: gen_attr(g, WL_UTIMES); break;
	case G_SUBVOL: gen_subvol_create(g); break;
	case G_SNAPSHOT: gen_snapshot(g); break;
	case G_SVDELETE: gen_subvol_delete(g); break;
	case G_SVSYNC: gen_subvol_sync(g); break;
	case G_ROPROBE: gen_ro_probe(g); break;
	case G_DEFRAG: gen_defrag(g); break;
	case G_REFLINK: gen_reflink(g); break;
	default: gen_sync(g); break;
	}
}

int wl_generate(const struct wl_gen_opts *o, struct wl_workload *out)
{
	if (o->ops > WL_GEN_MAX_OPS)
		return -EINVAL;
	struct wl_workload w = { 0 };
	struct gen g = { .o = o, .s = o->seed, .names = o->names ? o->names : 1, .w = &w };
	add(&g, "/", E_DIR, 0);
	if (o->quota) { /* first, and then the same ops as without it */
		struct wl_op op;
		op_init(&op, WL_QUOTA_ENABLE);
		emit(&g, &op);
	}
	size_t first = w.n;
	while (!g.err && w.n - first < o->ops)
		gen_one(&g);
	for (size_t i = 0; i < g.ntmp; i++)
		free(g.tmp[i]);
	free(g.tmp);
	for (size_t i = 0; i < g.n; i++)
		free(g.e[i].path);
	free(g.e);
	free(g.idx);
	if (g.err) {
		wl_free(&w);
		return g.err;
	}
	*out = w;
	return 0;
}
