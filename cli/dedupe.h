/*
 * dedupe.h - what the parts of `btrsim dedupe` share (cmd-dedupe.c): the
 * files found under the PATHs and the hashes of their blocks
 * (dedupe_scan.c), and the hash file that keeps those hashes between runs
 * (dedupe_hashfile.c).
 */
#ifndef BTRSIM_CLI_DEDUPE_H
#define BTRSIM_CLI_DEDUPE_H

#include "cli/cli.h"
#include "ref/ref.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DD_HASH_MAX 32 /* a digest's bytes: sha256's; xxhash's are the first 8 */

enum dd_hash { DD_XXHASH, DD_SHA256 };
const char *dd_hash_name(enum dd_hash h);
size_t dd_hash_len(enum dd_hash h);

/* Where a piece of a file's data lies: [start, end) of the file refers to
 * the disk extent at bytenr from byte eoff of its data on (bytenr 0: a hole,
 * or nothing but zeros read from a preallocated extent). */
struct dd_ext {
	uint64_t start, end, bytenr, eoff;
};

/* A regular file under the PATHs, once per inode (hard links: the first name). */
struct dd_file {
	char *path;
	struct ref_ino ino;
	struct ref_stat st;
	size_t first, nblocks; /* its blocks: s->b[first .. first + nblocks), by offset */
	struct dd_ext *ext;    /* its extent items, by offset */
	size_t next, capext;
	bool cached; /* its hashes came from the hash file */
};

/* One block hashed: BLOCKSIZE bytes, or fewer for the file's last one
 * (its length is part of what must match). */
struct dd_block {
	uint32_t file;
	uint32_t len;
	uint64_t off;
	uint8_t h[DD_HASH_MAX];
};

struct dd_hashfile;

struct dd_scan {
	const struct cli_cmd *cmd;
	ref_fs *fs;
	uint32_t bs;
	enum dd_hash hash;
	bool recursive;
	struct dd_hashfile *hf; /* NULL without --hashfile */
	struct dd_file *f;
	size_t nf, capf;
	struct dd_block *b;
	size_t nb, capb;
	struct { uint64_t subvol, ino; } *seen; /* open addressing over (subvol, ino) */
	size_t seencap;
	uint64_t nread, ncached; /* files read and hashed / taken from the hash file */
	unsigned errors;         /* operands or files that failed, said on stderr */
	bool fatal;              /* no memory or no readable file system: stop */
	uint8_t *buf;            /* one block */
};

/* Adds the regular files PATH names (all below it with s->recursive): each
 * hashed, or its hashes taken from the hash file when it has not changed.
 * Failures are said on stderr and counted in s->errors; 0, or -1 when the
 * scan cannot go on (s->fatal). */
int dd_scan_path(struct dd_scan *s, const char *path);
void dd_scan_free(struct dd_scan *s);

/* Where byte off of f lies: the disk extent (0 in a hole) and *at, the
 * byte of its data. */
uint64_t dd_placement(const struct dd_file *f, uint64_t off, uint64_t *at);

/* Whether [aoff, +len) of a and [boff, +len) of b already refer to the same
 * bytes on disk (the same extents at the same places in them; holes on
 * both sides count as the same). */
bool dd_shared(const struct dd_file *a, uint64_t aoff, const struct dd_file *b, uint64_t boff,
	       uint64_t len);

/* The bytes used in the file system's data block groups (mixed ones too),
 * as their block group items say (what `btrfs filesystem df` shows as
 * Data used).  0 or -errno. */
int dd_data_used(ref_fs *fs, uint64_t *used);

/*
 * The hash file (--hashfile FILE, an SQLite database): per file (subvolume,
 * inode) its generation, transid, size, mtime and ctime and the hashes of
 * its blocks.  dd_hf_open makes a new one or opens one made with the same
 * block size, hash and file system, refusing any other, and anything that
 * is not such a database: 0, or -1 with the reason in err.
 */
int dd_hf_open(const char *path, uint32_t bs, enum dd_hash hash, const uint8_t fsid[16],
	       struct dd_hashfile **out, char *err, size_t errlen);
/* The hashes of f (s->f[i]) when the hash file holds them for the same
 * inode unchanged (generation, size, mtime and ctime the same): appended to
 * s->b; 1 then, 0 when it has none, -1 with the reason in err. */
int dd_hf_load(struct dd_hashfile *hf, struct dd_scan *s, size_t i, char *err, size_t errlen);
/* Stores the files of s that were read (not cached), replacing what the
 * hash file held for them, in one transaction.  0 or -1 with err. */
int dd_hf_save(struct dd_hashfile *hf, const struct dd_scan *s, char *err, size_t errlen);
void dd_hf_close(struct dd_hashfile *hf);

#endif
