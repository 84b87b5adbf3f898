/*
 * cmd-run.c - `btrsim run`: a workload file run on the reference Btrfs in
 * image files, or on a host directory (a kernel mount) through the system
 * calls; every result checked against the errno the workload expects.
 */
#include "cli/image.h"
#include "ref/compress.h"
#include "ref/vfs.h"
#include "traces/run.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: btrsim run [options] WORKLOAD IMG...\n"
	"       btrsim run [options] --host DIR WORKLOAD\n"
	"\n"
	"Run a workload (traces/README.md, \"Workload language\") on the file system in\n"
	"the images, mounted for writing, or with --host on a directory of the running\n"
	"kernel (paths resolved inside DIR).  Each operation's result must be the errno\n"
	"its line expects ('= ERRNO'; success without one); the first that differs is\n"
	"reported as FILE:LINE and the run stops.  On the images, 'crash' loses power\n"
	"(unflushed writes dropped or kept at random, some torn, from --seed), then the\n"
	"file system is mounted again and the run goes on.  The images are committed\n"
	"when the workload ends.\n"
	"\n"
	"  --host DIR          run on a host directory instead of images\n"
	"  --annotate FILE     write the workload back with every result as '= ERRNO'\n"
	"  --record            compare nothing (use with --annotate: the results become\n"
	"                      the expectations, e.g. from a run on the kernel)\n"
	"  -k, --keep-going    report every mismatch, not just the first\n"
	"  -v, --verbose       print each operation and its result\n"
	"      --notreelog     fsync and fdatasync commit the transaction, as the\n"
	"                      kernel's -o notreelog (default: they write the log tree)\n"
	"      --compress[=ALG[:LEVEL]], --compress-force[=ALG[:LEVEL]]\n"
	"                      mount the images with the kernel's compress= or\n"
	"                      compress-force= (in place of the workload's\n"
	"                      mount-options header)\n"
	"      --power-off     end with a power loss instead of committing: what the\n"
	"                      disks had not flushed is gone, so the images hold the\n"
	"                      last commit and the fsync log, as after a crash\n"
	"  --seed N            the seed of power-loss choices (default 1; printed)\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 every result as expected, 1 a mismatch or a failure, 2 bad usage.\n";

const struct cli_cmd cli_cmd_run;

/* The ref target: a mounted fs that `crash` replaces by a remounted one. */
struct ref_target {
	sim_volume *vol;
	ref_fs *fs;
	struct ref_mount_opts mo;
};

/* What the fsyncs did: synced the log, or committed and why. */
static void print_log_stats(ref_fs *fs)
{
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	if (!ls.log_syncs && !ls.full_commits && !ls.skipped)
		return;
	printf("fsync: %llu log syncs, %llu full commits", (unsigned long long)ls.log_syncs,
	       (unsigned long long)ls.full_commits);
	if (ls.skipped)
		printf(", %llu with nothing to log", (unsigned long long)ls.skipped);
	const char *sep = " (";
	for (int i = 0; i < REF_LOG_FULL_NREASONS; i++)
		if (ls.full_by_reason[i]) {
			printf("%s%s: %llu", sep, ref_log_full_reason((enum ref_log_full)i),
			       (unsigned long long)ls.full_by_reason[i]);
			sep = "; ";
		}
	printf("%s\n", *sep == ';' ? ")" : "");
}

static int exec_ref(void *t, const struct wl_op *op, char *err, size_t errlen)
{
	return wl_exec_ref(((struct ref_target *)t)->fs, op, err, errlen);
}

static int crash_ref(void *p, char *err, size_t errlen)
{
	struct ref_target *t = p;
	ref_close(t->fs); /* no commit: power is gone */
	t->fs = NULL;
	struct sim_crash_spec cs = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0.5,
				     .tear_probability = 0.2 };
	int r = sim_volume_crash(t->vol, &cs, NULL);
	if (r) {
		snprintf(err, errlen, "%s", sim_volume_error(t->vol));
		return r;
	}
	return ref_mount(t->vol, &t->mo, &t->fs, err, errlen);
}

static int report(const struct wl_run_result *res, int rc, const char *err)
{
	if (rc)
		fprintf(stderr, "btrsim run: %s\n", err);
	printf("%zu operations, %zu unexpected result%s, %zu crash%s\n", res->ops, res->mismatches,
	       res->mismatches == 1 ? "" : "s", res->crashes, res->crashes == 1 ? "" : "es");
	return rc ? 1 : 0;
}

static int run_host(const char *dir, const struct wl_workload *w, const struct wl_run_opts *ro)
{
	struct wl_host h;
	char err[1024];
	if (wl_host_open(dir, &h, err, sizeof(err)))
		return cli_fail(&cli_cmd_run, "%s", err);
	struct wl_run_result res;
	int rc = wl_run(w, wl_exec_host, &h, ro, &res, err, sizeof(err));
	wl_host_close(&h);
	return report(&res, rc, err);
}

static int run_images(char **imgs, int n, uint64_t seed, const struct wl_workload *w,
		      struct wl_run_opts *ro, bool treelog, bool power_off)
{
	struct ref_target t = { .mo = { .open = { .super_mirror = -1 },
					.notreelog = !treelog,
					.compress = w->mount.compress,
					.compress_level = w->mount.compress_level,
					.compress_force = w->mount.compress_force } };
	int rc = cli_open_volume_seeded(&cli_cmd_run, imgs, n, true, seed, &t.vol);
	if (rc)
		return rc;
	char err[1024];
	if (ref_mount(t.vol, &t.mo, &t.fs, err, sizeof(err))) {
		sim_volume_close(t.vol);
		return cli_fail_images(&cli_cmd_run, imgs, n, err);
	}
	cli_print_seed(seed);
	ro->crash = crash_ref;
	struct wl_run_result res;
	rc = wl_run(w, exec_ref, &t, ro, &res, err, sizeof(err));
	if (t.fs)
		print_log_stats(t.fs);
	if (t.fs && power_off) {
		struct ref_log_stats ls;
		ref_log_stats(t.fs, &ls);
		printf("%llu commits, %llu log syncs, then power lost\n",
		       (unsigned long long)ref_commits(t.fs), (unsigned long long)ls.log_syncs);
		ref_close(t.fs);
		struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
		int e = sim_volume_crash(t.vol, &none, NULL);
		if (e && !rc) {
			snprintf(err, sizeof(err), "power off: %s", sim_volume_error(t.vol));
			rc = e;
		}
	} else if (t.fs) {
		uint64_t commits = ref_commits(t.fs);
		int u = ref_umount(t.fs);
		if (u && !rc) {
			snprintf(err, sizeof(err), "committing at the end: %s", strerror(-u));
			rc = u;
		}
		printf("%llu commits\n", (unsigned long long)commits + (u == 0));
	}
	sim_volume_close(t.vol);
	return report(&res, rc, err);
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "host", required_argument, NULL, 'H' },   { "annotate", required_argument, NULL, 'a' },
		{ "record", no_argument, NULL, 'r' },       { "keep-going", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },      { "seed", required_argument, NULL, 's' },
		{ "treelog", no_argument, NULL, 'T' },      { "power-off", no_argument, NULL, 'P' },
		{ "notreelog", no_argument, NULL, 'N' },
		{ "compress", optional_argument, NULL, 'C' },
		{ "compress-force", optional_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	struct wl_mount mount = { 0 };
	bool mount_set = false;
	char why[160];
	struct wl_run_opts ro = { 0 };
	bool treelog = true, power_off = false;
	const char *host = NULL, *annotate = NULL;
	uint64_t seed = 1;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "kvh", opts, NULL)) != -1) {
		switch (c) {
		case 'H': host = optarg; break;
		case 'a': annotate = optarg; break;
		case 'r': ro.record = true; break;
		case 'k': ro.keep_going = true; break;
		case 'v': ro.log = stdout; break;
		case 'T': treelog = true; break;
		case 'N': treelog = false; break;
		case 'P': power_off = true; break;
		case 'C':
		case 'F':
			if (ref_compress_parse(optarg, &mount.compress, &mount.compress_level, why,
					       sizeof(why)))
				return cli_usage_error(&cli_cmd_run, "%s", why);
			mount.compress_force = c == 'F' && mount.compress;
			mount_set = true;
			break;
		case 's':
			if (cli_parse_u64(optarg, &seed, 0))
				return cli_usage_error(&cli_cmd_run, "--seed takes a number, not '%s'", optarg);
			break;
		case 'h': return cli_help(&cli_cmd_run);
		default: return cli_usage_error(&cli_cmd_run, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error(&cli_cmd_run, "no workload given");
	if (host && argc - optind != 1)
		return cli_usage_error(&cli_cmd_run, "with --host, give only the workload");
	if (host && (!treelog || power_off))
		return cli_usage_error(&cli_cmd_run, "--%s is for images, not --host",
				       !treelog ? "notreelog" : "power-off");
	if (!host && argc - optind < 2)
		return cli_usage_error(&cli_cmd_run, "no image given");
	struct wl_workload w = { 0 };
	char err[1024];
	if (wl_parse_file(argv[optind], &w, err, sizeof(err)))
		return cli_fail(&cli_cmd_run, "%s", err);
	if (mount_set)
		w.mount = mount;
	char mopts[64];
	wl_mount_format(&w.mount, mopts, sizeof(mopts));
	if (host && *mopts)
		fprintf(stderr, "btrsim run: note: %s is for the images; on --host, %s is used as it "
				"is mounted\n", mopts, host);
	FILE *af = NULL;
	if (annotate && !(af = fopen(annotate, "w"))) {
		wl_free(&w);
		return cli_fail(&cli_cmd_run, "%s: %s", annotate, strerror(errno));
	}
	ro.annotate = af;
	int rc = host ? run_host(host, &w, &ro)
		      : run_images(argv + optind + 1, argc - optind - 1, seed, &w, &ro, treelog,
				   power_off);
	if (af && fclose(af) && !rc)
		rc = cli_fail(&cli_cmd_run, "%s: %s", annotate, strerror(errno));
	wl_free(&w);
	return rc;
}

const struct cli_cmd cli_cmd_run = {
	.name = "run",
	.summary = "run a workload on images or a host directory, checking every errno",
	.usage = usage_text,
	.run = cmd_run,
};
