/*
 * write.c - file data on the write path: writes (copy-on-write: every
 * written sector goes to a newly allocated extent, with its checksums),
 * inline extents for small files, dropping and splitting extents under an
 * overwrite, truncate, preallocation and hole punching.  nbytes follows the
 * extents: num_bytes of each extent with disk space, ram_bytes of an inline
 * one.  Each write is laid out as the kernel's writeback lays out its dirty
 * range: plain, or compressed where ref/compress/compress_write.c says; a
 * file of one sector at most is written whole from offset 0 (inline when it
 * fits, compressed inline when it compresses), and an inline extent is
 * rewritten together with a write just past it, as one range.
 */
#include "faults/points.h"
#include "ref/compress/compress_int.h"
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

int file_extent_from(ref_fs *fs, const struct ref_ino *ino, uint64_t pos, struct fext *e)
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

int file_insert_extent(ref_fs *fs, struct rw_tree *t, const struct ref_key *k,
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
		if ((r = file_extent_from(fs, ino, pos, &e)))
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
				r = file_insert_extent(fs, t, &nk, &fe);
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

/* Checksums of n sectors of bytes, for the csum tree. */
static int sector_csums(ref_fs *fs, const uint8_t *bytes, uint64_t n, uint8_t **out)
{
	bool fault = FP_FAIL(FP_REF_MEM_CSUM);
	uint8_t *csums = fault ? NULL : malloc(n * fs->csum_size);
	if (!csums)
		return ref_fail(fs, ENOMEM, "out of memory for %llu checksums%s", (unsigned long long)n,
				fault ? " (fault point " FP_REF_MEM_CSUM ")" : "");
	for (uint64_t s = 0; s < n; s++) {
		uint8_t c[BTRFS_CSUM_BYTES];
		ref_csum(fs->csum_type, bytes + s * fs->sectorsize, fs->sectorsize, c);
		memcpy(csums + s * fs->csum_size, c, fs->csum_size);
	}
	*out = csums;
	return 0;
}

/* One new extent at file offset `at` in space [start, start + disk_len)
 * just allocated: its bytes written, its checksums, its reference and its
 * file extent item (ram bytes of data; compression: REF_COMPRESS_*). */
static int put_extent(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		      uint64_t at, uint64_t start, const uint8_t *bytes, uint64_t disk_len,
		      uint64_t ram, uint8_t compression)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, ino->subvol, &t);
	uint8_t *csums = NULL;
	bool sums = !(LE64(ii->flags) & BTRFS_INODE_NODATASUM);
	if (!r)
		r = ref_write_logical(fs, start, bytes, disk_len);
	if (!r && sums)
		r = sector_csums(fs, bytes, disk_len / fs->sectorsize, &csums);
	if (r) {
		alloc_unreserve_data(fs, start, disk_len);
		return r;
	}
	/* From here the extent is referenced; a failure leaves it to the commit. */
	r = dref_data(fs, start, disk_len, ino->subvol, ino->ino, at, +1, true);
	if (!r && sums)
		r = csum_insert(fs, start, csums, disk_len / fs->sectorsize);
	free(csums);
	struct btrfs_file_extent_item fe;
	new_extent(fs, &fe, BTRFS_FILE_EXTENT_REG, start, disk_len);
	fe.compression = compression;
	fe.ram_bytes = fe.num_bytes = htole64(ram);
	struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, at };
	if (!r)
		r = file_insert_extent(fs, t, &k, &fe);
	ii->nbytes = htole64(LE64(ii->nbytes) + ram);
	return r;
}

int file_put_plain(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, uint64_t at,
		   const uint8_t *data, uint64_t len)
{
	int r = 0;
	for (uint64_t done = 0; done < len && !r;) {
		uint64_t want = len - done < MAX_EXTENT ? len - done : MAX_EXTENT, start, got;
		if ((r = alloc_data(fs, want, fs->sectorsize, &start, &got)))
			break;
		r = put_extent(fs, ino, ii, at + done, start, data + done, got, got, 0);
		done += got;
	}
	return r;
}

int file_put_compressed(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			uint64_t at, const uint8_t *enc, uint64_t disk_len, uint64_t ram, uint8_t type)
{
	uint64_t start, got;
	int r = alloc_data(fs, disk_len, disk_len, &start, &got);
	if (r)
		return r;
	cw_need_incompat(fs, type);
	return put_extent(fs, ino, ii, at, start, enc, disk_len, ram, type);
}

/* Writes sector-aligned data at file offset `at` into new extents, in place
 * of what was there: compressed as plan says (NULL: plain), as the kernel's
 * writeback of a dirty range with the file's size isize after the write and
 * disk_isize before it (compress_write.c). */
static int write_aligned(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			 uint64_t at, const uint8_t *data, uint64_t len, const struct cw_plan *plan,
			 uint64_t isize, uint64_t disk_isize)
{
	uint64_t freed;
	int r = file_drop_extents(fs, ino, at, at + len, &freed);
	if (r)
		return r;
	ii->nbytes = htole64(LE64(ii->nbytes) - freed);
	if (plan && plan->type)
		return cw_write(fs, ino, ii, plan, at, data, len, isize, disk_isize);
	return file_put_plain(fs, ino, ii, at, data, len);
}

/* The inline extent of a file, if it has one: its data, the first *len bytes
 * of it that fit in buf (cap bytes).  An inline extent is never larger than a
 * sector; one that claims more is a damaged image (EUCLEAN). */
static int inline_data(ref_fs *fs, const struct ref_ino *ino, uint8_t *buf, size_t cap,
		       uint64_t *len, bool *has)
{
	struct fext e;
	int r = file_extent_from(fs, ino, 0, &e);
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

/* Replaces the file's data by one inline extent holding `ram` bytes of
 * data, stored as plen bytes of payload (the data itself, or its encoding
 * when compression is REF_COMPRESS_*). */
static int write_inline_enc(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			    const uint8_t *payload, uint64_t plen, uint64_t ram, uint8_t compression)
{
	struct rw_tree *t;
	uint64_t freed;
	int r = rw_tree_get(fs, ino->subvol, &t);
	if (r || (r = file_drop_extents(fs, ino, 0, UINT64_MAX, &freed)))
		return r;
	uint64_t nbytes = LE64(ii->nbytes) - freed;
	if (ram) {
		uint8_t buf[FE_HEADER + VFS_MAX_INLINE];
		struct btrfs_file_extent_item *fe = (void *)buf;
		memset(buf, 0, FE_HEADER);
		fe->generation = htole64(fs->rw->transid);
		fe->ram_bytes = htole64(ram);
		fe->type = BTRFS_FILE_EXTENT_INLINE;
		fe->compression = compression;
		memcpy(buf + FE_HEADER, payload, plen);
		struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, 0 };
		if ((r = bt_insert_data(fs, t, &k, buf, (uint32_t)(FE_HEADER + plen))))
			return r;
		if (compression)
			cw_need_incompat(fs, compression);
		nbytes += ram;
	}
	ii->nbytes = htole64(nbytes);
	return 0;
}

/* Replaces the file's data by one inline extent of `len` bytes. */
static int write_inline(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			const uint8_t *data, uint64_t len)
{
	return write_inline_enc(fs, ino, ii, data, len, len, 0);
}

int file_uninline(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii)
{
	uint8_t *sector = calloc(1, fs->sectorsize);
	if (!sector)
		return ref_fail(fs, ENOMEM, "out of memory");
	uint64_t len;
	bool has;
	int r = inline_data(fs, ino, sector, fs->sectorsize, &len, &has);
	if (!r && has)
		r = write_aligned(fs, ino, ii, 0, sector, fs->sectorsize, NULL, 0, 0);
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

/* A file of one sector at most written whole (data: a sector, the file's
 * newsize bytes then zeros), as the kernel's writeback of a dirty range at
 * offset 0 makes it: compressed inline when the plan compresses and the
 * encoding fits (compress_write.c), else inline when small enough, else one
 * plain extent. */
static int write_small(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		       const struct cw_plan *plan, const uint8_t *data, uint64_t newsize,
		       uint64_t disk_isize)
{
	uint8_t enc[VFS_MAX_INLINE];
	ssize_t n = cw_small(fs, ii, plan, data, newsize, disk_isize, enc, sizeof(enc));
	if (n < 0)
		return (int)n;
	if (n > 0)
		return write_inline_enc(fs, ino, ii, enc, (uint64_t)n, newsize, plan->type);
	if (fits_inline(fs, newsize))
		return write_inline(fs, ino, ii, data, newsize);
	return write_aligned(fs, ino, ii, 0, data, fs->sectorsize, NULL, 0, 0);
}

/* Whether the file has an extent at or after pos. */
static int extent_after(ref_fs *fs, const struct ref_ino *ino, uint64_t pos)
{
	struct fext e;
	int r = file_extent_from(fs, ino, pos, &e);
	return r == 1 ? 0 : r == 0 ? 1 : r;
}

/* How far past its end an inline extent is still rewritten together with a
 * write, as one range from offset 0 (the kernel's dirty pages would be one
 * range at writeback); further away it becomes a regular extent first. */
#define INLINE_MERGE_MAX (UINT64_C(128) * 1024)

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
	struct cw_plan plan;
	if ((r = cw_plan_for(fs, ino, &ii, &plan)))
		return r;
	bool inl = false;
	uint64_t ilen = 0;
	uint8_t probe[1];
	if ((r = inline_data(fs, ino, probe, 0, &ilen, &inl)))
		return r;
	int beyond = newsize <= ss ? extent_after(fs, ino, ss) : 1;
	if (beyond < 0)
		return beyond;
	if (!beyond) { /* the file is one sector at most: written whole from offset 0 */
		uint8_t *data = calloc(1, ss);
		if (!data)
			return ref_fail(fs, ENOMEM, "out of memory");
		if (size) {
			ssize_t n = ref_pread(fs, ino, data, size < ss ? size : ss, 0);
			r = n < 0 ? (int)n : 0;
		}
		memcpy(data + off, buf, len);
		if (!r)
			r = write_small(fs, ino, &ii, &plan, data, newsize, size);
		free(data);
		return finish_write(fs, ino, &ii, r, newsize);
	}
	if (inl && off > INLINE_MERGE_MAX) {
		if ((r = file_uninline(fs, ino, &ii)))
			return r;
		inl = false;
	}
	uint64_t a = inl ? 0 : off / ss * ss, b = round_up(end, ss);
	if (a == off && b == end) /* whole sectors: straight from the caller */
		return finish_write(fs, ino, &ii,
				    write_aligned(fs, ino, &ii, a, buf, len, &plan, newsize, size),
				    newsize);
	bool fault = FP_FAIL(FP_REF_MEM_WRITE_BUF);
	uint8_t *data = fault ? NULL : malloc(b - a);
	if (!data)
		return ref_fail(fs, ENOMEM, "out of memory for a %llu-byte write buffer%s",
				(unsigned long long)(b - a),
				fault ? " (fault point " FP_REF_MEM_WRITE_BUF ")" : "");
	memset(data, 0, off - a > ss ? off - a : ss); /* the partial sectors at the ends */
	memset(data + (b - a) - ss, 0, ss);
	/* The bytes before the write in its first sector (from offset 0 when an
	 * inline extent goes with it) and after it in its last keep what is there. */
	if (off > a && a < size) {
		ssize_t n = ref_pread(fs, ino, data, (size < off ? size : off) - a, a);
		r = n < 0 ? (int)n : 0;
	}
	if (!r && end < b && end < size) {
		ssize_t n = ref_pread(fs, ino, data + (end - a), b - end, end);
		r = n < 0 ? (int)n : 0;
	}
	memcpy(data + (off - a), buf, len);
	if (!r)
		r = write_aligned(fs, ino, &ii, a, data, b - a, &plan, newsize, size);
	free(data);
	return finish_write(fs, ino, &ii, r, newsize);
}

int file_rewrite(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, uint64_t at,
		 uint64_t len)
{
	uint64_t size = LE64(ii->size), ss = fs->sectorsize;
	struct cw_plan plan;
	int r = cw_plan_for(fs, ino, ii, &plan);
	if (r)
		return r;
	int beyond = at == 0 && size <= ss ? extent_after(fs, ino, ss) : 1;
	if (beyond < 0)
		return beyond;
	uint64_t buflen = beyond ? len : ss;
	uint8_t *data = calloc(1, buflen);
	if (!data)
		return ref_fail(fs, ENOMEM, "out of memory for a %llu-byte rewrite",
				(unsigned long long)buflen);
	uint64_t have = at < size ? size - at : 0;
	if (have) {
		ssize_t n = ref_pread(fs, ino, data, have < buflen ? have : buflen, at);
		r = n < 0 ? (int)n : 0;
	}
	if (!r)
		r = beyond ? write_aligned(fs, ino, ii, at, data, len, &plan, size, size)
			   : write_small(fs, ino, ii, &plan, data, size, size); /* the whole file */
	free(data);
	return r;
}

/* Zeroes [from, to) inside one sector that holds data (a hole stays a hole). */
static int zero_partial(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			uint64_t from, uint64_t to)
{
	uint64_t ss = fs->sectorsize, a = from / ss * ss;
	struct fext e;
	int r = file_extent_from(fs, ino, a, &e);
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
		r = write_aligned(fs, ino, ii, a, sector, ss, NULL, 0, 0);
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
		r = file_uninline(fs, ino, &ii);
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
		r = file_extent_from(fs, ino, pos, &e);
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
				r = file_insert_extent(fs, t, &k, &fe);
			ii->nbytes = htole64(LE64(ii->nbytes) + got);
			/* btrfs_prealloc_file_range: the inode is PREALLOC from now on
			 * (should_nocow: its later writes are never compressed) */
			ii->flags = htole64(LE64(ii->flags) | BTRFS_INODE_PREALLOC);
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
			if ((r = file_uninline(fs, ino, &ii)))
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
		if (inl && (r = file_uninline(fs, ino, &ii)))
			return r;
		r = zero_range(fs, ino, &ii, off, end, true);
		if (!r && !(mode & FALLOC_FL_KEEP_SIZE) && end > size)
			ii.size = htole64(end);
	} else {
		if (inl && (r = file_uninline(fs, ino, &ii)))
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
