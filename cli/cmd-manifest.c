/*
 * cmd-manifest.c - `btrsim manifest`: a canonical line-per-object description
 * of a file-system tree, from an image (ref/'s read API) or from a host
 * directory (POSIX calls, manifest-host.c), formatted here for both so that
 * `diff` of the two shows where the kernel's view and ref's view differ.
 */
#include "cli/dirents.h"
#include "cli/image.h"
#include "cli/manifest.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: btrsim manifest [options] IMG...\n"
	"       btrsim manifest --host DIR [--ino] [--times]\n"
	"\n"
	"Describe every object of a tree, one line each, in a canonical form: the\n"
	"file system on the images (the disks of one volume, any order) as btrsim\n"
	"reads it, or with --host a directory of the host (such as a kernel-mounted\n"
	"btrfs) as the kernel shows it.  Both come out of the same formatting code,\n"
	"so equal outputs mean equal trees.\n"
	"\n"
	"  -s, --subvol PATH|ID  start at this subvolume (default: the top level, 5)\n"
	"      --host DIR        describe the host directory DIR instead of images\n"
	"      --ino             add each object's inode number\n"
	"      --times           add each object's mtime\n"
	"      --no-times        no mtime (the default)\n"
	"      --degraded        open with devices missing\n"
	"  -h, --help            show this help\n"
	"\n"
	"Each line, fields separated by one space:\n"
	"  PATH TYPE PERM UID GID NLINK SIZE CONTENT [i:INO] [m:MTIME] [x:NAME=VALUE]...\n"
	"  PATH     '/' for the root, then '/a', '/a/b', ...: each name escaped (every\n"
	"           byte below 0x21 or above 0x7e, '\\' and '/' as \\xHH)\n"
	"  TYPE     f d l c b p s (regular, directory, symlink, char and block\n"
	"           device, fifo, socket; ? for anything else)\n"
	"  PERM     mode & 07777 in octal\n"
	"  NLINK    the link count as stat reports it (btrfs: 1 for directories)\n"
	"  SIZE     the size as stat reports it (btrfs directories: twice the\n"
	"           length of their names)\n"
	"  CONTENT  f: sha256 (hex) over the file's 4 KiB blocks that are not all\n"
	"           zeros, each after its offset (64-bit little-endian), then the\n"
	"           size: holes and written zeros hash alike; l: '-> TARGET', the target escaped\n"
	"           as names are but for '/'; c, b: MAJOR,MINOR; others: '-'\n"
	"  i:INO    with --ino: the inode number\n"
	"  m:MTIME  with --times: seconds.nanoseconds (9 digits) since the epoch\n"
	"  x:...    every xattr, sorted: its name escaped as names are but with '='\n"
	"           instead of '/', its value in hex (nothing after '=' when empty)\n"
	"Lines are sorted bytewise by escaped PATH (LC_ALL=C sort leaves them as\n"
	"they are).  Hard links appear once per name.  Subvolumes met on the way are\n"
	"directories like any other and are descended into (on the host: where\n"
	"st_dev changes to another subvolume of the same btrfs, by fsid); the mount\n"
	"point of any other file system is listed, but not what is below it.\n"
	"\n"
	"Exit status: 0; 1 when anything could not be read (one line on stderr,\n"
	"nothing on stdout); 2 for bad usage.\n";

const struct cli_cmd cli_cmd_manifest;

#define CHUNK (1u << 20)
#define MAX_DEPTH 4096

/* ---- Formatting (both walkers) ------------------------------------------ */

/* A growing string. */
struct buf {
	char *s;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, len);
	b->n += len;
	b->s[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static const char hex_digits[] = "0123456789abcdef";

static void put_hex(struct buf *b, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char h[2] = { hex_digits[p[i] >> 4], hex_digits[p[i] & 15] };
		put(b, h, 2);
	}
}

/* Raw bytes, each outside 0x21..0x7e, a backslash or `extra` as \xHH. */
static void put_escaped(struct buf *b, const char *s, size_t len, char extra)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x21 || c > 0x7e || c == '\\' || (extra && c == (unsigned char)extra)) {
			char h[4] = { '\\', 'x', hex_digits[c >> 4], hex_digits[c & 15] };
			put(b, h, 4);
		} else {
			put(b, (const char *)&c, 1);
		}
	}
}

char *mf_path_join(const char *parent, const char *name, size_t len)
{
	struct buf b = { 0 };
	if (strcmp(parent, "/"))
		puts_(&b, parent);
	put(&b, "/", 1);
	put_escaped(&b, name, len, '/');
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char type_char(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return 'f';
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFCHR: return 'c';
	case S_IFBLK: return 'b';
	case S_IFIFO: return 'p';
	case S_IFSOCK: return 's';
	default: return '?';
	}
}

static int keep_line(struct manifest *m, char *line)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		char **p = realloc(m->lines, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->lines = p;
		m->cap = cap;
	}
	m->lines[m->n++] = line;
	return 0;
}

int mf_add(struct manifest *m, const struct mf_object *o)
{
	struct buf b = { 0 };
	char t = type_char(o->mode);
	puts_(&b, o->path); /* already escaped */
	putf(&b, " %c %o %u %u %llu %llu ", t, o->mode & 07777, o->uid, o->gid,
	     (unsigned long long)o->nlink, (unsigned long long)o->size);
	if (t == 'f' && o->sha256) {
		put_hex(&b, o->sha256, crypto_hash_sha256_BYTES);
	} else if (t == 'l') {
		puts_(&b, "-> ");
		put_escaped(&b, o->target ? o->target : "", o->target ? o->target_len : 0, 0);
	} else if (t == 'c' || t == 'b') {
		putf(&b, "%u,%u", o->rdev_major, o->rdev_minor);
	} else {
		puts_(&b, "-");
	}
	if (m->ino)
		putf(&b, " i:%llu", (unsigned long long)o->ino);
	if (m->times)
		putf(&b, " m:%lld.%09ld", (long long)o->mtime.tv_sec, (long)o->mtime.tv_nsec);
	size_t nx = o->xattrs ? o->xattrs->n : 0;
	if (nx) {
		char **xs = calloc(nx, sizeof(*xs));
		if (!xs) {
			free(b.s);
			return -ENOMEM;
		}
		bool oom = false;
		for (size_t i = 0; i < nx; i++) {
			const struct mf_xattr *x = &o->xattrs->x[i];
			struct buf xb = { 0 };
			puts_(&xb, " x:");
			put_escaped(&xb, x->name, x->nlen, '=');
			put(&xb, "=", 1);
			put_hex(&xb, x->value, x->vlen);
			if (xb.oom) {
				free(xb.s);
				oom = true;
				continue;
			}
			xs[i] = xb.s;
		}
		if (!oom) {
			qsort(xs, nx, sizeof(*xs), cmp_str);
			for (size_t i = 0; i < nx; i++)
				puts_(&b, xs[i]);
		}
		for (size_t i = 0; i < nx; i++)
			free(xs[i]);
		free(xs);
		if (oom)
			b.oom = true;
	}
	put(&b, "\n", 1);
	if (b.oom || keep_line(m, b.s)) {
		free(b.s);
		return -ENOMEM;
	}
	return 0;
}

/* The slot of directory (a, b) in the set, or the free slot where it goes. */
static struct mf_dir *dir_slot(struct mf_dir *t, size_t cap, uint64_t a, uint64_t b)
{
	size_t h = (size_t)(((a * 0x9e3779b97f4a7c15ull) ^ b) * 0x9e3779b97f4a7c15ull % cap);
	while (t[h].used && (t[h].a != a || t[h].b != b))
		h = (h + 1) % cap;
	return &t[h];
}

int mf_enter(struct manifest *m, uint64_t a, uint64_t b)
{
	/* An open-addressing set, at most half full. */
	if (2 * (m->ndirs + 1) > m->dirs_cap) {
		size_t cap = m->dirs_cap ? m->dirs_cap * 2 : 1024;
		struct mf_dir *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < m->dirs_cap; i++)
			if (m->dirs[i].used)
				*dir_slot(t, cap, m->dirs[i].a, m->dirs[i].b) = m->dirs[i];
		free(m->dirs);
		m->dirs = t;
		m->dirs_cap = cap;
	}
	struct mf_dir *d = dir_slot(m->dirs, m->dirs_cap, a, b);
	if (!d->used) {
		*d = (struct mf_dir){ .a = a, .b = b, .used = true };
		m->ndirs++;
	}
	if (d->open)
		return -ELOOP;
	if (d->visits >= MF_MAX_VISITS)
		return -EMLINK;
	d->visits++;
	d->open = true;
	return 0;
}

void mf_leave(struct manifest *m, uint64_t a, uint64_t b)
{
	if (m->dirs_cap)
		dir_slot(m->dirs, m->dirs_cap, a, b)->open = false;
}

const char *mf_enter_error(int r)
{
	switch (r) {
	case -ELOOP: return "directory inside itself (a loop)";
	case -EMLINK: return "directory reached by too many paths";
	default: return strerror(-r);
	}
}

int mf_print(struct manifest *m, FILE *out)
{
	/* Escaped paths hold no space and every byte in them sorts above ' ', so
	 * comparing whole lines orders them by path. */
	qsort(m->lines, m->n, sizeof(*m->lines), cmp_str);
	for (size_t i = 0; i < m->n; i++)
		fputs(m->lines[i], out);
	if (fflush(out) || ferror(out))
		return -(errno ? errno : EIO);
	return 0;
}

void mf_free(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->lines[i]);
	free(m->lines);
	free(m->dirs);
	m->lines = NULL;
	m->dirs = NULL;
	m->n = m->cap = m->ndirs = m->dirs_cap = 0;
}

int mf_xattr_add(struct mf_xattrs *xs, const char *name, size_t nlen, const void *value,
		 size_t vlen)
{
	if (xs->n == xs->cap) {
		size_t cap = xs->cap ? xs->cap * 2 : 8;
		struct mf_xattr *p = realloc(xs->x, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		xs->x = p;
		xs->cap = cap;
	}
	char *n = malloc(nlen + 1);
	unsigned char *v = malloc(vlen + 1);
	if (!n || !v) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	memcpy(n, name, nlen);
	n[nlen] = '\0';
	if (vlen)
		memcpy(v, value, vlen);
	xs->x[xs->n++] = (struct mf_xattr){ n, nlen, v, vlen };
	return 0;
}

void mf_xattrs_clear(struct mf_xattrs *xs)
{
	for (size_t i = 0; i < xs->n; i++) {
		free(xs->x[i].name);
		free(xs->x[i].value);
	}
	xs->n = 0;
}

/* ---- The image walker ----------------------------------------------------- */

struct rwalk {
	ref_fs *fs;
	struct manifest *m;
	unsigned char *buf;
	struct mf_xattrs xs;
};

/* Says why PATH failed; returns 1. */
static int rfail(const char *path, const char *why)
{
	return cli_fail(&cli_cmd_manifest, "%s: %s", path, why);
}

static int add_xattr(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	return mf_xattr_add(ctx, name, nlen, value, vlen);
}

static int hash_file(struct rwalk *w, const struct ref_ino *ino, uint64_t size, const char *path,
		     unsigned char out[crypto_hash_sha256_BYTES])
{
	struct mf_hash h;
	mf_hash_init(&h);
	for (uint64_t off = 0; off < size;) {
		size_t want = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		ssize_t n = ref_pread(w->fs, ino, w->buf, want, off);
		if (n < 0)
			return rfail(path, ref_error(w->fs));
		if (n == 0)
			return rfail(path, "the data ends before the file's size");
		mf_hash_data(&h, w->buf, (size_t)n);
		off += (uint64_t)n;
	}
	mf_hash_final(&h, out);
	return 0;
}

static int rwalk_dir(struct rwalk *w, const struct ref_ino *dir, const char *path, int depth);

/* Describes the object at path, then what is below it. */
static int rwalk_one(struct rwalk *w, const struct ref_ino *ino, const char *path, int depth)
{
	struct ref_stat st;
	if (ref_stat(w->fs, ino, &st))
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
	struct cli_dirents ch;
	int rc = 0;
	int r = cli_dirents_read(w->fs, dir, &ch);
	if (r)
		rc = rfail(path, r == -ENOMEM ? strerror(ENOMEM) : ref_error(w->fs));
	for (size_t i = 0; i < ch.n && !rc; i++) {
		char *sub = mf_path_join(path, ch.e[i].name, ch.e[i].len);
		rc = sub ? rwalk_one(w, &ch.e[i].ino, sub, depth) : rfail(path, strerror(ENOMEM));
		free(sub);
	}
	cli_dirents_free(&ch);
	return rc;
}

/* The root of the subvolume named by PATH or ID. */
static int find_start(ref_fs *fs, const char *subvol, struct ref_ino *start)
{
	struct ref_ino top;
	uint64_t id;
	if (ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &top))
		return cli_fail(&cli_cmd_manifest, "%s", ref_error(fs));
	if (!subvol) {
		*start = top;
		return 0;
	}
	if (subvol[0] != '/' && cli_parse_u64(subvol, &id, 0) == 0) {
		if (ref_subvol_root(fs, id, start) || ref_stat(fs, start, &(struct ref_stat){ 0 }))
			return cli_fail(&cli_cmd_manifest, "subvolume %s: %s", subvol, ref_error(fs));
		return 0;
	}
	if (ref_resolve(fs, &top, subvol, start))
		return cli_fail(&cli_cmd_manifest, "subvolume %s: %s", subvol, ref_error(fs));
	if (start->ino != BTRFS_FIRST_FREE_OBJECTID)
		return cli_fail(&cli_cmd_manifest, "%s is not a subvolume", subvol);
	return 0;
}

static int walk_images(struct manifest *m, char **images, int n, const struct ref_open_opts *oo,
		       const char *subvol)
{
	sim_volume *vol;
	struct rwalk w = { .m = m };
	int rc = cli_open_fs(&cli_cmd_manifest, images, n, oo, &vol, &w.fs);
	if (rc)
		return rc;
	struct ref_ino start;
	if (!(rc = find_start(w.fs, subvol, &start))) {
		if (!(w.buf = malloc(CHUNK)))
			rc = cli_fail(&cli_cmd_manifest, "%s", strerror(ENOMEM));
		else
			rc = rwalk_one(&w, &start, "/", 0);
	}
	mf_xattrs_clear(&w.xs);
	free(w.xs.x);
	free(w.buf);
	ref_close(w.fs);
	sim_volume_close(vol);
	return rc;
}

static int cmd_manifest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "subvol", required_argument, NULL, 's' }, { "host", required_argument, NULL, 'H' },
		{ "ino", no_argument, NULL, 'i' },          { "times", no_argument, NULL, 't' },
		{ "no-times", no_argument, NULL, 'T' },     { "degraded", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	struct manifest m = { 0 };
	const char *subvol = NULL, *host = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': subvol = optarg; break;
		case 'H': host = optarg; break;
		case 'i': m.ino = true; break;
		case 't': m.times = true; break;
		case 'T': m.times = false; break;
		case 'D': oo.degraded = true; break;
		case 'h': return cli_help(&cli_cmd_manifest);
		case ':':
			return cli_usage_error(&cli_cmd_manifest, "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			return cli_usage_error(&cli_cmd_manifest, "unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	int rc;
	if (host) {
		if (optind < argc)
			return cli_usage_error(&cli_cmd_manifest,
					       "--host takes no image, not '%s'", argv[optind]);
		if (subvol || oo.degraded)
			return cli_usage_error(&cli_cmd_manifest, "--%s is for images, not --host",
					       subvol ? "subvol" : "degraded");
		if (!*host)
			return cli_usage_error(&cli_cmd_manifest, "--host needs a directory");
		rc = mf_walk_host(&cli_cmd_manifest, &m, host);
	} else {
		if (optind >= argc)
			return cli_usage_error(&cli_cmd_manifest, "needs at least one image, or --host DIR");
		rc = walk_images(&m, argv + optind, argc - optind, &oo, subvol);
	}
	if (!rc) {
		int r = mf_print(&m, stdout);
		if (r)
			rc = cli_fail(&cli_cmd_manifest, "writing the manifest: %s", strerror(-r));
	}
	mf_free(&m);
	return rc;
}

const struct cli_cmd cli_cmd_manifest = {
	.name = "manifest",
	.summary = "a canonical listing of a tree (image or host directory), for diff",
	.usage = usage_text,
	.run = cmd_manifest,
};
