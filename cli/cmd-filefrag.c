/*
 * cmd-filefrag.c - `btrsim filefrag`: how many extents a file of an image
 * has, as e2fsprogs' filefrag counts them on Btrfs: the extents the kernel's
 * FIEMAP reports (fs/btrfs/fiemap.c: file extent items merged when logically
 * and physically contiguous with the same flags; the physical address a
 * logical one, disk_bytenr + offset, or disk_bytenr for compressed data;
 * holes left out; prealloc unwritten, inline with address 0), then counted
 * with filefrag's rule: an extent right after the previous one on disk, or
 * at the same logical-to-physical distance, continues it.
 */
#include "cli/extents.h"

#include <errno.h>
#include <getopt.h>
#include <linux/fiemap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: btrsim filefrag [options] IMG... PATH...\n"
	"\n"
	"Print how many extents each file PATH (from the top-level subvolume; a\n"
	"symlink is followed) has, as e2fsprogs' filefrag reports them on Btrfs from\n"
	"the kernel's FIEMAP: \"PATH: N extents found\".  A directory or special file\n"
	"of size 0 has 0 extents; a larger one fails as FIEMAP and FIBMAP do there.\n"
	"The operands are the images first (at least one; more while they are host\n"
	"files holding a Btrfs superblock), then the paths.\n"
	"\n"
	"  -v                  also each extent, as filefrag -v: logical and physical\n"
	"                      offsets (physical: the Btrfs logical address) and length\n"
	"                      in blocks of the sector size, where the extent was\n"
	"                      expected when it does not continue the one before, flags\n"
	"      --degraded      open with devices missing\n"
	"      --usebackuproot open from a backup root if the root tree is unreadable\n"
	"      --nologreplay   show the last commit, not what the log tree adds\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0; 1 when a PATH could not be mapped (each on a line of stderr,\n"
	"the others still reported); 2 bad usage.\n";

const struct cli_cmd cli_cmd_filefrag;

#define BTRFS_STATFS_MAGIC 0x9123683eUL /* BTRFS_SUPER_MAGIC, statfs's f_type */
#define EXT4_FIEMAP_EXTENT_HOLE 0x08000000u

/* One FIEMAP extent. */
struct fm_ext {
	uint64_t logical, physical, length;
	uint32_t flags;
};

struct ff {
	ref_fs *fs;
	bool verbose;
	uint32_t sectorsize;
	int logical_width, physical_width; /* filefrag's, growing across files */
	uint64_t last_subvol;              /* filefrag's last_device: a subvolume is one */
	struct ref_root extent_root;
	bool have_extent_root;
	/* The file being mapped. */
	struct ref_ino ino;
	uint64_t last_snapshot;
	uint64_t shared_leaf; /* the leaf whose path was judged last, and how */
	bool shared_leaf_is;
	/* emit_fiemap_extent's cache and the extents it let out. */
	bool cached;
	struct fm_ext cache;
	struct fm_ext *ext;
	size_t n, cap;
	uint64_t last_extent_end; /* end of the last item that is not a hole */
	char err[320];
};

/* ---- Sharing, as btrfs_is_data_extent_shared decides it ---- */

/* Back references of the extent at bytenr (inline and keyed), as
 * find_parent_nodes counts distinct ones: EXTENT_DATA_REF (root, inode,
 * offset) but the data relocation tree's, SHARED_DATA_REF, TREE_BLOCK_REF,
 * SHARED_BLOCK_REF.  Sets *count (stops at 2); 0 or -errno. */
static int extent_refs(struct ff *ff, uint64_t bytenr, int *count)
{
	*count = 0;
	if (!ff->have_extent_root) {
		int r = ref_find_root(ff->fs, BTRFS_EXTENT_TREE_OBJECTID, &ff->extent_root);
		if (r) {
			snprintf(ff->err, sizeof(ff->err), "%s", ref_error(ff->fs));
			return r;
		}
		ff->have_extent_root = true;
	}
	struct ref_path path;
	struct ref_key key = { bytenr, 0, 0 };
	int r = ref_search(ff->fs, &ff->extent_root, &key, &path);
	while (r == 0 && *count < 2) {
		struct ref_key k;
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&path, &k, &d, &size);
		if (k.objectid != bytenr)
			break;
		switch (k.type) {
		case BTRFS_EXTENT_ITEM_KEY:
		case BTRFS_METADATA_ITEM_KEY: {
			uint32_t at = sizeof(struct btrfs_extent_item);
			if (size < at)
				goto bad;
			const struct btrfs_extent_item *ei = (const void *)d;
			if (k.type == BTRFS_EXTENT_ITEM_KEY &&
			    (LE64(ei->flags) & BTRFS_EXTENT_FLAG_TREE_BLOCK))
				at += sizeof(struct btrfs_tree_block_info);
			while (at < size) {
				uint8_t type = d[at];
				uint32_t len;
				switch (type) {
				case BTRFS_TREE_BLOCK_REF_KEY:
				case BTRFS_SHARED_BLOCK_REF_KEY:
				case BTRFS_EXTENT_OWNER_REF_KEY:
					len = 1 + 8;
					break;
				case BTRFS_EXTENT_DATA_REF_KEY:
					len = 1 + sizeof(struct btrfs_extent_data_ref);
					break;
				case BTRFS_SHARED_DATA_REF_KEY:
					len = 1 + 8 + sizeof(struct btrfs_shared_data_ref);
					break;
				default:
					goto bad;
				}
				if (len > size - at)
					goto bad;
				if (type == BTRFS_EXTENT_DATA_REF_KEY) {
					const struct btrfs_extent_data_ref *dr =
						(const void *)(d + at + 1);
					if (LE64(dr->root) != BTRFS_DATA_RELOC_TREE_OBJECTID)
						(*count)++;
				} else if (type != BTRFS_EXTENT_OWNER_REF_KEY) {
					(*count)++;
				}
				at += len;
			}
			break;
		}
		case BTRFS_EXTENT_DATA_REF_KEY: {
			const struct btrfs_extent_data_ref *dr = (const void *)d;
			if (size < sizeof(*dr))
				goto bad;
			if (LE64(dr->root) != BTRFS_DATA_RELOC_TREE_OBJECTID)
				(*count)++;
			break;
		}
		case BTRFS_TREE_BLOCK_REF_KEY:
		case BTRFS_SHARED_BLOCK_REF_KEY:
		case BTRFS_SHARED_DATA_REF_KEY:
			(*count)++;
			break;
		default:
			break;
		}
		r = ref_next(ff->fs, &path);
	}
	ref_path_release(ff->fs, &path);
	if (r < 0) {
		snprintf(ff->err, sizeof(ff->err), "%s", ref_error(ff->fs));
		return r;
	}
	return 0;
bad:
	ref_path_release(ff->fs, &path);
	snprintf(ff->err, sizeof(ff->err), "extent %llu: bad extent item",
		 (unsigned long long)bytenr);
	return -EUCLEAN;
}

/*
 * Whether the data extent of e is shared, as FIEMAP's SHARED flag says: more
 * than one reference to it (another inode, another subvolume, the same file
 * at another offset), or, when it is no newer than the subvolume's last
 * snapshot, a tree block on the way from the subvolume's root down to the
 * item's leaf that more than one tree refers to.  1, 0 or -errno.
 */
static int extent_shared(struct ff *ff, const struct cli_fext *e)
{
	int count, r = extent_refs(ff, e->disk_bytenr, &count);
	if (r)
		return r;
	if (count > 1)
		return 1;
	if (e->generation > ff->last_snapshot)
		return 0;
	const struct ref_path *p = e->path;
	const struct btrfs_header_disk *lh = (const void *)ref_block_data(p->blk[0]);
	uint64_t leaf = le64(&lh->bytenr);
	if (ff->shared_leaf == leaf)
		return ff->shared_leaf_is;
	bool shared = false;
	for (int l = 0; l < p->levels && !shared; l++) {
		const struct btrfs_header_disk *h = (const void *)ref_block_data(p->blk[l]);
		if ((r = extent_refs(ff, le64(&h->bytenr), &count)))
			return r;
		shared = count > 1;
	}
	ff->shared_leaf = leaf;
	ff->shared_leaf_is = shared;
	return shared;
}

/* ---- FIEMAP, as fs/btrfs/fiemap.c fills it ---- */

static int push(struct ff *ff, const struct fm_ext *x)
{
	if (ff->n == ff->cap) {
		size_t cap = ff->cap ? ff->cap * 2 : 64;
		struct fm_ext *e = realloc(ff->ext, cap * sizeof(*e));
		if (!e) {
			snprintf(ff->err, sizeof(ff->err), "out of memory");
			return -ENOMEM;
		}
		ff->ext = e;
		ff->cap = cap;
	}
	ff->ext[ff->n++] = *x;
	return 0;
}

/* emit_fiemap_extent: merged into the cached extent when contiguous on both
 * sides with the same flags, else the cached one goes out. */
static int emit(struct ff *ff, uint64_t offset, uint64_t phys, uint64_t len, uint32_t flags)
{
	if (ff->cached) {
		struct fm_ext *c = &ff->cache;
		uint64_t cache_end = c->logical + c->length;
		if (cache_end > offset) { /* overlapping items: the newer wins */
			if (offset == c->logical)
				goto assign;
			if (offset > c->logical) {
				c->length = offset - c->logical;
			} else {
				uint64_t range_end = offset + len;
				if (range_end <= cache_end)
					return 0;
				if (!(flags & (FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DELALLOC)))
					phys += cache_end - offset;
				offset = cache_end;
				len = range_end - cache_end;
			}
		} else if (cache_end == offset && c->physical + c->length == phys &&
			   c->flags == flags) {
			c->length += len;
			return 0;
		}
		int r = push(ff, c);
		if (r)
			return r;
	}
assign:
	ff->cached = true;
	ff->cache = (struct fm_ext){ offset, phys, len, flags };
	return 0;
}

static int map_item(void *ctx, const struct cli_fext *e)
{
	struct ff *ff = ctx;
	uint64_t end, len;
	uint32_t flags = 0;
	if (e->type == BTRFS_FILE_EXTENT_INLINE) {
		uint64_t ss = ff->sectorsize;
		end = e->file_off + (e->ram_bytes + ss - 1) / ss * ss;
	} else {
		end = e->file_off + e->num_bytes;
	}
	if (end <= e->file_off) /* an empty item maps nothing */
		return 0;
	len = end - e->file_off;
	if (e->compression)
		flags |= FIEMAP_EXTENT_ENCODED;
	int r = 0;
	if (e->type == BTRFS_FILE_EXTENT_INLINE) {
		ff->last_extent_end = end;
		r = emit(ff, e->file_off, 0, len,
			 flags | FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED);
	} else if (e->disk_bytenr) {
		/* Regular or preallocated (unwritten): the address where the
		 * extent's bytes begin; compressed, where the extent does. */
		ff->last_extent_end = end;
		if (e->type == BTRFS_FILE_EXTENT_PREALLOC)
			flags |= FIEMAP_EXTENT_UNWRITTEN;
		int s = extent_shared(ff, e);
		if (s < 0)
			return s;
		if (s)
			flags |= FIEMAP_EXTENT_SHARED;
		r = emit(ff, e->file_off, e->disk_bytenr + (e->compression ? 0 : e->offset), len,
			 flags);
	}
	/* A hole (explicit or not) reports nothing: no delalloc in an image. */
	return r;
}

/* The FIEMAP extents of the regular file ino, into ff->ext[0..n). */
static int fiemap(struct ff *ff, const struct ref_ino *ino)
{
	ff->ino = *ino;
	ff->n = 0;
	ff->cached = false;
	ff->last_extent_end = 0;
	ff->shared_leaf = 0;
	struct ref_subvol_info si;
	if (ref_subvol_info(ff->fs, ino->subvol, &si)) {
		snprintf(ff->err, sizeof(ff->err), "%s", ref_error(ff->fs));
		return -EIO;
	}
	ff->last_snapshot = si.last_snapshot;
	int r = cli_file_extents(ff->fs, ino, map_item, ff, ff->err, sizeof(ff->err));
	if (r)
		return r;
	if (ff->cached) {
		if (ff->cache.logical + ff->cache.length >= ff->last_extent_end)
			ff->cache.flags |= FIEMAP_EXTENT_LAST;
		ff->cached = false;
		return push(ff, &ff->cache);
	}
	return 0;
}

/* ---- filefrag's report ---- */

static int ulong_log10(unsigned long long v)
{
	int l = 0;
	for (v /= 10; v; v /= 10)
		l++;
	return l;
}

static int ulong_log2(unsigned long v)
{
	int l = 0;
	for (v >>= 1; v; v >>= 1)
		l++;
	return l;
}

static void flag(uint32_t *flags, uint32_t mask, char *buf, const char *name)
{
	if (*flags & mask) {
		strcat(buf, name);
		*flags &= ~mask;
	}
}

/* print_extent_info of filefrag -v. */
static void print_extent(const struct ff *ff, const struct fm_ext *x, int n, uint64_t expected,
			 int blk_shift, uint64_t size)
{
	if (x->flags & FIEMAP_EXTENT_DATA_INLINE) /* inline: in bytes */
		blk_shift = 0;
	unsigned long long ext_len = x->length >> blk_shift;
	unsigned long long ext_blks = (x->length - 1) >> blk_shift;
	unsigned long long logical = x->logical >> blk_shift;
	unsigned long long physical =
		x->flags & FIEMAP_EXTENT_UNKNOWN ? 0 : x->physical >> blk_shift;
	char flags[256];
	uint32_t f = x->flags;
	if (expected && !(f & FIEMAP_EXTENT_UNKNOWN) && !(f & EXT4_FIEMAP_EXTENT_HOLE))
		snprintf(flags, sizeof(flags), "%*llu: ", ff->physical_width,
			 (unsigned long long)(expected >> blk_shift));
	else
		snprintf(flags, sizeof(flags), "%.*s  ", ff->physical_width, "                   ");
	flag(&f, FIEMAP_EXTENT_LAST, flags, "last,");
	flag(&f, FIEMAP_EXTENT_UNKNOWN, flags, "unknown_loc,");
	flag(&f, FIEMAP_EXTENT_DELALLOC, flags, "delalloc,");
	flag(&f, FIEMAP_EXTENT_ENCODED, flags, "encoded,");
	flag(&f, FIEMAP_EXTENT_DATA_ENCRYPTED, flags, "encrypted,");
	flag(&f, FIEMAP_EXTENT_NOT_ALIGNED, flags, "not_aligned,");
	flag(&f, FIEMAP_EXTENT_DATA_INLINE, flags, "inline,");
	flag(&f, FIEMAP_EXTENT_DATA_TAIL, flags, "tail_packed,");
	flag(&f, FIEMAP_EXTENT_UNWRITTEN, flags, "unwritten,");
	flag(&f, FIEMAP_EXTENT_MERGED, flags, "merged,");
	flag(&f, FIEMAP_EXTENT_SHARED, flags, "shared,");
	flag(&f, EXT4_FIEMAP_EXTENT_HOLE, flags, "hole,");
	/* filefrag (e2fsprogs 1.47.0) cuts the last character, a comma or the
	 * padding's space, then adds ",eof" at the end of the file. */
	flags[strlen(flags) - 1] = '\0';
	if (x->logical + x->length >= size)
		strcat(flags, ",eof");
	unsigned long long ext_blks_phys = ext_blks;
	if (x->flags & (FIEMAP_EXTENT_UNKNOWN | EXT4_FIEMAP_EXTENT_HOLE))
		ext_len = ext_blks_phys = 0;
	printf("%4d: %*llu..%*llu: %*llu..%*llu: %6llu: %s\n", n, ff->logical_width, logical,
	       ff->logical_width, logical + ext_blks, ff->physical_width, physical,
	       ff->physical_width, physical + ext_blks_phys, ext_len, flags);
}

/* frag_report for one path: 0, or 1 after saying why on stderr. */
static int report(struct ff *ff, const char *path)
{
	const char *detail;
	struct ref_ino ino;
	struct ref_stat st;
	int r = cli_path_walk(ff->fs, path, true, &ino, &st, &detail);
	if (r)
		return cli_path_fail(&cli_cmd_filefrag, path, r, detail);
	uint32_t bs = ff->sectorsize; /* FIGETBSZ: the sector size */
	int blk_shift = ulong_log2(bs);
	if (ff->verbose && (ff->last_subvol != ino.subvol))
		printf("Filesystem type is: %lx\n", BTRFS_STATFS_MAGIC);
	ff->last_subvol = ino.subvol;
	unsigned long long numblocks = (st.size + bs - 1) / bs;
	int w = ulong_log10(numblocks);
	if (w > ff->logical_width)
		ff->logical_width = w;
	if (ff->verbose)
		printf("File size of %s is %llu (%llu block%s of %u bytes)\n", path,
		       (unsigned long long)st.size, numblocks, numblocks == 1 ? "" : "s",
		       1u << blk_shift);
	if (!S_ISREG(st.mode)) {
		/* No FIEMAP but for regular files on Btrfs; FIBMAP then maps
		 * nothing (ENOTTY) unless there are no blocks to map. */
		if (numblocks) {
			fflush(stdout);
			return cli_fail(&cli_cmd_filefrag, "%s: FIBMAP/FIEMAP unsupported", path);
		}
		printf("%s: 0 extents found\n", path);
		return 0;
	}
	if ((r = fiemap(ff, &ino)))
		return cli_path_fail(&cli_cmd_filefrag, path, r, ff->err);
	int tot = 0;
	struct fm_ext last = { 0 };
	for (size_t i = 0; i < ff->n; i++) {
		const struct fm_ext *x = &ff->ext[i];
		if (ff->verbose && i == 0)
			printf(" ext: %*s %*s length: %*s flags:\n", ff->logical_width * 2 + 3,
			       "logical_offset:", ff->physical_width * 2 + 3, "physical_offset:",
			       ff->physical_width + 1, "expected:");
		uint64_t expected_dense = last.physical + last.length;
		uint64_t expected = last.physical + x->logical - last.logical;
		if (x->logical != 0 && x->physical != expected && x->physical != expected_dense) {
			tot++;
		} else {
			expected = 0;
			if (!tot)
				tot = 1;
		}
		if (ff->verbose)
			print_extent(ff, x, (int)i, expected, blk_shift, st.size);
		last = *x;
	}
	if (tot == 1)
		printf("%s: 1 extent found\n", path);
	else
		printf("%s: %d extents found\n", path, tot);
	return 0;
}

static int cmd_filefrag(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "degraded", no_argument, NULL, 'D' },
		{ "usebackuproot", no_argument, NULL, 'U' },
		{ "nologreplay", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	struct ff ff = { .logical_width = 8, .physical_width = 10 };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'v': ff.verbose = true; break;
		case 'D': oo.degraded = true; break;
		case 'U': oo.usebackuproot = true; break;
		case 'N': oo.nologreplay = true; break;
		case 'h': return cli_help(&cli_cmd_filefrag);
		default:
			return cli_usage_error(&cli_cmd_filefrag, "unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_filefrag, "needs at least one image and a path");
	char **ops = argv + optind;
	int nops = argc - optind, nimg = cli_split_operands(ops, nops);
	sim_volume *vol;
	int rc = cli_open_fs(&cli_cmd_filefrag, ops, nimg, &oo, &vol, &ff.fs);
	if (rc)
		return rc;
	const struct btrfs_super_disk *sb = ref_super(ff.fs);
	ff.sectorsize = LE32(sb->sectorsize);
	/* statfs's f_blocks, at most the whole volume in sectors: it widens
	 * the physical columns only past 10^11 of them. */
	int w = ulong_log10(LE64(sb->total_bytes) / ff.sectorsize);
	if (w > ff.physical_width)
		ff.physical_width = w;
	for (int i = nimg; i < nops; i++) {
		if (report(&ff, ops[i]))
			rc = 1;
		/* filefrag's stdout is a stream apart from its stderr */
		fflush(stdout);
	}
	free(ff.ext);
	ref_close(ff.fs);
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_filefrag = {
	.name = "filefrag",
	.summary = "how many extents files of an image have, as filefrag",
	.usage = usage_text,
	.run = cmd_filefrag,
};
