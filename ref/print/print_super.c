/*
 * print_super.c - a superblock as `btrfs inspect-internal dump-super [-f]`
 * (btrfs-progs v6.2) prints it: the fields, checksum and magic checks,
 * readable flag names, and with -f the sys_chunk_array and backup roots.
 */
#include "ref/print.h"

#include "ref/csum.h"

#include <ctype.h>
#include <string.h>

struct flag_name {
	uint64_t bit;
	const char *name;
};

#define SUPER_FLAG_SUPP                                                                     \
	(BTRFS_HEADER_FLAG_WRITTEN | BTRFS_HEADER_FLAG_RELOC | BTRFS_SUPER_FLAG_CHANGING_FSID | \
	 BTRFS_SUPER_FLAG_SEEDING | BTRFS_SUPER_FLAG_METADUMP | BTRFS_SUPER_FLAG_METADUMP_V2)
/* What progs v6.2 supports (and so does not call "unknown"); VERITY is
 * supported without a name, EXTENT_TREE_V2 has a name but is not supported. */
#define COMPAT_RO_SUPP 0xfULL
#define INCOMPAT_SUPP 0x1fffULL

static const struct flag_name super_flags[] = {
	{ BTRFS_HEADER_FLAG_WRITTEN, "WRITTEN" },
	{ BTRFS_HEADER_FLAG_RELOC, "RELOC" },
	{ BTRFS_SUPER_FLAG_CHANGING_FSID, "CHANGING_FSID" },
	{ BTRFS_SUPER_FLAG_SEEDING, "SEEDING" },
	{ BTRFS_SUPER_FLAG_METADUMP, "METADUMP" },
	{ BTRFS_SUPER_FLAG_METADUMP_V2, "METADUMP_V2" },
	{ 0, NULL },
};

static const struct flag_name compat_ro_flags[] = {
	{ BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE, "FREE_SPACE_TREE" },
	{ BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID, "FREE_SPACE_TREE_VALID" },
	{ BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE, "BLOCK_GROUP_TREE" },
	{ 0, NULL },
};

static const struct flag_name incompat_flags[] = {
	{ BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF, "MIXED_BACKREF" },
	{ BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL, "DEFAULT_SUBVOL" },
	{ BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS, "MIXED_GROUPS" },
	{ BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO, "COMPRESS_LZO" },
	{ BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD, "COMPRESS_ZSTD" },
	{ BTRFS_FEATURE_INCOMPAT_BIG_METADATA, "BIG_METADATA" },
	{ BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF, "EXTENDED_IREF" },
	{ BTRFS_FEATURE_INCOMPAT_RAID56, "RAID56" },
	{ BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA, "SKINNY_METADATA" },
	{ BTRFS_FEATURE_INCOMPAT_NO_HOLES, "NO_HOLES" },
	{ BTRFS_FEATURE_INCOMPAT_METADATA_UUID, "METADATA_UUID" },
	{ BTRFS_FEATURE_INCOMPAT_RAID1C34, "RAID1C34" },
	{ BTRFS_FEATURE_INCOMPAT_ZONED, "ZONED" },
	{ BTRFS_FEATURE_INCOMPAT_EXTENT_TREE_V2, "EXTENT_TREE_V2" },
	{ 0, NULL },
};

/* progs' __print_readable_flag, quirk included: a named bit prints when it
 * is set and any supported bit is set. */
static void print_flag_names(FILE *out, uint64_t flags, const struct flag_name *names,
			     uint64_t supported)
{
	if (!flags)
		return;
	bool first = true;
	fputs("\t\t\t( ", out);
	for (const struct flag_name *n = names; n->name; n++) {
		if ((flags & supported) && (flags & n->bit)) {
			fprintf(out, first ? "%s " : "|\n\t\t\t  %s ", n->name);
			first = false;
		}
	}
	uint64_t unknown = flags & ~supported;
	if (unknown)
		fprintf(out, first ? "unknown flag: 0x%llx " : "|\n\t\t\t  unknown flag: 0x%llx ",
			(unsigned long long)unknown);
	fputs(")\n", out);
}

static void print_sys_chunk_array(FILE *out, const struct btrfs_super_disk *sb)
{
	uint32_t array_size = LE32(sb->sys_chunk_array_size);
	const uint8_t *array = sb->sys_chunk_array;
	const uint32_t key_size = sizeof(struct btrfs_disk_key);
	const uint32_t chunk_base = offsetof(struct btrfs_chunk, stripe);
	const uint32_t stripe_size = sizeof(struct btrfs_stripe);

	if (array_size > BTRFS_SYS_CHUNK_ARRAY_BYTES) {
		fflush(out);
		fprintf(stderr, "ERROR: sys_array_size %u shouldn't exceed %u bytes\n", array_size,
			BTRFS_SYS_CHUNK_ARRAY_BYTES);
		return;
	}
	uint32_t cur = 0, len = 0;
	for (int item = 0; cur < array_size; item++) {
		len = key_size;
		if (cur + len > array_size)
			goto short_read;
		const struct btrfs_disk_key *dk = (const void *)(array + cur);
		cur += len;
		fprintf(out, "\titem %d ", item);
		ref_print_disk_key(out, dk);
		fputc('\n', out);
		if (dk->type != BTRFS_CHUNK_ITEM_KEY) {
			fflush(out);
			fprintf(stderr, "ERROR: unexpected item type %u in sys_array at offset %u\n",
				dk->type, cur);
			return;
		}
		len = chunk_base + stripe_size;
		if (cur + len > array_size)
			goto short_read;
		const struct btrfs_chunk *c = (const void *)(array + cur);
		uint32_t num = LE16(c->num_stripes);
		if (!num) {
			fflush(out);
			fprintf(stderr,
				"ERROR: invalid number of stripes %u in sys_array at offset %u\n", num,
				cur);
			return;
		}
		len = chunk_base + num * stripe_size;
		if (cur + len > array_size)
			goto short_read;
		ref_print_chunk(out, c, len);
		cur += len;
	}
	return;
short_read:
	fflush(out);
	fprintf(stderr, "ERROR: sys_array too short to read %u bytes at offset %u\n", len, cur);
}

static void print_backup_roots(FILE *out, const struct btrfs_super_disk *sb)
{
	bool v2 = LE64(sb->incompat_flags) & BTRFS_FEATURE_INCOMPAT_EXTENT_TREE_V2;
	for (int i = 0; i < BTRFS_BACKUP_ROOTS; i++) {
		const struct btrfs_root_backup_disk *b = &sb->super_roots[i];
		if (!LE64(b->tree_root) && !LE64(b->tree_root_gen))
			continue;
		fprintf(out, "\tbackup %d:\n", i);
		fprintf(out, "\t\tbackup_tree_root:\t%llu\tgen: %llu\tlevel: %d\n",
			(unsigned long long)LE64(b->tree_root),
			(unsigned long long)LE64(b->tree_root_gen), b->tree_root_level);
		fprintf(out, "\t\tbackup_chunk_root:\t%llu\tgen: %llu\tlevel: %d\n",
			(unsigned long long)LE64(b->chunk_root),
			(unsigned long long)LE64(b->chunk_root_gen), b->chunk_root_level);
		fprintf(out, "\t\t%s:\t%llu\tgen: %llu\tlevel: %d\n",
			v2 ? "backup_block_group_root" : "backup_extent_root",
			(unsigned long long)LE64(b->extent_root),
			(unsigned long long)LE64(b->extent_root_gen), b->extent_root_level);
		fprintf(out, "\t\tbackup_fs_root:\t\t%llu\tgen: %llu\tlevel: %d\n",
			(unsigned long long)LE64(b->fs_root), (unsigned long long)LE64(b->fs_root_gen),
			b->fs_root_level);
		fprintf(out, "\t\tbackup_dev_root:\t%llu\tgen: %llu\tlevel: %d\n",
			(unsigned long long)LE64(b->dev_root),
			(unsigned long long)LE64(b->dev_root_gen), b->dev_root_level);
		fprintf(out, "\t\tcsum_root:\t%llu\tgen: %llu\tlevel: %d\n",
			(unsigned long long)LE64(b->csum_root),
			(unsigned long long)LE64(b->csum_root_gen), b->csum_root_level);
		fprintf(out, "\t\tbackup_total_bytes:\t%llu\n",
			(unsigned long long)LE64(b->total_bytes));
		fprintf(out, "\t\tbackup_bytes_used:\t%llu\n", (unsigned long long)LE64(b->bytes_used));
		fprintf(out, "\t\tbackup_num_devices:\t%llu\n",
			(unsigned long long)LE64(b->num_devices));
		fputc('\n', out);
	}
}

static void print_printable(FILE *out, const void *p, size_t n, bool stop_at_nul)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n && !(stop_at_nul && !s[i]); i++)
		fputc(isprint(s[i]) ? s[i] : '.', out);
}

void ref_print_super(FILE *out, const struct btrfs_super_disk *sb, uint64_t bytenr,
		     const char *dev, bool full)
{
	const struct btrfs_dev_item *di = &sb->dev_item;
	uint16_t csum_type = LE16(sb->csum_type);
	unsigned csum_size = ref_csum_size(csum_type);
	bool valid_type = csum_size != 0;
	uint64_t incompat = LE64(sb->incompat_flags);
	bool meta_uuid = incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID;

	fprintf(out, "superblock: bytenr=%llu, device=%s\n", (unsigned long long)bytenr, dev);
	fputs("---------------------------------------------------------\n", out);

	/* progs' names (ref_csum_name says blake2b) */
	static const char *const csum_names[] = { "crc32c", "xxhash64", "sha256", "blake2" };
	fprintf(out, "csum_type\t\t%u (%s)\n", csum_type,
		valid_type && csum_type < 4 ? csum_names[csum_type] : "INVALID");
	if (!valid_type)
		csum_size = BTRFS_CSUM_BYTES;
	fprintf(out, "csum_size\t\t%u\n", csum_size);
	fputs("csum\t\t\t0x", out);
	for (unsigned i = 0; i < csum_size; i++)
		fprintf(out, "%02x", sb->csum[i]);
	if (!valid_type) {
		fputs(" [UNKNOWN CSUM TYPE OR SIZE]", out);
	} else {
		uint8_t c[BTRFS_CSUM_BYTES];
		ref_csum(csum_type, (const uint8_t *)sb + BTRFS_CSUM_BYTES,
			 BTRFS_SUPER_SIZE - BTRFS_CSUM_BYTES, c);
		fputs(memcmp(c, sb->csum, csum_size) ? " [DON'T MATCH]" : " [match]", out);
	}
	fputc('\n', out);

	fprintf(out, "bytenr\t\t\t%llu\n", (unsigned long long)LE64(sb->bytenr));
	fprintf(out, "flags\t\t\t0x%llx\n", (unsigned long long)LE64(sb->flags));
	print_flag_names(out, LE64(sb->flags), super_flags, SUPER_FLAG_SUPP);
	fputs("magic\t\t\t", out);
	print_printable(out, &sb->magic, 8, false);
	fputs(LE64(sb->magic) == BTRFS_MAGIC_VALUE ? " [match]\n" : " [DON'T MATCH]\n", out);

	fputs("fsid\t\t\t", out);
	ref_print_uuid(out, sb->fsid);
	fputs("\nmetadata_uuid\t\t", out);
	ref_print_uuid(out, meta_uuid ? sb->metadata_uuid : sb->fsid);
	fputs("\nlabel\t\t\t", out);
	print_printable(out, sb->label, BTRFS_LABEL_BYTES, true);
	fputc('\n', out);

	fprintf(out, "generation\t\t%llu\n", (unsigned long long)LE64(sb->generation));
	fprintf(out, "root\t\t\t%llu\n", (unsigned long long)LE64(sb->root));
	fprintf(out, "sys_array_size\t\t%u\n", LE32(sb->sys_chunk_array_size));
	fprintf(out, "chunk_root_generation\t%llu\n",
		(unsigned long long)LE64(sb->chunk_root_generation));
	fprintf(out, "root_level\t\t%u\n", sb->root_level);
	fprintf(out, "chunk_root\t\t%llu\n", (unsigned long long)LE64(sb->chunk_root));
	fprintf(out, "chunk_root_level\t%u\n", sb->chunk_root_level);
	fprintf(out, "log_root\t\t%llu\n", (unsigned long long)LE64(sb->log_root));
	fprintf(out, "log_root_transid (deprecated)\t%llu\n",
		(unsigned long long)LE64(sb->log_root_transid));
	fprintf(out, "log_root_level\t\t%u\n", sb->log_root_level);
	fprintf(out, "total_bytes\t\t%llu\n", (unsigned long long)LE64(sb->total_bytes));
	fprintf(out, "bytes_used\t\t%llu\n", (unsigned long long)LE64(sb->bytes_used));
	fprintf(out, "sectorsize\t\t%u\n", LE32(sb->sectorsize));
	fprintf(out, "nodesize\t\t%u\n", LE32(sb->nodesize));
	fprintf(out, "leafsize (deprecated)\t%u\n", LE32(sb->leafsize));
	fprintf(out, "stripesize\t\t%u\n", LE32(sb->stripesize));
	fprintf(out, "root_dir\t\t%llu\n", (unsigned long long)LE64(sb->root_dir_objectid));
	fprintf(out, "num_devices\t\t%llu\n", (unsigned long long)LE64(sb->num_devices));
	fprintf(out, "compat_flags\t\t0x%llx\n", (unsigned long long)LE64(sb->compat_flags));
	fprintf(out, "compat_ro_flags\t\t0x%llx\n", (unsigned long long)LE64(sb->compat_ro_flags));
	print_flag_names(out, LE64(sb->compat_ro_flags), compat_ro_flags, COMPAT_RO_SUPP);
	fprintf(out, "incompat_flags\t\t0x%llx\n", (unsigned long long)incompat);
	print_flag_names(out, incompat, incompat_flags, INCOMPAT_SUPP);
	fprintf(out, "cache_generation\t%llu\n", (unsigned long long)LE64(sb->cache_generation));
	fprintf(out, "uuid_tree_generation\t%llu\n",
		(unsigned long long)LE64(sb->uuid_tree_generation));

	fputs("dev_item.uuid\t\t", out);
	ref_print_uuid(out, di->uuid);
	fputs("\ndev_item.fsid\t\t", out);
	ref_print_uuid(out, di->fsid);
	bool fsid_match = !memcmp(di->fsid, meta_uuid ? sb->metadata_uuid : sb->fsid,
				  BTRFS_FSID_BYTES);
	fputs(fsid_match ? " [match]\n" : " [DON'T MATCH]\n", out);
	fprintf(out, "dev_item.type\t\t%llu\n", (unsigned long long)LE64(di->type));
	fprintf(out, "dev_item.total_bytes\t%llu\n", (unsigned long long)LE64(di->total_bytes));
	fprintf(out, "dev_item.bytes_used\t%llu\n", (unsigned long long)LE64(di->bytes_used));
	fprintf(out, "dev_item.io_align\t%u\n", LE32(di->io_align));
	fprintf(out, "dev_item.io_width\t%u\n", LE32(di->io_width));
	fprintf(out, "dev_item.sector_size\t%u\n", LE32(di->sector_size));
	fprintf(out, "dev_item.devid\t\t%llu\n", (unsigned long long)LE64(di->devid));
	fprintf(out, "dev_item.dev_group\t%u\n", LE32(di->dev_group));
	fprintf(out, "dev_item.seek_speed\t%u\n", di->seek_speed);
	fprintf(out, "dev_item.bandwidth\t%u\n", di->bandwidth);
	fprintf(out, "dev_item.generation\t%llu\n", (unsigned long long)LE64(di->generation));
	if (full) {
		fprintf(out, "sys_chunk_array[%d]:\n", BTRFS_SYS_CHUNK_ARRAY_BYTES);
		print_sys_chunk_array(out, sb);
		fprintf(out, "backup_roots[%d]:\n", BTRFS_BACKUP_ROOTS);
		print_backup_roots(out, sb);
	}
}
