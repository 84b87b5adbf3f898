/*
 * kernel_view.c - what the kernel, btrfs check, btrsim check and ref make of
 * one crash state's images (kernel_internal.h, kview): the part of judging a
 * kernel state that does not depend on the crash point, so that it can run
 * in a worker process (kernel_workers.c) while the explorer builds the next
 * state.
 *
 * In order: ref reads the images as they are (its log replay in memory:
 * ref's view of the crash state) and checks them (where btrsim check finds
 * errors, btrfs check too: a state it finds clean is a false alarm of
 * btrsim's, `disagree`); loop devices over them; the kernel mounts
 * them (its log replay, onto the images), the tree is read through the
 * system calls, the kernel unmounts; btrfs check --readonly and btrsim check
 * of what the kernel left, side by side.
 */
#include "traces/kernel_internal.h"
#include "traces/manifest.h"
#include "ref/format.h"
#include "ref/ref.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the primary superblock of image path has btrfs's magic: a device
 * a removal finished has it wiped (btrfs_scratch_superblocks), and the
 * kernel, which reads the primary alone, takes it for no btrfs device. */
static bool has_primary_super(const char *path)
{
	uint8_t magic[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = pread(fd, magic, sizeof(magic),
			  BTRFS_SUPER_OFFSET + offsetof(struct btrfs_super_disk, magic));
	close(fd);
	return n == (ssize_t)sizeof(magic) && le64(magic) == BTRFS_MAGIC_VALUE;
}

/* The images of in as a read-only sim volume (nothing is written to them). */
static int open_images(const struct kview_in *in, sim_volume **v, char *why, size_t whylen)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, in->ndisks, 0, 1);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	char paths[SIM_MAX_DISKS][300];
	for (unsigned d = 0; d < in->ndisks; d++) {
		snprintf(paths[d], sizeof(paths[d]), "%s/disk%u", in->imgdir, d);
		cfg.disk[d].image_path = paths[d];
		cfg.disk[d].sector_size = in->sector;
		cfg.disk[d].overlay = true; /* ref's log replay stays in memory */
	}
	return sim_volume_open(&cfg, v, why, whylen) ? -EIO : 0;
}

/* What ref shows of the crash state (its log replayed in memory): the
 * description, or NULL with why. */
static char *ref_view(const struct kview_in *in, char *why, size_t whylen)
{
	sim_volume *v;
	if (open_images(in, &v, why, whylen))
		return NULL;
	/* (a disk a removal finished with is no device: a spare) */
	struct ref_open_opts oo = { .super_mirror = 0, .spares = true };
	ref_fs *fs;
	char *text = NULL;
	if (ref_open(v, &oo, &fs, why, whylen) == 0) {
		text = explore_describe_ref(fs, why, whylen);
		ref_close(fs);
	}
	sim_volume_close(v);
	return text;
}

/* btrsim check of the images (`what`: as the crash left them, or as the
 * kernel did): 0 clean, 1 errors (their first lines in why), -errno when it
 * could not run. */
static int ref_check_images(const struct kview_in *in, const char *what, char *why, size_t whylen)
{
	sim_volume *v;
	if (open_images(in, &v, why, whylen))
		return -EIO;
	struct ref_open_opts oo = { .super_mirror = 0, .nologreplay = true, .spares = true };
	ref_fs *fs;
	char err[512];
	int r;
	if (ref_open(v, &oo, &fs, err, sizeof(err))) {
		snprintf(why, whylen, "btrsim does not open %s: %s", what, err);
		r = 1;
	} else {
		char *report;
		long errors = explore_ref_check(fs, &report);
		r = errors < 0 ? (int)errors : errors > 0;
		if (r)
			snprintf(why, whylen, "btrsim check of %s: %.600s", what,
				 report ? report : "out of memory");
		free(report);
		ref_close(fs);
	}
	sim_volume_close(v);
	return r;
}

/* btrfs check --readonly of the first device (the others attached, found by
 * its scan): 0 clean, 1 errors (its output in why), -ETIMEDOUT, -errno. */
static int progs_check_wait(const struct kview_in *in, struct kjob *j, char *why, size_t whylen)
{
	char out[2048];
	int r = krun_wait(j, in->timeout_ms, out, sizeof(out));
	if (r == 0)
		return 0;
	if (r == -ETIMEDOUT)
		snprintf(why, whylen, "btrfs check did not finish in time (a hang)");
	else
		snprintf(why, whylen, "btrfs check of what the kernel left: %.1500s", out);
	return r == -ETIMEDOUT ? r : 1;
}

/* The kernel's mount of the devices: the tree and subvolume lines it shows
 * (NULL with why), then unmounted; *fail says how it failed. */
static char *kernel_tree(const struct kview_in *in, char (*devs)[32], unsigned ndevs, char **subv,
			 enum explore_verdict *fail, unsigned *hangs, char *why, size_t whylen)
{
	const char *dv[SIM_MAX_DISKS];
	for (unsigned d = 0; d < ndevs; d++)
		dv[d] = devs[d];
	char err[1024];
	int r = in->direct ? kmount_here(dv, ndevs, in->mnt, in->opts, err, sizeof(err))
			   : kmount(dv, ndevs, in->mnt, in->opts, in->timeout_ms, err, sizeof(err));
	if (r) {
		*hangs += r == -ETIMEDOUT;
		snprintf(why, whylen, "the kernel does not mount it: %s", err);
		*fail = EXPLORE_MOUNT;
		return NULL;
	}
	struct manifest m = { 0 };
	char *text = NULL;
	size_t len = 0;
	*subv = NULL;
	if (mf_walk_host(&m, in->mnt, in->want_subvols ? subv : NULL, err, sizeof(err))) {
		snprintf(why, whylen, "reading the kernel's tree: %s", err);
		*fail = EXPLORE_READ;
	} else {
		FILE *f = open_memstream(&text, &len);
		if (!f || mf_print(&m, f)) {
			snprintf(why, whylen, "out of memory");
			*fail = EXPLORE_READ;
		}
		if (f)
			fclose(f);
	}
	mf_free(&m);
	r = in->direct ? kumount_here(in->mnt, err, sizeof(err))
		       : kumount(in->mnt, in->timeout_ms, err, sizeof(err));
	if (r && *fail == EXPLORE_OK) {
		*hangs += r == -ETIMEDOUT;
		snprintf(why, whylen, "the kernel's unmount failed: %s", err);
		*fail = EXPLORE_MOUNT;
	}
	if (*fail != EXPLORE_OK) {
		free(text);
		free(*subv);
		text = NULL;
		*subv = NULL;
	}
	return text;
}

void kview(const struct kview_in *in, struct kseen *view)
{
	char why[4096] = "", awhy[4096] = "", rwhy[4096] = "", myerr[1024] = "";
	enum explore_verdict fail = EXPLORE_OK;
	/* ref first: the kernel's mount changes the images */
	char *mine = ref_view(in, myerr, sizeof(myerr));
	/* and btrsim check of the crash state as it is: a state the kernel made
	 * that btrfs check finds clean must be clean for it too (the check
	 * oracle's false alarms; btrfs check runs only when btrsim's finds
	 * errors, below, on the loop devices before the kernel mounts) */
	char rawwhy[1024] = "";
	int raw = ref_check_images(in, "the crash state", rawwhy, sizeof(rawwhy));
	int lock = open(in->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	while (lock >= 0 && flock(lock, LOCK_EX) && errno == EINTR)
		;
	char devs[SIM_MAX_DISKS][32];
	int holds[SIM_MAX_DISKS];
	unsigned nloops = 0;
	for (unsigned d = 0; d < in->ndisks; d++) {
		char path[300], err[512];
		snprintf(path, sizeof(path), "%s/disk%u", in->imgdir, d);
		if (!has_primary_super(path))
			continue; /* a device removed: the kernel is not given it */
		if (kloop_attach(path, 4096, devs[nloops], sizeof(devs[0]), &holds[nloops], err,
				 sizeof(err))) {
			snprintf(why, sizeof(why), "a loop device for the state: %s", err);
			fail = EXPLORE_READ;
			break;
		}
		nloops++;
	}
	if (fail == EXPLORE_OK && !nloops) {
		snprintf(why, sizeof(why), "no disk holds a btrfs superblock");
		fail = EXPLORE_MOUNT;
	}
	bool raw_false_alarm = false;
	if (fail == EXPLORE_OK && raw == 1) {
		struct kjob rj;
		char *argv[] = { "btrfs", "check", "--readonly", devs[0], NULL };
		char pwhy[256];
		int pc = krun_start(argv, &rj);
		raw_false_alarm = !pc && !progs_check_wait(in, &rj, pwhy, sizeof(pwhy));
	}
	if (fail == EXPLORE_OK)
		view->text = kernel_tree(in, devs, nloops, &view->subv, &fail, &view->hangs, why,
					 sizeof(why));
	view->after = EXPLORE_OK;
	int c = 0;
	if (view->text) {
		/* btrfs check of what the kernel left */
		struct kjob cj;
		char *argv[] = { "btrfs", "check", "--readonly", devs[0], NULL };
		c = krun_start(argv, &cj);
		if (c)
			snprintf(awhy, sizeof(awhy), "btrfs check did not start: %s", strerror(-c));
		else
			c = progs_check_wait(in, &cj, awhy, sizeof(awhy));
		view->hangs += c == -ETIMEDOUT;
	}
	for (unsigned d = 0; d < nloops; d++)
		kloop_detach(devs[d], holds[d]);
	if (lock >= 0)
		close(lock); /* the kernel's part is done */
	if (view->text) {
		/* btrsim check of what the kernel left, and ref against it */
		bool same = mine && !strcmp(mine, view->text);
		int rc = same && !c ? ref_check_images(in, "what the kernel left", rwhy, sizeof(rwhy)) : 0;
		if (c) {
			view->after = EXPLORE_CHECK;
		} else if (!same) {
			/* ref against the kernel: the same crash state */
			char d[1200];
			if (mine)
				explore_first_diff(view->text, mine, d, sizeof(d));
			snprintf(awhy, sizeof(awhy), "the kernel shows a legal state; ref %s: %s",
				 mine ? "shows another tree" : "does not read it", mine ? d : myerr);
			view->after = EXPLORE_DISAGREE;
		} else if (rc) {
			/* and against btrfs check, on what the kernel left */
			snprintf(awhy, sizeof(awhy), "%s", rwhy);
			view->after = EXPLORE_DISAGREE;
		}
	}
	if (raw_false_alarm && fail == EXPLORE_OK && view->after == EXPLORE_OK) {
		snprintf(awhy, sizeof(awhy), "btrfs check finds the crash state clean; %s", rawwhy);
		view->after = EXPLORE_DISAGREE;
	}
	free(mine);
	view->fail = fail;
	view->why = strdup(why);
	view->after_why = strdup(awhy);
}
