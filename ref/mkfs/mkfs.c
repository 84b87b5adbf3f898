/*
 * mkfs.c - making a new file system across every disk of a sim volume (disk
 * i is devid i + 1), with the trees and features of mkfs.btrfs's defaults
 * (free-space tree, no-holes, skinny metadata, extended inode refs): a
 * SYSTEM, a METADATA and a DATA chunk in the profiles asked for (single, DUP,
 * RAID0, RAID1, RAID1C3, RAID1C4, RAID10, RAID5, RAID6: parity written with
 * the tree blocks by raid56_write.c), their stripes on the devices with
 * the most room first as mkfs.btrfs and the kernel choose them, every tree a
 * bulk-built B-tree, all tree blocks written and every disk flushed before the
 * superblocks (FUA, each with its own device item), so that a crash leaves no
 * half-made file system that looks whole.
 */
#include "ref/tree/build.h"
#include "ref/csum.h"
#include "ref/internal.h"
#include "ref/mkfs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#define MIB (UINT64_C(1) << 20)
#define NTREES 9 /* chunk, root, extent, dev, fs, csum, uuid, free space, data reloc */

#define MAX_DEVS SIM_MAX_DISKS
/* The most stripes a SYSTEM chunk may have: its item must fit the superblock's
 * sys_chunk_array (the kernel's BTRFS_MAX_DEVS_SYS_CHUNK). */
#define MAX_SYS_STRIPES                                                                  \
	((BTRFS_SYS_CHUNK_ARRAY_BYTES - 2 * sizeof(struct btrfs_disk_key) -               \
	  2 * sizeof(struct btrfs_chunk)) / sizeof(struct btrfs_stripe) + 1)

struct mk_chunk {
	uint64_t logical, length, type;
	uint64_t stripe_size; /* bytes of each stripe on its device */
	int nstripes, sub_stripes;
	unsigned dev[MAX_DEVS]; /* the disk of each stripe (devid - 1) */
	uint64_t physical[MAX_DEVS];
	uint64_t used; /* tree blocks placed in it */
};

/* One tree being made: its items, then where its blocks go. */
struct mk_tree {
	uint64_t id;
	struct build_item *items;
	size_t n, cap;
	uint8_t *arena; /* item data */
	size_t arena_len, arena_cap;
	size_t nfixed;       /* items that do not depend on block addresses */
	size_t arena_fixed;
	size_t nblocks, leaves; /* as planned */
	uint64_t *addr;
	struct mk_chunk *chunk;
	int level;
	uint8_t *blocks;
};

struct mk {
	const struct ref_mkfs_opts *o;
	sim_volume *vol;
	unsigned ndevs;
	uint64_t size[MAX_DEVS]; /* bytes of each device the file system uses */
	uint64_t total;          /* their sum */
	uint64_t cursor[MAX_DEVS]; /* next free physical byte of each device */
	uint64_t gen;
	uint8_t fsid[16], chunk_uuid[16], fs_uuid[16];
	uint8_t dev_uuid[MAX_DEVS][16];
	struct mk_chunk sys, meta, data;
	struct mk_tree t[NTREES];
	uint64_t now;
	char *err;
	size_t errlen;
};

enum { T_CHUNK, T_ROOT, T_EXTENT, T_DEV, T_FS, T_CSUM, T_UUID, T_FST, T_RELOC };

static int fail(struct mk *m, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct mk *m, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, m->errlen, fmt, ap);
	va_end(ap);
	return -e;
}

/* Appends an item; data is copied.  Items are sorted before building. */
static int add(struct mk_tree *t, uint64_t objectid, uint8_t type, uint64_t offset, const void *data,
	       uint32_t size)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct build_item *p = realloc(t->items, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->items = p;
		t->cap = cap;
	}
	if (t->arena_len + size > t->arena_cap) {
		/* Items keep offsets into the arena until the build: see fix_pointers. */
		size_t cap = t->arena_cap ? t->arena_cap * 2 : 4096;
		while (cap < t->arena_len + size)
			cap *= 2;
		uint8_t *p = realloc(t->arena, cap);
		if (!p)
			return -ENOMEM;
		t->arena = p;
		t->arena_cap = cap;
	}
	if (size)
		memcpy(t->arena + t->arena_len, data, size);
	t->items[t->n++] = (struct build_item){ { objectid, type, offset }, size,
						(const void *)(uintptr_t)t->arena_len };
	t->arena_len += size;
	return 0;
}

/* The tree's items with real data pointers, sorted by key (caller frees).
 * t->items keeps arena offsets, in the order they were added (fixed first). */
static struct build_item *sorted_items(const struct mk_tree *t)
{
	struct build_item *s = malloc((t->n + 1) * sizeof(*s));
	if (!s)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		s[i] = t->items[i];
		s[i].data = t->arena + (uintptr_t)t->items[i].data;
	}
	build_sort(s, t->n);
	return s;
}

static void uuid_from(uint64_t *state, uint8_t out[16])
{
	for (int i = 0; i < 2; i++) {
		*state += UINT64_C(0x9e3779b97f4a7c15);
		uint64_t x = *state;
		x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
		x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
		x ^= x >> 31;
		memcpy(out + 8 * i, &x, 8);
	}
	out[6] = (out[6] & 0x0f) | 0x40; /* version 4 */
	out[8] = (out[8] & 0x3f) | 0x80;
}

static void set_time(struct btrfs_timespec *t, uint64_t now)
{
	t->sec = htole64(now);
	t->nsec = 0;
}

static void dir_inode(struct mk *m, struct btrfs_inode_item *ii)
{
	memset(ii, 0, sizeof(*ii));
	ii->generation = htole64(m->gen);
	ii->transid = htole64(m->gen);
	ii->nlink = htole32(1);
	ii->mode = htole32(040755);
	set_time(&ii->atime, m->now);
	set_time(&ii->ctime, m->now);
	set_time(&ii->mtime, m->now);
	set_time(&ii->otime, m->now);
}

/* The root directory of a subvolume: its inode and its ".." reference. */
static int add_root_dir(struct mk *m, struct mk_tree *t)
{
	struct btrfs_inode_item ii;
	dir_inode(m, &ii);
	uint8_t ref[sizeof(struct btrfs_inode_ref) + 2];
	struct btrfs_inode_ref *r = (void *)ref;
	r->index = 0;
	r->name_len = htole16(2);
	memcpy(ref + sizeof(*r), "..", 2);
	int e = add(t, BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0, &ii, sizeof(ii));
	return e ? e : add(t, BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_REF_KEY, BTRFS_FIRST_FREE_OBJECTID,
			   ref, sizeof(ref));
}

static int add_chunk_item(struct mk *m, struct mk_tree *t, const struct mk_chunk *c)
{
	uint8_t buf[sizeof(struct btrfs_chunk) + (MAX_DEVS - 1) * sizeof(struct btrfs_stripe)];
	memset(buf, 0, sizeof(buf));
	struct btrfs_chunk *ci = (void *)buf;
	ci->length = htole64(c->length);
	ci->owner = htole64(BTRFS_EXTENT_TREE_OBJECTID);
	ci->stripe_len = htole64(BTRFS_STRIPE_LEN_DEFAULT);
	ci->type = htole64(c->type);
	ci->io_align = htole32(BTRFS_STRIPE_LEN_DEFAULT);
	ci->io_width = htole32(BTRFS_STRIPE_LEN_DEFAULT);
	ci->sector_size = htole32(m->o->sectorsize);
	ci->num_stripes = htole16((uint16_t)c->nstripes);
	ci->sub_stripes = htole16((uint16_t)c->sub_stripes);
	for (int s = 0; s < c->nstripes; s++) {
		struct btrfs_stripe *st = &ci->stripe + s;
		st->devid = htole64(c->dev[s] + 1);
		st->offset = htole64(c->physical[s]);
		memcpy(st->dev_uuid, m->dev_uuid[c->dev[s]], 16);
	}
	uint32_t size = (uint32_t)(sizeof(*ci) + (c->nstripes - 1) * sizeof(struct btrfs_stripe));
	return add(t, BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, c->logical, buf, size);
}

/* Bytes of disk d that the chunks' stripes take. */
static uint64_t dev_bytes_used(const struct mk *m, unsigned d)
{
	const struct mk_chunk *c[] = { &m->sys, &m->meta, &m->data };
	uint64_t used = 0;
	for (int i = 0; i < 3; i++)
		for (int s = 0; s < c[i]->nstripes; s++)
			if (c[i]->dev[s] == d)
				used += c[i]->stripe_size;
	return used;
}

static void fill_dev_item(const struct mk *m, unsigned d, struct btrfs_dev_item *di)
{
	memset(di, 0, sizeof(*di));
	di->devid = htole64(d + 1);
	di->total_bytes = htole64(m->size[d]);
	di->bytes_used = htole64(dev_bytes_used(m, d));
	di->io_align = htole32(m->o->sectorsize);
	di->io_width = htole32(m->o->sectorsize);
	di->sector_size = htole32(m->o->sectorsize);
	memcpy(di->uuid, m->dev_uuid[d], 16);
	memcpy(di->fsid, m->fsid, 16);
}

/* Items that do not depend on where tree blocks go. */
static int fixed_items(struct mk *m)
{
	int e = 0;
	/* Chunk tree: the devices and the three chunks. */
	for (unsigned d = 0; !e && d < m->ndevs; d++) {
		struct btrfs_dev_item di;
		fill_dev_item(m, d, &di);
		e = add(&m->t[T_CHUNK], BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, d + 1, &di,
			sizeof(di));
	}
	const struct mk_chunk *cs[] = { &m->sys, &m->meta, &m->data };
	for (int i = 0; !e && i < 3; i++)
		e = add_chunk_item(m, &m->t[T_CHUNK], cs[i]);
	/* Device tree: one device extent per stripe. */
	for (int i = 0; !e && i < 3; i++) {
		for (int s = 0; !e && s < cs[i]->nstripes; s++) {
			struct btrfs_dev_extent de = {
				.chunk_tree = htole64(BTRFS_CHUNK_TREE_OBJECTID),
				.chunk_objectid = htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID),
				.chunk_offset = htole64(cs[i]->logical),
				.length = htole64(cs[i]->stripe_size),
			};
			memcpy(de.chunk_tree_uuid, m->chunk_uuid, 16);
			e = add(&m->t[T_DEV], cs[i]->dev[s] + 1, BTRFS_DEV_EXTENT_KEY, cs[i]->physical[s],
				&de, sizeof(de));
		}
	}
	/* The top-level subvolume and the data relocation tree: a root directory each. */
	if (!e)
		e = add_root_dir(m, &m->t[T_FS]);
	if (!e)
		e = add_root_dir(m, &m->t[T_RELOC]);
	/* The uuid tree: the top-level subvolume by its uuid. */
	uint64_t subvol = htole64(BTRFS_FS_TREE_OBJECTID);
	if (!e)
		e = add(&m->t[T_UUID], le64(m->fs_uuid), BTRFS_UUID_KEY_SUBVOL, le64(m->fs_uuid + 8),
			&subvol, sizeof(subvol));
	/* Root tree directory 6: "default" names the top-level subvolume. */
	if (!e) {
		struct btrfs_inode_item ii;
		dir_inode(m, &ii);
		e = add(&m->t[T_ROOT], BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_INODE_ITEM_KEY, 0, &ii,
			sizeof(ii));
	}
	if (!e) {
		uint8_t ref[sizeof(struct btrfs_inode_ref) + 2];
		struct btrfs_inode_ref *r = (void *)ref;
		r->index = 0;
		r->name_len = htole16(2);
		memcpy(ref + sizeof(*r), "..", 2);
		e = add(&m->t[T_ROOT], BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_INODE_REF_KEY,
			BTRFS_ROOT_TREE_DIR_OBJECTID, ref, sizeof(ref));
	}
	if (!e) {
		uint8_t buf[sizeof(struct btrfs_dir_item) + 7];
		struct btrfs_dir_item *d = (void *)buf;
		memset(buf, 0, sizeof(buf));
		d->location.objectid = htole64(BTRFS_FS_TREE_OBJECTID);
		d->location.type = BTRFS_ROOT_ITEM_KEY;
		d->location.offset = htole64(UINT64_MAX);
		d->name_len = htole16(7);
		d->type = BTRFS_FT_DIR;
		memcpy(buf + sizeof(*d), "default", 7);
		e = add(&m->t[T_ROOT], BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
			ref_name_hash("default", 7), buf, sizeof(buf));
	}
	if (!e) { /* the back reference of "default", as mkfs.btrfs writes it */
		uint8_t ref[sizeof(struct btrfs_inode_ref) + 7];
		struct btrfs_inode_ref *r = (void *)ref;
		r->index = 0;
		r->name_len = htole16(7);
		memcpy(ref + sizeof(*r), "default", 7);
		e = add(&m->t[T_ROOT], BTRFS_FS_TREE_OBJECTID, BTRFS_INODE_REF_KEY,
			BTRFS_ROOT_TREE_DIR_OBJECTID, ref, sizeof(ref));
	}
	return e;
}

/* The free-space tree: each block group free from the end of its tree blocks. */
static int free_space_items(struct mk *m)
{
	const struct mk_chunk *cs[] = { &m->sys, &m->meta, &m->data };
	int e = 0;
	for (int i = 0; !e && i < 3; i++) {
		uint64_t free = cs[i]->length - cs[i]->used;
		struct btrfs_free_space_info fi = { .extent_count = htole32(free ? 1 : 0), .flags = 0 };
		e = add(&m->t[T_FST], cs[i]->logical, BTRFS_FREE_SPACE_INFO_KEY, cs[i]->length, &fi,
			sizeof(fi));
		if (!e && free)
			e = add(&m->t[T_FST], cs[i]->logical + cs[i]->used, BTRFS_FREE_SPACE_EXTENT_KEY,
				free, NULL, 0);
	}
	return e;
}

static int root_item(struct mk *m, struct mk_tree *t)
{
	struct btrfs_root_item ri;
	memset(&ri, 0, sizeof(ri));
	ri.inode.generation = htole64(1);
	ri.inode.size = htole64(3);
	ri.inode.nlink = htole32(1);
	ri.inode.nbytes = htole64(m->o->nodesize);
	ri.inode.mode = htole32(040755);
	ri.generation = htole64(m->gen);
	ri.generation_v2 = htole64(m->gen);
	bool subvol = t->id == BTRFS_FS_TREE_OBJECTID || t->id == BTRFS_DATA_RELOC_TREE_OBJECTID;
	ri.root_dirid = htole64(subvol ? BTRFS_FIRST_FREE_OBJECTID : 0);
	ri.bytenr = htole64(t->addr[t->nblocks - 1]);
	ri.bytes_used = htole64(t->nblocks * (uint64_t)m->o->nodesize);
	ri.refs = htole32(1);
	/* The root is the last block (t->level is known only once the tree is written). */
	ri.level = (uint8_t)build_level(m->o->nodesize, t->leaves, t->nblocks - 1);
	if (t->id == BTRFS_FS_TREE_OBJECTID) {
		memcpy(ri.uuid, m->fs_uuid, 16);
		set_time(&ri.ctime, m->now);
		set_time(&ri.otime, m->now);
	}
	return add(&m->t[T_ROOT], t->id, BTRFS_ROOT_ITEM_KEY, 0, &ri, sizeof(ri));
}

/* The extent tree: a METADATA_ITEM per tree block, a BLOCK_GROUP_ITEM per chunk. */
static int extent_items(struct mk *m)
{
	int e = 0;
	for (int i = 0; !e && i < NTREES; i++) {
		struct mk_tree *t = &m->t[i];
		for (size_t b = 0; !e && b < t->nblocks; b++) {
			uint8_t buf[sizeof(struct btrfs_extent_item) + 9];
			struct btrfs_extent_item *ei = (void *)buf;
			ei->refs = htole64(1);
			ei->generation = htole64(m->gen);
			ei->flags = htole64(BTRFS_EXTENT_FLAG_TREE_BLOCK);
			buf[sizeof(*ei)] = BTRFS_TREE_BLOCK_REF_KEY;
			uint64_t root = htole64(t->id);
			memcpy(buf + sizeof(*ei) + 1, &root, 8);
			/* Level of block b: leaves first, then each node level. */
			e = add(&m->t[T_EXTENT], t->addr[b], BTRFS_METADATA_ITEM_KEY,
				(uint64_t)build_level(m->o->nodesize, t->leaves, b), buf, sizeof(buf));
		}
	}
	const struct mk_chunk *cs[] = { &m->sys, &m->meta, &m->data };
	for (int i = 0; !e && i < 3; i++) {
		struct btrfs_block_group_item bg = {
			.used = htole64(cs[i]->used),
			.chunk_objectid = htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID),
			.flags = htole64(cs[i]->type),
		};
		e = add(&m->t[T_EXTENT], cs[i]->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, cs[i]->length, &bg,
			sizeof(bg));
	}
	return e;
}

/* Places every tree's blocks: the chunk tree in the SYSTEM chunk, the rest in
 * METADATA, one after another. */
static int place(struct mk *m)
{
	m->sys.used = m->meta.used = 0;
	for (int i = 0; i < NTREES; i++) {
		struct mk_tree *t = &m->t[i];
		struct mk_chunk *c = i == T_CHUNK ? &m->sys : &m->meta;
		uint64_t *a = realloc(t->addr, t->nblocks * sizeof(*a));
		if (!a)
			return -ENOMEM;
		t->addr = a;
		for (size_t b = 0; b < t->nblocks; b++) {
			if (c->used + m->o->nodesize > c->length)
				return fail(m, ENOSPC, "the %s chunk is too small for the first trees",
					    i == T_CHUNK ? "system" : "metadata");
			t->addr[b] = c->logical + c->used;
			c->used += m->o->nodesize;
		}
		t->chunk = c;
	}
	return 0;
}

/* Drops the items that depend on block addresses, to make them again. */
static void reset_variable(struct mk *m)
{
	for (int i = 0; i < NTREES; i++) {
		m->t[i].n = m->t[i].nfixed;
		m->t[i].arena_len = m->t[i].arena_fixed;
	}
}

/*
 * Finds block counts that agree with the items they hold: the extent tree
 * describes every block (its own included), the root tree every root, the
 * free-space tree what the blocks leave free.  Converges in a few rounds.
 */
static int plan(struct mk *m)
{
	for (int i = 0; i < NTREES; i++) {
		m->t[i].nfixed = m->t[i].n;
		m->t[i].arena_fixed = m->t[i].arena_len;
		m->t[i].nblocks = 1;
		m->t[i].leaves = 1;
	}
	for (int round = 0; round < 16; round++) {
		int e = place(m);
		if (e)
			return e;
		reset_variable(m);
		for (int i = 0; !e && i < NTREES; i++)
			if (m->t[i].id != BTRFS_ROOT_TREE_OBJECTID && m->t[i].id != BTRFS_CHUNK_TREE_OBJECTID)
				e = root_item(m, &m->t[i]);
		if (!e)
			e = extent_items(m);
		if (!e)
			e = free_space_items(m);
		if (e)
			return e == -ENOMEM ? fail(m, ENOMEM, "out of memory") : e;
		bool stable = true;
		for (int i = 0; i < NTREES; i++) {
			struct mk_tree *t = &m->t[i];
			struct build_item *items = sorted_items(t);
			if (!items)
				return fail(m, ENOMEM, "out of memory");
			size_t nb = build_count(m->o->nodesize, items, t->n);
			size_t lv = build_leaves(m->o->nodesize, items, t->n);
			free(items);
			if (nb != t->nblocks || lv != t->leaves)
				stable = false;
			t->nblocks = nb;
			t->leaves = lv;
		}
		if (stable)
			return 0;
	}
	return fail(m, EDEADLK, "the first trees' layout does not settle");
}

/* Physical space for chunk stripes, from 1 MiB on, 1 MiB aligned, never over a
 * superblock copy. */
static uint64_t phys_alloc(uint64_t *cursor, uint64_t len)
{
	for (;;) {
		uint64_t at = *cursor;
		bool clash = false;
		for (int i = 1; i < BTRFS_SUPER_MIRRORS; i++) {
			uint64_t s = btrfs_super_offset(i);
			if (at < s + BTRFS_SUPER_SIZE && s < at + len) {
				*cursor = s + MIB;
				clash = true;
			}
		}
		if (!clash) {
			*cursor = at + len;
			return at;
		}
	}
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The stripes of a chunk of profile prof on m's devices: how many, how many
 * hold distinct data (the chunk is that many stripes long), sub_stripes. */
static void stripes_of(const struct mk *m, uint64_t prof, bool sys, int *n, int *data, int *sub)
{
	unsigned most = sys ? (unsigned)MAX_SYS_STRIPES : MAX_DEVS;
	unsigned devs = m->ndevs < most ? m->ndevs : most;
	*sub = 1;
	*data = 1;
	switch (prof) {
	case BTRFS_BLOCK_GROUP_DUP: *n = 2; break;
	case BTRFS_BLOCK_GROUP_RAID1: *n = 2; break;
	case BTRFS_BLOCK_GROUP_RAID1C3: *n = 3; break;
	case BTRFS_BLOCK_GROUP_RAID1C4: *n = 4; break;
	case BTRFS_BLOCK_GROUP_RAID0: *n = *data = (int)devs; break;
	case BTRFS_BLOCK_GROUP_RAID10:
		*n = (int)(devs & ~1u);
		*data = *n / 2;
		*sub = 2;
		break;
	case BTRFS_BLOCK_GROUP_RAID5: *n = (int)devs, *data = *n - 1; break;
	case BTRFS_BLOCK_GROUP_RAID6: *n = (int)devs, *data = *n - 2; break;
	default: *n = 1; break;
	}
}

/*
 * Where the three chunks go.  Each stripe is a tenth of the smallest device
 * (SYSTEM 4 MiB, METADATA 32 to 256 MiB, DATA 8 MiB to 1 GiB), a striped
 * chunk as long as its data stripes together (at most 64 MiB, 256 MiB and
 * 10 GiB); the devices with the most room left take the stripes (ties: the
 * lower devid), as mkfs.btrfs and the kernel choose them; both DUP copies
 * go on one device.  Physical space is handed out from 1 MiB on each device.
 */
static int layout(struct mk *m)
{
	uint64_t logical = MIB, smallest = UINT64_MAX;
	for (unsigned d = 0; d < m->ndevs; d++) {
		m->cursor[d] = MIB;
		if (m->size[d] < smallest)
			smallest = m->size[d];
	}
	uint64_t tenth = smallest / 10 / MIB * MIB;
	struct { struct mk_chunk *c; uint64_t stripe, cap, type; } want[3] = {
		{ &m->sys, 4 * MIB, 64 * MIB, BTRFS_BLOCK_GROUP_SYSTEM | m->o->meta_profile },
		{ &m->meta, clamp(tenth, 32 * MIB, 256 * MIB), 256 * MIB,
		  BTRFS_BLOCK_GROUP_METADATA | m->o->meta_profile },
		{ &m->data, clamp(tenth, 8 * MIB, 1024 * MIB), 10240 * MIB,
		  BTRFS_BLOCK_GROUP_DATA | m->o->data_profile },
	};
	for (int i = 0; i < 3; i++) {
		struct mk_chunk *c = want[i].c;
		uint64_t prof = want[i].type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
		int data;
		stripes_of(m, prof, i == 0, &c->nstripes, &data, &c->sub_stripes);
		uint64_t stripe = want[i].stripe;
		if (stripe * (uint64_t)data > want[i].cap)
			stripe = clamp(want[i].cap / (uint64_t)data / MIB * MIB, MIB, stripe);
		c->logical = logical;
		c->type = want[i].type;
		c->stripe_size = stripe;
		c->length = stripe * (uint64_t)data;
		/* Devices by room left, most first. */
		unsigned order[MAX_DEVS];
		for (unsigned d = 0; d < m->ndevs; d++) {
			unsigned j = d;
			uint64_t room = m->size[d] > m->cursor[d] ? m->size[d] - m->cursor[d] : 0;
			for (; j > 0; j--) {
				unsigned p = order[j - 1];
				uint64_t proom = m->size[p] > m->cursor[p] ? m->size[p] - m->cursor[p] : 0;
				if (proom >= room)
					break;
				order[j] = p;
			}
			order[j] = d;
		}
		for (int s = 0; s < c->nstripes; s++) {
			c->dev[s] = order[prof == BTRFS_BLOCK_GROUP_DUP ? 0 : s];
			c->physical[s] = phys_alloc(&m->cursor[c->dev[s]], stripe);
		}
		logical += c->length;
	}
	for (unsigned d = 0; d < m->ndevs; d++) {
		if (m->cursor[d] <= m->size[d])
			continue;
		if (m->ndevs == 1)
			return fail(m, ENOSPC, "the disk is too small: %llu bytes, this layout needs %llu",
				    (unsigned long long)m->size[d], (unsigned long long)m->cursor[d]);
		return fail(m, ENOSPC, "disk %u (devid %u) is too small: %llu bytes, this layout needs %llu",
			    d, d + 1, (unsigned long long)m->size[d], (unsigned long long)m->cursor[d]);
	}
	return 0;
}

/* The copies of the tree block at `logical` in chunk c (a block never
 * crosses a stripe unit: it is at most 64 KiB and aligned to its size). */
static int block_copies(const struct mk_chunk *c, uint64_t logical, unsigned *dev, uint64_t *phys)
{
	uint64_t off = logical - c->logical, sl = BTRFS_STRIPE_LEN_DEFAULT;
	uint64_t unit = off / sl, in = off % sl;
	unsigned n = (unsigned)c->nstripes;
	switch (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK) {
	case BTRFS_BLOCK_GROUP_RAID0: {
		unsigned idx = (unsigned)(unit % n);
		dev[0] = c->dev[idx];
		phys[0] = c->physical[idx] + unit / n * sl + in;
		return 1;
	}
	case BTRFS_BLOCK_GROUP_RAID10: {
		unsigned factor = n / 2, idx = (unsigned)(unit % factor) * 2;
		for (unsigned i = 0; i < 2; i++) {
			dev[i] = c->dev[idx + i];
			phys[i] = c->physical[idx + i] + unit / factor * sl + in;
		}
		return 2;
	}
	default:
		for (unsigned s = 0; s < n; s++) {
			dev[s] = c->dev[s];
			phys[s] = c->physical[s] + off;
		}
		return (int)n;
	}
}

/* A tree block in a RAID5/6 chunk, with the parity of its row. */
static int raid56_block(struct mk *m, const struct mk_chunk *c, uint64_t logical, const uint8_t *block)
{
	struct ref_stripe st[MAX_DEVS];
	for (int s = 0; s < c->nstripes; s++)
		st[s] = (struct ref_stripe){ c->dev[s] + 1, c->physical[s], (int)c->dev[s] };
	struct ref_chunk rc = { c->logical, c->length, BTRFS_STRIPE_LEN_DEFAULT, c->type,
				(uint16_t)c->nstripes, (uint16_t)c->sub_stripes, st };
	char err[256];
	int r = raid56_write(m->vol, &rc, logical, block, m->o->nodesize, 0, NULL, NULL, err, sizeof(err));
	return r ? fail(m, -r, "%s", err) : 0;
}

static int write_tree(struct mk *m, struct mk_tree *t)
{
	struct build_item *items = sorted_items(t);
	uint8_t *blocks = malloc(t->nblocks * (size_t)m->o->nodesize);
	int r = items && blocks ? 0 : fail(m, ENOMEM, "out of memory");
	struct build_header h = { .generation = m->gen, .owner = t->id, .csum_type = m->o->csum_type,
				  .nodesize = m->o->nodesize };
	memcpy(h.fsid, m->fsid, 16);
	memcpy(h.chunk_tree_uuid, m->chunk_uuid, 16);
	if (!r) {
		t->level = build_emit(&h, items, t->n, t->addr, t->nblocks, blocks);
		if (t->level < 0)
			r = fail(m, EINVAL, "tree %llu: an item does not fit in a %u-byte block",
				 (unsigned long long)t->id, m->o->nodesize);
	}
	bool raid56 = t->chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK;
	for (size_t b = 0; !r && raid56 && b < t->nblocks; b++)
		r = raid56_block(m, t->chunk, t->addr[b], blocks + b * m->o->nodesize);
	for (size_t b = 0; !r && !raid56 && b < t->nblocks; b++) {
		unsigned dev[MAX_DEVS];
		uint64_t phys[MAX_DEVS];
		int n = block_copies(t->chunk, t->addr[b], dev, phys);
		for (int s = 0; !r && s < n; s++)
			if (sim_write(m->vol, dev[s], phys[s], blocks + b * m->o->nodesize, m->o->nodesize, 0))
				r = fail(m, EIO, "%s", sim_volume_error(m->vol));
	}
	free(items);
	free(blocks);
	return r;
}

/* Device d's superblock: the same on every device but for the device item. */
static void fill_super(struct mk *m, unsigned d, struct btrfs_super_disk *sb)
{
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->fsid, m->fsid, 16);
	sb->flags = htole64(BTRFS_HEADER_FLAG_WRITTEN);
	sb->magic = htole64(BTRFS_MAGIC_VALUE);
	sb->generation = htole64(m->gen);
	const struct mk_tree *root = &m->t[T_ROOT], *chunk = &m->t[T_CHUNK];
	sb->root = htole64(root->addr[root->nblocks - 1]);
	sb->chunk_root = htole64(chunk->addr[chunk->nblocks - 1]);
	sb->total_bytes = htole64(m->total);
	sb->bytes_used = htole64(m->sys.used + m->meta.used + m->data.used);
	sb->root_dir_objectid = htole64(BTRFS_ROOT_TREE_DIR_OBJECTID);
	sb->num_devices = htole64(m->ndevs);
	sb->sectorsize = htole32(m->o->sectorsize);
	sb->nodesize = htole32(m->o->nodesize);
	sb->leafsize = htole32(m->o->nodesize);
	sb->stripesize = htole32(m->o->sectorsize);
	sb->chunk_root_generation = htole64(m->gen);
	sb->compat_ro_flags = htole64(BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE |
				      BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID);
	uint64_t incompat = BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF | BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF |
			    BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA | BTRFS_FEATURE_INCOMPAT_NO_HOLES;
	if ((m->o->data_profile | m->o->meta_profile) &
	    (BTRFS_BLOCK_GROUP_RAID1C3 | BTRFS_BLOCK_GROUP_RAID1C4))
		incompat |= BTRFS_FEATURE_INCOMPAT_RAID1C34;
	if ((m->o->data_profile | m->o->meta_profile) & BTRFS_BLOCK_GROUP_RAID56_MASK)
		incompat |= BTRFS_FEATURE_INCOMPAT_RAID56;
	sb->incompat_flags = htole64(incompat);
	sb->csum_type = htole16((uint16_t)m->o->csum_type);
	sb->root_level = (uint8_t)root->level;
	sb->chunk_root_level = (uint8_t)chunk->level;
	fill_dev_item(m, d, &sb->dev_item);
	if (m->o->label)
		strncpy(sb->label, m->o->label, sizeof(sb->label) - 1);
	sb->uuid_tree_generation = htole64(m->gen);
	/* The SYSTEM chunk, so that the chunk tree can be found. */
	struct btrfs_disk_key *k = (void *)sb->sys_chunk_array;
	k->objectid = htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID);
	k->type = BTRFS_CHUNK_ITEM_KEY;
	k->offset = htole64(m->sys.logical);
	const struct build_item *ci = NULL;
	for (size_t i = 0; i < chunk->n; i++)
		if (chunk->items[i].key.type == BTRFS_CHUNK_ITEM_KEY &&
		    chunk->items[i].key.offset == m->sys.logical)
			ci = &chunk->items[i];
	memcpy(sb->sys_chunk_array + sizeof(*k), chunk->arena + (uintptr_t)ci->data, ci->size);
	sb->sys_chunk_array_size = htole32((uint32_t)(sizeof(*k) + ci->size));
	/* Backup root 0: this generation's roots. */
	struct btrfs_root_backup_disk *bk = &sb->super_roots[0];
#define BACKUP(name, tree)                                                                \
	do {                                                                              \
		bk->name##_root = htole64((tree)->addr[(tree)->nblocks - 1]);             \
		bk->name##_root_gen = htole64(m->gen);                                    \
		bk->name##_root_level = (uint8_t)(tree)->level;                           \
	} while (0)
	BACKUP(tree, root);
	BACKUP(chunk, chunk);
	BACKUP(extent, &m->t[T_EXTENT]);
	BACKUP(fs, &m->t[T_FS]);
	BACKUP(dev, &m->t[T_DEV]);
	BACKUP(csum, &m->t[T_CSUM]);
#undef BACKUP
	bk->total_bytes = sb->total_bytes;
	bk->bytes_used = sb->bytes_used;
	bk->num_devices = sb->num_devices;
}

/* Every superblock copy that fits on each device, FUA: the file system
 * exists only once these land, after the flushed trees. */
static int write_supers(struct mk *m)
{
	for (unsigned d = 0; d < m->ndevs; d++) {
		struct btrfs_super_disk sb;
		fill_super(m, d, &sb);
		for (int i = 0; i < BTRFS_SUPER_MIRRORS; i++) {
			uint64_t off = btrfs_super_offset(i);
			if (off + BTRFS_SUPER_SIZE > m->size[d])
				break;
			sb.bytenr = htole64(off);
			ref_csum(m->o->csum_type, (uint8_t *)&sb + BTRFS_CSUM_BYTES,
				 BTRFS_SUPER_SIZE - BTRFS_CSUM_BYTES, sb.csum);
			if (sim_write(m->vol, d, off, &sb, sizeof(sb), SIM_FUA))
				return fail(m, EIO, "%s", sim_volume_error(m->vol));
		}
	}
	return 0;
}

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* The fewest devices a profile needs, as mkfs.btrfs counts them. */
static unsigned devs_min(uint64_t prof)
{
	switch (prof) {
	case BTRFS_BLOCK_GROUP_RAID1:
	case BTRFS_BLOCK_GROUP_RAID10:
	case BTRFS_BLOCK_GROUP_RAID5: return 2;
	case BTRFS_BLOCK_GROUP_RAID1C3:
	case BTRFS_BLOCK_GROUP_RAID6: return 3;
	case BTRFS_BLOCK_GROUP_RAID1C4: return 4;
	default: return 1;
	}
}

static int check_profile(struct mk *m, const char *what, uint64_t prof)
{
	if ((prof & ~(uint64_t)BTRFS_BLOCK_GROUP_PROFILE_MASK) || (prof & (prof - 1)))
		return fail(m, EINVAL, "%s profile 0x%llx is not one of single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5, raid6",
			    what, (unsigned long long)prof);
	if (m->ndevs < devs_min(prof))
		return fail(m, EINVAL, "%s profile %s needs at least %u devices, the volume has %u", what,
			    ref_profile_name(prof), devs_min(prof), m->ndevs);
	return 0;
}

static int check_opts(struct mk *m)
{
	const struct ref_mkfs_opts *o = m->o;
	m->ndevs = sim_volume_ndisks(m->vol);
	if (m->ndevs < 1 || m->ndevs > MAX_DEVS)
		return fail(m, EINVAL, "the volume has %u disks", m->ndevs);
	if (o->sectorsize != 4096)
		return fail(m, EINVAL, "sectorsize %u: only 4096 is supported", o->sectorsize);
	if (!pow2(o->nodesize) || o->nodesize < o->sectorsize || o->nodesize > 65536)
		return fail(m, EINVAL, "nodesize %u is not a power of two from %u to 65536", o->nodesize,
			    o->sectorsize);
	if (!ref_csum_size(o->csum_type))
		return fail(m, EINVAL, "unknown checksum type %u", o->csum_type);
	int r = check_profile(m, "metadata", o->meta_profile);
	if (!r)
		r = check_profile(m, "data", o->data_profile);
	if (r)
		return r;
	if (o->label && strlen(o->label) >= BTRFS_LABEL_BYTES)
		return fail(m, EINVAL, "label longer than %d bytes", BTRFS_LABEL_BYTES - 1);
	m->total = 0;
	for (unsigned d = 0; d < m->ndevs; d++) {
		uint64_t disk = sim_disk_size(m->vol, d);
		m->size[d] = o->size ? o->size : disk;
		if (m->size[d] > disk) {
			if (m->ndevs == 1)
				return fail(m, EINVAL, "size %llu exceeds the disk (%llu bytes)",
					    (unsigned long long)m->size[d], (unsigned long long)disk);
			return fail(m, EINVAL, "size %llu exceeds disk %u (%llu bytes)",
				    (unsigned long long)m->size[d], d, (unsigned long long)disk);
		}
		if (m->size[d] < o->sectorsize) {
			if (m->ndevs == 1)
				return fail(m, ENOSPC, "the disk is too small: %llu bytes, less than one %u-byte sector",
					    (unsigned long long)m->size[d], o->sectorsize);
			return fail(m, ENOSPC, "disk %u is too small: %llu bytes, less than one %u-byte sector",
				    d, (unsigned long long)m->size[d], o->sectorsize);
		}
		m->size[d] -= m->size[d] % o->sectorsize;
		m->total += m->size[d];
	}
	return layout(m);
}

void ref_mkfs_defaults(struct ref_mkfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->meta_profile = BTRFS_BLOCK_GROUP_DUP;
	o->csum_type = REF_CSUM_CRC32C;
	o->nodesize = 16384;
	o->sectorsize = 4096;
}

int ref_mkfs(sim_volume *vol, const struct ref_mkfs_opts *o, uint8_t fsid[16], char *err,
	     size_t errlen)
{
	struct mk m = { .o = o, .vol = vol, .gen = 1, .now = o->time, .err = err, .errlen = errlen };
	static const uint64_t ids[NTREES] = {
		[T_CHUNK] = BTRFS_CHUNK_TREE_OBJECTID, [T_ROOT] = BTRFS_ROOT_TREE_OBJECTID,
		[T_EXTENT] = BTRFS_EXTENT_TREE_OBJECTID, [T_DEV] = BTRFS_DEV_TREE_OBJECTID,
		[T_FS] = BTRFS_FS_TREE_OBJECTID, [T_CSUM] = BTRFS_CSUM_TREE_OBJECTID,
		[T_UUID] = BTRFS_UUID_TREE_OBJECTID, [T_FST] = BTRFS_FREE_SPACE_TREE_OBJECTID,
		[T_RELOC] = BTRFS_DATA_RELOC_TREE_OBJECTID,
	};
	for (int i = 0; i < NTREES; i++)
		m.t[i].id = ids[i];
	uint64_t state = o->seed;
	uuid_from(&state, m.fsid);
	uuid_from(&state, m.chunk_uuid);
	uuid_from(&state, m.dev_uuid[0]);
	uuid_from(&state, m.fs_uuid); /* before the other devices': one device as it always was */
	for (unsigned d = 1; d < MAX_DEVS; d++)
		uuid_from(&state, m.dev_uuid[d]);
	int r = check_opts(&m);
	if (!r && (r = fixed_items(&m)))
		r = r == -ENOMEM ? fail(&m, ENOMEM, "out of memory") : r;
	if (!r)
		r = plan(&m);
	for (int i = 0; !r && i < NTREES; i++)
		r = write_tree(&m, &m.t[i]);
	for (unsigned d = 0; !r && d < m.ndevs; d++)
		if (sim_flush(vol, d))
			r = fail(&m, EIO, "%s", sim_volume_error(vol));
	if (!r)
		r = write_supers(&m);
	if (!r && fsid)
		memcpy(fsid, m.fsid, 16);
	for (int i = 0; i < NTREES; i++) {
		free(m.t[i].items);
		free(m.t[i].arena);
		free(m.t[i].addr);
	}
	return r;
}
