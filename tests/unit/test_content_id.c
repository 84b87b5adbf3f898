/*
 * test_content_id.c - sim_volume_content_id: volumes whose reads return the
 * same bytes (made by other writes, in other orders, through a crash) have
 * the same identity; any difference a read or a later crash can see (a byte,
 * a volatile write, a latent sector, a lost disk) gives another; no identity
 * without tracking, with faults armed, or on an image file.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SS 4096u
#define DISK (UINT64_C(8) << 20)

static sim_volume *tracked(unsigned ndisks)
{
	sim_volume *v = tu_open(ndisks, DISK, SS, 1);
	cr_assert_eq(sim_volume_track_content(v, true), 0);
	return v;
}

static void id_of(sim_volume *v, uint64_t id[2])
{
	int r = sim_volume_content_id(v, id);
	cr_assert_eq(r, 0, "content id: %d", r);
}

static bool same(sim_volume *a, sim_volume *b)
{
	uint64_t x[2], y[2];
	id_of(a, x);
	id_of(b, y);
	return x[0] == y[0] && x[1] == y[1];
}

Test(content_id, none_without_tracking_or_with_faults)
{
	sim_volume *v = tu_open(1, DISK, SS, 1);
	uint64_t id[2];
	cr_assert_eq(sim_volume_content_id(v, id), -ENOTSUP, "not tracked");
	cr_assert_eq(sim_volume_track_content(v, true), 0);
	id_of(v, id);
	struct sim_fault f;
	char err[256];
	cr_assert_eq(sim_fault_parse("flaky,sector=0,count=1", &f, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sim_fault_add(v, &f), 0);
	cr_assert_eq(sim_volume_content_id(v, id), -ENOTSUP, "faults armed");
	sim_fault_clear(v);
	id_of(v, id);
	cr_assert_eq(sim_volume_track_content(v, false), 0);
	cr_assert_eq(sim_volume_content_id(v, id), -ENOTSUP, "tracking turned off");
	sim_volume_close(v);
}

Test(content_id, none_on_an_image_file)
{
	char path[] = "/tmp/btrsim-cid-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	sim_volume *v;
	char err[256];
	cr_assert_eq(tu_open_image(path, DISK, SS, true, false, &v, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sim_volume_track_content(v, true), -ENOTSUP);
	uint64_t id[2];
	cr_assert_eq(sim_volume_content_id(v, id), -ENOTSUP);
	sim_volume_close(v);
	unlink(path);
}

Test(content_id, equal_bytes_equal_identity)
{
	sim_volume *a = tracked(2), *b = tracked(2);
	cr_assert(same(a, b), "two blank volumes");
	/* a: three writes, flushed; b: the same bytes in another order, one
	 * overwritten first, one as FUA */
	tu_write_ok(a, 0, 0, 3 * SS, 1, 0);
	tu_write_ok(a, 1, 64 * SS, SS, 2, 0);
	tu_write_ok(a, 0, 100 * SS, SS, 3, 0);
	cr_assert(!same(a, b));
	cr_assert_eq(sim_flush(a, 0), 0);
	cr_assert_eq(sim_flush(a, 1), 0);
	tu_write_ok(b, 0, 100 * SS, SS, 9, 0);
	tu_write_ok(b, 0, 100 * SS, SS, 3, 0);
	tu_write_ok(b, 1, 64 * SS, SS, 2, SIM_FUA);
	tu_write_ok(b, 0, 0, 3 * SS, 1, 0);
	cr_assert(!same(a, b), "b's writes are still volatile: a crash would differ");
	cr_assert_eq(sim_flush(b, 0), 0);
	cr_assert(same(a, b));
	/* a discarded and flushed sector is as one never written */
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(a, &c), 0);
	tu_write_ok(c, 0, 200 * SS, SS, 4, 0);
	cr_assert_eq(sim_flush(c, 0), 0);
	cr_assert(!same(a, c));
	cr_assert_eq(sim_discard(c, 0, 200 * SS, SS), 0);
	cr_assert_eq(sim_flush(c, 0), 0);
	cr_assert(same(a, c));
	sim_volume_close(a);
	sim_volume_close(b);
	sim_volume_close(c);
}

Test(content_id, a_crash_state_is_its_persisted_writes)
{
	sim_volume *base = tracked(1);
	tu_write_ok(base, 0, 0, SS, 1, 0);
	cr_assert_eq(sim_flush(base, 0), 0);
	uint64_t s1 = sim_volume_next_seq(base);
	tu_write_ok(base, 0, 8 * SS, 2 * SS, 2, 0);
	tu_write_ok(base, 0, 16 * SS, SS, 3, 0);
	/* the crash persisting the first volatile write only ... */
	sim_volume *crash;
	cr_assert_eq(sim_volume_clone(base, &crash), 0);
	struct sim_crash_pick pick = { s1, 0, 0 };
	struct sim_crash_spec cs = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	cr_assert_eq(sim_disk_crash(crash, 0, &cs, NULL), 0);
	/* ... is a volume that wrote and flushed just that */
	sim_volume *want = tracked(1);
	tu_write_ok(want, 0, 0, SS, 1, SIM_FUA);
	tu_write_ok(want, 0, 8 * SS, 2 * SS, 2, SIM_FUA);
	cr_assert(same(crash, want));
	/* torn after its first sector: another state */
	sim_volume *torn;
	cr_assert_eq(sim_volume_clone(base, &torn), 0);
	pick.count = 1;
	cr_assert_eq(sim_disk_crash(torn, 0, &cs, NULL), 0);
	cr_assert(!same(torn, want));
	sim_volume_close(base);
	sim_volume_close(crash);
	sim_volume_close(want);
	sim_volume_close(torn);
}

Test(content_id, what_reads_see_beyond_the_bytes)
{
	sim_volume *a = tracked(2);
	tu_write_ok(a, 0, 0, SS, 1, SIM_FUA);
	sim_volume *b;
	cr_assert_eq(sim_volume_clone(a, &b), 0);
	cr_assert(same(a, b), "a clone");
	cr_assert_eq(sim_disk_add_latent(b, 0, 0, 1), 0);
	cr_assert(!same(a, b), "a latent sector error");
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(a, &c), 0);
	cr_assert_eq(sim_disk_lose(c, 1), 0);
	cr_assert(!same(a, c), "a lost disk");
	sim_volume *d;
	cr_assert_eq(sim_volume_clone(a, &d), 0);
	tu_write_ok(d, 1, 0, SS, 1, SIM_FUA);
	cr_assert(!same(a, d), "the same bytes on another disk");
	sim_volume_close(a);
	sim_volume_close(b);
	sim_volume_close(c);
	sim_volume_close(d);
}
