/*
 * cmd-kernel-disks.c - `btrsim kernel-disks`: sim disks served as files
 * through FUSE (traces/kernel_disks.c) until a signal, for recording what the
 * kernel (or any program) writes to them: a loop device over DIR/disk0 shows
 * btrsim every request, a flush as an fsync of the file.
 */
#include "cli/cli.h"
#include "traces/kernel.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: btrsim kernel-disks [options] DIR\n"
	"\n"
	"Serve the disks of a memory-backed sim volume as the files DIR/disk0,\n"
	"DIR/disk1, ... through FUSE (DIR must exist), until SIGINT or SIGTERM; then\n"
	"print what was asked of each disk.  Every read and write reaches the sim\n"
	"disk as it is made (direct IO), an fsync of a file is a flush of its disk,\n"
	"a punched hole a discard: a loop device over a file records the kernel's\n"
	"IO as the crash harness does ('explore --target kernel').  Detach the loop\n"
	"devices over the files before stopping it: a request still coming then\n"
	"fails (the FUSE connection is aborted).  Needs /dev/fuse (root).\n"
	"\n"
	"  --disks N           disks (1; at most 64)\n"
	"  --size SIZE         bytes per disk (512m)\n"
	"  --disk-mode M       honest (default), no-flush, no-fua, tear or stall (as for\n"
	"                      'explore --target kernel')\n"
	"  --seed N            the volume's seed (1)\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 served and stopped, 1 could not serve, 2 bad usage.\n";

const struct cli_cmd cli_cmd_kernel_disks;

static int cmd_kernel_disks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "disks", required_argument, NULL, 'K' },  { "size", required_argument, NULL, 'S' },
		{ "disk-mode", required_argument, NULL, 'M' }, { "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },	   { NULL, 0, NULL, 0 },
	};
	uint64_t ndisks = 1, size = UINT64_C(512) << 20, seed = 1;
	int mode = KDISK_HONEST, c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'K':
			if (cli_parse_u64(optarg, &ndisks, 0) || ndisks < 1 || ndisks > SIM_MAX_DISKS)
				return cli_usage_error(&cli_cmd_kernel_disks, "--disks takes 1 to 64");
			break;
		case 'S':
			if (cli_parse_u64(optarg, &size, 1) || size < (UINT64_C(1) << 20) ||
			    size > SIM_MAX_DISK_BYTES || size % 4096)
				return cli_usage_error(&cli_cmd_kernel_disks,
						       "--size takes 1m to 1p, a multiple of 4k");
			break;
		case 'M':
			if ((mode = kdisk_mode_parse(optarg)) < 0)
				return cli_usage_error(&cli_cmd_kernel_disks,
						       "--disk-mode takes honest, no-flush, no-fua, tear or stall");
			break;
		case 's':
			if (cli_parse_u64(optarg, &seed, 0))
				return cli_usage_error(&cli_cmd_kernel_disks, "--seed takes a number");
			break;
		case 'h': return cli_help(&cli_cmd_kernel_disks);
		default:
			return cli_usage_error(&cli_cmd_kernel_disks, "unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(&cli_cmd_kernel_disks, "takes one directory");
	const char *dir = argv[optind];
	struct stat st;
	if (stat(dir, &st))
		return cli_fail(&cli_cmd_kernel_disks, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_fail(&cli_cmd_kernel_disks, "%s: not a directory", dir);
	char err[512];
	if (kernel_can_run(true, err, sizeof(err)))
		return cli_fail(&cli_cmd_kernel_disks, "%s", err);
	struct sim_volume_config cfg;
	sim_config_init(&cfg, (unsigned)ndisks, size, seed);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	for (unsigned d = 0; d < ndisks; d++)
		cfg.disk[d].sector_size = mode == KDISK_TEAR ? 512 : 4096;
	sim_volume *vol;
	if (sim_volume_open(&cfg, &vol, err, sizeof(err)))
		return cli_fail(&cli_cmd_kernel_disks, "%s", err);
	/* The signals are taken here, by sigwait, not by a handler: blocked
	 * before the FUSE thread starts, so that it never gets them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	struct kdisks *k;
	if (kdisks_start(vol, dir, (enum kdisk_mode)mode, &k, err, sizeof(err))) {
		sim_volume_close(vol);
		return cli_fail(&cli_cmd_kernel_disks, "%s", err);
	}
	for (unsigned d = 0; d < ndisks; d++)
		printf("%s\n", kdisks_path(k, d));
	fflush(stdout);
	int sig;
	sigwait(&set, &sig);
	/* requests still coming (a loop device left attached) fail from here */
	kernel_release_all();
	kdisks_stop(k);
	for (unsigned d = 0; d < ndisks; d++) {
		struct sim_disk_stats ds;
		if (sim_disk_stats(vol, d, &ds) == 0)
			printf("disk%u: %" PRIu64 " reads, %" PRIu64 " writes (%" PRIu64
			       " bytes), %" PRIu64 " flushes, %" PRIu64 " discards, %" PRIu64
			       " volatile at the end\n",
			       d, ds.reads, ds.writes, ds.bytes_written, ds.flushes, ds.discards,
			       ds.pending_writes);
	}
	sim_volume_close(vol);
	return 0;
}

const struct cli_cmd cli_cmd_kernel_disks = {
	.name = "kernel-disks",
	.summary = "serve sim disks as files through FUSE, for the kernel's IO",
	.usage = usage_text,
	.run = cmd_kernel_disks,
};
