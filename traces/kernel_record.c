/*
 * kernel_record.c - the kernel target's recording: mkfs.btrfs on FUSE-served
 * sim disks, the kernel's mount of loop devices over them, the workload as
 * system calls (run_host.c) from a child process, and the unmount; every
 * request the kernel made is in the sim volume's IO log, and each operation's
 * place in it is known.
 *
 * What an fsync promised is read off the superblocks it wrote: a commit
 * writes one with a newer generation; a sync of the fsync log tree writes one
 * of the same generation naming a log root; an fsync that found nothing new
 * writes none.  (The same three outcomes ref's log statistics give.)
 *
 * The operations run in a child process, one at a time on request, so that
 * one the kernel never finishes is a hang the parent records (the FUSE
 * server, a thread of the parent, goes on serving meanwhile).
 */
#include "traces/kernel_internal.h"
#include "traces/run.h"
#include "faults/plan.h"
#include "ref/format.h"
#include "ref/ref.h"

#include <errno.h>
#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/btrfs_tree.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SUPER_OFFSET 65536

/* ---- What the superblocks say ---- */

struct supers {
	uint64_t gen;  /* of the newest committed superblock written so far */
	bool commit;   /* one with a newer generation was written */
	bool log;      /* one of the same generation naming a log root */
};

/* The primary superblock writes among log[from, to) (any disk). */
static void scan_supers(const struct sim_io *log, size_t from, size_t to, uint32_t sector,
			struct supers *s)
{
	s->commit = s->log = false;
	for (size_t i = from; i < to; i++) {
		const struct sim_io *io = &log[i];
		if ((io->kind != SIM_IO_WRITE && io->kind != SIM_IO_WRITE_FUA) || io->status ||
		    !io->payload)
			continue;
		uint64_t a = io->sector * sector, e = a + (uint64_t)io->nsectors * sector;
		if (a > SUPER_OFFSET || e < SUPER_OFFSET + sizeof(struct btrfs_super_disk))
			continue;
		struct btrfs_super_disk sb;
		memcpy(&sb, io->payload + (SUPER_OFFSET - a), sizeof(sb));
		if (le64toh(sb.magic) != BTRFS_MAGIC_VALUE)
			continue;
		uint64_t gen = le64toh(sb.generation);
		if (gen > s->gen) {
			s->gen = gen;
			s->commit = true;
		} else if (gen == s->gen && sb.log_root) {
			s->log = true;
		}
	}
}

/* ---- The child that runs the operations ---- */

struct answer {
	int32_t result; /* 0 or a positive errno */
	char msg[252];
};

static int read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	size_t got = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < len) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long el = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		struct pollfd pf = { fd, POLLIN, 0 };
		int n = el < timeout_ms ? poll(&pf, 1, (int)(timeout_ms - el)) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -ETIMEDOUT;
		ssize_t k = read(fd, (char *)buf + got, len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		got += (size_t)k;
	}
	return 0;
}

/* The child: op numbers in, answers out, until the pipe closes. */
static void runner(const struct wl_workload *w, const char *mnt, int in, int out)
{
	struct wl_host h;
	char err[256];
	struct answer a;
	int r = wl_host_open(mnt, &h, err, sizeof(err));
	uint32_t j;
	while (read(in, &j, sizeof(j)) == (ssize_t)sizeof(j)) {
		memset(&a, 0, sizeof(a));
		if (r) {
			a.result = -r;
			snprintf(a.msg, sizeof(a.msg), "%.250s", err);
		} else if (j < w->n && w->ops[j].kind != WL_MARK && w->ops[j].kind != WL_CRASH) {
			a.result = -wl_exec_host(&h, &w->ops[j], a.msg, sizeof(a.msg));
		}
		if (write(out, &a, sizeof(a)) != (ssize_t)sizeof(a))
			break;
	}
	if (!r)
		wl_host_close(&h);
	_exit(0);
}

struct child {
	pid_t pid;
	int to, from;
};

static int start_runner(const struct wl_workload *w, const char *mnt, struct child *c)
{
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC))
		return -errno;
	if (pipe2(b, O_CLOEXEC)) {
		int e = errno;
		close(a[0]);
		close(a[1]);
		return -e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(a[0]);
		close(a[1]);
		close(b[0]);
		close(b[1]);
		return -e;
	}
	if (pid == 0) {
		kernel_in_child();
		close(a[1]);
		close(b[0]);
		runner(w, mnt, a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	*c = (struct child){ pid, a[1], b[0] };
	return 0;
}

static void stop_runner(struct child *c, bool hung)
{
	close(c->to);
	close(c->from);
	if (hung)
		kill(c->pid, SIGKILL); /* if it is stuck in the kernel it stays */
	else
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
}

/* ---- The run ---- */

static size_t log_len(struct kdisks *k, sim_volume *vol)
{
	size_t n;
	kdisks_lock(k);
	sim_volume_log(vol, &n);
	kdisks_unlock(k);
	return n;
}

/* mkfs.btrfs on the served files; then a flush of each disk, as mkfs leaves
 * them.  The uuid is the seed's mixed with this process and the time: the
 * kernel's device registry takes two file systems with one fsid for one
 * (mkfs.btrfs refuses a uuid it knows: "non-unique UUID"), and another run
 * of the same seed may be mounted at this moment.  (Kernel runs are not
 * bit-for-bit repeatable anyway: the kernel writes its own clock.) */
static int run_mkfs(const struct ex *x, struct kdisks *k, char *err, size_t errlen)
{
	const struct explore_opts *o = x->o;
	char uuid[40], nodesize[16], dp[16], mp[16];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t s = o->seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
	s ^= ((uint64_t)getpid() << 32) ^ (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 20);
	s *= UINT64_C(0xbf58476d1ce4e5b9);
	s ^= s >> 31;
	snprintf(uuid, sizeof(uuid), "%08" PRIx32 "-%04x-4%03x-8%03x-%012" PRIx64,
		 (uint32_t)(s >> 32), (unsigned)(s >> 16) & 0xffff, (unsigned)s & 0xfff,
		 (unsigned)(s >> 40) & 0xfff, (s * 31) & UINT64_C(0xffffffffffff));
	snprintf(nodesize, sizeof(nodesize), "%u", o->nodesize);
	ref_profile_lower(o->data_profile, dp);
	ref_profile_lower(o->meta_profile, mp);
	char *argv[16 + SIM_MAX_DISKS] = { "mkfs.btrfs", "-q", "-f", "-K", "-U", uuid, "-n",
					   nodesize, "-d", dp, "-m", mp };
	size_t n = 12;
	for (unsigned d = 0; d < o->ndisks; d++)
		argv[n++] = (char *)kdisks_path(k, d);
	argv[n] = NULL;
	char out[1024];
	int r = krun(argv, o->timeout_ms, out, sizeof(out));
	if (r) {
		snprintf(err, errlen, "mkfs.btrfs on the FUSE disks %s: %s",
			 r == -ETIMEDOUT ? "hung" : r < 0 ? strerror(-r) : "failed",
			 out[0] ? out : "(no output)");
		return r < 0 ? r : -EIO;
	}
	return 0;
}

int kernel_record(struct ex *x, sim_volume **volp, sim_volume **basep, size_t *mkfs_ios,
		  char *err, size_t errlen)
{
	const struct explore_opts *o = x->o;
	int r = kernel_can_run(true, err, errlen);
	if (r)
		return -EOPNOTSUPP;
	if ((r = kernel_isolate(err, errlen)))
		return r;
	kernel_guard_signals();
	struct sim_volume_config cfg;
	sim_config_init(&cfg, o->ndisks, o->disk_size, o->seed);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	cfg.record_payloads = true;
	for (unsigned d = 0; d < o->ndisks; d++)
		cfg.disk[d].sector_size = explore_sector_size(o);
	sim_volume *vol = NULL;
	if (sim_volume_open(&cfg, &vol, err, errlen))
		return -EINVAL;
	char disks[256] = "", mnt[256] = "";
	if ((r = ktmpdir(NULL, "disks", disks, sizeof(disks))) ||
	    (r = ktmpdir(NULL, "mnt", mnt, sizeof(mnt)))) {
		snprintf(err, errlen, "a temporary directory: %s", strerror(-r));
		sim_volume_close(vol);
		krmdir(disks);
		return r;
	}
	struct kdisks *k = NULL;
	char devs[SIM_MAX_DISKS][32];
	int holds[SIM_MAX_DISKS];
	unsigned nloops = 0;
	bool mounted = false, hung = false;
	struct model *m = NULL;
	/* mkfs and the mount on honest disks: a disk that misbehaves does so
	 * under the workload */
	enum kdisk_mode mode = (enum kdisk_mode)o->disk_mode;
	if ((r = kdisks_start(vol, disks, mode == KDISK_TEAR ? KDISK_TEAR : KDISK_HONEST, &k, err,
			      errlen)))
		goto out;
	if ((r = run_mkfs(x, k, err, errlen)))
		goto out;
	kdisks_lock(k);
	const struct sim_io *log = sim_volume_log(vol, mkfs_ios);
	struct supers sup = { 0 };
	scan_supers(log, 0, *mkfs_ios, sim_disk_sector_size(vol, 0), &sup);
	r = sim_volume_clone(vol, basep) ? -ENOMEM : 0;
	kdisks_unlock(k);
	if (r) {
		snprintf(err, errlen, "cloning the volume: out of memory");
		goto out;
	}
	for (; nloops < o->ndisks; nloops++)
		if ((r = kloop_attach(kdisks_path(k, nloops), 4096, devs[nloops], sizeof(devs[0]),
				      &holds[nloops], err, errlen)))
			goto out;
	const char *dv[SIM_MAX_DISKS];
	for (unsigned d = 0; d < nloops; d++)
		dv[d] = devs[d];
	const struct kern *kn = x->kern;
	if ((r = kmount(dv, nloops, mnt, kn->opts, o->timeout_ms, err, errlen))) {
		hung = r == -ETIMEDOUT;
		goto out;
	}
	mounted = true;
	/* (attaching a loop device fsyncs its file: a stalling disk stalls
	 * from here, under the workload) */
	kdisks_set_mode(k, mode);
	/* A fault plan armed as for ref, after the mount: its sim lines act on
	 * the disks the kernel writes (under the FUSE server's lock), its
	 * points in sim fire in the server's requests; ref's points are never
	 * reached. */
	if (o->faults) {
		x->sim_faults = fault_plan_nsims(o->faults) > 0;
		kdisks_lock(k);
		r = fault_plan_arm(o->faults, o->seed, vol, err, errlen);
		kdisks_unlock(k);
		if (r) {
			r = -EINVAL;
			goto out;
		}
	}
	if ((r = explore_rec_begin(x, &m, err, errlen)))
		goto out;
	struct child c = { -1, -1, -1 };
	if ((r = start_runner(x->w, mnt, &c))) {
		snprintf(err, errlen, "starting the process that runs the workload: %s",
			 strerror(-r));
		goto out;
	}
	uint32_t sector = sim_disk_sector_size(vol, 0);
	for (size_t j = 0; j < x->w->n && !r; j++) {
		size_t before = log_len(k, vol);
		uint32_t jj = (uint32_t)j;
		struct answer a;
		if (write(c.to, &jj, sizeof(jj)) != (ssize_t)sizeof(jj)) {
			r = -EPIPE;
			snprintf(err, errlen, "the process running the workload died");
			break;
		}
		if ((r = read_full(c.from, &a, sizeof(a), (int)o->timeout_ms))) {
			hung = r == -ETIMEDOUT;
			snprintf(err, errlen, "%s:%zu: %s", x->w->name ? x->w->name : "workload",
				 x->w->ops[j].line,
				 hung ? "the operation did not return in time (a hang in the kernel)"
				      : "the process running the workload died");
			break;
		}
		size_t after = log_len(k, vol);
		size_t nlog;
		kdisks_lock(k);
		scan_supers(sim_volume_log(vol, &nlog), before, after, sector, &sup);
		kdisks_unlock(k);
		/* Every persisting op: a commit, a log sync, or nothing new. */
		bool logsync = !sup.commit && sup.log, skipped = !sup.commit && !sup.log;
		r = explore_rec_op(x, m, j, a.result, 0, before, after, logsync, skipped, err, errlen);
	}
	stop_runner(&c, hung);
	if (!hung) {
		size_t before = log_len(k, vol);
		char uerr[512];
		int u = kumount(mnt, o->timeout_ms, uerr, sizeof(uerr));
		mounted = false;
		size_t after = log_len(k, vol);
		int e = explore_rec_end(x, m, before, after, u == 0, err, errlen);
		m = NULL;
		/* with faults armed a failed unmount is an outcome to judge */
		if (!r && u && (u == -ETIMEDOUT || !o->faults)) {
			hung = u == -ETIMEDOUT;
			snprintf(err, errlen, "unmounting the kernel's file system: %s", uerr);
			r = u;
		}
		if (!r)
			r = e;
	}
out:
	model_free(m);
	if (hung && k)
		kdisks_abort(k);
	if (mounted) {
		char uerr[256];
		kumount(mnt, o->timeout_ms, uerr, sizeof(uerr));
	}
	for (unsigned d = 0; d < nloops; d++)
		kloop_detach(devs[d], holds[d]);
	if (k) {
		if (!r && kdisks_errors(k) && !o->faults) {
			snprintf(err, errlen, "%" PRIu64 " requests to the FUSE disks failed",
				 kdisks_errors(k));
			r = -EIO;
		}
		kdisks_stop(k);
	}
	krmdir(mnt);
	krmdir(disks);
	if (r) {
		if (*basep)
			sim_volume_close(*basep);
		*basep = NULL;
		sim_volume_close(vol);
		return r;
	}
	*volp = vol;
	return 0;
}
