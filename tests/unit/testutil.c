/* testutil.c - helpers shared by the unit tests (see testutil.h). */
#include "testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tu_open_image(const char *path, uint64_t size, uint32_t ss, bool create, bool ro,
		  sim_volume **out, char *err, size_t errlen)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, size, 1);
	cfg.latency = (struct sim_latency){ 0 };
	cfg.disk[0].sector_size = ss;
	cfg.disk[0].image_path = path;
	cfg.disk[0].create = create;
	cfg.disk[0].read_only = ro;
	return sim_volume_open(&cfg, out, err, errlen);
}

sim_volume *tu_open(unsigned ndisks, uint64_t size, uint32_t sector_size, uint64_t seed)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, ndisks, size, seed);
	for (unsigned i = 0; i < ndisks && i < SIM_MAX_DISKS; i++)
		cfg.disk[i].sector_size = sector_size;
	cfg.latency = (struct sim_latency){ 0 };
	char err[256] = "";
	sim_volume *vol = NULL;
	int r = sim_volume_open(&cfg, &vol, err, sizeof(err));
	cr_assert_eq(r, 0, "sim_volume_open(%u disks of %llu bytes, %u-byte sectors): %d %s",
		     ndisks, (unsigned long long)size, sector_size, r, err);
	cr_assert_not_null(vol);
	return vol;
}

static uint64_t mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

void tu_fill(void *buf, size_t len, uint64_t tag)
{
	uint8_t *p = buf;
	if (!tag) {
		memset(p, 0, len);
		return;
	}
	uint64_t t = mix(tag * UINT64_C(0x100000001b3));
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix(t ^ (i / 8));
		size_t n = len - i < 8 ? len - i : 8;
		memcpy(p + i, &w, n);
	}
}

uint8_t *tu_pat(size_t len, uint64_t tag)
{
	uint8_t *p = malloc(len);
	cr_assert_not_null(p);
	tu_fill(p, len, tag);
	return p;
}

int tu_write(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag,
	     unsigned flags)
{
	uint8_t *p = tu_pat(len, tag);
	int r = sim_write(vol, disk, off, p, len, flags);
	free(p);
	return r;
}

void tu_write_ok(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag,
		 unsigned flags)
{
	int r = tu_write(vol, disk, off, len, tag, flags);
	cr_assert_eq(r, 0, "write disk %u at %llu+%zu (tag %llu): %d %s", disk,
		     (unsigned long long)off, len, (unsigned long long)tag, r,
		     sim_volume_error(vol));
}

uint8_t *tu_get(sim_volume *vol, unsigned disk, uint64_t off, size_t len)
{
	uint8_t *p = malloc(len);
	cr_assert_not_null(p);
	int r = sim_read(vol, disk, off, p, len);
	cr_assert_eq(r, 0, "read disk %u at %llu+%zu: %d %s", disk, (unsigned long long)off, len,
		     r, sim_volume_error(vol));
	return p;
}

uint8_t *tu_get_durable(sim_volume *vol, unsigned disk, uint64_t off, size_t len)
{
	uint8_t *p = malloc(len);
	cr_assert_not_null(p);
	int r = sim_read_durable(vol, disk, off, p, len);
	cr_assert_eq(r, 0, "durable read disk %u at %llu+%zu: %d %s", disk,
		     (unsigned long long)off, len, r, sim_volume_error(vol));
	return p;
}

static bool same_as(uint8_t *got, uint64_t wr_off, size_t wr_len, uint64_t tag, uint64_t off,
		    size_t len)
{
	uint8_t *want = tu_pat(wr_len, tag);
	bool eq = !memcmp(got, want + (off - wr_off), len);
	free(want);
	free(got);
	return eq;
}

bool tu_read_is(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag)
{
	return same_as(tu_get(vol, disk, off, len), off, len, tag, off, len);
}

bool tu_durable_is(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag)
{
	return same_as(tu_get_durable(vol, disk, off, len), off, len, tag, off, len);
}

bool tu_durable_slice_is(sim_volume *vol, unsigned disk, uint64_t wr_off, size_t wr_len,
			 uint64_t tag, uint64_t off, size_t len)
{
	cr_assert(off >= wr_off && off + len <= wr_off + wr_len);
	return same_as(tu_get_durable(vol, disk, off, len), wr_off, wr_len, tag, off, len);
}

uint64_t tu_bitdiff(const void *a, const void *b, size_t len, uint64_t *first)
{
	const uint8_t *x = a, *y = b;
	uint64_t n = 0;
	bool found = false;
	for (size_t i = 0; i < len; i++) {
		uint8_t d = x[i] ^ y[i];
		if (!d)
			continue;
		if (!found && first) {
			*first = (uint64_t)i * 8 + (uint64_t)__builtin_ctz(d);
			found = true;
		}
		n += (uint64_t)__builtin_popcount(d);
	}
	return n;
}

size_t tu_log_count(const sim_volume *vol, enum sim_io_kind kind)
{
	size_t n, c = 0;
	const struct sim_io *log = sim_volume_log(vol, &n);
	for (size_t i = 0; i < n; i++)
		c += log[i].kind == kind;
	return c;
}

const struct sim_io *tu_log_last(const sim_volume *vol, enum sim_io_kind kind)
{
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	while (n--)
		if (log[n].kind == kind)
			return &log[n];
	return NULL;
}

struct sim_pending *tu_pending_copy(const sim_volume *vol, unsigned disk, size_t *n)
{
	const struct sim_pending *p = sim_disk_pending(vol, disk, n);
	if (!*n)
		return NULL;
	struct sim_pending *c = malloc(*n * sizeof(*c));
	cr_assert_not_null(c);
	memcpy(c, p, *n * sizeof(*c));
	return c;
}

char *tu_tmpdir(void)
{
	char *d = strdup("/tmp/btrsim-unit-XXXXXX");
	cr_assert_not_null(d);
	cr_assert_not_null(mkdtemp(d), "mkdtemp failed");
	return d;
}

void tu_rmdir(char *dir)
{
	if (!dir)
		return;
	DIR *dh = opendir(dir);
	if (dh) {
		struct dirent *e;
		while ((e = readdir(dh))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char *p = tu_path(dir, e->d_name);
			if (unlink(p))
				rmdir(p); /* a directory a test made on purpose */
			free(p);
		}
		closedir(dh);
	}
	rmdir(dir);
	free(dir);
}

char *tu_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	cr_assert_not_null(p);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}
