/*
 * cmd-balance.c - `btrsim balance start|resume|cancel|status`: btrfs
 * balance over images, with btrfs-progs 6.2's filter syntax (-d, -m, -s
 * with profiles=, usage=, devid=, drange=, vrange=, limit=, stripes=,
 * convert=, soft), its rules (-m also does system chunks; -s needs -f;
 * drange needs devid; soft needs convert) and its messages.
 */
#include "cli/fsops.h"
#include "faults/plan.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: btrsim balance [start] [-d[FILTERS]] [-m[FILTERS]] [-s[FILTERS]] [-f]\n"
	"                      [--degraded] [--faults PLAN] IMG...\n"
	"       btrsim balance resume [--degraded] IMG...\n"
	"       btrsim balance cancel IMG...\n"
	"       btrsim balance status IMG...\n"
	"\n"
	"Relocates block groups of the file system on the images, as 'btrfs balance':\n"
	"their data and tree blocks move to other block groups (or new chunks), the\n"
	"emptied ones are removed; with convert= the new chunks take another profile.\n"
	"Snapshots keep sharing what they shared.  Without -d, -m or -s every block\n"
	"group is relocated.  The arguments are kept on disk until the balance is\n"
	"done: a balance a crash (or an error) interrupted is resumed with 'resume'\n"
	"(or by the kernel at mount), or forgotten with 'cancel'.\n"
	"\n"
	"  -d[FILTERS]   data block groups          (also --data[=FILTERS])\n"
	"  -m[FILTERS]   metadata block groups, and system ones unless -s is given\n"
	"  -s[FILTERS]   system block groups (needs -f)\n"
	"  -f, --force   allow -s, and converting metadata to less redundancy\n"
	"      --degraded  with devices missing (mounted degraded)\n"
	"      --faults PLAN  arm the fault plan PLAN (faults/README.md, seed 1) while\n"
	"                  the balance runs: to interrupt one on purpose\n"
	"  -h, --help    show this help\n"
	"\n"
	"FILTERS, comma-separated: profiles=P[|P...], usage=N or usage=MIN..MAX\n"
	"(percent used), devid=N, drange=START..END (bytes on devid), vrange=START..END\n"
	"(logical bytes), limit=N or limit=MIN..MAX (chunks), stripes=MIN..MAX,\n"
	"convert=P, soft (with convert: skip chunks already in P).  P is one of\n"
	"single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5, raid6.\n"
	"\n"
	"Exit status: 0 done (status: no balance found); 1 failure (the balance is\n"
	"left to resume) or, for status, an interrupted balance was found; 2 bad usage.\n";

const struct cli_cmd cli_cmd_balance;

/* The profile bit of s[0..len) (BTRFS_AVAIL_ALLOC_BIT_SINGLE for single), as
 * balance's filters give profiles. */
static bool profile_of(const char *s, size_t len, uint64_t *bit)
{
	char name[16];
	if (len >= sizeof(name))
		return false;
	memcpy(name, s, len);
	name[len] = '\0';
	if (ref_profile_parse(name, bit))
		return false;
	if (!*bit)
		*bit = BTRFS_AVAIL_ALLOC_BIT_SINGLE;
	return true;
}

/* "A..B", "A..", "..B" or (when single is allowed) "A": 0, or -1. */
static int parse_range(const char *s, uint64_t *lo, uint64_t *hi, bool *range)
{
	const char *dots = strstr(s, "..");
	*lo = 0, *hi = UINT64_MAX, *range = dots != NULL;
	if (!dots)
		return cli_parse_u64(s, lo, 0) ? -1 : 0;
	char a[32];
	size_t n = (size_t)(dots - s);
	if (n >= sizeof(a))
		return -1;
	memcpy(a, s, n);
	a[n] = '\0';
	if (n && cli_parse_u64(a, lo, 0))
		return -1;
	if (dots[2] && cli_parse_u64(dots + 2, hi, 0))
		return -1;
	return *lo <= *hi ? 0 : -1;
}

/* One -d/-m/-s argument into a: 0, or 2 after a usage error. */
static int parse_filters(const char *arg, struct btrfs_balance_args *a)
{
	memset(a, 0, sizeof(*a));
	if (!arg)
		return 0;
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		return cli_fail(&cli_cmd_balance, "out of memory");
	int rc = 0;
	for (char *f = strtok_r(copy, ",", &save); f && !rc; f = strtok_r(NULL, ",", &save)) {
		char *v = strchr(f, '=');
		if (v)
			*v++ = '\0';
		uint64_t lo, hi;
		bool range;
		if (!strcmp(f, "soft") && !v) {
			a->flags |= BTRFS_BALANCE_ARGS_SOFT;
		} else if (!v || !*v) {
			rc = cli_usage_error(&cli_cmd_balance, "the %s filter requires an argument", f);
		} else if (!strcmp(f, "profiles")) {
			a->flags |= BTRFS_BALANCE_ARGS_PROFILES;
			for (char *p = v, *bar; p && !rc; p = bar ? bar + 1 : NULL) {
				uint64_t bit;
				bar = strchr(p, '|');
				size_t len = bar ? (size_t)(bar - p) : strlen(p);
				if (!profile_of(p, len, &bit))
					rc = cli_usage_error(&cli_cmd_balance, "invalid profiles argument '%s'", v);
				a->profiles |= bit;
			}
		} else if (!strcmp(f, "convert")) {
			uint64_t bit = 0;
			if (!profile_of(v, strlen(v), &bit))
				rc = cli_usage_error(&cli_cmd_balance, "unknown profile: %s", v);
			a->target = bit;
			a->flags |= BTRFS_BALANCE_ARGS_CONVERT;
		} else if (parse_range(v, &lo, &hi, &range)) {
			rc = cli_usage_error(&cli_cmd_balance, "invalid %s argument '%s'", f, v);
		} else if (!strcmp(f, "usage")) {
			if (range && (hi > 100 && hi != UINT64_MAX))
				rc = cli_usage_error(&cli_cmd_balance, "invalid usage argument '%s'", v);
			else if (range)
				a->flags |= BTRFS_BALANCE_ARGS_USAGE_RANGE, a->usage_min = (uint32_t)lo,
					a->usage_max = hi == UINT64_MAX ? 100 : (uint32_t)hi;
			else if (lo > 100)
				rc = cli_usage_error(&cli_cmd_balance, "invalid usage argument '%s'", v);
			else
				a->flags |= BTRFS_BALANCE_ARGS_USAGE, a->usage = lo;
		} else if (!strcmp(f, "devid") && !range) {
			a->flags |= BTRFS_BALANCE_ARGS_DEVID, a->devid = lo;
		} else if (!strcmp(f, "drange") && range) {
			a->flags |= BTRFS_BALANCE_ARGS_DRANGE, a->pstart = lo, a->pend = hi;
		} else if (!strcmp(f, "vrange") && range) {
			a->flags |= BTRFS_BALANCE_ARGS_VRANGE, a->vstart = lo, a->vend = hi;
		} else if (!strcmp(f, "limit")) {
			if (range && (lo > UINT32_MAX || (hi > UINT32_MAX && hi != UINT64_MAX)))
				rc = cli_usage_error(&cli_cmd_balance, "invalid limit argument '%s'", v);
			else if (range)
				a->flags |= BTRFS_BALANCE_ARGS_LIMIT_RANGE, a->limit_min = (uint32_t)lo,
					a->limit_max = hi == UINT64_MAX ? UINT32_MAX : (uint32_t)hi;
			else
				a->flags |= BTRFS_BALANCE_ARGS_LIMIT, a->limit = lo;
		} else if (!strcmp(f, "stripes") && range && lo <= UINT32_MAX) {
			a->flags |= BTRFS_BALANCE_ARGS_STRIPES_RANGE, a->stripes_min = (uint32_t)lo,
				a->stripes_max = hi > UINT32_MAX ? UINT32_MAX : (uint32_t)hi;
		} else {
			rc = cli_usage_error(&cli_cmd_balance, "unrecognized filter or argument: %s=%s", f, v);
		}
	}
	free(copy);
	return rc;
}

static void print_done(const struct ref_balance_stats *st)
{
	printf("Done, had to relocate %llu out of %llu chunks\n", (unsigned long long)st->relocated,
	       (unsigned long long)st->considered);
	fprintf(stderr, "moved %llu tree blocks and %llu data extents (%llu bytes)\n",
		(unsigned long long)st->tree_blocks, (unsigned long long)st->data_extents,
		(unsigned long long)st->data_bytes);
}

enum { OPT_DEGRADED = 0x100, OPT_FAULTS };

/* ref_balance with the fault plan at path armed (NULL: none). */
static int balance_with_faults(struct cli_mount *m, const char *path, const struct ref_balance *b,
			       struct ref_balance_stats *st)
{
	if (!path)
		return ref_balance(m->fs, b, st);
	struct fault_plan *plan;
	char err[256];
	if (fault_plan_parse_file(path, &plan, err, sizeof(err)) ||
	    fault_plan_arm(plan, 1, m->vol, err, sizeof(err))) {
		cli_report(m, "faults", EINVAL, err);
		return -EINVAL;
	}
	int r = ref_balance(m->fs, b, st);
	fault_plan_disarm();
	fault_plan_free(plan);
	return r;
}

static int start(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", optional_argument, NULL, 'd' },
		{ "metadata", optional_argument, NULL, 'm' },
		{ "system", optional_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "full-balance", no_argument, NULL, 'F' },
		{ "degraded", no_argument, NULL, OPT_DEGRADED },
		{ "faults", required_argument, NULL, OPT_FAULTS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *faults = NULL;
	struct ref_balance b;
	memset(&b, 0, sizeof(b));
	bool degraded = false;
	int c, rc = 0;
	optind = 1;
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, "d::m::s::fh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': b.flags |= BTRFS_BALANCE_DATA, rc = parse_filters(optarg, &b.data); break;
		case 'm': b.flags |= BTRFS_BALANCE_METADATA, rc = parse_filters(optarg, &b.meta); break;
		case 's': b.flags |= BTRFS_BALANCE_SYSTEM, rc = parse_filters(optarg, &b.sys); break;
		case 'f': b.flags |= BTRFS_BALANCE_FORCE; break;
		case 'F': break;
		case OPT_DEGRADED: degraded = true; break;
		case OPT_FAULTS: faults = optarg; break;
		case 'h': return cli_help(&cli_cmd_balance);
		default: return cli_usage_error(&cli_cmd_balance, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (rc)
		return rc;
	if (optind >= argc)
		return cli_usage_error(&cli_cmd_balance, "needs at least one image");
	if (b.flags & BTRFS_BALANCE_SYSTEM && !(b.flags & BTRFS_BALANCE_FORCE))
		return cli_usage_error(&cli_cmd_balance,
				       "Refusing to explicitly operate on system chunks. Pass --force if you really want to do that.");
	if (!(b.flags & BTRFS_BALANCE_SYSTEM) && b.flags & BTRFS_BALANCE_METADATA) {
		b.flags |= BTRFS_BALANCE_SYSTEM;
		b.sys = b.meta;
	}
	if (!(b.flags & BTRFS_BALANCE_TYPE_MASK))
		b.flags |= BTRFS_BALANCE_TYPE_MASK; /* everything, no filters */
	const struct btrfs_balance_args *all[3] = { &b.data, &b.meta, &b.sys };
	for (int i = 0; i < 3; i++) {
		if (all[i]->flags & BTRFS_BALANCE_ARGS_DRANGE && !(all[i]->flags & BTRFS_BALANCE_ARGS_DEVID))
			return cli_usage_error(&cli_cmd_balance, "drange filter must be used with devid filter");
		if (all[i]->flags & BTRFS_BALANCE_ARGS_SOFT && !(all[i]->flags & BTRFS_BALANCE_ARGS_CONVERT))
			return cli_usage_error(&cli_cmd_balance, "'soft' option can be used only when converting profiles");
	}
	struct cli_mount m;
	if ((rc = cli_mount_degraded(&cli_cmd_balance, argv + optind, argc - optind, degraded, &m)))
		return rc;
	struct ref_balance_stats st;
	int r = balance_with_faults(&m, faults, &b, &st);
	if (r == -EINVAL && faults && !ref_error(m.fs)[0])
		return cli_abort(&m);
	if (r)
		return cli_op_fail(&m, "balance", r);
	print_done(&st);
	return cli_umount(&m);
}

/* resume, cancel and status: IMG... with --degraded. */
static int simple(const char *what, int argc, char **argv, bool *degraded)
{
	static const struct option opts[] = {
		{ "degraded", no_argument, NULL, OPT_DEGRADED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(&cli_cmd_balance);
		if (c != OPT_DEGRADED)
			return cli_usage_error(&cli_cmd_balance, "%s: unknown option '%s'", what, argv[optind - 1]);
		*degraded = true;
	}
	if (optind >= argc)
		return cli_usage_error(&cli_cmd_balance, "%s: needs at least one image", what);
	return 0;
}

static void print_args(const char *kind, const struct btrfs_balance_args *a)
{
	char name[16];
	printf("  %s (flags 0x%llx): ", kind, (unsigned long long)a->flags);
	if (a->flags & BTRFS_BALANCE_ARGS_CONVERT)
		printf("converting, target=%llu (%s), soft is %s", (unsigned long long)a->target,
		       ref_profile_lower(a->target, name), a->flags & BTRFS_BALANCE_ARGS_SOFT ? "on" : "off");
	else
		printf("balancing");
	if (a->flags & BTRFS_BALANCE_ARGS_PROFILES)
		printf(", profiles=%llu", (unsigned long long)a->profiles);
	if (a->flags & BTRFS_BALANCE_ARGS_USAGE)
		printf(", usage=%llu", (unsigned long long)a->usage);
	if (a->flags & BTRFS_BALANCE_ARGS_USAGE_RANGE)
		printf(", usage=%u..%u", a->usage_min, a->usage_max);
	if (a->flags & BTRFS_BALANCE_ARGS_DEVID)
		printf(", devid=%llu", (unsigned long long)a->devid);
	if (a->flags & BTRFS_BALANCE_ARGS_DRANGE)
		printf(", drange=%llu..%llu", (unsigned long long)a->pstart, (unsigned long long)a->pend);
	if (a->flags & BTRFS_BALANCE_ARGS_VRANGE)
		printf(", vrange=%llu..%llu", (unsigned long long)a->vstart, (unsigned long long)a->vend);
	if (a->flags & BTRFS_BALANCE_ARGS_LIMIT)
		printf(", limit=%llu", (unsigned long long)a->limit);
	if (a->flags & BTRFS_BALANCE_ARGS_LIMIT_RANGE)
		printf(", limit=%u..%u", a->limit_min, a->limit_max);
	if (a->flags & BTRFS_BALANCE_ARGS_STRIPES_RANGE)
		printf(", stripes=%u..%u", a->stripes_min, a->stripes_max);
	printf("\n");
}

static int status(int argc, char **argv)
{
	bool degraded = false;
	int rc = simple("status", argc, argv, &degraded);
	sim_volume *vol;
	ref_fs *fs;
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr, .degraded = degraded };
	if (rc || (rc = cli_open_fs(&cli_cmd_balance, argv + optind, argc - optind, &oo, &vol, &fs)))
		return rc;
	struct ref_balance b;
	int r = ref_balance_get(fs, &b);
	if (r < 0) {
		rc = cli_fail(&cli_cmd_balance, "%s", ref_error(fs));
	} else if (r == 1) {
		printf("No balance found on '%s'\n", argv[optind]);
	} else {
		printf("Balance on '%s' is paused\n", argv[optind]);
		printf("Dumping filters: flags 0x%llx, force is %s\n", (unsigned long long)b.flags,
		       b.flags & BTRFS_BALANCE_FORCE ? "on" : "off");
		if (b.flags & BTRFS_BALANCE_DATA)
			print_args("DATA", &b.data);
		if (b.flags & BTRFS_BALANCE_METADATA)
			print_args("METADATA", &b.meta);
		if (b.flags & BTRFS_BALANCE_SYSTEM)
			print_args("SYSTEM", &b.sys);
		rc = 1;
	}
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

static int cmd_balance(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return cli_help(&cli_cmd_balance);
	if (argc >= 2 && !strcmp(argv[1], "status"))
		return status(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "resume") || !strcmp(argv[1], "cancel"))) {
		bool resume = argv[1][0] == 'r', degraded = false;
		int rc = simple(argv[1], argc - 1, argv + 1, &degraded);
		struct cli_mount m;
		if (rc || (rc = cli_mount_degraded(&cli_cmd_balance, argv + 1 + optind,
						   argc - 1 - optind, degraded, &m)))
			return rc;
		struct ref_balance_stats st;
		int r = resume ? ref_balance_resume(m.fs, &st) : ref_balance_cancel(m.fs);
		if (r)
			return cli_op_fail(&m, argv[1], r);
		if (resume)
			print_done(&st);
		return cli_umount(&m);
	}
	if (argc >= 2 && !strcmp(argv[1], "start"))
		return start(argc - 1, argv + 1);
	return start(argc, argv);
}

const struct cli_cmd cli_cmd_balance = {
	.name = "balance",
	.summary = "relocate block groups, convert profiles (btrfs balance)",
	.usage = usage_text,
	.run = cmd_balance,
};
