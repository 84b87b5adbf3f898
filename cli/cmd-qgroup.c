/*
 * cmd-qgroup.c - `btrsim qgroup`: enable, rescan, show and limit the quota groups of
 * level 0 (one per subvolume), with the meaning of `btrfs quota enable|rescan` and
 * `btrfs qgroup show|limit` and the output layout of btrfs-progs 6.2's
 * `qgroup show`.  Paths are from the top-level subvolume.  Changes commit
 * before the command returns.
 */
#include "cli/fsops.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char qgroup_usage[] =
	"usage: btrsim qgroup COMMAND [options] IMG... [ARGS]\n"
	"\n"
	"Quota groups of the file system on the images, one per subvolume (level 0,\n"
	"as btrfs quota enable and btrfs qgroup show / limit; paths are from the\n"
	"top-level subvolume):\n"
	"\n"
	"  enable IMG...                     enable quotas: a quota group for every\n"
	"                                    subvolume, counted at once (as a rescan)\n"
	"  rescan IMG...                     count every quota group again from\n"
	"                                    scratch and clear the inconsistent flag\n"
	"                                    (btrfs quota rescan -w)\n"
	"  show [-p] [-c] [-r] [-e] [--raw|--human-readable] IMG...\n"
	"                                    every quota group: id, referenced and\n"
	"                                    exclusive bytes, Path; -r / -e add the\n"
	"                                    referenced / exclusive limits, -p / -c the\n"
	"                                    parent / child groups (none at level 0);\n"
	"                                    --raw prints bytes, the default binary units\n"
	"  limit [-e] IMG... SIZE|none QGROUPID|PATH\n"
	"                                    set the referenced limit (-e: the exclusive\n"
	"                                    one) of a quota group, named 0/ID or by the\n"
	"                                    path of its subvolume; none removes it.\n"
	"                                    SIZE in bytes, or with a K, M, G or T suffix\n"
	"                                    (powers of 1024)\n"
	"\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_qgroup;

/* A one-letter option's bit in the flags sub_opts collects. */
#define FLAG(ch) (1u << ((ch) - 'a'))

/* The options of a subcommand: -h, and those of `allowed` (a getopt string
 * of flags without arguments) in *flags, FLAG(letter) each;
 * --raw / --human-readable in *raw.  optind at the first operand. */
static int sub_opts(int argc, char **argv, const char *allowed, unsigned *flags, bool *raw)
{
	enum { OPT_RAW = 256, OPT_HUMAN };
	static const struct option opts[] = {
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "human-readable", no_argument, NULL, OPT_HUMAN },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+pcreh", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(&cli_cmd_qgroup), -1;
		if ((c == OPT_RAW || c == OPT_HUMAN) && raw)
			*raw = c == OPT_RAW;
		else if (c >= 'a' && c <= 'z' && strchr(allowed, c))
			*flags |= FLAG(c);
		else
			return cli_usage_error(&cli_cmd_qgroup, "%s: unknown option '%s'", argv[0],
					       argv[optind - 1]);
	}
	return 0;
}

/* A size as btrfs-progs prints it: bytes with raw, else binary units with
 * two decimals in single precision (pretty_size_mode's UNITS_DEFAULT: the
 * fraction from the integer quotient one step before the last). */
static const char *pretty_size(uint64_t v, bool raw, char *buf, size_t len)
{
	static const char *const suffix[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (raw) {
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return buf;
	}
	uint64_t last = v;
	int divs = 0;
	while (v >= 1024) {
		last = v;
		v /= 1024;
		divs++;
	}
	float f = divs ? (float)last / 1024 : (float)last;
	snprintf(buf, len, "%.2f%s", f, suffix[divs]);
	return buf;
}

/* ---- show ---- */

enum { COL_ID, COL_RFER, COL_EXCL, COL_MAX_RFER, COL_MAX_EXCL, COL_PARENT, COL_CHILD, NCOLS };

static const struct {
	const char *title;
	int min_width;
	bool left;
} columns[NCOLS] = {
	[COL_ID] = { "Qgroupid", 9, true },
	[COL_RFER] = { "Referenced", 12, false },
	[COL_EXCL] = { "Exclusive", 12, false },
	[COL_MAX_RFER] = { "Max referenced", 15, false },
	[COL_MAX_EXCL] = { "Max exclusive", 14, false },
	[COL_PARENT] = { "Parent", 8, true },
	[COL_CHILD] = { "Child", 5, true },
};

/* The text of one cell; limits as "none" when their flag is off. */
static const char *cell(const struct ref_qgroup *q, int col, bool raw, char *buf, size_t len)
{
	switch (col) {
	case COL_ID:
		snprintf(buf, len, "%u/%llu", (unsigned)(q->id >> BTRFS_QGROUP_LEVEL_SHIFT),
			 (unsigned long long)(q->id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
		return buf;
	case COL_RFER:
		return pretty_size(q->rfer, raw, buf, len);
	case COL_EXCL:
		return pretty_size(q->excl, raw, buf, len);
	case COL_MAX_RFER:
		return q->limit_flags & BTRFS_QGROUP_LIMIT_MAX_RFER
			       ? pretty_size(q->max_rfer, raw, buf, len) : "none";
	case COL_MAX_EXCL:
		return q->limit_flags & BTRFS_QGROUP_LIMIT_MAX_EXCL
			       ? pretty_size(q->max_excl, raw, buf, len) : "none";
	default:
		return "-"; /* level 0 groups have no parents or children here */
	}
}

/* The width progs gives a column: its minimum, or the longest value (the
 * limits' values counted even when "none" is printed; "-" never widens). */
static int column_width(const struct ref_qgroup *q, size_t n, int col, bool raw)
{
	int w = columns[col].min_width;
	char buf[64];
	for (size_t i = 0; i < n && col <= COL_MAX_EXCL; i++) {
		const char *s = col == COL_MAX_RFER ? pretty_size(q[i].max_rfer, raw, buf, sizeof(buf))
			: col == COL_MAX_EXCL ? pretty_size(q[i].max_excl, raw, buf, sizeof(buf))
			: cell(&q[i], col, raw, buf, sizeof(buf));
		if ((int)strlen(s) > w)
			w = (int)strlen(s);
	}
	return w;
}

/* The Path cell: "<toplevel>" for the top level, "<stale>" for a group
 * whose subvolume is gone (deleted, or never there). */
static int path_of(ref_fs *fs, uint64_t id, char *buf, size_t len)
{
	if (id == BTRFS_FS_TREE_OBJECTID) {
		snprintf(buf, len, "<toplevel>");
		return 0;
	}
	int r = ref_subvol_path(fs, id, buf, len);
	if (r == -ENOENT) {
		snprintf(buf, len, "<stale>");
		r = 0;
	}
	return r;
}

/* The table as btrfs-progs prints it; 0, or a failure of ref_subvol_path. */
static int print_table(ref_fs *fs, const struct ref_qgroup *q, size_t n, const bool shown[NCOLS],
		       bool raw)
{
	int w[NCOLS];
	char buf[64];
	for (int c = 0; c < NCOLS; c++)
		w[c] = shown[c] ? column_width(q, n, c, raw) : 0;
	/* Titles, then dashes under them, aligned as the values; Path's header
	 * is right-aligned in 6 and every header cell ends in a space. */
	static const char dashes[] = "----------------";
	for (int line = 0; line < 2; line++) {
		for (int c = 0; c < NCOLS; c++)
			if (shown[c])
				printf(columns[c].left ? "%-*.*s " : "%*.*s ", w[c],
				       (int)strlen(columns[c].title), line ? dashes : columns[c].title);
		printf("%6s \n", line ? "----" : "Path");
	}
	char path[4096];
	for (size_t i = 0; i < n; i++) {
		int r = path_of(fs, q[i].id, path, sizeof(path));
		if (r)
			return r;
		for (int c = 0; c < NCOLS; c++)
			if (shown[c])
				printf(columns[c].left ? "%-*s " : "%*s ", w[c],
				       cell(&q[i], c, raw, buf, sizeof(buf)));
		printf("  %s\n", path);
	}
	return 0;
}

/* "btrsim qgroup: WHAT: ENAME (text): MSG" (ref_error() when msg is NULL); 1. */
static int fail(ref_fs *fs, const char *what, int r, const char *msg)
{
	const struct cli_mount m = { .cmd = &cli_cmd_qgroup, .fs = fs };
	cli_report(&m, what, r, msg);
	return 1;
}

/* 0 when quotas are on; else 1 after saying so (ENOTCONN, as the kernel's
 * qgroup ioctls answer then). */
static int need_quotas(ref_fs *fs, const char *what, uint64_t *flags)
{
	bool on = false;
	int r = ref_qgroup_status(fs, &on, flags);
	if (r)
		return fail(fs, what, r, NULL);
	return on ? 0 : fail(fs, what, -ENOTCONN, "quotas not enabled");
}

static int show(ref_fs *fs, unsigned flags, bool raw)
{
	uint64_t status;
	if (need_quotas(fs, "show", &status))
		return 1;
	if (!(status & BTRFS_QGROUP_STATUS_FLAG_ON))
		fprintf(stderr, "btrsim qgroup: show: warning: quota disabled, qgroup data may be out of date\n");
	else if (status & BTRFS_QGROUP_STATUS_FLAG_RESCAN)
		fprintf(stderr, "btrsim qgroup: show: warning: rescan is running, qgroup data may be incorrect\n");
	else if (status & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT)
		fprintf(stderr, "btrsim qgroup: show: warning: qgroup data inconsistent, rescan recommended\n");
	struct ref_qgroup *q;
	size_t n;
	int r = ref_qgroup_list(fs, &q, &n);
	if (r)
		return fail(fs, "show", r, NULL);
	const bool shown[NCOLS] = {
		[COL_ID] = true, [COL_RFER] = true, [COL_EXCL] = true,
		[COL_MAX_RFER] = flags & FLAG('r'), [COL_MAX_EXCL] = flags & FLAG('e'),
		[COL_PARENT] = flags & FLAG('p'), [COL_CHILD] = flags & FLAG('c'),
	};
	r = print_table(fs, q, n, shown, raw);
	free(q);
	return r ? fail(fs, "show", r, NULL) : 0;
}

/* ---- limit ---- */

/* "L/ID" (both decimal) into a qgroupid; -1 when s is not one. */
static int parse_qgroupid(const char *s, uint64_t *id)
{
	const char *slash = strchr(s, '/');
	uint64_t level, sub;
	if (!slash || slash == s || slash - s > 5)
		return -1;
	char lv[8];
	snprintf(lv, sizeof(lv), "%.*s", (int)(slash - s), s);
	if (strspn(lv, "0123456789") != strlen(lv) || !slash[1] ||
	    strspn(slash + 1, "0123456789") != strlen(slash + 1) ||
	    cli_parse_u64(lv, &level, 0) || cli_parse_u64(slash + 1, &sub, 0) ||
	    level > 0xffff || sub >> BTRFS_QGROUP_LEVEL_SHIFT)
		return -1;
	*id = level << BTRFS_QGROUP_LEVEL_SHIFT | sub;
	return 0;
}

/* Sets one limit of group id, or of the subvolume at target when that is a
 * path (the other limit stays, as with btrfs qgroup limit). */
static int set_limit(struct cli_mount *m, const char *target, uint64_t id, bool excl, bool none,
		     uint64_t size)
{
	uint64_t status;
	int r;
	if (need_quotas(m->fs, "limit", &status))
		return cli_abort(m);
	if (*target == '/') {
		if ((r = cli_subvol_at(m->fs, target, &id)) == -EINVAL) {
			cli_report(m, target, EINVAL, "not a subvolume");
			return cli_abort(m);
		}
		if (r)
			return cli_op_fail(m, target, r);
	}
	uint64_t max = none ? UINT64_MAX : size; /* UINT64_MAX: remove it */
	r = ref_qgroup_limit(m->fs, id, excl ? BTRFS_QGROUP_LIMIT_MAX_EXCL : BTRFS_QGROUP_LIMIT_MAX_RFER,
			     max, max);
	return r ? cli_op_fail(m, target, r) : cli_umount(m);
}

/* ---- dispatch ---- */

static int cmd_qgroup(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(&cli_cmd_qgroup, "needs a COMMAND");
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return cli_help(&cli_cmd_qgroup);
	bool is_show = !strcmp(sub, "show"), is_limit = !strcmp(sub, "limit");
	bool is_rescan = !strcmp(sub, "rescan");
	if (!is_show && !is_limit && !is_rescan && strcmp(sub, "enable"))
		return cli_usage_error(&cli_cmd_qgroup, "unknown command '%s'", sub);
	unsigned flags = 0;
	bool raw = false;
	int rc = sub_opts(argc - 1, argv + 1, is_show ? "pcre" : is_limit ? "e" : "", &flags,
			  is_show ? &raw : NULL);
	if (rc)
		return rc < 0 ? 0 : rc;
	char **imgs = argv + 1 + optind;
	int nimg = argc - 1 - optind - (is_limit ? 2 : 0);
	if (nimg < 1)
		return cli_usage_error(&cli_cmd_qgroup, "%s: needs at least one image%s", sub,
				       is_limit ? ", a SIZE and a QGROUPID or PATH" : "");
	if (is_show) {
		struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
		sim_volume *vol;
		ref_fs *fs;
		if ((rc = cli_open_fs(&cli_cmd_qgroup, imgs, nimg, &oo, &vol, &fs)))
			return rc;
		rc = show(fs, flags, raw);
		ref_close(fs);
		sim_volume_close(vol);
		return rc;
	}
	uint64_t size = 0;
	const char *size_arg = is_limit ? argv[argc - 2] : NULL;
	bool none = size_arg && !strcasecmp(size_arg, "none");
	if (size_arg && !none && cli_parse_u64(size_arg, &size, 1))
		return cli_usage_error(&cli_cmd_qgroup, "limit: invalid size '%s'", size_arg);
	const char *target = is_limit ? argv[argc - 1] : NULL;
	uint64_t id = 0;
	if (target && *target != '/' && parse_qgroupid(target, &id))
		return cli_usage_error(&cli_cmd_qgroup,
				       "limit: '%s' is neither a qgroupid (LEVEL/ID) nor a path from the top level",
				       target);
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_qgroup, imgs, nimg, &m)))
		return rc;
	if (is_limit)
		return set_limit(&m, target, id, flags & FLAG('e'), none, size);
	int r = is_rescan ? ref_qgroup_rescan(m.fs) : ref_qgroup_enable(m.fs);
	return r ? cli_op_fail(&m, sub, r) : cli_umount(&m);
}

const struct cli_cmd cli_cmd_qgroup = {
	.name = "qgroup",
	.summary = "enable and rescan quotas; show quota groups and set their limits",
	.usage = qgroup_usage,
	.run = cmd_qgroup,
};
