/* csum.c - Btrfs checksums and name hashes (see csum.h and FORMAT-FACTS 1.6). */
#include "ref/csum.h"

#include <endian.h>
#include <errno.h>
#include <isa-l/crc.h>
#include <limits.h>
#include <sodium.h>
#include <string.h>
#include <xxhash.h>

unsigned ref_csum_size(unsigned type)
{
	static const unsigned sizes[] = { 4, 8, 32, 32 };
	return type < 4 ? sizes[type] : 0;
}

const char *ref_csum_name(unsigned type)
{
	static const char *const names[] = { "crc32c", "xxhash64", "sha256", "blake2b" };
	return type < 4 ? names[type] : "unknown";
}

uint32_t ref_crc32c_raw(uint32_t seed, const void *data, size_t len)
{
	const unsigned char *p = data;
	while (len > INT_MAX) { /* crc32_iscsi takes an int length */
		seed = crc32_iscsi((unsigned char *)p, INT_MAX, seed);
		p += INT_MAX;
		len -= INT_MAX;
	}
	return crc32_iscsi((unsigned char *)p, (int)len, seed);
}

int ref_csum(unsigned type, const void *data, size_t len, uint8_t out[32])
{
	memset(out, 0, 32);
	switch (type) {
	case REF_CSUM_CRC32C: {
		uint32_t c = htole32(~ref_crc32c_raw(~0u, data, len));
		memcpy(out, &c, 4);
		return 0;
	}
	case REF_CSUM_XXHASH: {
		uint64_t h = htole64(XXH64(data, len, 0));
		memcpy(out, &h, 8);
		return 0;
	}
	case REF_CSUM_SHA256:
		crypto_hash_sha256(out, data, len);
		return 0;
	case REF_CSUM_BLAKE2:
		crypto_generichash(out, 32, data, len, NULL, 0);
		return 0;
	default:
		return -EINVAL;
	}
}

uint64_t ref_name_hash(const char *name, size_t len)
{
	return ref_crc32c_raw(~1u, name, len);
}

uint64_t ref_extref_hash(uint64_t parent, const char *name, size_t len)
{
	return ref_crc32c_raw((uint32_t)parent, name, len);
}

uint64_t ref_extent_data_ref_hash(uint64_t root, uint64_t owner, uint64_t offset)
{
	uint64_t le;
	le = htole64(root);
	uint32_t high = ref_crc32c_raw(~0u, &le, 8);
	le = htole64(owner);
	uint32_t low = ref_crc32c_raw(~0u, &le, 8);
	le = htole64(offset);
	low = ref_crc32c_raw(low, &le, 8);
	return ((uint64_t)high << 31) ^ (uint64_t)low;
}
