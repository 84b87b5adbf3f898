/*
 * log_replay.c - replaying the fsync log at open, as the kernel's mount does
 * (btrfs_recover_log_trees): the superblock's log_root names the log root
 * tree, whose ROOT_ITEMs (TREE_LOG, ROOT_ITEM, subvolume id) name one log
 * tree per subvolume that fsync touched since the last commit.  Each log tree
 * is replayed into its subvolume in the kernel's stages (log_replay_items.c):
 * inodes first, then directory indexes, then everything else; link counts of
 * the inodes whose names changed are recounted at the end; then one commit
 * makes it durable and drops the log (log_root 0).
 *
 * Nothing the log refers to is in the extent or free-space tree: its tree
 * blocks and the data extents fsync wrote were allocated in a transaction
 * that never committed.  So before anything is allocated they are taken out
 * of the free space (the kernel pins them): the replay must not write over
 * the log it is reading, nor give a logged extent to something else before
 * its file extent item takes it.
 */
#include "ref/log/log_replay.h"

#include <errno.h>
#include <stdlib.h>

/* Takes [start, start+len) out of the free space of the block groups it lies in. */
static int exclude(ref_fs *fs, uint64_t start, uint64_t len)
{
	while (len) {
		struct rw_bg *bg = rw_bg_find(fs, start);
		if (!bg)
			return ref_fail(fs, EUCLEAN, "log tree: bytes at %llu lie in no block group",
					(unsigned long long)start);
		uint64_t n = bg->start + bg->len - start;
		if (n > len)
			n = len;
		int r = rset_remove(&bg->free, start, n);
		if (r)
			return r == -ENOMEM ? ref_fail(fs, ENOMEM, "out of memory") : r;
		start += n;
		len -= n;
	}
	return 0;
}

/* The data extent a logged file extent item refers to, excluded too. */
static int exclude_file_extent(ref_fs *fs, const uint8_t *d, uint32_t size)
{
	if (size < sizeof(struct btrfs_file_extent_item))
		return 0; /* inline: no extent; the item is validated when replayed */
	const struct btrfs_file_extent_item *fe = (const void *)d;
	if (fe->type == BTRFS_FILE_EXTENT_INLINE || !LE64(fe->disk_bytenr))
		return 0;
	return exclude(fs, LE64(fe->disk_bytenr), LE64(fe->disk_num_bytes));
}

/* Every block of the tree under bytenr, and every data extent its leaves name. */
static int exclude_tree(ref_fs *fs, uint64_t bytenr, uint64_t gen, int level,
			const struct ref_key *first)
{
	struct ref_block *b;
	int r = first ? ref_read_child(fs, bytenr, gen, level, first, &b)
		      : ref_read_block(fs, bytenr, gen, level, BTRFS_TREE_LOG_OBJECTID, &b);
	if (r)
		return r;
	const uint8_t *d = ref_block_data(b);
	uint32_t n = blk_nritems(d);
	if ((r = exclude(fs, bytenr, fs->nodesize)))
		goto out;
	for (uint32_t i = 0; i < n && !r; i++) {
		struct ref_key k;
		blk_key(d, (int)i, &k);
		if (level == 0) {
			if (k.type == BTRFS_EXTENT_DATA_KEY)
				r = exclude_file_extent(fs, leaf_data((uint8_t *)d, (int)i),
							leaf_item_size(d, (int)i));
			continue;
		}
		uint64_t cgen, child = node_ptr(d, (int)i, &cgen);
		r = exclude_tree(fs, child, cgen, level - 1, &k);
	}
out:
	ref_block_put(fs, b);
	return r;
}

/* The log trees the log root tree names, in key order (subvolume id). */
static int list_logs(ref_fs *fs, const struct ref_root *log_root, struct ref_root **out,
		     size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	struct ref_path p;
	struct ref_key k = { 0, 0, 0 };
	int r = ref_search(fs, log_root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != BTRFS_TREE_LOG_OBJECTID || k.type != BTRFS_ROOT_ITEM_KEY) {
			r = ref_fail(fs, EUCLEAN, "log root tree: unexpected item (%lld %u %llu)",
				     (long long)k.objectid, k.type, (unsigned long long)k.offset);
			break;
		}
		if (size < btrfs_legacy_root_item_size()) {
			r = ref_fail(fs, EUCLEAN, "log root tree: root item of subvolume %llu too small",
				     (unsigned long long)k.offset);
			break;
		}
		const struct btrfs_root_item *ri = (const void *)d;
		if (ri->level >= BTRFS_MAX_TREE_LEVEL) {
			r = ref_fail(fs, EUCLEAN, "log tree of subvolume %llu: root level %u",
				     (unsigned long long)k.offset, ri->level);
			break;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			struct ref_root *np = realloc(*out, cap * sizeof(*np));
			if (!np) {
				r = ref_fail(fs, ENOMEM, "out of memory");
				break;
			}
			*out = np;
		}
		/* (id: the subvolume the log belongs to) */
		(*out)[(*n)++] = (struct ref_root){ k.offset, LE64(ri->bytenr), LE64(ri->generation),
						   ri->level };
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	if (r < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return r;
	}
	return 0;
}

/* Replay writes: the kernel refuses a log on read-only media (EIO); with
 * replay_in_memory, read-only images take the replay in memory instead. */
static int media_writable(ref_fs *fs)
{
	unsigned n = sim_volume_ndisks(fs->vol);
	for (unsigned d = 0; d < n; d++) {
		if (!sim_disk_is_read_only(fs->vol, d))
			continue;
		if (!fs->opts.replay_in_memory)
			return ref_fail(fs, EIO,
					"log replay required on RO media: the images are read-only (open them writable, or skip the log with nologreplay)");
		if (sim_disk_overlay(fs->vol, d))
			return ref_fail(fs, EIO, "%s", sim_volume_error(fs->vol));
		fs->log.in_memory = true;
	}
	return 0;
}

int log_replay(ref_fs *fs)
{
	int r = media_writable(fs);
	if (r || (r = rw_init(fs)))
		return r;
	fs->rw->time_ns = fs->opts.clock_ns ? fs->opts.clock_ns : REF_DEFAULT_CLOCK_NS;
	struct ref_root log_root = { BTRFS_TREE_LOG_OBJECTID, LE64(fs->sb.log_root),
				     fs->generation + 1, fs->sb.log_root_level };
	struct ref_root *logs = NULL;
	size_t n = 0;
	if ((r = exclude_tree(fs, log_root.bytenr, log_root.gen, log_root.level, NULL)) ||
	    (r = list_logs(fs, &log_root, &logs, &n)))
		goto out;
	for (size_t i = 0; i < n && !r; i++)
		r = exclude_tree(fs, logs[i].bytenr, logs[i].gen, logs[i].level, NULL);
	for (size_t i = 0; i < n && !r; i++) {
		struct ref_root lg = { BTRFS_TREE_LOG_OBJECTID, logs[i].bytenr, logs[i].gen,
				       logs[i].level };
		r = log_replay_tree(fs, logs[i].id, &lg);
		if (r > 0) /* its subvolume is gone: the kernel skips the log */
			r = 0;
		else if (!r)
			fs->log.trees++;
	}
	if (!r) {
		/* The commit that makes the replay durable names no log. */
		fs->sb.log_root = 0;
		fs->sb.log_root_level = 0;
		fs->rw->in_txn = true;
		r = rw_commit(fs);
	}
	if (!r)
		fs->log.replayed = true;
out:
	free(logs);
	if (r && !strstr(fs->err, "log"))
		ref_fail(fs, -r, "log replay: %s", fs->err);
	rw_free(fs);
	fs->nroots = 0; /* no root found before the replay may be shown after it */
	fs->roots_next = 0;
	return r;
}
