/*
 * test_run_host.c - the host target (traces/run_host.c) on a fresh temporary
 * directory (under $TMPDIR or /tmp, whatever file system that is; nothing is
 * mounted): the exact
 * Linux errnos of name operations, of "/" and of ".", "..", 256-byte names
 * and trailing slashes; paths that try to leave the root (".." and absolute
 * symlinks) stay inside it; the data of `write` read back; punch-hole;
 * xattrs; chmod, chown, utimes; `crash` refused; and a generated workload
 * run twice gives the same results.
 */
#include "traces/run.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

/* base/ holds only root/, the directory the workload sees as "/": anything
 * that escaped the root would show up in base/. */
static char base[256];
static char root[300];
static struct wl_host host;

static void setup(void)
{
	const char *tmp = getenv("TMPDIR"); /* TMPDIR=/dev/shm: the same on tmpfs */
	snprintf(base, sizeof(base), "%s/btrsim-host-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(base), "mkdtemp: %s", strerror(errno));
	snprintf(root, sizeof(root), "%s/root", base);
	cr_assert_eq(mkdir(root, 0755), 0);
	char err[256];
	int r = wl_host_open(root, &host, err, sizeof(err));
	cr_assert_eq(r, 0, "wl_host_open: %d %s", r, err);
	cr_assert_geq(host.rootfd, 0);
	cr_assert_str_eq(host.root, root);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void teardown(void)
{
	wl_host_close(&host);
	cr_assert_eq(host.rootfd, -1);
	cr_assert_null(host.root);
	if (base[0])
		nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

TestSuite(run_host, .init = setup, .fini = teardown);

/* Parses one line and runs it on the host: 0 or the negative errno. */
static int run(const char *line)
{
	struct wl_workload w = { 0 };
	char err[512];
	int r = wl_parse_text("t", line, strlen(line), &w, err, sizeof(err));
	cr_assert_eq(r, 0, "%s: %s", line, err);
	cr_assert_eq(w.n, 1, "%s", line);
	r = wl_exec_host(&host, &w.ops[0], err, sizeof(err));
	if (r)
		cr_assert_neq(err[0], 0, "%s: %d with no message", line, r);
	wl_free(&w);
	return r;
}

/* Runs line, asserting errno e (0: success). */
static void expect(const char *line, int e)
{
	int r = run(line);
	cr_assert_eq(r, -e, "%s: got %s, want %s", line, wl_errno_name(-r) ? wl_errno_name(-r) : "?",
		     wl_errno_name(e));
}

/* Runs a text of lines "OP [= ERRNO]", each against its expectation. */
static void expect_all(const char *text)
{
	struct wl_workload w = { 0 };
	char err[512];
	int r = wl_parse_text("t", text, strlen(text), &w, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	for (size_t i = 0; i < w.n; i++) {
		char line[600];
		wl_format(&w.ops[i], line, sizeof(line));
		r = wl_exec_host(&host, &w.ops[i], err, sizeof(err));
		cr_assert_eq(r, -w.ops[i].expect, "line %zu: %s: got %s, want %s (%s)", w.ops[i].line,
			     line, r ? wl_errno_name(-r) : "0", wl_errno_name(w.ops[i].expect), err);
	}
	wl_free(&w);
}

/* The host path of workload path p. */
static const char *hp(const char *p)
{
	static char buf[4][1024];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, 1024, "%s%s", root, p);
	return b;
}

/* The entries of base/ must be exactly root/. */
static void assert_nothing_outside(void)
{
	DIR *d = opendir(base);
	cr_assert_not_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		cr_assert(!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
				  !strcmp(de->d_name, "root"),
			  "%s/%s was made outside the root", base, de->d_name);
	closedir(d);
}

Test(run_host, name_errnos)
{
	expect_all("mkdir /a\n"
		   "mkdir /a = EEXIST\n"
		   "create /a/f\n"
		   "create /a/f = EEXIST\n"
		   "rmdir /a = ENOTEMPTY\n"
		   "rmdir /a/. = EINVAL\n"
		   "rmdir /a/.. = ENOTEMPTY\n"
		   "rmdir /a/f = ENOTDIR\n"
		   "unlink /a = EISDIR\n"
		   "unlink /a/. = EISDIR\n"
		   "write /a 0 10 = EISDIR\n"
		   "truncate /a 0 = EISDIR\n"
		   "mkdir /a/b\n"
		   "rename /a /a/b/c = EINVAL\n"
		   "rename /a /a/b = EINVAL\n"
		   "rename /a/. /z = EBUSY\n"
		   "rename /a/f /a/.. = EBUSY\n"
		   "link /a /l = EPERM\n"
		   "link /a/f /a/b = EEXIST\n"
		   "link /a/f /a/. = EEXIST\n"
		   "mkdir /a/. = EEXIST\n"
		   "mkdir /a/.. = EEXIST\n"
		   "symlink t /a/.. = EEXIST\n"
		   "create /a/.. = EEXIST\n"
		   "create /nope/f = ENOENT\n"
		   "mkdir /a/f/x = ENOTDIR\n"
		   "rename /a/f/ /a/g = ENOTDIR\n"
		   "rename /a/f /a/g/ = ENOTDIR\n"
		   "unlink /a/f/ = ENOTDIR\n"
		   "mkdir /t/\n"
		   "rename /t/ /u/\n"
		   "rmdir /u/\n"
		   "symlink /l2 /l1\n"
		   "symlink /l1 /l2\n"
		   "mkdir /l1/x = ELOOP\n"
		   "write /l1 0 1 = ELOOP\n"
		   "unlink /l1\n"
		   "unlink /l2\n"
		   "unlink /nope = ENOENT\n"
		   "rmdir /a/b\n"
		   "create /a/g\n"
		   "rename /a/f /a/g noreplace = EEXIST\n"
		   "rename /a/f /a/h exchange = ENOENT\n"
		   "rename /a/f /a/g exchange\n"
		   "rename /a/f /a/g\n"
		   "link /missing /a/g/x = ENOENT\n" /* OLD is looked up before NEW's parent */
		   "link /a/g /a/g/x = ENOTDIR\n");
	/* 255 bytes is a name, 256 is not; a path of PATH_MAX bytes is not either */
	char n255[256], n256[257], line[5000];
	memset(n255, 'x', 255);
	n255[255] = 0;
	memset(n256, 'y', 256);
	n256[256] = 0;
	static const struct { const char *fmt; int e; } cases[] = {
		{ "create /%s", 0 },
		{ "mkdir /a/%s", 0 },
		{ "write /a/%s 0 1 = EISDIR", EISDIR },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(line, sizeof(line), cases[i].fmt, n255);
		expect(line, cases[i].e);
	}
	static const char *const too_long[] = {
		"create /%s", "mkdir /%s", "mkdir /a/%s/x", "symlink t /%s", "rename /a/g /%s",
		"link /a/g /%s", "unlink /%s", "rmdir /%s", "write /%s 0 1",
	};
	for (size_t i = 0; i < sizeof(too_long) / sizeof(too_long[0]); i++) {
		snprintf(line, sizeof(line), too_long[i], n256);
		expect(line, ENAMETOOLONG);
	}
	char deep[4300] = "mkdir ", deep2[4300] = "create ";
	for (int i = 0; i < 2100; i++) {
		strcat(deep, "/a");
		strcat(deep2, "/a");
	}
	expect(deep, ENAMETOOLONG);
	expect(deep2, ENAMETOOLONG);
	struct stat st;
	cr_assert_eq(stat(hp("/a/g"), &st), 0);
	cr_assert_eq(stat(hp("/a/f"), &st), -1);
}

Test(run_host, the_root_directory)
{
	expect_all("create /f\n"
		   "mkdir /d\n"
		   "rmdir / = EBUSY\n"
		   "rmdir // = EBUSY\n"
		   "mkdir / = EEXIST\n"
		   "unlink / = EISDIR\n"
		   "symlink t / = EEXIST\n"
		   "link /f / = EEXIST\n"
		   "link /missing / = ENOENT\n"
		   "link / /g = EPERM\n"
		   "rename / /z = EBUSY\n"
		   "rename / /missing/z = ENOENT\n" /* both parents first */
		   "rename /f / = EBUSY\n"
		   "rename /f // noreplace = EEXIST\n"
		   "rename /d/. / = EBUSY\n"
		   "rename /f / exchange = EBUSY\n"
		   "create / = EEXIST\n"
		   "write / 0 1 = EISDIR\n"
		   "fsync /\n"
		   "fdatasync //\n"
		   "chmod / 0755\n"
		   "rmdir /.. = ENOTEMPTY\n"
		   "rmdir /. = EINVAL\n"
		   "unlink /.. = EISDIR\n"
		   "link /.. /up = EPERM\n"
		   "rename /.. /up = EBUSY\n"
		   "rmdir /../root = ENOENT\n" /* ".." stops at the root: no /root inside */
		   "rmdir /../../d\n");	    /* ... and is the root itself */
	struct stat st;
	cr_assert_eq(stat(root, &st), 0, "the root is still there");
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(stat(hp("/d"), &st), -1, "/../../d was /d");
	assert_nothing_outside();
}

/* Size, mtime and a checksum of a host file. */
static void fingerprint(const char *path, struct stat *st, uint64_t *sum)
{
	cr_assert_eq(stat(path, st), 0, "%s", path);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	uint64_t h = 1469598103934665603ULL;
	int c;
	while ((c = fgetc(f)) != EOF)
		h = (h ^ (uint64_t)c) * 1099511628211ULL;
	fclose(f);
	*sum = h;
}

Test(run_host, paths_stay_inside_the_root)
{
	struct stat before, after;
	uint64_t sb, sa;
	fingerprint("/etc/passwd", &before, &sb);
	expect("symlink /../../etc /x", 0);
	int r = run("create /x/passwd");
	cr_assert(r == -ENOENT || r == -EXDEV, "create /x/passwd: %d", r);
	expect("symlink ../../../../../../etc/passwd /p", 0);
	r = run("write /p 0 4096 1");
	cr_assert(r == -ENOENT || r == -EXDEV, "write /p: %d", r);
	r = run("truncate /x/passwd 0");
	cr_assert(r == -ENOENT || r == -EXDEV, "truncate /x/passwd: %d", r);
	expect("create /../../../../escaped", 0);
	expect("mkdir /../escaped-dir", 0);
	expect("symlink /.. /up", 0);
	expect("create /up/up/escaped2", 0);
	expect("rename /escaped /../../escaped3", 0);
	expect("link /escaped2 /up/../escaped4", 0);
	fingerprint("/etc/passwd", &after, &sa);
	cr_assert_eq(sa, sb, "/etc/passwd changed");
	cr_assert_eq(after.st_size, before.st_size);
	cr_assert_eq(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	cr_assert_eq(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	cr_assert_eq(after.st_ino, before.st_ino);
	assert_nothing_outside();
	struct stat st;
	cr_assert_eq(stat(hp("/escaped3"), &st), 0);
	cr_assert_eq(stat(hp("/escaped-dir"), &st), 0);
	cr_assert_eq(stat(hp("/escaped2"), &st), 0);
	cr_assert_eq(stat(hp("/escaped4"), &st), 0);
	/* with an /etc inside the root, the symlink leads there */
	expect("mkdir /etc", 0);
	expect("create /x/passwd", 0);
	expect("write /p 0 100 1", 0);
	cr_assert_eq(stat(hp("/etc/passwd"), &st), 0);
	cr_assert_eq(st.st_size, 100);
	fingerprint("/etc/passwd", &after, &sa);
	cr_assert_eq(sa, sb, "/etc/passwd changed");
	assert_nothing_outside();
}

/* Reads len bytes at off of workload file p and compares with wl_content. */
static void assert_content(const char *p, uint64_t seed, uint64_t off, size_t len)
{
	int fd = open(hp(p), O_RDONLY);
	cr_assert_geq(fd, 0, "%s", p);
	uint8_t *got = malloc(len), *want = malloc(len);
	cr_assert_eq(pread(fd, got, len, (off_t)off), (ssize_t)len);
	wl_content(seed, off, want, len);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(got[i], want[i], "%s: byte %llu", p, (unsigned long long)(off + i));
	free(got);
	free(want);
	close(fd);
}

static void assert_zeros(const char *p, uint64_t off, size_t len)
{
	int fd = open(hp(p), O_RDONLY);
	cr_assert_geq(fd, 0);
	uint8_t *got = malloc(len);
	cr_assert_eq(pread(fd, got, len, (off_t)off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(got[i], 0, "%s: byte %llu not zero", p, (unsigned long long)(off + i));
	free(got);
	close(fd);
}

static off_t size_of(const char *p)
{
	struct stat st;
	cr_assert_eq(stat(hp(p), &st), 0, "%s", p);
	return st.st_size;
}

Test(run_host, write_data)
{
	expect_all("create /f\n"
		   "write /f 1000 100000 7\n"
		   "write /f 3145733 2097275 9\n" /* 3 MiB + 5, 2 MiB + 123: three chunks */
		   "write /f 50 0 3\n"		   /* nothing */
		   "write /missing 0 1 = ENOENT\n"
		   "write /f 0x7fffffffffffff00 4096 = EINVAL\n" /* ends past 2^63 - 1 */
		   "write /f 0x8000000000000000 1 = EINVAL\n"
		   "truncate /f 0x8000000000000000 = EINVAL\n"
		   "truncate /missing 0x8000000000000000 = EINVAL\n" /* before the lookup */
		   "fallocate /f 0x7fffffffffff0000 1M = EFBIG\n"
		   "symlink f /s\n"
		   "write /s 200000 10 5\n" /* through the symlink */
		   "create /g 0600\n"
		   "write /g 4K 4K 1\n"
		   "truncate /g 6K\n");
	assert_content("/f", 7, 1000, 100000);
	assert_zeros("/f", 101000, 99000);
	assert_content("/f", 5, 200000, 10);
	assert_zeros("/f", 200010, 3145733 - 200010);
	assert_content("/f", 9, 3145733, 2097275);
	cr_assert_eq(size_of("/f"), 3145733 + 2097275);
	assert_zeros("/g", 0, 4096);
	assert_content("/g", 1, 4096, 2048);
	cr_assert_eq(size_of("/g"), 6144);
	struct stat st;
	cr_assert_eq(stat(hp("/g"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600, "umask 0: mode %o", st.st_mode & 07777);
	cr_assert_eq(lstat(hp("/s"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
}

Test(run_host, fallocate)
{
	expect_all("create /p\n"
		   "write /p 0 64K 3\n"
		   "fallocate /p 4K 8K punch-hole\n"
		   "fallocate /p 60K 100K keep-size\n"
		   "create /q\n"
		   "fallocate /q 0 10000\n"
		   "fallocate /missing 0 1 = ENOENT\n"
		   "fallocate / 0 1 = EISDIR\n");
	assert_content("/p", 3, 0, 4096);
	assert_zeros("/p", 4096, 8192);
	assert_content("/p", 3, 12288, 65536 - 12288);
	cr_assert_eq(size_of("/p"), 65536, "keep-size keeps it");
	cr_assert_eq(size_of("/q"), 10000);
	assert_zeros("/q", 0, 10000);
}

Test(run_host, xattrs)
{
	expect_all("create /f\n"
		   "mkdir /d\n"
		   "setxattr /f \"\" v = ERANGE\n"
		   "setxattr /missing \"\" v = ERANGE\n" /* the name is checked first */
		   "removexattr /missing \"\" = ERANGE\n");
	int r = run("setxattr /f user.t \"hello\\x00x\"");
	if (r == -EOPNOTSUPP) {
		cr_log_warn("user xattrs unsupported on %s: xattr checks skipped", root);
		return;
	}
	cr_assert_eq(r, 0, "setxattr: %d", r);
	char v[64];
	ssize_t n = getxattr(hp("/f"), "user.t", v, sizeof(v));
	cr_assert_eq(n, 7);
	cr_assert(!memcmp(v, "hello\0x", 7));
	expect_all("setxattr /d user.e \"\"\n"
		   "symlink f /s\n"
		   "setxattr /s user.via-link 0x00ff\n" /* follows the symlink */
		   "removexattr /f user.t\n"
		   "removexattr /f user.t = ENODATA\n"
		   "removexattr /missing user.t = ENOENT\n");
	cr_assert_eq(getxattr(hp("/d"), "user.e", v, sizeof(v)), 0);
	cr_assert_eq(getxattr(hp("/f"), "user.via-link", v, sizeof(v)), 2);
	cr_assert(!memcmp(v, "\x00\xff", 2));
	cr_assert_eq(getxattr(hp("/f"), "user.t", v, sizeof(v)), -1);
	cr_assert_eq(errno, ENODATA);
}

Test(run_host, attributes)
{
	expect_all("create /f\n"
		   "mkdir /d 0700\n"
		   "symlink f /s\n"
		   "chmod /s 4640\n" /* follows */
		   "chmod /d 1777\n"
		   "chmod /missing 0644 = ENOENT\n"
		   "chown /f 1000 2000\n"
		   "chown /f -1 3000\n"
		   "utimes /f 100.5 200.25\n"
		   "utimes /d omit 300\n"
		   "utimes /missing omit omit\n" /* nothing to do, no lookup */
		   "utimes /missing 1 omit = ENOENT\n"
		   "fsync /f\n"
		   "fsync /s\n"
		   "fdatasync /d\n"
		   "fsync /missing = ENOENT\n"
		   "sync\n"
		   "mark here\n");
	struct stat st;
	cr_assert_eq(stat(hp("/f"), &st), 0);
	/* chown after chmod clears set-user-ID: only the chown order matters here */
	cr_assert_eq(st.st_uid, 1000);
	cr_assert_eq(st.st_gid, 3000);
	cr_assert_eq(st.st_atim.tv_sec, 100);
	cr_assert_eq(st.st_atim.tv_nsec, 500000000);
	cr_assert_eq(st.st_mtim.tv_sec, 200);
	cr_assert_eq(st.st_mtim.tv_nsec, 250000000);
	cr_assert_eq(st.st_mode & 0777, 0640);
	cr_assert_eq(stat(hp("/d"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 01777);
	cr_assert_eq(st.st_mtim.tv_sec, 300);
	cr_assert_eq(lstat(hp("/s"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the symlink itself is untouched");
}

Test(run_host, links)
{
	expect_all("create /f\n"
		   "symlink f /s\n"
		   "symlink /nowhere /dangling\n"
		   "link /s /s2\n" /* the symlink itself, not its target */
		   "link /dangling /d2\n"
		   "link /f /g\n"
		   "link /f/ /h = ENOTDIR\n");
	struct stat f, s, s2, g, d2;
	cr_assert_eq(stat(hp("/f"), &f), 0);
	cr_assert_eq(lstat(hp("/s"), &s), 0);
	cr_assert_eq(lstat(hp("/s2"), &s2), 0);
	cr_assert_eq(lstat(hp("/d2"), &d2), 0);
	cr_assert_eq(stat(hp("/g"), &g), 0);
	cr_assert(S_ISLNK(s2.st_mode));
	cr_assert(S_ISLNK(d2.st_mode));
	cr_assert_eq(s2.st_ino, s.st_ino);
	cr_assert_eq(g.st_ino, f.st_ino);
	cr_assert_eq(g.st_nlink, 2);
}

Test(run_host, runner_operations)
{
	struct wl_op op = { .kind = WL_CRASH };
	char err[128];
	cr_assert_eq(wl_exec_host(&host, &op, err, sizeof(err)), -EOPNOTSUPP);
	cr_assert_str_eq(err, "crash cannot be run on a host directory");
	op.kind = WL_MARK;
	op.name = (char *)"m";
	cr_assert_eq(wl_exec_host(&host, &op, err, sizeof(err)), 0);
	struct wl_op bad = { .kind = WL_MKDIR, .path = (char *)"relative" };
	cr_assert_eq(wl_exec_host(&host, &bad, err, sizeof(err)), -EINVAL);
	cr_assert_neq(err[0], 0);
	cr_assert_eq(wl_exec_host(&host, &bad, NULL, 0), -EINVAL, "no message buffer is fine");
}

/* Subvolume operations and quota-enable are btrfs's ioctls: on another file
 * system the ioctl's errno (ENOTTY); the checks before the ioctl hold anywhere: the path
 * resolution's errnos, the root ("/" is no name to create or delete).  On
 * btrfs (tests/interop, the model's cross-check) they do what they say. */
Test(run_host, subvolumes_elsewhere)
{
	struct statfs sf;
	cr_assert_eq(statfs(root, &sf), 0);
	if (sf.f_type == 0x9123683e) /* BTRFS_SUPER_MAGIC */
		cr_skip_test("%s is on btrfs: the subvolume ioctls work there", root);
	expect_all("mkdir /d\ncreate /f\n"
		   "subvol-create /s = ENOTTY\n"
		   "subvol-create / = EEXIST\n"
		   "subvol-create /nope/s = ENOENT\n"
		   "subvol-create /f/s = ENOTDIR\n"
		   "snapshot / /t = ENOTTY\n"
		   "snapshot /d /t ro = ENOTTY\n"
		   "snapshot /nope /t = ENOENT\n"
		   "snapshot /d /nope/t = ENOENT\n"
		   "snapshot /d / = EEXIST\n"
		   "subvol-delete /d = ENOTTY\n"
		   "subvol-delete / = EPERM\n"
		   "subvol-delete /nope/x = ENOENT\n"
		   "subvol-sync = ENOTTY\n"
		   "quota-enable = ENOTTY\n");
	/* nothing was made */
	struct stat st;
	cr_assert_eq(lstat(hp("/s"), &st), -1);
	cr_assert_eq(lstat(hp("/t"), &st), -1);
}

Test(run_host, open_errors)
{
	struct wl_host h;
	char err[256];
	cr_assert_eq(wl_host_open("/nonexistent/btrsim", &h, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "/nonexistent/btrsim"), "%s", err);
	cr_assert_eq(h.rootfd, -1);
	wl_host_close(&h);
	cr_assert_eq(run("create /file"), 0);
	cr_assert_eq(wl_host_open(hp("/file"), &h, err, sizeof(err)), -ENOTDIR);
	wl_host_close(&h);
}

/* The results of w on a fresh directory root/NAME. */
static int *results(const struct wl_workload *w, const char *name)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	cr_assert_eq(mkdir(dir, 0755), 0);
	struct wl_host h;
	char err[512];
	cr_assert_eq(wl_host_open(dir, &h, err, sizeof(err)), 0, "%s", err);
	int *res = calloc(w->n, sizeof(*res));
	for (size_t i = 0; i < w->n; i++) {
		res[i] = wl_exec_host(&h, &w->ops[i], err, sizeof(err));
		cr_assert(res[i] <= 0 && wl_errno_name(-res[i]), "op %zu: %d", i, res[i]);
		cr_assert(res[i] != -EINVAL || w->ops[i].kind == WL_WRITE ||
				  w->ops[i].kind == WL_TRUNCATE || w->ops[i].kind == WL_RMDIR ||
				  w->ops[i].kind == WL_RENAME || w->ops[i].kind == WL_FALLOCATE,
			  "op %zu (%s): EINVAL: %s", i, wl_kind_name(w->ops[i].kind), err);
	}
	wl_host_close(&h);
	return res;
}

Test(run_host, generated_workload)
{
	struct wl_gen_opts o = { .seed = 2024, .ops = 400 };
	wl_gen_defaults(&o);
	o.max_offset = 64 << 20;
	struct wl_workload w = { 0 };
	cr_assert_eq(wl_generate(&o, &w), 0);
	int *a = results(&w, "one"), *b = results(&w, "two");
	size_t ok = 0;
	for (size_t i = 0; i < w.n; i++) {
		cr_assert_eq(a[i], b[i], "op %zu: %d then %d", i, a[i], b[i]);
		ok += a[i] == 0;
	}
	cr_log_info("generated workload: %zu of %zu ops succeeded", ok, w.n);
	cr_assert_gt(ok, w.n * 6 / 10, "most ops succeed: %zu of %zu", ok, w.n);
	free(a);
	free(b);
	wl_free(&w);
	assert_nothing_outside();
}
