/*
 * bench_nullfs.c - a null FUSE file system, the ceiling of `btrsim mount`'s
 * figures (bench/bench_mount.sh): the same libfuse3 low-level loop, one
 * thread, the same connection settings (no writeback cache, 1 s caches,
 * 1 MiB writes), and a file system that does nothing: names in a hash
 * table, data thrown away (a file keeps only its size; reads give zeros).
 * What remains is FUSE's own cost, the round trips through the kernel.
 * Usage: bench-nullfs MOUNTPOINT (foreground; fusermount3 -u ends it).
 */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct node {
	uint64_t ino, parent;
	char *name;
	mode_t mode;
	off_t size;
	struct node *next; /* the (parent, name) chain */
};

#define NBUCKETS (1u << 20)
static struct node **bucket;
static struct node **byino; /* ino - 1 -> node */
static uint64_t nino, capino;

static size_t hash(uint64_t parent, const char *name)
{
	uint64_t h = parent * 0x9e3779b97f4a7c15ull;
	for (const char *c = name; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	return (size_t)(h >> 20) & (NBUCKETS - 1);
}

static struct node *find(uint64_t parent, const char *name)
{
	for (struct node *n = bucket[hash(parent, name)]; n; n = n->next)
		if (n->parent == parent && !strcmp(n->name, name))
			return n;
	return NULL;
}

static struct node *add(uint64_t parent, const char *name, mode_t mode)
{
	if (nino == capino) {
		capino = capino ? 2 * capino : 1024;
		byino = realloc(byino, capino * sizeof(*byino));
		if (!byino)
			abort();
	}
	struct node *n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name)))
		abort();
	n->ino = ++nino;
	n->parent = parent;
	n->mode = mode;
	byino[n->ino - 1] = n;
	size_t h = hash(parent, name);
	n->next = bucket[h], bucket[h] = n;
	return n;
}

static void attr(const struct node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = n->mode;
	st->st_nlink = 1;
	st->st_size = n->size;
	st->st_blksize = 4096;
}

static void entry(fuse_req_t req, struct node *n)
{
	struct fuse_entry_param e = { .ino = n->ino, .attr_timeout = 1.0, .entry_timeout = 1.0 };
	attr(n, &e.attr);
	fuse_reply_entry(req, &e);
}

static void nf_init(void *u, struct fuse_conn_info *conn)
{
	(void)u;
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_EXPORT_SUPPORT);
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
}

static void nf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *n = find(parent, name);
	if (n)
		return entry(req, n);
	struct fuse_entry_param e = { .ino = 0, .entry_timeout = 1.0 };
	fuse_reply_entry(req, &e);
}

static void nf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	attr(byino[ino - 1], &st);
	fuse_reply_attr(req, &st, 1.0);
}

static void nf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *a, int to_set,
		       struct fuse_file_info *fi)
{
	if (to_set & FUSE_SET_ATTR_SIZE)
		byino[ino - 1]->size = a->st_size;
	nf_getattr(req, ino, fi);
}

static void nf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	if (find(parent, name))
		return (void)fuse_reply_err(req, EEXIST);
	entry(req, add(parent, name, S_IFDIR | mode));
}

static void nf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (find(parent, name))
		return (void)fuse_reply_err(req, EEXIST);
	struct node *n = add(parent, name, S_IFREG | (mode & 07777));
	struct fuse_entry_param e = { .ino = n->ino, .attr_timeout = 1.0, .entry_timeout = 1.0 };
	attr(n, &e.attr);
	fi->keep_cache = 1;
	fuse_reply_create(req, &e, fi);
}

static void nf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node **p = &bucket[hash(parent, name)];
	for (; *p; p = &(*p)->next)
		if ((*p)->parent == parent && !strcmp((*p)->name, name)) {
			*p = (*p)->next; /* (the node stays: the kernel may still name it) */
			return (void)fuse_reply_err(req, 0);
		}
	fuse_reply_err(req, ENOENT);
}

static void nf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fi->flags & O_TRUNC)
		byino[ino - 1]->size = 0;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void nf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	static char *zeros;
	static size_t zlen;
	off_t end = byino[ino - 1]->size;
	size_t n = off >= end ? 0 : (size_t)(end - off) < size ? (size_t)(end - off) : size;
	if (n > zlen) {
		free(zeros);
		zeros = calloc(1, n);
		zlen = n;
	}
	fuse_reply_buf(req, zeros, n);
}

static void nf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)buf, (void)fi;
	if (off + (off_t)size > byino[ino - 1]->size)
		byino[ino - 1]->size = off + (off_t)size;
	fuse_reply_write(req, size);
}

static void nf_ok(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino, (void)datasync, (void)fi;
	fuse_reply_err(req, 0);
}

static void nf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

static void nf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino, (void)size, (void)off, (void)fi;
	fuse_reply_buf(req, NULL, 0); /* the bench never lists */
}

static const struct fuse_lowlevel_ops ops = {
	.init = nf_init,	 .lookup = nf_lookup,	.getattr = nf_getattr, .setattr = nf_setattr,
	.mkdir = nf_mkdir,	 .create = nf_create,	.unlink = nf_unlink,   .rmdir = nf_unlink,
	.open = nf_open,	 .read = nf_read,	.write = nf_write,     .fsync = nf_ok,
	.release = nf_release, .readdir = nf_readdir, .fsyncdir = nf_ok,
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench-nullfs MOUNTPOINT\n");
		return 2;
	}
	bucket = calloc(NBUCKETS, sizeof(*bucket));
	if (!bucket)
		return 1;
	add(0, "", S_IFDIR | 0755); /* the root, ino 1 */
	char *fargv[] = { argv[0], "-o", "fsname=nullfs,subtype=nullfs,default_permissions", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_session_mount(se, argv[1])) {
		fprintf(stderr, "bench-nullfs: cannot mount on %s\n", argv[1]);
		return 1;
	}
	fuse_set_signal_handlers(se);
	int r = fuse_session_loop(se);
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	return r ? 1 : 0;
}
