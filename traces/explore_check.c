/*
 * explore_check.c - an application's checker in each crash state the oracle
 * accepts (`btrsim explore --check CMD`), as ALICE judged applications: the
 * state is mounted through FUSE on a writable copy (the application's own
 * recovery, SQLite's rollback of a hot journal say, runs as after a real
 * crash; the copy is discarded) and CMD runs there under sh -c, in the
 * mount, with a time limit.  Exit 0: the application's data is consistent.
 * Anything else is a violation of its own verdict, "app", with the exit
 * status and the first lines the checker printed; a checker that does not
 * finish in time is killed with all it started, and that is recorded too.
 * The checker is told where the crash was: BTRSIM_OPS_DONE, the workload's
 * operations that had returned, and BTRSIM_OPS_DURABLE, those before the
 * last persistence point that completed (fsync, fdatasync, sync, a
 * synced write: what the file system promised to keep); a checker compares
 * them with the workload to know which of the application's commits must
 * be there: BTRSIM_WORKLOAD names a copy of the workload explored, one
 * operation a line (minimization explores parts of it).  States with the same tree (the oracle's description: names,
 * modes, owners, sizes, content digests, xattrs) and the same two numbers
 * get the verdict the first one got: the checker sees nothing else.
 */
#include "traces/explore_internal.h"
#include "traces/fmount.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct app_seen {
	uint8_t key[16];
	enum explore_verdict verdict;
	char *why;
};

struct app_check {
	char dir[64], mnt[80], wl[80]; /* a temporary directory, the mount point and the workload in it */
	struct app_seen *seen;
	size_t n, cap;
};

int explore_check_init(struct ex *x, char *err, size_t errlen)
{
	if (!x->o->check_cmd)
		return 0;
	struct app_check *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	snprintf(c->dir, sizeof(c->dir), "/tmp/btrsim-check.XXXXXX");
	if (!mkdtemp(c->dir)) {
		int e = errno;
		free(c);
		snprintf(err, errlen, "a directory for the checker: %s", strerror(e));
		return -e;
	}
	x->app = c;
	snprintf(c->mnt, sizeof(c->mnt), "%s/mnt", c->dir);
	snprintf(c->wl, sizeof(c->wl), "%s/workload.wl", c->dir);
	/* the workload explored (minimization explores parts of it), for the
	 * checker to read its operations */
	FILE *f = mkdir(c->mnt, 0700) ? NULL : fopen(c->wl, "w");
	int r = f ? wl_print(f, x->w) : -errno;
	if (f && fclose(f) && !r)
		r = -EIO;
	if (r) {
		snprintf(err, errlen, "the checker's copy of the workload: %s", strerror(-r));
		explore_check_free(x);
		return r;
	}
	return 0;
}

void explore_check_free(struct ex *x)
{
	struct app_check *c = x->app;
	if (!c)
		return;
	rmdir(c->mnt);
	unlink(c->wl);
	rmdir(c->dir);
	for (size_t i = 0; i < c->n; i++)
		free(c->seen[i].why);
	free(c->seen);
	free(c);
	x->app = NULL;
}

/* The first lines of what the checker printed, on one line. */
static void output_of(int fd, char *out, size_t len)
{
	char buf[600];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		snprintf(out, len, "(no output)");
		return;
	}
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')
			buf[i] = i == n - 1 ? '\0' : ' ';
	snprintf(out, len, "%s%s", buf, n == (ssize_t)sizeof(buf) - 1 ? "..." : "");
}

/* Runs the checker on a copy of v; its verdict, why set for a violation. */
static enum explore_verdict run_checker(const struct ex *x, sim_volume *v, char *why, size_t whylen)
{
	struct app_check *c = x->app;
	sim_volume *copy;
	if (sim_volume_clone(v, &copy)) {
		snprintf(why, whylen, "the checker: cloning the state failed");
		return EXPLORE_READ;
	}
	char err[512];
	ref_fs *fs;
	struct ref_mount_opts mo = { .open = { .super_mirror = 0, .spares = true }, .realtime = true };
	if (ref_mount(copy, &mo, &fs, err, sizeof(err))) {
		sim_volume_close(copy);
		snprintf(why, whylen, "the checker's writable mount failed: %s", err);
		return EXPLORE_MOUNT;
	}
	int out = memfd_create("btrsim-check", MFD_CLOEXEC);
	char *argv[] = { (char *)x->o->check_cmd, NULL };
	struct fmount_prog prog = { .argv = argv, .shell = true, .out_fd = out,
				    .timeout_ms = x->o->check_timeout_ms };
	struct fmount_opts fo = { 0 };
	struct fmount_exit ex;
	int r = fmount_run(fs, &fo, c->mnt, &prog, &ex, err, sizeof(err));
	ref_close(fs); /* the copy's changes go with it */
	sim_volume_close(copy);
	x->res->checked++;
	enum explore_verdict verdict = EXPLORE_OK;
	char said[640];
	if (out >= 0)
		output_of(out, said, sizeof(said));
	else
		snprintf(said, sizeof(said), "(output not kept)");
	if (r) {
		snprintf(why, whylen, "the checker could not run: %s", err);
		verdict = EXPLORE_APP;
	} else if (ex.timed_out) {
		x->res->check_hangs++;
		snprintf(why, whylen, "the checker did not finish in %u s (killed with all it started): %s",
			 x->o->check_timeout_ms / 1000, said);
		verdict = EXPLORE_APP;
	} else if (!WIFEXITED(ex.status) || WEXITSTATUS(ex.status)) {
		if (WIFEXITED(ex.status))
			snprintf(why, whylen, "the checker failed (exit %d): %s", WEXITSTATUS(ex.status), said);
		else
			snprintf(why, whylen, "the checker was killed by signal %d: %s", WTERMSIG(ex.status),
				 said);
		verdict = EXPLORE_APP;
	}
	if (out >= 0)
		close(out);
	return verdict;
}

enum explore_verdict explore_check_app(const struct ex *x, sim_volume *v, size_t point,
				       const char *text, char *why, size_t whylen)
{
	struct app_check *c = x->app;
	struct app_seen s;
	size_t ops[2];
	explore_legal_range(x, point, &ops[0], &ops[1]);
	/* the tree and what the checker is told of the crash point */
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, sizeof(s.key));
	crypto_generichash_update(&h, (const uint8_t *)text, strlen(text));
	crypto_generichash_update(&h, (const uint8_t *)ops, sizeof(ops));
	crypto_generichash_final(&h, s.key, sizeof(s.key));
	for (size_t i = 0; i < c->n; i++)
		if (!memcmp(c->seen[i].key, s.key, sizeof(s.key))) {
			x->res->check_cached++;
			snprintf(why, whylen, "%s", c->seen[i].why ? c->seen[i].why : "");
			return c->seen[i].verdict;
		}
	char done[24], durable[24];
	snprintf(done, sizeof(done), "%zu", ops[1]);
	snprintf(durable, sizeof(durable), "%zu", ops[0]);
	setenv("BTRSIM_OPS_DONE", done, 1);
	setenv("BTRSIM_OPS_DURABLE", durable, 1);
	setenv("BTRSIM_WORKLOAD", c->wl, 1);
	s.verdict = run_checker(x, v, why, whylen);
	unsetenv("BTRSIM_OPS_DONE");
	unsetenv("BTRSIM_OPS_DURABLE");
	unsetenv("BTRSIM_WORKLOAD");
	s.why = s.verdict == EXPLORE_OK ? NULL : strdup(why);
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct app_seen *n = realloc(c->seen, cap * sizeof(*n));
		if (!n) {
			free(s.why);
			return s.verdict;
		}
		c->seen = n, c->cap = cap;
	}
	c->seen[c->n++] = s;
	return s.verdict;
}
