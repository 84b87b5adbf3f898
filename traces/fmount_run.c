/*
 * fmount_run.c - a program run in a FUSE mount of ref: the file system
 * served at a mount point by a thread of this process while the program
 * runs there (its working directory), in a process group of its own so
 * that a time limit ends it and every process it started; then unmounted.
 * What `btrsim record` runs an application with, and what `explore --check`
 * runs a checker with in each crash state.
 */
#include "traces/fmount_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *serve(void *arg)
{
	fmount_loop(arg);
	return NULL;
}

/* Waits for pid until the deadline (0: none): 0 with its status, or 1 at
 * the deadline. */
static int wait_until(pid_t pid, const struct timespec *deadline, int *status)
{
	for (;;) {
		pid_t w = waitpid(pid, status, deadline ? WNOHANG : 0);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (!deadline)
			continue;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline->tv_sec ||
		    (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec))
			return 1;
		poll(NULL, 0, 10);
	}
}

int fmount_run(ref_fs *fs, const struct fmount_opts *o, const char *mountpoint,
	       const struct fmount_prog *prog, struct fmount_exit *ex, char *err, size_t errlen)
{
	*ex = (struct fmount_exit){ 0 };
	fmount *fm;
	int r = fmount_new(fs, o, mountpoint, &fm, err, errlen);
	if (r)
		return r;
	pthread_t th;
	if ((r = -pthread_create(&th, NULL, serve, fm))) {
		snprintf(err, errlen, "a thread to serve the mount: %s", strerror(-r));
		fmount_free(fm);
		return r;
	}
	int pipefd[2]; /* the child's exec failure, reported back */
	if (pipe2(pipefd, O_CLOEXEC)) {
		r = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		r = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(pipefd[0]), close(pipefd[1]);
		goto out;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int e = 0;
		if (chdir(fm->mnt))
			e = errno;
		if (!e && prog->out_fd >= 0 && (dup2(prog->out_fd, 1) < 0 || dup2(prog->out_fd, 2) < 0))
			e = errno;
		if (!e) {
			int null = open("/dev/null", O_RDONLY);
			if (null >= 0)
				dup2(null, 0), close(null);
			if (prog->shell)
				execl("/bin/sh", "sh", "-c", prog->argv[0], (char *)NULL);
			else
				execvp(prog->argv[0], prog->argv);
			e = errno;
		}
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	setpgid(pid, pid);
	close(pipefd[1]);
	int e = 0;
	ssize_t got = read(pipefd[0], &e, sizeof(e));
	close(pipefd[0]);
	if (got == (ssize_t)sizeof(e)) {
		int status;
		waitpid(pid, &status, 0);
		r = -e;
		snprintf(err, errlen, "cannot run %s: %s", prog->argv[0], strerror(e));
		goto out;
	}
	struct timespec deadline;
	if (prog->timeout_ms) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += prog->timeout_ms / 1000;
		deadline.tv_nsec += (long)(prog->timeout_ms % 1000) * 1000000;
		if (deadline.tv_nsec >= 1000000000)
			deadline.tv_sec++, deadline.tv_nsec -= 1000000000;
	}
	int w = wait_until(pid, prog->timeout_ms ? &deadline : NULL, &ex->status);
	if (w == 1) { /* out of time: it and all it started */
		ex->timed_out = true;
		kill(-pid, SIGKILL);
		waitpid(pid, &ex->status, 0);
	} else if (w < 0) {
		r = w;
		snprintf(err, errlen, "waitpid: %s", strerror(-w));
	}
	/* what the program left running goes too: nothing may hold the mount */
	kill(-pid, SIGKILL);
out:
	fuse_session_exit(fm->se);
	if (fm->mounted) {
		fuse_session_unmount(fm->se); /* wakes the serving thread */
		fm->mounted = false;
	}
	pthread_join(th, NULL);
	ex->failures = fm->failures;
	if (o->record)
		ex->gaps = fmount_record_gaps(fm, ex->gap, sizeof(ex->gap));
	fmount_free(fm);
	return r;
}
