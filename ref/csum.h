/*
 * csum.h - the checksums and hashes of the Btrfs format, on Debian's libraries:
 * crc32c on ISA-L's crc32_iscsi, xxhash64 on libxxhash, sha256 and blake2b-256
 * on libsodium.
 */
#ifndef BTRSIM_REF_CSUM_H
#define BTRSIM_REF_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* Values of the superblock's csum_type. */
enum ref_csum_type {
	REF_CSUM_CRC32C = 0,
	REF_CSUM_XXHASH = 1,
	REF_CSUM_SHA256 = 2,
	REF_CSUM_BLAKE2 = 3,
};

/* Digest bytes of a type (4, 8, 32, 32), or 0 for an unknown type. */
unsigned ref_csum_size(unsigned type);
const char *ref_csum_name(unsigned type);
/* Writes the digest into out (32 bytes, zero-padded past the digest size).
 * Returns 0, or -EINVAL for an unknown type. */
int ref_csum(unsigned type, const void *data, size_t len, uint8_t out[32]);

/* The raw reflected crc32c update, no inversion (btrfs's crc32c_le). */
uint32_t ref_crc32c_raw(uint32_t seed, const void *data, size_t len);
/* DIR_ITEM and XATTR_ITEM key offset. */
uint64_t ref_name_hash(const char *name, size_t len);
/* INODE_EXTREF key offset. */
uint64_t ref_extref_hash(uint64_t parent, const char *name, size_t len);
/* EXTENT_DATA_REF key offset (and inline order). */
uint64_t ref_extent_data_ref_hash(uint64_t root, uint64_t owner, uint64_t offset);

#endif
