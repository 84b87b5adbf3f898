/*
 * harness_stream.c - the `stream` harness: the test case is one or more
 * btrfs send streams (ref/send.h), applied by ref_receive under "/" of a
 * fresh file system, then committed, reopened read-only and checked.
 *
 * The file system is made once per process (harness init): ref_mkfs of one
 * 64 MiB memory disk (4 KiB nodes, single metadata: an 8 MiB data chunk and
 * some 19 MiB unallocated, so ENOSPC is an ordinary outcome), holding one
 * received, read-only subvolume /parent (received_uuid STREAM_PARENT_UUID,
 * a directory, files, a symlink, an xattr), so that an incremental stream
 * alone has a parent to snapshot and clone from.  Each input runs on an
 * O(1) copy-on-write clone of that volume (sim_volume_clone).
 *
 * Before the receive, the harness rewrites the crc32c of every command it
 * can walk to (each stream's header, then commands up to an end command or
 * one that runs past the input), as the image harness rewrites checksums:
 * mutated bytes get past the checksum gate into the commands' checks and
 * ref's calls.  (The crc check itself: tests/cli/test_receive.sh.)
 *
 * Whatever ref_receive returns (0 or -errno) is an ordinary outcome.
 * Oracle (fuzz_violation):
 *   - ref_receive returns neither 0 nor a negative errno, or an error with
 *     an empty message;
 *   - ref_receive succeeds but the mount has turned read-only (a failure it
 *     did not report), or fails with anything but ENOSPC or ENOMEM and the
 *     mount has turned read-only: one of ref's calls failed half-way through
 *     its changes, on a disk without faults (the kernel refuses what it can
 *     before it changes anything);
 *   - more subvolumes show a non-zero received_uuid (ref_subvol_info; the
 *     base's own not counted) than ref_receive finished (stats.subvols),
 *     on the mounted file system or on the one reopened after the unmount:
 *     a stream that failed must never leave a subvolume that claims to have
 *     been received;
 *   - ref_umount fails with anything but ENOSPC or ENOMEM (a small disk),
 *     or EIO after an earlier failure turned the mount read-only;
 *   - the volume does not open read-only after that, or ref_check finds an
 *     error: a receive that refused a command, or a commit that failed,
 *     must still leave a consistent file system.
 */
#include "fuzz/fuzz.h"
#include "ref/csum.h"
#include "ref/mkfs.h"
#include "ref/ref.h"
#include "ref/send.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bounds: the stream bytes read (the rest of a larger input is ignored),
 * and the disk (what ENOSPC stops: clones and encoded writes amplify). */
#define MAX_STREAM (UINT64_C(1) << 20)
#define DISK_SIZE (UINT64_C(64) << 20)
/* Dirty metadata that forces a commit in the middle of a receive. */
#define DIRTY_LIMIT (UINT64_C(1) << 20)
#define CLOCK_START 1700000000

/* The received uuid of the base's subvolume /parent ("btrsim-parent-01"):
 * a snapshot command with this clone_uuid finds it (fuzz/dict/stream.dict). */
static const uint8_t STREAM_PARENT_UUID[16] = "btrsim-parent-01";

static struct {
	sim_volume *base; /* the fresh file system, never written after init */
	size_t base_received; /* its subvolumes with a received_uuid */
	uint8_t *buf;	  /* the input, its crcs fixed up */
} G;

#define CMD_HEADER 10 /* le32 payload length, le16 command, le32 crc32c */

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Rewrites the crc32c of each command ref_receive will read (streams one
 * after another, as it reads them); returns how many it changed. */
static size_t fix_crcs(uint8_t *b, size_t len)
{
	static const char magic[] = "btrfs-stream";
	size_t pos = 0, fixed = 0;
	while (len - pos >= REF_SEND_HEADER && !memcmp(b + pos, magic, sizeof(magic))) {
		pos += REF_SEND_HEADER;
		uint16_t cmd = 0;
		while (cmd != REF_SEND_C_END && len - pos >= CMD_HEADER) {
			uint8_t *h = b + pos;
			uint32_t plen = rd32(h);
			if (plen > len - pos - CMD_HEADER)
				return fixed;
			cmd = (uint16_t)(h[4] | h[5] << 8);
			uint32_t old = rd32(h + 6);
			memset(h + 6, 0, 4);
			uint32_t crc = ref_crc32c_raw(0, h, CMD_HEADER + (size_t)plen);
			for (int i = 0; i < 4; i++)
				h[6 + i] = (uint8_t)(crc >> (8 * i));
			fixed += crc != old;
			pos += CMD_HEADER + (size_t)plen;
		}
		if (cmd != REF_SEND_C_END)
			break;
	}
	return fixed;
}

static const struct ref_open_opts OPEN_OPTS = { .super_mirror = -1 };

/* Subvolumes (the top level included) with a non-zero received_uuid, or
 * -errno when they cannot be listed. */
static long count_received(ref_fs *fs)
{
	static const uint8_t zero[16];
	uint64_t *ids;
	size_t n;
	int r = ref_subvol_ids(fs, &ids, &n);
	if (r)
		return r;
	long found = 0;
	for (size_t i = 0; i <= n; i++) {
		struct ref_subvol_info si;
		if (ref_subvol_info(fs, i < n ? ids[i] : BTRFS_FS_TREE_OBJECTID, &si) == 0 &&
		    memcmp(si.received_uuid, zero, sizeof(zero)))
			found++;
	}
	free(ids);
	return found;
}

/* ---- The base file system ---- */

static int base_fail(ref_fs *fs, const char *what, int r, char *err, size_t errlen)
{
	snprintf(err, errlen, "making the base file system: %s: %s", what,
		 fs && ref_error(fs) && *ref_error(fs) ? ref_error(fs) : strerror(-r));
	return r;
}

/* /parent: what a received full stream would have left, read-only. */
static int populate(ref_fs *fs, char *err, size_t errlen)
{
	static uint8_t data[20000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 4096);
	int r;
	ssize_t w;
	if ((r = ref_subvol_create(fs, "/parent", NULL)))
		return base_fail(fs, "subvolume /parent", r, err, errlen);
	if ((r = ref_mkdir(fs, "/parent/dir", 0755)) || (r = ref_create(fs, "/parent/dir/file", 0644)))
		return base_fail(fs, "/parent/dir/file", r, err, errlen);
	if ((w = ref_write(fs, "/parent/dir/file", data, sizeof(data), 0)) != (ssize_t)sizeof(data))
		return base_fail(fs, "write /parent/dir/file", w < 0 ? (int)w : -EIO, err, errlen);
	if ((r = ref_create(fs, "/parent/small", 0600)) ||
	    (w = ref_write(fs, "/parent/small", "small inline file\n", 18, 0)) != 18)
		return base_fail(fs, "/parent/small", r ? r : -EIO, err, errlen);
	if ((r = ref_setxattr(fs, "/parent/dir/file", "user.a", "v 1", 3, 0)))
		return base_fail(fs, "setxattr", r, err, errlen);
	if ((r = ref_symlink(fs, "dir/file", "/parent/link")))
		return base_fail(fs, "symlink", r, err, errlen);
	if ((r = ref_subvol_set_received(fs, "/parent", STREAM_PARENT_UUID, 7, NULL)) ||
	    (r = ref_subvol_set_readonly(fs, "/parent", true)))
		return base_fail(fs, "received, read-only", r, err, errlen);
	return 0;
}

static int stream_init(char *err, size_t errlen)
{
	int r = fuzz_process_init(err, errlen);
	if (r || G.base)
		return r;
	if (!G.buf && !(G.buf = malloc(MAX_STREAM))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, DISK_SIZE, 1);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	sim_volume *vol;
	if (sim_volume_open(&cfg, &vol, err, errlen))
		return -ENOMEM;
	struct ref_mkfs_opts mk;
	ref_mkfs_defaults(&mk);
	mk.seed = 7;
	mk.time = CLOCK_START;
	mk.nodesize = 4096;
	mk.meta_profile = 0; /* single: a 32 MiB metadata chunk */
	if ((r = ref_mkfs(vol, &mk, NULL, err, errlen))) {
		sim_volume_close(vol);
		return r;
	}
	struct ref_mount_opts mo = { .open = OPEN_OPTS, .clock_start = CLOCK_START };
	ref_fs *fs;
	if ((r = ref_mount(vol, &mo, &fs, err, errlen))) {
		sim_volume_close(vol);
		return r;
	}
	r = populate(fs, err, errlen);
	int u = ref_umount(fs);
	if (!r && u)
		r = base_fail(NULL, "unmount", u, err, errlen);
	if (!r && (r = ref_open(vol, &OPEN_OPTS, &fs, err, errlen)) == 0) {
		struct ref_check_opts co = { .out = fuzz_devnull() };
		long bad = ref_check(fs, &co);
		long rec = count_received(fs);
		ref_close(fs);
		if (bad || rec != 1) {
			snprintf(err, errlen, "the base file system: check %ld, %ld received subvolumes",
				 bad, rec);
			r = -EUCLEAN;
		} else {
			G.base_received = (size_t)rec;
		}
	}
	for (unsigned d = 0; !r && d < sim_volume_ndisks(vol); d++)
		if (sim_flush(vol, d)) {
			snprintf(err, errlen, "flush: %s", sim_volume_error(vol));
			r = -EIO;
		}
	if (r) {
		sim_volume_close(vol);
		return r;
	}
	G.base = vol;
	return 0;
}

/* ---- One input ---- */

static void at_subvol(void *ctx, bool snapshot, const char *name)
{
	fuzz_log(ctx, "at %s %s", snapshot ? "snapshot" : "subvol", name);
}

/* The receive, the commit and the checks on a clone of the base; the volume
 * as left (unmounted) in *out for -o. */
static void run(const uint8_t *data, size_t len, FILE *log, sim_volume **out)
{
	if (len > MAX_STREAM) {
		fuzz_log(log, "%zu bytes: the first %llu read", len, (unsigned long long)MAX_STREAM);
		len = MAX_STREAM;
	}
	*out = NULL;
	memcpy(G.buf, data, len);
	data = G.buf;
	size_t fixed = fix_crcs(G.buf, len);
	if (fixed)
		fuzz_log(log, "%zu crc32c rewritten", fixed);
	sim_volume *vol;
	if (sim_volume_clone(G.base, &vol)) {
		fuzz_log(log, "cloning the base volume: out of memory");
		return;
	}
	char err[1024];
	struct ref_mount_opts mo = { .open = OPEN_OPTS, .clock_start = CLOCK_START,
				     .dirty_limit = DIRTY_LIMIT };
	ref_fs *fs;
	int r = ref_mount(vol, &mo, &fs, err, sizeof(err));
	if (r == -ENOMEM) {
		sim_volume_close(vol);
		return;
	}
	if (r)
		fuzz_violation("stream: the base file system does not mount: %s", err);

	struct ref_receive_opts ro = { .at = at_subvol, .ctx = log };
	struct ref_receive_stats st = { 0 };
	err[0] = 0;
	r = ref_receive(fs, "/", data, len, &ro, &st, err, sizeof(err));
	fuzz_log(log, "receive: %d%s%s", r, r ? ": " : "", r ? err : "");
	fuzz_log(log, "%llu streams, %llu commands, %llu subvolumes finished, %llu bytes written",
		 (unsigned long long)st.streams, (unsigned long long)st.commands,
		 (unsigned long long)st.subvols, (unsigned long long)st.bytes_written);
	if (r > 0 || r < -4095)
		fuzz_violation("stream: ref_receive returned %d, neither 0 nor -errno", r);
	if (r && !err[0])
		fuzz_violation("stream: ref_receive failed (%s) without a message", strerror(-r));
	bool failed = ref_failed(fs);
	if (!r && failed)
		fuzz_violation("stream: ref_receive succeeded, but the mount has turned read-only");
	/* A call that fails half-way through its changes turns the mount
	 * read-only and loses everything since the last commit.  On a disk
	 * without faults, only running out of space or memory may do that: the
	 * kernel refuses what it can before it changes anything. */
	if (failed && r != -ENOSPC && r != -ENOMEM)
		fuzz_violation("stream: a command failed half-way, the mount turned read-only: %s",
			       err);
	long rec = count_received(fs);
	if (rec >= 0 && (uint64_t)rec > G.base_received + st.subvols)
		fuzz_violation("stream: %ld subvolumes show a received_uuid, %llu finished receiving "
			       "(receive: %s)", rec - (long)G.base_received,
			       (unsigned long long)st.subvols, r ? err : "success");

	int u = ref_umount(fs);
	fuzz_log(log, "umount: %d", u);
	if (u && u != -ENOSPC && u != -ENOMEM && !(u == -EIO && failed))
		fuzz_violation("stream: the unmount's commit failed: %s (receive: %s)", strerror(-u),
			       r ? err : "success");

	if (ref_open(vol, &OPEN_OPTS, &fs, err, sizeof(err)))
		fuzz_violation("stream: the file system does not open after the receive (%s) "
			       "and unmount (%s): %s", r ? strerror(-r) : "success",
			       u ? strerror(-u) : "success", err);
	char first[300];
	long bad = fuzz_check(fs, log, first, sizeof(first));
	fuzz_log(log, "check: %ld", bad);
	if (bad)
		fuzz_violation("stream: check gives %ld after the receive (%s) and unmount (%s)%s",
			       bad, r ? strerror(-r) : "success", u ? strerror(-u) : "success",
			       first);
	rec = count_received(fs);
	fuzz_log(log, "received subvolumes: %ld (the base's %zu included)", rec, G.base_received);
	if (rec >= 0 && (uint64_t)rec > G.base_received + st.subvols)
		fuzz_violation("stream: after the unmount %ld subvolumes show a received_uuid, %llu "
			       "finished receiving (receive: %s)", rec - (long)G.base_received,
			       (unsigned long long)st.subvols, r ? strerror(-r) : "success");
	ref_close(fs);
	*out = vol;
}

static int stream_one(const uint8_t *data, size_t len, FILE *log)
{
	sim_volume *vol;
	run(data, len, log, &vol);
	if (vol)
		sim_volume_close(vol);
	return 0;
}

/* -o DIR: the disk as the receive and the unmount left it. */
static int stream_save(const uint8_t *data, size_t len, const char *dir, char *err, size_t errlen)
{
	sim_volume *vol;
	run(data, len, NULL, &vol);
	if (!vol) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/disk0.img", dir);
	int r = sim_disk_save_image(vol, 0, path);
	if (r)
		snprintf(err, errlen, "%s: %s", path, sim_volume_error(vol));
	sim_volume_close(vol);
	return r;
}

const struct fuzz_harness fuzz_harness_stream = {
	.name = "stream",
	.summary = "send streams received into a fresh file system, committed and checked",
	.init = stream_init,
	.one = stream_one,
	.save = stream_save,
	.save_help = "  -o DIR   write the disk as the receive and the unmount left it\n"
		     "           (DIR/disk0.img)\n",
};
