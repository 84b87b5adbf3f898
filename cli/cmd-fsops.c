/*
 * cmd-fsops.c - the commands that make one change to the file system on
 * images, each as the matching coreutils command would: mkdir, rm, mv, ln,
 * truncate, write.  Each mounts the images for writing (ref/vfs.h), does its
 * operation and commits at the end; a failure is one line naming the errno.
 * Also the mounting and reporting that cmd-put.c shares (fsops.h).
 */
#include "cli/fsops.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* ---- Shared with cmd-put.c ---- */

int cli_mount(const struct cli_cmd *cmd, char **imgs, int n, struct cli_mount *m)
{
	return cli_mount_degraded(cmd, imgs, n, false, m);
}

int cli_mount_degraded(const struct cli_cmd *cmd, char **imgs, int n, bool degraded,
		       struct cli_mount *m)
{
	struct cli_mount_opts o = { .degraded = degraded };
	return cli_mount_with(cmd, imgs, n, &o, m);
}

int cli_compress_arg(const struct cli_cmd *cmd, const char *arg, bool force,
		     struct cli_mount_opts *o)
{
	char err[160];
	if (ref_compress_parse(arg, &o->compress, &o->compress_level, err, sizeof(err)))
		return cli_usage_error(cmd, "%s", err);
	o->compress_force = force && o->compress;
	return 0;
}

int cli_mount_with(const struct cli_cmd *cmd, char **imgs, int n, const struct cli_mount_opts *o,
		   struct cli_mount *m)
{
	*m = (struct cli_mount){ .cmd = cmd };
	int rc = cli_open_volume(cmd, imgs, n, true, &m->vol);
	if (rc)
		return rc;
	struct ref_mount_opts mo = {
		.open = { .super_mirror = -1, .log = stderr, .degraded = o->degraded },
		.compress = o->compress,
		.compress_level = o->compress_level,
		.compress_force = o->compress_force,
	};
	cli_clock_now(&mo);
	char err[256], es[96];
	int r = ref_mount(m->vol, &mo, &m->fs, err, sizeof(err));
	if (r) {
		sim_volume_close(m->vol);
		m->vol = NULL;
		char msg[400];
		snprintf(msg, sizeof(msg), "%s: %s", cli_errno_str(r, es, sizeof(es)), err);
		return cli_fail_images(cmd, imgs, n, msg);
	}
	/* New files take this process's umask as the kernel would (not under
	 * a default ACL). */
	ref_umask(m->fs, cli_umask());
	return 0;
}

void cli_clock_now(struct ref_mount_opts *mo)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	mo->clock_start = (uint64_t)now.tv_sec;
	mo->clock_start_nsec = (uint32_t)now.tv_nsec;
}

int cli_subvol_at(ref_fs *fs, const char *path, uint64_t *id)
{
	struct ref_ino ino;
	int r = ref_lookup_path(fs, path, true, &ino);
	if (r)
		return r;
	if (ino.ino != BTRFS_FIRST_FREE_OBJECTID)
		return -EINVAL;
	*id = ino.subvol;
	return 0;
}

const char *cli_errno_str(int err, char *buf, size_t len)
{
	if (err < 0)
		err = -err;
	const char *name = strerrorname_np(err);
	if (name)
		snprintf(buf, len, "%s (%s)", name, strerror(err));
	else
		snprintf(buf, len, "errno %d (%s)", err, strerror(err));
	return buf;
}

void cli_report(const struct cli_mount *m, const char *what, int err, const char *msg)
{
	char es[96];
	if (!msg)
		msg = ref_error(m->fs);
	fprintf(stderr, "btrsim %s: %s: %s%s%s\n", m->cmd->name, what,
		cli_errno_str(err, es, sizeof(es)), *msg ? ": " : "", msg);
}

int cli_umount(struct cli_mount *m)
{
	/* ref_sync first, so that a failed commit can still say why. */
	int r = ref_sync(m->fs);
	if (r)
		cli_report(m, "commit", r, NULL);
	int u = ref_umount(m->fs);
	m->fs = NULL;
	if (u && !r) {
		cli_report(m, "commit", u, "");
		r = u;
	}
	sim_volume_close(m->vol);
	m->vol = NULL;
	return r ? 1 : 0;
}

int cli_abort(struct cli_mount *m)
{
	/* The operations before the failed one completed: commit them.  After
	 * a failed commit ref_umount commits nothing and returns 0. */
	int u = ref_umount(m->fs);
	m->fs = NULL;
	if (u)
		cli_report(m, "commit", u, "");
	sim_volume_close(m->vol);
	m->vol = NULL;
	return 1;
}

int cli_op_fail(struct cli_mount *m, const char *what, int err)
{
	cli_report(m, what, err, NULL);
	return cli_abort(m);
}

unsigned cli_umask(void)
{
	mode_t u = umask(022);
	umask(u);
	return (unsigned)u;
}

/* ---- Operands ---- */

/* The operands after the options: IMG... then nfs file-system paths.  Returns
 * 0 with *nimg set, or the exit status of a usage error. */
static int operands(const struct cli_cmd *cmd, int argc, int nfs, const char *what, int *nimg)
{
	int n = argc - optind;
	if (n < nfs + 1)
		return cli_usage_error(cmd, "needs at least one image and %s", what);
	*nimg = n - nfs;
	return 0;
}

/* Parses an octal mode of at most 07777. */
static int parse_mode(const char *s, uint32_t *out)
{
	if (!*s)
		return -1;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 8);
	if (errno || *end || v > 07777 || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	*out = (uint32_t)v;
	return 0;
}

#define OPT_END { NULL, 0, NULL, 0 }
#define OPT_HELP { "help", no_argument, NULL, 'h' }

/* ---- mkdir ---- */

static const char mkdir_usage[] =
	"usage: btrsim mkdir [options] IMG... PATH\n"
	"\n"
	"Create the directory PATH in the file system on the images, then commit.\n"
	"\n"
	"  -p, --parents     create missing parents too; no error when PATH is a\n"
	"                    directory already\n"
	"  -m, --mode MODE   permissions in octal, exactly (default 0777 less the\n"
	"                    umask, or masked by the parent's default ACL)\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_mkdir;

/* mkdir -p: each component in turn, existing directories kept. */
/* mkdir -m MODE's mode exactly, as coreutils': neither the umask nor a
 * default ACL may take bits from it (a chmod after, which the ACL follows). */
static int exact_mode(struct cli_mount *m, const char *path, uint32_t mode)
{
	struct ref_stat st;
	int r = ref_stat_path(m->fs, path, false, &st);
	if (r || (st.mode & 07777) == mode)
		return r;
	return ref_chmod(m->fs, path, mode);
}

/* A parent made by mkdir -p keeps the owner's write and search bits. */
static int parent_wx(struct cli_mount *m, const char *path)
{
	struct ref_stat st;
	int r = ref_stat_path(m->fs, path, false, &st);
	if (r || (st.mode & 0300) == 0300)
		return r;
	return ref_chmod(m->fs, path, (st.mode & 07777) | 0300);
}

static int mkdir_parents(struct cli_mount *m, const char *path, uint32_t mode, bool exact)
{
	char *buf = strdup(path);
	if (!buf)
		return cli_report(m, path, ENOMEM, ""), cli_abort(m);
	for (size_t i = 0;;) {
		while (buf[i] == '/')
			i++;
		if (!buf[i])
			break;
		while (buf[i] && buf[i] != '/')
			i++;
		size_t j = i;
		while (buf[j] == '/')
			j++;
		bool last = buf[j] == '\0';
		char save = buf[i];
		buf[i] = '\0';
		int r = ref_mkdir(m->fs, buf, last ? mode : 0777);
		struct ref_stat st;
		if (!r && last && exact)
			r = exact_mode(m, buf, mode);
		else if (!r && !last) /* as coreutils: a parent gets u+wx, whatever masked it */
			r = parent_wx(m, buf);
		else if (r == -EEXIST && ref_stat_path(m->fs, buf, true, &st) == 0 && S_ISDIR(st.mode))
			r = 0;
		else if (r == -EEXIST) {
			cli_report(m, buf, EEXIST, "exists and is not a directory");
			free(buf);
			return cli_abort(m);
		}
		if (r) {
			int rc = cli_op_fail(m, buf, r);
			free(buf);
			return rc;
		}
		buf[i] = save;
	}
	free(buf);
	return cli_umount(m);
}

static int cmd_mkdir(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "parents", no_argument, NULL, 'p' }, { "mode", required_argument, NULL, 'm' },
		OPT_HELP, OPT_END,
	};
	bool parents = false, exact = false;
	uint32_t mode = 0777; /* (the umask, or a default ACL, applied by ref) */
	int c, nimg = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "pm:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': parents = true; break;
		case 'm':
			if (parse_mode(optarg, &mode))
				return cli_usage_error(&cli_cmd_mkdir, "bad mode '%s' (octal, at most 07777)",
						       optarg);
			exact = true;
			break;
		case 'h': return cli_help(&cli_cmd_mkdir);
		default: return cli_usage_error(&cli_cmd_mkdir, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int rc = operands(&cli_cmd_mkdir, argc, 1, "PATH", &nimg);
	if (rc)
		return rc;
	const char *path = argv[argc - 1];
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_mkdir, argv + optind, nimg, &m)))
		return rc;
	if (parents)
		return mkdir_parents(&m, path, mode, exact);
	int r = ref_mkdir(m.fs, path, mode);
	if (!r && exact)
		r = exact_mode(&m, path, mode);
	return r ? cli_op_fail(&m, path, r) : cli_umount(&m);
}

const struct cli_cmd cli_cmd_mkdir = {
	.name = "mkdir",
	.summary = "create a directory in the file system on images",
	.usage = mkdir_usage,
	.run = cmd_mkdir,
};

/* ---- mknod ---- */

static const char mknod_usage[] =
	"usage: btrsim mknod [options] IMG... NAME TYPE [MAJOR MINOR]\n"
	"\n"
	"Make the special file NAME in the file system on the images, as mknod(1),\n"
	"then commit.  TYPE: b a block device, c (or u) a character device (both\n"
	"need MAJOR and MINOR, decimal, or 0x hex, or 0 octal), p a fifo.\n"
	"\n"
	"  -m, --mode MODE   permissions in octal (default 0666 less the umask, or\n"
	"                    masked by the parent's default ACL)\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_mknod;

static int cmd_mknod(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' }, OPT_HELP, OPT_END,
	};
	uint32_t mode = 0666;
	bool exact = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_mode(optarg, &mode))
				return cli_usage_error(&cli_cmd_mknod, "bad mode '%s' (octal, at most 07777)",
						       optarg);
			exact = true;
			break;
		case 'h': return cli_help(&cli_cmd_mknod);
		default: return cli_usage_error(&cli_cmd_mknod, "unknown option '%s'", argv[optind - 1]);
		}
	}
	/* NAME TYPE or NAME TYPE MAJOR MINOR at the end: which, by TYPE's place */
	int n = argc - optind, nfs;
	if (n >= 3 && !strcmp(argv[argc - 1], "p") && strlen(argv[argc - 1]) == 1)
		nfs = 2;
	else if (n >= 5 && strlen(argv[argc - 3]) == 1 && strchr("bcu", argv[argc - 3][0]))
		nfs = 4;
	else if (n >= 3 && strlen(argv[argc - 1]) == 1 && strchr("bcu", argv[argc - 1][0]))
		return cli_usage_error(&cli_cmd_mknod, "a %s device needs MAJOR and MINOR",
				       argv[argc - 1][0] == 'b' ? "block" : "character");
	else
		return cli_usage_error(&cli_cmd_mknod, "needs at least one image, a NAME and a TYPE (b, c, u or p)");
	const char *name = argv[argc - nfs], *type = argv[argc - nfs + 1];
	uint64_t major = 0, minor = 0;
	if (nfs == 4 && (cli_parse_u64(argv[argc - 2], &major, 0) || cli_parse_u64(argv[argc - 1], &minor, 0) ||
			 major > 0xfff || minor > 0xfffff))
		return cli_usage_error(&cli_cmd_mknod, "bad device number %s %s (MAJOR at most 4095, MINOR at most 1048575)",
				       argv[argc - 2], argv[argc - 1]);
	uint32_t kind = *type == 'p' ? S_IFIFO : *type == 'b' ? S_IFBLK : S_IFCHR;
	struct cli_mount m;
	int rc = cli_mount(&cli_cmd_mknod, argv + optind, n - nfs, &m);
	if (rc)
		return rc;
	int r = ref_mknod(m.fs, name, kind | mode, makedev((unsigned)major, (unsigned)minor));
	if (!r && exact)
		r = exact_mode(&m, name, mode);
	return r ? cli_op_fail(&m, name, r) : cli_umount(&m);
}

const struct cli_cmd cli_cmd_mknod = {
	.name = "mknod",
	.summary = "make a fifo or a device node",
	.usage = mknod_usage,
	.run = cmd_mknod,
};

/* ---- rm ---- */

static const char rm_usage[] =
	"usage: btrsim rm [options] IMG... PATH\n"
	"\n"
	"Remove PATH (a symlink itself, not what it points to) from the file system\n"
	"on the images, then commit.  A directory needs -r (or -d when empty).\n"
	"\n"
	"  -r, -R, --recursive  remove a directory and everything below it\n"
	"  -d, --dir            remove an empty directory\n"
	"  -f, --force          a missing PATH is not an error\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0, 1 when an operation or the commit failed (one line naming\n"
	"the errno; with -r what was removed before stays removed), 2 bad usage.\n";

const struct cli_cmd cli_cmd_rm;

/* Where rm -r failed: the path, and a message of its own when ref_error()
 * does not say it. */
struct rm_failure {
	char *path;
	const char *msg;
};

/* Removes the directory `path` (inode dir) and everything in it: names
 * collected first, children before their parent.  Returns 0, or -errno with
 * f saying where. */
static int rm_tree(ref_fs *fs, const char *path, const struct ref_ino *dir, struct rm_failure *f)
{
	struct ref_dentries l;
	int r = ref_dentries_read(fs, dir, &l);
	if (r) {
		f->path = strdup(path);
		if (r == -ENOMEM)
			f->msg = "out of memory";
	}
	for (size_t i = 0; i < l.n && !r; i++) {
		char *sub;
		if (asprintf(&sub, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
			     l.e[i].name) < 0) {
			r = -ENOMEM;
			f->path = strdup(path);
			f->msg = "out of memory";
			break;
		}
		if (l.e[i].type == BTRFS_FT_DIR && l.e[i].ino.subvol == dir->subvol)
			r = rm_tree(fs, sub, &l.e[i].ino, f);
		else if (l.e[i].type == BTRFS_FT_DIR)
			r = ref_rmdir(fs, sub); /* a subvolume: ref says what it thinks */
		else
			r = ref_unlink(fs, sub);
		if (r && !f->path)
			f->path = sub;
		else
			free(sub);
	}
	ref_dentries_free(&l);
	if (!r && (r = ref_rmdir(fs, path)))
		f->path = strdup(path);
	return r;
}

/* The last component of a path is "." or "..". */
static bool dot_or_dotdot(const char *path)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t n = len - start;
	return (n == 1 && path[start] == '.') || (n == 2 && !strncmp(path + start, "..", 2));
}

static int cmd_rm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "recursive", no_argument, NULL, 'r' }, { "dir", no_argument, NULL, 'd' },
		{ "force", no_argument, NULL, 'f' },     OPT_HELP, OPT_END,
	};
	bool recursive = false, dir = false, force = false;
	int c, nimg = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "rRdfh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
		case 'R': recursive = true; break;
		case 'd': dir = true; break;
		case 'f': force = true; break;
		case 'h': return cli_help(&cli_cmd_rm);
		default: return cli_usage_error(&cli_cmd_rm, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int rc = operands(&cli_cmd_rm, argc, 1, "PATH", &nimg);
	if (rc)
		return rc;
	const char *path = argv[argc - 1];
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_rm, argv + optind, nimg, &m)))
		return rc;
	struct ref_stat st;
	int r = ref_stat_path(m.fs, path, false, &st);
	if (r == -ENOENT && force)
		return cli_umount(&m);
	if (r)
		return cli_op_fail(&m, path, r);
	if (!S_ISDIR(st.mode)) {
		r = ref_unlink(m.fs, path);
		return r ? cli_op_fail(&m, path, r) : cli_umount(&m);
	}
	if (!recursive) {
		r = dir ? ref_rmdir(m.fs, path) : ref_unlink(m.fs, path); /* EISDIR, as rm */
		return r ? cli_op_fail(&m, path, r) : cli_umount(&m);
	}
	/* As rm: '.', '..' and the root are refused before anything goes. */
	struct ref_ino ino, top;
	if (dot_or_dotdot(path)) {
		cli_report(&m, path, EINVAL, "refusing to remove '.' or '..'");
		return cli_abort(&m);
	}
	if ((r = ref_lookup_path(m.fs, path, false, &ino)) ||
	    (r = ref_subvol_root(m.fs, BTRFS_FS_TREE_OBJECTID, &top)))
		return cli_op_fail(&m, path, r);
	if (ino.subvol == top.subvol && ino.ino == top.ino) {
		cli_report(&m, path, EBUSY, "refusing to remove the root directory");
		return cli_abort(&m);
	}
	if (ino.ino == BTRFS_FIRST_FREE_OBJECTID) { /* a subvolume */
		r = ref_rmdir(m.fs, path);
		return r ? cli_op_fail(&m, path, r) : cli_umount(&m);
	}
	struct rm_failure f = { 0 };
	r = rm_tree(m.fs, path, &ino, &f);
	if (!r)
		return cli_umount(&m);
	cli_report(&m, f.path ? f.path : path, r, f.msg);
	free(f.path);
	return cli_abort(&m);
}

const struct cli_cmd cli_cmd_rm = {
	.name = "rm",
	.summary = "remove a file or directory from the file system on images",
	.usage = rm_usage,
	.run = cmd_rm,
};

/* ---- mv ---- */

static const char mv_usage[] =
	"usage: btrsim mv [options] IMG... OLD NEW\n"
	"\n"
	"Rename OLD to NEW in the file system on the images, as rename(2) does, then\n"
	"commit: NEW is the new name (an existing NEW is replaced: a file by a file,\n"
	"an empty directory by a directory), never a directory to move OLD into\n"
	"(as 'mv -T').\n"
	"\n"
	"  -n, --noreplace  fail with EEXIST when NEW exists (RENAME_NOREPLACE)\n"
	"  -x, --exchange   swap OLD and NEW, which must both exist (RENAME_EXCHANGE)\n"
	"  -h, --help       show this help\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_mv;

static int cmd_mv(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "noreplace", no_argument, NULL, 'n' }, { "exchange", no_argument, NULL, 'x' },
		OPT_HELP, OPT_END,
	};
	unsigned flags = 0;
	int c, nimg = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "nxh", opts, NULL)) != -1) {
		switch (c) {
		case 'n': flags |= RENAME_NOREPLACE; break;
		case 'x': flags |= RENAME_EXCHANGE; break;
		case 'h': return cli_help(&cli_cmd_mv);
		default: return cli_usage_error(&cli_cmd_mv, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return cli_usage_error(&cli_cmd_mv, "--noreplace and --exchange exclude each other");
	int rc = operands(&cli_cmd_mv, argc, 2, "OLD NEW", &nimg);
	if (rc)
		return rc;
	const char *from = argv[argc - 2], *to = argv[argc - 1];
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_mv, argv + optind, nimg, &m)))
		return rc;
	int r = ref_rename(m.fs, from, to, flags);
	if (!r)
		return cli_umount(&m);
	char *what;
	if (asprintf(&what, "%s -> %s", from, to) < 0)
		return cli_op_fail(&m, from, r);
	rc = cli_op_fail(&m, what, r);
	free(what);
	return rc;
}

const struct cli_cmd cli_cmd_mv = {
	.name = "mv",
	.summary = "rename a file or directory in the file system on images",
	.usage = mv_usage,
	.run = cmd_mv,
};

/* ---- ln ---- */

static const char ln_usage[] =
	"usage: btrsim ln [options] IMG... TARGET LINKPATH\n"
	"\n"
	"Make LINKPATH a hard link to the file TARGET (a symlink TARGET is linked\n"
	"itself, not followed), or with -s a symlink holding the text TARGET, in the\n"
	"file system on the images, then commit.\n"
	"\n"
	"  -s, --symbolic   make a symbolic link\n"
	"  -h, --help       show this help\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_ln;

static int cmd_ln(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "symbolic", no_argument, NULL, 's' }, OPT_HELP, OPT_END,
	};
	bool symbolic = false;
	int c, nimg = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "sh", opts, NULL)) != -1) {
		switch (c) {
		case 's': symbolic = true; break;
		case 'h': return cli_help(&cli_cmd_ln);
		default: return cli_usage_error(&cli_cmd_ln, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int rc = operands(&cli_cmd_ln, argc, 2, "TARGET LINKPATH", &nimg);
	if (rc)
		return rc;
	const char *target = argv[argc - 2], *linkpath = argv[argc - 1];
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_ln, argv + optind, nimg, &m)))
		return rc;
	int r = symbolic ? ref_symlink(m.fs, target, linkpath) : ref_link(m.fs, target, linkpath);
	return r ? cli_op_fail(&m, linkpath, r) : cli_umount(&m);
}

const struct cli_cmd cli_cmd_ln = {
	.name = "ln",
	.summary = "make a hard or symbolic link in the file system on images",
	.usage = ln_usage,
	.run = cmd_ln,
};

/* ---- truncate ---- */

static const char truncate_usage[] =
	"usage: btrsim truncate -s SIZE [options] IMG... PATH\n"
	"\n"
	"Set the size of the file PATH in the file system on the images to SIZE bytes\n"
	"(K, M, G, T suffixes: powers of 1024), creating it empty first when it is\n"
	"missing, as truncate(1) does; then commit.  Growing leaves a hole.\n"
	"\n"
	"  -s, --size SIZE   the new size (required)\n"
	"  -c, --no-create   do not create PATH when missing (ENOENT)\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_truncate;

static int cmd_truncate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' }, { "no-create", no_argument, NULL, 'c' },
		OPT_HELP, OPT_END,
	};
	uint64_t size = 0;
	bool have_size = false, no_create = false;
	int c, nimg = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:ch", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_u64(optarg, &size, 1))
				return cli_usage_error(&cli_cmd_truncate, "bad size '%s'", optarg);
			have_size = true;
			break;
		case 'c': no_create = true; break;
		case 'h': return cli_help(&cli_cmd_truncate);
		default:
			return cli_usage_error(&cli_cmd_truncate, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int rc = operands(&cli_cmd_truncate, argc, 1, "PATH", &nimg);
	if (rc)
		return rc;
	if (!have_size)
		return cli_usage_error(&cli_cmd_truncate, "needs -s SIZE");
	const char *path = argv[argc - 1];
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_truncate, argv + optind, nimg, &m)))
		return rc;
	int r = ref_truncate(m.fs, path, size);
	if (r == -ENOENT && !no_create) {
		r = ref_create(m.fs, path, 0666); /* (less the umask: ref_umask) */
		if (r == 0)
			r = ref_truncate(m.fs, path, size);
		else if (r == -EEXIST) /* a dangling symlink: report the first ENOENT */
			r = ref_truncate(m.fs, path, size);
	}
	return r ? cli_op_fail(&m, path, r) : cli_umount(&m);
}

const struct cli_cmd cli_cmd_truncate = {
	.name = "truncate",
	.summary = "set the size of a file in the file system on images",
	.usage = truncate_usage,
	.run = cmd_truncate,
};

/* ---- write ---- */

static const char write_usage[] =
	"usage: btrsim write [options] IMG... PATH [SRC]\n"
	"\n"
	"Write the bytes of SRC (a host file, or - for standard input, the default)\n"
	"into the file PATH of the file system on the images at offset OFF, as\n"
	"pwrite(2) would (the file grows as needed; a hole in SRC is written as\n"
	"zeros), then commit.  Whether SRC is given is told by the number of images:\n"
	"as many as the file system has devices (the first image's superblock says).\n"
	"\n"
	"  -o, --offset OFF   where to write in PATH (K, M, G, T suffixes; default 0)\n"
	"  -c, --create       create PATH (mode 0666 less the umask) when missing\n"
	CLI_COMPRESS_HELP
	"  -h, --help         show this help\n"
	"\n"
	"Data goes in pieces of 1 MiB, each an operation of its own: a failure\n"
	"leaves the pieces before it written.\n"
	"\n"
	"Exit status: 0, 1 when an operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_write;

#define WRITE_CHUNK (1u << 20)

/* Reads up to len bytes (fewer only at the end of the input). */
static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int cmd_write(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "offset", required_argument, NULL, 'o' }, { "create", no_argument, NULL, 'c' },
		{ "compress", optional_argument, NULL, 'C' },
		{ "compress-force", optional_argument, NULL, 'F' },
		OPT_HELP, OPT_END,
	};
	uint64_t off = 0;
	bool create = false;
	struct cli_mount_opts mo = { 0 };
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:ch", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_parse_u64(optarg, &off, 1))
				return cli_usage_error(&cli_cmd_write, "bad offset '%s'", optarg);
			break;
		case 'c': create = true; break;
		case 'C':
		case 'F':
			if ((rc = cli_compress_arg(&cli_cmd_write, optarg, c == 'F', &mo)))
				return rc;
			break;
		case 'h': return cli_help(&cli_cmd_write);
		default: return cli_usage_error(&cli_cmd_write, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int n = argc - optind;
	if (n < 2)
		return cli_usage_error(&cli_cmd_write, "needs at least one image and PATH");
	int ndev = n == 2 ? 1 : cli_volume_devices(&cli_cmd_write, argv[optind], &rc);
	if (ndev < 0)
		return rc;
	int nimg;
	if (ndev == 0 || n == ndev + 1)
		nimg = n - 1; /* unknown: take PATH last, SRC standard input */
	else if (n == ndev + 2)
		nimg = n - 2;
	else
		return cli_usage_error(&cli_cmd_write,
				       "the file system has %d device%s: give %d image%s, PATH and "
				       "optionally SRC",
				       ndev, ndev == 1 ? "" : "s", ndev, ndev == 1 ? "" : "s");
	const char *path = argv[optind + nimg];
	const char *src = nimg == n - 2 ? argv[argc - 1] : "-";
	int fd = 0;
	char es[96];
	if (strcmp(src, "-") && (fd = open(src, O_RDONLY | O_CLOEXEC)) < 0)
		return cli_fail(&cli_cmd_write, "%s: %s", src, cli_errno_str(errno, es, sizeof(es)));
	uint8_t *buf = malloc(WRITE_CHUNK);
	if (!buf) {
		if (fd)
			close(fd);
		return cli_fail(&cli_cmd_write, "out of memory");
	}
	struct cli_mount m;
	if ((rc = cli_mount_with(&cli_cmd_write, argv + optind, nimg, &mo, &m))) {
		free(buf);
		if (fd)
			close(fd);
		return rc;
	}
	int r = 0;
	if (create && (r = ref_create(m.fs, path, 0666)) == -EEXIST)
		r = 0;
	uint64_t done = 0;
	for (bool first = true; !r; first = false) {
		ssize_t got = read_full(fd, buf, WRITE_CHUNK);
		if (got < 0) {
			r = -errno;
			char what[64];
			snprintf(what, sizeof(what), "reading failed after %llu bytes",
				 (unsigned long long)done);
			cli_report(&m, strcmp(src, "-") ? src : "standard input", r, what);
			cli_abort(&m); /* commit what was written */
			free(buf);
			if (fd)
				close(fd);
			return 1;
		}
		if (got == 0 && !first)
			break;
		/* A first write of nothing still checks that PATH is a file. */
		ssize_t w = ref_write(m.fs, path, buf, (size_t)got, off + done);
		if (w < 0)
			r = (int)w;
		else
			done += (uint64_t)got;
		if (got < WRITE_CHUNK)
			break;
	}
	free(buf);
	if (fd)
		close(fd);
	if (!r)
		return cli_umount(&m);
	if (done) {
		char what[4200];
		snprintf(what, sizeof(what), "%s (after %llu bytes)", path, (unsigned long long)done);
		return cli_op_fail(&m, what, r);
	}
	return cli_op_fail(&m, path, r);
}

const struct cli_cmd cli_cmd_write = {
	.name = "write",
	.summary = "write data into a file in the file system on images",
	.usage = write_usage,
	.run = cmd_write,
};
