/*
 * kernel_loop.c - loop devices, kernel mounts with timeouts, and the
 * registry that releases them on every path (kernel.h).
 *
 * Loop devices are configured with LOOP_CONFIGURE and autoclear, so that
 * the kernel frees one as soon as nothing holds it (its file system is
 * unmounted and our descriptor closed): a process that dies leaks no loop
 * device it is not still mounted on.  Mounts are made by a child process
 * the parent waits for with a timeout: a mount the kernel never finishes is
 * a hang to record, not a hang of btrsim.  Registered mounts are unmounted
 * lazily (MNT_DETACH) and registered directories removed at release, which
 * runs at the end of a run and from the signal handlers.
 */
#include "traces/kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- The registry ---- */

#define KREG_MAX 256
enum kreg_kind { KREG_FREE, KREG_ABORT, KREG_LOOP, KREG_MOUNT, KREG_FILE, KREG_DIR };
static struct kreg {
	volatile sig_atomic_t kind;
	char path[256];
} reg[KREG_MAX];

static void reg_add(enum kreg_kind kind, const char *path)
{
	for (int i = 0; i < KREG_MAX; i++)
		if (reg[i].kind == KREG_FREE) {
			snprintf(reg[i].path, sizeof(reg[i].path), "%s", path);
			reg[i].kind = kind;
			return;
		}
}

static void reg_del(enum kreg_kind kind, const char *path)
{
	for (int i = 0; i < KREG_MAX; i++)
		if (reg[i].kind == (sig_atomic_t)kind && !strcmp(reg[i].path, path)) {
			reg[i].kind = KREG_FREE;
			return;
		}
}

void kreg_mount(const char *dir)
{
	reg_add(KREG_MOUNT, dir);
}

void kunreg_mount(const char *dir)
{
	reg_del(KREG_MOUNT, dir);
}

void kreg_file(const char *path)
{
	reg_add(KREG_FILE, path);
}

void kunlink(const char *path)
{
	unlink(path);
	reg_del(KREG_FILE, path);
}

/* Worker processes (kernel_workers.c), ended first at release; and the
 * children mounting or unmounting right now, waited for before the
 * unmounts (a mount that lands after release would stay). */
#define KREG_WORKERS 16
static volatile pid_t workers[KREG_WORKERS];
static volatile pid_t mounters[KREG_WORKERS];

static void pid_add(volatile pid_t *v, pid_t pid)
{
	for (int i = 0; i < KREG_WORKERS; i++)
		if (!v[i]) {
			v[i] = pid;
			return;
		}
}

static void pid_del(volatile pid_t *v, pid_t pid)
{
	for (int i = 0; i < KREG_WORKERS; i++)
		if (v[i] == pid)
			v[i] = 0;
}

/* Waits (up to 3 s; async-signal-safe) for the processes of v to end. */
static void pids_wait(volatile pid_t *v)
{
	for (int tries = 0; tries < 300; tries++) {
		bool left = false;
		for (int i = 0; i < KREG_WORKERS; i++)
			if (v[i] > 0 && waitpid(v[i], NULL, WNOHANG) == 0)
				left = true;
			else
				v[i] = 0;
		if (!left)
			break;
		struct timespec ms10 = { 0, 10000000 };
		nanosleep(&ms10, NULL);
	}
}

void kreg_worker(pid_t pid)
{
	pid_add(workers, pid);
}

void kunreg_worker(pid_t pid)
{
	pid_del(workers, pid);
}

void kreg_forget_all(void)
{
	for (int i = 0; i < KREG_MAX; i++)
		reg[i].kind = KREG_FREE;
	for (int i = 0; i < KREG_WORKERS; i++)
		workers[i] = mounters[i] = 0;
}

/* The FUSE device's descriptor, which no child may keep (kernel.h). */
static int fuse_fd = -1;

void kreg_fuse(int fd, const char *abort_path)
{
	fuse_fd = fd;
	if (abort_path)
		reg_add(KREG_ABORT, abort_path);
}

void kunreg_fuse(const char *abort_path)
{
	fuse_fd = -1;
	if (abort_path)
		reg_del(KREG_ABORT, abort_path);
}

void kernel_in_child(void)
{
	if (fuse_fd >= 0)
		close(fuse_fd);
	fuse_fd = -1;
}

/* Only async-signal-safe calls: the signal handlers run it. */
static void release(void)
{
	/* The workers release their own loop devices and mounts: told to, and
	 * waited for (a few seconds at most: one stuck in the kernel stays),
	 * so that their directories are free to remove below. */
	for (int i = 0; i < KREG_WORKERS; i++)
		if (workers[i] > 0)
			kill(workers[i], SIGTERM);
	pids_wait(workers);
	pids_wait(mounters);
	/* A FUSE server that is going away first fails every request to its
	 * disks, so that nothing above them waits for it. */
	for (int i = KREG_MAX - 1; i >= 0; i--)
		if (reg[i].kind == KREG_ABORT) {
			int fd = open(reg[i].path, O_WRONLY | O_CLOEXEC);
			if (fd >= 0) {
				if (write(fd, "1\n", 2) < 0) {
					/* nothing more to do */
				}
				close(fd);
			}
			reg[i].kind = KREG_FREE;
		}
	/* mounts first (newest first: a mount over a loop over a FUSE file),
	 * then loop devices, then directories */
	for (int i = KREG_MAX - 1; i >= 0; i--)
		if (reg[i].kind == KREG_MOUNT) {
			umount2(reg[i].path, MNT_DETACH);
			reg[i].kind = KREG_FREE;
		}
	for (int i = KREG_MAX - 1; i >= 0; i--)
		if (reg[i].kind == KREG_LOOP) {
			int fd = open(reg[i].path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				ioctl(fd, LOOP_CLR_FD, 0);
				close(fd);
			}
			reg[i].kind = KREG_FREE;
		}
	for (int i = KREG_MAX - 1; i >= 0; i--)
		if (reg[i].kind == KREG_FILE) {
			unlink(reg[i].path);
			reg[i].kind = KREG_FREE;
		}
	for (int i = KREG_MAX - 1; i >= 0; i--)
		if (reg[i].kind == KREG_DIR) {
			/* a worker's mount point may still hold what it was
			 * mounting when it ended (this namespace is its too) */
			umount2(reg[i].path, MNT_DETACH);
			rmdir(reg[i].path);
			reg[i].kind = KREG_FREE;
		}
}

void kernel_release_all(void)
{
	release();
}

static void on_signal(int sig)
{
	release();
	signal(sig, SIG_DFL);
	raise(sig);
}

void kernel_guard_signals(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int kernel_isolate(char *err, size_t errlen)
{
	static bool done;
	if (done)
		return 0;
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		int e = errno;
		snprintf(err, errlen, "a mount namespace of its own (unshare): %s", strerror(e));
		return -e;
	}
	done = true;
	return 0;
}

int ktmpdir(const char *base, const char *what, char *out, size_t outlen)
{
	const char *t = base ? base : getenv("TMPDIR");
	if (snprintf(out, outlen, "%s/btrsim-%s.XXXXXX", t && *t ? t : "/tmp", what) >= (int)outlen)
		return -ENAMETOOLONG;
	if (!mkdtemp(out))
		return -errno;
	reg_add(KREG_DIR, out);
	return 0;
}

void krmdir(const char *dir)
{
	if (dir[0]) {
		/* a mount still there (a FUSE server that a hang aborted) goes
		 * lazily first */
		umount2(dir, MNT_DETACH);
		rmdir(dir);
		reg_del(KREG_DIR, dir);
	}
}

/* ---- Can this process do it? ---- */

static bool kernel_has_btrfs(void)
{
	FILE *f = fopen("/proc/filesystems", "r");
	char line[128];
	bool yes = false;
	while (f && !yes && fgets(line, sizeof(line), f))
		yes = strstr(line, "\tbtrfs\n") != NULL;
	if (f)
		fclose(f);
	return yes;
}

int kernel_can_run(bool fuse, char *why, size_t whylen)
{
	if (geteuid() != 0) {
		snprintf(why, whylen, "the kernel target needs root (loop devices, mount)");
		return -EPERM;
	}
	int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(why, whylen, "no loop devices: /dev/loop-control: %s", strerror(e));
		return -e;
	}
	close(fd);
	if (!kernel_has_btrfs()) {
		/* a mount would load the module; try that before giving up */
		char dir[256];
		if (!ktmpdir(NULL, "probe", dir, sizeof(dir))) {
			mount("none", dir, "btrfs", MS_RDONLY, NULL);
			rmdir(dir);
			reg_del(KREG_DIR, dir);
		}
		if (!kernel_has_btrfs()) {
			snprintf(why, whylen, "the running kernel has no btrfs (/proc/filesystems)");
			return -ENODEV;
		}
	}
	if (fuse && (fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) {
		int e = errno;
		snprintf(why, whylen, "no FUSE: /dev/fuse: %s", strerror(e));
		return -e;
	}
	if (fuse)
		close(fd);
	return 0;
}

/* ---- Loop devices ---- */

int kloop_attach(const char *path, unsigned block_size, char *dev, size_t devlen, int *hold,
		 char *err, size_t errlen)
{
	int file = open(path, O_RDWR | O_CLOEXEC);
	if (file < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		int e = errno;
		close(file);
		snprintf(err, errlen, "/dev/loop-control: %s", strerror(e));
		return -e;
	}
	int r = -EBUSY;
	/* Another process may take the free device first: try again. */
	for (int tries = 0; tries < 32 && r == -EBUSY; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			r = -errno;
			snprintf(err, errlen, "no free loop device: %s", strerror(errno));
			break;
		}
		snprintf(dev, devlen, "/dev/loop%d", n);
		int fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", dev, strerror(errno));
			break;
		}
		struct loop_config lc = { .fd = (uint32_t)file, .block_size = block_size };
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		snprintf((char *)lc.info.lo_file_name, sizeof(lc.info.lo_file_name), "%s", path);
		if (ioctl(fd, LOOP_CONFIGURE, &lc) == 0) {
			reg_add(KREG_LOOP, dev);
			*hold = fd; /* autoclear: the device lives while this or a mount holds it */
			r = 0;
		} else {
			r = -errno;
			if (r != -EBUSY)
				snprintf(err, errlen, "%s: LOOP_CONFIGURE over %s: %s", dev, path,
					 strerror(errno));
			close(fd);
		}
	}
	if (r == -EBUSY)
		snprintf(err, errlen, "every free loop device was taken by another process");
	close(ctl);
	close(file);
	return r;
}

void kloop_detach(const char *dev, int hold)
{
	int fd = hold >= 0 ? hold : open(dev, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ioctl(fd, LOOP_CLR_FD, 0);
		close(fd);
	}
	reg_del(KREG_LOOP, dev);
}

/* ---- Mounts with a timeout ---- */

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Starts fn(arg) in a child, whose return (0 or an errno) and message come
 * down a pipe. */
static int in_child_start(int (*fn)(const void *arg, char *msg, size_t len), const void *arg,
			  struct kjob *j, char *err, size_t errlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		int e = errno;
		snprintf(err, errlen, "pipe: %s", strerror(e));
		return -e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		kernel_in_child();
		char msg[512] = "";
		int e = fn(arg, msg, sizeof(msg));
		unsigned char b = (unsigned char)e;
		if (write(p[1], &b, 1) == 1 && msg[0] && write(p[1], msg, strlen(msg)) < 0)
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	*j = (struct kjob){ pid, p[0] };
	clock_gettime(CLOCK_MONOTONIC, &j->t0);
	pid_add(mounters, pid);
	return 0;
}

/* Reads everything a job's pipe gives until it closes, within timeout_ms of
 * the job's start (up to len - 1 bytes kept, the rest read and dropped):
 * the bytes kept, or -ETIMEDOUT. */
static ssize_t drain(struct kjob *j, unsigned timeout_ms, char *buf, size_t len)
{
	size_t got = 0;
	char sink[4096];
	for (;;) {
		long left = (long)timeout_ms - ms_since(&j->t0);
		struct pollfd pf = { j->fd, POLLIN, 0 };
		int n = left > 0 ? poll(&pf, 1, (int)left) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -ETIMEDOUT;
		bool keep = got + 1 < len;
		ssize_t k = keep ? read(j->fd, buf + got, len - 1 - got) : read(j->fd, sink, sizeof(sink));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (keep)
			got += (size_t)k;
	}
	if (len)
		buf[got] = 0;
	return (ssize_t)got;
}

/* The child's return within timeout_ms of its start: 0, -errno with its
 * message in err, or -ETIMEDOUT (the child is left to finish or hang; it is
 * not waited for). */
static int in_child_wait(struct kjob *j, unsigned timeout_ms, char *err, size_t errlen)
{
	char buf[600];
	ssize_t got = drain(j, timeout_ms, buf, sizeof(buf));
	close(j->fd);
	if (got == -ETIMEDOUT) {
		snprintf(err, errlen, "no answer from the kernel within %u ms (a hang)", timeout_ms);
		return -ETIMEDOUT;
	}
	int st;
	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	pid_del(mounters, j->pid);
	if (got <= 0) {
		snprintf(err, errlen, "the helper process died");
		return -EIO;
	}
	if (buf[0])
		snprintf(err, errlen, "%s", buf + 1);
	return -(int)(unsigned char)buf[0];
}

static int in_child(int (*fn)(const void *arg, char *msg, size_t len), const void *arg,
		    unsigned timeout_ms, char *err, size_t errlen)
{
	struct kjob j;
	int r = in_child_start(fn, arg, &j, err, errlen);
	return r ? r : in_child_wait(&j, timeout_ms, err, errlen);
}

/* The kernel's log from now on: a /dev/kmsg descriptor at its end (-1 when
 * it cannot be read). */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* The kernel's messages about dev since kmsg_open, the last ones that fit
 * in out ("" when none): what a failed mount says in dmesg. */
static void kmsg_about(int fd, const char *dev, char *out, size_t len)
{
	out[0] = 0;
	if (fd < 0)
		return;
	const char *name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	char rec[1024], dv[64];
	snprintf(dv, sizeof(dv), "(device %s)", name);
	ssize_t n;
	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue; /* overwritten records: go on with the next */
		rec[n] = 0;
		char *text = strchr(rec, ';');
		if (!text || !strstr(text, dv))
			continue;
		text++;
		text[strcspn(text, "\n")] = 0;
		size_t o = strlen(out), t = strlen(text);
		if (o + t + 3 >= len) /* keep the newest: drop what came before */
			out[0] = 0, o = 0;
		if (t + 3 < len) {
			if (o)
				memcpy(out + o, "; ", 2), o += 2;
			memcpy(out + o, text, t + 1);
		}
	}
}

struct mount_args {
	const char *const *devs;
	unsigned ndevs;
	const char *dir, *opts;
};

static int do_mount(const void *arg, char *msg, size_t len)
{
	const struct mount_args *a = arg;
	char data[4096];
	size_t o = 0;
	data[0] = 0;
	/* every device named: there is no udev here to register them */
	for (unsigned i = 1; i < a->ndevs && o < sizeof(data); i++)
		o += (size_t)snprintf(data + o, sizeof(data) - o, "%sdevice=%s", o ? "," : "",
				      a->devs[i]);
	if (a->ndevs > 1 && o < sizeof(data))
		o += (size_t)snprintf(data + o, sizeof(data) - o, "%sdevice=%s", o ? "," : "",
				      a->devs[0]);
	if (a->opts && *a->opts && o < sizeof(data))
		o += (size_t)snprintf(data + o, sizeof(data) - o, "%s%s", o ? "," : "", a->opts);
	if (o >= sizeof(data)) {
		snprintf(msg, len, "mount options too long");
		return E2BIG;
	}
	int kmsg = kmsg_open();
	if (mount(a->devs[0], a->dir, "btrfs", 0, data)) {
		int e = errno;
		char said[400];
		kmsg_about(kmsg, a->devs[0], said, sizeof(said));
		snprintf(msg, len, "mount %s: %s%s%s", a->devs[0], strerror(e),
			 said[0] ? "; the kernel says: " : " (nothing in dmesg)", said);
		if (kmsg >= 0)
			close(kmsg);
		return e;
	}
	if (kmsg >= 0)
		close(kmsg);
	return 0;
}

static int do_umount(const void *arg, char *msg, size_t len);

int kmount_here(const char *const *devs, unsigned ndevs, const char *dir, const char *opts,
		char *err, size_t errlen)
{
	struct mount_args a = { devs, ndevs, dir, opts };
	kreg_mount(dir);
	int e = do_mount(&a, err, errlen);
	if (e)
		kunreg_mount(dir);
	return -e;
}

int kumount_here(const char *dir, char *err, size_t errlen)
{
	int e = do_umount(dir, err, errlen);
	if (e)
		umount2(dir, MNT_DETACH);
	kunreg_mount(dir);
	return -e;
}

int kmount_start(const char *const *devs, unsigned ndevs, const char *dir, const char *opts,
		 struct kjob *j, char *err, size_t errlen)
{
	struct mount_args a = { devs, ndevs, dir, opts };
	/* registered first: a mount the parent gives up on may still land */
	kreg_mount(dir);
	int r = in_child_start(do_mount, &a, j, err, errlen);
	if (r)
		kunreg_mount(dir);
	return r;
}

int kmount_wait(struct kjob *j, const char *dir, unsigned timeout_ms, char *err, size_t errlen)
{
	int r = in_child_wait(j, timeout_ms, err, errlen);
	if (r && r != -ETIMEDOUT)
		kunreg_mount(dir);
	return r;
}

int kmount(const char *const *devs, unsigned ndevs, const char *dir, const char *opts,
	   unsigned timeout_ms, char *err, size_t errlen)
{
	struct kjob j;
	int r = kmount_start(devs, ndevs, dir, opts, &j, err, errlen);
	return r ? r : kmount_wait(&j, dir, timeout_ms, err, errlen);
}

static int do_umount(const void *arg, char *msg, size_t len)
{
	if (umount2((const char *)arg, 0)) {
		int e = errno;
		snprintf(msg, len, "umount %s: %s", (const char *)arg, strerror(e));
		return e;
	}
	return 0;
}

int kumount(const char *dir, unsigned timeout_ms, char *err, size_t errlen)
{
	int r = in_child(do_umount, dir, timeout_ms, err, errlen);
	if (r) {
		/* a lazy unmount at least frees the name space */
		umount2(dir, MNT_DETACH);
	}
	kunreg_mount(dir);
	return r;
}

/* ---- Programs with a timeout ---- */

int krun_start(char *const argv[], struct kjob *j)
{
	/* posix_spawn, not fork: a fork copies the page tables of a process
	 * that may hold hundreds of megabytes (a campaign's explorer, its
	 * workers), once per crash state: a campaign's states grew from 60 to
	 * 170 ms as its heap did */
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (fuse_fd >= 0)
		posix_spawn_file_actions_addclose(&fa, fuse_fd);
	pid_t pid;
	extern char **environ;
	int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e) {
		close(p[0]);
		close(p[1]);
		return -e;
	}
	close(p[1]);
	*j = (struct kjob){ pid, p[0] };
	clock_gettime(CLOCK_MONOTONIC, &j->t0);
	return 0;
}

int krun_wait(struct kjob *j, unsigned timeout_ms, char *out, size_t outlen)
{
	char none[1];
	ssize_t got = drain(j, timeout_ms, outlen ? out : none, outlen ? outlen : 1);
	close(j->fd);
	if (got == -ETIMEDOUT)
		kill(j->pid, SIGKILL);
	int st;
	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	if (got == -ETIMEDOUT)
		return -ETIMEDOUT;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int krun(char *const argv[], unsigned timeout_ms, char *out, size_t outlen)
{
	struct kjob j;
	if (outlen)
		out[0] = 0;
	int r = krun_start(argv, &j);
	return r ? r : krun_wait(&j, timeout_ms, out, outlen);
}
