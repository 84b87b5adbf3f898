/*
 * fmount_record.c - `btrsim record`'s half of the FUSE mount: each change a
 * request made to ref, appended to a workload as the op of the language that
 * makes it (with `= ERRNO` when ref refused it), its paths from the top
 * level as ref names the inodes just before the call.  Calls on a file
 * that has no name any more (unlinked while open) are left out: nothing of
 * them can outlive the file (the orphan goes at the next mount).  Calls the
 * language cannot say (mknod of a fifo, socket or device; xattrs, owners
 * and times of a symlink itself) are counted and named at the end.
 */
#include "traces/fmount_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_BYTES 16384

char *fm_rec_path(fmount *fm, const struct fm_node *n, const char *name)
{
	if (!fm->opts.record)
		return NULL;
	char *buf = malloc(PATH_BYTES);
	if (!buf)
		return NULL;
	if (ref_ino_path(fm->fs, &n->ino, buf, PATH_BYTES)) {
		free(buf);
		return NULL;
	}
	if (name) {
		size_t l = strlen(buf);
		int w = snprintf(buf + l, PATH_BYTES - l, "%s%s", l > 1 ? "/" : "", name);
		if (w < 0 || (size_t)w >= PATH_BYTES - l) {
			free(buf);
			return NULL;
		}
	}
	return buf;
}

void fm_rec(fmount *fm, struct wl_op *op, int r)
{
	struct wl_workload *w = fm->opts.record;
	bool two = op->kind == WL_LINK || op->kind == WL_RENAME;
	if (w && op->path && (!two || op->path2)) {
		op->expect = r < 0 ? -r : 0;
		op->line = w->n + 1; /* its line in the file btrsim record writes */
		if (wl_append(w, op))
			fm->rec_lost++;
	}
	free(op->path);
	if (op->kind == WL_LINK || op->kind == WL_RENAME)
		free(op->path2);
	op->path = op->path2 = NULL;
}

void fm_rec_unsaid(fmount *fm, const char *what)
{
	if (!fm->opts.record)
		return;
	if (!fm->rec_unsaid++)
		snprintf(fm->rec_first_unsaid, sizeof(fm->rec_first_unsaid), "%s", what);
}

int fmount_record_gaps(const fmount *fm, char *buf, size_t len)
{
	if (fm->rec_lost)
		snprintf(buf, len, "%llu changes could not be recorded (out of memory)",
			 (unsigned long long)fm->rec_lost);
	else if (fm->rec_unsaid)
		snprintf(buf, len, "%llu calls the workload language cannot say were left out (the first: %s)",
			 (unsigned long long)fm->rec_unsaid, fm->rec_first_unsaid);
	else
		return 0;
	return fm->rec_lost ? -ENOMEM : 1;
}
