/*
 * reflink_remap.c - a clone's or dedupe's remap, as fs/btrfs/reflink.c's
 * btrfs_clone: the destination range's extents are dropped (split at its
 * edges), and for each extent of the source range a file extent item is
 * added at the matching offset of the destination, pointing at the same
 * disk extent (its offset into it adjusted, its type and compression kept)
 * with a data back reference of the destination's root, inode and offset.
 * The disk extents and their checksums stay where they are: the csum tree
 * is keyed by disk address.  Holes stay holes (NO_HOLES: no item).
 *
 * The new items carry this transaction's generation, so that an fsync of
 * the destination logs them (ref/log/log_write.c logs the extents of the
 * running transaction; the kernel logs a cloned file's extents whole,
 * last_reflink_trans) and replay adds their references again.
 *
 * An inline source extent (at offset 0, the whole file, a sector at most)
 * is copied as clone_copy_inline_extent copies it: as an inline item when
 * the destination range starts at 0, the destination is no longer than it
 * and has no extent at 0 but an inline one; otherwise its bytes are
 * written to the destination (copy_inline_to_page), where the write path
 * lays them out.  A destination holding an inline extent and receiving
 * extents past it has it made regular first.
 */
#include "ref/reflink/reflink_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The source's extent items over [soff, soff + blen): *v (malloc'd), *n. */
static int source_extents(ref_fs *fs, const struct rl_file *src, uint64_t soff, uint64_t blen,
			  struct fext **v, size_t *n)
{
	size_t cap = 0;
	*v = NULL;
	*n = 0;
	uint64_t pos = soff, end = soff + blen;
	while (pos < end) {
		struct fext e;
		int r = file_extent_from(fs, &src->ino, pos, &e);
		if (r == 1)
			break;
		if (r)
			return r;
		if (e.key.offset >= end)
			break;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct fext *nv = realloc(*v, cap * sizeof(*nv));
			if (!nv)
				return ref_fail(fs, ENOMEM, "out of memory");
			*v = nv;
		}
		(*v)[(*n)++] = e;
		pos = e.end;
	}
	return 0;
}

int rl_items(ref_fs *fs, const struct rl_file *src, uint64_t soff, uint64_t blen, unsigned *items)
{
	struct fext *v;
	size_t n;
	int r = source_extents(fs, src, soff, blen, &v, &n);
	free(v);
	if (r)
		return r;
	/* per extent: its item, a split at each end of the destination range,
	 * its back reference; the inode and a killpriv besides */
	*items = (unsigned)(8 + 3 * (n < 1000000 ? n : 1000000));
	return 0;
}

/* The raw file extent item at (ino, EXTENT_DATA, 0): a copy in buf. */
static int item_at_zero(ref_fs *fs, const struct ref_ino *ino, uint8_t *buf, uint32_t cap,
			uint32_t *size)
{
	struct ref_root root;
	struct ref_path p;
	struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	int r = ref_find_root(fs, ino->subvol, &root);
	if (r || (r = ref_search(fs, &root, &k, &p)))
		return r == 1 ? ref_fail(fs, EUCLEAN, "inline extent vanished") : r;
	const uint8_t *d;
	struct ref_key got;
	ref_path_item(&p, &got, &d, size);
	if (got.objectid != ino->ino || got.type != BTRFS_EXTENT_DATA_KEY || got.offset || *size > cap) {
		ref_path_release(fs, &p);
		return ref_fail(fs, EUCLEAN, "inode %llu: no inline extent item at 0",
				(unsigned long long)ino->ino);
	}
	memcpy(buf, d, *size);
	ref_path_release(fs, &p);
	return 0;
}

/* clone_copy_inline_extent: the source's inline extent e to dst at doff. */
static int copy_inline(ref_fs *fs, struct rl_file *src, const struct fext *e, struct rl_file *dst,
		       uint64_t doff)
{
	uint64_t datal = e->ram_bytes;
	struct fext d;
	int have = file_extent_from(fs, &dst->ino, 0, &d);
	if (have < 0)
		return have;
	/* no extent item at all, or an inline one at 0 (not a regular one there,
	 * nor a hole before the first item) */
	bool inline_at_zero = have == 0 && d.key.offset == 0 && d.type == BTRFS_FILE_EXTENT_INLINE;
	bool as_inline = doff == 0 && LE64(dst->ii.size) <= datal && (have == 1 || inline_at_zero);
	if (!as_inline) { /* copy_inline_to_page: the bytes written there */
		uint8_t *buf = malloc(datal ? datal : 1);
		if (!buf)
			return ref_fail(fs, ENOMEM, "out of memory");
		ssize_t got = ref_pread(fs, &src->ino, buf, datal, 0);
		int r = got < 0 ? (int)got : file_write(fs, &dst->ino, buf, (size_t)got, doff);
		free(buf);
		return r ? r : rl_read(fs, dst);
	}
	uint8_t item[4096];
	uint32_t size;
	struct rw_tree *t;
	uint64_t freed;
	int r = item_at_zero(fs, &src->ino, item, sizeof(item), &size);
	if (!r && size < sizeof(uint64_t))
		r = ref_fail(fs, EUCLEAN, "%s: inline extent item of %u bytes", src->path, size);
	if (!r) { /* this transaction's, for the fsync log */
		uint64_t gen = htole64(fs->rw->transid);
		memcpy(item + offsetof(struct btrfs_file_extent_item, generation), &gen, sizeof(gen));
	}
	if (!r)
		r = rw_tree_get(fs, dst->ino.subvol, &t);
	if (!r)
		r = file_drop_extents(fs, &dst->ino, 0, fs->sectorsize, &freed);
	struct ref_key k = { dst->ino.ino, BTRFS_EXTENT_DATA_KEY, 0 };
	if (!r)
		r = bt_insert_data(fs, t, &k, item, size);
	if (r)
		return r;
	dst->ii.nbytes = htole64(LE64(dst->ii.nbytes) - freed + datal);
	return 0;
}

/* One source extent's part [a, b) of the source placed at doff + (a - soff). */
static int place(ref_fs *fs, struct rw_tree *t, const struct fext *e, uint64_t a, uint64_t b,
		 uint64_t soff, struct rl_file *dst, uint64_t doff)
{
	if (!e->disk_bytenr) /* an explicit hole: the destination keeps its hole */
		return 0;
	struct btrfs_file_extent_item fe;
	memset(&fe, 0, sizeof(fe));
	fe.generation = htole64(fs->rw->transid);
	fe.ram_bytes = htole64(e->ram_bytes);
	fe.compression = e->compression;
	fe.type = e->type;
	fe.disk_bytenr = htole64(e->disk_bytenr);
	fe.disk_num_bytes = htole64(e->disk_num_bytes);
	fe.offset = htole64(e->offset + (a - e->key.offset));
	fe.num_bytes = htole64(b - a);
	uint64_t at = doff + (a - soff);
	struct ref_key k = { dst->ino.ino, BTRFS_EXTENT_DATA_KEY, at };
	int r = file_insert_extent(fs, t, &k, &fe);
	if (!r)
		r = dref_data(fs, e->disk_bytenr, e->disk_num_bytes, dst->ino.subvol, dst->ino.ino,
			      at - LE64(fe.offset), +1, false);
	if (!r)
		dst->ii.nbytes = htole64(LE64(dst->ii.nbytes) + (b - a));
	return r;
}

int rl_remap(ref_fs *fs, struct rl_file *src, uint64_t soff, struct rl_file *dst, uint64_t doff,
	     uint64_t len, uint64_t blen, bool dedupe)
{
	struct fext *v;
	size_t n;
	struct rw_tree *t;
	int r = source_extents(fs, src, soff, blen, &v, &n);
	if (!r)
		r = rw_tree_get(fs, dst->ino.subvol, &t);
	bool inl = !r && n && v[0].type == BTRFS_FILE_EXTENT_INLINE;
	if (inl) {
		/* a dedupe of an inline file shares nothing (its bytes are
		 * equal: the kernel's copy leaves them as they are) */
		if (!dedupe)
			r = copy_inline(fs, src, &v[0], dst, doff);
		n = 0;
	} else if (!r && doff > 0) {
		struct fext d;
		int have = file_extent_from(fs, &dst->ino, 0, &d);
		if (have < 0)
			r = have;
		else if (have == 0 && d.type == BTRFS_FILE_EXTENT_INLINE)
			r = file_uninline(fs, &dst->ino, &dst->ii);
	}
	if (!r && !inl) { /* (a range the source has no extent in becomes a hole) */
		uint64_t freed;
		if (!(r = file_drop_extents(fs, &dst->ino, doff, doff + blen, &freed)))
			dst->ii.nbytes = htole64(LE64(dst->ii.nbytes) - freed);
	}
	for (size_t i = 0; i < n && !r; i++) {
		uint64_t a = v[i].key.offset > soff ? v[i].key.offset : soff;
		uint64_t b = v[i].end < soff + blen ? v[i].end : soff + blen;
		if (a < b)
			r = place(fs, t, &v[i], a, b, soff, dst, doff);
	}
	free(v);
	if (r)
		return r;
	if (LE64(dst->ii.size) < doff + len)
		dst->ii.size = htole64(doff + len);
	if (!dedupe)
		inode_touch(fs, &dst->ii, true, true);
	return inode_write(fs, &dst->ino, &dst->ii);
}
