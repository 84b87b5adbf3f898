/*
 * cmd-scrub.c - `btrsim scrub`: every copy of everything allocated read and
 * verified, bad copies rewritten from good ones, RAID5/6 parity checked
 * (ref_scrub), reported with btrfs scrub's counters and summary lines.
 */
#include "cli/fsops.h"
#include "cli/image.h"

#include <getopt.h>
#include <string.h>

static const char usage_text[] =
	"usage: btrsim scrub [options] IMG...\n"
	"\n"
	"Scrub the file system on the images, as 'btrfs scrub start -B': read every\n"
	"copy of every tree block and data sector (each RAID5/6 data column, then\n"
	"each row's P and Q against its data) and every superblock; verify checksums,\n"
	"tree block headers and generations; rewrite a bad copy from a good one (a\n"
	"RAID5/6 column from parity) and a parity that disagrees with its data.\n"
	"\n"
	"  -r, --readonly   report only: nothing is rewritten\n"
	"  -d               the summary per device (default: for the whole volume)\n"
	"  -R               the raw counters ('btrfs scrub status -R') too\n"
	"      --degraded   scrub with devices missing (mounted degraded: what is left\n"
	"                   is mended where the profile allows)\n"
	"  -h, --help       show this help\n"
	"\n"
	"Errors count sectors.  parity= (RAID5/6 P or Q sectors that disagreed with\n"
	"their data) is ref's own: the kernel rewrites such parity without counting.\n"
	"\n"
	"With -r, errors a good copy could mend are counted as corrected, as\n"
	"'btrfs scrub -r' counts them, though nothing is written.\n"
	"\n"
	"Exit status: 0 no errors, or all correctable; 3 uncorrectable errors; 1 the\n"
	"scrub could not run; 2 bad usage.\n";

const struct cli_cmd cli_cmd_scrub;

static void add(struct ref_scrub_dev *t, const struct ref_scrub_dev *d)
{
	t->data_extents_scrubbed += d->data_extents_scrubbed;
	t->tree_extents_scrubbed += d->tree_extents_scrubbed;
	t->data_bytes_scrubbed += d->data_bytes_scrubbed;
	t->tree_bytes_scrubbed += d->tree_bytes_scrubbed;
	t->read_errors += d->read_errors;
	t->csum_errors += d->csum_errors;
	t->verify_errors += d->verify_errors;
	t->no_csum += d->no_csum;
	t->super_errors += d->super_errors;
	t->parity_errors += d->parity_errors;
	t->corrected_errors += d->corrected_errors;
	t->uncorrectable_errors += d->uncorrectable_errors;
	t->unverified_errors += d->unverified_errors;
	if (d->last_physical > t->last_physical)
		t->last_physical = d->last_physical;
}

static uint64_t errors_of(const struct ref_scrub_dev *d)
{
	return d->read_errors + d->csum_errors + d->verify_errors + d->super_errors + d->parity_errors;
}

static void print_raw(const struct ref_scrub_dev *d)
{
	const struct { const char *name; uint64_t v; } rows[] = {
		{ "data_extents_scrubbed", d->data_extents_scrubbed },
		{ "tree_extents_scrubbed", d->tree_extents_scrubbed },
		{ "data_bytes_scrubbed", d->data_bytes_scrubbed },
		{ "tree_bytes_scrubbed", d->tree_bytes_scrubbed },
		{ "read_errors", d->read_errors },
		{ "csum_errors", d->csum_errors },
		{ "verify_errors", d->verify_errors },
		{ "no_csum", d->no_csum },
		{ "csum_discards", 0 },
		{ "super_errors", d->super_errors },
		{ "parity_errors", d->parity_errors },
		{ "malloc_errors", 0 },
		{ "uncorrectable_errors", d->uncorrectable_errors },
		{ "unverified_errors", d->unverified_errors },
		{ "corrected_errors", d->corrected_errors },
		{ "last_physical", d->last_physical },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		printf("\t%s: %llu\n", rows[i].name, (unsigned long long)rows[i].v);
}

/* btrfs-progs' print_scrub_summary lines, parity added. */
static void print_summary(const struct ref_scrub_dev *d, bool raw)
{
	printf("Total scrubbed:   %llu bytes (data %llu, tree %llu)\n",
	       (unsigned long long)(d->data_bytes_scrubbed + d->tree_bytes_scrubbed),
	       (unsigned long long)d->data_bytes_scrubbed, (unsigned long long)d->tree_bytes_scrubbed);
	if (raw)
		print_raw(d);
	printf("Error summary:   ");
	if (!errors_of(d) && !d->uncorrectable_errors && !d->unverified_errors) {
		printf(" no errors found\n");
		return;
	}
	const struct { const char *name; uint64_t v; } kinds[] = {
		{ "read", d->read_errors },	{ "super", d->super_errors }, { "verify", d->verify_errors },
		{ "csum", d->csum_errors },	{ "parity", d->parity_errors },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].v)
			printf(" %s=%llu", kinds[i].name, (unsigned long long)kinds[i].v);
	printf("\n  Corrected:      %llu\n", (unsigned long long)d->corrected_errors);
	printf("  Uncorrectable:  %llu\n", (unsigned long long)d->uncorrectable_errors);
	printf("  Unverified:     %llu\n", (unsigned long long)d->unverified_errors);
}

static int cmd_scrub(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "readonly", no_argument, NULL, 'r' },
		{ "degraded", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool readonly = false, per_dev = false, raw = false, degraded = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "rdRh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': readonly = true; break;
		case 'd': per_dev = true; break;
		case 'R': raw = true; break;
		case 'D': degraded = true; break;
		case 'h': return cli_help(&cli_cmd_scrub);
		default: return cli_usage_error(&cli_cmd_scrub, "unknown option '%s'", argv[optind - 1]);
		}
	}
	char **imgs = argv + optind;
	int nimg = argc - optind;
	if (nimg < 1)
		return cli_usage_error(&cli_cmd_scrub, "needs at least one image");
	struct cli_mount m = { .cmd = &cli_cmd_scrub };
	int rc;
	if (readonly) {
		struct ref_open_opts oo = { .super_mirror = -1, .log = stderr, .degraded = degraded };
		rc = cli_open_fs(&cli_cmd_scrub, imgs, nimg, &oo, &m.vol, &m.fs);
	} else {
		rc = cli_mount_degraded(&cli_cmd_scrub, imgs, nimg, degraded, &m);
	}
	if (rc)
		return rc;
	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t ndevs = 0;
	int r = ref_scrub(m.fs, readonly, devs, &ndevs);
	if (r) {
		if (readonly) {
			cli_fail(&cli_cmd_scrub, "%s", ref_error(m.fs));
			ref_close(m.fs);
			sim_volume_close(m.vol);
			return 1;
		}
		return cli_op_fail(&m, "scrub", r);
	}
	struct ref_scrub_dev total = { 0 };
	for (size_t i = 0; i < ndevs; i++) {
		add(&total, &devs[i]);
		if (!per_dev)
			continue;
		const char *name = devs[i].disk >= 0 && devs[i].disk < nimg ? imgs[devs[i].disk] : "missing";
		printf("%sScrub device %s (id %llu) %s\n", i ? "\n" : "", name,
		       (unsigned long long)devs[i].devid, devs[i].missing ? "missing" : "done");
		print_summary(&devs[i], raw);
	}
	if (!per_dev)
		print_summary(&total, raw);
	bool left = total.uncorrectable_errors;
	if (left)
		fprintf(stderr, "btrsim scrub: ERROR: there are uncorrectable errors\n");
	else if (errors_of(&total))
		fprintf(stderr, "btrsim scrub: WARNING: errors detected during scrubbing, corrected\n");
	if (readonly) {
		ref_close(m.fs);
		sim_volume_close(m.vol);
		rc = 0;
	} else {
		rc = cli_umount(&m);
	}
	return rc ? rc : left ? 3 : 0;
}

const struct cli_cmd cli_cmd_scrub = {
	.name = "scrub",
	.summary = "read and verify every copy, repair from good ones, as btrfs scrub",
	.usage = usage_text,
	.run = cmd_scrub,
};
