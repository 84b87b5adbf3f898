/*
 * write.c - file data on the write path: writes (copy-on-write: every
 * written sector goes to a newly allocated extent, with its checksums),
 * inline extents for small files, dropping and splitting extents under an
 * overwrite, truncate, preallocation and hole punching.  nbytes follows the
 * extents: num_bytes of each extent with disk space, ram_bytes of an inline
 * one.
 */
#include "faults/points.h"
#include "ref/txn/extent.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <linux/falloc.h>
#include <stdlib.h>

#define FE_HEADER offsetof(struct btrfs_file_extent_item, disk_bytenr)
#define FE_SIZE sizeof(struct btrfs_file_extent_item)
#define MAX_EXTENT (UINT64_C(128) << 20) /* the kernel's BTRFS_MAX_EXTENT_SIZE */

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return v + (a - v % a) % a;
}

/* One file extent item, decoded. */
struct fext {
	struct ref_key key;
	uint8_t type, compression;
	uint64_t disk_bytenr, disk_num_bytes, offset, num_bytes, ram_bytes, generation;
	uint64_t end; /* file offset after it */
};

static int decode(ref_fs *fs, const struct ref_key *k, const uint8_t *d, uint32_t size,
		  struct fext *e)
{
	if (size < FE_HEADER)
		return ref_fail(fs, EUCLEAN, "file extent item too small");
	const struct btrfs_file_extent_item *fe = (const void *)d;
	e->key = *k;
	e->type = fe->type;
	e->compression = fe->compression;
	e->ram_bytes = LE64(fe->ram_bytes);
	e->generation = LE64(fe->generation);
	if (e->type == BTRFS_FILE_EXTENT_INLINE) {
		e->disk_bytenr = e->disk_num_bytes = e->offset = 0;
		e->num_bytes = e->ram_bytes;
		e->end = k->offset + round_up(e->ram_bytes, fs->sectorsize);
		return 0;
	}
	if (size < FE_SIZE)
		return ref_fail(fs, EUCLEAN, "file extent item too small");
	e->disk_bytenr = LE64(fe->disk_bytenr);
	e->disk_num_bytes = LE64(fe->disk_num_bytes);
	e->offset = LE64(fe->offset);
	e->num_bytes = LE64(fe->num_bytes);
	e->end = k->offset + e->num_bytes;
	return 0;
}

/* The first extent of ino that ends after pos: 0, or 1 when there is none. */
static int extent_from(ref_fs *fs, const struct ref_ino *ino, uint64_t pos, struct fext *e)
{
	struct ref_root root;
	int r = ref_find_root(fs, ino->subvol, &root);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, pos };
	r = ref_search_le(fs, &root, &k, &p);
	if (r == 1)
		r = ref_search(fs, &root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid > ino->ino || (k.objectid == ino->ino && k.type > BTRFS_EXTENT_DATA_KEY))
			break;
		if (k.objectid == ino->ino && k.type == BTRFS_EXTENT_DATA_KEY) {
			if ((r = decode(fs, &k, d, size, e)))
				break;
			if (e->end > pos) {
				ref_path_release(fs, &p);
				return 0;
			}
		}
		r = ref_next(fs, &p);
	}
	if (r == 0) {
		ref_path_release(fs, &p);
		return 1;
	}
	return r;
}

static int set_fields(ref_fs *fs, struct rw_tree *t, const struct ref_key *k, uint64_t offset,
		      uint64_t num_bytes, const struct ref_key *newkey)
{
	struct ref_path p;
	int r = bt_lookup_cow(fs, t, k, &p);
	if (r)
		return r;
	struct btrfs_file_extent_item *fe = (void *)bt_item(&p, NULL);
	fe->offset = htole64(offset);
	fe->num_bytes = htole64(num_bytes);
	if (newkey)
		bt_set_key(&p, newkey);
	ref_path_release(fs, &p);
	return 0;
}

static int insert_extent_item(ref_fs *fs, struct rw_tree *t, const struct ref_key *k,
			      const struct btrfs_file_extent_item *fe)
{
	int r = bt_insert_data(fs, t, k, fe, FE_SIZE);
	return r == -EEXIST ? ref_fail(fs, EUCLEAN, "file extent at %llu exists already",
				       (unsigned long long)k->offset)
			    : r;
}

int file_drop_extents(ref_fs *fs, const struct ref_ino *ino, uint64_t start, uint64_t end,
		      uint64_t *freed)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, ino->subvol, &t);
	*freed = 0;
	uint64_t pos = start;
	while (!r && pos < end) {
		struct fext e;
		if ((r = extent_from(fs, ino, pos, &e)))
			return r == 1 ? 0 : r;
		uint64_t es = e.key.offset, ee = e.end;
		if (es >= end)
			return 0;
		bool counts = e.type == BTRFS_FILE_EXTENT_INLINE || e.disk_bytenr;
		uint64_t refoff = es - e.offset;
		if (e.type == BTRFS_FILE_EXTENT_INLINE) {
			if (start > es)
				return ref_fail(fs, EUCLEAN, "inline extent cut in its middle");
			*freed += e.ram_bytes;
			r = bt_delete_key(fs, t, &e.key);
		} else if (es < start && ee > end) { /* the range is inside: split */
			if (counts)
				*freed += end - start;
			r = set_fields(fs, t, &e.key, e.offset, start - es, NULL);
			struct btrfs_file_extent_item fe;
			memset(&fe, 0, sizeof(fe));
			fe.generation = htole64(e.generation);
			fe.ram_bytes = htole64(e.ram_bytes);
			fe.compression = e.compression;
			fe.type = e.type;
			fe.disk_bytenr = htole64(e.disk_bytenr);
			fe.disk_num_bytes = htole64(e.disk_num_bytes);
			fe.offset = htole64(e.offset + (end - es));
			fe.num_bytes = htole64(ee - end);
			struct ref_key nk = { ino->ino, BTRFS_EXTENT_DATA_KEY, end };
			if (!r)
				r = insert_extent_item(fs, t, &nk, &fe);
			if (!r && e.disk_bytenr)
				r = dref_data(fs, e.disk_bytenr, e.disk_num_bytes, ino->subvol, ino->ino,
					      refoff, +1, false);
		} else if (es < start) { /* its tail goes */
			if (counts)
				*freed += ee - start;
			r = set_fields(fs, t, &e.key, e.offset, start - es, NULL);
		} else if (ee > end) { /* its head goes */
			if (counts)
				*freed += end - es;
			struct ref_key nk = { ino->ino, BTRFS_EXTENT_DATA_KEY, end };
			r = set_fields(fs, t, &e.key, e.offset + (end - es), ee - end, &nk);
		} else { /* wholly inside */
			if (counts)
				*freed += e.num_bytes;
			r = bt_delete_key(fs, t, &e.key);
			if (!r && e.disk_bytenr)
				r = dref_data(fs, e.disk_bytenr, e.disk_num_bytes, ino->subvol, ino->ino,
					      refoff, -1, false);
		}
		pos = ee;
	}
	return r;
}

/* A file extent item for a whole new extent of len bytes at start. */
static void new_extent(ref_fs *fs, struct btrfs_file_extent_item *fe, uint8_t type, uint64_t start,
		       uint64_t len)
{
	memset(fe, 0, sizeof(*fe));
	fe->generation = htole64(fs->rw->transid);
	fe->ram_bytes = htole64(len);
	fe->type = type;
	fe->disk_bytenr = htole64(start);
	fe->disk_num_bytes = htole64(len);
	fe->num_bytes = htole64(len);
}

/* Writes sector-aligned data at file offset `at` into new extents. */
static int write_aligned(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			 uint64_t at, const uint8_t *data, uint64_t len)
{
	struct rw_tree *t;
	uint64_t freed;
	int r = rw_tree_get(fs, ino->subvol, &t);
	if (r || (r = file_drop_extents(fs, ino, at, at + len, &freed)))
		return r;
	uint64_t nbytes = LE64(ii->nbytes) - freed;
	bool sums = !(LE64(ii->flags) & BTRFS_INODE_NODATASUM);
	uint8_t *csums = NULL;
	for (uint64_t done = 0; done < len && !r;) {
		uint64_t want = len - done < MAX_EXTENT ? len - done : MAX_EXTENT, start, got;
		if ((r = alloc_data(fs, want, fs->sectorsize, &start, &got)))
			break;
		if ((r = ref_write_logical(fs, start, data + done, got))) {
			alloc_unreserve_data(fs, start, got);
			break;
		}
		if (sums) {
			uint64_t n = got / fs->sectorsize;
			free(csums);
			bool fault = FP_FAIL(FP_REF_MEM_CSUM);
			csums = fault ? NULL : malloc(n * fs->csum_size);
			if (!csums) {
				alloc_unreserve_data(fs, start, got);
				r = ref_fail(fs, ENOMEM, "out of memory for %llu checksums%s",
					     (unsigned long long)n,
					     fault ? " (fault point " FP_REF_MEM_CSUM ")" : "");
				break;
			}
			for (uint64_t s = 0; s < n; s++) {
				uint8_t c[BTRFS_CSUM_BYTES];
				ref_csum(fs->csum_type, data + done + s * fs->sectorsize, fs->sectorsize, c);
				memcpy(csums + s * fs->csum_size, c, fs->csum_size);
			}
		}
		/* From here the extent is referenced; a failure leaves it to the commit. */
		r = dref_data(fs, start, got, ino->subvol, ino->ino, at + done, +1, true);
		if (!r && sums)
			r = csum_insert(fs, start, csums, got / fs->sectorsize);
		struct btrfs_file_extent_item fe;
		new_extent(fs, &fe, BTRFS_FILE_EXTENT_REG, start, got);
		struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, at + done };
		if (!r)
			r = insert_extent_item(fs, t, &k, &fe);
		nbytes += got;
		done += got;
	}
	free(csums);
	ii->nbytes = htole64(nbytes);
	return r;
}

/* The inline extent of a file, if it has one: its data, the first *len bytes
 * of it that fit in buf (cap bytes).  An inline extent is never larger than a
 * sector; one that claims more is a damaged image (EUCLEAN). */
static int inline_data(ref_fs *fs, const struct ref_ino *ino, uint8_t *buf, size_t cap,
		       uint64_t *len, bool *has)
{
	struct fext e;
	int r = extent_from(fs, ino, 0, &e);
	*has = false;
	if (r)
		return r == 1 ? 0 : r;
	if (e.type != BTRFS_FILE_EXTENT_INLINE)
		return 0;
	if (e.ram_bytes > fs->sectorsize)
		return ref_fail(fs, EUCLEAN, "inode %llu: inline extent of %llu bytes, more than a sector",
				(unsigned long long)ino->ino, (unsigned long long)e.ram_bytes);
	*has = true;
	*len = e.ram_bytes < cap ? e.ram_bytes : cap;
	ssize_t n = ref_pread(fs, ino, buf, *len, 0);
	if (n < 0)
		return (int)n;
	memset(buf + n, 0, *len - (uint64_t)n);
	return 0;
}

/* Whether the file has any extent item. */
static int has_extents(ref_fs *fs, const struct ref_ino *ino)
{
	struct fext e;
	int r = extent_from(fs, ino, 0, &e);
	return r == 1 ? 0 : r == 0 ? 1 : r;
}

/* Replaces the file's data by one inline extent of `len` bytes. */
static int write_inline(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			const uint8_t *data, uint64_t len)
{
	struct rw_tree *t;
	uint64_t freed;
	int r = rw_tree_get(fs, ino->subvol, &t);
	if (r || (r = file_drop_extents(fs, ino, 0, UINT64_MAX, &freed)))
		return r;
	uint64_t nbytes = LE64(ii->nbytes) - freed;
	if (len) {
		uint8_t buf[FE_HEADER + VFS_MAX_INLINE];
		struct btrfs_file_extent_item *fe = (void *)buf;
		memset(buf, 0, FE_HEADER);
		fe->generation = htole64(fs->rw->transid);
		fe->ram_bytes = htole64(len);
		fe->type = BTRFS_FILE_EXTENT_INLINE;
		memcpy(buf + FE_HEADER, data, len);
		struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, 0 };
		if ((r = bt_insert_data(fs, t, &k, buf, (uint32_t)(FE_HEADER + len))))
			return r;
		nbytes += len;
	}
	ii->nbytes = htole64(nbytes);
	return 0;
}

/* Turns an inline extent into a regular one (before the file grows past it). */
static int uninline(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii)
{
	uint8_t *sector = calloc(1, fs->sectorsize);
	if (!sector)
		return ref_fail(fs, ENOMEM, "out of memory");
	uint64_t len;
	bool has;
	int r = inline_data(fs, ino, sector, fs->sectorsize, &len, &has);
	if (!r && has)
		r = write_aligned(fs, ino, ii, 0, sector, fs->sectorsize);
	free(sector);
	return r;
}

static bool fits_inline(const ref_fs *fs, uint64_t size)
{
	return size <= VFS_MAX_INLINE && size < fs->sectorsize;
}

static int finish_write(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, int r,
			uint64_t newsize)
{
	if (r)
		return r;
	ii->size = htole64(newsize);
	inode_touch(fs, ii, true, true);
	return inode_write(fs, ino, ii);
}

/* (Each data call checks vfs_writable before anything, the csum tree first,
 * is touched: EROFS in a read-only snapshot, as the kernel's open for
 * writing gives.) */
int file_write(ref_fs *fs, const struct ref_ino *ino, const void *buf, size_t len, uint64_t off)
{
	struct btrfs_inode_item ii;
	int r = vfs_writable(fs, ino);
	if (!r)
		r = inode_read(fs, ino, &ii);
	if (r || len == 0)
		return r;
	uint64_t size = LE64(ii.size), end = off + len, ss = fs->sectorsize;
	uint64_t newsize = end > size ? end : size;
	bool inl = false;
	uint64_t ilen = 0;
	uint8_t small[VFS_MAX_INLINE + 1];
	if ((r = inline_data(fs, ino, small, sizeof(small), &ilen, &inl)))
		return r;
	int any = has_extents(fs, ino);
	if (any < 0)
		return any;
	if (fits_inline(fs, newsize) && (inl || !any)) {
		uint8_t data[VFS_MAX_INLINE];
		memset(data, 0, sizeof(data));
		if (inl)
			memcpy(data, small, ilen < size ? ilen : size);
		memcpy(data + off, buf, len);
		r = write_inline(fs, ino, &ii, data, newsize);
	} else {
		if (inl && (r = uninline(fs, ino, &ii)))
			return r;
		uint64_t a = off / ss * ss, b = round_up(end, ss);
		if (a == off && b == end) /* whole sectors: straight from the caller */
			return finish_write(fs, ino, &ii, write_aligned(fs, ino, &ii, a, buf, len),
					    newsize);
		bool fault = FP_FAIL(FP_REF_MEM_WRITE_BUF);
		uint8_t *data = fault ? NULL : malloc(b - a);
		if (!data)
			return ref_fail(fs, ENOMEM, "out of memory for a %llu-byte write buffer%s",
					(unsigned long long)(b - a),
					fault ? " (fault point " FP_REF_MEM_WRITE_BUF ")" : "");
		memset(data, 0, ss); /* the partial sectors at the ends */
		memset(data + (b - a) - ss, 0, ss);
		/* The partial sectors at both ends keep the bytes already there. */
		if (off > a && a < size) {
			ssize_t n = ref_pread(fs, ino, data, off - a, a);
			r = n < 0 ? (int)n : 0;
		}
		if (!r && end < b && end < size) {
			ssize_t n = ref_pread(fs, ino, data + (end - a), b - end, end);
			r = n < 0 ? (int)n : 0;
		}
		memcpy(data + (off - a), buf, len);
		if (!r)
			r = write_aligned(fs, ino, &ii, a, data, b - a);
		free(data);
	}
	return finish_write(fs, ino, &ii, r, newsize);
}

/* Zeroes [from, to) inside one sector that holds data (a hole stays a hole). */
static int zero_partial(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			uint64_t from, uint64_t to)
{
	uint64_t ss = fs->sectorsize, a = from / ss * ss;
	struct fext e;
	int r = extent_from(fs, ino, a, &e);
	if (r)
		return r == 1 ? 0 : r;
	if (e.key.offset >= a + ss || (e.type != BTRFS_FILE_EXTENT_INLINE && !e.disk_bytenr) ||
	    e.type == BTRFS_FILE_EXTENT_PREALLOC)
		return 0;
	uint8_t *sector = calloc(1, ss);
	if (!sector)
		return ref_fail(fs, ENOMEM, "out of memory");
	uint64_t size = LE64(ii->size);
	if (a < size) {
		ssize_t n = ref_pread(fs, ino, sector, ss, a);
		r = n < 0 ? (int)n : 0;
	}
	if (!r) {
		memset(sector + (from - a), 0, to - from);
		r = write_aligned(fs, ino, ii, a, sector, ss);
	}
	free(sector);
	return r;
}

int file_truncate(ref_fs *fs, const struct ref_ino *ino, uint64_t newsize)
{
	struct btrfs_inode_item ii;
	int r = vfs_writable(fs, ino);
	if (!r)
		r = inode_read(fs, ino, &ii);
	if (r)
		return r;
	uint64_t size = LE64(ii.size), ss = fs->sectorsize;
	uint8_t small[VFS_MAX_INLINE + 1];
	uint64_t ilen = 0;
	bool inl;
	if ((r = inline_data(fs, ino, small, sizeof(small), &ilen, &inl)))
		return r;
	if (inl && fits_inline(fs, newsize)) {
		uint8_t data[VFS_MAX_INLINE];
		memset(data, 0, sizeof(data));
		memcpy(data, small, ilen < newsize ? ilen : newsize);
		if (newsize < size || newsize <= ilen)
			r = write_inline(fs, ino, &ii, data, newsize < ilen ? newsize : ilen);
		/* growing keeps the inline extent; the rest reads as zeros */
		if (!r && newsize > ilen && newsize > size)
			r = write_inline(fs, ino, &ii, data, newsize);
	} else if (inl) {
		r = uninline(fs, ino, &ii);
	}
	if (!r && newsize < size && !(inl && fits_inline(fs, newsize))) {
		if (newsize % ss)
			r = zero_partial(fs, ino, &ii, newsize, round_up(newsize, ss));
		uint64_t freed;
		if (!r && !(r = file_drop_extents(fs, ino, round_up(newsize, ss), UINT64_MAX, &freed)))
			ii.nbytes = htole64(LE64(ii.nbytes) - freed);
	}
	if (r)
		return r;
	ii.size = htole64(newsize);
	inode_touch(fs, &ii, true, true);
	return inode_write(fs, ino, &ii);
}

/* Preallocated extents over the holes of [a, b). */
static int prealloc(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, uint64_t a,
		    uint64_t b)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, ino->subvol, &t);
	uint64_t pos = a;
	while (!r && pos < b) {
		struct fext e;
		uint64_t hole_end = b;
		r = extent_from(fs, ino, pos, &e);
		if (r < 0)
			return r;
		if (r == 0 && e.key.offset <= pos && (e.type == BTRFS_FILE_EXTENT_INLINE || e.disk_bytenr)) {
			pos = e.end; /* data or preallocated already */
			r = 0;
			continue;
		}
		if (r == 0 && e.key.offset > pos && e.key.offset < b)
			hole_end = e.key.offset;
		else if (r == 0 && e.key.offset <= pos) /* an explicit hole item */
			hole_end = e.end < b ? e.end : b;
		r = 0;
		uint64_t freed;
		if ((r = file_drop_extents(fs, ino, pos, hole_end, &freed)))
			return r;
		while (!r && pos < hole_end) {
			uint64_t want = hole_end - pos < MAX_EXTENT ? hole_end - pos : MAX_EXTENT;
			uint64_t start, got;
			if ((r = alloc_data(fs, want, fs->sectorsize, &start, &got)))
				break;
			struct btrfs_file_extent_item fe;
			new_extent(fs, &fe, BTRFS_FILE_EXTENT_PREALLOC, start, got);
			struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, pos };
			r = dref_data(fs, start, got, ino->subvol, ino->ino, pos, +1, true);
			if (!r)
				r = insert_extent_item(fs, t, &k, &fe);
			ii->nbytes = htole64(LE64(ii->nbytes) + got);
			pos += got;
		}
	}
	return r;
}

/* [off, end) reads as zeros: the partial sectors at its edges zeroed where
 * they hold data, the whole sectors inside emptied - left a hole
 * (btrfs_punch_hole) or, with prealloc_inside, preallocated
 * (btrfs_zero_range). */
static int zero_range(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		      uint64_t off, uint64_t end, bool prealloc_inside)
{
	uint64_t ss = fs->sectorsize, a = round_up(off, ss), b = end / ss * ss;
	if (off / ss == (end - 1) / ss && (off % ss || end % ss))
		return zero_partial(fs, ino, ii, off, end); /* inside one sector */
	int r = 0;
	if (off % ss)
		r = zero_partial(fs, ino, ii, off, a);
	if (!r && end % ss && end > b)
		r = zero_partial(fs, ino, ii, b, end);
	uint64_t freed;
	if (r || a >= b || (r = file_drop_extents(fs, ino, a, b, &freed)))
		return r;
	ii->nbytes = htole64(LE64(ii->nbytes) - freed);
	return prealloc_inside ? prealloc(fs, ino, ii, a, b) : 0;
}

int file_fallocate(ref_fs *fs, const struct ref_ino *ino, int mode, uint64_t off, uint64_t len)
{
	struct btrfs_inode_item ii;
	int r = vfs_writable(fs, ino);
	if (!r)
		r = inode_read(fs, ino, &ii);
	if (r)
		return r;
	uint64_t size = LE64(ii.size), ss = fs->sectorsize, end = off + len;
	uint8_t small[VFS_MAX_INLINE + 1];
	uint64_t ilen = 0;
	bool inl;
	if ((r = inline_data(fs, ino, small, sizeof(small), &ilen, &inl)))
		return r;
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		if (end > size)
			end = size;
		if (off >= end)
			goto done;
		/* An inline extent larger than ours (the kernel's max_inline goes up
		 * to a sector) becomes a regular extent first. */
		if (inl && ilen > VFS_MAX_INLINE) {
			if ((r = uninline(fs, ino, &ii)))
				goto done;
			inl = false;
		}
		if (inl) {
			uint8_t data[VFS_MAX_INLINE];
			memcpy(data, small, ilen);
			memset(data + off, 0, (end < ilen ? end : ilen) - (off < ilen ? off : ilen));
			r = write_inline(fs, ino, &ii, data, ilen);
			goto done;
		}
		r = zero_range(fs, ino, &ii, off, end, false);
	} else if (mode & FALLOC_FL_ZERO_RANGE) {
		/* btrfs_zero_range: the sectors wholly inside become preallocated
		 * extents (reading as zeros), the partial ones at the edges are
		 * zeroed where they hold data; the size grows unless keep-size. */
		if (inl && (r = uninline(fs, ino, &ii)))
			return r;
		r = zero_range(fs, ino, &ii, off, end, true);
		if (!r && !(mode & FALLOC_FL_KEEP_SIZE) && end > size)
			ii.size = htole64(end);
	} else {
		if (inl && (r = uninline(fs, ino, &ii)))
			return r;
		r = prealloc(fs, ino, &ii, off / ss * ss, round_up(end, ss));
		if (!r && !(mode & FALLOC_FL_KEEP_SIZE) && end > size)
			ii.size = htole64(end);
	}
done:
	if (r)
		return r;
	inode_touch(fs, &ii, true, true);
	return inode_write(fs, ino, &ii);
}
