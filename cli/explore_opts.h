/*
 * explore_opts.h - the options `btrsim explore` and `btrsim campaign` share:
 * how crash states are enumerated, the volume the workloads run on, the seed
 * and the fault plan.
 */
#ifndef BTRSIM_CLI_EXPLORE_OPTS_H
#define BTRSIM_CLI_EXPLORE_OPTS_H

#include "cli/cli.h"
#include "traces/explore.h"
#include "version.h"

#include <getopt.h>


#define EXPLORE_OPTS_HELP \
	"  --target T          ref (the default: ref over memory disks) or kernel:\n" \
	"                      the running kernel's btrfs over loop devices whose\n" \
	"                      files are sim disks served through FUSE; each state\n" \
	"                      mounted by the kernel, checked by btrfs check and\n" \
	"                      btrsim check, and compared with ref's view (root)\n" \
	"  --mount-options O   kernel: more options for its mounts (-o O)\n" \
	"  --disk-mode M       kernel: how the FUSE disks behave: honest (default),\n" \
	"                      no-flush (flushes do nothing), no-fua (the flush of\n" \
	"                      a lone write is dropped), tear (writes tear at 512\n" \
	"                      bytes under 4 KiB blocks), stall (the first flush\n" \
	"                      never completes: a hang)\n" \
	"  --timeout SECONDS   kernel: a mount, unmount, check or operation taking\n" \
	"                      longer is a hang (30)\n" \
	"  --jobs N            kernel: crash states judged side by side by N worker\n" \
	"                      processes (one per core, at most 8); the kernel's part\n" \
	"                      of each (mount, walk, unmount, btrfs check) one at a\n" \
	"                      time: a run's states share one fsid\n" \
	"  --max-subset K      all subsets while at most K writes are volatile (10;\n" \
	"                      with --target kernel 6: each state is a kernel mount)\n" \
	"  --samples N         random subsets beyond that, per crash point (64; with\n" \
	"                      --target kernel 24)\n" \
	"  --torn N            states with a torn write, per crash point (4)\n" \
	"  --seed N            every random choice: samples, tears, uuids, faults (1;\n" \
	"                      printed)\n" \
	"  --nodesize SIZE     of the file system made for the run (16k)\n" \
	"  --disks N           disks in the volume (1); with 2 or more, data and\n" \
	"                      metadata are RAID1 and each disk crashes on its own\n" \
	"  --profile P         data and metadata in profile P instead (single, dup,\n" \
	"                      raid0, raid1, raid1c3, raid1c4, raid10, raid5, raid6)\n" \
	"  --notreelog         fsync and fdatasync commit the transaction, as the\n" \
	"                      kernel's -o notreelog (default: they write the log\n" \
	"                      tree, and states are judged by the log's promises)\n" \
	"  --lose-disk         judge each state again with each disk lost (degraded):\n" \
	"                      a legal state, or unreadable (the RAID5/6 write hole,\n" \
	"                      counted), never wrong; not with --db\n" \
	"  --faults PLAN       arm the fault plan PLAN while the workload runs\n" \
	"                      (faults/README.md); its sim lines damage the disks\n" \
	"                      (with --target kernel: the disks the kernel writes)\n" \
	"  --compress[=ALG[:LEVEL]], --compress-force[=ALG[:LEVEL]]\n" \
	"                      mount with the kernel's compress= / compress-force=\n" \
	"                      (zlib, lzo, zstd; in place of a workload's\n" \
	"                      mount-options header; stored with the workload)\n" \
	"  --no-memo           judge every crash state afresh (default: a state whose\n" \
	"                      disks an earlier state had, byte for byte, takes what\n" \
	"                      ref found there: its mount, check and tree; the verdict\n" \
	"                      is still made for its own crash point)\n" \
	"  --quota             quota groups on: each workload starts with quota-enable\n" \
	"                      (campaign --seq: as the setup's first op), so that every\n" \
	"                      crash state's group numbers are checked against a recount\n"

/* Long-only options: values no short option can take (the commands that
 * share these options have short letters of their own). */
#define EXPLORE_OPT_PROFILE 0x100
#define EXPLORE_OPT_LOSE_DISK 0x101
#define EXPLORE_OPT_TREELOG 0x102
#define EXPLORE_OPT_NOTREELOG 0x103
#define EXPLORE_OPT_COMPRESS 0x104
#define EXPLORE_OPT_COMPRESS_FORCE 0x105
#define EXPLORE_OPT_TARGET 0x106
#define EXPLORE_OPT_MOUNT_OPTIONS 0x107
#define EXPLORE_OPT_DISK_MODE 0x108
#define EXPLORE_OPT_TIMEOUT 0x109
#define EXPLORE_OPT_JOBS 0x10a
#define EXPLORE_OPT_NO_MEMO 0x10b

#define EXPLORE_LONG_OPTS \
	{ "max-subset", required_argument, NULL, 'k' }, { "samples", required_argument, NULL, 'n' }, \
	{ "torn", required_argument, NULL, 't' }, { "seed", required_argument, NULL, 's' }, \
	{ "nodesize", required_argument, NULL, 'N' }, { "disks", required_argument, NULL, 'K' }, \
	{ "faults", required_argument, NULL, 'F' }, { "quota", no_argument, NULL, 'Q' }, \
	{ "profile", required_argument, NULL, EXPLORE_OPT_PROFILE }, \
	{ "lose-disk", no_argument, NULL, EXPLORE_OPT_LOSE_DISK }, \
	{ "treelog", no_argument, NULL, EXPLORE_OPT_TREELOG }, \
	{ "notreelog", no_argument, NULL, EXPLORE_OPT_NOTREELOG }, \
	{ "compress", optional_argument, NULL, EXPLORE_OPT_COMPRESS }, \
	{ "compress-force", optional_argument, NULL, EXPLORE_OPT_COMPRESS_FORCE }, \
	{ "target", required_argument, NULL, EXPLORE_OPT_TARGET }, \
	{ "mount-options", required_argument, NULL, EXPLORE_OPT_MOUNT_OPTIONS }, \
	{ "disk-mode", required_argument, NULL, EXPLORE_OPT_DISK_MODE }, \
	{ "timeout", required_argument, NULL, EXPLORE_OPT_TIMEOUT }, \
	{ "jobs", required_argument, NULL, EXPLORE_OPT_JOBS }, \
	{ "no-memo", no_argument, NULL, EXPLORE_OPT_NO_MEMO }

struct cli_explore {
	struct explore_opts o;
	const char *faults_path;  /* --faults */
	struct fault_plan *plan;  /* loaded by cli_explore_load */
	char *faults_text;        /* its canonical text, stored with each run */
	bool quota;               /* --quota: workloads start with quota-enable */
	int64_t profile;          /* --profile (a BTRFS_BLOCK_GROUP_* bit), -1 unset */
	struct wl_mount mount;    /* --compress / --compress-force */
	bool mount_set;
	const char *kernel_only;  /* the last option given that needs --target kernel */
	bool subset_set, samples_set; /* --max-subset, --samples given */
	bool no_memo;             /* --no-memo; else cli_explore_load makes o.memo */
};

void cli_explore_init(struct cli_explore *ce);
/* Handles option c (with optarg) when it is one of EXPLORE_LONG_OPTS:
 * returns 0 handled, -1 not one of them, or an exit status (2) after a
 * usage message. */
int cli_explore_opt(struct cli_explore *ce, const struct cli_cmd *cmd, int c, const char *arg);
/* With --quota: w with quota-enable put before its first op (a workload
 * that starts with it already is left as it is).  0 or -ENOMEM (w
 * unchanged). */
int cli_explore_quota(const struct cli_explore *ce, struct wl_workload *w);
/* With --compress / --compress-force: w's header takes those options. */
void cli_explore_mount(const struct cli_explore *ce, struct wl_workload *w);
/* After the options: applies --profile, loads the fault plan, makes the
 * memo of judged states (ref's target, unless --no-memo).  0 or -1 with a
 * message. */
int cli_explore_load(struct cli_explore *ce, char *err, size_t errlen);
void cli_explore_free(struct cli_explore *ce);
/* The line telling how many states the memo answered (none when 0). */
void cli_explore_print_memo(size_t cached);

#endif
