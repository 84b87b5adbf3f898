/*
 * test_workload.c - the workload language of traces/: every operation with
 * its defaults and options, comments, quoting, numbers, expected errnos,
 * the exact message of each parse error, files that are not text or have
 * very long lines, printing and parsing back, errno names, and the data of
 * `write` (wl_content).
 */
#include "traces/workload.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------ */

/* Parses text (named "w.txt"), asserting success. */
static void parse_ok(const char *text, struct wl_workload *w)
{
	char err[512];
	int r = wl_parse_text("w.txt", text, strlen(text), w, err, sizeof(err));
	cr_assert_eq(r, 0, "%s: %d %s", text, r, err);
	cr_assert_str_eq(err, "");
}

/* Parses one line that must give one op; the caller frees *w. */
static const struct wl_op *one(const char *line, struct wl_workload *w)
{
	parse_ok(line, w);
	cr_assert_eq(w->n, 1, "%s: %zu ops", line, w->n);
	return &w->ops[0];
}

/* Parses text of len bytes, asserting a parse error with message want. */
static void parse_err_len(const char *text, size_t len, const char *want)
{
	struct wl_workload w = { 0 };
	char err[512];
	int r = wl_parse_text("w.txt", text, len, &w, err, sizeof(err));
	cr_assert_eq(r, -EINVAL, "%s: %d, want -EINVAL", text, r);
	cr_assert_str_eq(err, want, "%s: got \"%s\"", text, err);
	cr_assert_eq(w.n, 0, "a failed parse leaves the workload empty");
	cr_assert_null(w.ops);
	cr_assert_null(w.name);
}

static void parse_err(const char *text, const char *want)
{
	parse_err_len(text, strlen(text), want);
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Every field of two ops but line is the same. */
static void assert_op_eq(const struct wl_op *a, const struct wl_op *b, const char *what)
{
	cr_assert_eq(a->kind, b->kind, "%s: kind", what);
	cr_assert_eq(a->expect, b->expect, "%s: expect", what);
	cr_assert(str_eq(a->path, b->path), "%s: path", what);
	cr_assert(str_eq(a->path2, b->path2), "%s: path2", what);
	cr_assert(str_eq(a->name, b->name), "%s: name", what);
	cr_assert_eq(a->vlen, b->vlen, "%s: vlen", what);
	cr_assert(!a->vlen || !memcmp(a->value, b->value, a->vlen), "%s: value", what);
	cr_assert_eq(a->off, b->off, "%s: off", what);
	cr_assert_eq(a->off2, b->off2, "%s: off2", what);
	cr_assert_eq(a->len, b->len, "%s: len", what);
	cr_assert_eq(a->size, b->size, "%s: size", what);
	cr_assert_eq(a->seed, b->seed, "%s: seed", what);
	cr_assert_eq(a->mode, b->mode, "%s: mode", what);
	cr_assert_eq(a->uid, b->uid, "%s: uid", what);
	cr_assert_eq(a->gid, b->gid, "%s: gid", what);
	cr_assert_eq(a->flags, b->flags, "%s: flags", what);
	cr_assert_eq(a->atime.tv_sec, b->atime.tv_sec, "%s: atime", what);
	cr_assert_eq(a->atime.tv_nsec, b->atime.tv_nsec, "%s: atime ns", what);
	cr_assert_eq(a->mtime.tv_sec, b->mtime.tv_sec, "%s: mtime", what);
	cr_assert_eq(a->mtime.tv_nsec, b->mtime.tv_nsec, "%s: mtime ns", what);
}

/* wl_format's line for op, malloc'd. */
static char *format(const struct wl_op *op)
{
	int n = wl_format(op, NULL, 0);
	cr_assert_geq(n, 0, "wl_format: %d", n);
	char *buf = malloc((size_t)n + 1);
	cr_assert_eq(wl_format(op, buf, (size_t)n + 1), n);
	cr_assert_eq(strlen(buf), (size_t)n);
	return buf;
}

/* A temporary file holding len bytes; the caller unlinks and frees it. */
static char *temp_file(const void *data, size_t len)
{
	char *path = strdup("/tmp/btrsim-wl-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

/* ---- operations --------------------------------------------------------- */

Test(workload, every_operation_parses_with_its_defaults)
{
	struct wl_workload w = { 0 };
	parse_ok("mkdir /d\n"
		 "create /d/f\n"
		 "write /d/f 0 4096\n"
		 "truncate /d/f 100\n"
		 "fallocate /d/f 4096 8192\n"
		 "link /d/f /d/g\n"
		 "symlink ../f /d/s\n"
		 "rename /d/g /d/h\n"
		 "unlink /d/h\n"
		 "rmdir /e\n"
		 "setxattr /d/f user.a v\n"
		 "removexattr /d/f user.a\n"
		 "chmod /d/f 0600\n"
		 "chown /d/f 1000 100\n"
		 "utimes /d/f 10 20\n"
		 "fsync /d/f\n"
		 "fdatasync /d\n"
		 "sync\n"
		 "mark after-sync\n"
		 "crash\n"
		 "subvol-create /sv\n"
		 "snapshot /sv /snap\n"
		 "subvol-delete /snap\n"
		 "subvol-sync\n"
		 "quota-enable\n"
		 "balance\n"
		 "defrag /d/f\n"
		 "receive 0x00ff /r\n"
		 "clone /d/f /d/g\n"
		 "clone-range /d/f 4K 8K /d/g 0x10K\n"
		 "dedupe /d/f 0 1M /d/g 4096\n"
		 "device-remove 2\n"
		 "pwrite /d/f 4K \"abc\"\n",
		 &w);
	cr_assert_eq(w.n, WL_NKINDS, "one line per kind, in enum order");
	cr_assert_str_eq(w.name, "w.txt");
	for (size_t i = 0; i < w.n; i++) {
		cr_assert_eq(w.ops[i].kind, (enum wl_kind)i);
		cr_assert_eq(w.ops[i].line, i + 1);
		cr_assert_eq(w.ops[i].expect, 0);
	}
	const struct wl_op *o = w.ops;
	cr_assert_str_eq(o[WL_MKDIR].path, "/d");
	cr_assert_eq(o[WL_MKDIR].mode, 0755);
	cr_assert_eq(o[WL_CREATE].mode, 0644);
	cr_assert_eq(o[WL_WRITE].off, 0);
	cr_assert_eq(o[WL_WRITE].len, 4096);
	cr_assert_eq(o[WL_WRITE].seed, 0);
	cr_assert_eq(o[WL_TRUNCATE].size, 100);
	cr_assert_eq(o[WL_FALLOCATE].off, 4096);
	cr_assert_eq(o[WL_FALLOCATE].len, 8192);
	cr_assert_eq(o[WL_FALLOCATE].flags, 0);
	cr_assert_str_eq(o[WL_LINK].path, "/d/f");
	cr_assert_str_eq(o[WL_LINK].path2, "/d/g");
	cr_assert_str_eq(o[WL_SYMLINK].path, "/d/s", "symlink: path is the new link");
	cr_assert_str_eq(o[WL_SYMLINK].path2, "../f", "symlink: path2 is the target");
	cr_assert_eq(o[WL_RENAME].flags, 0);
	cr_assert_str_eq(o[WL_RENAME].path2, "/d/h");
	cr_assert_str_eq(o[WL_UNLINK].path, "/d/h");
	cr_assert_str_eq(o[WL_RMDIR].path, "/e");
	cr_assert_str_eq(o[WL_SETXATTR].name, "user.a");
	cr_assert_eq(o[WL_SETXATTR].vlen, 1);
	cr_assert_eq(o[WL_SETXATTR].value[0], 'v');
	cr_assert_str_eq(o[WL_REMOVEXATTR].name, "user.a");
	cr_assert_eq(o[WL_CHMOD].mode, 0600);
	cr_assert_eq(o[WL_CHOWN].uid, 1000);
	cr_assert_eq(o[WL_CHOWN].gid, 100);
	cr_assert_eq(o[WL_UTIMES].atime.tv_sec, 10);
	cr_assert_eq(o[WL_UTIMES].mtime.tv_sec, 20);
	cr_assert_str_eq(o[WL_FSYNC].path, "/d/f");
	cr_assert_str_eq(o[WL_FDATASYNC].path, "/d");
	cr_assert_null(o[WL_SYNC].path);
	cr_assert_str_eq(o[WL_MARK].name, "after-sync");
	cr_assert_null(o[WL_CRASH].path);
	cr_assert_str_eq(o[WL_SUBVOL_CREATE].path, "/sv");
	cr_assert_str_eq(o[WL_SNAPSHOT].path, "/sv", "snapshot: path is SRC");
	cr_assert_str_eq(o[WL_SNAPSHOT].path2, "/snap", "snapshot: path2 is DEST");
	cr_assert_eq(o[WL_SNAPSHOT].flags, 0, "read-write by default");
	cr_assert_str_eq(o[WL_SUBVOL_DELETE].path, "/snap");
	cr_assert_null(o[WL_SUBVOL_SYNC].path);
	cr_assert_null(o[WL_QUOTA_ENABLE].path);
	cr_assert_null(o[WL_BALANCE].path);
	cr_assert_str_eq(o[WL_RECEIVE].path, "/r");
	cr_assert_eq(o[WL_RECEIVE].vlen, 2);
	cr_assert_str_eq(o[WL_CLONE].path, "/d/f");
	cr_assert_str_eq(o[WL_CLONE].path2, "/d/g");
	cr_assert_eq(o[WL_CLONE_RANGE].off, 4096);
	cr_assert_eq(o[WL_CLONE_RANGE].len, 8192);
	cr_assert_str_eq(o[WL_CLONE_RANGE].path2, "/d/g");
	cr_assert_eq(o[WL_CLONE_RANGE].off2, 16384);
	cr_assert_eq(o[WL_DEDUPE].len, 1 << 20);
	cr_assert_eq(o[WL_DEDUPE].off2, 4096);
	cr_assert_null(o[WL_DEVICE_REMOVE].path);
	cr_assert_eq(o[WL_DEVICE_REMOVE].devid, 2);
	cr_assert_str_eq(o[WL_PWRITE].path, "/d/f");
	cr_assert_eq(o[WL_PWRITE].off, 4096);
	cr_assert_eq(o[WL_PWRITE].vlen, 3);
	cr_assert(!memcmp(o[WL_PWRITE].value, "abc", 3));
	cr_assert_eq(o[WL_PWRITE].flags, 0);
	wl_free(&w);
	cr_assert_eq(w.n, 0);
	cr_assert_null(w.ops);
	wl_free(&w); /* twice is harmless */
	wl_free(NULL);
}

Test(workload, options_override_the_defaults)
{
	struct wl_workload w = { 0 };
	parse_ok("mkdir /a 700\n"
		 "create /a/f 04755\n"
		 "write /a/f 1K 2M 0x2a\n"
		 "fallocate /a/f 0 1G keep-size\n"
		 "fallocate /a/f 4K 4K punch-hole\n"
		 "rename /a/f /a/g noreplace\n"
		 "rename /a/g /a/h exchange\n"
		 "chown /a/h -1 -1\n"
		 "utimes /a/h 1.5 omit\n"
		 "chmod /a 0\n"
		 "write /a/h 0 1 0 sync\n"
		 "write /a/h 0 1 7 dsync\n",
		 &w);
	const struct wl_op *o = w.ops;
	cr_assert_eq(w.n, 12);
	cr_assert_eq(o[0].mode, 0700);
	cr_assert_eq(o[1].mode, 04755);
	cr_assert_eq(o[2].off, 1024);
	cr_assert_eq(o[2].len, 2u << 20);
	cr_assert_eq(o[2].seed, 42);
	cr_assert_eq(o[3].len, UINT64_C(1) << 30);
	cr_assert_eq(o[3].flags, WL_FALLOC_KEEP_SIZE);
	cr_assert_eq(o[4].flags, WL_FALLOC_PUNCH_HOLE | WL_FALLOC_KEEP_SIZE,
		     "punch-hole implies keep-size");
	cr_assert_eq(o[5].flags, WL_RENAME_NOREPLACE);
	cr_assert_eq(o[6].flags, WL_RENAME_EXCHANGE);
	cr_assert_eq(o[7].uid, UINT32_MAX);
	cr_assert_eq(o[7].gid, UINT32_MAX);
	cr_assert_eq(o[8].atime.tv_sec, 1);
	cr_assert_eq(o[8].atime.tv_nsec, 500000000);
	cr_assert_eq(o[8].mtime.tv_nsec, WL_UTIME_OMIT);
	cr_assert_eq(o[9].mode, 0);
	cr_assert_eq(o[10].flags, WL_WRITE_SYNC);
	cr_assert_eq(o[11].flags, WL_WRITE_DSYNC);
	cr_assert_eq(o[11].seed, 7);
	wl_free(&w);
}

Test(workload, comments_blank_lines_and_line_numbers)
{
	struct wl_workload w = { 0 };
	parse_ok("# a workload\n"
		 "\n"
		 "   \t  \n"
		 "\tmkdir\t/a   # make /a\n"
		 "mkdir /b#no space before the comment\n"
		 "mkdir \"/c#d\" # a '#' inside quotes is a byte\n"
		 "sync\r\n"
		 "crash",
		 &w);
	cr_assert_eq(w.n, 5);
	cr_assert_str_eq(w.ops[0].path, "/a");
	cr_assert_eq(w.ops[0].line, 4);
	cr_assert_str_eq(w.ops[1].path, "/b");
	cr_assert_eq(w.ops[1].line, 5);
	cr_assert_str_eq(w.ops[2].path, "/c#d");
	cr_assert_eq(w.ops[3].kind, WL_SYNC, "CRLF line ends are accepted");
	cr_assert_eq(w.ops[4].kind, WL_CRASH, "the last line needs no newline");
	cr_assert_eq(w.ops[4].line, 8);
	wl_free(&w);

	parse_ok("", &w);
	cr_assert_eq(w.n, 0);
	wl_free(&w);
	parse_ok("# only a comment\n\n", &w);
	cr_assert_eq(w.n, 0);
	wl_free(&w);
}

Test(workload, quoted_paths_and_their_escapes)
{
	struct wl_workload w = { 0 };
	const struct wl_op *o = one("mkdir \"/a b\\t\\n\\r\\\\\\\"\\x01\\xfF#=\" 0700", &w);
	cr_assert_str_eq(o->path, "/a b\t\n\r\\\"\x01\xff#=");
	cr_assert_eq(o->mode, 0700);
	wl_free(&w);
	o = one("symlink \"target with spaces/..\" \"/l\"", &w);
	cr_assert_str_eq(o->path2, "target with spaces/..");
	cr_assert_str_eq(o->path, "/l");
	wl_free(&w);
	/* A raw tab and UTF-8 inside quotes, UTF-8 in a bare word. */
	o = one("rename \"/x\ty\" /caf\xc3\xa9", &w);
	cr_assert_str_eq(o->path, "/x\ty");
	cr_assert_str_eq(o->path2, "/caf\xc3\xa9");
	wl_free(&w);
	/* Backslashes mean nothing outside quotes. */
	o = one("unlink /a\\x41", &w);
	cr_assert_str_eq(o->path, "/a\\x41");
	wl_free(&w);
}

Test(workload, names_the_file_system_must_refuse_pass_through)
{
	char big[300];
	memset(big, 'n', sizeof(big));
	big[0] = '/';
	big[257] = 0; /* a 256-byte component */
	const char *paths[] = { "/.", "/..", "/a/./b", "/a/../b", "//a//", "/", big };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char line[400];
		snprintf(line, sizeof(line), "mkdir %s", paths[i]);
		struct wl_workload w = { 0 };
		cr_assert_str_eq(one(line, &w)->path, paths[i]);
		wl_free(&w);
	}
	struct wl_workload w = { 0 };
	/* Empty xattr names and values, xattr names without a namespace. */
	const struct wl_op *o = one("setxattr /f \"\" \"\"", &w);
	cr_assert_str_eq(o->name, "");
	cr_assert_eq(o->vlen, 0);
	wl_free(&w);
	o = one("removexattr /f nonamespace", &w);
	cr_assert_str_eq(o->name, "nonamespace");
	wl_free(&w);
	/* Lengths the file system must refuse: zero, past any file size. */
	o = one("fallocate /f 0xffffffffffffffff 0", &w);
	cr_assert_eq(o->off, UINT64_MAX);
	cr_assert_eq(o->len, 0);
	wl_free(&w);
}

Test(workload, xattr_values)
{
	struct wl_workload w = { 0 };
	const struct wl_op *o = one("setxattr /f user.a 0x00ff7F", &w);
	cr_assert_eq(o->vlen, 3);
	cr_assert_eq(memcmp(o->value, "\x00\xff\x7f", 3), 0);
	wl_free(&w);
	o = one("setxattr /f user.a \"a\\x00b \\\"c\\\"\"", &w);
	cr_assert_eq(o->vlen, 7, "a NUL inside a value is a byte like any other");
	cr_assert_eq(memcmp(o->value, "a\0b \"c\"", 7), 0);
	wl_free(&w);
	o = one("setxattr /f trusted.x \"0x41\"", &w);
	cr_assert_eq(o->vlen, 4, "quoted, 0x41 is text");
	cr_assert_eq(memcmp(o->value, "0x41", 4), 0);
	wl_free(&w);
	o = one("setxattr /f security.x plain-word", &w);
	cr_assert_eq(o->vlen, 10);
	cr_assert_eq(memcmp(o->value, "plain-word", 10), 0);
	wl_free(&w);
}

Test(workload, numbers_suffixes_and_hex)
{
	static const struct {
		const char *text;
		uint64_t v;
	} cases[] = {
		{ "0", 0 },
		{ "007", 7 }, /* leading zeros are decimal */
		{ "4096", 4096 },
		{ "0x10", 16 },
		{ "0XfF", 255 },
		{ "4K", 4096 },
		{ "4k", 4096 },
		{ "3M", 3u << 20 },
		{ "2G", UINT64_C(2) << 30 },
		{ "5t", UINT64_C(5) << 40 },
		{ "0x10K", 16 << 10 },
		{ "16777215T", UINT64_C(16777215) << 40 },
		{ "18446744073709551615", UINT64_MAX },
		{ "0xffffffffffffffff", UINT64_MAX },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[128];
		snprintf(line, sizeof(line), "truncate /f %s", cases[i].text);
		struct wl_workload w = { 0 };
		cr_assert_eq(one(line, &w)->size, cases[i].v, "%s", cases[i].text);
		wl_free(&w);
	}
}

Test(workload, times)
{
	static const struct {
		const char *text;
		long long sec;
		long nsec;
	} cases[] = {
		{ "0", 0, 0 },
		{ "1700000000", 1700000000, 0 },
		{ "1.5", 1, 500000000 },
		{ "1.000000001", 1, 1 },
		{ "-1", -1, 0 },
		{ "-1.25", -2, 750000000 }, /* tv_nsec is never negative */
		{ "-0.5", -1, 500000000 },
		{ "9223372036854775807.999999999", INT64_MAX, 999999999 },
		{ "-9223372036854775808", INT64_MIN, 0 },
		{ "-9223372036854775807.5", INT64_MIN, 500000000 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[128];
		snprintf(line, sizeof(line), "utimes /f %s 0", cases[i].text);
		struct wl_workload w = { 0 };
		const struct wl_op *o = one(line, &w);
		cr_assert_eq(o->atime.tv_sec, cases[i].sec, "%s", cases[i].text);
		cr_assert_eq(o->atime.tv_nsec, cases[i].nsec, "%s", cases[i].text);
		wl_free(&w);
	}
}

Test(workload, expected_errnos)
{
	struct wl_workload w = { 0 };
	parse_ok("rmdir /a = ENOTEMPTY\n"
		 "mkdir /a =EEXIST\n"
		 "unlink /a = 0\n"
		 "unlink /a = OK # explicitly success\n"
		 "create /f 0600 = EWOULDBLOCK\n"
		 "sync = EIO\n"
		 "symlink \"=x\" /l = ENAMETOOLONG\n",
		 &w);
	cr_assert_eq(w.n, 7);
	cr_assert_eq(w.ops[0].expect, ENOTEMPTY);
	cr_assert_eq(w.ops[1].expect, EEXIST);
	cr_assert_eq(w.ops[2].expect, 0);
	cr_assert_eq(w.ops[3].expect, 0);
	cr_assert_eq(w.ops[4].expect, EAGAIN);
	cr_assert_eq(w.ops[4].mode, 0600);
	cr_assert_eq(w.ops[5].expect, EIO);
	cr_assert_str_eq(w.ops[6].path2, "=x", "a quoted '=' is not an expectation");
	cr_assert_eq(w.ops[6].expect, ENAMETOOLONG);
	wl_free(&w);
}

/* ---- errors ------------------------------------------------------------- */

#define USAGE_WRITE "(usage: write PATH OFFSET LENGTH [SEED [sync|dsync]])"
#define NUM_SFX "is not a number (decimal or 0x hex, optional K/M/G/T suffix)"
#define ESCAPES "(known: \\n \\t \\r \\\\ \\\" \\xHH)"

Test(workload, each_parse_error_has_its_message_and_position)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "mkdri /a", "w.txt:1:1: unknown operation \"mkdri\"" },
		{ "mkdir /a\n\n  mkdri /a", "w.txt:3:3: unknown operation \"mkdri\"" },
		{ "\"mkdir\" /a", "w.txt:1:1: operation names are not quoted" },
		{ "mkdir", "w.txt:1:6: mkdir: missing PATH (usage: mkdir PATH [MODE])" },
		{ "write /f 0", "w.txt:1:11: write: missing LENGTH " USAGE_WRITE },
		{ "write /f 0 # no length", "w.txt:1:11: write: missing LENGTH " USAGE_WRITE },
		{ "rmdir = ENOENT", "w.txt:1:6: rmdir: missing PATH (usage: rmdir PATH)" },
		{ "link /a", "w.txt:1:8: link: missing NEW (usage: link OLD NEW)" },
		{ "mkdir /a 0755 x", "w.txt:1:15: mkdir: too many arguments (usage: mkdir PATH [MODE])" },
		{ "sync now", "w.txt:1:6: sync: too many arguments (usage: sync)" },
		{ "device-remove 0", "w.txt:1:15: device-remove: DEVID \"0\" is 0 (devids start at 1)" },
		{ "device-remove", "w.txt:1:14: device-remove: missing DEVID (usage: device-remove DEVID)" },
		{ "write /f 4K 4K 1 sync 2 = EIO", "w.txt:1:23: write: too many arguments " USAGE_WRITE },
		{ "write /f 12x 1", "w.txt:1:10: write: OFFSET \"12x\" " NUM_SFX },
		{ "write /f 1 4KB", "w.txt:1:12: write: LENGTH \"4KB\" " NUM_SFX },
		{ "write /f 1 K", "w.txt:1:12: write: LENGTH \"K\" " NUM_SFX },
		{ "write /f 1 0x", "w.txt:1:12: write: LENGTH \"0x\" " NUM_SFX },
		{ "write /f 1 -1", "w.txt:1:12: write: LENGTH \"-1\" " NUM_SFX },
		{ "write /f 0 1 4K",
		  "w.txt:1:14: write: SEED \"4K\" is not a number (decimal or 0x hex)" },
		{ "truncate /f 18446744073709551616",
		  "w.txt:1:13: truncate: SIZE \"18446744073709551616\" overflows 64 bits" },
		{ "truncate /f 0x10000000000000000",
		  "w.txt:1:13: truncate: SIZE \"0x10000000000000000\" overflows 64 bits" },
		{ "truncate /f 16777216T", "w.txt:1:13: truncate: SIZE \"16777216T\" overflows 64 bits" },
		{ "truncate /f 17179869184G",
		  "w.txt:1:13: truncate: SIZE \"17179869184G\" overflows 64 bits" },
		{ "mkdir /a 0999", "w.txt:1:10: mkdir: MODE \"0999\" is not an octal mode (such as 0644)" },
		{ "chmod /a 10000", "w.txt:1:10: chmod: MODE \"10000\" is above 07777" },
		{ "chmod /a rwx", "w.txt:1:10: chmod: MODE \"rwx\" is not an octal mode (such as 0644)" },
		{ "chown /f 4294967296 0",
		  "w.txt:1:10: chown: UID \"4294967296\" is above 4294967295 (write -1 for unchanged)" },
		{ "chown /f 0 -2", "w.txt:1:12: chown: GID \"-2\" is not a number (decimal or 0x hex)" },
		{ "utimes /f 1.x 0",
		  "w.txt:1:11: utimes: ATIME \"1.x\" is not SECONDS[.NANOSECONDS] or omit" },
		{ "utimes /f 1. 0",
		  "w.txt:1:11: utimes: ATIME \"1.\" is not SECONDS[.NANOSECONDS] or omit" },
		{ "utimes /f 0 1.0123456789",
		  "w.txt:1:13: utimes: MTIME \"1.0123456789\" has more than 9 digits of fraction" },
		{ "utimes /f 9223372036854775808 0",
		  "w.txt:1:11: utimes: ATIME \"9223372036854775808\" overflows 64 bits" },
		{ "utimes /f -9223372036854775808.5 0",
		  "w.txt:1:11: utimes: ATIME \"-9223372036854775808.5\" overflows 64 bits" },
		{ "rmdir /a = ENOTEXIST",
		  "w.txt:1:12: unknown errno name \"ENOTEXIST\" (a Linux name such as ENOENT, or 0)" },
		{ "rmdir /a =enoent",
		  "w.txt:1:11: unknown errno name \"enoent\" (a Linux name such as ENOENT, or 0)" },
		{ "rmdir /a = 2",
		  "w.txt:1:12: unknown errno name \"2\" (a Linux name such as ENOENT, or 0)" },
		{ "rmdir /a =", "w.txt:1:11: missing errno name after \"=\"" },
		{ "rmdir /a = # none", "w.txt:1:11: missing errno name after \"=\"" },
		{ "rmdir /a = ENOENT x", "w.txt:1:19: unexpected \"x\" after the expected errno" },
		{ "mkdir \"/a b", "w.txt:1:7: unterminated quoted string" },
		{ "mkdir \"/a b\\\"", "w.txt:1:7: unterminated quoted string" },
		{ "mkdir \"/a\"b", "w.txt:1:11: a space must follow the closing quote" },
		{ "mkdir /a\"b\"", "w.txt:1:9: '\"' inside an unquoted word (quote the whole word)" },
		{ "mkdir /a\x01", "w.txt:1:9: control byte 0x01 outside quotes (write \"\\x01\")" },
		{ "mkdir \"/a\\qb\"", "w.txt:1:10: bad escape \"\\q\" " ESCAPES },
		{ "mkdir \"/a\\x4\"", "w.txt:1:10: \\x needs two hex digits " ESCAPES },
		{ "mkdir \"/a\\xg0\"", "w.txt:1:10: \\x needs two hex digits " ESCAPES },
		{ "mkdir a/b", "w.txt:1:7: mkdir: PATH \"a/b\" is not absolute (it must start with '/')" },
		{ "mkdir \"\"", "w.txt:1:7: mkdir: PATH \"\" is not absolute (it must start with '/')" },
		{ "link /a b", "w.txt:1:9: link: NEW \"b\" is not absolute (it must start with '/')" },
		{ "symlink /t l", "w.txt:1:12: symlink: PATH \"l\" is not absolute (it must start with '/')" },
		{ "symlink \"\" /l", "w.txt:1:9: symlink: TARGET \"\" is empty" },
		{ "mkdir \"/a\\x00b\"", "w.txt:1:7: mkdir: PATH \"/a\\x00b\" holds a NUL byte" },
		{ "setxattr /f \"user.\\x00\" v",
		  "w.txt:1:13: setxattr: NAME \"user.\\x00\" holds a NUL byte" },
		{ "fallocate /f 0 1 punch",
		  "w.txt:1:18: fallocate: unknown option \"punch\" (keep-size|punch-hole|zero-range|zero-range-keep-size)" },
		{ "fallocate /f 0 1 zero",
		  "w.txt:1:18: fallocate: unknown option \"zero\" (keep-size|punch-hole|zero-range|zero-range-keep-size)" },
		{ "write /f 0 1 1 osync",
		  "w.txt:1:16: write: unknown option \"osync\" (sync|dsync)" },
		{ "write /f 0 1 sync", "w.txt:1:14: write: SEED \"sync\" is not a number (decimal or 0x hex)" },
		{ "rename /a /b replace",
		  "w.txt:1:14: rename: unknown option \"replace\" (noreplace|exchange)" },
		{ "mark a/b", "w.txt:1:6: mark: NAME \"a/b\" may hold only A-Z a-z 0-9 _ . -" },
		{ "mark \"\"", "w.txt:1:6: mark: NAME \"\" is empty" },
		{ "setxattr /f user.a 0x1",
		  "w.txt:1:20: setxattr: VALUE \"0x1\" has an odd number of hex digits" },
		{ "setxattr /f user.a 0x",
		  "w.txt:1:20: setxattr: VALUE \"0x\" has no hex digits (write \"\" for an empty value)" },
		{ "setxattr /f user.a 0xzz",
		  "w.txt:1:20: setxattr: VALUE \"0xzz\" is not 0x followed by hex bytes (quote text)" },
		{ "subvol-create", "w.txt:1:14: subvol-create: missing PATH (usage: subvol-create PATH)" },
		{ "subvol-create sv", "w.txt:1:15: subvol-create: PATH \"sv\" is not absolute (it must start with '/')" },
		{ "subvol-create /a /b",
		  "w.txt:1:18: subvol-create: too many arguments (usage: subvol-create PATH)" },
		{ "snapshot /a", "w.txt:1:12: snapshot: missing DEST (usage: snapshot SRC DEST [ro])" },
		{ "snapshot /a b", "w.txt:1:13: snapshot: DEST \"b\" is not absolute (it must start with '/')" },
		{ "snapshot a /b", "w.txt:1:10: snapshot: SRC \"a\" is not absolute (it must start with '/')" },
		{ "snapshot /a /b rw", "w.txt:1:16: snapshot: unknown option \"rw\" (ro)" },
		{ "snapshot /a /b -r", "w.txt:1:16: snapshot: unknown option \"-r\" (ro)" },
		{ "snapshot /a /b ro ro",
		  "w.txt:1:19: snapshot: too many arguments (usage: snapshot SRC DEST [ro])" },
		{ "subvol-delete", "w.txt:1:14: subvol-delete: missing PATH (usage: subvol-delete PATH)" },
		{ "subvol-sync /a", "w.txt:1:13: subvol-sync: too many arguments (usage: subvol-sync)" },
		{ "quota-enable /", "w.txt:1:14: quota-enable: too many arguments (usage: quota-enable)" },
		{ "quota-enable =", "w.txt:1:15: missing errno name after \"=\"" },
		{ "balance /", "w.txt:1:9: balance: too many arguments (usage: balance)" },
		{ "quota enable", "w.txt:1:1: unknown operation \"quota\"" },
		{ "subvolume-create /a", "w.txt:1:1: unknown operation \"subvolume-create\"" },
		{ "snapshot /a /b = EROFS x", "w.txt:1:24: unexpected \"x\" after the expected errno" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		parse_err(cases[i].text, cases[i].want);
}

Test(workload, long_tokens_are_cut_in_messages_and_small_buffers_hold_a_prefix)
{
	size_t n = 100000;
	char *line = malloc(n + 16);
	strcpy(line, "mkdir ");
	memset(line + 6, 'a', n);
	line[6 + n] = 0;
	parse_err(line,
		  "w.txt:1:7: mkdir: PATH \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"... "
		  "is not absolute (it must start with '/')");
	free(line);

	struct wl_workload w = { 0 };
	char err[12];
	cr_assert_eq(wl_parse_text("w.txt", "mkdri", 5, &w, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "w.txt:1:1: ");
	cr_assert_eq(wl_parse_text("w.txt", "mkdri", 5, &w, NULL, 0), -EINVAL);
}

Test(workload, a_nul_byte_is_not_text)
{
	static const char text[] = "mkdir /a\nmkdir /b\0c\n";
	parse_err_len(text, sizeof(text) - 1, "w.txt:2:9: NUL byte: this is not a text file");
	/* Even inside a comment or a quoted string. */
	static const char text2[] = "# \0\n";
	parse_err_len(text2, sizeof(text2) - 1, "w.txt:1:3: NUL byte: this is not a text file");

	char *path = temp_file(text, sizeof(text) - 1);
	struct wl_workload w = { 0 };
	char err[512], want[600];
	cr_assert_eq(wl_parse_file(path, &w, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2:9: NUL byte: this is not a text file", path);
	cr_assert_str_eq(err, want);
	cr_assert_eq(w.n, 0);
	unlink(path);
	free(path);
}

/* ---- files -------------------------------------------------------------- */

Test(workload, a_file_with_a_100k_component_and_no_final_newline)
{
	size_t n = 100 * 1024;
	char *text = malloc(n + 64);
	int h = sprintf(text, "mkdir /d\ncreate /d/");
	memset(text + h, 'x', n);
	sprintf(text + h + n, " 0600 = ENAMETOOLONG\nfsync /d");
	char *path = temp_file(text, strlen(text));

	struct wl_workload w = { 0 };
	char err[512];
	cr_assert_eq(wl_parse_file(path, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.n, 3);
	cr_assert_str_eq(w.name, path);
	cr_assert_eq(strlen(w.ops[1].path), 3 + n, "no truncation");
	cr_assert_eq(w.ops[1].path[3 + n - 1], 'x');
	cr_assert_eq(w.ops[1].mode, 0600);
	cr_assert_eq(w.ops[1].expect, ENAMETOOLONG);
	cr_assert_eq(w.ops[2].kind, WL_FSYNC);
	cr_assert_eq(w.ops[2].line, 3);
	wl_free(&w);

	/* The same from memory. */
	parse_ok(text, &w);
	cr_assert_eq(strlen(w.ops[1].path), 3 + n);
	wl_free(&w);
	unlink(path);
	free(path);
	free(text);
}

Test(workload, files_that_cannot_be_read)
{
	struct wl_workload w = { 0 };
	char err[512];
	cr_assert_eq(wl_parse_file("/nonexistent/w.txt", &w, err, sizeof(err)), -ENOENT);
	cr_assert_str_eq(err, "/nonexistent/w.txt: No such file or directory");
	cr_assert_eq(w.n, 0);
	cr_assert_null(w.name);
	cr_assert_eq(wl_parse_file("/tmp", &w, err, sizeof(err)), -EISDIR);
	cr_assert_str_eq(err, "/tmp: Is a directory");
	cr_assert_null(w.name);
}

/* receive STREAM DIR: hex bytes inline, or a file named relative to the
 * workload's directory and read when parsed; printed back as hex always. */
Test(workload, receive_streams_from_hex_and_files)
{
	struct wl_workload w = { 0 };
	const struct wl_op *op = one("receive 0x62740001 /r", &w);
	cr_assert_eq(op->kind, WL_RECEIVE);
	cr_assert_str_eq(op->path, "/r");
	cr_assert_eq(op->vlen, 4);
	cr_assert(!memcmp(op->value, "bt\0\1", 4));
	char *line = format(op);
	cr_assert_str_eq(line, "receive 0x62740001 /r");
	free(line);
	wl_free(&w);
	op = one("receive \"\" /r = EINVAL", &w);
	cr_assert_eq(op->vlen, 0);
	wl_free(&w);

	static const uint8_t bytes[] = { 'b', 't', 'r', 0, 0xff, '\n' };
	char *stream = temp_file(bytes, sizeof(bytes));
	char *dir = strdup(stream), *slash = strrchr(dir, '/');
	*slash = 0;
	/* a workload in the stream's directory names it by its base name */
	char text[256], err[512];
	snprintf(text, sizeof(text), "%s/w.wl", dir);
	FILE *f = fopen(text, "w");
	cr_assert_not_null(f);
	fprintf(f, "receive %s /d\nreceive %s /e\n", slash + 1, stream);
	fclose(f);
	cr_assert_eq(wl_parse_file(text, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.n, 2);
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(w.ops[i].vlen, sizeof(bytes));
		cr_assert(!memcmp(w.ops[i].value, bytes, sizeof(bytes)));
	}
	line = format(&w.ops[0]);
	cr_assert_str_eq(line, "receive 0x62747200ff0a /d");
	free(line);
	wl_free(&w);
	unlink(text);
	unlink(stream);
	free(stream);
	free(dir);

	parse_err("receive /nonexistent/s.stream /r",
		  "w.txt:1:9: receive: STREAM \"/nonexistent/s.stream\" No such file or directory");
	parse_err("receive 0x123 /r",
		  "w.txt:1:9: receive: STREAM \"0x123\" has an odd number of hex digits");
	parse_err("receive /tmp /r", "w.txt:1:9: receive: STREAM \"/tmp\" could not be read");
	parse_err("receive 0x00", "w.txt:1:13: receive: missing DIR (usage: receive STREAM DIR)");
}

Test(workload, many_ops)
{
	size_t n = 100000;
	char *text = malloc(n * 32);
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "write /f %zu 1 %zu\n", i, i * 7);
	struct wl_workload w = { 0 };
	parse_ok(text, &w);
	cr_assert_eq(w.n, n);
	cr_assert_eq(w.ops[n - 1].off, n - 1);
	cr_assert_eq(w.ops[n - 1].seed, (n - 1) * 7);
	cr_assert_eq(w.ops[n - 1].line, n);
	wl_free(&w);
	free(text);
}

/* ---- printing ----------------------------------------------------------- */

/* Ops of every kind, with options, odd bytes and expected errnos. */
static size_t sample_ops(struct wl_op *ops)
{
	static uint8_t bin[] = { 0, 1, 0xff, '"', '\\', 'a' };
	static uint8_t text[] = "line 1\n\t\"quoted\" \\ # =";
	size_t n = 0;
#define OP(...) ops[n++] = (struct wl_op){ __VA_ARGS__ }
	OP(.kind = WL_MKDIR, .path = "/d", .mode = 0755);
	OP(.kind = WL_MKDIR, .path = "/with space\x01\x7f\xff#\"\\=", .mode = 01777,
	   .expect = EEXIST);
	OP(.kind = WL_CREATE, .path = "/d/f", .mode = 0644);
	OP(.kind = WL_CREATE, .path = "/d/\t", .mode = 0, .expect = EACCES);
	OP(.kind = WL_WRITE, .path = "/d/f", .off = 4096, .len = 3 << 20, .seed = 0);
	OP(.kind = WL_WRITE, .path = "/d/f", .off = 1, .len = 1025, .seed = UINT64_MAX);
	OP(.kind = WL_WRITE, .path = "/d/f", .off = 0, .len = 4096, .flags = WL_WRITE_SYNC);
	OP(.kind = WL_WRITE, .path = "/d/f", .off = 1, .len = 2, .seed = 3, .flags = WL_WRITE_DSYNC,
	   .expect = EIO);
	OP(.kind = WL_WRITE, .path = "/d/f", .off = UINT64_MAX, .len = UINT64_C(1) << 40,
	   .seed = 1, .expect = EFBIG);
	OP(.kind = WL_TRUNCATE, .path = "/d/f", .size = 0);
	OP(.kind = WL_TRUNCATE, .path = "/d/f", .size = 5ull << 30);
	OP(.kind = WL_FALLOCATE, .path = "/d/f", .off = 0, .len = 1);
	OP(.kind = WL_FALLOCATE, .path = "/d/f", .off = 0, .len = 1, .flags = WL_FALLOC_KEEP_SIZE);
	OP(.kind = WL_FALLOCATE, .path = "/d/f", .off = 8192, .len = 4096,
	   .flags = WL_FALLOC_KEEP_SIZE | WL_FALLOC_PUNCH_HOLE);
	OP(.kind = WL_LINK, .path = "/d/f", .path2 = "/d/new name");
	OP(.kind = WL_SYMLINK, .path = "/d/s", .path2 = "=rel/\"t\" #x");
	OP(.kind = WL_SYMLINK, .path = "/d/s2", .path2 = "/abs");
	OP(.kind = WL_SYMLINK, .path = "/d/s3", .path2 = "=x"); /* not an expectation */
	OP(.kind = WL_RENAME, .path = "/a", .path2 = "/b");
	OP(.kind = WL_RENAME, .path = "/a", .path2 = "/b", .flags = WL_RENAME_NOREPLACE);
	OP(.kind = WL_RENAME, .path = "/a", .path2 = "/b", .flags = WL_RENAME_EXCHANGE);
	OP(.kind = WL_UNLINK, .path = "/.", .expect = EISDIR);
	OP(.kind = WL_RMDIR, .path = "/..", .expect = ENOTEMPTY);
	OP(.kind = WL_SETXATTR, .path = "/d", .name = "user.x", .value = bin, .vlen = sizeof(bin));
	OP(.kind = WL_SETXATTR, .path = "/d", .name = "user.y", .value = text,
	   .vlen = sizeof(text) - 1);
	OP(.kind = WL_SETXATTR, .path = "/d", .name = "", .value = NULL, .vlen = 0,
	   .expect = ERANGE);
	OP(.kind = WL_SETXATTR, .path = "/d", .name = "0x41", .value = (uint8_t *)"0x41",
	   .vlen = 4);
	OP(.kind = WL_REMOVEXATTR, .path = "/d", .name = "user. x#", .expect = ENODATA);
	OP(.kind = WL_CHMOD, .path = "/d", .mode = 07777);
	OP(.kind = WL_CHOWN, .path = "/d", .uid = 0, .gid = UINT32_MAX);
	OP(.kind = WL_CHOWN, .path = "/d", .uid = UINT32_MAX - 1, .gid = 7);
	OP(.kind = WL_UTIMES, .path = "/d", .atime = { 1, 500000000 }, .mtime = { -2, 750000000 });
	OP(.kind = WL_UTIMES, .path = "/d", .atime = { INT64_MIN, 0 },
	   .mtime = { 0, WL_UTIME_OMIT });
	OP(.kind = WL_UTIMES, .path = "/d", .atime = { INT64_MIN, 1 },
	   .mtime = { INT64_MAX, 999999999 });
	OP(.kind = WL_FSYNC, .path = "/d/f");
	OP(.kind = WL_FDATASYNC, .path = "/d/f", .expect = EIO);
	OP(.kind = WL_SYNC);
	OP(.kind = WL_MARK, .name = "A-z_0.9");
	OP(.kind = WL_CRASH);
	OP(.kind = WL_SUBVOL_CREATE, .path = "/sv");
	OP(.kind = WL_SUBVOL_CREATE, .path = "/a b/sv", .expect = EROFS);
	OP(.kind = WL_SNAPSHOT, .path = "/sv", .path2 = "/snap");
	OP(.kind = WL_SNAPSHOT, .path = "/", .path2 = "/ro snap", .flags = WL_SNAP_RDONLY,
	   .expect = EEXIST);
	OP(.kind = WL_SUBVOL_DELETE, .path = "/snap", .expect = ENOTEMPTY);
	OP(.kind = WL_SUBVOL_SYNC);
	OP(.kind = WL_QUOTA_ENABLE);
	OP(.kind = WL_QUOTA_ENABLE, .expect = EROFS);
	OP(.kind = WL_BALANCE);
	OP(.kind = WL_BALANCE, .expect = ENOSPC);
	OP(.kind = WL_DEFRAG, .path = "/d/f");
	OP(.kind = WL_DEFRAG, .path = "/d", .flags = 3, .expect = EROFS);
	OP(.kind = WL_WRITE, .path = "/d/f", .off = 4096, .len = 100, .seed = 7,
	   .flags = WL_WRITE_TEXT | WL_WRITE_DSYNC);
	OP(.kind = WL_WRITE, .path = "/d/f", .len = 1, .seed = UINT64_MAX, .flags = WL_WRITE_TEXT);
	OP(.kind = WL_RECEIVE, .path = "/r", .value = bin, .vlen = sizeof(bin));
	OP(.kind = WL_RECEIVE, .path = "/r d", .value = text, .vlen = sizeof(text), .expect = ENOENT);
	OP(.kind = WL_RECEIVE, .path = "/", .expect = EINVAL); /* an empty stream */
	OP(.kind = WL_CLONE, .path = "/a b", .path2 = "/c", .expect = EXDEV);
	OP(.kind = WL_CLONE_RANGE, .path = "/a", .off = 4096, .len = 0, .path2 = "/b",
	   .off2 = UINT64_MAX);
	OP(.kind = WL_DEDUPE, .path = "/a", .off = 1, .len = 2, .path2 = "/b", .off2 = 3,
	   .expect = EBADE);
	OP(.kind = WL_DEVICE_REMOVE, .devid = 3);
	OP(.kind = WL_DEVICE_REMOVE, .devid = UINT64_MAX, .expect = ENODEV);
	OP(.kind = WL_PWRITE, .path = "/d/f", .off = 1, .value = bin, .vlen = sizeof(bin));
	OP(.kind = WL_PWRITE, .path = "/d/f", .off = 8192, .value = text, .vlen = sizeof(text) - 1,
	   .flags = WL_WRITE_DSYNC, .expect = ENOSPC);
	OP(.kind = WL_PWRITE, .path = "/d/f", .off = 0, .value = NULL, .vlen = 0,
	   .flags = WL_WRITE_SYNC);
#undef OP
	return n;
}

Test(workload, every_op_prints_and_parses_back_the_same)
{
	struct wl_op ops[80];
	size_t n = sample_ops(ops);
	bool seen[WL_NKINDS] = { false };
	for (size_t i = 0; i < n; i++) {
		char *line = format(&ops[i]);
		struct wl_workload w = { 0 };
		char err[512];
		int r = wl_parse_text("rt", line, strlen(line), &w, err, sizeof(err));
		cr_assert_eq(r, 0, "op %zu: \"%s\": %s", i, line, err);
		cr_assert_eq(w.n, 1, "op %zu: \"%s\"", i, line);
		assert_op_eq(&w.ops[0], &ops[i], line);
		seen[ops[i].kind] = true;
		wl_free(&w);
		free(line);
	}
	for (int k = 0; k < WL_NKINDS; k++)
		cr_assert(seen[k], "kind %s is sampled", wl_kind_name(k));
}

Test(workload, the_printed_form)
{
	struct wl_op ops[80];
	sample_ops(ops);
	static const char *const want[] = {
		"mkdir /d",
		"mkdir \"/with space\\x01\\x7f\\xff#\\\"\\\\=\" 1777 = EEXIST",
		"create /d/f",
		"create \"/d/\\t\" 0000 = EACCES",
		"write /d/f 4K 3M",
		"write /d/f 1 1025 18446744073709551615",
		"write /d/f 0 4K 0 sync",
		"write /d/f 1 2 3 dsync = EIO",
		"write /d/f 18446744073709551615 1T 1 = EFBIG",
		"truncate /d/f 0",
		"truncate /d/f 5G",
		"fallocate /d/f 0 1",
		"fallocate /d/f 0 1 keep-size",
		"fallocate /d/f 8K 4K punch-hole",
		"link /d/f \"/d/new name\"",
		"symlink \"=rel/\\\"t\\\" #x\" /d/s",
		"symlink /abs /d/s2",
		"symlink \"=x\" /d/s3",
		"rename /a /b",
		"rename /a /b noreplace",
		"rename /a /b exchange",
		"unlink /. = EISDIR",
		"rmdir /.. = ENOTEMPTY",
		"setxattr /d user.x 0x0001ff225c61",
		"setxattr /d user.y \"line 1\\n\\t\\\"quoted\\\" \\\\ # =\"",
		"setxattr /d \"\" \"\" = ERANGE",
		"setxattr /d 0x41 \"0x41\"",
		"removexattr /d \"user. x#\" = ENODATA",
		"chmod /d 7777",
		"chown /d 0 -1",
		"chown /d 4294967294 7",
		"utimes /d 1.5 -1.25",
		"utimes /d -9223372036854775808 omit",
		"utimes /d -9223372036854775807.999999999 9223372036854775807.999999999",
		"fsync /d/f",
		"fdatasync /d/f = EIO",
		"sync",
		"mark A-z_0.9",
		"crash",
		"subvol-create /sv",
		"subvol-create \"/a b/sv\" = EROFS",
		"snapshot /sv /snap",
		"snapshot / \"/ro snap\" ro = EEXIST",
		"subvol-delete /snap = ENOTEMPTY",
		"subvol-sync",
		"quota-enable",
		"quota-enable = EROFS",
		"balance",
		"balance = ENOSPC",
		"defrag /d/f",
		"defrag /d zstd = EROFS",
		"write /d/f 4K 100 t7 dsync",
		"write /d/f 0 1 t18446744073709551615",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char *line = format(&ops[i]);
		cr_assert_str_eq(line, want[i], "op %zu", i);
		free(line);
	}
}

Test(workload, pwrite_carries_its_bytes)
{
	static const uint8_t bin[] = { 0, 1, 0xfe };
	struct wl_op op = { .kind = WL_PWRITE, .path = "/f", .off = 4096, .value = (uint8_t *)bin,
			    .vlen = sizeof(bin), .flags = WL_WRITE_SYNC };
	char *line = format(&op);
	cr_assert_str_eq(line, "pwrite /f 4K 0x0001fe sync");
	free(line);
	op.value = (uint8_t *)"text \"q\"\n", op.vlen = 9, op.flags = 0;
	line = format(&op);
	cr_assert_str_eq(line, "pwrite /f 4K \"text \\\"q\\\"\\n\"");
	free(line);
	struct wl_workload w = { 0 };
	char err[256];
	cr_assert_neq(wl_parse_text("w.txt", "pwrite /f 0\n", 12, &w, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "w.txt:1:12: pwrite: missing DATA (usage: pwrite PATH OFFSET DATA [sync|dsync])");
	cr_assert_neq(wl_parse_text("w.txt", "pwrite /f 0 0x123\n", 18, &w, err, sizeof(err)), 0);
	cr_assert(strstr(err, "odd number of hex digits"), "%s", err);
	/* the bytes reach ref and the model alike */
	cr_assert_eq(wl_parse_text("w.txt", "create /f\npwrite /f 3 0x000102ff dsync\n", 39, &w, err,
				   sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.ops[1].vlen, 4);
	cr_assert_eq(w.ops[1].value[3], 0xff);
	cr_assert_eq(w.ops[1].flags, WL_WRITE_DSYNC);
	wl_free(&w);
}

Test(workload, format_is_snprintf_like_and_rejects_invalid_ops)
{
	struct wl_op op = { .kind = WL_MKDIR, .path = "/abcdef", .mode = 0700 };
	char buf[8];
	memset(buf, '#', sizeof(buf));
	cr_assert_eq(wl_format(&op, buf, sizeof(buf)), 18); /* "mkdir /abcdef 0700" */
	cr_assert_str_eq(buf, "mkdir /");
	cr_assert_eq(wl_format(&op, buf, 1), 18);
	cr_assert_str_eq(buf, "");

	static const struct wl_op bad[] = {
		{ .kind = WL_MKDIR, .path = "rel" },
		{ .kind = WL_MKDIR, .path = NULL },
		{ .kind = WL_MKDIR, .path = "/a", .mode = 010000 },
		{ .kind = WL_MKDIR, .path = "/a", .expect = -1 },
		{ .kind = WL_MKDIR, .path = "/a", .expect = 4000 },
		{ .kind = WL_LINK, .path = "/a", .path2 = "b" },
		{ .kind = WL_SYMLINK, .path = "/a", .path2 = "" },
		{ .kind = WL_FALLOCATE, .path = "/a", .flags = WL_FALLOC_PUNCH_HOLE },
		{ .kind = WL_RENAME, .path = "/a", .path2 = "/b", .flags = 3 },
		{ .kind = WL_SETXATTR, .path = "/a", .name = NULL },
		{ .kind = WL_SETXATTR, .path = "/a", .name = "n", .value = NULL, .vlen = 1 },
		{ .kind = WL_UTIMES, .path = "/a", .atime = { 0, 1000000000 } },
		{ .kind = WL_UTIMES, .path = "/a", .mtime = { 0, -1 } },
		{ .kind = WL_MARK, .name = "a b" },
		{ .kind = WL_MARK, .name = "" },
		{ .kind = WL_SNAPSHOT, .path = "/a", .path2 = "b" },
		{ .kind = WL_SNAPSHOT, .path = "/a", .path2 = NULL },
		{ .kind = WL_SNAPSHOT, .path = "/a", .path2 = "/b", .flags = 2 },
		{ .kind = WL_SUBVOL_CREATE, .path = "a" },
		{ .kind = WL_SUBVOL_DELETE, .path = NULL },
		{ .kind = WL_NKINDS },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_not_null(wl_op_problem(&bad[i]), "bad op %zu", i);
		cr_assert_eq(wl_format(&bad[i], buf, sizeof(buf)), -EINVAL, "bad op %zu", i);
		struct wl_workload w = { 0 };
		cr_assert_eq(wl_append(&w, &bad[i]), -EINVAL, "bad op %zu", i);
		cr_assert_eq(w.n, 0);
	}
}

Test(workload, append_copies_what_the_kind_uses_and_print_writes_lines)
{
	struct wl_op ops[80];
	size_t n = sample_ops(ops);
	struct wl_workload w = { 0 };
	for (size_t i = 0; i < n; i++) {
		struct wl_op op = ops[i];
		op.line = i + 100;
		if (op.kind != WL_TRUNCATE)
			op.size = 99; /* fields the kind does not use are not copied */
		if (op.kind != WL_WRITE && op.kind != WL_FALLOCATE && op.kind != WL_CLONE_RANGE &&
		    op.kind != WL_DEDUPE && op.kind != WL_PWRITE)
			op.off = 7;
		if (op.kind != WL_CLONE_RANGE && op.kind != WL_DEDUPE)
			op.off2 = 5;
		if (!op.path2)
			op.path2 = "stray";
		cr_assert_eq(wl_append(&w, &op), 0, "op %zu", i);
		cr_assert_eq(w.ops[i].line, i + 100);
		if (op.kind != WL_TRUNCATE)
			cr_assert_eq(w.ops[i].size, 0, "op %zu", i);
		if (ops[i].path)
			cr_assert_neq(w.ops[i].path, ops[i].path, "op %zu: the path is copied", i);
	}
	cr_assert_eq(w.n, n);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(wl_print(f, &w), 0);
	fclose(f);
	struct wl_workload back = { 0 };
	parse_ok(buf, &back);
	cr_assert_eq(back.n, n);
	for (size_t i = 0; i < n; i++) {
		assert_op_eq(&back.ops[i], &w.ops[i], "printed");
		assert_op_eq(&back.ops[i], &ops[i], "sample");
		cr_assert_eq(back.ops[i].line, i + 1);
	}
	free(buf);
	wl_free(&back);
	wl_free(&w);
}

Test(workload, kind_names)
{
	for (int k = 0; k < WL_NKINDS; k++) {
		const char *name = wl_kind_name((enum wl_kind)k);
		cr_assert_not_null(name);
		cr_assert_eq(wl_kind_parse(name), k);
	}
	cr_assert_str_eq(wl_kind_name(WL_REMOVEXATTR), "removexattr");
	cr_assert_null(wl_kind_name(WL_NKINDS));
	cr_assert_eq(wl_kind_parse("mkdri"), -1);
	cr_assert_eq(wl_kind_parse("MKDIR"), -1);
}

/* ---- errno names -------------------------------------------------------- */

Test(workload, errno_names_round_trip)
{
	for (int e = 1; e <= 133; e++) {
		const char *name = wl_errno_name(e);
		if (e == 41 || e == 58) { /* unused on Linux (once EWOULDBLOCK, EDEADLOCK) */
			cr_assert_null(name, "%d", e);
			continue;
		}
		cr_assert_not_null(name, "errno %d has a name", e);
		cr_assert_eq(name[0], 'E', "%d: %s", e, name);
		cr_assert_eq(wl_errno_parse(name), e, "%s", name);
	}
	cr_assert_str_eq(wl_errno_name(ENOENT), "ENOENT");
	cr_assert_str_eq(wl_errno_name(ENOTEMPTY), "ENOTEMPTY");
	cr_assert_str_eq(wl_errno_name(EHWPOISON), "EHWPOISON");
	cr_assert_str_eq(wl_errno_name(0), "0");
	cr_assert_null(wl_errno_name(-1));
	cr_assert_null(wl_errno_name(134));
	cr_assert_null(wl_errno_name(100000));
	cr_assert_eq(wl_errno_parse("0"), 0);
	cr_assert_eq(wl_errno_parse("OK"), 0);
	cr_assert_eq(wl_errno_parse("EWOULDBLOCK"), EAGAIN);
	cr_assert_eq(wl_errno_parse("EDEADLOCK"), EDEADLK);
	cr_assert_eq(wl_errno_parse("ENOTSUP"), EOPNOTSUPP);
	cr_assert_eq(wl_errno_parse("ENOENTX"), -1);
	cr_assert_eq(wl_errno_parse("enoent"), -1);
	cr_assert_eq(wl_errno_parse(""), -1);
	cr_assert_eq(wl_errno_parse("2"), -1);
}

/* ---- content ------------------------------------------------------------ */

/* The documented formula, one byte at a time. */
static uint8_t ref_byte(uint64_t seed, uint64_t o)
{
	const uint64_t g = UINT64_C(0x9e3779b97f4a7c15);
	uint64_t x = seed + g;
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	uint64_t key = x ^ (x >> 31);
	x = ((o / 8) * g) ^ key;
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return (uint8_t)(x >> (8 * (o % 8)));
}

Test(workload, content_follows_the_documented_formula)
{
	uint8_t buf[64];
	const uint64_t seeds[] = { 0, 1, 42, UINT64_MAX };
	const uint64_t offs[] = { 0, 1, 7, 8, 4093, UINT64_C(1) << 40, UINT64_MAX - 63 };
	for (size_t s = 0; s < 4; s++)
		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
			wl_content(seeds[s], offs[i], buf, sizeof(buf));
			for (size_t j = 0; j < sizeof(buf); j++)
				cr_assert_eq(buf[j], ref_byte(seeds[s], offs[i] + j),
					     "seed %zu off %zu byte %zu", s, i, j);
		}
	/* Pinned values, as little-endian words: a change here breaks recorded traces. */
	static const struct {
		uint64_t seed, off, word;
	} pins[] = {
		{ 0, 0, UINT64_C(0x48218226ff3cd4bf) },
		{ 42, 8000, UINT64_C(0xa893c33f0de07817) },
	};
	for (size_t i = 0; i < 2; i++) {
		wl_content(pins[i].seed, pins[i].off, buf, 8);
		uint64_t w = 0;
		for (int j = 7; j >= 0; j--)
			w = w << 8 | buf[j];
		cr_assert_eq(w, pins[i].word, "pin %zu: %#llx", i, (unsigned long long)w);
	}
}

Test(workload, content_does_not_depend_on_how_a_range_is_split)
{
	enum { N = 10000 };
	static uint8_t whole[N], parts[N];
	uint64_t base = 123457; /* not aligned */
	wl_content(77, base, whole, N);
	/* Pieces of every small length, so each alignment of start and end occurs. */
	size_t at = 0;
	for (size_t len = 0; at < N; len = (len + 1) % 23) {
		size_t n = len < N - at ? len : N - at;
		memset(parts + at, 0xaa, n);
		wl_content(77, base + at, parts + at, n);
		at += n;
	}
	cr_assert_eq(memcmp(whole, parts, N), 0);
	/* A zero-length call writes nothing. */
	uint8_t guard = 0x5a;
	wl_content(77, 3, &guard, 0);
	cr_assert_eq(guard, 0x5a);
}

Test(workload, content_differs_between_seeds_and_offsets)
{
	enum { N = 4096 };
	static uint8_t a[N], b[N], c[N];
	wl_content(1, 0, a, N);
	wl_content(2, 0, b, N);
	wl_content(1, N, c, N);
	size_t same_ab = 0, same_ac = 0;
	for (size_t i = 0; i < N; i++) {
		same_ab += a[i] == b[i];
		same_ac += a[i] == c[i];
	}
	/* Unrelated bytes agree 1 time in 256: about 16 of 4096. */
	cr_assert_lt(same_ab, 64, "%zu equal bytes", same_ab);
	cr_assert_lt(same_ac, 64, "%zu equal bytes", same_ac);
	/* And the data is not a short repeating pattern. */
	cr_assert_neq(memcmp(a, a + 8, N - 8), 0);
	cr_assert_neq(memcmp(a, a + 512, N - 512), 0);
}
