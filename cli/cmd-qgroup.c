/*
 * cmd-qgroup.c - `btrsim qgroup`: enable, rescan, show, limit, create, destroy,
 * assign and remove quota groups, with the meaning of `btrfs quota
 * enable|rescan` and `btrfs qgroup ...` and the output layout of btrfs-progs
 * 6.2's `qgroup show`.  Paths are from the top-level subvolume.  Changes commit
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
	"Quota groups of the file system on the images (as btrfs quota enable|rescan\n"
	"and btrfs qgroup; Linux 6.18's rules and errnos).  A group of level 0 per\n"
	"subvolume, and groups of higher levels whose members are groups of lower\n"
	"levels; a group counts what the subvolumes below it reference.  QGROUPID is\n"
	"LEVEL/ID; where a PATH is allowed it names a subvolume's group, from the\n"
	"top-level subvolume:\n"
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
	"                                    parent / child groups; --raw prints bytes,\n"
	"                                    the default binary units.  The layout is\n"
	"                                    btrfs-progs 6.2's, Path of groups above\n"
	"                                    level 0 included (a NUL byte and all)\n"
	"  limit [-e] IMG... SIZE|none QGROUPID|PATH\n"
	"                                    set the referenced limit (-e: the exclusive\n"
	"                                    one) of a quota group; none removes it.\n"
	"                                    SIZE in bytes, or with a K, M, G or T suffix\n"
	"                                    (powers of 1024).  A group's limit holds\n"
	"                                    for writes in every subvolume below it\n"
	"  create IMG... QGROUPID            a new group, with no members\n"
	"  destroy IMG... QGROUPID           remove a group without members (at level\n"
	"                                    0, only one that counts nothing: its\n"
	"                                    subvolume is gone); its memberships go too\n"
	"  assign [--rescan|--no-rescan] IMG... SRC DST\n"
	"                                    make SRC a member of DST (of a higher\n"
	"                                    level); SRC's numbers move into DST and the\n"
	"                                    groups above it when they are all\n"
	"                                    exclusive, else the numbers go stale and\n"
	"                                    are counted again (--rescan, the default)\n"
	"                                    or left marked inconsistent (--no-rescan)\n"
	"  remove [--rescan|--no-rescan] IMG... SRC DST\n"
	"                                    end that membership, the same way\n"
	"\n"
	"  -h, --help   show this help\n"
	"\n"
	"A snapshot of a subvolume whose group is a member of others leaves the\n"
	"numbers marked inconsistent, as the kernel does (btrfs subvolume snapshot\n"
	"-i is not here); the next mount counts them again.\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_qgroup;

/* A one-letter option's bit in the flags sub_opts collects. */
#define FLAG(ch) (1u << ((ch) - 'a'))

/* The options of a subcommand: -h, and those of `allowed` (a getopt string
 * of flags without arguments) in *flags, FLAG(letter) each;
 * --raw / --human-readable in *raw and --rescan / --no-rescan in *rescan
 * when those are not NULL.  optind at the first operand. */
static int sub_opts(int argc, char **argv, const char *allowed, unsigned *flags, bool *raw,
		    bool *rescan)
{
	enum { OPT_RAW = 256, OPT_HUMAN, OPT_RESCAN, OPT_NO_RESCAN };
	static const struct option opts[] = {
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "human-readable", no_argument, NULL, OPT_HUMAN },
		{ "rescan", no_argument, NULL, OPT_RESCAN },
		{ "no-rescan", no_argument, NULL, OPT_NO_RESCAN },
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
		else if ((c == OPT_RESCAN || c == OPT_NO_RESCAN) && rescan)
			*rescan = c == OPT_RESCAN;
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

/* The groups and their relations, as show prints them. */
struct table {
	const struct ref_qgroup *q;
	size_t n;
	const struct ref_qgroup_rel *rel;
	size_t nrel;
	bool raw;
};

static int qgid(uint64_t id, char *buf, size_t len)
{
	return snprintf(buf, len, "%u/%llu", (unsigned)(id >> BTRFS_QGROUP_LEVEL_SHIFT),
			(unsigned long long)(id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
}

/* The groups above q (parents) or below it (children), as progs lists them:
 * "L/ID" joined by sep, ascending ("" for none); how many in *count. */
static const char *related(const struct table *t, const struct ref_qgroup *q, bool parents,
			   const char *sep, char *buf, size_t len, size_t *count)
{
	size_t at = 0;
	*count = 0;
	buf[0] = 0;
	for (size_t i = 0; i < t->nrel; i++) {
		uint64_t self = parents ? t->rel[i].child : t->rel[i].parent;
		uint64_t other = parents ? t->rel[i].parent : t->rel[i].child;
		if (self != q->id)
			continue;
		if (*count && at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s", sep);
		if (at < len)
			at += (size_t)qgid(other, buf + at, len - at);
		++*count;
	}
	return buf;
}

/* The text of one cell; limits as "none" when their flag is off. */
static const char *cell(const struct table *t, const struct ref_qgroup *q, int col, char *buf,
			size_t len)
{
	size_t count;
	switch (col) {
	case COL_ID:
		qgid(q->id, buf, len);
		return buf;
	case COL_RFER:
		return pretty_size(q->rfer, t->raw, buf, len);
	case COL_EXCL:
		return pretty_size(q->excl, t->raw, buf, len);
	case COL_MAX_RFER:
		return q->limit_flags & BTRFS_QGROUP_LIMIT_MAX_RFER
			       ? pretty_size(q->max_rfer, t->raw, buf, len) : "none";
	case COL_MAX_EXCL:
		return q->limit_flags & BTRFS_QGROUP_LIMIT_MAX_EXCL
			       ? pretty_size(q->max_excl, t->raw, buf, len) : "none";
	default:
		related(t, q, col == COL_PARENT, ",", buf, len, &count);
		return count ? buf : "-";
	}
}

/* The width progs gives a column: its minimum, or the longest value (the
 * limits' values counted even when "none" is printed; "-" never widens). */
static int column_width(const struct table *t, int col)
{
	int w = columns[col].min_width;
	char buf[4096];
	for (size_t i = 0; i < t->n; i++) {
		const struct ref_qgroup *q = &t->q[i];
		const char *s = col == COL_MAX_RFER ? pretty_size(q->max_rfer, t->raw, buf, sizeof(buf))
			: col == COL_MAX_EXCL ? pretty_size(q->max_excl, t->raw, buf, sizeof(buf))
			: cell(t, q, col, buf, sizeof(buf));
		if ((int)strlen(s) > w && strcmp(s, "-"))
			w = (int)strlen(s);
	}
	return w;
}

/* Prints the Path cell: the subvolume's path at level 0 ("<toplevel>" for
 * the top level, "<stale>" when the subvolume is gone, deleted or never
 * there).  Above level 0, what btrfs-progs 6.2 prints there: the groups the
 * group is a member of, then "<N member qgroups>" counting those (not its
 * members), and for N = 1 the plural's 's' replaced by a NUL byte; printed
 * byte for byte, so that the two outputs compare equal. */
static int print_path(ref_fs *fs, const struct table *t, const struct ref_qgroup *q)
{
	char buf[4096];
	if (btrfs_qgroup_level(q->id)) {
		size_t count;
		related(t, q, true, " ", buf, sizeof(buf), &count);
		printf("  %s<%zu member qgroup", buf, count);
		putchar(count != 1 ? 's' : '\0');
		printf(">\n");
		return 0;
	}
	if (q->id == BTRFS_FS_TREE_OBJECTID) {
		printf("  <toplevel>\n");
		return 0;
	}
	int r = ref_subvol_path(fs, q->id, buf, sizeof(buf));
	if (r && r != -ENOENT)
		return r;
	printf("  %s\n", r ? "<stale>" : buf);
	return 0;
}

/* The table as btrfs-progs prints it; 0, or a failure of ref_subvol_path. */
static int print_table(ref_fs *fs, const struct table *t, const bool shown[NCOLS])
{
	int w[NCOLS];
	char buf[4096];
	for (int c = 0; c < NCOLS; c++)
		w[c] = shown[c] ? column_width(t, c) : 0;
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
	for (size_t i = 0; i < t->n; i++) {
		for (int c = 0; c < NCOLS; c++)
			if (shown[c])
				printf(columns[c].left ? "%-*s " : "%*s ", w[c],
				       cell(t, &t->q[i], c, buf, sizeof(buf)));
		int r = print_path(fs, t, &t->q[i]);
		if (r)
			return r;
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
	struct ref_qgroup_rel *rel = NULL;
	size_t n, nrel = 0;
	int r = ref_qgroup_list(fs, &q, &n);
	if (r)
		return fail(fs, "show", r, NULL);
	if ((r = ref_qgroup_relations(fs, &rel, &nrel))) {
		free(q);
		return fail(fs, "show", r, NULL);
	}
	const struct table t = { q, n, rel, nrel, raw };
	const bool shown[NCOLS] = {
		[COL_ID] = true, [COL_RFER] = true, [COL_EXCL] = true,
		[COL_MAX_RFER] = flags & FLAG('r'), [COL_MAX_EXCL] = flags & FLAG('e'),
		[COL_PARENT] = flags & FLAG('p'), [COL_CHILD] = flags & FLAG('c'),
	};
	r = print_table(fs, &t, shown);
	free(q);
	free(rel);
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

/* A group named L/ID, or the level-0 group of the subvolume at a path from
 * the top level; 0, or 1 after saying why not. */
static int resolve_group(struct cli_mount *m, const char *arg, uint64_t *id)
{
	if (*arg != '/')
		return 0; /* (parsed before the mount) */
	int r = cli_subvol_at(m->fs, arg, id);
	if (r == -EINVAL)
		cli_report(m, arg, EINVAL, "not a subvolume");
	else if (r)
		cli_op_fail(m, arg, r);
	return r ? 1 : 0;
}

/* create / destroy ID, assign / remove SRC DST. */
static int relate(struct cli_mount *m, const char *sub, char **ids, const uint64_t *id, bool rescan)
{
	uint64_t status, a = id[0], b = id[1];
	bool pair = !strcmp(sub, "assign") || !strcmp(sub, "remove");
	if (need_quotas(m->fs, sub, &status) || resolve_group(m, ids[0], &a) ||
	    (pair && resolve_group(m, ids[1], &b)))
		return cli_abort(m);
	int r = !strcmp(sub, "create") ? ref_qgroup_create(m->fs, a)
		: !strcmp(sub, "destroy") ? ref_qgroup_destroy(m->fs, a)
		: ref_qgroup_assign(m->fs, a, b, !strcmp(sub, "assign"));
	if (r < 0)
		return cli_op_fail(m, pair ? ids[1] : ids[0], r);
	if (r > 0 && rescan) {
		/* As btrfs-progs when the kernel answers that the numbers went
		 * stale; the rescan runs to its end here. */
		printf("Quota data changed, rescan scheduled\n");
		if ((r = ref_qgroup_rescan(m->fs)))
			return cli_op_fail(m, "rescan", r);
	} else if (r > 0) {
		fprintf(stderr, "btrsim qgroup: %s: warning: quotas may be inconsistent, rescan needed\n", sub);
	}
	return cli_umount(m);
}

/* ---- dispatch ---- */

static const struct {
	const char *name;
	const char *flags; /* getopt letters allowed */
	int operands;      /* after the images */
	const char *what;  /* the operands, for the usage error */
} subs[] = {
	{ "enable", "", 0, "" },
	{ "rescan", "", 0, "" },
	{ "show", "pcre", 0, "" },
	{ "limit", "e", 2, ", a SIZE and a QGROUPID or PATH" },
	{ "create", "", 1, " and a QGROUPID" },
	{ "destroy", "", 1, " and a QGROUPID" },
	{ "assign", "", 2, ", a SRC and a DST (QGROUPID or PATH)" },
	{ "remove", "", 2, ", a SRC and a DST (QGROUPID or PATH)" },
};

static int cmd_qgroup(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(&cli_cmd_qgroup, "needs a COMMAND");
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return cli_help(&cli_cmd_qgroup);
	size_t k = 0;
	while (k < sizeof(subs) / sizeof(subs[0]) && strcmp(sub, subs[k].name))
		k++;
	if (k == sizeof(subs) / sizeof(subs[0]))
		return cli_usage_error(&cli_cmd_qgroup, "unknown command '%s'", sub);
	bool is_show = !strcmp(sub, "show"), is_limit = !strcmp(sub, "limit");
	bool is_pair = !strcmp(sub, "assign") || !strcmp(sub, "remove");
	unsigned flags = 0;
	bool raw = false, rescan = true;
	int rc = sub_opts(argc - 1, argv + 1, subs[k].flags, &flags, is_show ? &raw : NULL,
			  is_pair ? &rescan : NULL);
	if (rc)
		return rc < 0 ? 0 : rc;
	char **imgs = argv + 1 + optind;
	int nimg = argc - 1 - optind - subs[k].operands;
	if (nimg < 1)
		return cli_usage_error(&cli_cmd_qgroup, "%s: needs at least one image%s", sub,
				       subs[k].what);
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
	/* The groups named: L/ID now, paths once mounted. */
	char **ids = imgs + nimg + (is_limit ? 1 : 0);
	int nids = is_limit ? 1 : subs[k].operands;
	uint64_t id[2] = { 0, 0 };
	for (int i = 0; i < nids; i++) {
		bool path_ok = is_limit || is_pair;
		if ((*ids[i] != '/' || !path_ok) && parse_qgroupid(ids[i], &id[i]))
			return cli_usage_error(&cli_cmd_qgroup,
					       path_ok ? "%s: '%s' is neither a qgroupid (LEVEL/ID) nor a path from the top level"
						       : "%s: '%s' is not a qgroupid (LEVEL/ID)",
					       sub, ids[i]);
	}
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_qgroup, imgs, nimg, &m)))
		return rc;
	if (is_limit)
		return set_limit(&m, ids[0], id[0], flags & FLAG('e'), none, size);
	if (nids)
		return relate(&m, sub, ids, id, rescan);
	int r = !strcmp(sub, "rescan") ? ref_qgroup_rescan(m.fs) : ref_qgroup_enable(m.fs);
	return r ? cli_op_fail(&m, sub, r) : cli_umount(&m);
}

const struct cli_cmd cli_cmd_qgroup = {
	.name = "qgroup",
	.summary = "enable and rescan quotas; show, create, relate and limit quota groups",
	.usage = qgroup_usage,
	.run = cmd_qgroup,
};
