/*
 * cmd-put.c - `btrsim put`: copy a host file or directory tree into the file
 * system on images, as `cp -a` would: data (holes skipped with SEEK_DATA /
 * SEEK_HOLE), directories, symlinks, special files, hard links, modes,
 * owners, times, xattrs and POSIX ACLs, through the write API of ref/vfs.h.
 */
#include "cli/fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim put [options] IMG... SRC DEST\n"
	"\n"
	"Copy the host file or directory tree SRC into the file system on the images\n"
	"as DEST, like 'cp -a', then commit.  DEST must not exist, unless it is a\n"
	"directory: then SRC goes inside it, as DEST/NAME (NAME the last component\n"
	"of SRC); a SRC ending in '/.' (or '.', '..', '/') copies what SRC holds into\n"
	"DEST instead.  Symlinks in SRC are copied, not followed.\n"
	"\n"
	"Copied: file data (holes in SRC stay holes), directories, symlinks, hard\n"
	"links (within SRC), permissions, owner and group, access and modification\n"
	"times, xattrs in the user., trusted. and security. namespaces and POSIX\n"
	"ACLs (system.posix_acl_access and _default, as getfacl shows them; a copy\n"
	"keeps the source's ACLs only, none inherited from DEST's default ACL);\n"
	"other xattrs are skipped with a note.  Fifos, sockets and character and\n"
	"block devices are made as the source's (mknod).  Symlinks get the owner\n"
	"root and the current time (the file system has no lchown or lutimes) and no\n"
	"xattrs.\n"
	"\n"
	"  -v, --verbose   print each path as it is copied\n"
	"      --degraded  mount with devices missing (writes go to the copies left)\n"
	CLI_COMPRESS_HELP
	"  -h, --help      show this help\n"
	"\n"
	"Each file system operation is atomic and the whole copy is committed at the\n"
	"end; a failure leaves what was copied before it.\n"
	"\n"
	"Exit status: 0, 1 when anything could not be copied (each on a line of\n"
	"stderr; the rest is still copied, unless the file system failed), 2 bad\n"
	"usage.\n";

const struct cli_cmd cli_cmd_put;

#define CHUNK (1u << 20)

#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"

/* A host inode with several links, copied once at `path`. */
struct linked {
	dev_t dev;
	ino_t ino;
	char *path;
};

struct put {
	struct cli_mount *m;
	bool verbose;
	bool stop;        /* the file system failed: copy no more */
	int errors;
	bool noted_ns;    /* said once that an xattr namespace is not supported */
	bool noted_lnk;   /* said once that symlinks' xattrs are not copied */
	uint8_t *buf;
	struct linked *links;
	size_t nlinks, links_cap;
};

static void host_error(struct put *p, const char *path, int err)
{
	char es[96];
	fprintf(stderr, "btrsim put: %s: %s\n", path, cli_errno_str(err, es, sizeof(es)));
	p->errors++;
}

/* A failed file-system operation on `path`; errors that mean the file system
 * can take no more stop the copy. */
static void fs_error(struct put *p, const char *path, int r)
{
	cli_report(p->m, path, r, NULL);
	p->errors++;
	if (r == -EROFS || r == -EIO || r == -ENOSPC || r == -ENOMEM || r == -EUCLEAN ||
	    r == -EDQUOT)
		p->stop = true;
}

static const char *linked_path(const struct put *p, const struct stat *st)
{
	for (size_t i = 0; i < p->nlinks; i++)
		if (p->links[i].dev == st->st_dev && p->links[i].ino == st->st_ino)
			return p->links[i].path;
	return NULL;
}

static void remember_link(struct put *p, const struct stat *st, const char *path)
{
	if (p->nlinks == p->links_cap) {
		size_t cap = p->links_cap ? p->links_cap * 2 : 64;
		struct linked *n = realloc(p->links, cap * sizeof(*n));
		if (!n)
			return; /* later links become copies: still the right content */
		p->links = n;
		p->links_cap = cap;
	}
	char *dup = strdup(path);
	if (dup)
		p->links[p->nlinks++] = (struct linked){ st->st_dev, st->st_ino, dup };
}

/* The data of a regular file, region by region: holes are not written. */
static int copy_data(struct put *p, const char *host, const char *path, const struct stat *st)
{
	int fd = open(host, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		host_error(p, host, errno);
		return -1;
	}
	off_t size = st->st_size, off = 0;
	int rc = 0;
	while (off < size && !rc) {
		off_t data = lseek(fd, off, SEEK_DATA), hole;
		if (data < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (data < 0) { /* no SEEK_DATA here: all of it is data */
			data = off;
			hole = size;
		} else if ((hole = lseek(fd, data, SEEK_HOLE)) < 0) {
			hole = size;
		}
		if (hole > size)
			hole = size;
		for (off = data; off < hole;) {
			size_t want = hole - off < (off_t)CHUNK ? (size_t)(hole - off) : CHUNK;
			ssize_t n = pread(fd, p->buf, want, off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				host_error(p, host, errno);
				rc = -1;
				break;
			}
			if (n == 0) { /* it shrank: the rest reads as zeros */
				off = size;
				break;
			}
			ssize_t w = ref_write(p->m->fs, path, p->buf, (size_t)n, (uint64_t)off);
			if (w < 0) {
				fs_error(p, path, (int)w);
				rc = -1;
				break;
			}
			off += n;
		}
		if (off < data) /* lseek went backwards: never loop */
			break;
	}
	close(fd);
	struct ref_stat rs;
	int r;
	if (!rc && ((r = ref_stat_path(p->m->fs, path, false, &rs)) ||
		    (rs.size != (uint64_t)size && (r = ref_truncate(p->m->fs, path, (uint64_t)size))))) {
		fs_error(p, path, r);
		rc = -1;
	}
	return rc;
}

static bool supported_ns(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9) || !strcmp(name, ACL_ACCESS) ||
	       !strcmp(name, ACL_DEFAULT);
}

/* ACLs path inherited from its directory's default ACL that host does not
 * have: removed, as cp -a leaves the copy with host's ACLs only. */
static void drop_inherited_acls(struct put *p, const char *host, const char *path, bool dir)
{
	const char *names[2] = { ACL_ACCESS, ACL_DEFAULT };
	for (int i = 0; i < (dir ? 2 : 1); i++) {
		if (lgetxattr(host, names[i], NULL, 0) >= 0 || (errno != ENODATA && errno != ENOTSUP))
			continue;
		int r = ref_removexattr(p->m->fs, path, names[i]);
		if (r) {
			char what[PATH_MAX + 300];
			snprintf(what, sizeof(what), "%s: %s", path, names[i]);
			fs_error(p, what, r);
		}
	}
}

/* The xattrs of host, onto path. */
static void copy_xattrs(struct put *p, const char *host, const char *path, bool symlink)
{
	ssize_t len = llistxattr(host, NULL, 0);
	if (len < 0 && (errno == ENOTSUP || errno == ENOSYS))
		return;
	char *names = NULL;
	for (int tries = 0; len > 0 && tries < 8; tries++) {
		char *n = realloc(names, (size_t)len);
		if (!n) {
			free(names);
			host_error(p, host, ENOMEM);
			return;
		}
		names = n;
		ssize_t got = llistxattr(host, names, (size_t)len);
		if (got >= 0 || errno != ERANGE) {
			len = got;
			break;
		}
		len = llistxattr(host, NULL, 0);
	}
	if (len < 0) {
		host_error(p, host, errno);
		free(names);
		return;
	}
	if (len > 0 && symlink) {
		if (!p->noted_lnk)
			fprintf(stderr, "btrsim put: note: the xattrs of symlinks are not copied (the file "
					"system sets xattrs through symlinks), e.g. those of %s\n",
				host);
		p->noted_lnk = true;
		len = 0;
	}
	for (ssize_t i = 0; i < len && !p->stop; i += (ssize_t)strlen(names + i) + 1) {
		const char *name = names + i;
		ssize_t vlen = lgetxattr(host, name, NULL, 0);
		uint8_t *val = NULL;
		for (int tries = 0; vlen > 0 && tries < 8; tries++) {
			uint8_t *v = realloc(val, (size_t)vlen);
			if (!v) {
				vlen = -1;
				errno = ENOMEM;
				break;
			}
			val = v;
			ssize_t got = lgetxattr(host, name, val, (size_t)vlen);
			if (got >= 0 || errno != ERANGE) {
				vlen = got;
				break;
			}
			vlen = lgetxattr(host, name, NULL, 0);
		}
		if (vlen < 0) {
			if (errno != ENODATA) { /* ENODATA: gone meanwhile */
				char what[PATH_MAX + 300];
				snprintf(what, sizeof(what), "%s: xattr %s", host, name);
				host_error(p, what, errno);
			}
			free(val);
			continue;
		}
		int r = ref_setxattr(p->m->fs, path, name, val, (size_t)vlen, 0);
		free(val);
		if (r == -EOPNOTSUPP && !supported_ns(name)) {
			if (!p->noted_ns)
				fprintf(stderr, "btrsim put: note: xattrs outside the user., trusted. and "
						"security. namespaces are not copied (the file system "
						"does not support them), e.g. %s of %s\n",
					name, host);
			p->noted_ns = true;
		} else if (r) {
			char what[PATH_MAX + 300];
			snprintf(what, sizeof(what), "%s: xattr %s", path, name);
			fs_error(p, what, r);
		}
	}
	free(names);
}

/* Xattrs, owner (which clears set-user-ID), mode, then the times (last: the
 * others change ctime; adding entries to a directory changes its mtime). */
static void copy_metadata(struct put *p, const char *host, const char *path, const struct stat *st)
{
	copy_xattrs(p, host, path, S_ISLNK(st->st_mode));
	if (S_ISLNK(st->st_mode) || p->stop)
		return; /* chown, chmod and utimes would follow the link */
	drop_inherited_acls(p, host, path, S_ISDIR(st->st_mode));
	int r;
	if ((r = ref_chown(p->m->fs, path, st->st_uid, st->st_gid)) ||
	    (r = ref_chmod(p->m->fs, path, st->st_mode & 07777))) {
		fs_error(p, path, r);
		return;
	}
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	if ((r = ref_utimes(p->m->fs, path, times)))
		fs_error(p, path, r);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_entry(struct put *p, const char *host, const char *path, bool into_existing);

/* The entries of a host directory, sorted by name (a reproducible order). */
static void put_children(struct put *p, const char *host, const char *path)
{
	DIR *d = opendir(host);
	if (!d) {
		host_error(p, host, errno);
		return;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			char **nn = realloc(names, cap * sizeof(*nn));
			if (!nn)
				break;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
		errno = 0;
	}
	if (errno)
		host_error(p, host, errno);
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	bool root = !strcmp(path, "/");
	for (size_t i = 0; i < n; i++) {
		char *h, *f;
		if (!p->stop && asprintf(&h, "%s/%s", host, names[i]) >= 0) {
			if (asprintf(&f, "%s/%s", root ? "" : path, names[i]) >= 0) {
				put_entry(p, h, f, false);
				free(f);
			}
			free(h);
		}
		free(names[i]);
	}
	free(names);
}

static void put_entry(struct put *p, const char *host, const char *path, bool into_existing)
{
	struct stat st;
	if (lstat(host, &st)) {
		host_error(p, host, errno);
		return;
	}
	if (p->verbose)
		printf("%s\n", path);
	ref_fs *fs = p->m->fs;
	bool multi = !S_ISDIR(st.st_mode) && st.st_nlink > 1;
	if (multi) {
		const char *first = linked_path(p, &st);
		if (first) {
			int r = ref_link(fs, first, path);
			if (r)
				fs_error(p, path, r);
			return;
		}
	}
	int r = 0;
	switch (st.st_mode & S_IFMT) {
	case S_IFDIR:
		if (!into_existing && (r = ref_mkdir(fs, path, st.st_mode & 07777))) {
			fs_error(p, path, r);
			return;
		}
		put_children(p, host, path);
		if (p->stop)
			return;
		break;
	case S_IFREG:
		if ((r = ref_create(fs, path, st.st_mode & 07777))) {
			fs_error(p, path, r);
			return;
		}
		if (copy_data(p, host, path, &st) || p->stop)
			return;
		break;
	case S_IFLNK: {
		size_t cap = st.st_size > 0 && st.st_size < PATH_MAX ? (size_t)st.st_size + 1 : PATH_MAX;
		char *target = malloc(cap);
		ssize_t n = target ? readlink(host, target, cap) : -1;
		if (n < 0 || (size_t)n >= cap) {
			host_error(p, host, n < 0 ? (target ? errno : ENOMEM) : ENAMETOOLONG);
			free(target);
			return;
		}
		target[n] = '\0';
		r = ref_symlink(fs, target, path);
		free(target);
		if (r) {
			fs_error(p, path, r);
			return;
		}
		break;
	}
	default: /* fifos, sockets, devices */
		if ((r = ref_mknod(fs, path, st.st_mode & (S_IFMT | 07777), st.st_rdev))) {
			fs_error(p, path, r);
			return;
		}
		break;
	}
	copy_metadata(p, host, path, &st);
	if (multi && !p->stop)
		remember_link(p, &st, path);
}

/* The last component of SRC, or NULL for a SRC whose contents go into DEST
 * ('.', '..', '/', or ending in '/.'). */
static const char *src_name(const char *src, char **to_free)
{
	*to_free = NULL;
	size_t len = strlen(src);
	while (len > 1 && src[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && src[start - 1] != '/')
		start--;
	size_t n = len - start;
	if (n == 0 || (n == 1 && src[start] == '.') || (n == 2 && !strncmp(src + start, "..", 2)))
		return NULL;
	return *to_free = cli_name_dup(src + start, n);
}

static int cmd_put(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "degraded", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "compress", optional_argument, NULL, 'C' },
		{ "compress-force", optional_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	struct put p = { 0 };
	struct cli_mount_opts mo = { 0 };
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'v': p.verbose = true; break;
		case 'D': mo.degraded = true; break;
		case 'C':
		case 'F':
			if ((rc = cli_compress_arg(&cli_cmd_put, optarg, c == 'F', &mo)))
				return rc;
			break;
		case 'h': return cli_help(&cli_cmd_put);
		default: return cli_usage_error(&cli_cmd_put, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 3)
		return cli_usage_error(&cli_cmd_put, "needs at least one image, SRC and DEST");
	const char *src = argv[argc - 2], *dest = argv[argc - 1];
	if (!*src || !*dest)
		return cli_usage_error(&cli_cmd_put, "SRC and DEST must not be empty");
	struct stat sst;
	if (lstat(src, &sst)) {
		char es[96];
		return cli_fail(&cli_cmd_put, "%s: %s", src, cli_errno_str(errno, es, sizeof(es)));
	}
	char *name_buf;
	const char *name = src_name(src, &name_buf);
	if (!name && !S_ISDIR(sst.st_mode)) {
		free(name_buf);
		return cli_fail(&cli_cmd_put, "%s: ENOTDIR (Not a directory)", src);
	}
	struct cli_mount m;
	rc = cli_mount_with(&cli_cmd_put, argv + optind, argc - optind - 2, &mo, &m);
	if (rc) {
		free(name_buf);
		return rc;
	}
	p.m = &m;
	/* Where SRC goes: DEST itself, or inside DEST when it is a directory. */
	struct ref_stat dst;
	char *target = NULL;
	bool into_existing = false;
	int r = ref_stat_path(m.fs, dest, true, &dst);
	if (r == 0 && !S_ISDIR(dst.mode)) {
		cli_report(&m, dest, EEXIST, "exists and is not a directory");
		free(name_buf);
		return cli_abort(&m);
	}
	if (r && r != -ENOENT) {
		free(name_buf);
		return cli_op_fail(&m, dest, r);
	}
	if (r == 0 && name) {
		size_t dl = strlen(dest);
		if (asprintf(&target, "%s%s%s", dest, dl && dest[dl - 1] == '/' ? "" : "/", name) < 0)
			target = NULL;
	} else {
		into_existing = r == 0;
		target = strdup(dest);
	}
	free(name_buf);
	if (!target || !(p.buf = malloc(CHUNK))) {
		free(target);
		cli_report(&m, dest, ENOMEM, "");
		return cli_abort(&m);
	}
	put_entry(&p, src, target, into_existing);
	for (size_t i = 0; i < p.nlinks; i++)
		free(p.links[i].path);
	free(p.links);
	free(p.buf);
	free(target);
	if (p.stop)
		return cli_abort(&m);
	rc = cli_umount(&m);
	return rc || p.errors ? 1 : 0;
}

const struct cli_cmd cli_cmd_put = {
	.name = "put",
	.summary = "copy a host file or directory tree into the file system on images",
	.usage = usage_text,
	.run = cmd_put,
};
