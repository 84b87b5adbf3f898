/*
 * print.c - names of keys, objectids and flags, and whole tree blocks, in the
 * layout of btrfs-progs v6.2's print-tree.c (`btrfs inspect-internal
 * dump-tree`).  Item bodies are in print_items.c, the superblock in
 * print_super.c.
 *
 * Everything is read from the little-endian on-disk bytes and bounded by the
 * block or item size: a corrupt block prints what it can, never more.
 * Messages that progs sends to stderr with error()/warning() go to stderr
 * here too, with the same "ERROR: " / "WARNING: " prefix.
 */
#include "ref/print.h"

#include "ref/csum.h"

#include <string.h>
#include <time.h>

#define HDR sizeof(struct btrfs_header_disk)
#define ITEM sizeof(struct btrfs_item_disk)
#define PTR sizeof(struct btrfs_key_ptr_disk)
#define NAME_LEN 255 /* BTRFS_NAME_LEN */

void ref_print_uuid(FILE *out, const uint8_t *u)
{
	fprintf(out,
		"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		u[13], u[14], u[15]);
}

void ref_print_objectid_name(FILE *out, uint64_t objectid, uint8_t type)
{
	switch (type) {
	case BTRFS_PERSISTENT_ITEM_KEY:
		if (objectid == BTRFS_DEV_STATS_OBJECTID)
			fputs("DEV_STATS", out);
		else
			fprintf(out, "%llu", (unsigned long long)objectid);
		return;
	case BTRFS_DEV_EXTENT_KEY:
		/* a device id */
		fprintf(out, "%llu", (unsigned long long)objectid);
		return;
	case BTRFS_QGROUP_RELATION_KEY:
		fprintf(out, "%llu/%llu", (unsigned long long)(objectid >> BTRFS_QGROUP_LEVEL_SHIFT),
			(unsigned long long)(objectid & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
		return;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		fprintf(out, "0x%016llx", (unsigned long long)objectid);
		return;
	}

	const char *name = NULL;
	switch (objectid) {
	case BTRFS_ROOT_TREE_OBJECTID:
		/* ROOT_TREE and DEV_ITEMS share the value 1 */
		name = type == BTRFS_DEV_ITEM_KEY ? "DEV_ITEMS" : "ROOT_TREE";
		break;
	case BTRFS_EXTENT_TREE_OBJECTID: name = "EXTENT_TREE"; break;
	case BTRFS_CHUNK_TREE_OBJECTID: name = "CHUNK_TREE"; break;
	case BTRFS_DEV_TREE_OBJECTID: name = "DEV_TREE"; break;
	case BTRFS_FS_TREE_OBJECTID: name = "FS_TREE"; break;
	case BTRFS_ROOT_TREE_DIR_OBJECTID: name = "ROOT_TREE_DIR"; break;
	case BTRFS_CSUM_TREE_OBJECTID: name = "CSUM_TREE"; break;
	case BTRFS_BALANCE_OBJECTID: name = "BALANCE"; break;
	case BTRFS_ORPHAN_OBJECTID: name = "ORPHAN"; break;
	case BTRFS_TREE_LOG_OBJECTID: name = "TREE_LOG"; break;
	/* v6.2 has no name for BTRFS_TREE_LOG_FIXUP_OBJECTID (-7): a number */
	case BTRFS_TREE_RELOC_OBJECTID: name = "TREE_RELOC"; break;
	case BTRFS_DATA_RELOC_TREE_OBJECTID: name = "DATA_RELOC_TREE"; break;
	case BTRFS_EXTENT_CSUM_OBJECTID: name = "EXTENT_CSUM"; break;
	case BTRFS_FREE_SPACE_OBJECTID: name = "FREE_SPACE"; break;
	case BTRFS_FREE_INO_OBJECTID: name = "FREE_INO"; break;
	case BTRFS_QUOTA_TREE_OBJECTID: name = "QUOTA_TREE"; break;
	case BTRFS_UUID_TREE_OBJECTID: name = "UUID_TREE"; break;
	case BTRFS_FREE_SPACE_TREE_OBJECTID: name = "FREE_SPACE_TREE"; break;
	case (uint64_t)-255: name = "MULTIPLE"; break; /* BTRFS_MULTIPLE_OBJECTIDS */
	case BTRFS_BLOCK_GROUP_TREE_OBJECTID: name = "BLOCK_GROUP_TREE"; break;
	case (uint64_t)-1: name = "-1"; break;
	case BTRFS_FIRST_CHUNK_TREE_OBJECTID:
		if (type == BTRFS_CHUNK_ITEM_KEY)
			name = "FIRST_CHUNK_TREE";
		break;
	}
	if (name)
		fputs(name, out);
	else
		fprintf(out, "%llu", (unsigned long long)objectid);
}

/* Key types that the linux-libc-dev 6.1 header lacks. */
#define KEY_EXTENT_OWNER_REF 172

void ref_print_key_type(FILE *out, uint64_t objectid, uint8_t type)
{
	static const char *const names[256] = {
		[BTRFS_INODE_ITEM_KEY] = "INODE_ITEM",
		[BTRFS_INODE_REF_KEY] = "INODE_REF",
		[BTRFS_INODE_EXTREF_KEY] = "INODE_EXTREF",
		[BTRFS_DIR_ITEM_KEY] = "DIR_ITEM",
		[BTRFS_DIR_INDEX_KEY] = "DIR_INDEX",
		[BTRFS_DIR_LOG_ITEM_KEY] = "DIR_LOG_ITEM",
		[BTRFS_DIR_LOG_INDEX_KEY] = "DIR_LOG_INDEX",
		[BTRFS_XATTR_ITEM_KEY] = "XATTR_ITEM",
		[BTRFS_VERITY_DESC_ITEM_KEY] = "VERITY_DESC_ITEM",
		[BTRFS_VERITY_MERKLE_ITEM_KEY] = "VERITY_MERKLE_ITEM",
		[BTRFS_ORPHAN_ITEM_KEY] = "ORPHAN_ITEM",
		[BTRFS_ROOT_ITEM_KEY] = "ROOT_ITEM",
		[BTRFS_ROOT_REF_KEY] = "ROOT_REF",
		[BTRFS_ROOT_BACKREF_KEY] = "ROOT_BACKREF",
		[BTRFS_EXTENT_ITEM_KEY] = "EXTENT_ITEM",
		[BTRFS_METADATA_ITEM_KEY] = "METADATA_ITEM",
		[KEY_EXTENT_OWNER_REF] = "EXTENT_OWNER_REF", /* progs 6.7; v6.2: UNKNOWN.172 */
		[BTRFS_TREE_BLOCK_REF_KEY] = "TREE_BLOCK_REF",
		[BTRFS_SHARED_BLOCK_REF_KEY] = "SHARED_BLOCK_REF",
		[BTRFS_EXTENT_DATA_REF_KEY] = "EXTENT_DATA_REF",
		[BTRFS_SHARED_DATA_REF_KEY] = "SHARED_DATA_REF",
		[BTRFS_EXTENT_REF_V0_KEY] = "EXTENT_REF_V0",
		[120] = "CSUM_ITEM", /* BTRFS_CSUM_ITEM_KEY, long obsolete */
		[BTRFS_EXTENT_CSUM_KEY] = "EXTENT_CSUM",
		[BTRFS_EXTENT_DATA_KEY] = "EXTENT_DATA",
		[BTRFS_BLOCK_GROUP_ITEM_KEY] = "BLOCK_GROUP_ITEM",
		[BTRFS_FREE_SPACE_INFO_KEY] = "FREE_SPACE_INFO",
		[BTRFS_FREE_SPACE_EXTENT_KEY] = "FREE_SPACE_EXTENT",
		[BTRFS_FREE_SPACE_BITMAP_KEY] = "FREE_SPACE_BITMAP",
		[BTRFS_CHUNK_ITEM_KEY] = "CHUNK_ITEM",
		[BTRFS_DEV_ITEM_KEY] = "DEV_ITEM",
		[BTRFS_DEV_EXTENT_KEY] = "DEV_EXTENT",
		[BTRFS_TEMPORARY_ITEM_KEY] = "TEMPORARY_ITEM",
		[BTRFS_DEV_REPLACE_KEY] = "DEV_REPLACE",
		[BTRFS_STRING_ITEM_KEY] = "STRING_ITEM",
		[BTRFS_QGROUP_STATUS_KEY] = "QGROUP_STATUS",
		[BTRFS_QGROUP_RELATION_KEY] = "QGROUP_RELATION",
		[BTRFS_QGROUP_INFO_KEY] = "QGROUP_INFO",
		[BTRFS_QGROUP_LIMIT_KEY] = "QGROUP_LIMIT",
		[BTRFS_PERSISTENT_ITEM_KEY] = "PERSISTENT_ITEM",
		[BTRFS_UUID_KEY_SUBVOL] = "UUID_KEY_SUBVOL",
		[BTRFS_UUID_KEY_RECEIVED_SUBVOL] = "UUID_KEY_RECEIVED_SUBVOL",
	};
	if (type == 0 && objectid == BTRFS_FREE_SPACE_OBJECTID)
		fputs("UNTYPED", out);
	else if (names[type])
		fputs(names[type], out);
	else
		fprintf(out, "UNKNOWN.%d", type);
}

static void print_qgroupid(FILE *out, uint64_t id)
{
	fprintf(out, "%u/%llu", (unsigned)(id >> BTRFS_QGROUP_LEVEL_SHIFT),
		(unsigned long long)(id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)));
}

/* "(OBJECTID TYPE OFFSET)", the part of progs' btrfs_print_key after "key ". */
void ref_print_key(FILE *out, const struct ref_key *key)
{
	fputc('(', out);
	ref_print_objectid_name(out, key->objectid, key->type);
	fputc(' ', out);
	ref_print_key_type(out, key->objectid, key->type);
	fputc(' ', out);
	switch (key->type) {
	case BTRFS_QGROUP_RELATION_KEY:
	case BTRFS_QGROUP_INFO_KEY:
	case BTRFS_QGROUP_LIMIT_KEY:
		print_qgroupid(out, key->offset);
		break;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		fprintf(out, "0x%016llx", (unsigned long long)key->offset);
		break;
	case BTRFS_ROOT_ITEM_KEY:
		/* the offset of a reloc tree's root item is its source subvolume */
		if (key->objectid == BTRFS_TREE_RELOC_OBJECTID)
			ref_print_objectid_name(out, key->offset, key->type);
		else
			fprintf(out, "%llu", (unsigned long long)key->offset);
		break;
	default:
		if (key->offset == (uint64_t)-1)
			fputs("-1", out);
		else
			fprintf(out, "%llu", (unsigned long long)key->offset);
		break;
	}
	fputc(')', out);
}

void ref_print_disk_key(FILE *out, const struct btrfs_disk_key *dk)
{
	struct ref_key k = { LE64(dk->objectid), dk->type, LE64(dk->offset) };
	fputs("key ", out);
	ref_print_key(out, &k);
}

const char *ref_print_bg_flags(uint64_t flags, char *buf, size_t len)
{
	/* progs v6.2's bg_flags_to_str, quirks included: `empty` only clears on
	 * DATA, the profile is the first of RAID10, RAID1, RAID1C3, RAID1C4, DUP,
	 * RAID0, RAID5, RAID6 that is set, and single prints in lower case. */
	bool data = flags & BTRFS_BLOCK_GROUP_DATA;
	bool meta = flags & BTRFS_BLOCK_GROUP_METADATA;
	bool sys = flags & BTRFS_BLOCK_GROUP_SYSTEM;
	static const char *const types[8] = {
		"", "DATA", "SYSTEM", "DATA|SYSTEM",
		"METADATA", "DATA|METADATA", "METADATASYSTEM", "DATA|METADATA|SYSTEM",
	};
	const char *type = types[data | sys << 1 | meta << 2];
	const char *profile = "single";
	if (flags & BTRFS_BLOCK_GROUP_RAID10)
		profile = "RAID10";
	else if (flags & BTRFS_BLOCK_GROUP_RAID1)
		profile = "RAID1";
	else if (flags & BTRFS_BLOCK_GROUP_RAID1C3)
		profile = "RAID1C3";
	else if (flags & BTRFS_BLOCK_GROUP_RAID1C4)
		profile = "RAID1C4";
	else if (flags & BTRFS_BLOCK_GROUP_DUP)
		profile = "DUP";
	else if (flags & BTRFS_BLOCK_GROUP_RAID0)
		profile = "RAID0";
	else if (flags & BTRFS_BLOCK_GROUP_RAID5)
		profile = "RAID5";
	else if (flags & BTRFS_BLOCK_GROUP_RAID6)
		profile = "RAID6";
	snprintf(buf, len, "%s|%s", type, profile);
	return buf;
}

void ref_print_timespec(FILE *out, const void *ts, const char *prefix, const char *suffix)
{
	const struct btrfs_timespec *t = ts;
	uint64_t sec = LE64(t->sec);
	uint32_t nsec = LE32(t->nsec);
	time_t tt = (time_t)sec;
	struct tm tm;
	char stamp[256];
	memset(&tm, 0, sizeof(tm));
	localtime_r(&tt, &tm);
	if (!strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm))
		stamp[0] = '\0';
	fprintf(out, "%s%llu.%u (%s)%s", prefix, (unsigned long long)sec, nsec, stamp, suffix);
}

void ref_print_name(FILE *out, const uint8_t *name, size_t len)
{
	if (len > NAME_LEN)
		len = NAME_LEN;
	if (!len)
		return;
	const uint8_t *nul = memchr(name, 0, len);
	if (nul)
		len = (size_t)(nul - name);
	fwrite(name, 1, len, out);
}

void ref_print_truncated(FILE *out, uint64_t have, uint64_t want)
{
	fprintf(out, "\t\t(item truncated: %llu bytes, expected %llu)\n", (unsigned long long)have,
		(unsigned long long)want);
}

/* ---- Tree blocks ---- */

static void print_header(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *block,
			 uint32_t nr, const char *space)
{
	const struct btrfs_header_disk *h = (const void *)block;
	uint64_t raw = LE64(h->flags);
	uint64_t flags = raw & ~(0xffULL << 56);
	int rev = (int)(raw >> 56);
	const char *kind = h->level ? "node" : "leaf";

	if (h->level)
		fprintf(out, "node %llu level %d items %u free space %s generation %llu owner ",
			(unsigned long long)LE64(h->bytenr), h->level, nr, space,
			(unsigned long long)LE64(h->generation));
	else
		fprintf(out, "leaf %llu items %u free space %s generation %llu owner ",
			(unsigned long long)LE64(h->bytenr), nr, space,
			(unsigned long long)LE64(h->generation));
	ref_print_objectid_name(out, LE64(h->owner), 0);
	fputc('\n', out);

	const char *fstr = "";
	if ((flags & BTRFS_HEADER_FLAG_WRITTEN) && (flags & BTRFS_HEADER_FLAG_RELOC))
		fstr = "WRITTEN|RELOC";
	else if (flags & BTRFS_HEADER_FLAG_WRITTEN)
		fstr = "WRITTEN";
	else if (flags & BTRFS_HEADER_FLAG_RELOC)
		fstr = "RELOC";
	fprintf(out, "%s %llu flags 0x%llx(%s) backref revision %d", kind,
		(unsigned long long)LE64(h->bytenr), (unsigned long long)flags, fstr, rev);
	if (ctx->mode & REF_PRINT_CSUM_HEADERS) {
		unsigned n = ref_csum_size(ctx->csum_type);
		fputs(" csum 0x", out);
		for (unsigned i = 0; i < n; i++)
			fprintf(out, "%02x", h->csum[i]);
	}
	fputc('\n', out);
	fputs("fs uuid ", out);
	ref_print_uuid(out, h->fsid);
	fputs("\nchunk uuid ", out);
	ref_print_uuid(out, h->chunk_tree_uuid);
	fputc('\n', out);
}

static void print_leaf(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *block)
{
	const struct btrfs_header_disk *h = (const void *)block;
	uint32_t nr = LE32(h->nritems);
	uint32_t data_size = ctx->nodesize - (uint32_t)HDR;
	uint32_t fit = data_size / (uint32_t)ITEM; /* item headers that fit */
	const struct btrfs_item_disk *items = (const void *)(block + HDR);

	/* progs' btrfs_leaf_free_space: the data from item 0's end down to the
	 * last item's offset, plus the item headers, in its u32/int arithmetic. */
	uint32_t used = 0;
	if (nr && nr <= fit)
		used = LE32(items[0].offset) + LE32(items[0].size) - LE32(items[nr - 1].offset) +
		       nr * (uint32_t)ITEM;
	else if (nr)
		used = nr * (uint32_t)ITEM;
	char space[16];
	snprintf(space, sizeof(space), "%d", (int)(data_size - used));
	print_header(out, ctx, block, nr, space);

	for (uint32_t i = 0; i < nr; i++) {
		if (i >= fit) {
			fflush(out);
			fprintf(stderr, "ERROR: leaf %llu has %u items, only %u fit in %u bytes\n",
				(unsigned long long)LE64(h->bytenr), nr, fit, ctx->nodesize);
			fprintf(stderr, "ERROR: skip remaining slots\n");
			break;
		}
		uint32_t off = LE32(items[i].offset), size = LE32(items[i].size);
		if (off > data_size || (uint64_t)off + size > data_size) {
			fflush(out);
			fprintf(stderr,
				"ERROR: leaf %llu slot %u pointer invalid, offset %u size %u leaf data limit %u\n",
				(unsigned long long)LE64(h->bytenr), i, off, size, data_size);
			fprintf(stderr, "ERROR: skip remaining slots\n");
			break;
		}
		struct ref_key key = { LE64(items[i].key.objectid), items[i].key.type,
				       LE64(items[i].key.offset) };
		fprintf(out, "\titem %u key ", i);
		ref_print_key(out, &key);
		fprintf(out, " itemoff %u itemsize %u\n", off, size);
		ref_print_item_body(out, ctx, &key, block + HDR + off, size);
	}
}

static void print_node(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *block)
{
	const struct btrfs_header_disk *h = (const void *)block;
	uint32_t nr = LE32(h->nritems);
	uint32_t ptrs = (ctx->nodesize - (uint32_t)HDR) / (uint32_t)PTR;
	const struct btrfs_key_ptr_disk *kp = (const void *)(block + HDR);

	if (nr > ptrs) {
		fflush(out);
		fprintf(stderr,
			"WARNING: node nr_items corrupted, has %u limit %u, continue anyway\n",
			nr, ptrs);
	}
	char space[16];
	snprintf(space, sizeof(space), "%u", ptrs - nr);
	print_header(out, ctx, block, nr, space);
	for (uint32_t i = 0; i < nr && i < ptrs; i++) {
		fputc('\t', out);
		ref_print_disk_key(out, &kp[i].key);
		fprintf(out, " block %llu gen %llu\n", (unsigned long long)LE64(kp[i].blockptr),
			(unsigned long long)LE64(kp[i].generation));
	}
}

void ref_print_block(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *block)
{
	if (ctx->nodesize < HDR + ITEM || ctx->nodesize > BTRFS_MAX_METADATA_BLOCKSIZE) {
		fprintf(out, "(tree block not printable with nodesize %u)\n", ctx->nodesize);
		return;
	}
	if (((const struct btrfs_header_disk *)block)->level)
		print_node(out, ctx, block);
	else
		print_leaf(out, ctx, block);
}
