/*
 * qgroup.h - quota groups on the write path (ref/ only).
 *
 * A group of level 0 per subvolume, numbered as the subvolume, and groups of
 * higher levels made by the user, whose members are groups of lower levels
 * (qgroup_relation.c).  The numbers follow the kernel's accounting (fs/btrfs/qgroup.c): every extent
 * whose references changed in the transaction is looked at twice at commit,
 * in the last commit's trees and in the new ones, and the set of subvolumes
 * that reach it in each (a walk up its back references, qgroup_roots.c)
 * moves each group's referenced and exclusive bytes.  A snapshot is the
 * exception, as in the kernel: it is counted by inheritance (qgroup_inherit)
 * rather than extent by extent, since every block below the source's root
 * changes hands without a reference changing.
 */
#ifndef BTRSIM_REF_QGROUP_H
#define BTRSIM_REF_QGROUP_H

#include "ref/grow.h"
#include "ref/rw.h"

struct qg_group {
	uint64_t id;
	uint64_t rfer, excl;
	uint64_t limit_flags, max_rfer, max_excl, rsv_rfer, rsv_excl;
	uint64_t reserved;  /* data written in the running transaction, not yet counted */
	bool dirty;         /* its INFO item needs writing */
	bool limit_dirty;   /* its LIMIT item needs writing */
	bool is_new;        /* no items yet */
	bool dropped;       /* its subvolume is gone: removed at the commit */
};

/* The relations between groups: (child, parent) pairs, ascending, each
 * parent of a higher level than its child. */
struct qg_rels {
	struct ref_qgroup_rel *v;
	size_t n, cap;
};

/* An extent whose references changed in the running transaction. */
struct qg_extent {
	uint64_t bytenr, num_bytes;
	bool tree;
	uint8_t level;
};

/* A snapshot made in the running transaction: dst was src's tree as of the
 * last commit (ref_snapshot commits first). */
struct qg_snap {
	uint64_t src, dst;
};

struct qg_state {
	uint64_t flags; /* the status item's */
	struct qg_group *groups; /* sorted by id */
	size_t ngroups, groups_cap;
	struct qg_extent *extents;
	size_t nextents, extents_cap;
	struct u64map extent_idx; /* bytenr -> index + 1 */
	struct qg_snap *snaps;
	size_t nsnaps, snaps_cap;
	bool status_written; /* in the running transaction */
	struct qg_rels rels; /* between groups that exist */
};

/* qgroup.c */
/* The group id of a mounted file system's quota state, or NULL; _add makes
 * it when absent (NULL and ENOMEM reported when it cannot). */
struct qg_group *qg_group_find(struct qg_state *q, uint64_t id);
struct qg_group *qg_group_add(ref_fs *fs, struct qg_state *q, uint64_t id);
/* Loads the quota tree's groups at mount (nothing when quotas are off). */
int qg_load(ref_fs *fs);
void qg_free(ref_fs *fs);
/* Records an extent whose references change (delayed.c, when quotas are on). */
int qg_note_extent(ref_fs *fs, const struct dref *d);
/* Every block and data extent below b is about to change hands without its
 * references changing (the cleaner dropping a shared subtree): each is
 * recorded for accounting. */
int qg_trace_subtree(ref_fs *fs, const struct ref_block *b);
/* The accounting of the noted extents and the quota tree's items, at the end
 * of each commit round; *work set when items were written. */
int qg_settle(ref_fs *fs, bool *work);
/* After a durable commit: reservations are counted now. */
void qg_committed(ref_fs *fs);
/* A new subvolume's group (ref_subvol_create). */
int qg_subvol_created(ref_fs *fs, uint64_t id);
/* A deleted subvolume the cleaner finished: its group goes at the next commit;
 * numbers left in it mark the groups inconsistent (Linux 6.18's
 * btrfs_qgroup_cleanup_dropped_subvolume and btrfs_remove_qgroup). */
void qg_subvol_dropped(ref_fs *fs, uint64_t id);
/* A snapshot's group, inherited from its source's (ref_snapshot, right after
 * the root is copied in a transaction that changed nothing before). */
int qg_snapshot(ref_fs *fs, uint64_t src, uint64_t dst);
/* Data about to be written to subvolume `subvol`: -EDQUOT past a limit. */
int qg_reserve(ref_fs *fs, uint64_t subvol, uint64_t bytes);

/* qgroup_roots.c: which subvolumes reach an extent. */
struct qg_roots {
	uint64_t *ids; /* sorted, distinct */
	size_t n, cap;
};
/* The subvolumes that reach the extent in the last commit's trees (old) or
 * in the running transaction's; *out's storage is reused across calls. */
struct qg_view;
int qg_view_open(ref_fs *fs, bool old, struct qg_view **out);
void qg_view_close(struct qg_view *v);
int qg_view_roots(struct qg_view *v, const struct qg_extent *e, struct qg_roots *out);
void qg_roots_free(struct qg_roots *r);
int qg_roots_add(struct qg_roots *r, uint64_t id);
bool qg_roots_has(const struct qg_roots *r, uint64_t id);

/* qgroup_count.c: the numbers from scratch (a rescan). */
int qg_recount(ref_fs *fs, struct ref_qgroup **out, size_t *n);

/* qgroup_relation.c */
/* The relations of the quota tree `quota` (its (child, QGROUP_RELATION,
 * parent) items, as the kernel reads them; those whose parent is not of a
 * higher level left out). */
int qg_rels_read(ref_fs *fs, const struct ref_root *quota, struct qg_rels *out);
int qg_rels_add(struct qg_rels *r, uint64_t child, uint64_t parent);
bool qg_rels_has(const struct qg_rels *r, uint64_t child, uint64_t parent);
void qg_rels_del(struct qg_rels *r, uint64_t child, uint64_t parent);
void qg_rels_free(struct qg_rels *r);
/* Leaves out the relations naming a group not among groups (the kernel's
 * "orphan qgroup relation", ignored); the order is kept. */
void qg_rels_drop_orphans(struct qg_rels *r, const struct ref_qgroup *groups, size_t ngroups);
/* Adds to *acc every group above id (its parents, theirs, ...); -ENOMEM. */
int qg_rels_up(const struct qg_rels *r, uint64_t id, struct qg_roots *acc);
/* Adds to *acc every group of level 0 below id; -ENOMEM. */
int qg_rels_down(const struct qg_rels *r, uint64_t id, struct qg_roots *acc);

/* Subvolume trees: the top level and the ids a subvolume can have. */
bool qg_is_fstree(uint64_t id);

#endif
