/*
 * open.c - opening a file system on a sim volume: the superblock to trust,
 * which disk is which device, the chunk map, and the root tree (falling back
 * to the backup roots when the newest one is unreadable and the caller asked
 * for it with usebackuproot, as the kernel does).
 */
#include "ref/rw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int ref_fail(ref_fs *fs, int errnum, const char *fmt, ...)
{
	char buf[sizeof(fs->err)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap); /* fmt may print fs->err itself */
	va_end(ap);
	memcpy(fs->err, buf, sizeof(buf));
	return -errnum;
}

void ref_log(ref_fs *fs, const char *fmt, ...)
{
	if (!fs->opts.log)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(fs->opts.log, fmt, ap);
	va_end(ap);
	fputc('\n', fs->opts.log);
}

void ref_log_outcome(const ref_fs *fs, struct ref_log_outcome *out)
{
	*out = fs->log;
}

const char *ref_error(const ref_fs *fs)
{
	return fs->err;
}

const struct btrfs_super_disk *ref_super(const ref_fs *fs)
{
	return &fs->sb;
}

int ref_super_mirror(const ref_fs *fs)
{
	return fs->sb_mirror;
}

static void fsid_str(const uint8_t *u, char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

/* The features this reader understands. */
#define INCOMPAT_KNOWN                                                                     \
	(BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF | BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL |    \
	 BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS | BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO |       \
	 BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD | BTRFS_FEATURE_INCOMPAT_BIG_METADATA |      \
	 BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF | BTRFS_FEATURE_INCOMPAT_RAID56 |            \
	 BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA | BTRFS_FEATURE_INCOMPAT_NO_HOLES |        \
	 BTRFS_FEATURE_INCOMPAT_METADATA_UUID | BTRFS_FEATURE_INCOMPAT_RAID1C34)

/* The fsid a superblock's tree blocks carry, which identifies the file
 * system across an fsid change: metadata_uuid with that feature (btrfstune
 * -m / -M changes fsid and keeps it), else the fsid. */
static const uint8_t *meta_fsid(const struct btrfs_super_disk *sb)
{
	return LE64(sb->incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID ? sb->metadata_uuid
									       : sb->fsid;
}

/* Picks the superblock: the newest valid copy over every disk (or only copy
 * `mirror`), and checks that every disk belongs to it.  Disks are matched by
 * the fsid their tree blocks carry, so that a change of metadata_uuid that
 * btrfstune left half done (some disks with the new fsid, others with the old
 * one and CHANGING_FSID_V2) finds every disk; fs->fsid_change collects the
 * CHANGING_FSID flags of every valid copy. */
static int choose_super(ref_fs *fs)
{
	unsigned nd = sim_volume_ndisks(fs->vol);
	uint64_t best_gen = 0;
	bool found = false;
	struct btrfs_super_disk sb;
	for (unsigned d = 0; d < nd; d++) {
		for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
			if (fs->opts.super_mirror >= 0 && m != fs->opts.super_mirror)
				continue;
			bool valid;
			if (ref_read_super(fs->vol, d, m, &sb, &valid) || !valid)
				continue;
			if (found && memcmp(meta_fsid(&sb), meta_fsid(&fs->sb), BTRFS_FSID_BYTES)) {
				char a[37], b[37];
				fsid_str(fs->sb.fsid, a);
				fsid_str(sb.fsid, b);
				return ref_fail(fs, EINVAL,
						"disk %u belongs to file system %s, not %s", d, b, a);
			}
			fs->fsid_change |= LE64(sb.flags) & (BTRFS_SUPER_FLAG_CHANGING_FSID |
							     BTRFS_SUPER_FLAG_CHANGING_FSID_V2);
			if (!found || LE64(sb.generation) > best_gen) {
				fs->sb = sb;
				fs->sb_mirror = m;
				best_gen = LE64(sb.generation);
				found = true;
			}
		}
	}
	if (!found)
		return ref_fail(fs, EINVAL, "no valid btrfs superblock on %s",
				nd == 1 ? "the disk" : "any disk");
	return 0;
}

/* Each disk's devid, from its own newest valid superblock. */
static int match_devices(ref_fs *fs)
{
	unsigned nd = sim_volume_ndisks(fs->vol);
	fs->devs = calloc(nd, sizeof(*fs->devs));
	if (!fs->devs)
		return ref_fail(fs, ENOMEM, "out of memory");
	for (unsigned d = 0; d < nd; d++) {
		struct btrfs_super_disk sb, best;
		bool have = false, readable = false;
		for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
			bool valid;
			int e = ref_read_super(fs->vol, d, m, &sb, &valid);
			readable |= e == 0; /* (past the end: -ENOENT; a dead disk: -EIO) */
			if (e || !valid)
				continue;
			if (!have || LE64(sb.generation) > LE64(best.generation))
				best = sb;
			have = true;
		}
		if (!readable) { /* a dead disk: its device is missing, as the kernel finds it */
			ref_log(fs, "disk %u cannot be read at all: its device is missing", d);
			continue;
		}
		if (!have && fs->opts.spares && d < 64) {
			fs->spare_disks |= UINT64_C(1) << d;
			continue;
		}
		if (!have)
			return ref_fail(fs, EINVAL, "disk %u has no valid btrfs superblock", d);
		if (memcmp(meta_fsid(&best), meta_fsid(&fs->sb), BTRFS_FSID_BYTES))
			return ref_fail(fs, EINVAL, "disk %u belongs to another file system", d);
		uint64_t devid = LE64(best.dev_item.devid);
		for (size_t i = 0; i < fs->ndevs; i++)
			if (fs->devs[i].devid == devid)
				return ref_fail(fs, EINVAL, "disks %d and %u both claim devid %llu",
						fs->devs[i].disk, d, (unsigned long long)devid);
		fs->devs[fs->ndevs].devid = devid;
		fs->devs[fs->ndevs].disk = (int)d;
		memcpy(fs->devs[fs->ndevs].uuid, best.dev_item.uuid, BTRFS_UUID_SIZE);
		fs->ndevs++;
	}
	return 0;
}

/* Every chunk must keep a readable copy of every stripe unless degraded
 * reading can rebuild it; say which devices are missing. */
static int check_missing(ref_fs *fs)
{
	uint64_t missing[64];
	size_t nmissing = 0;
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		unsigned lost = 0;
		for (unsigned s = 0; s < c->num_stripes; s++) {
			if (c->stripes[s].disk >= 0)
				continue;
			lost++;
			bool seen = false;
			for (size_t k = 0; k < nmissing; k++)
				seen |= missing[k] == c->stripes[s].devid;
			if (!seen && nmissing < 64)
				missing[nmissing++] = c->stripes[s].devid;
		}
		if (!lost)
			continue;
		if (lost > chunk_tolerated_failures(c->type))
			return ref_fail(fs, EIO,
					"chunk at logical %llu (%s) has lost %u of %u stripes: data is gone",
					(unsigned long long)c->logical, ref_profile_name(c->type), lost,
					c->num_stripes);
	}
	if (nmissing && !fs->opts.degraded) {
		char list[256] = "";
		size_t len = 0;
		for (size_t k = 0; k < nmissing && len < sizeof(list) - 24; k++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%llu", k ? ", " : "",
						(unsigned long long)missing[k]);
		return ref_fail(fs, ENODEV, "missing device%s with devid %s; open degraded to go on",
				nmissing > 1 ? "s" : "", list);
	}
	for (size_t k = 0; k < nmissing; k++)
		ref_log(fs, "device %llu is missing: reading degraded",
			(unsigned long long)missing[k]);
	return 0;
}

/* The root tree from the superblock; with usebackuproot, when that one does
 * not read, from the newest backup root that does (the kernel's
 * init_tree_roots: without the option a damaged root tree fails the mount). */
static int open_root_tree(ref_fs *fs)
{
	fs->tree_root = (struct ref_root){ BTRFS_ROOT_TREE_OBJECTID, LE64(fs->sb.root),
					   LE64(fs->sb.generation), fs->sb.root_level };
	struct ref_block *b;
	int r = ref_read_block(fs, fs->tree_root.bytenr, fs->tree_root.gen, fs->tree_root.level, 0,
			       &b);
	if (r == 0) {
		ref_block_put(fs, b);
		return 0;
	}
	char first[sizeof(fs->err)];
	memcpy(first, fs->err, sizeof(first));
	if (!fs->opts.usebackuproot)
		return ref_fail(fs, -r,
				"root tree unreadable: %s (usebackuproot would try the backup roots)",
				first);
	/* Backups, newest generation first. */
	bool tried[BTRFS_BACKUP_ROOTS] = { false };
	for (int round = 0; round < BTRFS_BACKUP_ROOTS; round++) {
		int best = -1;
		for (int i = 0; i < BTRFS_BACKUP_ROOTS; i++) {
			const struct btrfs_root_backup_disk *bk = &fs->sb.super_roots[i];
			if (tried[i] || !LE64(bk->tree_root))
				continue;
			if (best < 0 || LE64(bk->tree_root_gen) >
						LE64(fs->sb.super_roots[best].tree_root_gen))
				best = i;
		}
		if (best < 0)
			break;
		tried[best] = true;
		const struct btrfs_root_backup_disk *bk = &fs->sb.super_roots[best];
		struct ref_root root = { BTRFS_ROOT_TREE_OBJECTID, LE64(bk->tree_root),
					 LE64(bk->tree_root_gen), bk->tree_root_level };
		if (ref_read_block(fs, root.bytenr, root.gen, root.level, 0, &b) == 0) {
			ref_block_put(fs, b);
			fs->tree_root = root;
			ref_log(fs, "root tree unreadable (%s); using backup root %d (generation %llu)",
				first, best, (unsigned long long)root.gen);
			return 0;
		}
	}
	return ref_fail(fs, EIO, "root tree unreadable and no backup root reads: %s", first);
}

int ref_open(sim_volume *vol, const struct ref_open_opts *opts, ref_fs **out, char *err,
	     size_t errlen)
{
	*out = NULL;
	ref_fs *fs = calloc(1, sizeof(*fs));
	if (!fs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fs->vol = vol;
	fs->opts = opts ? *opts : (struct ref_open_opts){ .super_mirror = -1 };
	fs->items_unjudged = fs->opts.no_item_checks;
	int r = choose_super(fs);
	const char *why;
	/* btrfstune -U stopped half-way: tree blocks carry either fsid.  The
	 * kernel refuses the superblock, and btrfs check stops there too. */
	if (!r && fs->fsid_change & BTRFS_SUPER_FLAG_CHANGING_FSID)
		r = ref_fail(fs, EINVAL, "a change of the file system's UUID is in progress (btrfstune -U did not finish): finish it with btrfstune");
	/* btrfstune -m / -M stopped half-way: every disk is found (by the fsid
	 * its tree blocks carry) and read; writing is refused (rw_init), as the
	 * kernel refuses the mount. */
	if (!r && fs->fsid_change & BTRFS_SUPER_FLAG_CHANGING_FSID_V2)
		ref_log(fs, "note: a change of metadata_uuid is incomplete (btrfstune did not finish); read as it stands, not writable");
	if (!r && (why = ref_super_fields_invalid(&fs->sb)))
		r = ref_fail(fs, EUCLEAN, "superblock (copy %d): %s", fs->sb_mirror, why);
	if (!r) {
		uint64_t unknown = LE64(fs->sb.incompat_flags) & ~(uint64_t)INCOMPAT_KNOWN;
		if (unknown)
			r = ref_fail(fs, EOPNOTSUPP, "unsupported incompat features %#llx",
				     (unsigned long long)unknown);
	}
	if (!r) {
		fs->nodesize = LE32(fs->sb.nodesize);
		fs->sectorsize = LE32(fs->sb.sectorsize);
		fs->csum_type = LE16(fs->sb.csum_type);
		fs->csum_size = ref_csum_size(fs->csum_type);
		fs->generation = LE64(fs->sb.generation);
		bool meta_uuid = LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID;
		memcpy(fs->meta_fsid, meta_uuid ? fs->sb.metadata_uuid : fs->sb.fsid,
		       BTRFS_FSID_BYTES);
		r = match_devices(fs);
	}
	if (!r)
		r = chunk_load_sys_array(fs);
	if (!r) {
		fs->chunk_root = (struct ref_root){ BTRFS_CHUNK_TREE_OBJECTID, LE64(fs->sb.chunk_root),
						    LE64(fs->sb.chunk_root_generation),
						    fs->sb.chunk_root_level };
		r = chunk_load_tree(fs);
	}
	if (!r)
		r = check_missing(fs);
	if (!r)
		r = open_root_tree(fs);
	if (!r)
		devstats_load(fs);
	if (!r && LE64(fs->sb.log_root)) {
		fs->log.present = true;
		fs->log.log_generation = fs->generation + 1;
		if (!fs->opts.nologreplay) /* (left: the caller says so, ref_log_outcome) */
			r = log_replay(fs);
	}
	if (r) {
		snprintf(err, errlen, "%s", fs->err);
		ref_close(fs);
		return r;
	}
	*out = fs;
	return 0;
}

void ref_close(ref_fs *fs)
{
	if (!fs)
		return;
	rw_free(fs);
	cache_free_all(fs);
	chunk_free_all(fs);
	free(fs->devs);
	free(fs);
}

static int root_in(ref_fs *fs, const struct ref_root *tree_root, uint64_t id,
		   struct ref_root *out);

int ref_find_root(ref_fs *fs, uint64_t id, struct ref_root *out)
{
	/* Writing: the trees as the running transaction changed them.  After a
	 * failure (read-only now) readers see the last commit, which is the file
	 * system: the failed transaction's blocks are at addresses that commit
	 * does not reference, so its trees read as they were. */
	bool live = fs->rw && !fs->rw->failed;
	if (live) {
		struct rw_tree *t = rw_tree_find(fs, id);
		if (t) {
			*out = t->root;
			return 0;
		}
	}
	if (id == BTRFS_ROOT_TREE_OBJECTID) {
		*out = fs->tree_root;
		return 0;
	}
	if (id == BTRFS_CHUNK_TREE_OBJECTID) {
		*out = fs->chunk_root;
		return 0;
	}
	return root_in(fs, live ? &rw_tree_find(fs, BTRFS_ROOT_TREE_OBJECTID)->root : &fs->tree_root,
		       id, out);
}

int ref_find_commit_root(ref_fs *fs, uint64_t id, struct ref_root *out)
{
	return root_in(fs, &fs->tree_root, id, out);
}

/* The root of tree id as the root tree tree_root names it. */
static int root_in(ref_fs *fs, const struct ref_root *tree_root, uint64_t id,
		   struct ref_root *out)
{
	struct ref_path path;
	struct ref_key k;
	const uint8_t *data;
	uint32_t size;
	int r = ref_find_first(fs, tree_root, id, BTRFS_ROOT_ITEM_KEY, &path, &k, &data, &size);
	if (r == -ENOENT)
		return ref_fail(fs, ENOENT, "no tree %llu in the root tree", (unsigned long long)id);
	if (r)
		return r;
	if (size < btrfs_legacy_root_item_size()) {
		ref_path_release(fs, &path);
		return ref_fail(fs, EUCLEAN, "root item of tree %llu is %u bytes, too small",
				(unsigned long long)id, size);
	}
	const struct btrfs_root_item *ri = (const void *)data;
	*out = (struct ref_root){ id, LE64(ri->bytenr), LE64(ri->generation), ri->level };
	ref_path_release(fs, &path);
	if (out->level >= BTRFS_MAX_TREE_LEVEL)
		return ref_fail(fs, EUCLEAN, "root item of tree %llu: level %u",
				(unsigned long long)id, out->level);
	return 0;
}
