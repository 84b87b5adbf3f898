/*
 * dedupe_scan.c - the files `btrsim dedupe` looks at and the hashes of their
 * blocks (dedupe.h): PATHs walked from the top-level subvolume (directories
 * with -r, into other subvolumes and read-only snapshots too; symlinks and
 * special files left alone), each regular file once per inode, its extent
 * items kept to tell a range already shared, its data blocks hashed (blocks
 * holding only holes or preallocated space are not: there is nothing there
 * to free), or taken from the hash file when the file has not changed.
 */
#include "cli/dedupe.h"
#include "cli/extents.h"
#include "cli/fsops.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#define MAX_DEPTH 4096
#define INLINE_FILE 1 /* the file's data is inline in its leaf: nothing to share */

const char *dd_hash_name(enum dd_hash h)
{
	return h == DD_SHA256 ? "sha256" : "xxhash";
}

size_t dd_hash_len(enum dd_hash h)
{
	return h == DD_SHA256 ? crypto_hash_sha256_BYTES : sizeof(XXH64_canonical_t);
}

/* ---- Inodes seen (hard links are one file) ---- */

static size_t seen_slot(uint64_t subvol, uint64_t ino, size_t cap)
{
	uint64_t x = subvol * UINT64_C(0x9e3779b97f4a7c15) ^ ino;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

/* 1 when ino is new (and now in), 0 when it was in, -ENOMEM. */
static int seen_add(struct dd_scan *s, const struct ref_ino *ino)
{
	if ((s->nf + 1) * 2 > s->seencap) {
		size_t cap = s->seencap ? s->seencap * 2 : 1024;
		__typeof__(s->seen) t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < s->seencap; i++) {
			if (!s->seen[i].ino)
				continue;
			size_t j = seen_slot(s->seen[i].subvol, s->seen[i].ino, cap);
			while (t[j].ino)
				j = (j + 1) & (cap - 1);
			t[j] = s->seen[i];
		}
		free(s->seen);
		s->seen = t;
		s->seencap = cap;
	}
	size_t j = seen_slot(ino->subvol, ino->ino, s->seencap);
	for (; s->seen[j].ino; j = (j + 1) & (s->seencap - 1))
		if (s->seen[j].subvol == ino->subvol && s->seen[j].ino == ino->ino)
			return 0;
	s->seen[j].subvol = ino->subvol;
	s->seen[j].ino = ino->ino;
	return 1;
}

/* ---- Extents ---- */

static int add_extent(void *ctx, const struct cli_fext *e)
{
	struct dd_file *f = ctx;
	if (e->type == BTRFS_FILE_EXTENT_INLINE)
		return INLINE_FILE;
	if (!e->disk_bytenr) /* a hole */
		return 0;
	if (f->next == f->capext) {
		size_t cap = f->capext ? f->capext * 2 : 8;
		struct dd_ext *v = realloc(f->ext, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->ext = v;
		f->capext = cap;
	}
	f->ext[f->next++] = (struct dd_ext){ e->file_off, e->file_off + e->num_bytes,
					     e->disk_bytenr, e->offset };
	return 0;
}

/* The extent covering off (NULL in a hole); *run: the bytes from off on that
 * it (or the hole) still covers. */
static const struct dd_ext *ext_at(const struct dd_file *f, uint64_t off, uint64_t *run)
{
	size_t lo = 0, hi = f->next; /* the first extent starting after off */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->ext[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && off < f->ext[lo - 1].end) {
		*run = f->ext[lo - 1].end - off;
		return &f->ext[lo - 1];
	}
	*run = lo < f->next ? f->ext[lo].start - off : UINT64_MAX - off;
	return NULL;
}

uint64_t dd_placement(const struct dd_file *f, uint64_t off, uint64_t *at)
{
	uint64_t run;
	const struct dd_ext *e = ext_at(f, off, &run);
	*at = e ? e->eoff + (off - e->start) : 0;
	return e ? e->bytenr : 0;
}

bool dd_shared(const struct dd_file *a, uint64_t aoff, const struct dd_file *b, uint64_t boff,
	       uint64_t len)
{
	for (uint64_t at = 0; at < len;) {
		uint64_t ra, rb;
		const struct dd_ext *ea = ext_at(a, aoff + at, &ra), *eb = ext_at(b, boff + at, &rb);
		if (!ea != !eb)
			return false;
		if (ea && (ea->bytenr != eb->bytenr ||
			   ea->eoff + (aoff + at - ea->start) != eb->eoff + (boff + at - eb->start)))
			return false;
		at += ra < rb ? ra : rb;
	}
	return true;
}

/* ---- Hashing ---- */

static void hash_block(enum dd_hash h, const uint8_t *p, size_t len, uint8_t out[DD_HASH_MAX])
{
	memset(out, 0, DD_HASH_MAX);
	if (h == DD_SHA256) {
		crypto_hash_sha256(out, p, len);
	} else {
		XXH64_canonical_t c;
		XXH64_canonicalFromHash(&c, XXH3_64bits(p, len));
		memcpy(out, &c, sizeof(c));
	}
}

static struct dd_block *new_block(struct dd_scan *s)
{
	if (s->nb == s->capb) {
		size_t cap = s->capb ? s->capb * 2 : 1024;
		struct dd_block *v = realloc(s->b, cap * sizeof(*v));
		if (!v)
			return NULL;
		s->b = v;
		s->capb = cap;
	}
	return &s->b[s->nb++];
}

/* Reads and hashes the blocks of f that hold data (ref_next_data's runs). */
static int read_file(struct dd_scan *s, struct dd_file *f)
{
	uint64_t size = f->st.size, done = 0; /* blocks before done are hashed */
	while (done < size) {
		uint64_t a, e;
		int r = ref_next_data(s->fs, &f->ino, done, &a, &e);
		if (r)
			return r;
		if (a >= size || e <= a)
			break;
		for (uint64_t off = a - a % s->bs; off < e; off += s->bs) {
			size_t len = size - off < s->bs ? (size_t)(size - off) : s->bs;
			for (size_t got = 0; got < len;) {
				ssize_t n = ref_pread(s->fs, &f->ino, s->buf + got, len - got, off + got);
				if (n < 0)
					return (int)n;
				if (!n) /* cut short under us: cannot be, but never loop */
					return -EIO;
				got += (size_t)n;
			}
			struct dd_block *b = new_block(s);
			if (!b)
				return -ENOMEM;
			*b = (struct dd_block){ .file = (uint32_t)(f - s->f), .len = (uint32_t)len,
						.off = off };
			hash_block(s->hash, s->buf, len, b->h);
			f->nblocks++;
			done = off + len;
		}
	}
	return 0;
}

/* ---- Files ---- */

static void drop_last_file(struct dd_scan *s)
{
	struct dd_file *f = &s->f[--s->nf];
	s->nb = f->first;
	free(f->path);
	free(f->ext);
}

/* A failure with one file: said and counted; -1 when it ends the scan. */
static int file_failed(struct dd_scan *s, const char *path, int r, const char *detail)
{
	cli_path_fail(s->cmd, path, r, detail);
	s->errors++;
	if (r == -ENOMEM)
		s->fatal = true;
	return s->fatal ? -1 : 0;
}

static int one_file(struct dd_scan *s, const char *path, const struct ref_ino *ino,
		    const struct ref_stat *st)
{
	int r = seen_add(s, ino);
	if (r <= 0)
		return r ? file_failed(s, path, r, NULL) : 0;
	if (s->nf == s->capf) {
		size_t cap = s->capf ? s->capf * 2 : 64;
		struct dd_file *v = realloc(s->f, cap * sizeof(*v));
		if (!v)
			return file_failed(s, path, -ENOMEM, NULL);
		s->f = v;
		s->capf = cap;
	}
	struct dd_file *f = &s->f[s->nf++];
	*f = (struct dd_file){ .path = strdup(path), .ino = *ino, .st = *st, .first = s->nb };
	if (!f->path) {
		s->nf--;
		return file_failed(s, path, -ENOMEM, NULL);
	}
	char err[320];
	r = cli_file_extents(s->fs, ino, add_extent, f, err, sizeof(err));
	if (r == INLINE_FILE || (!r && !f->next)) { /* inline, empty or all holes */
		drop_last_file(s);
		return 0;
	}
	if (r) {
		drop_last_file(s);
		return file_failed(s, path, r, *err ? err : NULL);
	}
	if (s->hf) {
		r = dd_hf_load(s->hf, s, s->nf - 1, err, sizeof(err));
		if (r < 0) {
			drop_last_file(s);
			s->fatal = true;
			cli_fail(s->cmd, "%s", err);
			return -1;
		}
		if (r == 1) {
			s->f[s->nf - 1].cached = true;
			s->ncached++;
			return 0;
		}
	}
	if ((r = read_file(s, &s->f[s->nf - 1]))) {
		drop_last_file(s);
		return file_failed(s, path, r, r == -ENOMEM ? NULL : ref_error(s->fs));
	}
	s->nread++;
	return 0;
}

static char *join(const char *dir, const char *name)
{
	char *p;
	size_t dl = strlen(dir);
	if (asprintf(&p, dl && dir[dl - 1] == '/' ? "%s%s" : "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* Directories in DIR_INDEX order, depth first: regular files hashed,
 * directories (subvolumes too) entered, anything else left alone. */
static int walk_dir(struct dd_scan *s, const char *path, const struct ref_ino *dir, int depth)
{
	if (depth >= MAX_DEPTH)
		return file_failed(s, path, -ELOOP, "directories nested too deep");
	struct ref_dentries l;
	int r = ref_dentries_read(s->fs, dir, &l);
	if (r) {
		ref_dentries_free(&l);
		return file_failed(s, path, r, r == -ENOMEM ? NULL : ref_error(s->fs));
	}
	int rc = 0;
	for (size_t i = 0; i < l.n && !rc; i++) {
		const struct ref_dentry *e = &l.e[i];
		char *sub = join(path, e->name);
		if (!sub) {
			rc = file_failed(s, path, -ENOMEM, NULL);
			break;
		}
		struct ref_stat st;
		if ((r = ref_stat_in(s->fs, dir, &e->ino, &st)))
			rc = file_failed(s, sub, r, r == -ENOMEM ? NULL : ref_error(s->fs));
		else if (S_ISDIR(st.mode))
			rc = walk_dir(s, sub, &e->ino, depth + 1);
		else if (S_ISREG(st.mode))
			rc = one_file(s, sub, &e->ino, &st);
		free(sub);
	}
	ref_dentries_free(&l);
	return rc;
}

int dd_scan_path(struct dd_scan *s, const char *path)
{
	if (!s->buf && !(s->buf = malloc(s->bs)))
		return file_failed(s, path, -ENOMEM, NULL);
	struct ref_ino ino;
	struct ref_stat st;
	const char *detail;
	/* the last component is not followed: a symlink is no file to dedupe */
	int r = cli_path_walk(s->fs, path, false, &ino, &st, &detail);
	if (r) {
		cli_path_fail(s->cmd, path, r, detail);
		s->errors++;
		if (detail || r == -ENOMEM) /* the image cannot be read: stop */
			s->fatal = true;
		return s->fatal ? -1 : 0;
	}
	if (S_ISDIR(st.mode) && !s->recursive) {
		cli_fail(s->cmd, "%s: omitting directory, -r not given", path);
		s->errors++;
		return 0;
	}
	if (S_ISDIR(st.mode))
		return walk_dir(s, path, &ino, 0);
	if (!S_ISREG(st.mode)) {
		fprintf(stderr, "btrsim %s: %s: not a regular file, skipped\n", s->cmd->name, path);
		return 0;
	}
	return one_file(s, path, &ino, &st);
}

void dd_scan_free(struct dd_scan *s)
{
	for (size_t i = 0; i < s->nf; i++) {
		free(s->f[i].path);
		free(s->f[i].ext);
	}
	free(s->f);
	free(s->b);
	free(s->seen);
	free(s->buf);
}

/* ---- Space used ---- */

/* The block group item of the chunk at (logical, length): its used bytes. */
static int bg_used(ref_fs *fs, const struct ref_root *bgroot, uint64_t logical, uint64_t length,
		   uint64_t *used)
{
	struct ref_path p;
	struct ref_key k = { logical, BTRFS_BLOCK_GROUP_ITEM_KEY, length }, got;
	int r = ref_search(fs, bgroot, &k, &p);
	if (r)
		return r < 0 ? r : -EUCLEAN;
	const uint8_t *data;
	uint32_t size;
	ref_path_item(&p, &got, &data, &size);
	if (ref_key_cmp(&k, &got) || size < sizeof(struct btrfs_block_group_item))
		r = -EUCLEAN;
	else
		*used = le64(data + offsetof(struct btrfs_block_group_item, used));
	ref_path_release(fs, &p);
	return r;
}

int dd_data_used(ref_fs *fs, uint64_t *used)
{
	*used = 0;
	bool bgt = LE64(ref_super(fs)->compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	struct ref_root croot, bgroot;
	int r = ref_find_root(fs, BTRFS_CHUNK_TREE_OBJECTID, &croot);
	if (!r)
		r = ref_find_root(fs, bgt ? BTRFS_BLOCK_GROUP_TREE_OBJECTID : BTRFS_EXTENT_TREE_OBJECTID,
				  &bgroot);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k;
	const uint8_t *data;
	uint32_t size;
	r = ref_find_first(fs, &croot, BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, &p, &k,
			   &data, &size);
	while (!r) {
		if (k.objectid != BTRFS_FIRST_CHUNK_TREE_OBJECTID || k.type != BTRFS_CHUNK_ITEM_KEY) {
			ref_path_release(fs, &p);
			break;
		}
		if (size < offsetof(struct btrfs_chunk, stripe)) {
			ref_path_release(fs, &p);
			return -EUCLEAN;
		}
		uint64_t type = le64(data + offsetof(struct btrfs_chunk, type)), u = 0;
		uint64_t length = le64(data + offsetof(struct btrfs_chunk, length));
		if ((type & BTRFS_BLOCK_GROUP_DATA) && (r = bg_used(fs, &bgroot, k.offset, length, &u))) {
			ref_path_release(fs, &p);
			return r;
		}
		*used += u;
		if ((r = ref_next(fs, &p)))
			break;
		ref_path_item(&p, &k, &data, &size);
	}
	return r == -ENOENT || r == 1 ? 0 : r;
}
