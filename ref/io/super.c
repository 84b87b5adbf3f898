/* super.c - reading and validating superblock copies. */
#include "ref/internal.h"

#include <errno.h>

/* NULL when the copy at physical `offset` is a valid superblock. */
static const char *super_invalid(const struct btrfs_super_disk *sb, uint64_t offset)
{
	if (LE64(sb->magic) != BTRFS_MAGIC_VALUE)
		return "bad magic";
	if (LE64(sb->bytenr) != offset)
		return "bytenr does not match its position";
	unsigned type = LE16(sb->csum_type);
	if (!ref_csum_size(type))
		return "unknown checksum type";
	uint8_t c[BTRFS_CSUM_BYTES];
	ref_csum(type, (const uint8_t *)sb + BTRFS_CSUM_BYTES, BTRFS_SUPER_SIZE - BTRFS_CSUM_BYTES, c);
	if (memcmp(c, sb->csum, ref_csum_size(type)))
		return "checksum mismatch";
	return NULL;
}

int ref_read_super(sim_volume *vol, unsigned disk, int mirror, struct btrfs_super_disk *sb,
		   bool *valid)
{
	*valid = false;
	if (mirror < 0 || mirror >= BTRFS_SUPER_MIRRORS)
		return -EINVAL;
	uint64_t off = btrfs_super_offset(mirror);
	if (off + BTRFS_SUPER_SIZE > sim_disk_size(vol, disk))
		return -ENOENT;
	int r = sim_read(vol, disk, off, sb, BTRFS_SUPER_SIZE);
	if (r)
		return r;
	*valid = super_invalid(sb, off) == NULL;
	return 0;
}

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* The checks of the kernel's btrfs_validate_super that matter for reading. */
const char *ref_super_fields_invalid(const struct btrfs_super_disk *sb)
{
	uint32_t ss = LE32(sb->sectorsize), ns = LE32(sb->nodesize);
	if (!pow2(ss) || ss < 4096 || ss > 65536)
		return "sectorsize is not a power of two from 4096 to 65536";
	if (!pow2(ns) || ns < ss || ns > 65536)
		return "nodesize is not a power of two from sectorsize to 65536";
	if (LE32(sb->sys_chunk_array_size) > BTRFS_SYS_CHUNK_ARRAY_BYTES)
		return "sys_chunk_array_size exceeds 2048";
	if (sb->root_level >= BTRFS_MAX_TREE_LEVEL || sb->chunk_root_level >= BTRFS_MAX_TREE_LEVEL ||
	    sb->log_root_level >= BTRFS_MAX_TREE_LEVEL)
		return "a root level is 8 or more";
	if (LE64(sb->root) % ss || LE64(sb->chunk_root) % ss || LE64(sb->log_root) % ss)
		return "a root is not aligned to the sectorsize";
	if (!LE64(sb->root) || !LE64(sb->chunk_root))
		return "root or chunk root is zero";
	if (!LE64(sb->num_devices))
		return "num_devices is zero";
	/* btrfs_validate_super's: each of these fails the kernel's mount. */
	if (LE32(sb->leafsize) != ns)
		return "leafsize differs from nodesize";
	if (LE32(sb->stripesize) != ss)
		return "stripesize differs from sectorsize";
	if (LE64(sb->bytes_used) < 6 * (uint64_t)ns)
		return "bytes_used is below six tree blocks";
	if (LE32(sb->sys_chunk_array_size) < sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk))
		return "sys_chunk_array_size is below one chunk item";
	bool meta_uuid = LE64(sb->incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID;
	if (memcmp(meta_uuid ? sb->metadata_uuid : sb->fsid, sb->dev_item.fsid, BTRFS_FSID_BYTES))
		return meta_uuid ? "dev_item fsid differs from the superblock metadata_uuid"
				 : "dev_item fsid differs from the superblock fsid";
	return NULL;
}
