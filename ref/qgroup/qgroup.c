/*
 * qgroup.c - quota groups: the quota tree's items, the accounting at each
 * commit, limits, and the calls of ref.h and vfs.h.  qgroup.h says how the
 * numbers move.
 *
 * The quota tree (QUOTA_TREE, 8) holds a status item (0, QGROUP_STATUS, 0)
 * whose generation every commit rewrites (the kernel marks quotas
 * inconsistent when it lags the superblock's), and per group an INFO item
 * (0, QGROUP_INFO, id), rewritten with the transaction's id when its numbers
 * change, and a LIMIT item (0, QGROUP_LIMIT, id).
 */
#include "ref/qgroup/qgroup.h"
#include "ref/mutant.h"
#include "ref/vfs.h"

#include <errno.h>
#include <linux/btrfs.h>
#include <stdlib.h>
#include <string.h>

/* The status item as the kernel writes it now: with enable_gen (used by
 * simple quotas only; 0 here), 40 bytes. */
struct qg_status_disk {
	__le64 version, generation, flags, rescan;
	__le64 enable_gen;
} __attribute__((packed));
_Static_assert(sizeof(struct qg_status_disk) == 40, "the kernel's status item is 40 bytes");
/* (Kernels before 6.7 wrote the first 32 bytes only; both are read.) */
#define QG_STATUS_MIN 32

#define QG_NO_RESCAN UINT64_MAX /* the status item's rescan field when none runs */

/* ---- Reading the quota tree (any mount) ---- */

static int quota_root(ref_fs *fs, struct ref_root *q)
{
	int r = ref_find_root(fs, BTRFS_QUOTA_TREE_OBJECTID, q);
	return r == -ENOENT ? ref_fail(fs, ENOTCONN, "quota groups are not enabled") : r;
}

int ref_qgroup_status(ref_fs *fs, bool *enabled, uint64_t *flags)
{
	struct ref_root q;
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	*enabled = false;
	*flags = 0;
	int r = quota_root(fs, &q);
	if (r == -ENOTCONN)
		return 0;
	if (r || (r = ref_find_first(fs, &q, 0, BTRFS_QGROUP_STATUS_KEY, &p, &k, &d, &size)))
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "the quota tree has no status item") : r;
	if (size < QG_STATUS_MIN)
		r = ref_fail(fs, EUCLEAN, "quota status item is %u bytes", size);
	else
		*flags = LE64(((const struct qg_status_disk *)d)->flags);
	ref_path_release(fs, &p);
	*enabled = !r;
	return r;
}

/* The entry for id in a list sorted by id, appended when absent. */
static struct ref_qgroup *list_entry(struct ref_qgroup **list, size_t *n, size_t *cap, uint64_t id)
{
	if (*n && (*list)[*n - 1].id == id)
		return &(*list)[*n - 1];
	for (size_t i = 0; i < *n; i++)
		if ((*list)[i].id == id)
			return &(*list)[i];
	if (ref_grow((void **)list, *n, cap, sizeof(**list)))
		return NULL;
	struct ref_qgroup *e = &(*list)[(*n)++];
	memset(e, 0, sizeof(*e));
	e->id = id;
	return e;
}

/* Decodes one INFO or LIMIT item into its group's entry. */
static int decode_item(ref_fs *fs, const struct ref_key *k, const uint8_t *d, uint32_t size,
		       struct ref_qgroup *e)
{
	if (k->type == BTRFS_QGROUP_INFO_KEY) {
		if (size != sizeof(struct btrfs_qgroup_info_item))
			return ref_fail(fs, EUCLEAN, "qgroup %llu: info item is %u bytes, not 40",
					(unsigned long long)k->offset, size);
		const struct btrfs_qgroup_info_item *ii = (const void *)d;
		e->generation = LE64(ii->generation);
		e->rfer = LE64(ii->rfer);
		e->excl = LE64(ii->excl);
	} else {
		if (size != sizeof(struct btrfs_qgroup_limit_item))
			return ref_fail(fs, EUCLEAN, "qgroup %llu: limit item is %u bytes, not 40",
					(unsigned long long)k->offset, size);
		const struct btrfs_qgroup_limit_item *li = (const void *)d;
		e->limit_flags = LE64(li->flags);
		e->max_rfer = LE64(li->max_rfer);
		e->max_excl = LE64(li->max_excl);
	}
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct ref_qgroup *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

int ref_qgroup_list(ref_fs *fs, struct ref_qgroup **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	struct ref_root q;
	struct ref_path p = { .levels = 0 };
	struct ref_key k = { 0, BTRFS_QGROUP_INFO_KEY, 0 };
	int r = quota_root(fs, &q);
	if (!r)
		r = ref_search(fs, &q, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != 0 || k.type > BTRFS_QGROUP_LIMIT_KEY)
			break;
		if (k.type == BTRFS_QGROUP_INFO_KEY || k.type == BTRFS_QGROUP_LIMIT_KEY) {
			struct ref_qgroup *e = list_entry(out, n, &cap, k.offset);
			if (!e) {
				r = ref_fail(fs, ENOMEM, "out of memory");
				break;
			}
			if ((r = decode_item(fs, &k, d, size, e)))
				break;
		}
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	if (r < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return r;
	}
	/* (A LIMIT item without its INFO item was appended after the others.) */
	qsort(*out, *n, sizeof(**out), cmp_id);
	return 0;
}

int ref_qgroup_recount(ref_fs *fs, struct ref_qgroup **out, size_t *n)
{
	return qg_recount(fs, out, n);
}

/* ---- The groups of a mounted file system ---- */

struct qg_group *qg_group_find(struct qg_state *q, uint64_t id)
{
	size_t lo = 0, hi = q->ngroups;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (q->groups[mid].id == id)
			return &q->groups[mid];
		if (q->groups[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct qg_group *qg_group_add(ref_fs *fs, struct qg_state *q, uint64_t id)
{
	struct qg_group *g = qg_group_find(q, id);
	if (g)
		return g;
	if (GROW(q->groups, q->ngroups, q->groups_cap)) {
		ref_fail(fs, ENOMEM, "out of memory");
		return NULL;
	}
	size_t at = 0;
	while (at < q->ngroups && q->groups[at].id < id)
		at++;
	memmove(q->groups + at + 1, q->groups + at, (q->ngroups - at) * sizeof(*q->groups));
	q->ngroups++;
	g = &q->groups[at];
	memset(g, 0, sizeof(*g));
	g->id = id;
	return g;
}

/* Takes the recounted numbers (a rescan) into the groups. */
static int rescan(ref_fs *fs, struct qg_state *q)
{
	struct ref_qgroup *c;
	size_t n;
	int r = qg_recount(fs, &c, &n);
	if (r)
		return r;
	for (size_t i = 0; i < q->ngroups; i++) {
		struct qg_group *g = &q->groups[i];
		g->rfer = g->excl = 0;
		g->dirty = true;
		for (size_t j = 0; j < n; j++)
			if (c[j].id == g->id) {
				g->rfer = c[j].rfer;
				g->excl = c[j].excl;
			}
	}
	free(c);
	q->flags &= ~(uint64_t)(BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT | BTRFS_QGROUP_STATUS_FLAG_RESCAN);
	return 0;
}

/* One item of the quota tree at mount. */
static int load_item(ref_fs *fs, struct qg_state *q, const struct ref_key *k, const uint8_t *d,
		     uint32_t size)
{
	if (k->type == BTRFS_QGROUP_STATUS_KEY) {
		if (size < QG_STATUS_MIN)
			return ref_fail(fs, EUCLEAN, "quota status item is %u bytes", size);
		const struct qg_status_disk *s = (const void *)d;
		q->flags = LE64(s->flags);
		if (LE64(s->version) != BTRFS_QGROUP_STATUS_VERSION ||
		    q->flags & ~(uint64_t)BTRFS_QGROUP_STATUS_FLAGS_MASK)
			return ref_fail(fs, EROFS,
					"quota status version %llu, flags 0x%llx: not supported for writing (simple quotas?)",
					(unsigned long long)LE64(s->version),
					(unsigned long long)q->flags);
		return 0;
	}
	if (k->type == BTRFS_QGROUP_RELATION_KEY) {
		/* (child, RELATION, parent), as the kernel reads them; the
		 * mirror item and a parent not above its child are passed over */
		if (k->objectid < k->offset &&
		    btrfs_qgroup_level(k->objectid) < btrfs_qgroup_level(k->offset) &&
		    qg_rels_add(&q->rels, k->objectid, k->offset))
			return ref_fail(fs, ENOMEM, "out of memory");
		return 0;
	}
	if (k->type != BTRFS_QGROUP_INFO_KEY && k->type != BTRFS_QGROUP_LIMIT_KEY)
		return 0;
	struct ref_qgroup e = { 0 };
	struct qg_group *g = qg_group_add(fs, q, k->offset);
	int r = g ? decode_item(fs, k, d, size, &e) : -ENOMEM;
	if (r)
		return r;
	if (k->type == BTRFS_QGROUP_INFO_KEY) {
		g->rfer = e.rfer;
		g->excl = e.excl;
	} else {
		g->limit_flags = e.limit_flags;
		g->max_rfer = e.max_rfer;
		g->max_excl = e.max_excl;
		const struct btrfs_qgroup_limit_item *li = (const void *)d;
		g->rsv_rfer = LE64(li->rsv_rfer);
		g->rsv_excl = LE64(li->rsv_excl);
	}
	return 0;
}

int qg_load(ref_fs *fs)
{
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_QUOTA_TREE_OBJECTID, &root);
	if (r)
		return r == -ENOENT ? 0 : r; /* -ENOENT: quotas off */
	struct qg_state *q = calloc(1, sizeof(*q));
	if (!q)
		return ref_fail(fs, ENOMEM, "out of memory");
	fs->rw->qg = q;
	struct ref_path p;
	struct ref_key k = { 0, 0, 0 };
	bool status = false;
	r = ref_search(fs, &root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		status |= k.type == BTRFS_QGROUP_STATUS_KEY;
		if ((r = load_item(fs, q, &k, d, size)))
			break;
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	if (r < 0)
		return r;
	if (!status)
		return ref_fail(fs, EUCLEAN, "the quota tree has no status item");
	/* A relation naming a group the tree does not hold is ignored, as the
	 * kernel's "orphan qgroup relation". */
	for (size_t i = 0; i < q->rels.n;) {
		const struct ref_qgroup_rel *l = &q->rels.v[i];
		if (qg_group_find(q, l->child) && qg_group_find(q, l->parent)) {
			i++;
			continue;
		}
		ref_log(fs, "orphan quota group relation %llx -> %llx ignored",
			(unsigned long long)l->child, (unsigned long long)l->parent);
		qg_rels_del(&q->rels, l->child, l->parent);
	}
	/* Numbers a rescan never finished, or that a kernel declared stale, are
	 * counted again now: a rescan at mount. */
	if (q->flags & (BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT | BTRFS_QGROUP_STATUS_FLAG_RESCAN)) {
		ref_log(fs, "quota groups marked inconsistent: counted again at mount");
		/* (and committed with the next commit, the unmount's at the
		 * latest, the status item's flag cleared) */
		fs->rw->in_txn = true;
		return rescan(fs, q);
	}
	return 0;
}

void qg_free(ref_fs *fs)
{
	struct qg_state *q = fs->rw ? fs->rw->qg : NULL;
	if (!q)
		return;
	free(q->groups);
	free(q->extents);
	free(q->snaps);
	u64map_free(&q->extent_idx);
	qg_rels_free(&q->rels);
	free(q);
	fs->rw->qg = NULL;
}

/* ---- Accounting ---- */

/* Records an extent for accounting: 0, 1 when it was recorded already. */
static int note(ref_fs *fs, uint64_t bytenr, uint64_t num_bytes, bool tree, uint8_t level)
{
	struct qg_state *q = fs->rw->qg;
	uint64_t *ix = u64map_get(&q->extent_idx, bytenr, true);
	if (!ix)
		return ref_fail(fs, ENOMEM, "out of memory");
	if (*ix)
		return 1;
	if (GROW(q->extents, q->nextents, q->extents_cap))
		return ref_fail(fs, ENOMEM, "out of memory");
	q->extents[q->nextents] = (struct qg_extent){ bytenr, num_bytes, tree, level };
	*ix = ++q->nextents;
	return 0;
}

int qg_note_extent(ref_fs *fs, const struct dref *d)
{
	if (!fs->rw->qg)
		return 0;
	/* (Changes that cancel out count too: a block copied on write and freed
	 * in one transaction moves its extents between parents, and with them
	 * between subvolumes, while their counts end where they began.) */
	bool fstree = !d->tree;
	for (size_t i = 0; i < d->nrefs && !fstree; i++)
		fstree = d->refs[i].parent || qg_is_fstree(d->refs[i].root);
	int r = fstree ? note(fs, d->bytenr, d->num_bytes, d->tree, d->level) : 0;
	return r > 0 ? 0 : r;
}

static int trace(ref_fs *fs, const struct ref_block *b, int depth)
{
	if (depth > BTRFS_MAX_TREE_LEVEL)
		return ref_fail(fs, EUCLEAN, "block %llu: tree deeper than %d levels",
				(unsigned long long)b->bytenr, BTRFS_MAX_TREE_LEVEL);
	int r = 0;
	for (uint32_t i = 0; i < blk_nritems(b->data) && !r; i++) {
		if (!b->level) {
			struct ref_key k;
			blk_key(b->data, (int)i, &k);
			const struct btrfs_file_extent_item *fi =
				(const void *)leaf_data((uint8_t *)b->data, (int)i);
			if (k.type == BTRFS_EXTENT_DATA_KEY &&
			    leaf_item_size(b->data, (int)i) >= sizeof(*fi) &&
			    fi->type != BTRFS_FILE_EXTENT_INLINE && LE64(fi->disk_bytenr) &&
			    (r = note(fs, LE64(fi->disk_bytenr), LE64(fi->disk_num_bytes), false, 0)) > 0)
				r = 0;
			continue;
		}
		uint64_t gen, child = node_ptr(b->data, (int)i, &gen);
		struct ref_block *c;
		/* (A block noted already was walked already: a damaged node
		 * pointing at one child many times costs no more.) */
		if ((r = note(fs, child, fs->nodesize, true, (uint8_t)(b->level - 1))) > 0) {
			r = 0;
			continue;
		}
		if (r || (r = ref_read_block(fs, child, gen, b->level - 1, 0, &c)))
			break;
		r = trace(fs, c, depth + 1);
		ref_block_put(fs, c);
	}
	return r;
}

int qg_trace_subtree(ref_fs *fs, const struct ref_block *b)
{
	return fs->rw->qg ? trace(fs, b, 0) : 0;
}

/* Moves a number by sign * bytes; true (and 0 left) when it would go below 0. */
static bool move(uint64_t *v, int64_t sign, uint64_t bytes)
{
	if (sign < 0 && *v < bytes) {
		*v = 0;
		return true;
	}
	*v += (uint64_t)sign * bytes;
	return false;
}

/* A group an extent's change of hands moves: how many of the roots that
 * reached the extent before (old) and reach it now (new) are at or below it. */
struct tally {
	uint64_t id;
	uint32_t in_old, in_new;
};

struct tallies {
	struct tally *v;
	size_t n, cap;
	struct qg_roots up; /* (scratch: one root's groups) */
};

/* Counts each root of set in its own group and in every group above it, each
 * group once per root, as the kernel's qgroup_update_refcnt. */
static int tally_roots(struct qg_state *q, const struct qg_roots *set, bool new, struct tallies *t)
{
	for (size_t i = 0; i < set->n; i++) {
		t->up.n = 0;
		if (qg_roots_add(&t->up, set->ids[i]) ||
		    (q->rels.n && qg_rels_up(&q->rels, set->ids[i], &t->up)))
			return -ENOMEM;
		for (size_t u = 0; u < t->up.n; u++) {
			size_t k = 0;
			while (k < t->n && t->v[k].id != t->up.ids[u])
				k++;
			if (k == t->n) {
				if (GROW(t->v, t->n, t->cap))
					return -ENOMEM;
				t->v[t->n++] = (struct tally){ t->up.ids[u], 0, 0 };
			}
			*(new ? &t->v[k].in_new : &t->v[k].in_old) += 1;
		}
	}
	return 0;
}

/* Moves the groups' numbers by one extent's change of hands, as the kernel's
 * qgroup_update_counters: a group references the extent while any root at
 * or below it reaches it, and holds it as exclusive while every root that
 * reaches it is at or below it. */
static int account_extent(ref_fs *fs, const struct qg_extent *e, const struct qg_roots *old,
			  const struct qg_roots *new, struct tallies *t)
{
	struct qg_state *q = fs->rw->qg;
	t->n = 0;
	if (tally_roots(q, old, false, t) || tally_roots(q, new, true, t))
		return ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < t->n; i++) {
		const struct tally *c = &t->v[i];
		struct qg_group *g = qg_group_find(q, c->id);
		if (!g)
			continue;
		int64_t rfer = (int64_t)(c->in_new > 0) - (int64_t)(c->in_old > 0);
		int64_t excl = (int64_t)(c->in_new && c->in_new == new->n) -
			       (int64_t)(c->in_old && c->in_old == old->n);
		bool under_rfer = move(&g->rfer, rfer, e->num_bytes);
		bool under_excl = move(&g->excl, excl, e->num_bytes);
		if (under_rfer || under_excl) {
			ref_log(fs, "qgroup %u/%llu: numbers below zero at extent %llu: marked inconsistent",
				btrfs_qgroup_level(c->id),
				(unsigned long long)(c->id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)),
				(unsigned long long)e->bytenr);
			q->flags |= BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT;
		}
		g->dirty |= rfer || excl;
	}
	return 0;
}

static int account(ref_fs *fs)
{
	struct qg_state *q = fs->rw->qg;
	struct qg_view *ov = NULL, *nv = NULL;
	struct qg_roots old = { 0 }, new = { 0 };
	struct tallies t = { 0 };
	int r = qg_view_open(fs, true, &ov);
	if (!r)
		r = qg_view_open(fs, false, &nv);
	for (size_t i = 0; !r && i < q->nextents; i++) {
		const struct qg_extent *e = &q->extents[i];
		if ((r = qg_view_roots(ov, e, &old)) || (r = qg_view_roots(nv, e, &new)))
			break;
		/* A snapshot made in this transaction reached, as of the last
		 * commit, all that its source reached. */
		for (size_t s = 0; s < q->nsnaps && !r; s++)
			if (qg_roots_has(&old, q->snaps[s].src))
				r = qg_roots_add(&old, q->snaps[s].dst) ? ref_fail(fs, ENOMEM, "out of memory") : 0;
		if (!r)
			r = account_extent(fs, e, &old, &new, &t);
	}
	free(t.v);
	qg_roots_free(&t.up);
	qg_roots_free(&old);
	qg_roots_free(&new);
	qg_view_close(ov);
	qg_view_close(nv);
	q->nextents = 0;
	q->nsnaps = 0;
	u64map_free(&q->extent_idx);
	return r;
}

/* Writes an item of the quota tree, inserting it when absent. */
static int put_item(ref_fs *fs, struct rw_tree *t, uint8_t type, uint64_t offset, const void *data,
		    uint32_t size)
{
	struct ref_key k = { 0, type, offset };
	struct ref_path p;
	int r = bt_lookup_cow(fs, t, &k, &p);
	if (r == -ENOENT)
		return bt_insert_data(fs, t, &k, data, size);
	if (r)
		return r;
	uint32_t have;
	uint8_t *d = bt_item(&p, &have);
	memcpy(d, data, have < size ? have : size);
	ref_path_release(fs, &p);
	return 0;
}

static int write_status(ref_fs *fs, struct rw_tree *t)
{
	struct qg_status_disk st = { htole64(BTRFS_QGROUP_STATUS_VERSION), htole64(fs->rw->transid),
				     htole64(fs->rw->qg->flags), htole64(QG_NO_RESCAN), 0 };
	return put_item(fs, t, BTRFS_QGROUP_STATUS_KEY, 0, &st, sizeof(st));
}

static int write_group(ref_fs *fs, struct rw_tree *t, struct qg_group *g)
{
	int r = 0;
	if (g->dirty || g->is_new) {
		struct btrfs_qgroup_info_item ii = { htole64(fs->rw->transid), htole64(g->rfer),
						     htole64(g->rfer), htole64(g->excl),
						     htole64(g->excl) };
		r = put_item(fs, t, BTRFS_QGROUP_INFO_KEY, g->id, &ii, sizeof(ii));
	}
	if (!r && (g->limit_dirty || g->is_new)) {
		struct btrfs_qgroup_limit_item li = { htole64(g->limit_flags), htole64(g->max_rfer),
						      htole64(g->max_excl), htole64(g->rsv_rfer),
						      htole64(g->rsv_excl) };
		r = put_item(fs, t, BTRFS_QGROUP_LIMIT_KEY, g->id, &li, sizeof(li));
	}
	if (!r)
		g->dirty = g->limit_dirty = g->is_new = false;
	return r;
}

/* Removes the group at index i, and its items unless it never had any. */
static int remove_group(ref_fs *fs, struct rw_tree *t, size_t i)
{
	struct qg_state *q = fs->rw->qg;
	struct qg_group g = q->groups[i];
	memmove(q->groups + i, q->groups + i + 1, (q->ngroups - i - 1) * sizeof(*q->groups));
	q->ngroups--;
	int r = 0;
	/* Its relations too, both items each (btrfs_remove_qgroup). */
	for (size_t k = 0; k < q->rels.n && (r == 0 || r == -ENOENT);) {
		struct ref_qgroup_rel l = q->rels.v[k];
		if (l.child != g.id && l.parent != g.id) {
			k++;
			continue;
		}
		struct ref_key up = { l.child, BTRFS_QGROUP_RELATION_KEY, l.parent };
		struct ref_key down = { l.parent, BTRFS_QGROUP_RELATION_KEY, l.child };
		qg_rels_del(&q->rels, l.child, l.parent);
		if ((r = bt_delete_key(fs, t, &up)) == 0 || r == -ENOENT)
			r = bt_delete_key(fs, t, &down);
	}
	if (g.is_new || (r && r != -ENOENT))
		return r == -ENOENT ? 0 : r;
	struct ref_key info = { 0, BTRFS_QGROUP_INFO_KEY, g.id }, lim = { 0, BTRFS_QGROUP_LIMIT_KEY, g.id };
	r = bt_delete_key(fs, t, &info);
	if (r == 0 || r == -ENOENT)
		r = bt_delete_key(fs, t, &lim);
	return r == -ENOENT ? 0 : r;
}

int qg_settle(ref_fs *fs, bool *work)
{
	struct qg_state *q = fs->rw->qg;
	if (!q)
		return 0;
	int r = q->nextents ? account(fs) : 0;
	bool items = !q->status_written;
	for (size_t i = 0; i < q->ngroups && !items; i++)
		items = q->groups[i].dirty || q->groups[i].limit_dirty || q->groups[i].is_new ||
			q->groups[i].dropped;
	if (r || !items)
		return r;
	struct rw_tree *t;
	if ((r = rw_tree_get(fs, BTRFS_QUOTA_TREE_OBJECTID, &t)))
		return r;
	for (size_t i = 0; i < q->ngroups && !r;) {
		struct qg_group *g = &q->groups[i];
		if (!g->dropped) {
			r = write_group(fs, t, g);
			i++;
			continue;
		}
		/* A dropped subvolume's group goes whatever it counts; numbers
		 * left mean they were wrong (a kernel's accounting can go stale
		 * when its drop of a shared node spans two commits): as Linux
		 * 6.18's btrfs_remove_qgroup, they are marked inconsistent. */
		if ((g->rfer || g->excl) && !(q->flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT)) {
			ref_log(fs, "qgroup 0/%llu of a dropped subvolume has non-zero numbers, rfer %llu excl %llu: marked inconsistent",
				(unsigned long long)g->id, (unsigned long long)g->rfer,
				(unsigned long long)g->excl);
			q->flags |= BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT;
		}
		r = remove_group(fs, t, i);
	}
	if (!r)
		r = write_status(fs, t);
	q->status_written = true;
	*work = true;
	return r;
}

void qg_committed(ref_fs *fs)
{
	struct qg_state *q = fs->rw->qg;
	if (!q)
		return;
	for (size_t i = 0; i < q->ngroups; i++)
		q->groups[i].reserved = 0;
	q->status_written = false;
}

int qg_subvol_created(ref_fs *fs, uint64_t id)
{
	struct qg_state *q = fs->rw->qg;
	if (!q)
		return 0;
	/* (Called once the new tree exists: a failure here leaves a tree with
	 * no group, so the transaction is given up.) */
	struct qg_group *g = qg_group_add(fs, q, id);
	if (!g) {
		fs->rw->failed = true;
		return ref_fail(fs, ENOMEM, "out of memory for subvolume %llu's quota group; the file system is read-only now",
				(unsigned long long)id);
	}
	g->rfer = g->excl = 0;
	g->dirty = true;
	g->is_new |= !g->limit_flags; /* (a group made beforehand keeps its limit item) */
	return 0;
}

void qg_subvol_dropped(ref_fs *fs, uint64_t id)
{
	struct qg_group *g = fs->rw->qg ? qg_group_find(fs->rw->qg, id) : NULL;
	if (g)
		g->dropped = true;
}

int qg_snapshot(ref_fs *fs, uint64_t src, uint64_t dst)
{
	struct qg_state *q = fs->rw->qg;
	if (!q)
		return 0;
	if (GROW(q->snaps, q->nsnaps, q->snaps_cap)) {
		fs->rw->failed = true;
		return ref_fail(fs, ENOMEM, "out of memory for a snapshot's quota group; the file system is read-only now");
	}
	q->snaps[q->nsnaps++] = (struct qg_snap){ src, dst };
	int r = qg_subvol_created(fs, dst);
	struct qg_group *s = qg_group_find(q, src), *d = qg_group_find(q, dst);
	if (r)
		return r;
	if (!s) /* nothing to inherit (the kernel skips it too) */
		return 0;
	/* The groups above the source held its extents as exclusive; now the
	 * copy, in none of them, shares them: as btrfs_qgroup_inherit ("qgroup
	 * inherit needs a rescan"), the numbers are marked inconsistent. */
	for (size_t i = 0; i < q->rels.n; i++)
		if (q->rels.v[i].child == src) {
			ref_log(fs, "quota groups marked inconsistent: the snapshot's source is a member of %u/%llu",
				btrfs_qgroup_level(q->rels.v[i].parent),
				(unsigned long long)(q->rels.v[i].parent &
						     ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
			q->flags |= BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT;
			break;
		}
	/* Everything the source reached is shared with the copy now; the root
	 * blocks each get back as exclusive when the commit counts them. */
	if (!MUTANT(QGROUP_NO_INHERIT)) {
		d->rfer = s->rfer;
		s->excl = 0;
		s->dirty = true;
	}
	/* The limits too, as btrfs_qgroup_inherit ("inherit the limit info"). */
	d->limit_flags = s->limit_flags;
	d->max_rfer = s->max_rfer;
	d->max_excl = s->max_excl;
	d->rsv_rfer = s->rsv_rfer;
	d->rsv_excl = s->rsv_excl;
	d->limit_dirty = true;
	return 0;
}

/* Whether bytes more would take group g past one of its limits. */
static bool over_limit(const struct qg_group *g, uint64_t bytes)
{
	return (g->limit_flags & BTRFS_QGROUP_LIMIT_MAX_RFER &&
		g->rfer + g->reserved + bytes > g->max_rfer) ||
	       (g->limit_flags & BTRFS_QGROUP_LIMIT_MAX_EXCL &&
		g->excl + g->reserved + bytes > g->max_excl);
}

/* The group of subvolume subvol, or the first group above it, that bytes more
 * would take past a limit; NULL when none would (or -ENOMEM in *r). */
static struct qg_group *over_limit_above(struct qg_state *q, uint64_t subvol, uint64_t bytes,
					 struct qg_roots *set, int *r)
{
	set->n = 0;
	*r = 0;
	if (qg_roots_add(set, subvol) || (q->rels.n && qg_rels_up(&q->rels, subvol, set))) {
		*r = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < set->n; i++) {
		struct qg_group *g = qg_group_find(q, set->ids[i]);
		if (g && over_limit(g, bytes))
			return g;
	}
	return NULL;
}

int qg_reserve(ref_fs *fs, uint64_t subvol, uint64_t bytes)
{
	struct qg_state *q = fs->rw->qg;
	if (!q || !qg_group_find(q, subvol) || !bytes)
		return 0;
	/* The subvolume's group and every group above it, as qgroup_reserve. */
	struct qg_roots set = { 0 };
	int r;
	struct qg_group *g = over_limit_above(q, subvol, bytes, &set, &r);
	if (g && fs->rw->in_txn) {
		/* What this transaction changed may count for less once counted
		 * (an overwrite or a deletion frees what it replaces): count it, as
		 * the kernel commits (try_flush_qgroup) before it gives EDQUOT. */
		if ((r = rw_commit(fs))) {
			qg_roots_free(&set);
			return r;
		}
		g = over_limit_above(q, subvol, bytes, &set, &r);
	}
	if (g) {
		char also[64] = "";
		if (g->id != subvol)
			snprintf(also, sizeof(also), " (%u/%llu, above it)", btrfs_qgroup_level(g->id),
				 (unsigned long long)(g->id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
		r = ref_fail(fs, EDQUOT,
			     "subvolume %llu: %llu bytes more would pass the limit of a quota group%s (referenced %llu, exclusive %llu)",
			     (unsigned long long)subvol, (unsigned long long)bytes, also,
			     (unsigned long long)g->rfer, (unsigned long long)g->excl);
	}
	for (size_t i = 0; !r && i < set.n; i++) {
		struct qg_group *a = qg_group_find(q, set.ids[i]);
		if (a)
			a->reserved += bytes;
	}
	qg_roots_free(&set);
	return r == -ENOMEM ? ref_fail(fs, ENOMEM, "out of memory") : r;
}

/* ---- Enabling and limits (vfs.h) ---- */

/* The quota tree, its root item, and a group for the top level and every
 * linked subvolume, with the numbers counted now. */
static int create_quota_tree(ref_fs *fs)
{
	struct qg_state *q = calloc(1, sizeof(*q));
	if (!q)
		return ref_fail(fs, ENOMEM, "out of memory");
	fs->rw->qg = q;
	q->flags = BTRFS_QGROUP_STATUS_FLAG_ON;
	uint64_t *ids = NULL;
	size_t n = 0;
	int r = ref_subvol_ids(fs, &ids, &n);
	if (!r && !qg_group_add(fs, q, BTRFS_FS_TREE_OBJECTID))
		r = -ENOMEM;
	for (size_t i = 0; i < n && !r; i++)
		if (!qg_group_add(fs, q, ids[i]))
			r = -ENOMEM;
	free(ids);
	for (size_t i = 0; i < q->ngroups; i++)
		q->groups[i].is_new = true;
	if (r || (r = rescan(fs, q)))
		return r;
	struct rw_tree *t;
	return bt_new_tree_rooted(fs, BTRFS_QUOTA_TREE_OBJECTID, &t);
}

int ref_qgroup_enable(ref_fs *fs)
{
	int r = rw_check_writable(fs);
	if (r || fs->rw->qg)
		return r;
	/* Counted on a settled file system: nothing pending in the extent tree. */
	if ((r = rw_commit(fs)))
		return r;
	if ((r = create_quota_tree(fs))) {
		fs->rw->failed = fs->rw->in_txn; /* (half a quota tree must not be committed) */
		qg_free(fs);
		return r;
	}
	fs->rw->in_txn = true;
	return rw_commit(fs);
}

int ref_qgroup_rescan(ref_fs *fs)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	if (!fs->rw->qg)
		return ref_fail(fs, ENOTCONN, "quota groups are not enabled");
	/* Counted on a settled file system, as at enable. */
	if ((r = rw_commit(fs)) || (r = rescan(fs, fs->rw->qg)))
		return r;
	fs->rw->qg->status_written = false;
	fs->rw->in_txn = true;
	return rw_commit(fs);
}

int ref_qgroup_limit(ref_fs *fs, uint64_t id, uint64_t flags, uint64_t max_rfer,
		     uint64_t max_excl)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct qg_state *q = fs->rw->qg;
	if (!q)
		return ref_fail(fs, ENOTCONN, "quota groups are not enabled");
	if (flags & ~(uint64_t)(BTRFS_QGROUP_LIMIT_MAX_RFER | BTRFS_QGROUP_LIMIT_MAX_EXCL))
		return ref_fail(fs, EINVAL, "unknown limit flags 0x%llx", (unsigned long long)flags);
	struct qg_group *g = qg_group_find(q, id);
	if (!g)
		return ref_fail(fs, ENOENT, "no quota group %u/%llu", btrfs_qgroup_level(id),
				(unsigned long long)(id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
	/* As btrfs_limit_qgroup: only the limits named change; a maximum of
	 * UINT64_MAX removes the limit. */
	static const uint64_t bit[2] = { BTRFS_QGROUP_LIMIT_MAX_RFER, BTRFS_QGROUP_LIMIT_MAX_EXCL };
	uint64_t *max[2] = { &g->max_rfer, &g->max_excl }, want[2] = { max_rfer, max_excl };
	for (int i = 0; i < 2; i++) {
		if (!(flags & bit[i]))
			continue;
		*max[i] = want[i] == UINT64_MAX ? 0 : want[i];
		g->limit_flags = want[i] == UINT64_MAX ? g->limit_flags & ~bit[i]
						       : g->limit_flags | bit[i];
	}
	g->limit_dirty = true;
	fs->rw->in_txn = true;
	return rw_commit(fs);
}
