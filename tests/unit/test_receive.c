/*
 * test_receive.c - ref_receive (ref/send/send_receive.c) on streams built
 * here command by command: a full stream builds the tree it describes and
 * ends received and read-only; an incremental one finds its parent by
 * received UUID; clones and encoded writes land their bytes; file
 * capabilities survive the chown after them; the subvolume ioctls'
 * errnos; bad streams (cut at every length, a wrong crc, paths that leave
 * the subvolume, a missing parent) refused with the offset and the file
 * system left consistent; a crash at any request of a receive leaving a
 * consistent file system whose subvolume is received only when whole; the
 * oracle's model of receive (traces/model_receive.c) ending where ref does
 * on clones at other offsets, within one file and from the parent.
 * The kernel's streams: tests/interop/test_receive.sh.
 */
#include "ref/compress.h"
#include "ref/csum.h"
#include "ref/send.h"
#include "tests/unit/testutil.h"
#include "tests/unit/wrutil.h"
#include "traces/model.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- A stream writer ---- */

struct sb {
	uint8_t *b;
	size_t len, cap, cmd_at;
	uint32_t version;
};

static void put(struct sb *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2 + 256;
		s->b = realloc(s->b, s->cap);
		cr_assert(s->b);
	}
	memcpy(s->b + s->len, p, n);
	s->len += n;
}

static void put_le(struct sb *s, uint64_t v, int bytes)
{
	uint8_t b[8];
	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(s, b, (size_t)bytes);
}

static void sb_begin(struct sb *s, uint32_t version)
{
	put(s, "btrfs-stream", 13);
	put_le(s, version, 4);
	s->version = version;
}

static void cmd(struct sb *s, uint16_t c)
{
	s->cmd_at = s->len;
	put_le(s, 0, 4);
	put_le(s, c, 2);
	put_le(s, 0, 4);
}

static void done(struct sb *s)
{
	uint8_t *h = s->b + s->cmd_at;
	uint32_t plen = (uint32_t)(s->len - s->cmd_at - 10);
	for (int i = 0; i < 4; i++)
		h[i] = (uint8_t)(plen >> (8 * i));
	uint32_t crc = ref_crc32c_raw(0, h, s->len - s->cmd_at);
	for (int i = 0; i < 4; i++)
		h[6 + i] = (uint8_t)(crc >> (8 * i));
}

static void attr(struct sb *s, uint16_t t, const void *v, size_t n)
{
	put_le(s, t, 2);
	put_le(s, n, 2);
	put(s, v, n);
}

static void a64(struct sb *s, uint16_t t, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	attr(s, t, b, 8);
}

static void astr(struct sb *s, uint16_t t, const char *v)
{
	attr(s, t, v, strlen(v));
}

static void atime(struct sb *s, uint16_t t, uint64_t sec, uint32_t nsec)
{
	uint8_t b[12];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(sec >> (8 * i));
	for (int i = 0; i < 4; i++)
		b[8 + i] = (uint8_t)(nsec >> (8 * i));
	attr(s, t, b, 12);
}

static void adata(struct sb *s, const void *d, size_t n)
{
	if (s->version >= 2) { /* the rest of the command, no length */
		put_le(s, REF_SEND_A_DATA, 2);
		put(s, d, n);
	} else {
		attr(s, REF_SEND_A_DATA, d, n);
	}
}

/* One command on a path with its u64 attributes (type, value pairs, 0 ends). */
static void path_cmd(struct sb *s, uint16_t c, const char *path, ...)
{
	cmd(s, c);
	astr(s, REF_SEND_A_PATH, path);
	va_list ap;
	va_start(ap, path);
	for (int t; (t = va_arg(ap, int));)
		a64(s, (uint16_t)t, va_arg(ap, uint64_t));
	va_end(ap);
	done(s);
}

static const uint8_t U1[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t U2[16] = { 0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void subvol(struct sb *s, const char *name, const uint8_t *uuid, uint64_t ctransid)
{
	cmd(s, REF_SEND_C_SUBVOL);
	astr(s, REF_SEND_A_PATH, name);
	attr(s, REF_SEND_A_UUID, uuid, 16);
	a64(s, REF_SEND_A_CTRANSID, ctransid);
	done(s);
}

/* A snapshot command: NAME, its uuid and ctransid, the parent's. */
static void snapshot(struct sb *s, const char *name, const uint8_t *uuid, uint64_t ctransid,
		     const uint8_t *parent, uint64_t parent_ctransid)
{
	cmd(s, REF_SEND_C_SNAPSHOT);
	astr(s, REF_SEND_A_PATH, name);
	attr(s, REF_SEND_A_UUID, uuid, 16);
	a64(s, REF_SEND_A_CTRANSID, ctransid);
	attr(s, REF_SEND_A_CLONE_UUID, parent, 16);
	a64(s, REF_SEND_A_CLONE_CTRANSID, parent_ctransid);
	done(s);
}

/* A clone command: len bytes of SRC (in the subvolume of uuid) at src_off
 * to PATH at off. */
static void clone_to(struct sb *s, const char *path, uint64_t off, uint64_t len,
		     const uint8_t *uuid, uint64_t ctransid, const char *src, uint64_t src_off)
{
	cmd(s, REF_SEND_C_CLONE);
	astr(s, REF_SEND_A_PATH, path);
	a64(s, REF_SEND_A_FILE_OFFSET, off);
	a64(s, REF_SEND_A_CLONE_LEN, len);
	attr(s, REF_SEND_A_CLONE_UUID, uuid, 16);
	a64(s, REF_SEND_A_CLONE_CTRANSID, ctransid);
	astr(s, REF_SEND_A_CLONE_PATH, src);
	a64(s, REF_SEND_A_CLONE_OFFSET, src_off);
	done(s);
}

static void end(struct sb *s)
{
	cmd(s, REF_SEND_C_END);
	done(s);
}

/* Writes of at most 48 KiB each, as the kernel's send cuts them (a v1
 * attribute holds less than 64 KiB). */
static void write_at(struct sb *s, const char *path, uint64_t off, const uint8_t *d, size_t n)
{
	for (size_t at = 0; at < n; at += 49152) {
		size_t k = n - at < 49152 ? n - at : 49152;
		cmd(s, REF_SEND_C_WRITE);
		astr(s, REF_SEND_A_PATH, path);
		a64(s, REF_SEND_A_FILE_OFFSET, off + at);
		adata(s, d + at, k);
		done(s);
	}
}

static void two_paths(struct sb *s, uint16_t c, const char *p, uint16_t t2, const char *q)
{
	cmd(s, c);
	astr(s, REF_SEND_A_PATH, p);
	astr(s, t2, q);
	done(s);
}

/* A full stream of subvolume "vol" as the kernel orders one: each inode
 * made under its orphan name and renamed, then its data and attributes,
 * the parent's times last. */
static void full_stream(struct sb *s, const uint8_t *data, size_t n)
{
	sb_begin(s, 1);
	subvol(s, "vol", U1, 7);
	path_cmd(s, REF_SEND_C_MKDIR, "o257-7-0", REF_SEND_A_INO, (uint64_t)257, 0);
	two_paths(s, REF_SEND_C_RENAME, "o257-7-0", REF_SEND_A_PATH_TO, "dir");
	path_cmd(s, REF_SEND_C_MKFILE, "o258-7-0", REF_SEND_A_INO, (uint64_t)258, 0);
	two_paths(s, REF_SEND_C_RENAME, "o258-7-0", REF_SEND_A_PATH_TO, "dir/f");
	write_at(s, "dir/f", 0, data, n);
	cmd(s, REF_SEND_C_SET_XATTR);
	astr(s, REF_SEND_A_PATH, "dir/f");
	astr(s, REF_SEND_A_XATTR_NAME, "user.k");
	attr(s, REF_SEND_A_XATTR_DATA, "v\0x", 3);
	done(s);
	path_cmd(s, REF_SEND_C_TRUNCATE, "dir/f", REF_SEND_A_SIZE, (uint64_t)n + 5000, 0);
	path_cmd(s, REF_SEND_C_CHOWN, "dir/f", REF_SEND_A_UID, (uint64_t)1000, REF_SEND_A_GID,
		 (uint64_t)100, 0);
	path_cmd(s, REF_SEND_C_CHMOD, "dir/f", REF_SEND_A_MODE, (uint64_t)0640, 0);
	cmd(s, REF_SEND_C_UTIMES);
	astr(s, REF_SEND_A_PATH, "dir/f");
	atime(s, REF_SEND_A_ATIME, 1000, 1);
	atime(s, REF_SEND_A_MTIME, 2000, 2);
	atime(s, REF_SEND_A_CTIME, 3000, 3);
	done(s);
	two_paths(s, REF_SEND_C_LINK, "dir/h", REF_SEND_A_PATH_LINK, "dir/f");
	cmd(s, REF_SEND_C_SYMLINK);
	astr(s, REF_SEND_A_PATH, "o259-7-0");
	a64(s, REF_SEND_A_INO, 259);
	astr(s, REF_SEND_A_PATH_LINK, "dir/f");
	done(s);
	two_paths(s, REF_SEND_C_RENAME, "o259-7-0", REF_SEND_A_PATH_TO, "l");
	path_cmd(s, REF_SEND_C_CHOWN, "l", REF_SEND_A_UID, (uint64_t)7, REF_SEND_A_GID, (uint64_t)8,
		 0);
	cmd(s, REF_SEND_C_UTIMES);
	astr(s, REF_SEND_A_PATH, "l");
	atime(s, REF_SEND_A_ATIME, 4000, 0);
	atime(s, REF_SEND_A_MTIME, 5000, 0);
	atime(s, REF_SEND_A_CTIME, 5000, 0);
	done(s);
	path_cmd(s, REF_SEND_C_MKFIFO, "o260-7-0", REF_SEND_A_INO, (uint64_t)260, 0);
	two_paths(s, REF_SEND_C_RENAME, "o260-7-0", REF_SEND_A_PATH_TO, "p");
	path_cmd(s, REF_SEND_C_MKNOD, "o261-7-0", REF_SEND_A_MODE, (uint64_t)(S_IFCHR | 0644),
		 REF_SEND_A_RDEV, (uint64_t)0x103, 0);
	two_paths(s, REF_SEND_C_RENAME, "o261-7-0", REF_SEND_A_PATH_TO, "c");
	path_cmd(s, REF_SEND_C_CHMOD, "", REF_SEND_A_MODE, (uint64_t)0751, 0);
	end(s);
}

static int receive(ref_fs *fs, const char *dir, const struct sb *s, struct ref_receive_stats *st,
		   char *err)
{
	return ref_receive(fs, dir, s->b, s->len, NULL, st, err, 512);
}

static struct ref_stat lstat_of(ref_fs *fs, const char *path)
{
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, path, false, &st));
	return st;
}

static void expect_bytes(ref_fs *fs, const char *path, const uint8_t *want, size_t len)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, false, &ino));
	uint8_t *got = malloc(len + 1);
	cr_assert_eq(ref_pread(fs, &ino, got, len + 1, 0), (ssize_t)len, "%s: size", path);
	cr_assert(!memcmp(got, want, len), "%s: content", path);
	free(got);
}

static struct ref_subvol_info info_at(ref_fs *fs, const char *path)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, true, &ino));
	cr_assert_eq(ino.ino, BTRFS_FIRST_FREE_OBJECTID, "%s is no subvolume", path);
	struct ref_subvol_info si;
	WU_OK(fs, ref_subvol_info(fs, ino.subvol, &si));
	return si;
}

Test(receive, full_stream_builds_the_tree_received_and_read_only)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	size_t n = 70000;
	uint8_t *data = tu_pat(n, 5);
	struct sb s = { 0 };
	full_stream(&s, data, n);
	struct ref_receive_stats st = { 0 };
	char err[512] = "";
	WU_OK(fs, ref_mkdir(fs, "/in", 0755));
	cr_assert_eq(receive(fs, "/in", &s, &st, err), 0, "%s", err);
	cr_assert_eq(st.streams, 1);
	cr_assert_eq(st.subvols, 1);
	cr_assert_eq(st.bytes_written, n);

	uint8_t *want = calloc(1, n + 5000);
	memcpy(want, data, n);
	expect_bytes(fs, "/in/vol/dir/f", want, n + 5000);
	struct ref_stat f = lstat_of(fs, "/in/vol/dir/f");
	cr_assert_eq(f.mode, S_IFREG | 0640);
	cr_assert_eq(f.uid, 1000);
	cr_assert_eq(f.gid, 100);
	cr_assert_eq(f.nlink, 2);
	cr_assert_eq(f.atime.tv_sec, 1000);
	cr_assert_eq(f.mtime.tv_sec, 2000);
	cr_assert_eq(f.mtime.tv_nsec, 2);
	char v[8];
	cr_assert_eq(ref_getxattr(fs, "/in/vol/dir/f", "user.k", v, sizeof(v)), 3);
	cr_assert(!memcmp(v, "v\0x", 3));
	/* the symlink's own owner and times, its target untouched */
	struct ref_stat l = lstat_of(fs, "/in/vol/l");
	cr_assert(S_ISLNK(l.mode));
	cr_assert_eq(l.uid, 7);
	cr_assert_eq(l.mtime.tv_sec, 5000);
	cr_assert_eq(lstat_of(fs, "/in/vol/p").mode, S_IFIFO | 0600);
	struct ref_stat c = lstat_of(fs, "/in/vol/c");
	cr_assert(S_ISCHR(c.mode));
	/* the kernel's MKDEV(1, 3) */
	cr_assert_eq(c.rdev, (1u << 20) | 3, "rdev %#llx", (unsigned long long)c.rdev);
	cr_assert_eq(lstat_of(fs, "/in/vol").mode, S_IFDIR | 0751);

	struct ref_subvol_info si = info_at(fs, "/in/vol");
	cr_assert(!memcmp(si.received_uuid, U1, 16));
	cr_assert_eq(si.stransid, 7);
	cr_assert_gt(si.rtransid, 0);
	cr_assert_gt(si.rtime.tv_sec, 0);
	cr_assert(si.flags & BTRFS_ROOT_SUBVOL_RDONLY);
	WU_ERR(fs, ref_create(fs, "/in/vol/new", 0644), EROFS);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(want);
	free(data);
	free(s.b);
	sim_volume_close(vol);
}

/* A full stream, then a snapshot of it (found by its received uuid) with a
 * change, a clone out of the parent and a v2 encoded write. */
Test(receive, incremental_finds_its_parent_and_clones_copy)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	size_t n = 70000;
	uint8_t *data = tu_pat(n, 9);
	struct sb s = { 0 };
	full_stream(&s, data, n);
	struct sb i = { 0 };
	sb_begin(&i, 2);
	snapshot(&i, "vol2", U2, 9, U1, 7);
	path_cmd(&i, REF_SEND_C_UNLINK, "dir/h", 0);
	path_cmd(&i, REF_SEND_C_MKFILE, "o262-9-0", REF_SEND_A_INO, (uint64_t)262, 0);
	two_paths(&i, REF_SEND_C_RENAME, "o262-9-0", REF_SEND_A_PATH_TO, "g");
	clone_to(&i, "g", 0, 65536, U1, 7, "dir/f", 4096);
	/* 8 KiB of text, zlib-encoded as the kernel's encoded read gives it */
	uint8_t plain[8192], enc[8192];
	for (size_t k = 0; k < sizeof(plain); k++)
		plain[k] = "receive "[k % 8];
	ssize_t el = ref_compress(REF_COMPRESS_ZLIB, 0, plain, sizeof(plain), enc, sizeof(enc), 4096);
	cr_assert_gt(el, 0);
	cmd(&i, REF_SEND_C_ENCODED_WRITE);
	astr(&i, REF_SEND_A_PATH, "g");
	a64(&i, REF_SEND_A_FILE_OFFSET, 65536);
	a64(&i, REF_SEND_A_UNENCODED_FILE_LEN, 8000);
	a64(&i, REF_SEND_A_UNENCODED_LEN, 8192);
	a64(&i, REF_SEND_A_UNENCODED_OFFSET, 100);
	uint32_t one = htole32(1);
	attr(&i, REF_SEND_A_COMPRESSION, &one, 4);
	adata(&i, enc, (size_t)el);
	done(&i);
	end(&i);
	/* both in one input, as btrfs send A B writes them */
	put(&s, i.b, i.len);
	struct ref_receive_stats st = { 0 };
	char err[512] = "";
	cr_assert_eq(receive(fs, "/", &s, &st, err), 0, "%s", err);
	cr_assert_eq(st.streams, 2);
	cr_assert_eq(st.subvols, 2);
	WU_ERR(fs, ref_stat_path(fs, "/vol2/dir/h", false, &(struct ref_stat){ 0 }), ENOENT);
	cr_assert_eq(lstat_of(fs, "/vol2/dir/f").nlink, 1);
	uint8_t *want = calloc(1, 65536 + 8000);
	memcpy(want, data + 4096, 65536);
	memcpy(want + 65536, plain + 100, 8000);
	expect_bytes(fs, "/vol2/g", want, 65536 + 8000);
	struct ref_subvol_info a = info_at(fs, "/vol"), b = info_at(fs, "/vol2");
	cr_assert(!memcmp(b.received_uuid, U2, 16));
	cr_assert(!memcmp(b.parent_uuid, a.uuid, 16));
	cr_assert(b.flags & BTRFS_ROOT_SUBVOL_RDONLY);
	/* -e: only the first of the two */
	WU_OK(fs, ref_mkdir(fs, "/e", 0755));
	struct ref_receive_opts o = { .honor_end = true };
	memset(&st, 0, sizeof(st));
	cr_assert_eq(ref_receive(fs, "/e", s.b, s.len, &o, &st, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(st.streams, 1);
	WU_ERR(fs, ref_stat_path(fs, "/e/vol2", false, &(struct ref_stat){ 0 }), ENOENT);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(want);
	free(data);
	free(s.b);
	free(i.b);
	sim_volume_close(vol);
}

/* The oracle's model follows clones at other offsets (a range of one file
 * into another and into itself, one from the parent subvolume), writes
 * over them, a truncate and the owner of a symlink: it must describe what
 * ref_receive made (a model that kept each extent's offset would not:
 * checked by hand, 2026-12-06). */
Test(receive, the_model_follows_clones_at_other_offsets)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	size_t n = 70000;
	uint8_t *data = tu_pat(n, 11), over[3000];
	memset(over, 0x5a, sizeof(over));
	struct sb s = { 0 };
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 7);
	path_cmd(&s, REF_SEND_C_MKFILE, "f", REF_SEND_A_INO, (uint64_t)257, 0);
	write_at(&s, "f", 0, data, n);
	path_cmd(&s, REF_SEND_C_MKFILE, "g", REF_SEND_A_INO, (uint64_t)258, 0);
	clone_to(&s, "g", 8192, 40960, U1, 7, "f", 4096); /* into another file, elsewhere */
	clone_to(&s, "f", 73728, 8192, U1, 7, "f", 0);	   /* into itself */
	write_at(&s, "g", 10000, over, sizeof(over));
	path_cmd(&s, REF_SEND_C_TRUNCATE, "g", REF_SEND_A_SIZE, (uint64_t)45000, 0);
	cmd(&s, REF_SEND_C_SYMLINK);
	astr(&s, REF_SEND_A_PATH, "l");
	a64(&s, REF_SEND_A_INO, 259);
	astr(&s, REF_SEND_A_PATH_LINK, "f");
	done(&s);
	path_cmd(&s, REF_SEND_C_CHOWN, "l", REF_SEND_A_UID, (uint64_t)7, REF_SEND_A_GID, (uint64_t)8,
		 0);
	path_cmd(&s, REF_SEND_C_CHMOD, "f", REF_SEND_A_MODE, (uint64_t)0640, 0);
	end(&s);
	struct sb i = { 0 };
	sb_begin(&i, 1);
	snapshot(&i, "vol2", U2, 9, U1, 7);
	clone_to(&i, "f", 12288, 4096, U1, 7, "g", 8192); /* from the parent, to a third offset */
	end(&i);
	char err[512] = "";
	WU_OK(fs, ref_mkdir(fs, "/in", 0755));
	cr_assert_eq(receive(fs, "/in", &s, NULL, err), 0, "%s", err);
	cr_assert_eq(receive(fs, "/in", &i, NULL, err), 0, "%s", err);
	struct model *m = model_new();
	struct wl_op op = { .kind = WL_MKDIR, .path = "/in", .mode = 0755 };
	cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), 0, "%s", err);
	op = (struct wl_op){ .kind = WL_RECEIVE, .path = "/in", .value = s.b, .vlen = s.len };
	cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), 0, "%s", err);
	op.value = i.b;
	op.vlen = i.len;
	cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), 0, "%s", err);
	char *want = wu_manifest(fs, NULL, false), *got = model_describe(m);
	cr_assert_str_eq(got, want);
	free(got);
	model_free(m);
	free(want);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(data);
	free(s.b);
	free(i.b);
	sim_volume_close(vol);
}

/* receive keeps security.capability for after the chown that drops it. */
Test(receive, capabilities_survive_the_chown)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	static const uint8_t cap[20] = { 0, 0, 0, 2, 0x20 };
	struct sb s = { 0 };
	sb_begin(&s, 1);
	subvol(&s, "v", U1, 3);
	path_cmd(&s, REF_SEND_C_MKFILE, "f", REF_SEND_A_INO, (uint64_t)257, 0);
	cmd(&s, REF_SEND_C_SET_XATTR);
	astr(&s, REF_SEND_A_PATH, "f");
	astr(&s, REF_SEND_A_XATTR_NAME, "security.capability");
	attr(&s, REF_SEND_A_XATTR_DATA, cap, sizeof(cap));
	done(&s);
	path_cmd(&s, REF_SEND_C_CHOWN, "f", REF_SEND_A_UID, (uint64_t)5, REF_SEND_A_GID, (uint64_t)5, 0);
	end(&s);
	char err[512];
	cr_assert_eq(receive(fs, "/", &s, NULL, err), 0, "%s", err);
	uint8_t got[32];
	cr_assert_eq(ref_getxattr(fs, "/v/f", "security.capability", got, sizeof(got)), 20);
	cr_assert(!memcmp(got, cap, 20));
	WU_OK(fs, ref_umount(fs));
	free(s.b);
	sim_volume_close(vol);
}

Test(receive, subvolume_flag_ioctls)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_subvol_create(fs, "/s", NULL));
	WU_OK(fs, ref_mkdir(fs, "/s/d", 0755));
	WU_ERR(fs, ref_subvol_set_readonly(fs, "/s/d", true), EINVAL);
	WU_ERR(fs, ref_subvol_set_received(fs, "/s/d", U1, 1, NULL), EINVAL);
	uint64_t rt = 0;
	WU_OK(fs, ref_subvol_set_received(fs, "/s", U1, 42, &rt));
	cr_assert_gt(rt, 0);
	WU_OK(fs, ref_subvol_set_received(fs, "/s", U2, 43, NULL)); /* the uuid tree follows */
	WU_OK(fs, ref_subvol_set_readonly(fs, "/s", true));
	WU_OK(fs, ref_subvol_set_readonly(fs, "/s", true)); /* nothing to change */
	WU_ERR(fs, ref_subvol_set_received(fs, "/s", U1, 1, NULL), EROFS);
	WU_ERR(fs, ref_mkdir(fs, "/s/e", 0755), EROFS);
	struct ref_subvol_info si = info_at(fs, "/s");
	cr_assert(!memcmp(si.received_uuid, U2, 16));
	cr_assert_eq(si.stransid, 43);
	/* a read-only snapshot keeps the received uuid, a writable one drops it */
	WU_OK(fs, ref_snapshot(fs, "/s", "/ro", true, NULL));
	WU_OK(fs, ref_snapshot(fs, "/s", "/rw", false, NULL));
	cr_assert(!memcmp(info_at(fs, "/ro").received_uuid, U2, 16));
	static const uint8_t zero[16];
	cr_assert(!memcmp(info_at(fs, "/rw").received_uuid, zero, 16));
	WU_OK(fs, ref_subvol_set_readonly(fs, "/s", false));
	WU_OK(fs, ref_mkdir(fs, "/s/e", 0755));
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A receive that failed after it began: its subvolume is there, writable,
 * not received; the file system checks clean. */
static void expect_unreceived(ref_fs *fs, const char *path)
{
	struct ref_ino ino;
	if (ref_lookup_path(fs, path, true, &ino))
		return; /* refused before the subvolume was made */
	struct ref_subvol_info si = info_at(fs, path);
	static const uint8_t zero[16];
	cr_assert(!memcmp(si.received_uuid, zero, 16), "%s shows as received", path);
	cr_assert(!(si.flags & BTRFS_ROOT_SUBVOL_RDONLY), "%s is read-only", path);
}

Test(receive, stream_cut_at_every_length)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t data[300];
	memset(data, 'd', sizeof(data));
	struct sb s = { 0 };
	full_stream(&s, data, sizeof(data));
	char err[512], dir[32], sub[48];
	for (size_t cut = 0; cut < s.len; cut++) {
		snprintf(dir, sizeof(dir), "/t%zu", cut);
		WU_OK(fs, ref_mkdir(fs, dir, 0755));
		err[0] = 0;
		int r = ref_receive(fs, dir, s.b, cut, NULL, NULL, err, sizeof(err));
		cr_assert_lt(r, 0, "cut %zu accepted", cut);
		cr_assert(err[0], "cut %zu: no message", cut);
		if (cut >= REF_SEND_HEADER)
			cr_assert(strstr(err, "offset "), "cut %zu: %s", cut, err);
		snprintf(sub, sizeof(sub), "%s/vol", dir);
		expect_unreceived(fs, sub);
	}
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(s.b);
	sim_volume_close(vol);
}

/* A stream with one bad command after a good start: refused with errno
 * `want` and the offset, the subvolume left writable and unreceived. */
static void expect_refused(ref_fs *fs, const char *dir, struct sb *s, int want, const char *msg)
{
	char err[512] = "";
	WU_OK(fs, ref_mkdir(fs, dir, 0755));
	int r = ref_receive(fs, dir, s->b, s->len, NULL, NULL, err, sizeof(err));
	cr_assert_eq(r, -want, "%s: %d (%s), wanted %s", dir, r, err, strerror(want));
	cr_assert(strstr(err, msg), "%s: '%s' lacks '%s'", dir, err, msg);
	char sub[64];
	snprintf(sub, sizeof(sub), "%s/vol", dir);
	expect_unreceived(fs, sub);
	free(s->b);
	*s = (struct sb){ 0 };
}

Test(receive, bad_streams_refused_with_the_offset)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	struct sb s = { 0 };
	const char *escapes[] = { "../x", "/abs", "a//b", "a/./b", "d/..", "." };
	for (size_t k = 0; k < sizeof(escapes) / sizeof(*escapes); k++) {
		sb_begin(&s, 1);
		subvol(&s, "vol", U1, 1);
		path_cmd(&s, REF_SEND_C_MKDIR, escapes[k], REF_SEND_A_INO, (uint64_t)257, 0);
		end(&s);
		char dir[16];
		snprintf(dir, sizeof(dir), "/esc%zu", k);
		expect_refused(fs, dir, &s, EINVAL, "not a plain path inside the subvolume");
	}
	sb_begin(&s, 1);
	subvol(&s, "a/b", U1, 1);
	end(&s);
	expect_refused(fs, "/slash", &s, EINVAL, "is not a subvolume name");
	sb_begin(&s, 1);
	path_cmd(&s, REF_SEND_C_MKDIR, "x", REF_SEND_A_INO, (uint64_t)257, 0);
	end(&s);
	expect_refused(fs, "/nosub", &s, EINVAL, "before any subvol");
	sb_begin(&s, 1);
	snapshot(&s, "vol", U2, 2, U2, 1);
	end(&s);
	expect_refused(fs, "/noparent", &s, ENOENT, "cannot find the parent subvolume");
	/* a zero parent uuid is no subvolume's, though every subvolume never
	 * received has a zero received uuid */
	sb_begin(&s, 1);
	static const uint8_t Z[16];
	snapshot(&s, "vol", U2, 2, Z, 1);
	end(&s);
	expect_refused(fs, "/zeroparent", &s, ENOENT, "cannot find the parent subvolume");
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 1);
	path_cmd(&s, REF_SEND_C_MKFILE, "f", REF_SEND_A_INO, (uint64_t)257, 0);
	clone_to(&s, "f", 0, 4096, U2, 1, "f", 0);
	end(&s);
	expect_refused(fs, "/noclone", &s, ENOENT, "cannot find the clone source");
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 1);
	path_cmd(&s, REF_SEND_C_UNLINK, "missing", 0);
	end(&s);
	expect_refused(fs, "/enoent", &s, ENOENT, "unlink: /enoent/vol/missing");
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 1);
	path_cmd(&s, REF_SEND_C_MKFILE, "f", REF_SEND_A_INO, (uint64_t)257, 0);
	s.b[s.len - 3] ^= 1; /* the crc no longer matches */
	end(&s);
	expect_refused(fs, "/crc", &s, EBADMSG, "crc32c mismatch");
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 1);
	path_cmd(&s, REF_SEND_C_MKFILE, "f", REF_SEND_A_INO, (uint64_t)257, 0);
	expect_refused(fs, "/noend", &s, EBADMSG, "ends without an end command");
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 1);
	path_cmd(&s, REF_SEND_C_MKFILE, "f", 0);
	path_cmd(&s, REF_SEND_C_CHOWN, "f", REF_SEND_A_UID, (uint64_t)1, 0);
	end(&s);
	expect_refused(fs, "/noattr", &s, EBADMSG, "no gid attribute");
	sb_begin(&s, 3);
	subvol(&s, "vol", U1, 1);
	path_cmd(&s, REF_SEND_C_ENABLE_VERITY, "", 0);
	end(&s);
	expect_refused(fs, "/verity", &s, EOPNOTSUPP, "fs-verity");
	/* an empty input, into a missing directory */
	char err[512];
	cr_assert_eq(ref_receive(fs, "/", (const uint8_t *)"", 0, NULL, NULL, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "empty stream"));
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 1);
	end(&s);
	cr_assert_eq(ref_receive(fs, "/nodir", s.b, s.len, NULL, NULL, err, sizeof(err)), -ENOENT);
	/* the same name twice: EEXIST, the first untouched */
	WU_OK(fs, ref_mkdir(fs, "/twice", 0755));
	cr_assert_eq(ref_receive(fs, "/twice", s.b, s.len, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ref_receive(fs, "/twice", s.b, s.len, NULL, NULL, err, sizeof(err)), -EEXIST);
	cr_assert(info_at(fs, "/twice/vol").flags & BTRFS_ROOT_SUBVOL_RDONLY);
	free(s.b);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A symlink whose target does not fit one leaf of 4 KiB nodes: refused
 * before anything changes, as the kernel refuses it (ENAMETOOLONG above
 * 3949 bytes); the file system stays writable and clean.  Found by the
 * stream fuzzing harness (ref went read-only half-way through). */
Test(receive, symlink_longer_than_a_small_leaf)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	char target[3951];
	memset(target, 'x', 3950);
	target[3950] = 0;
	struct sb s = { 0 };
	sb_begin(&s, 1);
	subvol(&s, "vol", U1, 1);
	cmd(&s, REF_SEND_C_SYMLINK);
	astr(&s, REF_SEND_A_PATH, "l");
	a64(&s, REF_SEND_A_INO, 257);
	astr(&s, REF_SEND_A_PATH_LINK, target);
	done(&s);
	end(&s);
	char err[512];
	cr_assert_eq(receive(fs, "/", &s, NULL, err), -ENAMETOOLONG, "%s", err);
	cr_assert(strstr(err, "symlink target too long"), "%s", err);
	target[3949] = 0;
	WU_OK(fs, ref_symlink(fs, target, "/vol/fits"));
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(s.b);
	sim_volume_close(vol);
}

/* A crash at any request of a receive: the file system opens and checks
 * clean, and the subvolume shows as received only with all of its content. */
Test(receive, crash_anywhere)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	size_t n = 200000;
	uint8_t *data = tu_pat(n, 3);
	struct sb s = { 0 };
	full_stream(&s, data, n);
	WU_OK(fs, ref_umount(fs));
	sim_volume *base;
	cr_assert_eq(sim_volume_clone(vol, &base), 0);
	char err[512];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	sim_volume_log_clear(vol);
	sim_volume_set_recording(vol, true);
	cr_assert_eq(receive(fs, "/", &s, NULL, err), 0, "%s", err);
	WU_OK(fs, ref_umount(fs));
	size_t nio;
	const struct sim_io *log = sim_volume_log(vol, &nio);
	cr_assert_gt(nio, 10);
	uint8_t *want = calloc(1, n + 5000);
	memcpy(want, data, n);
	unsigned received = 0;
	for (size_t cut = 0; cut <= nio; cut += nio / 60 + 1) {
		sim_volume *v = wu_crashed_copy(base, log, cut);
		ref_fs *r;
		struct ref_open_opts oo = { .super_mirror = -1 };
		cr_assert_eq(ref_open(v, &oo, &r, err, sizeof(err)), 0, "cut %zu: %s", cut, err);
		struct ref_ino ino;
		if (!ref_lookup_path(r, "/vol", true, &ino)) {
			struct ref_subvol_info si;
			WU_OK(r, ref_subvol_info(r, ino.subvol, &si));
			if (!memcmp(si.received_uuid, U1, 16)) {
				received++;
				/* (read-only is the next commit's: btrfs receive's two
				 * ioctls leave the same window on the kernel) */
				expect_bytes(r, "/vol/dir/f", want, n + 5000);
				cr_assert_eq(lstat_of(r, "/vol/dir/f").mode, S_IFREG | 0640);
				cr_assert(S_ISCHR(lstat_of(r, "/vol/c").mode), "cut %zu", cut);
			}
		}
		ref_close(r);
		sim_volume_close(v);
	}
	cr_assert_gt(received, 0);
	free(want);
	free(data);
	free(s.b);
	sim_volume_close(base);
	sim_volume_close(vol);
}
