/*
 * check_qgroup.c - the checker's quota-group pass: the numbers the quota
 * tree holds against a recount from scratch, as btrfs check's qgroup
 * verification does, at every level (a group above level 0 counted from the
 * subvolumes below it).  Numbers a kernel marked inconsistent (stale until a
 * rescan) or left mid-rescan are not compared, as btrfs check does.
 */
#include "ref/check/check.h"
#include "ref/qgroup/qgroup.h"

#include <errno.h>
#include <stdlib.h>

static const struct ref_qgroup *find(const struct ref_qgroup *q, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (q[i].id == id)
			return &q[i];
	return NULL;
}

int check_qgroups(struct check *ck)
{
	bool on;
	uint64_t flags;
	struct ref_qgroup *have = NULL, *want = NULL;
	size_t nhave = 0, nwant = 0;
	int r = ref_qgroup_status(ck->fs, &on, &flags);
	if (r) {
		check_error(ck, "quota tree: %s", ref_error(ck->fs));
		return r == -ENOMEM ? r : 0;
	}
	if (!on) {
		fprintf(ck->out, "[7/7] checking quota groups skipped (not enabled on this FS)\n");
		return 0;
	}
	fprintf(ck->out, "[7/7] checking quota groups\n");
	if ((r = ref_qgroup_list(ck->fs, &have, &nhave))) {
		check_error(ck, "quota tree: %s", ref_error(ck->fs));
		return r == -ENOMEM ? r : 0;
	}
	r = ref_qgroup_recount(ck->fs, &want, &nwant);
	if (r) {
		free(have);
		check_error(ck, "quota groups: recount failed: %s", ref_error(ck->fs));
		return r == -ENOMEM ? r : 0;
	}
	bool stale = flags & (BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT | BTRFS_QGROUP_STATUS_FLAG_RESCAN);
	if (stale)
		fprintf(ck->out, "quota groups are marked inconsistent or mid-rescan: numbers not checked\n");
	for (size_t i = 0; i < nhave && !stale; i++) {
		const struct ref_qgroup *w = find(want, nwant, have[i].id);
		uint64_t rfer = w ? w->rfer : 0, excl = w ? w->excl : 0;
		if (have[i].rfer != rfer || have[i].excl != excl)
			check_error(ck, "qgroup %u/%llu: referenced %llu exclusive %llu, counted %llu and %llu",
				    btrfs_qgroup_level(have[i].id),
				    (unsigned long long)(have[i].id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)),
				    (unsigned long long)have[i].rfer,
				    (unsigned long long)have[i].excl, (unsigned long long)rfer,
				    (unsigned long long)excl);
	}
	free(have);
	free(want);
	return 0;
}
