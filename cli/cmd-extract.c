/*
 * cmd-extract.c - `btrsim extract`: recreate a subvolume's tree in a
 * directory, as `btrfs restore` does: files (holes kept sparse), directories,
 * symlinks, hard links, device nodes, fifos, modes, owners, times, xattrs.
 */
#include "cli/image.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim extract [options] IMG... DEST\n"
	"\n"
	"Recreate the files of the file system on the images under DEST (created if\n"
	"missing; existing entries are not overwritten), like 'btrfs restore'.\n"
	"Subvolumes below the one extracted are recreated as directories; snapshots\n"
	"only with --snapshots.\n"
	"\n"
	"  -s, --subvol PATH|ID  extract this subvolume (default: the top level, 5)\n"
	"      --snapshots       also descend into snapshots\n"
	"  -x, --xattr           restore extended attributes (the default, as\n"
	"                        'btrfs restore -x')\n"
	"      --no-xattr        leave extended attributes out\n"
	"  -v, --verbose         print each path as it is extracted\n"
	"      --degraded        open with devices missing\n"
	"      --usebackuproot   open from a backup root if the root tree is unreadable\n"
	"      --nologreplay     show the last commit, not what the log tree adds\n"
	"  -h, --help            show this help\n"
	"\n"
	"An extended attribute that DEST's file system cannot hold (btrfs.compression\n"
	"on ext4, say: EOPNOTSUPP) is skipped wherever it occurs, with one line on\n"
	"stderr per name; it is no failure.\n"
	"\n"
	"Exit status: 0, or 1 when anything could not be read or written (each on a\n"
	"line of stderr; the rest is still extracted).\n";

const struct cli_cmd cli_cmd_extract;

#define CHUNK (1u << 20)

/* An inode with several links, extracted once at `path`. */
struct linked {
	struct ref_ino ino;
	char *path;
};

struct ex {
	ref_fs *fs;
	bool snapshots, verbose, no_xattrs;
	int errors;
	char **skipped; /* xattr names DEST cannot hold, each said once */
	size_t nskipped;
	uint8_t *buf;
	struct linked *links;
	size_t nlinks, links_cap;
};

static void fail_path(struct ex *ex, const char *path, const char *what)
{
	fprintf(stderr, "btrsim extract: %s: %s\n", path, what);
	ex->errors++;
}

static const char *linked_path(struct ex *ex, const struct ref_ino *ino)
{
	for (size_t i = 0; i < ex->nlinks; i++)
		if (ex->links[i].ino.subvol == ino->subvol && ex->links[i].ino.ino == ino->ino)
			return ex->links[i].path;
	return NULL;
}

static void remember_link(struct ex *ex, const struct ref_ino *ino, const char *path)
{
	if (ex->nlinks == ex->links_cap) {
		size_t cap = ex->links_cap ? ex->links_cap * 2 : 64;
		struct linked *p = realloc(ex->links, cap * sizeof(*p));
		if (!p)
			return; /* later links become copies: still correct content */
		ex->links = p;
		ex->links_cap = cap;
	}
	char *dup = strdup(path);
	if (dup)
		ex->links[ex->nlinks++] = (struct linked){ *ino, dup };
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

static int write_file(struct ex *ex, const struct ref_ino *ino, const struct ref_stat *st,
		      const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fail_path(ex, path, strerror(errno));
		return -1;
	}
	int r = 0;
	for (uint64_t off = 0; off < st->size;) {
		ssize_t n = ref_pread(ex->fs, ino, ex->buf, CHUNK, off);
		if (n <= 0) {
			fail_path(ex, path, n < 0 ? ref_error(ex->fs) : "file ends before its size");
			r = -1;
			break;
		}
		/* Zero blocks become holes, so sparse files stay sparse. */
		for (ssize_t p = 0; p < n && !r;) {
			ssize_t len = n - p < 4096 ? n - p : 4096;
			if (!all_zero(ex->buf + p, (size_t)len) &&
			    pwrite(fd, ex->buf + p, (size_t)len, (off_t)(off + (uint64_t)p)) != len) {
				fail_path(ex, path, strerror(errno));
				r = -1;
			}
			p += len;
		}
		if (r)
			break;
		off += (uint64_t)n;
	}
	if (!r && ftruncate(fd, (off_t)st->size)) {
		fail_path(ex, path, strerror(errno));
		r = -1;
	}
	if (close(fd) && !r) {
		fail_path(ex, path, strerror(errno));
		r = -1;
	}
	return r;
}

struct xattr_dest {
	struct ex *ex;
	const char *path;
};

/* Says once per name that the destination cannot hold an xattr. */
static void skip_xattr(struct ex *ex, const char *name)
{
	for (size_t i = 0; i < ex->nskipped; i++)
		if (!strcmp(ex->skipped[i], name))
			return;
	fprintf(stderr, "btrsim extract: the destination cannot hold xattr %s (%s): skipped wherever it occurs\n",
		name, strerror(EOPNOTSUPP));
	char **p = realloc(ex->skipped, (ex->nskipped + 1) * sizeof(*p));
	char *copy = strdup(name);
	if (!p || !copy) { /* said again next time: no harm */
		free(copy);
		if (p)
			ex->skipped = p;
		return;
	}
	ex->skipped = p;
	ex->skipped[ex->nskipped++] = copy;
}

static int set_xattr(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	struct xattr_dest *xd = ctx;
	char key[BTRFS_NAME_LEN + 1];
	memcpy(key, name, nlen);
	key[nlen] = '\0';
	if (lsetxattr(xd->path, key, value, vlen, 0)) {
		if (errno == EOPNOTSUPP) { /* as btrfs restore: the destination cannot hold it */
			skip_xattr(xd->ex, key);
			return 0;
		}
		char msg[400];
		snprintf(msg, sizeof(msg), "xattr %s: %s", key, strerror(errno));
		fail_path(xd->ex, xd->path, msg);
	}
	return 0;
}

/* Owner, xattrs, mode, then times (last: the others change ctime/mtime). */
static void set_metadata(struct ex *ex, const struct ref_ino *ino, const struct ref_stat *st,
			 const char *path)
{
	if (lchown(path, st->uid, st->gid))
		fail_path(ex, path, strerror(errno));
	struct xattr_dest xd = { ex, path };
	if (!ex->no_xattrs && ref_listxattr(ex->fs, ino, set_xattr, &xd))
		fail_path(ex, path, ref_error(ex->fs));
	if (!S_ISLNK(st->mode) && chmod(path, st->mode & 07777))
		fail_path(ex, path, strerror(errno));
	struct timespec times[2] = { st->atime, st->mtime };
	if (utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW))
		fail_path(ex, path, strerror(errno));
}

static bool is_snapshot(struct ex *ex, uint64_t subvol);

static void extract_dir(struct ex *ex, const struct ref_ino *dir, const char *path, int depth);

static void extract_one(struct ex *ex, const struct ref_ino *ino, const char *path, int depth)
{
	struct ref_stat st;
	if (ref_stat(ex->fs, ino, &st)) {
		fail_path(ex, path, ref_error(ex->fs));
		return;
	}
	if (ex->verbose)
		printf("%s\n", path);
	if (!S_ISDIR(st.mode) && st.nlink > 1) {
		const char *first = linked_path(ex, ino);
		if (first) {
			if (link(first, path))
				fail_path(ex, path, strerror(errno));
			return;
		}
	}
	int r = 0;
	switch (st.mode & S_IFMT) {
	case S_IFDIR:
		if (mkdir(path, 0700) && errno != EEXIST) {
			fail_path(ex, path, strerror(errno));
			return;
		}
		if (depth < 4096)
			extract_dir(ex, ino, path, depth + 1);
		break;
	case S_IFREG:
		r = write_file(ex, ino, &st, path);
		break;
	case S_IFLNK: {
		char target[4096];
		if (ref_readlink(ex->fs, ino, target, sizeof(target)) < 0) {
			fail_path(ex, path, ref_error(ex->fs));
			return;
		}
		if (symlink(target, path)) {
			fail_path(ex, path, strerror(errno));
			return;
		}
		break;
	}
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK: {
		/* btrfs stores the kernel's internal encoding: major above bit 20 */
		dev_t dev = makedev((unsigned)(st.rdev >> 20), (unsigned)(st.rdev & 0xfffff));
		if (mknod(path, (st.mode & S_IFMT) | 0600, dev)) {
			fail_path(ex, path, strerror(errno));
			return;
		}
		break;
	}
	default:
		fail_path(ex, path, "unknown file type");
		return;
	}
	if (r)
		return;
	set_metadata(ex, ino, &st, path);
	if (!S_ISDIR(st.mode) && st.nlink > 1)
		remember_link(ex, ino, path);
}

static void extract_dir(struct ex *ex, const struct ref_ino *dir, const char *path, int depth)
{
	struct ref_dentries ch;
	int r = ref_dentries_read(ex->fs, dir, &ch);
	if (r)
		fail_path(ex, path, r == -ENOMEM ? "out of memory" : ref_error(ex->fs));
	for (size_t i = 0; i < ch.n; i++) {
		bool other_subvol = ch.e[i].ino.subvol != dir->subvol;
		if (!(other_subvol && !ex->snapshots && is_snapshot(ex, ch.e[i].ino.subvol))) {
			char *sub;
			if (asprintf(&sub, "%s/%s", path, ch.e[i].name) >= 0) {
				extract_one(ex, &ch.e[i].ino, sub, depth);
				free(sub);
			}
		}
	}
	ref_dentries_free(&ch);
}

/* A snapshot is a subvolume whose root item names a parent. */
static bool is_snapshot(struct ex *ex, uint64_t subvol)
{
	struct ref_subvol_info info;
	static const uint8_t zero[BTRFS_UUID_SIZE];
	return ref_subvol_info(ex->fs, subvol, &info) == 0 &&
	       memcmp(info.parent_uuid, zero, sizeof(zero)) != 0;
}

static int cmd_extract(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "subvol", required_argument, NULL, 's' }, { "snapshots", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },      { "degraded", no_argument, NULL, 'D' },
		{ "usebackuproot", no_argument, NULL, 'U' },
		{ "nologreplay", no_argument, NULL, 'N' }, { "help", no_argument, NULL, 'h' },
		{ "xattr", no_argument, NULL, 'x' },	    { "no-xattr", no_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 },
	};
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	struct ex ex = { 0 };
	const char *subvol = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:vxh", opts, NULL)) != -1) {
		switch (c) {
		case 's': subvol = optarg; break;
		case 'x': ex.no_xattrs = false; break;
		case 'X': ex.no_xattrs = true; break;
		case 'S': ex.snapshots = true; break;
		case 'v': ex.verbose = true; break;
		case 'D': oo.degraded = true; break;
		case 'U': oo.usebackuproot = true; break;
		case 'N': oo.nologreplay = true; break;
		case 'h': return cli_help(&cli_cmd_extract);
		default:
			return cli_usage_error(&cli_cmd_extract, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_extract, "needs at least one image and a destination");
	const char *dest = argv[argc - 1];
	sim_volume *vol;
	int rc = cli_open_fs(&cli_cmd_extract, argv + optind, argc - optind - 1, &oo, &vol, &ex.fs);
	if (rc)
		return rc;
	struct ref_ino top, start;
	uint64_t id;
	if (ref_subvol_root(ex.fs, BTRFS_FS_TREE_OBJECTID, &top))
		rc = cli_fail(&cli_cmd_extract, "%s", ref_error(ex.fs));
	else if (!subvol)
		start = top;
	else if (subvol[0] != '/' && cli_parse_u64(subvol, &id, 0) == 0)
		rc = ref_subvol_root(ex.fs, id, &start)
			     ? cli_fail(&cli_cmd_extract, "subvolume %s: %s", subvol, ref_error(ex.fs))
			     : 0;
	else if (ref_resolve(ex.fs, &top, subvol, &start))
		rc = cli_fail(&cli_cmd_extract, "subvolume %s: %s", subvol, ref_error(ex.fs));
	else if (start.ino != BTRFS_FIRST_FREE_OBJECTID)
		rc = cli_fail(&cli_cmd_extract, "%s is not a subvolume", subvol);
	if (!rc && mkdir(dest, 0755) && errno != EEXIST)
		rc = cli_fail(&cli_cmd_extract, "%s: %s", dest, strerror(errno));
	if (!rc && !(ex.buf = malloc(CHUNK)))
		rc = cli_fail(&cli_cmd_extract, "out of memory");
	if (!rc) {
		extract_dir(&ex, &start, dest, 0);
		struct ref_stat st;
		if (ref_stat(ex.fs, &start, &st) == 0)
			set_metadata(&ex, &start, &st, dest);
	}
	for (size_t i = 0; i < ex.nlinks; i++)
		free(ex.links[i].path);
	free(ex.links);
	for (size_t i = 0; i < ex.nskipped; i++)
		free(ex.skipped[i]);
	free(ex.skipped);
	free(ex.buf);
	ref_close(ex.fs);
	sim_volume_close(vol);
	return rc ? rc : ex.errors ? 1 : 0;
}

const struct cli_cmd cli_cmd_extract = {
	.name = "extract",
	.summary = "recreate the files of an image in a directory, like btrfs restore",
	.usage = usage_text,
	.run = cmd_extract,
};
