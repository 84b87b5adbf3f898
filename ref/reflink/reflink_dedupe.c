/*
 * reflink_dedupe.c - FIDEDUPERANGE as Linux 6.18 gives it on btrfs
 * (ref_dedupe_range; ref/vfs.h).  The call fails whole for more than 127
 * destinations (ENOMEM: they must fit a page), a source that is a
 * directory (EISDIR) or no regular file (EINVAL), or a range past 2^63 or
 * past the source's end (EINVAL); the length is cut to 1 GiB.  Then each
 * destination gets its own status: a failed lookup's errno, EROFS on a
 * read-only mount, EISDIR, EINVAL, EPERM as a clone's checks give them
 * (reflink_checks.c, with the dedupe rules: both ranges inside their files,
 * a tail past whole blocks shared only where both files end, else rounded
 * down), REF_DEDUPE_DIFFERS when the bytes differ, else 0 once the range
 * is shared in pieces of 16 MiB (BTRFS_MAX_DEDUPE_LEN), each its own
 * transaction.  The bytes are compared and shared in one call of ref,
 * which nothing else runs beside (the kernel's lock of both files).  A
 * dedupe changes no time, keeps capabilities, and works into a read-only
 * snapshot as the kernel's does; bytes_deduped is the length asked for
 * (after the 1 GiB cut) even where the range was shortened, as the kernel
 * reports it.  An inline source extent is left as it is (its bytes are
 * equal; the kernel's copy of it would rewrite the same bytes).
 */
#include "ref/mutant.h"
#include "ref/reflink/reflink_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DESTS 127			/* (PAGE_SIZE - 24) / 32 */
#define MAX_LEN (UINT64_C(1) << 30)	/* vfs_dedupe_file_range's cap */
#define PIECE (UINT64_C(16) << 20)	/* BTRFS_MAX_DEDUPE_LEN */
#define CMP_CHUNK ((size_t)64 << 10) /* below malloc's mmap threshold: reused, not faulted anew */

/* Two buffers of CMP_CHUNK bytes, made once per call: allocating them per
 * destination cost a third of an offline dedupe's time (fresh pages). */
struct cmp_bufs {
	uint8_t *a, *b;
};

/* Whether [soff, +len) of src and [doff, +len) of dst hold the same bytes:
 * 1 equal, 0 not, or -errno. */
static int same_bytes(ref_fs *fs, const struct rl_file *s, uint64_t soff, const struct rl_file *d,
		      uint64_t doff, uint64_t len, const struct cmp_bufs *cb)
{
	uint8_t *a = cb->a, *b = cb->b;
	int r = 1;
	for (uint64_t at = 0; r == 1 && at < len;) {
		size_t n = len - at < CMP_CHUNK ? (size_t)(len - at) : CMP_CHUNK;
		ssize_t x = ref_pread(fs, &s->ino, a, n, soff + at);
		ssize_t y = x < 0 ? x : ref_pread(fs, &d->ino, b, n, doff + at);
		if (x < 0 || y < 0)
			r = (int)(x < 0 ? x : y);
		else if ((size_t)x != n || (size_t)y != n || memcmp(a, b, n))
			r = 0;
		at += n;
	}
	return r;
}

/* One destination: its status (0, REF_DEDUPE_DIFFERS or -errno). */
static int one(ref_fs *fs, struct rl_file *s, uint64_t soff, uint64_t len,
	       struct ref_dedupe_dest *dd, const struct cmp_bufs *cb)
{
	struct rl_file d = { .path = dd->path };
	int r = vfs_resolve(fs, d.path, true, &d.ino);
	if (r || (r = rl_read(fs, &d)) || (r = rl_verify_area(fs, &d, dd->offset, len)) ||
	    (r = rw_check_writable(fs)))
		return r;
	uint32_t mode = inode_mode(&d.ii);
	if (S_ISDIR(mode))
		return ref_fail(fs, EISDIR, "%s: is a directory", d.path);
	if (!S_ISREG(mode))
		return ref_fail(fs, EINVAL, "%s: not a regular file", d.path);
	if (len == 0)
		return 0;
	uint64_t blen;
	if ((r = rl_flags_check(fs, s, &d)) ||
	    (r = rl_range_checks(fs, s, soff, &d, dd->offset, &len, &blen, true)))
		return r;
	if (!MUTANT(DEDUPE_NO_COMPARE) && (r = same_bytes(fs, s, soff, &d, dd->offset, len, cb)) <= 0)
		return r == 0 ? REF_DEDUPE_DIFFERS : r;
	r = 0;
	for (uint64_t at = 0; at < blen && !r;) {
		uint64_t pb = blen - at < PIECE ? blen - at : PIECE;
		uint64_t pl = len - at < pb ? len - at : pb;
		unsigned items;
		struct rl_file piece = d;
		struct rw_tree *t;
		if (!(r = vfs_begin(fs, 8, false)) && !(r = rl_read(fs, &piece)) &&
		    !(r = rl_items(fs, s, soff + at, pb, &items)) &&
		    !(r = vfs_reserve(fs, items, false)) && !(r = rw_tree_get(fs, d.ino.subvol, &t))) {
			/* the kernel's dedupe shares into a read-only snapshot too:
			 * its bytes stay what they are */
			bool ro = t->rdonly;
			t->rdonly = false;
			r = rl_remap(fs, s, soff + at, &piece, dd->offset + at, pl, pb, true);
			t->rdonly = ro;
		}
		r = vfs_end(fs, r);
		at += pb;
	}
	return r;
}

int ref_dedupe_range(ref_fs *fs, const char *src, uint64_t off, uint64_t len,
		     struct ref_dedupe_dest *dest, size_t n)
{
	struct rl_file s = { .path = src };
	if (n > MAX_DESTS)
		return ref_fail(fs, ENOMEM, "%zu destinations: at most %d fit the call", n, MAX_DESTS);
	int r = vfs_resolve(fs, src, true, &s.ino);
	if (r || (r = rl_read(fs, &s)))
		return r;
	uint32_t mode = inode_mode(&s.ii);
	if (S_ISDIR(mode))
		return ref_fail(fs, EISDIR, "%s: is a directory", src);
	if (!S_ISREG(mode))
		return ref_fail(fs, EINVAL, "%s: not a regular file", src);
	if ((r = rl_verify_area(fs, &s, off, len)))
		return r;
	if (off + len > LE64(s.ii.size))
		return ref_fail(fs, EINVAL, "%s: the range [%llu, +%llu) passes its end (%llu)", src,
				(unsigned long long)off, (unsigned long long)len,
				(unsigned long long)LE64(s.ii.size));
	if (len > MAX_LEN)
		len = MAX_LEN;
	for (size_t i = 0; i < n; i++) {
		dest[i].status = 0;
		dest[i].bytes_deduped = 0;
	}
	struct cmp_bufs cb = { malloc(CMP_CHUNK), malloc(CMP_CHUNK) };
	if (!cb.a || !cb.b) {
		free(cb.a);
		free(cb.b);
		return ref_fail(fs, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		dest[i].status = one(fs, &s, off, len, &dest[i], &cb);
		if (dest[i].status == 0)
			dest[i].bytes_deduped = len;
	}
	free(cb.a);
	free(cb.b);
	return 0;
}
