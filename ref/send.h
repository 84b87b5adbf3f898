/*
 * send.h - Btrfs send streams (`btrfs send`; the format of btrfs-progs'
 * Documentation/dev/dev-send-stream.rst, versions 1 to 3), read command by
 * command with every check a receiver needs: the header, each command's
 * length and CRC32C, each attribute inside its command.  (ref/send/)
 *
 * A stream: the magic "btrfs-stream" with its NUL, a le32 version, then
 * commands: le32 payload length, le16 command, le32 crc32c (seed 0, no
 * inversion, over the header with the crc zeroed and the payload), then the
 * payload, a sequence of attributes: le16 type, le16 length, the value.  From
 * version 2 on, an attribute DATA has no length: it is the rest of its
 * command.
 */
#ifndef BTRSIM_REF_SEND_H
#define BTRSIM_REF_SEND_H

#include <stddef.h>
#include <stdint.h>

/* Commands (BTRFS_SEND_C_*). */
enum {
	REF_SEND_C_SUBVOL = 1, REF_SEND_C_SNAPSHOT, REF_SEND_C_MKFILE, REF_SEND_C_MKDIR,
	REF_SEND_C_MKNOD, REF_SEND_C_MKFIFO, REF_SEND_C_MKSOCK, REF_SEND_C_SYMLINK,
	REF_SEND_C_RENAME, REF_SEND_C_LINK, REF_SEND_C_UNLINK, REF_SEND_C_RMDIR,
	REF_SEND_C_SET_XATTR, REF_SEND_C_REMOVE_XATTR, REF_SEND_C_WRITE, REF_SEND_C_CLONE,
	REF_SEND_C_TRUNCATE, REF_SEND_C_CHMOD, REF_SEND_C_CHOWN, REF_SEND_C_UTIMES,
	REF_SEND_C_END, REF_SEND_C_UPDATE_EXTENT, REF_SEND_C_FALLOCATE, REF_SEND_C_FILEATTR,
	REF_SEND_C_ENCODED_WRITE, REF_SEND_C_ENABLE_VERITY,
	REF_SEND_C_MAX = REF_SEND_C_ENABLE_VERITY
};

/* Attributes (BTRFS_SEND_A_*). */
enum {
	REF_SEND_A_UUID = 1, REF_SEND_A_CTRANSID, REF_SEND_A_INO, REF_SEND_A_SIZE,
	REF_SEND_A_MODE, REF_SEND_A_UID, REF_SEND_A_GID, REF_SEND_A_RDEV, REF_SEND_A_CTIME,
	REF_SEND_A_MTIME, REF_SEND_A_ATIME, REF_SEND_A_OTIME, REF_SEND_A_XATTR_NAME,
	REF_SEND_A_XATTR_DATA, REF_SEND_A_PATH, REF_SEND_A_PATH_TO, REF_SEND_A_PATH_LINK,
	REF_SEND_A_FILE_OFFSET, REF_SEND_A_DATA, REF_SEND_A_CLONE_UUID, REF_SEND_A_CLONE_CTRANSID,
	REF_SEND_A_CLONE_PATH, REF_SEND_A_CLONE_OFFSET, REF_SEND_A_CLONE_LEN,
	REF_SEND_A_FALLOCATE_MODE, REF_SEND_A_FILEATTR, REF_SEND_A_UNENCODED_FILE_LEN,
	REF_SEND_A_UNENCODED_LEN, REF_SEND_A_UNENCODED_OFFSET, REF_SEND_A_COMPRESSION,
	REF_SEND_A_ENCRYPTION, REF_SEND_A_VERITY_ALGORITHM, REF_SEND_A_VERITY_BLOCK_SIZE,
	REF_SEND_A_VERITY_SALT_DATA, REF_SEND_A_VERITY_SIG_DATA,
	REF_SEND_A_MAX = REF_SEND_A_VERITY_SIG_DATA
};

#define REF_SEND_HEADER 17 /* magic with its NUL, version */
#define REF_SEND_VERSION_MAX 3

struct ref_send_attr {
	const uint8_t *data;
	uint32_t len;
	uint8_t present;
};

/* One command: its number, where its header starts in the stream, and its
 * attributes by type (the last of a type wins, as btrfs-progs reads them). */
struct ref_send_cmd {
	uint16_t cmd;
	uint32_t len;	 /* payload bytes */
	uint64_t offset; /* of its header */
	struct ref_send_attr a[REF_SEND_A_MAX + 1];
};

/* The stream's version from its first 17 bytes: 0, or -EINVAL (not a send
 * stream; a version above 3) with why in err. */
int ref_send_header(const uint8_t *buf, size_t len, uint32_t *version, char *err, size_t errlen);

/* The command at *off (after the header): 0 and *off past it, 1 at the
 * end of the input (no byte left), or -EBADMSG with "offset N: why" in err:
 * a truncated header or payload, a CRC mismatch, an unknown command for the
 * version, an attribute running past its command or of a type past the
 * version's.  c's attribute pointers point into buf. */
int ref_send_next(const uint8_t *buf, size_t len, uint32_t version, uint64_t *off,
		  struct ref_send_cmd *c, char *err, size_t errlen);

/* "subvol", "write", ... as btrfs receive --dump names them; NULL: unknown. */
const char *ref_send_cmd_name(uint16_t cmd);

/* Attribute values: 0, or -ENODATA (absent) / -EBADMSG (wrong size). */
int ref_send_u64(const struct ref_send_cmd *c, int type, uint64_t *v);
int ref_send_u32(const struct ref_send_cmd *c, int type, uint32_t *v);
int ref_send_uuid(const struct ref_send_cmd *c, int type, uint8_t uuid[16]);
int ref_send_time(const struct ref_send_cmd *c, int type, int64_t *sec, uint32_t *nsec);
/* A string or data attribute: its bytes (not NUL-terminated). */
int ref_send_bytes(const struct ref_send_cmd *c, int type, const uint8_t **p, uint32_t *len);

#include "ref/vfs.h"
#include <stdbool.h>
#include <stdio.h>

/* ---- Sending (send_full.c, send_write.c) ---- */

struct ref_send_opts {
	uint32_t proto; /* the stream's version: 1 (also for 0) or 2 */
	bool no_data;	/* update_extent commands instead of writes (btrfs send --no-data) */
	/* Compressed extents sent as encoded writes of their bytes on disk
	 * (btrfs send --compressed-data; version 2 only) */
	bool compressed_data;
	uint64_t parent; /* an incremental stream against this read-only subvolume (btrfs send -p); 0: full */
	/* Read-only subvolumes the receiving side has whose extents may be
	 * cloned (btrfs send -c), besides the parent and the subvolume itself. */
	const uint64_t *clone_src;
	size_t nclone_src;
	/* Several subvolumes in one stream, as btrfs send A B writes them
	 * (BTRFS_SEND_FLAG_OMIT_STREAM_HEADER / _OMIT_END_CMD): all but the
	 * first without the header, all but the last without the end command. */
	bool omit_header, omit_end;
};

struct ref_send_stats {
	uint64_t commands, bytes; /* written, the header included in bytes */
	uint64_t clones, cloned_bytes; /* clone commands and the bytes they share */
	uint64_t encoded_bytes;	       /* compressed bytes in encoded writes */
	uint64_t inodes;	  /* sent, the root directory included */
	uint64_t data_bytes;	  /* file data in write commands */
};

/*
 * Writes a full send stream of subvolume `subvol` (read-only, as the
 * kernel's send requires) to out, as btrfs send SUBVOL without a parent:
 * see send_full.c for the order of its commands.  The file system may be
 * opened read-only.  Returns 0, or -errno with why in err: EPERM for a
 * writable subvolume (the top level included), ENOENT for one being deleted
 * or absent, EINVAL for a version other than 1 or 2, EIO when out cannot be
 * written, or what reading the subvolume met (EUCLEAN, EIO).  st (may be
 * NULL) counts what was written.
 */
int ref_send(ref_fs *fs, uint64_t subvol, const struct ref_send_opts *o, FILE *out,
	     struct ref_send_stats *st, char *err, size_t errlen);

/* ---- Receiving (send_receive.c) ---- */

struct ref_receive_opts {
	bool honor_end; /* stop after the first end command (btrfs receive -e) */
	/* Told of each subvolume as its stream begins (btrfs receive's "At
	 * subvol NAME" / "At snapshot NAME"); may be NULL. */
	void (*at)(void *ctx, bool snapshot, const char *name);
	void *ctx;
};

struct ref_receive_stats {
	uint64_t streams, commands; /* read and applied */
	uint64_t subvols;	    /* finished: received and read-only */
	uint64_t bytes_written;	    /* by write, clone and encoded_write */
};

/*
 * Applies the send streams in buf (one or several, one after another) under
 * the directory dir of a mounted file system, as btrfs receive applies them
 * under a mounted btrfs (btrfs-progs 6.2): each stream's subvol or snapshot
 * command makes DIR/NAME (a snapshot of the parent subvolume, found by
 * received UUID, then by UUID), the commands after it change it, and at its
 * end command it gets the stream's uuid as received_uuid and its ctransid as
 * stransid (ref_subvol_set_received) and becomes read-only.  Paths in the
 * stream must stay inside the subvolume (no "." or ".." component, none
 * absolute or empty); a command before any subvol is refused.  Clones share
 * the source's extents (ref_clone_range); encoded writes are decompressed
 * (ref cannot write encoded yet); fileattr is ignored as btrfs-progs ignores it; enable_verity is
 * EOPNOTSUPP.
 *
 * Returns 0, or -errno with "offset N: COMMAND: PATH: why" in err: a bad
 * stream (ref_send_next's checks, an end of input without an end command, an
 * empty input), a missing parent or clone source (ENOENT), or the errno of
 * the call that failed.  What was applied before stays; the subvolume being
 * received then stays writable and not received.  st (may be NULL) counts.
 */
int ref_receive(ref_fs *fs, const char *dir, const uint8_t *buf, size_t len,
		const struct ref_receive_opts *o, struct ref_receive_stats *st, char *err,
		size_t errlen);

#endif
