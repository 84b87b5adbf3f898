/*
 * fmount_app.c - an application recorded (`btrsim record`): a fresh file
 * system made as `btrsim explore` makes its own (one memory disk, the same
 * size, node size and mkfs), mounted through FUSE with every change
 * recorded as a workload op; an optional setup tree copied in first (cp -a,
 * through the same mount: its ops are part of the workload, then `sync`);
 * the program run there; and the workload replayed at once on another
 * fresh file system, where every op must give the result it gave while
 * recording (ref is deterministic, so anything else is a recording bug).
 */
#include "traces/fmount_int.h"
#include "traces/explore.h"
#include "traces/run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* A new file system made as explore makes its own, mounted. */
static int fresh(const struct app_record_opts *o, sim_volume **vol, ref_fs **fs, bool realtime,
		 char *err, size_t errlen)
{
	struct explore_opts eo;
	explore_defaults(&eo);
	eo.disk_size = o->disk_size;
	eo.nodesize = o->nodesize;
	eo.seed = o->seed;
	size_t mkfs_ios;
	int r = explore_make_volume(&eo, vol, &mkfs_ios, err, errlen);
	if (r)
		return r;
	sim_volume_set_recording(*vol, false); /* (no IO log kept here) */
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .realtime = realtime };
	r = ref_mount(*vol, &mo, fs, err, errlen);
	if (r) {
		sim_volume_close(*vol);
		*vol = NULL;
	}
	return r;
}

int app_record(const struct app_record_opts *o, struct wl_workload *w,
	       struct app_record_result *res, char *err, size_t errlen)
{
	*res = (struct app_record_result){ 0 };
	sim_volume *vol;
	ref_fs *fs;
	int r = fresh(o, &vol, &fs, true, err, errlen);
	if (r)
		return r;
	struct fmount_opts fo = { .record = w };
	struct fmount_exit ex;
	if (o->setup_dir) {
		char src[4200];
		snprintf(src, sizeof(src), "%s/.", o->setup_dir);
		char *argv[] = { "cp", "-a", "--", src, ".", NULL };
		struct fmount_prog cp = { .argv = argv, .out_fd = -1 };
		r = fmount_run(fs, &fo, o->mountpoint, &cp, &ex, err, errlen);
		if (!r && (!WIFEXITED(ex.status) || WEXITSTATUS(ex.status))) {
			snprintf(err, errlen, "the setup (cp -a %s/. into the mount) failed", o->setup_dir);
			r = -EIO;
		}
		struct wl_op sync = { .kind = WL_SYNC, .line = w->n + 1 },
			     mark = { .kind = WL_MARK, .name = "setup", .line = w->n + 2 };
		if (!r && (ref_sync(fs) || wl_append(w, &sync) || wl_append(w, &mark))) {
			snprintf(err, errlen, "the commit after the setup: %s", ref_error(fs));
			r = -EIO;
		}
		res->setup_ops = w->n;
		res->gaps = ex.gaps;
		memcpy(res->gap, ex.gap, sizeof(res->gap));
	}
	struct fmount_prog prog = { .argv = o->argv, .out_fd = -1, .timeout_ms = o->timeout_ms };
	if (!r)
		r = fmount_run(fs, &fo, o->mountpoint, &prog, &ex, err, errlen);
	if (!r) {
		res->status = ex.status;
		res->timed_out = ex.timed_out;
		res->failures = ex.failures;
		if (ex.gaps && (!res->gaps || ex.gaps < 0)) {
			res->gaps = ex.gaps;
			memcpy(res->gap, ex.gap, sizeof(res->gap));
		}
	}
	int ur = ref_umount(fs);
	sim_volume_close(vol);
	if (r)
		return r;
	if (ur) {
		snprintf(err, errlen, "the commit at the end: %s", strerror(-ur));
		return ur;
	}
	/* The workload must give every recorded result again on ref. */
	if ((r = fresh(o, &vol, &fs, false, err, errlen)))
		return r;
	struct wl_run_opts ro = { .keep_going = true };
	struct wl_run_result rr;
	char rerr[512] = "";
	r = wl_run(w, wl_exec_ref, fs, &ro, &rr, rerr, sizeof(rerr));
	res->mismatches = rr.mismatches;
	if (rr.mismatches)
		snprintf(res->mismatch, sizeof(res->mismatch), "%s", rerr);
	if (r < 0)
		snprintf(err, errlen, "replaying the recording: %s", rerr);
	ref_umount(fs);
	sim_volume_close(vol);
	return r < 0 ? r : 0;
}
