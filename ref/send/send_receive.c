/*
 * send_receive.c - applying send streams to a file system (send.h), as
 * btrfs-progs 6.2's `btrfs receive` (cmds/receive.c) applies them with
 * system calls on a mounted btrfs: each command checked whole by
 * send_stream.c, then done with ref's own calls (vfs.h), the no-follow forms
 * where receive uses them (lchown, lsetxattr, utimensat with
 * AT_SYMLINK_NOFOLLOW).  A stream makes one subvolume (subvol: a new one;
 * snapshot: a writable snapshot of its parent, found by received UUID, then
 * by UUID); at its end command the subvolume gets received_uuid and
 * stransid from the stream and becomes read-only, so a stream cut short
 * leaves a writable subvolume that never shows as received.
 *
 * A clone shares the source's extents (ref_clone_range, as receive's
 * BTRFS_IOC_CLONE_RANGE).  What ref cannot do yet is done as receive's
 * fallbacks do it: an encoded write is decompressed and written (as receive
 * --force-decompress); fileattr is
 * ignored, as btrfs-progs 6.2 ignores it; enable_verity is refused (ref has
 * no fs-verity).
 */
#include "ref/compress.h"
#include "ref/mutant.h"
#include "ref/send.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_CAP 4096

struct recv {
	ref_fs *fs;
	const struct ref_receive_opts *o;
	struct ref_receive_stats *st;
	char dir[PATH_CAP];	   /* the destination directory, without a trailing '/' */
	char sub[PATH_CAP];	   /* the subvolume being received ("": none yet) */
	uint8_t uuid[16];	   /* the stream's uuid and ctransid for it */
	uint64_t ctransid;
	uint8_t caps[64];	   /* security.capability, set again after a chown */
	uint32_t caps_len;
	char caps_path[PATH_CAP];  /* of this file (btrfs-progs keeps no path: see do_chown) */
	const struct ref_send_cmd *c; /* the command being applied */
	uint64_t streams;
	char *err;
	size_t errlen;
};

/* "offset N: CMD: why" into err; returns -e. */
static int fail(struct recv *rv, int e, const char *fmt, ...)
{
	if (rv->errlen) {
		int n = snprintf(rv->err, rv->errlen, "offset %llu: %s: ",
				 (unsigned long long)rv->c->offset, ref_send_cmd_name(rv->c->cmd));
		va_list ap;
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < rv->errlen)
			vsnprintf(rv->err + n, rv->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -e;
}

/* A call of ref's that failed on path: why, as ref said it (with the path
 * in front unless ref named it). */
static int op_fail(struct recv *rv, int r, const char *path)
{
	const char *why = ref_error(rv->fs);
	if (!why || !*why)
		return fail(rv, -r, "%s: %s", path, strerror(-r));
	return strstr(why, path) ? fail(rv, -r, "%s", why) : fail(rv, -r, "%s: %s", path, why);
}

static int need(struct recv *rv, int r, const char *what)
{
	if (r == -ENODATA)
		return fail(rv, EBADMSG, "no %s attribute", what);
	if (r)
		return fail(rv, EBADMSG, "the %s attribute has the wrong size", what);
	return 0;
}

static int u64_attr(struct recv *rv, int type, const char *what, uint64_t *v)
{
	return need(rv, ref_send_u64(rv->c, type, v), what);
}

/* A string attribute as a C string (no NUL inside, shorter than out). */
static int str_attr(struct recv *rv, int type, const char *what, char *out, size_t cap)
{
	const uint8_t *p;
	uint32_t len;
	int r = ref_send_bytes(rv->c, type, &p, &len);
	if (r)
		return need(rv, r, what);
	if (memchr(p, 0, len))
		return fail(rv, EINVAL, "the %s holds a NUL byte", what);
	if (len >= cap)
		return fail(rv, ENAMETOOLONG, "the %s is %u bytes long", what, len);
	memcpy(out, p, len);
	out[len] = 0;
	return 0;
}

/* A path inside the subvolume: relative, its components neither empty nor
 * "." nor "..", so that no stream reaches outside what it makes ("" is the
 * subvolume's root directory). */
static bool inside(const char *p)
{
	if (!*p)
		return true;
	for (const char *s = p;;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!e)
			return true;
		s = e + 1;
	}
}

/* The full path of a path attribute: the subvolume's, then the path. */
static int path_attr(struct recv *rv, int type, const char *what, char *out)
{
	char rel[PATH_CAP];
	int r = str_attr(rv, type, what, rel, sizeof(rel));
	if (r)
		return r;
	if (!rv->sub[0])
		return fail(rv, EINVAL, "a command before any subvol or snapshot command");
	if (!inside(rel))
		return fail(rv, EINVAL, "%s '%s' is not a plain path inside the subvolume", what, rel);
	if ((size_t)snprintf(out, PATH_CAP, "%s%s%s", rv->sub, *rel ? "/" : "", rel) >= PATH_CAP)
		return fail(rv, ENAMETOOLONG, "%s '%s' is too long", what, rel);
	return 0;
}

/* The path of the subvolume with this uuid: by received uuid first, then
 * by its own uuid (btrfs-progs' subvol_uuid_search, the uuid tree's two
 * kinds of entry), the top level included for the latter. */
static int find_subvol(struct recv *rv, const uint8_t uuid[16], char *out, size_t cap)
{
	uint64_t found;
	int r = ref_subvol_by_uuid(rv->fs, uuid, true, &found);
	if (r == -ENOENT)
		r = ref_subvol_by_uuid(rv->fs, uuid, false, &found);
	if (r)
		return r;
	char rel[PATH_CAP];
	if ((r = ref_subvol_path(rv->fs, found, rel, sizeof(rel))))
		return r;
	return (size_t)snprintf(out, cap, "/%s", rel) >= cap ? -ENAMETOOLONG : 0;
}

/* The end of a subvolume's stream (finish_subvol): received, read-only. */
static int finish(struct recv *rv)
{
	if (!rv->sub[0])
		return 0;
	int r = ref_subvol_set_received(rv->fs, rv->sub, rv->uuid, rv->ctransid, NULL);
	if (!r)
		r = ref_subvol_set_readonly(rv->fs, rv->sub, true);
	if (r)
		return op_fail(rv, r, rv->sub);
	if (rv->st)
		rv->st->subvols++;
	rv->sub[0] = 0;
	return 0;
}

/* subvol and snapshot: a new subvolume DIR/NAME. */
static int begin_subvol(struct recv *rv, bool snapshot)
{
	char name[PATH_CAP];
	int r = finish(rv);
	if (r || (r = str_attr(rv, REF_SEND_A_PATH, "path", name, sizeof(name))) ||
	    (r = need(rv, ref_send_uuid(rv->c, REF_SEND_A_UUID, rv->uuid), "uuid")) ||
	    (r = u64_attr(rv, REF_SEND_A_CTRANSID, "ctransid", &rv->ctransid)))
		return r;
	/* the kernel's subvolume ioctls refuse a '/' in the name */
	if (!*name || strchr(name, '/') || !inside(name))
		return fail(rv, EINVAL, "'%s' is not a subvolume name", name);
	char sub[PATH_CAP];
	if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rv->dir, name) >= sizeof(sub))
		return fail(rv, ENAMETOOLONG, "%s/%s is too long", rv->dir, name);
	if (rv->o && rv->o->at)
		rv->o->at(rv->o->ctx, snapshot, name);
	if (!snapshot) {
		r = ref_subvol_create(rv->fs, sub, NULL);
	} else {
		uint8_t parent[16];
		char ppath[PATH_CAP];
		if ((r = need(rv, ref_send_uuid(rv->c, REF_SEND_A_CLONE_UUID, parent), "clone_uuid")))
			return r;
		if ((r = find_subvol(rv, parent, ppath, sizeof(ppath))) == -ENOENT)
			return fail(rv, ENOENT, "cannot find the parent subvolume");
		if (r)
			return op_fail(rv, r, name);
		r = ref_snapshot(rv->fs, ppath, sub, false, NULL);
	}
	if (!r && MUTANT(RECEIVE_EARLY))
		r = ref_subvol_set_received(rv->fs, sub, rv->uuid, rv->ctransid, NULL);
	if (r)
		return op_fail(rv, r, sub);
	memcpy(rv->sub, sub, sizeof(sub));
	return 0;
}

static int write_all(struct recv *rv, const char *path, const uint8_t *d, uint64_t len,
		     uint64_t off)
{
	ssize_t w = ref_write(rv->fs, path, d, len, off);
	if (w < 0)
		return op_fail(rv, (int)w, path);
	if (rv->st)
		rv->st->bytes_written += len;
	return 0;
}

/* clone: the source found (this subvolume, or one by uuid), its extents shared. */
static int do_clone(struct recv *rv, const char *path)
{
	uint64_t off, len, src_off;
	uint8_t uuid[16];
	char rel[PATH_CAP], src[PATH_CAP], base[PATH_CAP];
	int r;
	if ((r = u64_attr(rv, REF_SEND_A_FILE_OFFSET, "file_offset", &off)) ||
	    (r = u64_attr(rv, REF_SEND_A_CLONE_LEN, "clone_len", &len)) ||
	    (r = u64_attr(rv, REF_SEND_A_CLONE_OFFSET, "clone_offset", &src_off)) ||
	    (r = need(rv, ref_send_uuid(rv->c, REF_SEND_A_CLONE_UUID, uuid), "clone_uuid")) ||
	    (r = str_attr(rv, REF_SEND_A_CLONE_PATH, "clone_path", rel, sizeof(rel))))
		return r;
	if (!inside(rel) || !*rel)
		return fail(rv, EINVAL, "clone_path '%s' is not a plain path inside a subvolume", rel);
	if (!memcmp(uuid, rv->uuid, 16))
		memcpy(base, rv->sub, sizeof(base));
	else if ((r = find_subvol(rv, uuid, base, sizeof(base))) == -ENOENT)
		return fail(rv, ENOENT, "%s: cannot find the clone source's subvolume", path);
	else if (r)
		return op_fail(rv, r, path);
	if ((size_t)snprintf(src, sizeof(src), "%s/%s", base, rel) >= sizeof(src))
		return fail(rv, ENAMETOOLONG, "%s/%s is too long", base, rel);
	struct ref_ino si, di;
	struct ref_stat ss;
	if ((r = ref_lookup_path(rv->fs, src, false, &si)) || (r = ref_stat(rv->fs, &si, &ss)))
		return fail(rv, -r, "%s: the source %s", path, ref_error(rv->fs));
	if ((r = ref_lookup_path(rv->fs, path, false, &di)))
		return op_fail(rv, r, path);
	/* the kernel's clone checks: inside the source, no overlap in one file */
	if (src_off > ss.size || len > ss.size - src_off)
		return fail(rv, EINVAL, "%s: the range [%llu, +%llu) is past the end of %s", path,
			    (unsigned long long)src_off, (unsigned long long)len, src);
	if (si.subvol == di.subvol && si.ino == di.ino && off < src_off + len && src_off < off + len)
		return fail(rv, EINVAL, "%s: overlapping ranges within one file", path);
	/* BTRFS_IOC_CLONE_RANGE, as btrfs receive calls it */
	if ((r = ref_clone_range(rv->fs, src, src_off, len, path, off)))
		return op_fail(rv, r, path);
	if (rv->st)
		rv->st->bytes_written += len;
	return 0;
}

/* BTRFS_ENCODED_IO_COMPRESSION_*: zlib, zstd, lzo with 4 KiB sectors. */
static int encoded_type(uint32_t c, uint8_t *type)
{
	switch (c) {
	case 1: *type = REF_COMPRESS_ZLIB; return 0;
	case 2: *type = REF_COMPRESS_ZSTD; return 0;
	case 3: *type = REF_COMPRESS_LZO; return 0;
	default: return -EOPNOTSUPP;
	}
}

/* encoded_write: decompressed, then its part of the file written. */
static int do_encoded(struct recv *rv, const char *path)
{
	uint64_t off, file_len, ulen, uoff;
	uint32_t comp = 0, enc = 0;
	const uint8_t *d;
	uint32_t dlen;
	uint8_t type;
	int r;
	if ((r = u64_attr(rv, REF_SEND_A_FILE_OFFSET, "file_offset", &off)) ||
	    (r = u64_attr(rv, REF_SEND_A_UNENCODED_FILE_LEN, "unencoded_file_len", &file_len)) ||
	    (r = u64_attr(rv, REF_SEND_A_UNENCODED_LEN, "unencoded_len", &ulen)) ||
	    (r = u64_attr(rv, REF_SEND_A_UNENCODED_OFFSET, "unencoded_offset", &uoff)) ||
	    (r = need(rv, ref_send_bytes(rv->c, REF_SEND_A_DATA, &d, &dlen), "data")))
		return r;
	if ((r = ref_send_u32(rv->c, REF_SEND_A_COMPRESSION, &comp)) && r != -ENODATA)
		return need(rv, r, "compression");
	if ((r = ref_send_u32(rv->c, REF_SEND_A_ENCRYPTION, &enc)) && r != -ENODATA)
		return need(rv, r, "encryption");
	if (enc)
		return fail(rv, EOPNOTSUPP, "%s: encryption %u", path, enc);
	if (ulen > REF_COMPRESS_MAX_RAM || uoff > ulen || file_len > ulen - uoff)
		return fail(rv, EINVAL, "%s: unencoded offset %llu and length %llu outside %llu bytes",
			    path, (unsigned long long)uoff, (unsigned long long)file_len,
			    (unsigned long long)ulen);
	if (comp == 0)
		return dlen < uoff + file_len
			       ? fail(rv, EINVAL, "%s: %u bytes of data for %llu", path, dlen,
				      (unsigned long long)(uoff + file_len))
			       : write_all(rv, path, d + uoff, file_len, off);
	if (encoded_type(comp, &type))
		return fail(rv, EOPNOTSUPP, "%s: compression %u", path, comp);
	uint8_t *out = calloc(1, ulen ? ulen : 1);
	if (!out)
		return fail(rv, ENOMEM, "out of memory");
	char why[200] = "";
	ssize_t got = ref_decompress(type, d, dlen, out, ulen, 4096, why, sizeof(why));
	if (got < 0) {
		r = fail(rv, EIO, "%s: the data does not decompress: %s", path, why);
	} else {
		/* a short stream leaves zeros, as the kernel reads it (the
		 * decoder may have written past what it counts) */
		memset(out + got, 0, ulen - (uint64_t)got);
		r = write_all(rv, path, out + uoff, file_len, off);
	}
	free(out);
	return r;
}

static int do_xattr(struct recv *rv, const char *path, bool set)
{
	char name[256];
	const uint8_t *v = NULL;
	uint32_t vlen = 0;
	int r = str_attr(rv, REF_SEND_A_XATTR_NAME, "xattr_name", name, sizeof(name));
	if (r)
		return r;
	if (!set)
		r = ref_lremovexattr(rv->fs, path, name);
	else if ((r = ref_send_bytes(rv->c, REF_SEND_A_XATTR_DATA, &v, &vlen)))
		return need(rv, r, "xattr_data");
	else {
		/* a chown drops file capabilities: receive keeps them for after it */
		if (!strcmp(name, "security.capability")) {
			if (vlen > sizeof(rv->caps))
				return fail(rv, E2BIG, "%s: capabilities of %u bytes", path, vlen);
			memcpy(rv->caps, v, vlen);
			rv->caps_len = vlen;
			snprintf(rv->caps_path, sizeof(rv->caps_path), "%s", path);
		}
		r = ref_lsetxattr(rv->fs, path, name, v, vlen, 0);
	}
	return r ? op_fail(rv, r, path) : 0;
}

static int do_chown(struct recv *rv, const char *path)
{
	uint64_t uid, gid;
	int r;
	if ((r = u64_attr(rv, REF_SEND_A_UID, "uid", &uid)) ||
	    (r = u64_attr(rv, REF_SEND_A_GID, "gid", &gid)))
		return r;
	if (uid > UINT32_MAX - 1 || gid > UINT32_MAX - 1)
		return fail(rv, EINVAL, "%s: uid %llu gid %llu", path, (unsigned long long)uid,
			    (unsigned long long)gid);
	if ((r = ref_lchown(rv->fs, path, (uint32_t)uid, (uint32_t)gid)))
		return op_fail(rv, r, path);
	/* btrfs-progs 6.2 sets the kept value on whatever file the next chown
	 * is for; here only on the file it came from (a stream that sets a
	 * file's capabilities without chowning it does not give them to the
	 * next file chowned) */
	if (rv->caps_len && !strcmp(rv->caps_path, path)) {
		r = ref_lsetxattr(rv->fs, path, "security.capability", rv->caps, rv->caps_len, 0);
		rv->caps_len = 0;
		if (r)
			return op_fail(rv, r, path);
	}
	rv->caps_len = 0;
	return 0;
}

static int time_attr(struct recv *rv, int type, const char *what, struct timespec *t)
{
	int64_t sec;
	uint32_t nsec;
	int r = need(rv, ref_send_time(rv->c, type, &sec, &nsec), what);
	if (!r && nsec >= 1000000000u)
		r = fail(rv, EINVAL, "%s nanoseconds %u", what, nsec);
	if (!r)
		*t = (struct timespec){ .tv_sec = (time_t)sec, .tv_nsec = nsec };
	return r;
}

/* Commands on one path of the subvolume. */
static int apply_path_cmd(struct recv *rv, uint16_t cmd)
{
	char p[PATH_CAP], q[PATH_CAP];
	uint64_t a, b;
	uint32_t m;
	int r = path_attr(rv, REF_SEND_A_PATH, "path", p);
	if (r)
		return r;
	switch (cmd) {
	case REF_SEND_C_MKFILE: r = ref_create(rv->fs, p, 0600); break;
	case REF_SEND_C_MKDIR: r = ref_mkdir(rv->fs, p, 0700); break;
	case REF_SEND_C_MKNOD:
		if ((r = u64_attr(rv, REF_SEND_A_MODE, "mode", &a)) ||
		    (r = u64_attr(rv, REF_SEND_A_RDEV, "rdev", &b)))
			return r;
		if (!S_ISCHR(a) && !S_ISBLK(a) && !S_ISFIFO(a) && !S_ISSOCK(a))
			return fail(rv, EINVAL, "%s: mode %#llo is no device, fifo or socket", p,
				    (unsigned long long)a);
		r = ref_mknod(rv->fs, p, (uint32_t)(a & S_IFMT), b);
		break;
	case REF_SEND_C_MKFIFO: r = ref_mknod(rv->fs, p, S_IFIFO | 0600, 0); break;
	case REF_SEND_C_MKSOCK: r = ref_mknod(rv->fs, p, S_IFSOCK | 0600, 0); break;
	case REF_SEND_C_SYMLINK:
		if ((r = str_attr(rv, REF_SEND_A_PATH_LINK, "path_link", q, sizeof(q))))
			return r;
		r = ref_symlink(rv->fs, q, p);
		break;
	case REF_SEND_C_RENAME:
		if ((r = path_attr(rv, REF_SEND_A_PATH_TO, "path_to", q)))
			return r;
		r = ref_rename(rv->fs, p, q, 0);
		break;
	case REF_SEND_C_LINK: /* path: the new name; path_link: the existing one */
		if ((r = path_attr(rv, REF_SEND_A_PATH_LINK, "path_link", q)))
			return r;
		r = ref_link(rv->fs, q, p);
		break;
	case REF_SEND_C_UNLINK: r = ref_unlink(rv->fs, p); break;
	case REF_SEND_C_RMDIR: r = ref_rmdir(rv->fs, p); break;
	case REF_SEND_C_SET_XATTR: return do_xattr(rv, p, true);
	case REF_SEND_C_REMOVE_XATTR: return do_xattr(rv, p, false);
	case REF_SEND_C_WRITE: {
		const uint8_t *d;
		uint32_t len;
		if ((r = u64_attr(rv, REF_SEND_A_FILE_OFFSET, "file_offset", &a)) ||
		    (r = need(rv, ref_send_bytes(rv->c, REF_SEND_A_DATA, &d, &len), "data")))
			return r;
		return write_all(rv, p, d, len, a);
	}
	case REF_SEND_C_CLONE: return do_clone(rv, p);
	case REF_SEND_C_TRUNCATE:
		if ((r = u64_attr(rv, REF_SEND_A_SIZE, "size", &a)))
			return r;
		r = ref_truncate(rv->fs, p, a);
		break;
	case REF_SEND_C_CHMOD:
		if ((r = u64_attr(rv, REF_SEND_A_MODE, "mode", &a)))
			return r;
		r = ref_chmod(rv->fs, p, (uint32_t)(a & 07777));
		break;
	case REF_SEND_C_CHOWN: return do_chown(rv, p);
	case REF_SEND_C_UTIMES: {
		struct timespec t[2];
		if ((r = time_attr(rv, REF_SEND_A_ATIME, "atime", &t[0])) ||
		    (r = time_attr(rv, REF_SEND_A_MTIME, "mtime", &t[1])))
			return r;
		r = ref_lutimes(rv->fs, p, t);
		break;
	}
	case REF_SEND_C_UPDATE_EXTENT: return 0; /* a --no-data stream: nothing to write */
	case REF_SEND_C_FALLOCATE:
		if ((r = need(rv, ref_send_u32(rv->c, REF_SEND_A_FALLOCATE_MODE, &m),
			      "fallocate_mode")) ||
		    (r = u64_attr(rv, REF_SEND_A_FILE_OFFSET, "file_offset", &a)) ||
		    (r = u64_attr(rv, REF_SEND_A_SIZE, "size", &b)))
			return r;
		r = ref_fallocate(rv->fs, p, (int)m, a, b);
		break;
	case REF_SEND_C_FILEATTR: return 0; /* ignored, as btrfs-progs 6.2 ignores it */
	case REF_SEND_C_ENCODED_WRITE: return do_encoded(rv, p);
	default: return fail(rv, EOPNOTSUPP, "%s: not supported (ref has no fs-verity)", p);
	}
	return r ? op_fail(rv, r, p) : 0;
}

/* One command: 0, 1 after an end command, or -errno. */
static int apply(struct recv *rv, const struct ref_send_cmd *c)
{
	rv->c = c;
	if (rv->st)
		rv->st->commands++;
	switch (c->cmd) {
	case REF_SEND_C_SUBVOL: return begin_subvol(rv, false);
	case REF_SEND_C_SNAPSHOT: return begin_subvol(rv, true);
	case REF_SEND_C_END: return 1;
	default: return apply_path_cmd(rv, c->cmd);
	}
}

int ref_receive(ref_fs *fs, const char *dir, const uint8_t *buf, size_t len,
		const struct ref_receive_opts *o, struct ref_receive_stats *st, char *err,
		size_t errlen)
{
	struct recv *rv = calloc(1, sizeof(*rv));
	if (!rv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*rv = (struct recv){ .fs = fs, .o = o, .st = st, .err = err, .errlen = errlen };
	struct ref_stat ds;
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	int r = 0;
	if (dl >= sizeof(rv->dir))
		r = -ENAMETOOLONG;
	else if ((r = ref_stat_path(fs, dir, true, &ds)) == 0 && !S_ISDIR(ds.mode))
		r = -ENOTDIR;
	if (r) {
		snprintf(err, errlen, "%s: %s", dir, r == -ENOTDIR || r == -ENAMETOOLONG ? strerror(-r)
										  : ref_error(fs));
		free(rv);
		return r;
	}
	memcpy(rv->dir, dir, dl);
	rv->dir[dl == 1 && dir[0] == '/' ? 0 : dl] = 0; /* "/" joins as "" */
	struct ref_send_cmd *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
	}
	/* Streams one after another until the input ends (or, with
	 * honor_end, the first end command), as btrfs receive reads them. */
	for (uint64_t off = 0; c && !(off == len && rv->streams);) {
		uint32_t version;
		if (off == len) {
			r = -EINVAL;
			snprintf(err, errlen, "empty stream is not considered valid");
		} else if ((r = ref_send_header(buf + off, len - off, &version, err, errlen)) && off) {
			char why[300];
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "offset %llu: %s", (unsigned long long)off, why);
		}
		if (r)
			break;
		off += REF_SEND_HEADER;
		rv->caps_len = 0;
		rv->streams++;
		c->cmd = 0;
		while ((r = ref_send_next(buf, len, version, &off, c, err, errlen)) == 0 &&
		       (r = apply(rv, c)) == 0)
			;
		if (r == 1 && c->cmd != REF_SEND_C_END) { /* ref_send_next: no byte left */
			snprintf(err, errlen, "offset %llu: the stream ends without an end command",
				 (unsigned long long)off);
			r = -EBADMSG;
		}
		if (r < 0 || (r = finish(rv)) || (o && o->honor_end))
			break;
	}
	if (st)
		st->streams = rv->streams;
	free(c);
	free(rv);
	return r;
}
