/*
 * file.c - reading file data: EXTENT_DATA items (inline, regular, prealloc,
 * holes explicit or implied by no-holes), compressed or not, through the
 * checksummed data reads of data.c.
 */
#include "ref/compress.h"
#include "ref/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#define FE_HEADER offsetof(struct btrfs_file_extent_item, disk_bytenr) /* 21 bytes */

/* One EXTENT_DATA item, checked against the item's size. */
struct extent {
	uint64_t file_off;   /* key offset */
	uint64_t len;        /* file bytes it covers */
	uint8_t type, compression;
	uint64_t ram_bytes;
	uint64_t disk_bytenr, disk_num_bytes, offset; /* regular and prealloc */
	const uint8_t *inline_data;
	uint32_t inline_len;
};

static int parse_extent(ref_fs *fs, const struct ref_ino *ino, const struct ref_key *k,
			const uint8_t *data, uint32_t size, struct extent *e)
{
	const struct btrfs_file_extent_item *fe = (const void *)data;
	if (size < FE_HEADER)
		goto bad;
	*e = (struct extent){ .file_off = k->offset, .type = fe->type,
			      .compression = fe->compression, .ram_bytes = LE64(fe->ram_bytes) };
	if (fe->encryption || LE16(fe->other_encoding))
		return ref_fail(fs, EOPNOTSUPP, "subvolume %llu inode %llu offset %llu: encrypted or encoded extent",
				(unsigned long long)ino->subvol, (unsigned long long)ino->ino,
				(unsigned long long)k->offset);
	if (e->compression > REF_COMPRESS_ZSTD)
		goto bad;
	if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
		e->inline_data = data + FE_HEADER;
		e->inline_len = size - (uint32_t)FE_HEADER;
		e->len = e->compression ? e->ram_bytes : e->inline_len;
		if (e->len > fs->sectorsize || k->offset != 0)
			goto bad;
		return 0;
	}
	if (fe->type != BTRFS_FILE_EXTENT_REG && fe->type != BTRFS_FILE_EXTENT_PREALLOC)
		goto bad;
	if (size < sizeof(*fe))
		goto bad;
	e->disk_bytenr = LE64(fe->disk_bytenr);
	e->disk_num_bytes = LE64(fe->disk_num_bytes);
	e->offset = LE64(fe->offset);
	e->len = LE64(fe->num_bytes);
	if (e->len == 0 || e->len % fs->sectorsize || k->offset % fs->sectorsize ||
	    k->offset + e->len < k->offset)
		goto bad;
	if (e->disk_bytenr) {
		if (e->disk_bytenr % fs->sectorsize || !e->disk_num_bytes ||
		    e->disk_num_bytes % fs->sectorsize)
			goto bad;
		uint64_t span = e->compression ? e->ram_bytes : e->disk_num_bytes;
		if (e->offset > span || e->len > span - e->offset)
			goto bad;
		if (e->compression && (e->ram_bytes > REF_COMPRESS_MAX_RAM ||
				       e->disk_num_bytes > REF_COMPRESS_MAX_DISK))
			goto bad;
	}
	return 0;
bad:
	return ref_fail(fs, EUCLEAN, "subvolume %llu inode %llu: bad file extent item at offset %llu",
			(unsigned long long)ino->subvol, (unsigned long long)ino->ino,
			(unsigned long long)k->offset);
}

/* Copies file bytes [from, from+n) of extent e into out. */
static int extent_read(ref_fs *fs, const struct ref_ino *ino, const struct extent *e,
		       bool nodatasum, uint64_t from, uint8_t *out, size_t n)
{
	uint64_t in_ext = from - e->file_off; /* offset inside the extent's file range */
	char err[128];
	if (e->type == BTRFS_FILE_EXTENT_INLINE) {
		if (!e->compression) {
			size_t have = in_ext < e->inline_len ? e->inline_len - in_ext : 0;
			memcpy(out, e->inline_data + in_ext, n < have ? n : have);
			return 0;
		}
		uint8_t *tmp = malloc(fs->sectorsize);
		if (!tmp)
			return ref_fail(fs, ENOMEM, "out of memory");
		ssize_t got = ref_decompress_inline(e->compression, e->inline_data, e->inline_len, tmp,
						    e->ram_bytes, fs->sectorsize, err, sizeof(err));
		if (got >= 0)
			memcpy(out, tmp + in_ext, n);
		free(tmp);
		if (got < 0)
			return ref_fail(fs, EIO, "subvolume %llu inode %llu: inline extent: %s",
					(unsigned long long)ino->subvol, (unsigned long long)ino->ino,
					err);
		return 0;
	}
	if (e->type == BTRFS_FILE_EXTENT_PREALLOC || e->disk_bytenr == 0)
		return 0; /* reads as zeros; out is already zeroed */
	if (!e->compression)
		return data_read(fs, e->disk_bytenr + e->offset + in_ext, out, n, nodatasum);
	/* Compressed: the whole disk extent, checked, then decoded. */
	uint8_t *disk = malloc(e->disk_num_bytes), *ram = malloc(e->ram_bytes);
	int r = disk && ram ? data_read(fs, e->disk_bytenr, disk, e->disk_num_bytes, nodatasum)
			    : ref_fail(fs, ENOMEM, "out of memory");
	if (!r) {
		ssize_t got = ref_decompress(e->compression, disk, e->disk_num_bytes, ram,
					     e->ram_bytes, fs->sectorsize, err, sizeof(err));
		if (got < 0)
			r = ref_fail(fs, EIO, "extent at logical %llu (%s): %s",
				     (unsigned long long)e->disk_bytenr,
				     ref_compress_name(e->compression), err);
		else if (e->offset + in_ext + n > e->ram_bytes)
			r = ref_fail(fs, EIO, "extent at logical %llu (%s): a read of %llu past its %llu bytes",
				     (unsigned long long)e->disk_bytenr,
				     ref_compress_name(e->compression),
				     (unsigned long long)(e->offset + in_ext + n),
				     (unsigned long long)e->ram_bytes);
		else {
			/* A well-formed stream may hold less than ram_bytes: the
			 * kernel compresses only the bytes below the file's size
			 * then (compress_file_range), and its reads zero the rest
			 * (btrfs_decompress_bio's zero_fill_bio), which a later
			 * truncate or write past that size brings into the file. */
			memset(ram + got, 0, e->ram_bytes - (uint64_t)got);
			memcpy(out, ram + e->offset + in_ext, n);
		}
	}
	free(disk);
	free(ram);
	return r;
}

/* The stat of a regular file or symlink about to be read from off: -EISDIR
 * for a directory, 1 when off is at or past the end of the file. */
static int read_begin(ref_fs *fs, const struct ref_ino *ino, uint64_t off, struct ref_stat *st)
{
	int r = ref_stat(fs, ino, st);
	if (r)
		return r;
	if (S_ISDIR(st->mode))
		return ref_fail(fs, EISDIR, "inode %llu is a directory", (unsigned long long)ino->ino);
	return off >= st->size;
}

/* Called for each extent of a walk, in file order: 0 goes on, 1 stops, or -errno. */
typedef int (*extent_fn)(ref_fs *fs, const struct ref_ino *ino, const struct extent *e,
			 void *ctx);

/* The EXTENT_DATA items of ino from off on, checked, in order: the one at or
 * before off, then those that start before *end (which fn may lower). */
static int walk_extents(ref_fs *fs, const struct ref_ino *ino, uint64_t off, const uint64_t *end,
			extent_fn fn, void *ctx)
{
	struct ref_root root;
	int r = ref_find_root(fs, ino->subvol, &root);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key key = { ino->ino, BTRFS_EXTENT_DATA_KEY, off };
	r = ref_search_le(fs, &root, &key, &path);
	if (r == 1)
		r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid > ino->ino || (k.objectid == ino->ino && k.type > BTRFS_EXTENT_DATA_KEY))
			break;
		if (k.objectid == ino->ino && k.type == BTRFS_EXTENT_DATA_KEY) {
			if (k.offset >= *end)
				break;
			struct extent e = { 0 };
			/* The item's data lives in the path's leaf: used before moving on. */
			if ((r = parse_extent(fs, ino, &k, data, size, &e)) ||
			    (r = fn(fs, ino, &e, ctx)))
				break;
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	return r < 0 ? r : 0;
}

struct pread_ctx {
	uint8_t *buf;
	uint64_t off, end;
	bool nodatasum;
};

static int pread_extent(ref_fs *fs, const struct ref_ino *ino, const struct extent *e, void *ctx)
{
	struct pread_ctx *c = ctx;
	uint64_t a = e->file_off > c->off ? e->file_off : c->off;
	uint64_t b = e->file_off + e->len < c->end ? e->file_off + e->len : c->end;
	if (a >= b)
		return 0;
	return extent_read(fs, ino, e, c->nodatasum, a, c->buf + (a - c->off), (size_t)(b - a));
}

ssize_t ref_pread(ref_fs *fs, const struct ref_ino *ino, void *buf, size_t len, uint64_t off)
{
	struct ref_stat st;
	int r = read_begin(fs, ino, off, &st);
	if (r)
		return r < 0 ? r : 0;
	if (len > st.size - off)
		len = (size_t)(st.size - off);
	memset(buf, 0, len); /* holes */
	struct pread_ctx c = { buf, off, off + len, st.flags & BTRFS_INODE_NODATASUM };
	r = walk_extents(fs, ino, off, &c.end, pread_extent, &c);
	return r < 0 ? r : (ssize_t)len;
}

struct data_run {
	uint64_t off, size;
	uint64_t start, end; /* the run found so far */
	bool found;
	uint64_t limit; /* the walk's end: the size, then just past the run (a gap ends it) */
};

static int data_extent(ref_fs *fs, const struct ref_ino *ino, const struct extent *e, void *ctx)
{
	(void)fs;
	(void)ino;
	struct data_run *d = ctx;
	uint64_t a = e->file_off > d->off ? e->file_off : d->off;
	uint64_t b = e->file_off + e->len < d->size ? e->file_off + e->len : d->size;
	bool zeros = e->type == BTRFS_FILE_EXTENT_PREALLOC ||
		     (e->type == BTRFS_FILE_EXTENT_REG && e->disk_bytenr == 0);
	if (a >= b)
		return 0;
	if (zeros)
		return d->found; /* a hole or preallocated extent ends the run */
	if (!d->found)
		d->start = a;
	if (!d->found || b > d->end)
		d->end = b;
	d->found = true;
	d->limit = d->end < UINT64_MAX ? d->end + 1 : d->end;
	return 0;
}

int ref_next_data(ref_fs *fs, const struct ref_ino *ino, uint64_t off, uint64_t *start,
		  uint64_t *end)
{
	struct ref_stat st;
	int r = read_begin(fs, ino, off, &st);
	if (r < 0)
		return r;
	*start = *end = st.size;
	if (r)
		return 0;
	struct data_run d = { off, st.size, st.size, st.size, false, st.size };
	if ((r = walk_extents(fs, ino, off, &d.limit, data_extent, &d)))
		return r;
	if (d.found) {
		*start = d.start;
		*end = d.end;
	}
	return 0;
}
