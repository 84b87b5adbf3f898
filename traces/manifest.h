/*
 * manifest.h - the canonical description of a file-system tree that
 * `btrsim manifest` prints and the crash oracle compares: walkers of an image
 * (ref/'s read API, manifest_ref.c) and of a host directory (POSIX calls,
 * traces/manifest_host.c) hand each object to mf_add, so the same code formats
 * every side and `diff` of the outputs compares the views.
 */
#ifndef BTRSIM_TRACES_MANIFEST_H
#define BTRSIM_TRACES_MANIFEST_H

#include "ref/ref.h"

#include "traces/sha256.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* The content digest (manifest_hash.c): sha256 over the non-zero 4 KiB
 * blocks with their offsets, then the size. */
#define MF_BLOCK 4096u
struct mf_hash {
	dg_sha256 st;
	uint64_t pos;
	unsigned char block[MF_BLOCK];
	/* What sha256 is to take, kept while small (manifest_hash.c: the
	 * digests of streams seen before are found by their XXH3 instead). */
	unsigned char *buf;
	size_t len, cap;
	bool streaming; /* too large to keep: fed to sha256 as it comes */
};
void mf_hash_init(struct mf_hash *h);
void mf_hash_data(struct mf_hash *h, const unsigned char *p, size_t n);
void mf_hash_zeros(struct mf_hash *h, uint64_t n); /* a hole: n zero bytes, not read */
void mf_hash_final(struct mf_hash *h, unsigned char out[crypto_hash_sha256_BYTES]);
/* A hash given up (an error before mf_hash_final). */
void mf_hash_drop(struct mf_hash *h);

/* An xattr of the object being described (name and value raw bytes). */
struct mf_xattr {
	char *name;
	size_t nlen;
	unsigned char *value;
	size_t vlen;
};

struct mf_xattrs {
	struct mf_xattr *x;
	size_t n, cap;
};

/* One object, as either walker sees it. */
struct mf_object {
	const char *path; /* escaped, from mf_path_join ("/" for the root) */
	uint32_t mode;    /* type and permission bits */
	uint32_t uid, gid;
	uint64_t nlink, size, ino;
	uint32_t rdev_major, rdev_minor;   /* character and block devices */
	struct timespec mtime;
	const unsigned char *sha256;       /* regular files: 32 bytes */
	const char *target;                /* symlinks: the target, raw */
	size_t target_len;
	const struct mf_xattrs *xattrs;    /* any order; may be NULL */
};

/* A directory met on the walk: (subvolume, inode) or (st_dev, st_ino). */
struct mf_dir {
	uint64_t a, b;
	uint32_t visits;
	bool used, open; /* open: being walked (an ancestor of where the walk is) */
};

/* How many times one directory may be walked.  ref shows a subvolume's tree
 * again under each stale entry of a snapshot, and the kernel every such entry
 * as the same empty directory; anything beyond is a damaged image. */
#define MF_MAX_VISITS 1024

struct manifest {
	bool ino, times; /* the optional fields */
	char **lines;
	size_t n, cap;
	struct mf_dir *dirs;
	size_t ndirs, dirs_cap;
};

/* The escaped path of NAME (raw bytes) in the directory with escaped path
 * PARENT; malloc'd, NULL when out of memory. */
char *mf_path_join(const char *parent, const char *name, size_t len);
/* Formats o as a line and keeps it; 0 or -ENOMEM. */
int mf_add(struct manifest *m, const struct mf_object *o);
/* Before walking directory (a, b): 0; -ELOOP when it is being walked already
 * (it is its own ancestor), -EMLINK when walked MF_MAX_VISITS times, -ENOMEM.
 * After 0, mf_leave when done with it. */
int mf_enter(struct manifest *m, uint64_t a, uint64_t b);
void mf_leave(struct manifest *m, uint64_t a, uint64_t b);
/* What an error of mf_enter means, for the user. */
const char *mf_enter_error(int r);
/* Sorts the lines by path and writes them; 0, or -errno when writing failed. */
int mf_print(struct manifest *m, FILE *out);
void mf_free(struct manifest *m);

int mf_xattr_add(struct mf_xattrs *xs, const char *name, size_t nlen, const void *value,
		 size_t vlen);
void mf_xattrs_clear(struct mf_xattrs *xs);

/* The image walker (manifest_ref.c): the tree below start as ref/ reads it;
 * 0, or 1 with "PATH: why" in err. */
int mf_walk_ref(struct manifest *m, ref_fs *fs, const struct ref_ino *start, char *err,
		size_t errlen);

/* The host walker (manifest_host.c): the tree below directory dir as the
 * kernel shows it, other file systems listed but not entered; with subvols,
 * also model_describe_subvols's lines for it (malloc'd).  0, or -errno with
 * "DIR/PATH: why" in err. */
int mf_walk_host(struct manifest *m, const char *dir, char **subvols, char *err, size_t errlen);

#endif
