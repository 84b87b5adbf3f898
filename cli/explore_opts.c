/* explore_opts.c - the options of explore and campaign (explore_opts.h). */
#include "cli/explore_opts.h"
#include "faults/plan.h"
#include "ref/compress.h"
#include "ref/ref.h"
#include "traces/kernel.h"

#include <linux/btrfs_tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_explore_init(struct cli_explore *ce)
{
	memset(ce, 0, sizeof(*ce));
	explore_defaults(&ce->o);
	ce->o.seed = 1;
	ce->profile = -1;
}


int cli_explore_opt(struct cli_explore *ce, const struct cli_cmd *cmd, int c, const char *arg)
{
	uint64_t v = 0;
	if (c < 0x100 && strchr("kntsNK", c) && (!arg || cli_parse_u64(arg, &v, c == 'N')))
		return cli_usage_error(cmd, "expected a number, not '%s'", arg ? arg : "");
	switch (c) {
	case 'k':
		if (v > 20)
			return cli_usage_error(cmd, "--max-subset takes 0 to 20");
		ce->o.max_subset = (unsigned)v;
		ce->subset_set = true;
		return 0;
	case 'n':
		ce->o.samples = v > 100000 ? 100000 : (unsigned)v;
		ce->samples_set = true;
		return 0;
	case 't': ce->o.torn = v > 10000 ? 10000 : (unsigned)v; return 0;
	case 's': ce->o.seed = v; return 0;
	case 'N':
		if (v < 4096 || v > 65536 || (v & (v - 1)))
			return cli_usage_error(cmd, "--nodesize takes a power of two, 4k to 64k");
		ce->o.nodesize = (uint32_t)v;
		return 0;
	case 'K':
		if (v < 1 || v > 4)
			return cli_usage_error(cmd, "--disks takes 1 to 4");
		ce->o.ndisks = (unsigned)v;
		ce->o.data_profile = v > 1 ? BTRFS_BLOCK_GROUP_RAID1 : 0;
		ce->o.meta_profile = v > 1 ? BTRFS_BLOCK_GROUP_RAID1 : BTRFS_BLOCK_GROUP_DUP;
		return 0;
	case EXPLORE_OPT_PROFILE:
		if (!ref_profile_parse(arg, &v)) {
			ce->profile = (int64_t)v;
			return 0;
		}
		return cli_usage_error(cmd, "--profile takes single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5 or raid6, not '%s'",
				       arg ? arg : "");
	case 'F': ce->faults_path = arg; return 0;
	case 'Q': ce->quota = true; return 0;
	case EXPLORE_OPT_LOSE_DISK: ce->o.lose_disk = true; return 0;
	case EXPLORE_OPT_TREELOG: ce->o.treelog = true; return 0;
	case EXPLORE_OPT_NOTREELOG: ce->o.treelog = false; return 0;
	case EXPLORE_OPT_COMPRESS:
	case EXPLORE_OPT_COMPRESS_FORCE: {
		char why[160];
		if (ref_compress_parse(arg, &ce->mount.compress, &ce->mount.compress_level, why,
				       sizeof(why)))
			return cli_usage_error(cmd, "%s", why);
		ce->mount.compress_force = c == EXPLORE_OPT_COMPRESS_FORCE && ce->mount.compress;
		ce->mount_set = true;
		return 0;
	}
	case EXPLORE_OPT_TARGET:
		if (!strcmp(arg, "ref") || !strcmp(arg, "kernel")) {
			ce->o.target = arg[0] == 'k' ? EXPLORE_KERNEL : EXPLORE_REF;
			return 0;
		}
		return cli_usage_error(cmd, "--target takes ref or kernel, not '%s'", arg);
	case EXPLORE_OPT_MOUNT_OPTIONS:
		if (strlen(arg) > 512 || strpbrk(arg, " \t\n"))
			return cli_usage_error(cmd, "--mount-options takes one -o list (at most 512 "
						    "bytes, no spaces)");
		ce->o.mount_options = arg;
		ce->kernel_only = "--mount-options";
		return 0;
	case EXPLORE_OPT_DISK_MODE: {
		int m = kdisk_mode_parse(arg);
		if (m < 0)
			return cli_usage_error(cmd, "--disk-mode takes honest, no-flush, no-fua, "
						    "tear or stall, not '%s'", arg);
		ce->o.disk_mode = m;
		ce->kernel_only = "--disk-mode";
		return 0;
	}
	case EXPLORE_OPT_TIMEOUT:
		if (cli_parse_u64(arg, &v, false) || v < 1 || v > 3600)
			return cli_usage_error(cmd, "--timeout takes 1 to 3600 seconds, not '%s'", arg);
		ce->o.timeout_ms = (unsigned)v * 1000;
		ce->kernel_only = "--timeout";
		return 0;
	case EXPLORE_OPT_JOBS:
		if (cli_parse_u64(arg, &v, false) || v < 1 || v > 8)
			return cli_usage_error(cmd, "--jobs takes 1 to 8, not '%s'", arg);
		ce->o.kernel_jobs = (unsigned)v;
		ce->kernel_only = "--jobs";
		return 0;
	case EXPLORE_OPT_NO_MEMO: ce->no_memo = true; return 0;
	default: return -1;
	}
}

int cli_explore_quota(const struct cli_explore *ce, struct wl_workload *w)
{
	if (!ce->quota || (w->n && w->ops[0].kind == WL_QUOTA_ENABLE))
		return 0;
	struct wl_workload q = { 0 };
	int r = wl_append(&q, &(struct wl_op){ .kind = WL_QUOTA_ENABLE });
	for (size_t i = 0; i < w->n && !r; i++)
		r = wl_append(&q, &w->ops[i]);
	if (r) {
		wl_free(&q);
		return r;
	}
	q.name = w->name;
	q.mount = w->mount;
	w->name = NULL;
	wl_free(w);
	*w = q;
	return 0;
}

void cli_explore_mount(const struct cli_explore *ce, struct wl_workload *w)
{
	if (ce->mount_set)
		w->mount = ce->mount;
}

int cli_explore_load(struct cli_explore *ce, char *err, size_t errlen)
{
	if (ce->profile >= 0) /* (after --disks, whatever the order given) */
		ce->o.data_profile = ce->o.meta_profile = (uint64_t)ce->profile;
	if (ce->kernel_only && ce->o.target != EXPLORE_KERNEL) {
		snprintf(err, errlen, "%s is for --target kernel", ce->kernel_only);
		return -1;
	}
	/* A kernel state costs a mount (some 40 ms, not ref's 0.2): fewer of
	 * them unless asked. */
	if (ce->o.target == EXPLORE_KERNEL && !ce->subset_set)
		ce->o.max_subset = 6;
	if (ce->o.target == EXPLORE_KERNEL && !ce->samples_set)
		ce->o.samples = 24;
	if (ce->o.target == EXPLORE_KERNEL && ce->o.lose_disk) {
		snprintf(err, errlen, "--lose-disk judges with ref's degraded mounts: not with "
				      "--target kernel");
		return -1;
	}
	if (ce->faults_path) {
		if (fault_plan_parse_file(ce->faults_path, &ce->plan, err, errlen))
			return -1;
		if (fault_plan_format(ce->plan, &ce->faults_text)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		ce->o.faults = ce->plan;
	}
	if (ce->o.target == EXPLORE_REF && !ce->no_memo &&
	    !(ce->o.memo = explore_memo_new(EXPLORE_MEMO_BUDGET))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

void cli_explore_free(struct cli_explore *ce)
{
	free(ce->faults_text);
	fault_plan_free(ce->plan);
	ce->faults_text = NULL;
	ce->plan = NULL;
	ce->o.faults = NULL;
	explore_memo_free(ce->o.memo);
	ce->o.memo = NULL;
}

void cli_explore_print_memo(size_t cached)
{
	if (cached)
		printf("%zu states had the disks of an earlier state: judged on what ref found there "
		       "(--no-memo: each afresh)\n", cached);
}
