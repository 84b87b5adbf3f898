/*
 * model_internal.h - what model_receive.c needs of model.c beyond
 * model_apply: the calls of btrfs receive that no workload op names (a
 * write of given bytes, a clone, the no-follow attribute calls, the
 * received uuid).  Each returns 0, -EINVAL with "OP PATH: why" in err when
 * the model cannot follow (the model unchanged), or -ENOMEM.
 */
#ifndef BTRSIM_TRACES_MODEL_INTERNAL_H
#define BTRSIM_TRACES_MODEL_INTERNAL_H

#include "traces/model.h"

/* receive's pwrite: bytes [off, off + len) of the regular file path become
 * data[0..len), which is borrowed, not copied: it must outlive m and its
 * clones (a receive op's stream, held by the workload). */
int model_write_bytes(struct model *m, const char *path, uint64_t off, const uint8_t *data,
		      size_t len, char *err, size_t errlen);
/* FICLONERANGE (or receive's copy of a clone): bytes [doff, doff + len) of
 * dst become those of src at soff (zeros past src's data); dst's size grows
 * to doff + len. */
int model_clone_range(struct model *m, const char *dst, uint64_t doff, const char *src,
		      uint64_t soff, uint64_t len, char *err, size_t errlen);
/* setxattr, removexattr, chown or utimes without following a final symlink
 * (lsetxattr, lremovexattr, lchown, utimensat AT_SYMLINK_NOFOLLOW). */
int model_apply_nofollow(struct model *m, const struct wl_op *op, char *err, size_t errlen);
/* The subvolume whose root path names gets received uuid `uuid` and becomes
 * read-only (BTRFS_IOC_SET_RECEIVED_SUBVOL, then the read-only flag). */
int model_set_received(struct model *m, const char *path, const uint8_t uuid[16], char *err,
		       size_t errlen);
/* The first subvolume (by inode number) received with uuid: 0 and *path
 * (absolute, malloc'd), -ENOENT, or -ENOMEM. */
int model_find_received(const struct model *m, const uint8_t uuid[16], char **path);
/* Exchanges the states of a and b (a clone changed, then taken). */
void model_swap(struct model *a, struct model *b);

/* receive (model_receive.c), for model_apply: the streams of op->value
 * applied under op->path as btrfs receive applies them. */
int model_receive(struct model *m, const struct wl_op *op, int result, char *err,
		  size_t errlen);

#endif
