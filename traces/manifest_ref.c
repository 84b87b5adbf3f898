/*
 * manifest_ref.c - the image side of the manifest: a tree as ref/ reads it
 * (ref_stat, ref_dentries_read, ref_next_data, ref_pread, ref_readlink,
 * ref_listxattr), object by object into the formatter (manifest.c).
 */
#include "traces/manifest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHUNK (1u << 20)
#define MAX_DEPTH 4096


struct rwalk {
	ref_fs *fs;
	struct manifest *m;
	unsigned char *buf; /* grown as files need, up to CHUNK: most are small, and a
			     * large allocation costs fresh pages each walk */
	size_t cap;
	struct mf_xattrs xs;
	char *err;
	size_t errlen;
};

/* Says why PATH failed ("PATH: why" in the caller's buffer); returns 1. */
static int rfail_(struct rwalk *w, const char *path, const char *why)
{
	snprintf(w->err, w->errlen, "%s: %s", path, why);
	return 1;
}
#define rfail(path, why) rfail_(w, path, why)

static int add_xattr(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	return mf_xattr_add(ctx, name, nlen, value, vlen);
}

/* The content digest (manifest_hash.c) of a regular file.  What is not data
 * (holes, preallocated extents: ref_next_data) is fed as zeros without being
 * read, so a file of 2^63 bytes with one byte written costs what its extents
 * cost; the digest is the same as for every byte read, since zeros read and
 * zeros fed hash alike.  The last MiB, and files that small, are read whole. */
static int hash_into(struct rwalk *w, const struct ref_ino *ino, uint64_t size, const char *path,
		     struct mf_hash *h)
{
	uint64_t data_end = 0; /* [off, data_end) is to be read */
	for (uint64_t off = 0; off < size;) {
		if (off >= data_end) {
			uint64_t start;
			if (size - off <= CHUNK) {
				data_end = size;
			} else if (ref_next_data(w->fs, ino, off, &start, &data_end)) {
				return rfail(path, ref_error(w->fs));
			} else if (start < off || data_end > size ||
				   (start < size ? data_end <= start : data_end != size)) {
				return rfail(path, "the extents do not add up"); /* cannot happen */
			} else {
				mf_hash_zeros(h, start - off);
				off = start;
				continue;
			}
		}
		size_t want = data_end - off < CHUNK ? (size_t)(data_end - off) : CHUNK;
		if (want > w->cap) {
			unsigned char *nb = realloc(w->buf, want);
			if (!nb)
				return rfail(path, strerror(ENOMEM));
			w->buf = nb;
			w->cap = want;
		}
		ssize_t n = ref_pread(w->fs, ino, w->buf, want, off);
		if (n < 0)
			return rfail(path, ref_error(w->fs));
		if (n == 0)
			return rfail(path, "the data ends before the file's size");
		mf_hash_data(h, w->buf, (size_t)n);
		off += (uint64_t)n;
	}
	return 0;
}

static int hash_file(struct rwalk *w, const struct ref_ino *ino, uint64_t size, const char *path,
		     unsigned char out[crypto_hash_sha256_BYTES])
{
	struct mf_hash h;
	mf_hash_init(&h);
	int r = hash_into(w, ino, size, path, &h);
	if (r)
		mf_hash_drop(&h);
	else
		mf_hash_final(&h, out);
	return r;
}

static int rwalk_dir(struct rwalk *w, const struct ref_ino *dir, const char *path, int depth);

/* Describes the object at path (an entry of dir; the start is its own), then
 * what is below it. */
static int rwalk_one(struct rwalk *w, const struct ref_ino *dir, const struct ref_ino *ino,
		     const char *path, int depth)
{
	struct ref_stat st;
	if (ref_stat_in(w->fs, dir, ino, &st))
		return rfail(path, ref_error(w->fs));
	unsigned char sha[crypto_hash_sha256_BYTES];
	char *target = NULL;
	struct mf_object o = {
		.path = path, .mode = st.mode, .uid = st.uid, .gid = st.gid, .nlink = st.nlink,
		.size = st.size, .ino = ino->ino, .mtime = st.mtime, .xattrs = &w->xs,
		/* The kernel's dev_t, as the kernel stores it: 12 bits major, 20 minor. */
		.rdev_major = (uint32_t)(st.rdev >> 20), .rdev_minor = (uint32_t)(st.rdev & 0xfffff),
	};
	int rc = 0;
	if (S_ISREG(st.mode)) {
		if ((rc = hash_file(w, ino, st.size, path, sha)))
			return rc;
		o.sha256 = sha;
	} else if (S_ISLNK(st.mode)) {
		if (st.size > CHUNK)
			return rfail(path, "symlink target too long");
		target = malloc((size_t)st.size + 1);
		if (!target)
			return rfail(path, strerror(ENOMEM));
		ssize_t n = ref_readlink(w->fs, ino, target, (size_t)st.size + 1);
		if (n < 0) {
			free(target);
			return rfail(path, ref_error(w->fs));
		}
		o.target = target;
		o.target_len = (size_t)n;
	}
	mf_xattrs_clear(&w->xs);
	int r = ref_listxattr(w->fs, ino, add_xattr, &w->xs);
	if (r)
		rc = rfail(path, r == -ENOMEM ? strerror(ENOMEM) : ref_error(w->fs));
	else if (mf_add(w->m, &o))
		rc = rfail(path, strerror(ENOMEM));
	free(target);
	if (rc || !S_ISDIR(st.mode))
		return rc;
	if (depth >= MAX_DEPTH)
		return rfail(path, "directories nested too deep");
	if ((r = mf_enter(w->m, ino->subvol, ino->ino)))
		return rfail(path, mf_enter_error(r));
	rc = rwalk_dir(w, ino, path, depth + 1);
	mf_leave(w->m, ino->subvol, ino->ino);
	return rc;
}

static int rwalk_dir(struct rwalk *w, const struct ref_ino *dir, const char *path, int depth)
{
	struct ref_dentries ch;
	int rc = 0;
	int r = ref_dentries_read(w->fs, dir, &ch);
	if (r)
		rc = rfail(path, r == -ENOMEM ? strerror(ENOMEM) : ref_error(w->fs));
	for (size_t i = 0; i < ch.n && !rc; i++) {
		char *sub = mf_path_join(path, ch.e[i].name, ch.e[i].len);
		rc = sub ? rwalk_one(w, dir, &ch.e[i].ino, sub, depth) : rfail(path, strerror(ENOMEM));
		free(sub);
	}
	ref_dentries_free(&ch);
	return rc;
}


int mf_walk_ref(struct manifest *m, ref_fs *fs, const struct ref_ino *start, char *err,
		size_t errlen)
{
	struct rwalk w = { .fs = fs, .m = m, .err = err, .errlen = errlen };
	int rc = rwalk_one(&w, start, start, "/", 0);
	mf_xattrs_clear(&w.xs);
	free(w.xs.x);
	free(w.buf);
	return rc;
}
