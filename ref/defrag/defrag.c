/*
 * defrag.c - `btrfs filesystem defragment` of a file, as Linux 6.18's
 * btrfs_defrag_file (fs/btrfs/defrag.c) decides it:
 *
 *   - The range [start, start + len), sector-aligned, is walked in clusters
 *     of 256 KiB.  In each, every file extent item is judged on its own
 *     (defrag_collect_targets): holes and preallocated extents are skipped;
 *     with -c or --nocomp every other extent is a target; otherwise an
 *     extent at least extent_thresh long, or already as large as an extent
 *     can be (128 KiB compressed, 128 MiB plain), is skipped; an inline
 *     extent is a target; any other is a target when the next extent is
 *     real (not a hole, inline or preallocated), smaller than both limits and
 *     the extent does not reach the file's end (defrag_check_next_extent),
 *     or when the target before it in the cluster ends where it starts.
 *   - The targets are judged on the extents as they were before any was
 *     rewritten (the kernel only dirties pages; writeback comes after), and
 *     rewritten afterwards as writeback would: contiguous targets become one
 *     range, written anew in extents of up to 128 MiB, or compressed pieces
 *     (with -c: the algorithm given; --nocomp: none; else the mount and the
 *     inode decide) - file_rewrite.  Extents shared with a snapshot are
 *     rewritten like any other: the file stops sharing them.
 *
 * ref has no page cache: a range is rewritten at once, each in an operation
 * of its own, so that ENOSPC or EDQUOT leaves the ranges before it done and
 * nothing half-written.  The directory case is defrag_tree.c.
 */
#include "ref/compress/compress_int.h"
#include "ref/defrag/defrag_int.h"
#include "ref/qgroup/qgroup.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CLUSTER (UINT64_C(256) * 1024)
#define DEFAULT_THRESH (UINT64_C(256) * 1024)
#define MAX_PLAIN (UINT64_C(128) << 20) /* BTRFS_MAX_EXTENT_SIZE */
#define MAX_INLINE 2048u		/* the default max_inline */

/* An extent map as defrag sees one: a file extent item, or the gap before
 * the next one. */
enum em_kind { EM_HOLE, EM_INLINE, EM_REG, EM_PREALLOC };
struct em {
	uint64_t start, len;
	enum em_kind kind;
	bool compressed;
};

static uint64_t em_end(const struct em *e)
{
	return e->start + e->len;
}

/* The item at key k (data d, size) as an extent map. */
static void em_of(const struct ref_key *k, const uint8_t *d, uint32_t size, uint32_t ss,
		  struct em *e)
{
	const struct btrfs_file_extent_item *fe = (const void *)d;
	memset(e, 0, sizeof(*e));
	e->start = k->offset;
	if (size < 21 || fe->type == BTRFS_FILE_EXTENT_INLINE) {
		e->kind = EM_INLINE;
		e->start = 0;
		e->len = ss; /* btrfs_extent_item_to_extent_map */
		return;
	}
	e->len = size >= sizeof(*fe) ? LE64(fe->num_bytes) : 0;
	e->compressed = fe->compression != 0;
	e->kind = fe->type == BTRFS_FILE_EXTENT_PREALLOC ? EM_PREALLOC
		  : size < sizeof(*fe) || !fe->disk_bytenr ? EM_HOLE
							   : EM_REG;
}

/* The extent map at pos (defrag_lookup_extent): 0, 1 past the last item,
 * or -errno. */
static int lookup(ref_fs *fs, const struct ref_root *root, uint64_t ino, uint64_t pos,
		  struct em *e)
{
	struct ref_key k = { ino, BTRFS_EXTENT_DATA_KEY, pos };
	struct ref_path p;
	const uint8_t *d;
	uint32_t size;
	int r = ref_search_le(fs, root, &k, &p);
	if (r < 0)
		return r;
	if (r == 0) {
		ref_path_item(&p, &k, &d, &size);
		ref_path_release(fs, &p);
		if (k.objectid == ino && k.type == BTRFS_EXTENT_DATA_KEY) {
			em_of(&k, d, size, fs->sectorsize, e);
			if (em_end(e) > pos && e->start <= pos)
				return 0;
		}
	}
	k = (struct ref_key){ ino, BTRFS_EXTENT_DATA_KEY, pos };
	if ((r = ref_search(fs, root, &k, &p)))
		return r < 0 ? r : 1;
	ref_path_item(&p, &k, &d, &size);
	ref_path_release(fs, &p);
	if (k.objectid != ino || k.type != BTRFS_EXTENT_DATA_KEY)
		return 1;
	*e = (struct em){ .start = pos, .len = k.offset - pos, .kind = EM_HOLE };
	return 0;
}

static uint64_t capacity(const struct em *e)
{
	return e->compressed ? REF_COMPRESS_MAX_RAM : MAX_PLAIN;
}

/* defrag_check_next_extent */
static int next_mergeable(ref_fs *fs, const struct ref_root *root, uint64_t ino,
			  const struct em *e, uint64_t isize, uint64_t thresh)
{
	if (em_end(e) >= isize)
		return 0;
	struct em n;
	int r = lookup(fs, root, ino, em_end(e), &n);
	if (r)
		return r < 0 ? r : 0;
	return n.kind == EM_REG && n.len < capacity(e) && n.len < thresh;
}

/* Adds [from, to) to the targets, merged with the last when contiguous. */
static int add_target(struct defrag_targets *t, uint64_t from, uint64_t to)
{
	if (t->n && t->v[t->n - 1].end == from) {
		t->v[t->n - 1].end = to;
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct defrag_range *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = (struct defrag_range){ from, to };
	return 0;
}

/* defrag_collect_targets over one cluster [start, end): its targets added
 * to all (merged with the previous cluster's last one only when they touch,
 * as contiguous dirty pages are one range at writeback). */
static int collect(ref_fs *fs, const struct ref_root *root, uint64_t ino, uint64_t start,
		   uint64_t end, uint64_t isize, uint64_t thresh, bool every,
		   struct defrag_targets *all)
{
	bool have = false; /* a target in this cluster so far */
	uint64_t last_end = 0;
	for (uint64_t cur = start; cur < end;) {
		struct em e;
		int r = lookup(fs, root, ino, cur, &e);
		if (r)
			return r < 0 ? r : 0;
		bool target = false;
		if (e.kind == EM_INLINE && e.len <= MAX_INLINE)
			target = false;
		else if (e.kind == EM_HOLE || e.kind == EM_PREALLOC)
			target = false;
		else if (every)
			target = true;
		else if (e.len >= thresh || e.len >= capacity(&e))
			target = false;
		else if (e.kind == EM_INLINE)
			target = true;
		else if ((r = next_mergeable(fs, root, ino, &e, isize, thresh)) < 0)
			return r;
		else
			target = r || (have && last_end == cur);
		if (target) {
			uint64_t to = em_end(&e) < end ? em_end(&e) : end;
			if ((r = add_target(all, cur, to)))
				return ref_fail(fs, ENOMEM, "out of memory");
			have = true;
			last_end = to;
		}
		cur = em_end(&e);
	}
	return 0;
}

int defrag_targets(ref_fs *fs, const struct ref_ino *ino, uint64_t start, uint64_t last_byte,
		   uint64_t isize, uint64_t thresh, bool every, struct defrag_targets *out)
{
	struct ref_root root;
	int r = ref_find_root(fs, ino->subvol, &root);
	for (uint64_t cur = start; !r && cur < last_byte; cur += CLUSTER) {
		uint64_t end = cur + CLUSTER < last_byte ? cur + CLUSTER : last_byte;
		r = collect(fs, &root, ino->ino, cur, end, isize, thresh, every, out);
	}
	return r;
}

/* Metadata items a rewrite of len bytes may touch (as a write's). */
static unsigned rewrite_items(const ref_fs *fs, uint64_t len)
{
	uint64_t pieces = len / REF_COMPRESS_MAX_RAM + 2;
	uint64_t leaves = pieces * 60 / (fs->nodesize / 2) + 1;
	uint64_t csum_leaves = len / fs->sectorsize * fs->csum_size / (fs->nodesize / 2) + 1;
	return (unsigned)(8 + 2 * leaves + csum_leaves);
}

/* One target range rewritten, an operation of its own. */
static int rewrite(ref_fs *fs, const struct ref_ino *ino, uint64_t from, uint64_t to)
{
	int r = vfs_begin(fs, rewrite_items(fs, to - from), false);
	struct btrfs_inode_item ii;
	if (!r && !(r = alloc_reserve_data(fs, to - from + fs->sectorsize)) &&
	    !(r = qg_reserve(fs, ino->subvol, to - from)) && !(r = inode_read(fs, ino, &ii)) &&
	    !(r = file_rewrite(fs, ino, &ii, from, to - from)))
		r = inode_write(fs, ino, &ii);
	return vfs_end(fs, r);
}

static bool level_valid(uint8_t type, int level)
{
	if (type == REF_COMPRESS_ZLIB)
		return level >= 1 && level <= 9;
	if (type == REF_COMPRESS_ZSTD)
		return level >= -15 && level <= 15;
	return level >= 0 && level <= 1;
}

static int defrag_file(ref_fs *fs, const struct ref_ino *ino, const struct ref_defrag *d,
		       uint64_t *sectors)
{
	struct btrfs_inode_item ii;
	int r = inode_read(fs, ino, &ii);
	if (r)
		return r;
	uint64_t isize = LE64(ii.size), ss = fs->sectorsize;
	if (isize == 0)
		return 0;
	if (d->start >= isize)
		return ref_fail(fs, EINVAL, "the range starts at %llu, past the end (%llu)",
				(unsigned long long)d->start, (unsigned long long)isize);
	bool every = d->flags & (REF_DEFRAG_COMPRESS | REF_DEFRAG_NOCOMPRESS);
	uint64_t thresh = every ? UINT32_MAX : d->extent_thresh ? d->extent_thresh : DEFAULT_THRESH;
	uint64_t len = d->len ? d->len : UINT64_MAX;
	uint64_t last = d->start + len > d->start && d->start + len < isize ? d->start + len : isize;
	uint64_t start = d->start / ss * ss;
	last = (last + ss - 1) / ss * ss;
	struct defrag_targets t = { 0 };
	if ((r = defrag_targets(fs, ino, start, last, isize, thresh, every, &t)))
		goto out;
	fs->rw->defragging = true;
	fs->rw->defrag_compress = d->flags & REF_DEFRAG_NOCOMPRESS ? REF_DEFRAG_NOCOMP
				  : d->flags & REF_DEFRAG_COMPRESS  ? (d->compress ? d->compress
									       : REF_COMPRESS_ZLIB)
								    : 0;
	fs->rw->defrag_level = d->level;
	for (size_t i = 0; i < t.n && !r; i++) {
		r = rewrite(fs, ino, t.v[i].start, t.v[i].end);
		if (!r && sectors)
			*sectors += (t.v[i].end - t.v[i].start) / ss;
	}
	fs->rw->defragging = false;
	fs->rw->defrag_compress = 0;
	fs->rw->defrag_level = 0;
out:
	free(t.v);
	return r;
}

int ref_defrag(ref_fs *fs, const char *path, const struct ref_defrag *d, uint64_t *sectors)
{
	if (sectors)
		*sectors = 0;
	if (d->flags & ~(REF_DEFRAG_COMPRESS | REF_DEFRAG_NOCOMPRESS))
		return ref_fail(fs, EOPNOTSUPP, "unknown defrag flags %#x", d->flags);
	if ((d->flags & REF_DEFRAG_COMPRESS) && (d->flags & REF_DEFRAG_NOCOMPRESS))
		return ref_fail(fs, EINVAL, "compress and nocompress together");
	if (d->compress > REF_COMPRESS_ZSTD)
		return ref_fail(fs, EINVAL, "compression type %u", d->compress);
	if ((d->flags & REF_DEFRAG_COMPRESS) && d->level &&
	    !level_valid(d->compress ? d->compress : REF_COMPRESS_ZLIB, d->level))
		return ref_fail(fs, EINVAL, "level %d is not one of %s's", d->level,
				ref_compress_name(d->compress ? d->compress : REF_COMPRESS_ZLIB));
	int r = rw_check_writable(fs);
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	if (r || (r = vfs_resolve(fs, path, true, &ino)) || (r = inode_read(fs, &ino, &ii)))
		return r;
	uint32_t mode = inode_mode(&ii);
	if (!S_ISREG(mode) && !S_ISDIR(mode))
		return ref_fail(fs, EINVAL, "%s: neither a file nor a directory", path);
	if ((r = vfs_writable(fs, &ino)))
		return r;
	return S_ISDIR(mode) ? defrag_tree(fs, ino.subvol) : defrag_file(fs, &ino, d, sectors);
}
