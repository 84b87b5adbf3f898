/*
 * qgcount.c - the quota-group tests' own count of the numbers: every
 * subvolume tree walked through the read API (a deleted one as far as the
 * cleaner left it), each tree block and data extent (whole, by its disk
 * size) counted for every subvolume that reaches it; a group above level 0
 * from the subvolumes below it.  Independent of ref's recount
 * (qgroup_count.c), which the tests compare with it.
 */
#include "qgcount.h"
#include "testutil.h"
#include "wrutil.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

char qg_where[160];

struct qext {
	uint64_t bytenr, size, sv;
};

struct qextv {
	struct qext *e;
	size_t n, cap;
};

static void qx_add(struct qextv *v, uint64_t bytenr, uint64_t size, uint64_t sv)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 1024;
		v->e = realloc(v->e, v->cap * sizeof(*v->e));
		cr_assert(v->e);
	}
	v->e[v->n++] = (struct qext){ bytenr, size, sv };
}

static int qx_cmp(const void *a, const void *b)
{
	const struct qext *x = a, *y = b;
	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	if (x->sv != y->sv)
		return x->sv < y->sv ? -1 : 1;
	return 0;
}

static struct ref_key disk_key(const struct btrfs_disk_key *k)
{
	return (struct ref_key){ LE64(k->objectid), k->type, LE64(k->offset) };
}

/* Every block below bytenr and every data extent its leaves point to, for
 * subvolume sv; in nodes at drop_level, children before drop (the cleaner's
 * drop_progress) are gone already and skipped, as btrfs check skips them. */
static void qwalk(ref_fs *fs, uint64_t bytenr, uint64_t gen, int level, int drop_level,
		  const struct ref_key *drop, uint64_t sv, struct qextv *v)
{
	struct ref_block *b;
	int r = ref_read_block(fs, bytenr, gen, level, 0, &b);
	cr_assert_eq(r, 0, "%s: subvolume %llu: block %llu: %s", qg_where, (unsigned long long)sv,
		     (unsigned long long)bytenr, ref_error(fs));
	const uint8_t *d = ref_block_data(b);
	const struct btrfs_header_disk *h = (const void *)d;
	uint32_t n = LE32(h->nritems);
	qx_add(v, bytenr, LE32(ref_super(fs)->nodesize), sv);
	if (h->level == 0) {
		const struct btrfs_item_disk *it = (const void *)(d + sizeof(*h));
		for (uint32_t i = 0; i < n; i++) {
			if (it[i].key.type != BTRFS_EXTENT_DATA_KEY)
				continue;
			const uint8_t *p = d + sizeof(*h) + LE32(it[i].offset);
			uint32_t size = LE32(it[i].size);
			if (size < sizeof(struct btrfs_file_extent_item) ||
			    p[20] == BTRFS_FILE_EXTENT_INLINE)
				continue;
			uint64_t disk_bytenr = le64(p + 21), disk_num = le64(p + 29);
			if (disk_bytenr)
				qx_add(v, disk_bytenr, disk_num, sv);
		}
	} else {
		const struct btrfs_key_ptr_disk *kp = (const void *)(d + sizeof(*h));
		for (uint32_t i = 0; i < n; i++) {
			struct ref_key k = disk_key(&kp[i].key);
			if (h->level == drop_level && ref_key_cmp(&k, drop) < 0)
				continue;
			qwalk(fs, LE64(kp[i].blockptr), LE64(kp[i].generation), h->level - 1,
			      drop_level, drop, sv, v);
		}
	}
	ref_block_put(fs, b);
}

/* The subvolumes below group id, into set (a plain array, *n of them). */
static void below(const struct ref_qgroup_rel *rel, size_t nrel, uint64_t id, uint64_t *set,
		  size_t *n)
{
	for (size_t i = 0; i < nrel; i++) {
		if (rel[i].parent != id)
			continue;
		if (btrfs_qgroup_level(rel[i].child)) {
			below(rel, nrel, rel[i].child, set, n);
			continue;
		}
		size_t k = 0;
		while (k < *n && set[k] != rel[i].child)
			k++;
		cr_assert_lt(k, 1024);
		if (k == *n)
			set[(*n)++] = rel[i].child;
	}
}

static bool in_set(const uint64_t *set, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == id)
			return true;
	return false;
}

/* out (*n subvolumes, counted from v, sorted) with every group above level 0
 * appended: an extent any subvolume below the group reaches is referenced,
 * one that only they reach is exclusive. */
static struct ref_qgroup *qcount_above(ref_fs *fs, const struct qextv *v, struct ref_qgroup *out,
				       size_t *n)
{
	struct ref_qgroup *l;
	struct ref_qgroup_rel *rel;
	size_t nl, nrel;
	if (ref_qgroup_list(fs, &l, &nl))
		return out; /* (quotas off) */
	WU_OK(fs, ref_qgroup_relations(fs, &rel, &nrel));
	static uint64_t set[1024];
	for (size_t g = 0; g < nl; g++) {
		if (!btrfs_qgroup_level(l[g].id))
			continue;
		size_t nset = 0;
		below(rel, nrel, l[g].id, set, &nset);
		out = realloc(out, (*n + 1) * sizeof(*out));
		cr_assert(out);
		struct ref_qgroup *q = &out[(*n)++];
		memset(q, 0, sizeof(*q));
		q->id = l[g].id;
		for (size_t i = 0; i < v->n;) {
			size_t j = i, users = 0, in = 0;
			for (; j < v->n && v->e[j].bytenr == v->e[i].bytenr; j++)
				if (j == i || v->e[j].sv != v->e[j - 1].sv) {
					users++;
					in += in_set(set, nset, v->e[j].sv);
				}
			q->rfer += in ? v->e[i].size : 0;
			q->excl += in && in == users ? v->e[i].size : 0;
			i = j;
		}
	}
	free(l);
	free(rel);
	return out;
}

/* rfer and excl of every subvolume tree the root tree holds (the top level,
 * and deleted ones not yet freed whole), ascending, then of every group above
 * level 0 the quota tree holds; *dropping: whether a deleted one is there. */
struct ref_qgroup *qcount(ref_fs *fs, size_t *count, bool *dropping)
{
	struct ref_root rt;
	WU_OK(fs, ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &rt));
	struct qextv v = { 0 };
	uint64_t ids[1024];
	size_t nids = 0;
	if (dropping)
		*dropping = false;
	struct ref_path path;
	struct ref_key start = { 0, 0, 0 };
	int r = ref_search(fs, &rt, &start, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.type == BTRFS_ROOT_ITEM_KEY &&
		    (k.objectid == BTRFS_FS_TREE_OBJECTID ||
		     (k.objectid >= BTRFS_FIRST_FREE_OBJECTID &&
		      k.objectid <= BTRFS_LAST_FREE_OBJECTID))) {
			struct btrfs_root_item ri;
			memset(&ri, 0, sizeof(ri));
			memcpy(&ri, data, size < sizeof(ri) ? size : sizeof(ri));
			struct ref_key drop = disk_key(&ri.drop_progress);
			int drop_level = drop.objectid ? ri.drop_level : -1;
			if (LE32(ri.refs) == 0 && dropping)
				*dropping = true;
			cr_assert_lt(nids, 1024);
			ids[nids++] = k.objectid;
			qwalk(fs, LE64(ri.bytenr), LE64(ri.generation), ri.level, drop_level, &drop,
			      k.objectid, &v);
		}
		r = ref_next(fs, &path);
	}
	cr_assert_geq(r, 0, "%s: the root tree: %s", qg_where, ref_error(fs));
	struct ref_qgroup *out = calloc(nids ? nids : 1, sizeof(*out));
	cr_assert(out);
	for (size_t i = 0; i < nids; i++) /* the root tree holds them ascending */
		out[i].id = ids[i];
	qsort(v.e, v.n, sizeof(*v.e), qx_cmp);
	for (size_t i = 0; i < v.n;) {
		size_t j = i, users = 0;
		for (; j < v.n && v.e[j].bytenr == v.e[i].bytenr; j++)
			if (j == i || v.e[j].sv != v.e[j - 1].sv)
				users++;
		for (size_t k = i; k < j; k++) {
			if (k > i && v.e[k].sv == v.e[k - 1].sv)
				continue;
			size_t s = 0;
			while (out[s].id != v.e[k].sv)
				s++;
			out[s].rfer += v.e[k].size;
			if (users == 1)
				out[s].excl += v.e[k].size;
		}
		i = j;
	}
	size_t n = nids;
	out = qcount_above(fs, &v, out, &n);
	free(v.e);
	*count = n;
	return out;
}


const struct ref_qgroup *qfind(const struct ref_qgroup *q, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (q[i].id == id)
			return &q[i];
	return NULL;
}
