/*
 * fmount_dir.c - the FUSE mount's directory reading.  Offsets are btrfs's
 * (what telldir gives on the kernel's btrfs): 0 and 1 for "." and "..",
 * then each entry's DIR_INDEX, the offset after an entry being its index
 * plus one, so that a reader resuming at an offset continues where it
 * stopped even when entries came and went in between.  opendir reads the
 * directory's entries once (a rewind to 0 reads them again), so that a
 * large directory is not read whole for each buffer the kernel asks for.
 */
#include "traces/fmount_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct fm_dent {
	char *name;
	uint64_t index;
	struct ref_ino ino;
	uint8_t type;
};

struct fm_dir {
	struct fm_dent *e;
	size_t n, cap;
	bool loaded;
};

static void dir_clear(struct fm_dir *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].name);
	d->n = 0;
	d->loaded = false;
}

static int add(void *ctx, const struct ref_dirent *de)
{
	struct fm_dir *d = ctx;
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct fm_dent *e = realloc(d->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		d->e = e, d->cap = cap;
	}
	char *name = malloc(de->len + 1);
	if (!name)
		return -ENOMEM;
	memcpy(name, de->name, de->len);
	name[de->len] = '\0';
	d->e[d->n++] = (struct fm_dent){ name, de->index, de->ino, de->type };
	return 0;
}

void fm_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fmount *fm = fm_of(req);
	struct stat st;
	int r = fm_stat(fm, fm_node(fm, ino), &st);
	if (!r && !S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	struct fm_dir *d = r ? NULL : calloc(1, sizeof(*d));
	if (!r && !d)
		r = -ENOMEM;
	if (r)
		return fm_reply_err(req, fm, "opendir", r);
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->cache_readdir = 0;
	if (fuse_reply_open(req, fi))
		free(d);
}

static unsigned dtype(uint8_t ft)
{
	switch (ft) {
	case BTRFS_FT_REG_FILE: return DT_REG;
	case BTRFS_FT_DIR: return DT_DIR;
	case BTRFS_FT_CHRDEV: return DT_CHR;
	case BTRFS_FT_BLKDEV: return DT_BLK;
	case BTRFS_FT_FIFO: return DT_FIFO;
	case BTRFS_FT_SOCK: return DT_SOCK;
	case BTRFS_FT_SYMLINK: return DT_LNK;
	default: return DT_UNKNOWN;
	}
}

/* Adds one entry to the reply buffer; false when it is full. */
static bool put(fuse_req_t req, char *buf, size_t size, size_t *used, const char *name,
		uint64_t st_ino, unsigned type, uint64_t next)
{
	struct stat st = { .st_ino = st_ino, .st_mode = type << 12 };
	size_t need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
	if (*used + need > size)
		return false;
	fuse_add_direntry(req, buf + *used, size - *used, name, &st, (off_t)next);
	*used += need;
	return true;
}

void fm_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	struct fm_dir *d = (struct fm_dir *)(uintptr_t)fi->fh;
	if (off == 0 || !d->loaded) {
		dir_clear(d);
		int r = ref_readdir(fm->fs, &n->ino, add, d);
		if (r)
			return fm_reply_err(req, fm, "readdir", r);
		d->loaded = true;
	}
	char *buf = malloc(size);
	if (!buf)
		return fm_reply_err(req, fm, "readdir", -ENOMEM);
	size_t used = 0;
	uint64_t pos = (uint64_t)off;
	bool room = true;
	if (pos == 0 && (room = put(req, buf, size, &used, ".", fm_st_ino(fm, &n->ino), DT_DIR, 1)))
		pos = 1;
	/* ".." as the directory it was found in (the root's: itself) */
	const struct ref_ino *up = n->parent.ino && n != &fm->root ? &n->parent : &n->ino;
	if (room && pos == 1 && (room = put(req, buf, size, &used, "..", fm_st_ino(fm, up), DT_DIR, 2)))
		pos = 2;
	/* the first entry at or after pos (indexes ascend) */
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->e[mid].index < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; room && i < d->n; i++)
		room = put(req, buf, size, &used, d->e[i].name, fm_st_ino(fm, &d->e[i].ino),
			   dtype(d->e[i].type), d->e[i].index + 1);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

void fm_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct fm_dir *d = (struct fm_dir *)(uintptr_t)fi->fh;
	dir_clear(d);
	free(d->e);
	free(d);
	fuse_reply_err(req, 0);
}
