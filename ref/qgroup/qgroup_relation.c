/*
 * qgroup_relation.c - quota groups above level 0: the relations between
 * groups, the groups above or below one, and the calls that create and
 * destroy groups and relations (btrfs qgroup create / destroy / assign /
 * remove, with Linux 6.18's rules).
 *
 * A relation is two empty items of the quota tree, (child, QGROUP_RELATION,
 * parent) and (parent, QGROUP_RELATION, child).  The kernel builds its
 * configuration from the first kind alone (btrfs_read_qgroup_config) and
 * ignores one that names a group it does not have; so does ref.  A group
 * above level 0 references every extent a subvolume below it reaches, and
 * holds as exclusive those that only subvolumes below it reach: the
 * accounting (qgroup.c) and the recount (qgroup_count.c) say how.
 */
#include "ref/qgroup/qgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- The relations as a set ---- */

static int rel_cmp(const struct ref_qgroup_rel *a, uint64_t child, uint64_t parent)
{
	if (a->child != child)
		return a->child < child ? -1 : 1;
	return a->parent < parent ? -1 : a->parent > parent;
}

/* The index where (child, parent) is or would go. */
static size_t rel_at(const struct qg_rels *r, uint64_t child, uint64_t parent)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rel_cmp(&r->v[mid], child, parent) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool qg_rels_has(const struct qg_rels *r, uint64_t child, uint64_t parent)
{
	size_t i = rel_at(r, child, parent);
	return i < r->n && !rel_cmp(&r->v[i], child, parent);
}

int qg_rels_add(struct qg_rels *r, uint64_t child, uint64_t parent)
{
	size_t i = rel_at(r, child, parent);
	if (i < r->n && !rel_cmp(&r->v[i], child, parent))
		return 0;
	if (GROW(r->v, r->n, r->cap))
		return -ENOMEM;
	memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof(*r->v));
	r->v[i] = (struct ref_qgroup_rel){ child, parent };
	r->n++;
	return 0;
}

void qg_rels_del(struct qg_rels *r, uint64_t child, uint64_t parent)
{
	size_t i = rel_at(r, child, parent);
	if (i < r->n && !rel_cmp(&r->v[i], child, parent)) {
		memmove(r->v + i, r->v + i + 1, (r->n - i - 1) * sizeof(*r->v));
		r->n--;
	}
}

void qg_rels_free(struct qg_rels *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* Walks the relations from id, up (to parents) or down (to children), adding
 * each group met to *acc; with `leaves`, only the groups of level 0.  Levels
 * strictly rise along a relation, so the walk ends; a work list rather than
 * recursion, as a damaged tree may chain thousands of levels. */
static int walk(const struct qg_rels *r, uint64_t id, bool up, bool leaves, struct qg_roots *acc)
{
	struct qg_roots seen = { 0 };
	uint64_t *todo = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;
	uint64_t cur = id;
	for (;;) {
		for (size_t i = 0; i < r->n && !ret; i++) {
			uint64_t from = up ? r->v[i].child : r->v[i].parent;
			uint64_t to = up ? r->v[i].parent : r->v[i].child;
			if (from != cur || qg_roots_has(&seen, to))
				continue;
			if (qg_roots_add(&seen, to) || GROW(todo, n, cap) ||
			    ((!leaves || !btrfs_qgroup_level(to)) && qg_roots_add(acc, to)))
				ret = -ENOMEM;
			else
				todo[n++] = to;
		}
		if (ret || !n)
			break;
		cur = todo[--n];
	}
	free(todo);
	qg_roots_free(&seen);
	return ret;
}

int qg_rels_up(const struct qg_rels *r, uint64_t id, struct qg_roots *acc)
{
	return walk(r, id, true, false, acc);
}

int qg_rels_down(const struct qg_rels *r, uint64_t id, struct qg_roots *acc)
{
	return walk(r, id, false, true, acc);
}

/* ---- Reading them ---- */

void qg_rels_drop_orphans(struct qg_rels *r, const struct ref_qgroup *groups, size_t ngroups)
{
	size_t kept = 0;
	for (size_t i = 0; i < r->n; i++) {
		bool child = false, parent = false;
		for (size_t j = 0; j < ngroups; j++) {
			child |= groups[j].id == r->v[i].child;
			parent |= groups[j].id == r->v[i].parent;
		}
		if (child && parent)
			r->v[kept++] = r->v[i];
	}
	r->n = kept;
}

int qg_rels_read(ref_fs *fs, const struct ref_root *quota, struct qg_rels *out)
{
	memset(out, 0, sizeof(*out));
	struct ref_path p = { .levels = 0 };
	struct ref_key k = { 1, BTRFS_QGROUP_RELATION_KEY, 0 };
	int r = ref_search(fs, quota, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		/* (child, RELATION, parent): the child's level is the lower */
		if (k.type == BTRFS_QGROUP_RELATION_KEY && k.objectid < k.offset &&
		    btrfs_qgroup_level(k.objectid) < btrfs_qgroup_level(k.offset) &&
		    qg_rels_add(out, k.objectid, k.offset)) {
			r = ref_fail(fs, ENOMEM, "out of memory");
			break;
		}
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	if (r < 0) {
		qg_rels_free(out);
		return r;
	}
	return 0;
}

int ref_qgroup_relations(ref_fs *fs, struct ref_qgroup_rel **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	struct ref_root quota;
	int r = ref_find_root(fs, BTRFS_QUOTA_TREE_OBJECTID, &quota);
	if (r == -ENOENT)
		return ref_fail(fs, ENOTCONN, "quota groups are not enabled");
	struct qg_rels rels;
	struct ref_qgroup *groups = NULL;
	size_t ngroups = 0;
	if (r || (r = qg_rels_read(fs, &quota, &rels)))
		return r;
	if ((r = ref_qgroup_list(fs, &groups, &ngroups))) {
		qg_rels_free(&rels);
		return r;
	}
	qg_rels_drop_orphans(&rels, groups, ngroups);
	free(groups);
	*out = rels.v;
	*n = rels.n;
	return 0;
}

/* ---- Creating and destroying (vfs.h) ---- */

/* The quota tree of a writable mount with quotas on, in *q. */
static int quota_state(ref_fs *fs, struct qg_state **q)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	*q = fs->rw->qg;
	return *q ? 0 : ref_fail(fs, ENOTCONN, "quota groups are not enabled");
}

static const char *qgid(uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%u/%llu", btrfs_qgroup_level(id),
		 (unsigned long long)(id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
	return buf;
}

int ref_qgroup_create(ref_fs *fs, uint64_t id)
{
	struct qg_state *q;
	char b[48];
	int r = quota_state(fs, &q);
	if (r)
		return r;
	if (qg_group_find(q, id))
		return ref_fail(fs, EEXIST, "quota group %s exists", qgid(id, b, sizeof(b)));
	struct qg_group *g = qg_group_add(fs, q, id);
	if (!g)
		return -ENOMEM;
	g->is_new = true; /* its INFO and LIMIT items, zero, at the commit */
	fs->rw->in_txn = true;
	return rw_commit(fs);
}

/* The two items of a relation: inserted, or deleted (-ENOENT when neither was
 * there). */
static int rel_items(ref_fs *fs, uint64_t child, uint64_t parent, bool add)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, BTRFS_QUOTA_TREE_OBJECTID, &t);
	struct ref_key up = { child, BTRFS_QGROUP_RELATION_KEY, parent };
	struct ref_key down = { parent, BTRFS_QGROUP_RELATION_KEY, child };
	if (r)
		return r;
	if (add) {
		if (!(r = bt_insert_data(fs, t, &up, NULL, 0)))
			r = bt_insert_data(fs, t, &down, NULL, 0);
		return r;
	}
	r = bt_delete_key(fs, t, &up);
	if (r && r != -ENOENT)
		return r;
	int r2 = bt_delete_key(fs, t, &down);
	if (r2 && r2 != -ENOENT)
		return r2;
	return r && r2 ? -ENOENT : 0;
}

/* Marks the numbers inconsistent (a rescan is needed), saying why: 1. */
static int mark_stale(ref_fs *fs, struct qg_state *q, const char *why)
{
	q->flags |= BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT;
	q->status_written = false;
	ref_log(fs, "quota groups marked inconsistent: %s; a rescan is needed", why);
	return 1;
}

/* The numbers of a new or ended relation, as the kernel's
 * quick_update_accounting: when all the child references is its exclusive,
 * it moves into the parent and every group above it (sign +1 or -1), each
 * group once; otherwise the numbers are marked inconsistent: 1. */
static int quick_update(ref_fs *fs, struct qg_state *q, uint64_t child, uint64_t parent, int sign)
{
	struct qg_group *c = qg_group_find(q, child);
	if (!c || c->rfer != c->excl)
		return mark_stale(fs, q, "the relation's child shares extents");
	uint64_t bytes = c->excl;
	struct qg_roots set = { 0 };
	if (qg_roots_add(&set, parent) || qg_rels_up(&q->rels, parent, &set)) {
		qg_roots_free(&set);
		return ref_fail(fs, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < set.n; i++) {
		struct qg_group *g = qg_group_find(q, set.ids[i]);
		if (!g)
			continue;
		if (sign < 0 && (g->rfer < bytes || g->excl < bytes)) {
			mark_stale(fs, q, "a group above held less than its member");
			g->rfer = g->rfer < bytes ? 0 : g->rfer - bytes;
			g->excl = g->excl < bytes ? 0 : g->excl - bytes;
		} else {
			g->rfer += (uint64_t)sign * bytes;
			g->excl += (uint64_t)sign * bytes;
		}
		g->dirty = true;
	}
	qg_roots_free(&set);
	return 0;
}

/* Ends the relation child -> parent in the running transaction: items,
 * memory and numbers.  0, 1 (numbers marked inconsistent), -ENOENT when
 * there was none. */
static int unrelate(ref_fs *fs, struct qg_state *q, uint64_t child, uint64_t parent)
{
	bool known = qg_rels_has(&q->rels, child, parent);
	int r = rel_items(fs, child, parent, false);
	if (r == -ENOENT && known)
		r = 0; /* (the kernel's answer when only memory knew it) */
	if (r || !known)
		return r;
	qg_rels_del(&q->rels, child, parent);
	return quick_update(fs, q, child, parent, -1);
}

int ref_qgroup_assign(ref_fs *fs, uint64_t child, uint64_t parent, bool add)
{
	struct qg_state *q;
	char b1[48], b2[48];
	int r = quota_state(fs, &q);
	if (r)
		return r;
	qgid(child, b1, sizeof(b1));
	qgid(parent, b2, sizeof(b2));
	if (!add) {
		if ((r = unrelate(fs, q, child, parent)) == -ENOENT)
			return ref_fail(fs, ENOENT, "%s is not a member of %s", b1, b2);
	} else {
		if (btrfs_qgroup_level(child) >= btrfs_qgroup_level(parent))
			return ref_fail(fs, EINVAL, "%s cannot be a member of %s: its level must be lower", b1, b2);
		if (!qg_group_find(q, child) || !qg_group_find(q, parent))
			return ref_fail(fs, EINVAL, "no quota group %s", qg_group_find(q, child) ? b2 : b1);
		if (qg_rels_has(&q->rels, child, parent))
			return ref_fail(fs, EEXIST, "%s is a member of %s already", b1, b2);
		if ((r = rel_items(fs, child, parent, true)) || (r = qg_rels_add(&q->rels, child, parent))) {
			fs->rw->failed = true; /* (half a relation must not be committed) */
			return r == -ENOMEM ? ref_fail(fs, ENOMEM, "out of memory") : r;
		}
		r = quick_update(fs, q, child, parent, 1);
	}
	if (r < 0) {
		fs->rw->failed = true;
		return r;
	}
	fs->rw->in_txn = true;
	int c = rw_commit(fs);
	return c ? c : r;
}

int ref_qgroup_destroy(ref_fs *fs, uint64_t id)
{
	struct qg_state *q;
	char b[48];
	int r = quota_state(fs, &q);
	if (r)
		return r;
	qgid(id, b, sizeof(b));
	struct qg_group *g = qg_group_find(q, id);
	if (!g)
		return ref_fail(fs, ENOENT, "no quota group %s", b);
	if (!btrfs_qgroup_level(id) && qg_is_fstree(id) && (g->rfer || g->excl || g->reserved))
		return ref_fail(fs, EBUSY, "quota group %s counts bytes (its subvolume's)", b);
	for (size_t i = 0; i < q->rels.n; i++)
		if (q->rels.v[i].parent == id)
			return ref_fail(fs, EBUSY, "quota group %s has members", b);
	/* Its relations to the groups above go first, each as `remove` would. */
	int stale = 0;
	for (size_t i = 0; i < q->rels.n;) {
		if (q->rels.v[i].child != id) {
			i++;
			continue;
		}
		if ((r = unrelate(fs, q, id, q->rels.v[i].parent)) < 0) {
			fs->rw->failed = true;
			return r;
		}
		stale |= r;
	}
	g = qg_group_find(q, id);
	g->dropped = true; /* its items go at the commit (qgroup.c) */
	g->rfer = g->excl = 0;
	fs->rw->in_txn = true;
	r = rw_commit(fs);
	return r ? r : stale;
}
