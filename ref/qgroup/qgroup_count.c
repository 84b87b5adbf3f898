/*
 * qgroup_count.c - quota-group numbers counted from scratch, as a rescan
 * does: every subvolume tree is walked from its root (a deleted one only as
 * far as the cleaner left it), and every tree block and data extent met is
 * counted once per subvolume that reaches it, whole (an extent's disk size,
 * nodesize for a block).  An extent reached from one subvolume only is that
 * subvolume's exclusive.
 *
 * The walks run one subvolume after the other, so "already counted for this
 * subvolume" is "last seen by the walk running now".
 */
#include "ref/qgroup/qgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct count_ent {
	uint64_t bytes;
	uint64_t first, last; /* the first and the latest subvolume that reached it */
	bool shared;
	/* With groups above level 0: the subvolumes after the first that reach
	 * it, ascending (the walks go in order of id). */
	uint64_t *more;
	uint32_t nmore, capmore;
};

struct counter {
	ref_fs *fs;
	struct u64map idx; /* bytenr -> index + 1 */
	struct count_ent *e;
	size_t n, cap;
	int drop_level;
	struct ref_key drop_key;
	bool sets; /* keep each extent's subvolumes (groups above level 0 exist) */
};

/* Counts an extent for subvolume q: 0, 1 when this walk counted it already. */
static int count(struct counter *c, uint64_t bytenr, uint64_t bytes, struct ref_qgroup *q)
{
	uint64_t *ix = u64map_get(&c->idx, bytenr, true);
	if (!ix)
		return ref_fail(c->fs, ENOMEM, "out of memory");
	if (*ix) {
		struct count_ent *e = &c->e[*ix - 1];
		if (e->last == q->id)
			return 1; /* counted for this subvolume already */
		e->last = q->id;
		e->shared = true;
		q->rfer += e->bytes;
		if (c->sets) {
			size_t cap = e->capmore;
			if (ref_grow((void **)&e->more, e->nmore, &cap, sizeof(*e->more)))
				return ref_fail(c->fs, ENOMEM, "out of memory");
			e->capmore = (uint32_t)cap;
			e->more[e->nmore++] = q->id;
		}
		return 0;
	}
	if (GROW(c->e, c->n, c->cap))
		return ref_fail(c->fs, ENOMEM, "out of memory");
	c->e[c->n] = (struct count_ent){ bytes, q->id, q->id, false, NULL, 0, 0 };
	*ix = ++c->n;
	q->rfer += bytes;
	return 0;
}

/* The data extents a leaf's file extent items point at. */
static int count_leaf(struct counter *c, const struct ref_block *b, struct ref_qgroup *q)
{
	struct ref_path p = { .levels = 1 };
	p.blk[0] = (struct ref_block *)b;
	int r = 0;
	for (uint32_t i = 0; i < blk_nritems(b->data) && !r; i++) {
		struct ref_key k;
		const uint8_t *d;
		uint32_t size;
		p.slot[0] = (int)i;
		ref_path_item(&p, &k, &d, &size);
		if (k.type != BTRFS_EXTENT_DATA_KEY)
			continue;
		const struct btrfs_file_extent_item *fi = (const void *)d;
		if (size < sizeof(*fi) || fi->type == BTRFS_FILE_EXTENT_INLINE || !LE64(fi->disk_bytenr))
			continue;
		if ((r = count(c, LE64(fi->disk_bytenr), LE64(fi->disk_num_bytes), q)) > 0)
			r = 0; /* (another item of this subvolume points at it too) */
	}
	return r;
}

static int walk(struct counter *c, uint64_t bytenr, uint64_t gen, int level, struct ref_qgroup *q)
{
	/* (A block this walk met already is not walked again: a damaged node
	 * pointing at one child many times costs no more than once.) */
	int r = count(c, bytenr, c->fs->nodesize, q);
	struct ref_block *b;
	if (r || (r = ref_read_block(c->fs, bytenr, gen, level, 0, &b)))
		return r < 0 ? r : 0;
	if (!b->level)
		r = count_leaf(c, b, q);
	for (uint32_t i = 0; b->level && i < blk_nritems(b->data) && !r; i++) {
		if (c->drop_level >= 0 && node_child_dropped(b->data, (int)i, &c->drop_key))
			continue; /* dropped by the cleaner */
		uint64_t cgen, child = node_ptr(b->data, (int)i, &cgen);
		r = walk(c, child, cgen, b->level - 1, q);
	}
	ref_block_put(c->fs, b);
	return r;
}

/* Walks subvolume tree `id` with root item ri into a new entry of *out. */
static int walk_subvol(struct counter *c, uint64_t id, const struct btrfs_root_item *ri,
		       struct ref_qgroup **out, size_t *n, size_t *cap)
{
	if (ref_grow((void **)out, *n, cap, sizeof(**out)))
		return ref_fail(c->fs, ENOMEM, "out of memory");
	struct ref_qgroup *q = &(*out)[(*n)++];
	memset(q, 0, sizeof(*q));
	q->id = id;
	c->drop_level = -1;
	if (ri->drop_progress.objectid) {
		c->drop_level = ri->drop_level;
		c->drop_key = (struct ref_key){ LE64(ri->drop_progress.objectid), ri->drop_progress.type,
						LE64(ri->drop_progress.offset) };
	}
	if (ri->level >= BTRFS_MAX_TREE_LEVEL)
		return ref_fail(c->fs, EUCLEAN, "subvolume %llu: root level %u",
				(unsigned long long)id, ri->level);
	return walk(c, LE64(ri->bytenr), LE64(ri->generation), ri->level, q);
}

/* The entry of subvolume id (walked, so present; entries ascend by id). */
static struct ref_qgroup *find(struct ref_qgroup *q, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (q[mid].id <= id)
			lo = mid;
		else
			hi = mid;
	}
	return &q[lo];
}

/* How many of extent e's subvolumes are in set d (and in *total, how many
 * subvolumes reach it). */
static size_t reach_in(const struct count_ent *e, const struct qg_roots *d, size_t *total)
{
	size_t in = qg_roots_has(d, e->first);
	for (uint32_t i = 0; i < e->nmore; i++)
		in += qg_roots_has(d, e->more[i]);
	*total = 1 + e->nmore;
	return in;
}

/* The groups above level 0 the quota tree holds, appended to *out with their
 * numbers: an extent a subvolume below the group reaches is referenced; one
 * only subvolumes below it reach is exclusive. */
static int count_above(struct counter *c, const struct ref_qgroup *groups, size_t ngroups,
		       const struct qg_rels *rels, struct ref_qgroup **out, size_t *n, size_t *cap)
{
	for (size_t g = 0; g < ngroups; g++) {
		if (!btrfs_qgroup_level(groups[g].id))
			continue;
		struct qg_roots below = { 0 };
		if (qg_rels_down(rels, groups[g].id, &below) ||
		    ref_grow((void **)out, *n, cap, sizeof(**out))) {
			qg_roots_free(&below);
			return ref_fail(c->fs, ENOMEM, "out of memory");
		}
		struct ref_qgroup *q = &(*out)[(*n)++];
		memset(q, 0, sizeof(*q));
		q->id = groups[g].id;
		for (size_t i = 0; i < c->n && below.n; i++) {
			size_t total, in = reach_in(&c->e[i], &below, &total);
			q->rfer += in ? c->e[i].bytes : 0;
			q->excl += in == total ? c->e[i].bytes : 0;
		}
		qg_roots_free(&below);
	}
	return 0;
}

/* The groups and relations of the quota tree, when quotas are on and a
 * group above level 0 exists (else none: *ngroups 0). */
static int read_config(ref_fs *fs, struct ref_qgroup **groups, size_t *ngroups, struct qg_rels *rels)
{
	struct ref_root quota;
	memset(rels, 0, sizeof(*rels));
	*groups = NULL;
	*ngroups = 0;
	int r = ref_find_root(fs, BTRFS_QUOTA_TREE_OBJECTID, &quota);
	if (r)
		return r == -ENOENT ? 0 : r;
	if ((r = ref_qgroup_list(fs, groups, ngroups)))
		return r;
	bool above = false;
	for (size_t i = 0; i < *ngroups; i++)
		above |= btrfs_qgroup_level((*groups)[i].id) > 0;
	if (above && !(r = qg_rels_read(fs, &quota, rels))) {
		qg_rels_drop_orphans(rels, *groups, *ngroups);
		return 0;
	}
	free(*groups);
	*groups = NULL;
	*ngroups = 0;
	return r;
}

int qg_recount(ref_fs *fs, struct ref_qgroup **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	struct counter c = { .fs = fs };
	struct ref_root tr;
	struct ref_path p = { .levels = 0 };
	struct ref_qgroup *groups;
	size_t ngroups;
	struct qg_rels rels;
	int r = read_config(fs, &groups, &ngroups, &rels);
	if (r)
		return r;
	c.sets = ngroups > 0;
	r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tr);
	struct ref_key k = { BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0 };
	if (!r)
		r = ref_search(fs, &tr, &k, &p);
	/* (The walks read other blocks; the root tree path is kept, as the
	 * block cache holds what a path holds.) */
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid > BTRFS_LAST_FREE_OBJECTID)
			break;
		if (k.type == BTRFS_ROOT_ITEM_KEY && qg_is_fstree(k.objectid)) {
			if (size < btrfs_legacy_root_item_size()) {
				r = ref_fail(fs, EUCLEAN, "root item of tree %llu is %u bytes",
					     (unsigned long long)k.objectid, size);
				break;
			}
			struct btrfs_root_item ri;
			memset(&ri, 0, sizeof(ri));
			memcpy(&ri, d, size < sizeof(ri) ? size : sizeof(ri));
			if ((r = walk_subvol(&c, k.objectid, &ri, out, n, &cap)))
				break;
		}
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	for (size_t i = 0; r >= 0 && i < c.n; i++)
		if (!c.e[i].shared)
			find(*out, *n, c.e[i].first)->excl += c.e[i].bytes;
	if (r >= 0)
		r = count_above(&c, groups, ngroups, &rels, out, n, &cap);
	for (size_t i = 0; i < c.n; i++)
		free(c.e[i].more);
	free(groups);
	qg_rels_free(&rels);
	free(c.e);
	u64map_free(&c.idx);
	if (r < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return r;
	}
	return 0;
}
