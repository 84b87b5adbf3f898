/*
 * run_ref.c - the ref target: each workload operation as the matching call
 * of ref/vfs.h on a mounted reference Btrfs (subvolume operations as
 * ref_subvol_create, ref_snapshot, ref_subvol_delete, ref_subvol_sync;
 * quota-enable as ref_qgroup_enable; receive as ref_receive; clone,
 * clone-range and dedupe as ref_clone, ref_clone_range and
 * ref_dedupe_range).
 */
#include "traces/run.h"
#include "ref/send.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WRITE_CHUNK (UINT64_C(64) << 20)

/* A write: generated data in chunks (write; each chunk one atomic
 * ref_write), or the op's own bytes in one call (pwrite).  *written: the
 * bytes of the chunks that went in before a failing one (a write that
 * fails part-way leaves them in the file, as a short write(2) followed by
 * a failing one leaves them on Linux). */
static int write_data(ref_fs *fs, const struct wl_op *op, uint64_t *written)
{
	bool given = op->kind == WL_PWRITE;
	uint64_t len = given ? op->vlen : op->len;
	size_t chunk = given ? (size_t)len : len < WRITE_CHUNK ? (size_t)len : (size_t)WRITE_CHUNK;
	uint8_t *buf = given ? NULL : malloc(chunk ? chunk : 1);
	if (!given && !buf)
		return -ENOMEM;
	int r = 0;
	uint64_t done = 0;
	do {
		size_t n = len - done < chunk ? (size_t)(len - done) : chunk;
		const uint8_t *src = !given ? buf : done ? op->value + done : op->value;
		if (!given)
			wl_write_content(op->seed, op->flags, op->off + done, buf, n);
		ssize_t w = ref_write(fs, op->path, src, n, op->off + done);
		r = w < 0 ? (int)w : 0;
		if (!r)
			done += n;
		/* O_SYNC, O_DSYNC: each pwrite(2) of some bytes then syncs the
		 * file, and fails with the sync's error (generic_write_sync) */
		if (!r && n && (op->flags & WL_WRITE_SYNC))
			r = ref_fsync(fs, op->path);
		else if (!r && n && (op->flags & WL_WRITE_DSYNC))
			r = ref_fdatasync(fs, op->path);
	} while (!r && done < len);
	free(buf);
	*written = done;
	return r;
}

int wl_exec_ref(void *target, const struct wl_op *op, char *err, size_t errlen)
{
	uint64_t written;
	return wl_exec_ref_partial(target, op, &written, err, errlen);
}

int wl_exec_ref_partial(void *target, const struct wl_op *op, uint64_t *written, char *err,
			size_t errlen)
{
	ref_fs *fs = target;
	int r;
	*written = 0;
	switch (op->kind) {
	case WL_MKDIR: r = ref_mkdir(fs, op->path, op->mode); break;
	case WL_CREATE: r = ref_create(fs, op->path, op->mode); break;
	case WL_WRITE:
	case WL_PWRITE: r = write_data(fs, op, written); break;
	case WL_TRUNCATE: r = ref_truncate(fs, op->path, op->size); break;
	case WL_FALLOCATE: r = ref_fallocate(fs, op->path, op->flags, op->off, op->len); break;
	case WL_LINK: r = ref_link(fs, op->path, op->path2); break;
	case WL_SYMLINK: r = ref_symlink(fs, op->path2, op->path); break;
	case WL_RENAME: r = ref_rename(fs, op->path, op->path2, (unsigned)op->flags); break;
	case WL_UNLINK: r = ref_unlink(fs, op->path); break;
	case WL_RMDIR: r = ref_rmdir(fs, op->path); break;
	case WL_SETXATTR: r = ref_setxattr(fs, op->path, op->name, op->value, op->vlen, 0); break;
	case WL_REMOVEXATTR: r = ref_removexattr(fs, op->path, op->name); break;
	case WL_CHMOD: r = ref_chmod(fs, op->path, op->mode); break;
	case WL_CHOWN: r = ref_chown(fs, op->path, op->uid, op->gid); break;
	case WL_UTIMES: {
		struct timespec ts[2] = { op->atime, op->mtime };
		r = ref_utimes(fs, op->path, ts);
		break;
	}
	case WL_FSYNC: r = ref_fsync(fs, op->path); break;
	case WL_FDATASYNC: r = ref_fdatasync(fs, op->path); break;
	case WL_SYNC: r = ref_sync(fs); break;
	case WL_SUBVOL_CREATE: r = ref_subvol_create(fs, op->path, NULL); break;
	case WL_SNAPSHOT:
		r = ref_snapshot(fs, op->path, op->path2, op->flags & WL_SNAP_RDONLY, NULL);
		break;
	case WL_SUBVOL_DELETE: r = ref_subvol_delete(fs, op->path); break;
	case WL_SUBVOL_SYNC: r = ref_subvol_sync(fs); break;
	case WL_QUOTA_ENABLE: r = ref_qgroup_enable(fs); break;
	case WL_DEFRAG: {
		/* as btrfs filesystem defragment [-cALG]: a 32 MiB target */
		struct ref_defrag d = { .extent_thresh = 32u << 20,
					.flags = op->flags ? REF_DEFRAG_COMPRESS : 0,
					.compress = (uint8_t)op->flags };
		r = ref_defrag(fs, op->path, &d, NULL);
		break;
	}
	case WL_RECEIVE: {
		/* btrfs receive -f STREAM DIR; its own message (with the
		 * command's offset) is kept */
		char why[512];
		r = ref_receive(fs, op->path, op->value, op->vlen, NULL, NULL, why, sizeof(why));
		if (r < 0 && errlen) {
			snprintf(err, errlen, "%s", why);
			return r;
		}
		break;
	}
	case WL_CLONE: r = ref_clone(fs, op->path, op->path2); break;
	case WL_CLONE_RANGE:
		r = ref_clone_range(fs, op->path, op->off, op->len, op->path2, op->off2);
		break;
	case WL_DEDUPE: {
		/* one destination; its status is the op's result, EBADE for
		 * differing bytes */
		struct ref_dedupe_dest d = { .path = op->path2, .offset = op->off2 };
		/* the ioctl's caller opened SRC, then DST, before the call checks
		 * anything: their lookups' errnos come first */
		struct ref_stat st;
		if ((r = ref_stat_path(fs, op->path, true, &st)) ||
		    (r = ref_stat_path(fs, op->path2, true, &st)))
			break;
		r = ref_dedupe_range(fs, op->path, op->off, op->len, &d, 1);
		if (!r && d.status == REF_DEDUPE_DIFFERS)
			return errlen ? (snprintf(err, errlen, "the bytes differ"), -EBADE) : -EBADE;
		if (!r)
			r = d.status;
		break;
	}
	case WL_BALANCE: {
		struct ref_balance b = { .flags = BTRFS_BALANCE_TYPE_MASK };
		struct ref_balance_stats st;
		r = ref_balance(fs, &b, &st);
		break;
	}
	case WL_DEVICE_REMOVE: {
		uint64_t devid = op->devid;
		struct ref_balance_stats st;
		r = ref_device_remove(fs, &devid, &st);
		break;
	}
	default:
		snprintf(err, errlen, "operation %d is the runner's, not the file system's", op->kind);
		return -EINVAL;
	}
	if (r < 0 && errlen)
		snprintf(err, errlen, "%s", r == -ENOMEM ? "out of memory" : ref_error(fs));
	return r < 0 ? r : 0;
}
