/*
 * test_send.c - ref_send (ref/send/) against ref_receive, on random trees:
 * a subvolume changed by random operations (files, directories, hard links,
 * symlinks, fifos, renames and exchanges across directories, removals,
 * writes, holes, truncates, xattrs and file capabilities, modes with set-id
 * bits, owners, times; every other seed written compressed) is snapshotted
 * read-only after each round; the first snapshot is sent full, each next one
 * against the one before, v1 and v2 (v2 of compressed data with encoded
 * writes); a second file system receives the streams, and every received
 * snapshot must describe (the manifest, times included) as its source does.
 * SEND_DEBUG=FILE keeps a failing stream.  The kernel's btrfs receive of the
 * same streams: tests/interop/test_send.sh.
 */
#include "ref/send.h"
#include "tests/unit/testutil.h"
#include "tests/unit/wrutil.h"
#include "traces/model.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A random path under /vol: up to three components of a small namespace,
 * so that operations often meet what earlier ones made. */
static void rpath(uint64_t *x, char *out, size_t cap)
{
	static const char *const names[] = { "d0", "d1", "d2", "f0", "f1", "f2", "f3", "name x" };
	int depth = 1 + (int)(rnd(x) % 3);
	size_t l = (size_t)snprintf(out, cap, "/vol");
	for (int i = 0; i < depth; i++)
		l += (size_t)snprintf(out + l, cap - l, "/%s", names[rnd(x) % 8]);
}

/* One random change of /vol; fifos only when `special` (the oracle's model
 * has none). */
static void random_op(ref_fs *fs, uint64_t *x, bool special)
{
	char a[128], b[128];
	rpath(x, a, sizeof(a));
	rpath(x, b, sizeof(b));
	uint8_t buf[20000];
	switch (rnd(x) % 17) {
	case 0: case 1: ref_mkdir(fs, a, 0755); break;
	case 2: case 3: ref_create(fs, a, 0644); break;
	case 4: case 5: {
		size_t len = 1 + rnd(x) % sizeof(buf);
		memset(buf, (int)(rnd(x) & 0xff), len);
		ref_write(fs, a, buf, len, rnd(x) % 300000);
		break;
	}
	case 6: ref_truncate(fs, a, rnd(x) % 200000); break;
	case 7: ref_rename(fs, a, b, rnd(x) % 4 == 0 ? RENAME_EXCHANGE : 0); break;
	case 8: ref_link(fs, a, b); break;
	case 9: ref_unlink(fs, a); break;
	case 10: ref_rmdir(fs, a); break;
	case 11: ref_symlink(fs, b + 4, a); break;
	case 12: {
		char v[8];
		snprintf(v, sizeof(v), "v%u", (unsigned)(rnd(x) % 100));
		/* a version 2 file capability (cap_net_raw permitted), which a
		 * chown drops on both sides */
		static const uint8_t caps[20] = { 1, 0, 0, 2, 0, 0x20 };
		if (rnd(x) % 5 == 0)
			ref_setxattr(fs, a, "security.capability", caps, sizeof(caps), 0);
		else if (rnd(x) % 3)
			ref_setxattr(fs, a, rnd(x) % 2 ? "user.a" : "user.b", v, strlen(v), 0);
		else
			ref_removexattr(fs, a, "user.a");
		break;
	}
	case 13: ref_chmod(fs, a, (uint32_t)(rnd(x) % 010000)); break; /* set-id bits too */
	case 14: ref_chown(fs, a, (uint32_t)(rnd(x) % 3), (uint32_t)(rnd(x) % 3)); break;
	case 15: {
		struct timespec t[2] = { { (time_t)(rnd(x) % 1000000000), 5 },
					 { (time_t)(rnd(x) % 1000000000), 7 } };
		ref_utimes(fs, a, t);
		break;
	}
	default:
		if (rnd(x) % 2)
			ref_fallocate(fs, a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      rnd(x) % 100000, 4096 + rnd(x) % 20000);
		else if (special)
			ref_mknod(fs, a, S_IFIFO | 0600, 0);
		break;
	}
}

/* The manifest of subvolume path (times included) as one string. */
static char *describe(ref_fs *fs, const char *path)
{
	return wu_manifest(fs, path, true);
}

static uint8_t *send_one(ref_fs *fs, const char *path, const char *parent, uint32_t proto,
			 bool compressed, size_t *len)
{
	uint64_t id, pid = 0;
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, true, &ino));
	id = ino.subvol;
	if (parent) {
		WU_OK(fs, ref_lookup_path(fs, parent, true, &ino));
		pid = ino.subvol;
	}
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct ref_send_opts o = { .proto = proto, .parent = pid, .compressed_data = compressed };
	struct ref_send_stats st;
	char err[512];
	cr_assert_eq(ref_send(fs, id, &o, f, &st, err, sizeof(err)), 0, "send %s: %s", path, err);
	fclose(f);
	cr_assert_eq(st.bytes, *len);
	return (uint8_t *)buf;
}

#define ROUNDS 6

/* The first line where two manifests differ, from each (for the message). */
static void first_diff(const char *a, const char *b, char *out, size_t cap)
{
	while (*a && *b) {
		size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
		if (la != lb || memcmp(a, b, la)) {
			snprintf(out, cap, "want '%.*s' got '%.*s'", (int)la, a, (int)lb, b);
			return;
		}
		a += la + (a[la] != 0);
		b += lb + (b[lb] != 0);
	}
	snprintf(out, cap, "want '%.80s' got '%.80s'", a, b);
}

static void one_seed(uint64_t seed)
{
	sim_volume *va, *vb;
	ref_fs *a = wu_fresh(&va, 256, 0), *b = wu_fresh(&vb, 256, 0);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;
	bool compress = seed % 2 == 0; /* written compressed, sent as encoded writes in v2 */
	if (compress) {
		WU_OK(a, ref_umount(a));
		struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .compress = 3 /* zstd */ };
		char err[256];
		cr_assert_eq(ref_mount(va, &mo, &a, err, sizeof(err)), 0, "%s", err);
	}
	WU_OK(a, ref_subvol_create(a, "/vol", NULL));
	char snap[ROUNDS][16];
	for (int k = 0; k < ROUNDS; k++) {
		for (int n = 0; n < 60; n++)
			random_op(a, &x, true);
		snprintf(snap[k], sizeof(snap[k]), "/s%d", k);
		WU_OK(a, ref_snapshot(a, "/vol", snap[k], true, NULL));
		size_t len;
		uint32_t proto = 1 + (uint32_t)(k % 2);
		uint8_t *st = send_one(a, snap[k], k ? snap[k - 1] : NULL, proto, compress && proto == 2,
				       &len);
		char err[512];
		int r = ref_receive(b, "/", st, len, NULL, NULL, err, sizeof(err));
		cr_assert_eq(r, 0, "seed %llu round %d: %s", (unsigned long long)seed, k, err);
		char *want = describe(a, snap[k]), *got = describe(b, snap[k]), d[600];
		first_diff(want, got, d, sizeof(d));
		if (strcmp(want, got) && getenv("SEND_DEBUG")) { /* for btrsim receive --dump */
			FILE *o = fopen(getenv("SEND_DEBUG"), "wb");
			if (o) {
				fwrite(st, 1, len, o);
				fclose(o);
			}
		}
		cr_assert_str_eq(got, want, "seed %llu round %d: the received tree differs: %s",
				 (unsigned long long)seed, k, d);
		free(want);
		free(got);
		free(st);
	}
	WU_OK(a, ref_umount(a));
	WU_OK(b, ref_umount(b));
	wu_expect_ref_clean(vb);
	sim_volume_close(va);
	sim_volume_close(vb);
}

Test(send, random_trees_full_then_incremental, .timeout = 300)
{
	for (uint64_t seed = 1; seed <= 40; seed++)
		one_seed(seed);
}

/* The oracle's model of `receive` (traces/model_receive.c) against
 * ref_receive: streams of random trees (full, then incremental with clones,
 * v1 and v2) applied to the model and to a file system must describe alike,
 * each received subvolume read-only and received in the model. */
Test(send, the_model_receives_as_ref_does, .timeout = 300)
{
	for (uint64_t seed = 1; seed <= 12; seed++) {
		sim_volume *va, *vb;
		ref_fs *a = wu_fresh(&va, 256, 0), *b = wu_fresh(&vb, 256, 0);
		uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;
		struct model *m = model_new();
		cr_assert_not_null(m);
		WU_OK(a, ref_subvol_create(a, "/vol", NULL));
		WU_OK(b, ref_mkdir(b, "/in", 0755));
		struct wl_op mk = { .kind = WL_MKDIR, .path = "/in", .mode = 0755 };
		char err[512];
		cr_assert_eq(model_apply(m, &mk, 0, err, sizeof(err)), 0, "%s", err);
		uint8_t *streams[4] = { 0 }; /* the model points into them: kept to the end */
		for (int k = 0; k < 4; k++) {
			for (int n = 0; n < 50; n++)
				random_op(a, &x, false);
			char snap[16], prev[16];
			snprintf(snap, sizeof(snap), "/s%d", k);
			snprintf(prev, sizeof(prev), "/s%d", k - 1);
			WU_OK(a, ref_snapshot(a, "/vol", snap, true, NULL));
			size_t len;
			streams[k] = send_one(a, snap, k ? prev : NULL, 1 + (uint32_t)(k % 2), false, &len);
			cr_assert_eq(ref_receive(b, "/in", streams[k], len, NULL, NULL, err, sizeof(err)),
				     0, "seed %llu round %d: %s", (unsigned long long)seed, k, err);
			struct wl_op op = { .kind = WL_RECEIVE, .path = "/in", .value = streams[k],
					    .vlen = len };
			cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), 0,
				     "seed %llu round %d: the model: %s", (unsigned long long)seed, k, err);
			char *want = wu_manifest(b, NULL, false), *got = model_describe(m), d[600];
			first_diff(want, got, d, sizeof(d));
			cr_assert_str_eq(got, want, "seed %llu round %d: the model differs: %s",
					 (unsigned long long)seed, k, d);
			char *sv = model_describe_subvols(m), line[64];
			snprintf(line, sizeof(line), "/in%s subvol ro received\n", snap);
			cr_assert_not_null(strstr(sv, line), "seed %llu: %s", (unsigned long long)seed, sv);
			free(sv);
			free(want);
			free(got);
		}
		model_free(m);
		for (int k = 0; k < 4; k++)
			free(streams[k]);
		WU_OK(a, ref_umount(a));
		WU_OK(b, ref_umount(b));
		sim_volume_close(va);
		sim_volume_close(vb);
	}
}

/* What the model does with a receive that failed: nothing when it failed
 * before making its subvolume (a missing parent, the name taken); it cannot
 * follow one that failed after, nor a stream with what it does not model. */
Test(send, the_model_on_failed_and_unmodelled_receives)
{
	sim_volume *va;
	ref_fs *a = wu_fresh(&va, 256, 0);
	WU_OK(a, ref_subvol_create(a, "/vol", NULL));
	WU_OK(a, ref_create(a, "/vol/f", 0644));
	WU_OK(a, ref_snapshot(a, "/vol", "/s0", true, NULL));
	WU_OK(a, ref_create(a, "/vol/g", 0644));
	WU_OK(a, ref_snapshot(a, "/vol", "/s1", true, NULL));
	WU_OK(a, ref_mknod(a, "/vol/p", S_IFIFO | 0600, 0));
	WU_OK(a, ref_snapshot(a, "/vol", "/s2", true, NULL));
	size_t l0, l1, l2;
	uint8_t *s0 = send_one(a, "/s0", NULL, 1, false, &l0);
	uint8_t *s1 = send_one(a, "/s1", "/s0", 1, false, &l1);
	uint8_t *s2 = send_one(a, "/s2", NULL, 1, false, &l2);
	struct model *m = model_new();
	char err[512], *before = model_describe(m);
	struct wl_op op = { .kind = WL_RECEIVE, .path = "/", .value = s1, .vlen = l1 };
	cr_assert_eq(model_apply(m, &op, -ENOENT, err, sizeof(err)), 0, "%s", err);
	char *now = model_describe(m);
	cr_assert_str_eq(now, before, "a receive without its parent changes nothing");
	free(now);
	cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "no subvolume was received with the parent's uuid"), "%s", err);
	op.value = s0;
	op.vlen = l0;
	cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(model_apply(m, &op, -EEXIST, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(model_apply(m, &op, -EIO, err, sizeof(err)), 0, "the name is taken: %s", err);
	op.value = s1;
	op.vlen = l1;
	cr_assert_eq(model_apply(m, &op, -EIO, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "after making its subvolume"), "%s", err);
	op.value = s2;
	op.vlen = l2;
	op.path = "/other";
	struct wl_op mk = { .kind = WL_MKDIR, .path = "/other", .mode = 0755 };
	cr_assert_eq(model_apply(m, &mk, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "mkfifo") && strstr(err, "not modelled"), "%s", err);
	uint8_t bad[40];
	memcpy(bad, s0, sizeof(bad));
	op.value = bad;
	op.vlen = sizeof(bad);
	cr_assert_eq(model_apply(m, &op, 0, err, sizeof(err)), -EINVAL, "a cut stream");
	cr_assert_eq(model_apply(m, &op, -EBADMSG, err, sizeof(err)), 0, "%s", err);
	model_free(m);
	free(before);
	free(s0);
	free(s1);
	free(s2);
	WU_OK(a, ref_umount(a));
	sim_volume_close(va);
}

Test(send, refuses_writable_and_bad_arguments)
{
	sim_volume *v;
	ref_fs *fs = wu_fresh(&v, 256, 0);
	WU_OK(fs, ref_subvol_create(fs, "/w", NULL));
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, "/w", true, &ino));
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char err[256];
	cr_assert_eq(ref_send(fs, ino.subvol, NULL, f, NULL, err, sizeof(err)), -EPERM);
	cr_assert(strstr(err, "is not read-only"), "%s", err);
	cr_assert_eq(ref_send(fs, BTRFS_FS_TREE_OBJECTID, NULL, f, NULL, err, sizeof(err)), -EPERM);
	WU_OK(fs, ref_subvol_set_readonly(fs, "/w", true));
	struct ref_send_opts o = { .proto = 3 };
	cr_assert_eq(ref_send(fs, ino.subvol, &o, f, NULL, err, sizeof(err)), -EINVAL);
	o = (struct ref_send_opts){ .parent = ino.subvol };
	cr_assert_eq(ref_send(fs, ino.subvol, &o, f, NULL, err, sizeof(err)), -EINVAL);
	o = (struct ref_send_opts){ .parent = 999 };
	cr_assert_eq(ref_send(fs, ino.subvol, &o, f, NULL, err, sizeof(err)), -ENOENT, "%s", err);
	cr_assert_eq(ref_send(fs, ino.subvol, NULL, f, NULL, err, sizeof(err)), 0, "%s", err);
	fclose(f);
	free(buf);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(v);
}
