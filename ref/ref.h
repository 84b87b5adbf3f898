/*
 * ref.h - btrsim's reference Btrfs: opening a volume read-only, walking its
 * trees, and reading its files.  Devices are seen only through sim/.
 *
 * Every function that can fail returns 0 (or a count) or a negative errno and
 * leaves one line in ref_error().  Corrupt images give EUCLEAN (a structure
 * that breaks the format rules) or EIO (a checksum mismatch with no good
 * copy); they never crash, hang or allocate without bound.
 */
#ifndef BTRSIM_REF_REF_H
#define BTRSIM_REF_REF_H

#include "ref/format.h"
#include "sim/sim.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

typedef struct ref_fs ref_fs;

struct ref_open_opts {
	bool degraded; /* open with devices missing where every chunk still has a copy */
	int super_mirror; /* -1: the newest valid copy; 0..2: only that copy */
	FILE *log; /* where to report repaired reads and fallbacks (NULL: nowhere) */
	/* The kernel's -o usebackuproot: when the root tree the superblock names
	 * is unreadable, try the superblock's backup roots, newest first.  Without
	 * it such a file system does not open (EIO or EUCLEAN), as the kernel
	 * refuses to mount it: a backup root is an older state, never shown
	 * unasked. */
	bool usebackuproot;
	/* Disks with no btrfs superblock at all are spares (the target of a
	 * device replace), left out of the file system instead of failing the
	 * open. */
	bool spares;
	/* Leaves are judged item by item as the kernel's tree-checker judges
	 * them (tree_check.c): a leaf with an item it rejects does not read
	 * (EUCLEAN).  no_item_checks reads such leaves anyway, for a checker
	 * that reports each rejected item (ref_check does, whatever this says,
	 * as btrfs check goes on past them). */
	bool no_item_checks;
	/* Opened for a writable mount (ref_mount sets it): leaves are judged as
	 * the kernel judges them on one, refusing inode flags of the ro-compat
	 * half (the high 32 bits) it does not know, which a read-only open
	 * reads. */
	bool writable;
	/*
	 * A log tree the superblock names (fsyncs since the last commit, power
	 * lost before the next) is replayed by the open, as the kernel's mount
	 * does, and committed: the file system then shows what fsync promised.
	 * nologreplay (the kernel's -o nologreplay) leaves the log as it is and
	 * shows the last commit; such a file system cannot be written.
	 * Replaying needs writable disks: the kernel refuses with EIO ("log
	 * replay required on RO media"), and so does ref unless
	 * replay_in_memory turns read-only image disks into overlays
	 * (sim_disk_overlay) so that the replay lands in memory and the images
	 * stay as they were (btrsim's reading commands).
	 */
	bool nologreplay;
	bool replay_in_memory;
	/* The time a replay stamps where the kernel's stamps "now" (the change
	 * time of an inode whose name the replay removes), in nanoseconds since
	 * the epoch; 0: ref_mount's clock, or 2025-01-01 without one. */
	uint64_t clock_ns;
};

/* Opens the file system on the disks of vol (any order; matched by fsid and
 * devid).  The volume stays owned by the caller and must outlive the fs. */
int ref_open(sim_volume *vol, const struct ref_open_opts *opts, ref_fs **out, char *err,
	     size_t errlen);
void ref_close(ref_fs *fs);
const char *ref_error(const ref_fs *fs);

/* What the open did with a log tree: none there, replayed (how many
 * subvolumes' logs, into memory or onto the disks), or left (nologreplay). */
struct ref_log_outcome {
	bool present;  /* the superblock named a log root */
	bool replayed; /* ... and the open replayed it */
	bool in_memory; /* ... over read-only images, which stay unchanged */
	unsigned trees; /* log trees (one per subvolume) replayed */
	uint64_t log_generation; /* the transaction the log belongs to */
};
void ref_log_outcome(const ref_fs *fs, struct ref_log_outcome *out);

/* The name of the deliberately broken build this is ("skip-flush", ...:
 * ref/mutant.h, `make mutants`), or NULL in every real build. */
const char *ref_mutant(void);

/* The superblock in use (raw, little-endian) and which copy it came from. */
const struct btrfs_super_disk *ref_super(const ref_fs *fs);
int ref_super_mirror(const ref_fs *fs);

/* Reads superblock copy `mirror` of one disk without opening anything.
 * Returns 0, -ENOENT when the copy lies past the end of the disk, -EIO on a
 * read error; *valid tells whether magic, bytenr and checksum are right. */
int ref_read_super(sim_volume *vol, unsigned disk, int mirror, struct btrfs_super_disk *sb,
		   bool *valid);

/* ---- Trees ---- */

struct ref_key {
	uint64_t objectid;
	uint8_t type;
	uint64_t offset;
};

int ref_key_cmp(const struct ref_key *a, const struct ref_key *b);

/* A tree block, validated, shared from the block cache. */
struct ref_block;
const uint8_t *ref_block_data(const struct ref_block *b);
void ref_block_put(ref_fs *fs, struct ref_block *b);
/* Reads the tree block at logical bytenr and validates it (checksum, header,
 * item layout, key order) and what its parent expects of it: generation, level,
 * owner.  Every copy is tried until one passes all of these; only that one is
 * cached.  Expectations of 0 / -1 are not checked: gen 0, level -1, owner 0. */
int ref_read_block(ref_fs *fs, uint64_t bytenr, uint64_t gen, int level, uint64_t owner,
		   struct ref_block **out);

/* A position in a tree: the block and slot at each level. */
struct ref_path {
	struct ref_block *blk[BTRFS_MAX_TREE_LEVEL];
	int slot[BTRFS_MAX_TREE_LEVEL];
	int levels;
};

struct ref_root {
	uint64_t id;      /* tree objectid */
	uint64_t bytenr;  /* root block */
	uint64_t gen;
	uint8_t level;
};

/* The root of tree `id` (ROOT, CHUNK, or any tree with a ROOT_ITEM). */
int ref_find_root(ref_fs *fs, uint64_t id, struct ref_root *out);
/* The same as the last commit has it: while writing, the tree before the
 * running transaction changed it (its blocks stay until the commit). */
int ref_find_commit_root(ref_fs *fs, uint64_t id, struct ref_root *out);
/* Positions path at the first item >= key (returns 0), or returns 1 when there
 * is none (path released). */
int ref_search(ref_fs *fs, const struct ref_root *root, const struct ref_key *key,
	       struct ref_path *path);
/* Positions path at the last item <= key (0), or returns 1 when there is none. */
int ref_search_le(ref_fs *fs, const struct ref_root *root, const struct ref_key *key,
		  struct ref_path *path);
/* The first item (objectid, type, any offset): 0 with the path holding it and
 * its key, data and size; -ENOENT (path released, no message) when there is
 * none; or another -errno. */
int ref_find_first(ref_fs *fs, const struct ref_root *root, uint64_t objectid, uint8_t type,
		   struct ref_path *path, struct ref_key *key, const uint8_t **data, uint32_t *size);
/* Moves to the next item: 0, 1 at the end (path released), or -errno. */
int ref_next(ref_fs *fs, struct ref_path *path);
/* Moves to the previous item: 0, 1 at the start (path released), or -errno. */
int ref_prev(ref_fs *fs, struct ref_path *path);
void ref_path_release(ref_fs *fs, struct ref_path *path);
/* The item under the path. */
void ref_path_item(const struct ref_path *path, struct ref_key *key, const uint8_t **data,
		   uint32_t *size);

/* ---- Files ---- */

/* An inode: its subvolume (tree id) and number. */
struct ref_ino {
	uint64_t subvol;
	uint64_t ino;
};

struct ref_stat {
	uint64_t size, nbytes, rdev, flags, generation, transid, sequence;
	uint32_t nlink, uid, gid, mode;
	struct timespec atime, mtime, ctime, otime;
};

/* The root directory of a subvolume (BTRFS_FS_TREE_OBJECTID: the top level). */
int ref_subvol_root(ref_fs *fs, uint64_t subvol, struct ref_ino *out);
struct ref_subvol_info {
	uint64_t id, flags, generation, ctransid, otransid;
	uint64_t parent, dirid;   /* where it is linked (ROOT_BACKREF); 0 for the top level */
	uint64_t last_snapshot;
	uint32_t refs;            /* 0: deleted, waiting for the cleaner */
	struct timespec otime, ctime;
	uint8_t uuid[BTRFS_UUID_SIZE], parent_uuid[BTRFS_UUID_SIZE], received_uuid[BTRFS_UUID_SIZE];
	uint64_t stransid, rtransid; /* a received subvolume's (ref_subvol_set_received) */
	struct timespec stime, rtime;
};
/* A subvolume's ROOT_ITEM fields (uuids zero for a legacy root item). */
int ref_subvol_info(ref_fs *fs, uint64_t subvol, struct ref_subvol_info *out);
/* A subvolume's path from the top level ("" for the top level itself), as
 * `btrfs subvolume list` prints it. */
int ref_subvol_path(ref_fs *fs, uint64_t subvol, char *buf, size_t len);
/* An inode's path from the top level ("/", "/sv/a/b"): its first name (an
 * INODE_REF's, else an INODE_EXTREF's) and its directories' up to its
 * subvolume's root, after the subvolume's path.  -ENOENT when it has no name
 * (unlinked while open), -ENAMETOOLONG past len. */
int ref_ino_path(ref_fs *fs, const struct ref_ino *ino, char *buf, size_t len);
/* The ids of every linked subvolume but the top level, ascending; free *ids. */
int ref_subvol_ids(ref_fs *fs, uint64_t **ids, size_t *n);
/* The lowest-numbered linked subvolume, then the top level, whose
 * received_uuid (received) or own uuid is uuid: 0 and *id, -ENOENT when none (a zero
 * uuid is nobody's), or a read's -errno. */
int ref_subvol_by_uuid(ref_fs *fs, const uint8_t uuid[BTRFS_UUID_SIZE], bool received,
		       uint64_t *id);
/* The default subvolume (the root tree's "default" entry). */
int ref_subvol_default(ref_fs *fs, uint64_t *id);

/* One name in a directory.  A subvolume entry leads to that subvolume's root.
 * type (may be NULL) gets the entry's BTRFS_FT_* type. */
int ref_lookup(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       struct ref_ino *out, uint8_t *type);
/* A path of '/'-separated names from `start` ('.' and empty names skipped, '..'
 * goes up); symlinks are not followed. */
int ref_resolve(ref_fs *fs, const struct ref_ino *start, const char *path, struct ref_ino *out);
int ref_stat(ref_fs *fs, const struct ref_ino *ino, struct ref_stat *st);
/* The FS_*_FL flags (<linux/fs.h>, lsattr's) that btrfs inode flags (a
 * ref_stat's flags) show as, as the kernel's btrfs_inode_flags_to_fsflags. */
uint32_t ref_inode_fsflags(uint64_t inode_flags);
/* The same for ino as an entry of directory dir (ref_lookup's, a readdir's):
 * a snapshot's stand-in for a subvolume (inode 2) shows dir's owner, as the
 * kernel's new_simple_dir makes it at lookup (its times stay 0 here; Linux
 * gives the time of the lookup). */
int ref_stat_in(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *ino,
		struct ref_stat *st);

struct ref_dirent {
	const char *name; /* not NUL-terminated */
	size_t len;
	struct ref_ino ino;
	uint8_t type;   /* BTRFS_FT_* */
	uint64_t index; /* DIR_INDEX order */
};
/* Calls fn for each entry in DIR_INDEX order; a non-zero return stops and is returned. */
typedef int (*ref_dirent_fn)(void *ctx, const struct ref_dirent *de);
int ref_readdir(ref_fs *fs, const struct ref_ino *dir, ref_dirent_fn fn, void *ctx);
/* A directory's entries read whole (DIR_INDEX order), names copied and
 * NUL-terminated.  Returns 0, -ENOMEM, or ref_readdir's failure; after a
 * failure *out holds the entries read before it.  Free with ref_dentries_free. */
struct ref_dentry {
	char *name;
	size_t len;
	struct ref_ino ino;
	uint8_t type; /* BTRFS_FT_* */
};
struct ref_dentries {
	struct ref_dentry *e;
	size_t n, cap;
};
int ref_dentries_read(ref_fs *fs, const struct ref_ino *dir, struct ref_dentries *out);
void ref_dentries_free(struct ref_dentries *d);

/* Reads file data: 0..len bytes (fewer at end of file), data checksums
 * verified, bad copies replaced by good ones, -EIO when no copy is good. */
ssize_t ref_pread(ref_fs *fs, const struct ref_ino *ino, void *buf, size_t len, uint64_t off);
/* Where the data of a regular file at or after off is, as lseek's SEEK_DATA
 * and SEEK_HOLE tell: [*start, *end), the first run of extents that may hold
 * non-zero bytes (inline, regular, compressed), clipped to the file's size;
 * *start = *end = the size when none is left.  Holes, explicit or implied,
 * and preallocated extents read as zeros and are skipped, so that a reader
 * costs what the extents cost, not the size.  The extent items passed are
 * checked as ref_pread checks them (EUCLEAN); -EISDIR for a directory. */
int ref_next_data(ref_fs *fs, const struct ref_ino *ino, uint64_t off, uint64_t *start,
		  uint64_t *end);
/* A symlink's target, NUL-terminated; returns its length. */
ssize_t ref_readlink(ref_fs *fs, const struct ref_ino *ino, char *buf, size_t len);
typedef int (*ref_xattr_fn)(void *ctx, const char *name, size_t nlen, const uint8_t *value,
			    size_t vlen);
int ref_listxattr(ref_fs *fs, const struct ref_ino *ino, ref_xattr_fn fn, void *ctx);
/* Counters of the reads so far: copies repaired from a good mirror, checksum
 * errors met. */
void ref_read_stats(const ref_fs *fs, uint64_t *repaired, uint64_t *csum_errors);
/* Sectors of bad copies written over with the good bytes so far (read
 * repair: only on a file system mounted for writing, as the kernel repairs). */
uint64_t ref_read_rewritten(const ref_fs *fs);

/* ---- Profiles (chunk.c) ---- */

/* A block group type's profile as btrfs-progs prints it: "single", "DUP",
 * "RAID0", ..., "RAID6". */
const char *ref_profile_name(uint64_t type);
/* The same as the kernel's messages and btrfs-progs' options spell it
 * ("raid1c3", "dup", "single"), into buf. */
const char *ref_profile_lower(uint64_t type, char buf[16]);
/* The profile bit (BTRFS_BLOCK_GROUP_*, 0 for single) named by `name`, in
 * any case ("raid5", "RAID5", "single"): 0, or -EINVAL for another name. */
int ref_profile_parse(const char *name, uint64_t *bit);

/* ---- Device stats (devstats.c) ---- */

/* A present device's error counters, indexed by BTRFS_DEV_STAT_WRITE_ERRS,
 * _READ_ERRS, _FLUSH_ERRS, _CORRUPTION_ERRS, _GENERATION_ERRS
 * (<linux/btrfs.h>): those of the dev tree at open plus what this open has
 * met since (`btrfs device stats`). */
struct ref_dev_stats {
	uint64_t devid;
	int disk;
	uint64_t values[BTRFS_DEV_STAT_VALUES_MAX];
};
int ref_dev_stats(ref_fs *fs, struct ref_dev_stats *out, size_t max, size_t *n);

/* ---- Scrub (scrub.c) ---- */

/* What a scrub found on one device, with btrfs scrub's counters (`btrfs scrub
 * status -R`); errors count sectors.  parity_errors is ref's own: sectors of
 * a RAID5/6 P or Q on this device that disagreed with their row's data (the
 * kernel rewrites them without counting). */
struct ref_scrub_dev {
	uint64_t devid;
	int disk;     /* sim disk index, -1 when missing */
	bool missing; /* nothing read from it */
	uint64_t data_extents_scrubbed, tree_extents_scrubbed;
	uint64_t data_bytes_scrubbed, tree_bytes_scrubbed;
	uint64_t read_errors, csum_errors, verify_errors, no_csum, super_errors, parity_errors;
	uint64_t corrected_errors, uncorrectable_errors, unverified_errors;
	uint64_t last_physical;
};

/* Reads every copy of every allocated tree block and data sector (for
 * RAID5/6 each data column, then each row's parity against its data) and of
 * every superblock; a bad copy (read error, checksum, a tree block's header
 * or generation) is rewritten from a good one unless `readonly` or the file
 * system is not mounted for writing (then nothing is written; errors are
 * counted all the same).  devs gets one entry per device of the volume
 * (*ndevs of them, at most SIM_MAX_DISKS).  A mounted file system's running
 * transaction is committed first.  0 or -errno. */
int ref_scrub(ref_fs *fs, bool readonly, struct ref_scrub_dev *devs, size_t *ndevs);

/* ---- Quota groups (qgroup.c) ---- */

/* One quota group: at level 0 a subvolume's referenced and exclusive bytes
 * (data extents and tree blocks, whole extents: an extent partly referenced
 * counts whole), above it those of the subvolumes below the group (an extent
 * any of them reaches is referenced; one only they reach is exclusive); and
 * its limits.  id is the qgroupid (level << 48 | subvolume, or any number
 * above level 0). */
struct ref_qgroup {
	uint64_t id;
	uint64_t generation;    /* the transaction that last changed its numbers */
	uint64_t rfer, excl;    /* rfer_cmpr and excl_cmpr are kept equal, as the kernel's */
	uint64_t limit_flags;   /* BTRFS_QGROUP_LIMIT_MAX_RFER / _MAX_EXCL */
	uint64_t max_rfer, max_excl;
};
/* Whether quota groups are enabled (the quota tree exists) and its status
 * item's flags (BTRFS_QGROUP_STATUS_FLAG_*). */
int ref_qgroup_status(ref_fs *fs, bool *enabled, uint64_t *flags);
/* The quota groups the quota tree holds (its INFO and LIMIT items), ascending
 * id; free *out.  -ENOTCONN when quotas are not enabled (the kernel's errno). */
int ref_qgroup_list(ref_fs *fs, struct ref_qgroup **out, size_t *n);
/* A relation: group `child` is a member of group `parent`, of a higher level. */
struct ref_qgroup_rel {
	uint64_t child, parent;
};
/* The relations the quota tree holds (its (child, QGROUP_RELATION, parent)
 * items, as the kernel reads them), ascending; those naming a group the tree
 * does not hold are left out, as the kernel leaves them ("orphan qgroup
 * relation"); free *out.  -ENOTCONN when quotas are not enabled. */
int ref_qgroup_relations(ref_fs *fs, struct ref_qgroup_rel **out, size_t *n);
/* The numbers recounted from scratch, as a rescan computes them: every
 * subvolume tree walked (a deleted one as far as the cleaner left it), each
 * extent counted once per subvolume that reaches it.  One entry per
 * subvolume tree, then one per group above level 0 the quota tree holds
 * (counted from the subvolumes below it), ascending; limits and generation
 * left 0; free *out.  (A subvolume deleted before quotas were enabled is
 * counted but has no group: enabling makes groups for the linked
 * subvolumes, as the kernel.) */
int ref_qgroup_recount(ref_fs *fs, struct ref_qgroup **out, size_t *n);

/* ---- Checking ---- */

struct ref_check_opts {
	FILE *out;    /* the report: one line per error, and a summary */
	bool verbose; /* also say what each pass looked at */
};
/* Checks the whole file system read-only, as btrfs check does.  Returns the
 * number of errors found (0: clean), or a negative errno when the check could
 * not run. */
long ref_check(ref_fs *fs, const struct ref_check_opts *opts);

/* ---- Logical reads ---- */

/* Reads len bytes at a logical address (no checksum checks: the caller
 * verifies), from copy `mirror` of each stripe (0 = first). */
int ref_read_logical(ref_fs *fs, uint64_t logical, void *buf, size_t len, int mirror);
/* Where the bytes at `logical` live: up to max copies (sim disk, physical
 * offset; disk -1 for a missing device), and how many bytes from there stay
 * contiguous (*run).  Returns the number of copies, or -errno when unmapped. */
struct ref_phys {
	int disk;
	uint64_t physical;
};
int ref_map(ref_fs *fs, uint64_t logical, struct ref_phys *out, int max, uint64_t *run);
/* How many copies the chunk holding `logical` has (0 when unmapped). */
int ref_num_copies(ref_fs *fs, uint64_t logical);

/* statfs(2) as Linux's btrfs_statfs counts it (ref/read/statfs.c): blocks
 * of bsize bytes (the sector) in the data profile's copies. */
struct ref_statfs {
	uint64_t bsize, blocks, bfree, bavail;
	uint32_t namelen;
};
int ref_statfs(ref_fs *fs, struct ref_statfs *out);

#endif
