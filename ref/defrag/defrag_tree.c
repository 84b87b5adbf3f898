/*
 * defrag_tree.c - BTRFS_IOC_DEFRAG on a directory: the leaves of its
 * subvolume's tree copied anew where they lie apart, as Linux 6.18's
 * btrfs_defrag_root / btrfs_defrag_leaves / btrfs_realloc_node: under each
 * node of level 1 (with more than one child), a leaf that is not within
 * 32 KiB of the leaf before it or, failing that, the one after it is COWed
 * to a new place, with the path above it.  File data is not touched; the
 * copies are new blocks of this transaction (no commit here, as the
 * kernel's ends its transactions without committing them), which also
 * stops them being shared with snapshots.
 *
 * The kernel asks its allocator for a place near the leaf it moved before
 * and judges each leaf against its neighbours' addresses as they are by
 * then; ref's allocator takes no hint, so every leaf is judged against its
 * neighbours' addresses from before the pass.
 */
#include "ref/defrag/defrag_int.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>

#define CLOSE (UINT64_C(32) * 1024)

struct leaf {
	struct ref_key first;
	uint64_t bytenr, parent;
};

/* close_blocks: b ends less than 32 KiB before other, or starts less than
 * 32 KiB after it. */
static bool close_blocks(uint64_t b, uint64_t other, uint32_t nodesize)
{
	if (b < other && other - (b + nodesize) < CLOSE)
		return true;
	return b > other && b - (other + nodesize) < CLOSE;
}

/* Every leaf of the tree, in key order: its first key, place and parent. */
static int list_leaves(ref_fs *fs, const struct ref_root *root, struct leaf **out, size_t *n)
{
	struct ref_path p;
	struct ref_key k = { 0, 0, 0 };
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	int r = ref_search(fs, root, &k, &p);
	uint64_t last = 0;
	while (r == 0) {
		if (p.blk[0]->bytenr != last) {
			last = p.blk[0]->bytenr;
			if (*n == cap) {
				cap = cap ? 2 * cap : 64;
				struct leaf *v = realloc(*out, cap * sizeof(*v));
				if (!v) {
					ref_path_release(fs, &p);
					return ref_fail(fs, ENOMEM, "out of memory");
				}
				*out = v;
			}
			struct leaf *l = &(*out)[(*n)++];
			blk_key(p.blk[0]->data, 0, &l->first);
			l->bytenr = last;
			l->parent = p.levels > 1 ? p.blk[1]->bytenr : 0;
		}
		r = ref_next(fs, &p);
	}
	return r < 0 ? r : 0;
}

int defrag_tree(ref_fs *fs, uint64_t subvol)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, subvol, &t);
	if (r || t->root.level == 0)
		return r;
	struct leaf *v;
	size_t n;
	if ((r = list_leaves(fs, &t->root, &v, &n)))
		return r;
	bool *move = calloc(n ? n : 1, sizeof(*move));
	if (!move) {
		free(v);
		return ref_fail(fs, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		bool prev = i > 0 && v[i - 1].parent == v[i].parent;
		bool next = i + 1 < n && v[i + 1].parent == v[i].parent;
		if (!prev && !next) /* the only child of its parent */
			continue;
		bool close = prev && close_blocks(v[i].bytenr, v[i - 1].bytenr, fs->nodesize);
		if (!close && next)
			close = close_blocks(v[i].bytenr, v[i + 1].bytenr, fs->nodesize);
		move[i] = !close;
	}
	unsigned moves = 0;
	for (size_t i = 0; i < n; i++)
		moves += move[i];
	/* one operation: each move COWs a path, as an item change does */
	r = moves ? vfs_begin(fs, moves + 4, false) : 0;
	for (size_t i = 0; i < n && !r && moves; i++) {
		if (!move[i])
			continue;
		struct ref_path p;
		if ((r = bt_search(fs, t, &v[i].first, &p, 0, true)) >= 0) {
			ref_path_release(fs, &p);
			r = 0;
		}
	}
	free(move);
	free(v);
	return moves ? vfs_end(fs, r) : r;
}
