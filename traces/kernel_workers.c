/*
 * kernel_workers.c - processes that view kernel crash states side by side
 * (kernel_internal.h): a kernel mount, walk, unmount and btrfs check take
 * some 40 ms, mostly the kernel's time, so while one worker waits on the
 * kernel another runs and the explorer builds the next states.
 *
 * Each worker is forked from the explorer once the recording is over (no
 * FUSE server is running), has its own image directory and mount point,
 * forgets the parent's registered mounts and directories (they are the
 * parent's to release) and registers its own loop devices and mounts, which
 * it releases when the parent closes its pipe or when a signal ends it (the
 * parent's release sends SIGTERM to the workers it registered).
 *
 * A request is the state's kview_in (the strings are the worker's own or
 * the run's, known to it since the fork); the answer is the view: two
 * verdicts, the hang count and four strings, each with its length.
 */
#include "traces/kernel_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct request {
	unsigned ndisks;
	uint32_t sector;
	bool want_subvols;
};

struct answer_head {
	int32_t fail, after;
	uint32_t hangs;
	uint32_t len[4]; /* why, text, subv, after_why; UINT32_MAX: NULL */
};

static int put(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

static int get(int fd, void *p, size_t n)
{
	while (n) {
		ssize_t k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		p = (char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

static void serve(const struct kern *k, const struct kworker *w, int in, int out)
{
	struct request rq;
	while (get(in, &rq, sizeof(rq)) == 0) {
		struct kview_in vi = { w->imgdir,  w->mnt,   k->opts,	    k->lock,
				       rq.ndisks, rq.sector, k->timeout_ms, rq.want_subvols,
				       true };
		struct kseen view = { 0 };
		kview(&vi, &view);
		const char *s[4] = { view.why, view.text, view.subv, view.after_why };
		struct answer_head h = { view.fail, view.after, view.hangs, { 0 } };
		for (int i = 0; i < 4; i++)
			h.len[i] = s[i] ? (uint32_t)strlen(s[i]) : UINT32_MAX;
		int r = put(out, &h, sizeof(h));
		for (int i = 0; i < 4 && !r; i++)
			if (s[i])
				r = put(out, s[i], h.len[i]);
		free(view.why);
		free(view.text);
		free(view.subv);
		free(view.after_why);
		if (r)
			break;
	}
	kernel_release_all();
	/* The parent closed the pipe: it is done with this worker, or it died
	 * (SIGKILL: nothing of it runs to clean up).  Either way the images
	 * and directories are no one's now: the worker's own, and the
	 * parent's (only when empty: in use they stay). */
	unlink(k->lock);
	const char *dirs[] = { w->imgdir, w->mnt, k->imgdir, k->mnt };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		for (unsigned d = 0; i % 2 == 0 && d < SIM_MAX_DISKS; d++) {
			char path[300];
			snprintf(path, sizeof(path), "%s/disk%u", dirs[i], d);
			unlink(path);
		}
		rmdir(dirs[i]);
	}
	_exit(0);
}

static int spawn(struct kern *k, int i, char *err, size_t errlen)
{
	struct kworker *w = &k->w[i];
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -EMFILE;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(a[0]);
		close(a[1]);
		close(b[0]);
		close(b[1]);
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		kernel_in_child();
		kreg_forget_all(); /* the parent's are the parent's to release */
		signal(SIGPIPE, SIG_IGN);
		close(a[1]);
		close(b[0]);
		for (int j = 0; j < i; j++) { /* the other workers' pipes */
			close(k->w[j].to);
			close(k->w[j].from);
		}
		serve(k, w, a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	w->pid = pid;
	w->to = a[1];
	w->from = b[0];
	w->busy = false;
	kreg_worker(pid);
	return 0;
}

int kworkers_start(struct kern *k, char *err, size_t errlen)
{
	unsigned n = k->jobs > KERN_MAX_WORKERS ? KERN_MAX_WORKERS : k->jobs;
	for (unsigned i = 0; i < n; i++) {
		struct kworker *w = &k->w[i];
		int r = ktmpdir(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL, "imgs", w->imgdir,
				sizeof(w->imgdir));
		if (!r)
			r = ktmpdir(NULL, "judge", w->mnt, sizeof(w->mnt));
		if (!r)
			r = spawn(k, (int)i, err, errlen);
		else
			snprintf(err, errlen, "a temporary directory: %s", strerror(-r));
		if (r) {
			krmdir(w->imgdir);
			krmdir(w->mnt);
			kworkers_stop(k);
			return r;
		}
		k->nworkers = i + 1;
	}
	return 0;
}

void kworkers_stop(struct kern *k)
{
	for (unsigned i = 0; i < k->nworkers; i++) {
		struct kworker *w = &k->w[i];
		close(w->to); /* the worker ends when its request pipe does */
		close(w->from);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
		kunreg_worker(w->pid);
		krmdir(w->mnt);
		krmdir(w->imgdir);
	}
	k->nworkers = 0;
}

int kworkers_free(const struct kern *k)
{
	for (unsigned i = 0; i < k->nworkers; i++)
		if (!k->w[i].busy)
			return (int)i;
	return -1;
}

int kworker_ask(struct kern *k, int i, const struct kview_in *in, char *err, size_t errlen)
{
	struct kworker *w = &k->w[i];
	struct request rq = { in->ndisks, in->sector, in->want_subvols };
	if (put(w->to, &rq, sizeof(rq))) {
		snprintf(err, errlen, "the process judging kernel states died");
		return -EPIPE;
	}
	w->busy = true;
	return 0;
}

/* A worker that died: waited for, and another in its place. */
static void respawn(struct kern *k, int i)
{
	struct kworker *w = &k->w[i];
	close(w->to);
	close(w->from);
	kill(w->pid, SIGKILL);
	waitpid(w->pid, NULL, WNOHANG); /* one stuck in the kernel is not waited for */
	kunreg_worker(w->pid);
	char err[256];
	if (spawn(k, i, err, sizeof(err)))
		w->busy = true; /* never free again: the others go on */
}

int kworker_answer(struct kern *k, int i, struct kseen *view, char *err, size_t errlen)
{
	struct kworker *w = &k->w[i];
	struct answer_head h;
	char **s[4] = { &view->why, &view->text, &view->subv, &view->after_why };
	/* A worker stuck in the kernel (a mount that never returns) is a hang:
	 * given up on, killed (it may stay, stuck) and replaced. */
	struct pollfd pf = { w->from, POLLIN, 0 };
	int n;
	while ((n = poll(&pf, 1, (int)KWORKER_TIMEOUT_MS(k->timeout_ms))) < 0 && errno == EINTR)
		;
	if (n == 0) {
		snprintf(err, errlen, "the kernel did not finish with the state within %u s (a hang)",
			 KWORKER_TIMEOUT_MS(k->timeout_ms) / 1000);
		respawn(k, i);
		return -ETIMEDOUT;
	}
	int r = get(w->from, &h, sizeof(h));
	for (int j = 0; j < 4 && !r; j++) {
		if (h.len[j] == UINT32_MAX)
			continue;
		if (!(*s[j] = malloc((size_t)h.len[j] + 1))) {
			r = -ENOMEM;
			break;
		}
		r = get(w->from, *s[j], h.len[j]);
		if (!r)
			(*s[j])[h.len[j]] = 0;
	}
	if (r) {
		for (int j = 0; j < 4; j++) {
			free(*s[j]);
			*s[j] = NULL;
		}
		snprintf(err, errlen, "the process judging kernel states %s",
			 r == -ENOMEM ? "sent more than fits in memory" : "died");
		respawn(k, i);
		return r;
	}
	w->busy = false;
	view->fail = (enum explore_verdict)h.fail;
	view->after = (enum explore_verdict)h.after;
	view->hangs = h.hangs;
	return 0;
}
