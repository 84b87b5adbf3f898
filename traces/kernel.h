/*
 * kernel.h - the running kernel's btrfs as a target of the crash harness.
 *
 * The kernel writes through loop devices whose backing files live on a FUSE
 * file system that btrsim serves (kernel_disks.c): each file is a disk of a
 * sim volume, so every write the kernel makes lands in that disk's volatile
 * cache and the IO log, and every flush (the loop driver's fsync of its
 * backing file) is a sim flush.  The explorer then builds crash states from
 * that log exactly as it does for ref, and judges each one by mounting it
 * with the kernel (kernel_judge.c).
 *
 * Everything that can be left behind (loop devices, mounts, the FUSE mount,
 * temporary directories) is registered (kernel_loop.c) and released on every
 * path: normal return, failure, and SIGINT, SIGTERM, SIGHUP.
 */
#ifndef BTRSIM_TRACES_KERNEL_H
#define BTRSIM_TRACES_KERNEL_H

#include "sim/sim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* ---- FUSE-served sim disks (kernel_disks.c) ---- */

/* How the served disks misbehave, to prove the harness catches what it
 * exists to catch (an honest disk is KDISK_HONEST). */
enum kdisk_mode {
	KDISK_HONEST,
	/* acknowledges every flush without making anything durable */
	KDISK_NOFLUSH,
	/* drops the flush that makes a lone write durable at once (the
	 * block layer's post-flush of a FUA write, as the loop driver passes
	 * FUA on: one write since the last flush, then a flush) */
	KDISK_NOFUA,
	/* the sim disk's sector is 512 bytes under a loop device of 4096-byte
	 * blocks: the kernel's 4 KiB writes can tear inside a block */
	KDISK_TEAR,
	/* the first flush never completes (nor anything after it) until the
	 * connection is aborted: the kernel hangs on its disk, as on a device
	 * that stopped answering (what a hang costs: recorded, released) */
	KDISK_STALL,
	KDISK_NMODES
};
/* "honest", "no-flush", "no-fua", "tear", "stall"; NULL when out of range. */
const char *kdisk_mode_name(enum kdisk_mode m);
/* -1 when the name is none of those. */
int kdisk_mode_parse(const char *name);

struct kdisks;

/*
 * Serves each disk of vol as the file MOUNTPOINT/diskN (N from 0), from a
 * thread of this process, until kdisks_stop.  The volume is this thread's
 * alone meanwhile: read it only between kdisks_lock and kdisks_unlock, and
 * never make a system call that may wait for the kernel's IO to those files
 * while holding the lock.  0, or a negative errno with the reason in err.
 */
int kdisks_start(sim_volume *vol, const char *mountpoint, enum kdisk_mode mode,
		 struct kdisks **out, char *err, size_t errlen);
/* "MOUNTPOINT/diskN". */
const char *kdisks_path(const struct kdisks *k, unsigned disk);
void kdisks_lock(struct kdisks *k);
void kdisks_unlock(struct kdisks *k);
/* Aborts the FUSE connection: every request to the disks fails from now
 * on, so that what waits on them in the kernel (a hang) lets go. */
void kdisks_abort(struct kdisks *k);
/* Changes how the disks behave from the next request on. */
void kdisks_set_mode(struct kdisks *k, enum kdisk_mode mode);
/* Requests the FUSE server failed (a sim error): each is an EIO the kernel
 * saw, which an honest run must not have. */
uint64_t kdisks_errors(const struct kdisks *k);
/* Unmounts the FUSE file system and joins the thread; the volume is the
 * caller's again.  Every loop device over the files must be gone first. */
void kdisks_stop(struct kdisks *k);

/* ---- A violation as a shell script (kernel_script.c) ---- */

struct wl_workload;
struct explore_opts;
struct explore_result;
/* The workload w as a stand-alone shell script a kernel developer runs
 * (mkfs, mount, each operation as xfs_io or a shell command with the result
 * the kernel gave), the crash point of res's violation described where it
 * falls.  A malloc'd text, or NULL when out of memory. */
char *kernel_script(const struct wl_workload *w, const struct explore_opts *o,
		    const struct explore_result *res);

/* ---- Loop devices and mounts (kernel_loop.c) ---- */

/* Whether this process can do what the kernel target needs: root, loop
 * devices, btrfs in the kernel, and (with fuse) /dev/fuse.  0, or -errno
 * with the reason in why (what a test prints after SKIP). */
int kernel_can_run(bool fuse, char *why, size_t whylen);

/* Attaches a loop device over path, of block_size bytes (512 or 4096): dev
 * is "/dev/loopN", *hold an open descriptor of it.  Autoclear: the kernel
 * frees the device when its last user lets go, *hold and any mount on it,
 * so a process that dies leaves none behind but those still mounted.  The
 * device is registered for release.  0 or -errno with the reason in err. */
int kloop_attach(const char *path, unsigned block_size, char *dev, size_t devlen, int *hold,
		 char *err, size_t errlen);
/* Detaches it now (hold, or -1 to open dev; it may be gone already). */
void kloop_detach(const char *dev, int hold);

/* A child process at work: a mount, an unmount, a program. */
struct kjob {
	pid_t pid;
	int fd;              /* what it says comes down this pipe */
	struct timespec t0;  /* when it started: timeouts count from here */
};

/* Mounts btrfs on the devices at dir with opts (NULL: none), in a child
 * process given timeout_ms: 0, -errno with the kernel's reason in err, or
 * -ETIMEDOUT (a hang: the child is left behind, and the caller told). */
int kmount(const char *const *devs, unsigned ndevs, const char *dir, const char *opts,
	   unsigned timeout_ms, char *err, size_t errlen);
/* The same in two steps, so that the caller works while the kernel mounts
 * (the timeout counts from the start). */
int kmount_start(const char *const *devs, unsigned ndevs, const char *dir, const char *opts,
		 struct kjob *j, char *err, size_t errlen);
int kmount_wait(struct kjob *j, const char *dir, unsigned timeout_ms, char *err, size_t errlen);
/* Unmounts dir (a lazy unmount after timeout_ms); 0 or -errno. */
int kumount(const char *dir, unsigned timeout_ms, char *err, size_t errlen);
/* The same in this process, no timeout (a worker's parent times it). */
int kmount_here(const char *const *devs, unsigned ndevs, const char *dir, const char *opts,
		char *err, size_t errlen);
int kumount_here(const char *dir, char *err, size_t errlen);

/* Runs a program (argv[0] looked up in PATH), its stdout and stderr
 * together in out (the first outlen - 1 bytes): its exit status (128 + the
 * signal that ended it), -ETIMEDOUT when it did not end within timeout_ms
 * (it is killed), or -errno when it could not start. */
int krun(char *const argv[], unsigned timeout_ms, char *out, size_t outlen);
/* The same in two steps (0 or -errno; then krun's result). */
int krun_start(char *const argv[], struct kjob *j);
int krun_wait(struct kjob *j, unsigned timeout_ms, char *out, size_t outlen);

/* A fresh directory under base (NULL: $TMPDIR, or /tmp) named
 * btrsim-WHAT.XXXXXX, registered: removed at release when empty.  0 or
 * -errno. */
int ktmpdir(const char *base, const char *what, char *out, size_t outlen);

/* Registers a file to remove at release; kunlink removes it now. */
void kreg_file(const char *path);
void kunlink(const char *path);
/* Removes a directory ktmpdir made (when empty) and forgets it. */
void krmdir(const char *dir);
/* Registers a mount point to unmount (lazily) at release. */
void kreg_mount(const char *dir);
void kunreg_mount(const char *dir);
/* The FUSE device descriptor (closed in every child this code forks: a
 * child waiting in the kernel for a FUSE disk must not keep the connection
 * alive once the server is gone) and the connection's abort file (written
 * at release, before anything else). */
void kreg_fuse(int fd, const char *abort_path);
void kunreg_fuse(const char *abort_path);
/* Worker processes to end (SIGTERM) at release; a worker forgets what its
 * parent registered (kreg_forget_all). */
void kreg_worker(pid_t pid);
void kunreg_worker(pid_t pid);
void kreg_forget_all(void);
/* What a child forked by the kernel target does first. */
void kernel_in_child(void);
/* Moves this process (still single-threaded) into a mount namespace of its
 * own, private: every mount it and its children make dies with the last of
 * them, whatever ends them (SIGKILL too), and no other process sees them;
 * the loop devices under them, autoclear, go then too.  0 or -errno. */
int kernel_isolate(char *err, size_t errlen);
/* Releases everything registered, and installs (once) handlers that do
 * it on SIGINT, SIGTERM and SIGHUP before the process dies of the signal. */
void kernel_release_all(void);
void kernel_guard_signals(void);

#endif
