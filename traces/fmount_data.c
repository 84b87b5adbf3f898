/*
 * fmount_data.c - the FUSE mount's file requests: open and release (a file
 * open is held in ref, so that its last name going leaves it an orphan
 * until the last close, as in the kernel), read, write, fsync and
 * fdatasync (of files and directories: ref's fsync log), fallocate and
 * lseek's SEEK_DATA / SEEK_HOLE.  O_TRUNC arrives as a setattr before the
 * open, O_APPEND as the offset the kernel computed, O_SYNC and O_DSYNC as
 * an fsync after the write (FUSE's generic_write_sync).
 */
#include "traces/fmount_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int fm_hold(fmount *fm, struct fm_node *n)
{
	int r = ref_hold(fm->fs, &n->ino);
	if (!r)
		n->nopen++;
	return r;
}

void fm_unhold(fmount *fm, struct fm_node *n)
{
	int r = ref_release(fm->fs, &n->ino);
	if (r) /* the deletion of an unlinked file failed: it stays an orphan */
		fm_report(fm, "release", r);
	n->nopen--;
	if (!n->nopen && !n->nlookup)
		fm_node_forget(fm, n, 0);
}

void fm_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	struct stat st;
	int r = fm_stat(fm, n, &st);
	if (!r && (fi->flags & O_ACCMODE) != O_RDONLY && fm->opts.ro)
		r = -EROFS;
	if (!r && S_ISDIR(st.st_mode) && (fi->flags & O_ACCMODE) != O_RDONLY)
		r = -EISDIR;
	/* O_TRUNC comes with the open (FUSE_CAP_ATOMIC_O_TRUNC): the kernel's
	 * handle_truncate, times changed even when the file was empty. */
	if (!r && fi->flags & O_TRUNC && S_ISREG(st.st_mode)) {
		struct wl_op op;
		fm_op_init(&op, WL_TRUNCATE);
		op.path = fm_rec_path(fm, n, NULL);
		ref_chdir(fm->fs, &n->ino);
		r = ref_truncate(fm->fs, "", 0);
		fm_rec(fm, &op, r);
	}
	if (r || (r = fm_hold(fm, n)))
		return fm_reply_err(req, fm, "open", r);
	fi->keep_cache = 1; /* the data changes only through this mount */
	if (fuse_reply_open(req, fi))
		fm_unhold(fm, n);
}

void fm_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	fm_unhold(fm, fm_node(fm, ino));
	fuse_reply_err(req, 0);
}

void fm_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return fm_reply_err(req, fm, "read", -ENOMEM);
	ssize_t n = ref_pread(fm->fs, &fm_node(fm, ino)->ino, buf, size, (uint64_t)off);
	if (n < 0)
		fm_reply_err(req, fm, "read", (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void fm_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	struct fm_node *node = fm_node(fm, ino);
	struct wl_op op;
	fm_op_init(&op, WL_PWRITE);
	op.path = fm_rec_path(fm, node, NULL);
	op.off = (uint64_t)off;
	op.value = (uint8_t *)buf;
	op.vlen = size;
	ref_chdir(fm->fs, &node->ino);
	ssize_t n = ref_write(fm->fs, "", buf, size, (uint64_t)off);
	fm_rec(fm, &op, n < 0 ? (int)n : 0);
	if (n < 0)
		return fm_reply_err(req, fm, "write", (int)n);
	fuse_reply_write(req, (size_t)n);
}

void fm_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	struct wl_op op;
	fm_op_init(&op, datasync ? WL_FDATASYNC : WL_FSYNC);
	op.path = fm_rec_path(fm, n, NULL);
	ref_chdir(fm->fs, &n->ino);
	int r = fm->opts.ro ? 0 : datasync ? ref_fdatasync(fm->fs, "") : ref_fsync(fm->fs, "");
	fm_rec(fm, &op, r);
	if (r)
		return fm_reply_err(req, fm, "fsync", r);
	fuse_reply_err(req, 0);
}

void fm_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	ref_chdir(fm->fs, &n->ino);
	if (off < 0 || len <= 0) /* vfs_fallocate's own check, before the file system's */
		return fm_reply_err(req, fm, "fallocate", -EINVAL);
	struct wl_op op;
	fm_op_init(&op, WL_FALLOCATE);
	/* the modes the language has (FALLOC_FL_* values); a refused other
	 * mode changed nothing */
	bool said = mode == 0 || mode == WL_FALLOC_KEEP_SIZE ||
		    mode == (WL_FALLOC_PUNCH_HOLE | WL_FALLOC_KEEP_SIZE) || mode == WL_FALLOC_ZERO_RANGE ||
		    mode == (WL_FALLOC_ZERO_RANGE | WL_FALLOC_KEEP_SIZE);
	op.path = said ? fm_rec_path(fm, n, NULL) : NULL;
	op.flags = mode;
	op.off = (uint64_t)off;
	op.len = (uint64_t)len;
	int r = ref_fallocate(fm->fs, "", mode, (uint64_t)off, (uint64_t)len);
	if (!said && !r)
		fm_rec_unsaid(fm, "fallocate with a mode the language has not");
	fm_rec(fm, &op, r);
	if (r)
		return fm_reply_err(req, fm, "fallocate", r);
	fuse_reply_err(req, 0);
}

void fm_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return fm_reply_err(req, fm, "lseek", -EINVAL);
	struct stat st;
	int r = fm_stat(fm, n, &st);
	if (r)
		return fm_reply_err(req, fm, "lseek", r);
	if (off < 0 || off >= st.st_size)
		return fm_reply_err(req, fm, "lseek", -ENXIO);
	uint64_t start, end;
	if ((r = ref_next_data(fm->fs, &n->ino, (uint64_t)off, &start, &end)))
		return fm_reply_err(req, fm, "lseek", r);
	/* SEEK_DATA: the first data at or after off (none left: ENXIO);
	 * SEEK_HOLE: off when it lies in a hole, else where its data ends (the
	 * end of the file counts as a hole). */
	if (whence == SEEK_DATA) {
		if (start >= (uint64_t)st.st_size)
			return fm_reply_err(req, fm, "lseek", -ENXIO);
		fuse_reply_lseek(req, (off_t)start);
	} else {
		fuse_reply_lseek(req, start > (uint64_t)off ? off : (off_t)end);
	}
}
