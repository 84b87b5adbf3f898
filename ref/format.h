/*
 * format.h - the Btrfs on-disk structures that <linux/btrfs_tree.h> (Debian 12's
 * linux-libc-dev 6.1) does not carry: superblock, backup roots, tree block
 * header, leaf item and node key pointer.  Every other item structure comes
 * from that header.  All integers on disk are little-endian; the readers use
 * le16/le32/le64 below, never the raw fields.
 */
#ifndef BTRSIM_REF_FORMAT_H
#define BTRSIM_REF_FORMAT_H

#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BTRFS_SUPER_OFFSET 0x10000u
#define BTRFS_SUPER_SIZE 4096u
#define BTRFS_SUPER_MIRRORS 3
#define BTRFS_MAGIC_VALUE UINT64_C(0x4D5F53665248425F) /* "_BHRfS_M" */
#define BTRFS_SYS_CHUNK_ARRAY_BYTES 2048
#define BTRFS_BACKUP_ROOTS 4
#define BTRFS_LABEL_BYTES 256
#define BTRFS_CSUM_BYTES 32
#define BTRFS_FSID_BYTES 16
#define BTRFS_MAX_TREE_LEVEL 8
#define BTRFS_STRIPE_LEN_DEFAULT 0x10000u

#define BTRFS_NAME_LEN 255
#ifndef BTRFS_EXTENT_OWNER_REF_KEY /* simple quotas, newer than linux-libc-dev 6.1 */
#define BTRFS_EXTENT_OWNER_REF_KEY 172
#endif

/* Inode flags (btrfs_inode.h, not in the uapi header). */
#define BTRFS_INODE_NODATASUM (1u << 0)
#define BTRFS_INODE_NODATACOW (1u << 1)
#define BTRFS_INODE_READONLY (1u << 2)
#define BTRFS_INODE_NOCOMPRESS (1u << 3)
#define BTRFS_INODE_PREALLOC (1u << 4)
#define BTRFS_INODE_SYNC (1u << 5)
#define BTRFS_INODE_IMMUTABLE (1u << 6)
#define BTRFS_INODE_APPEND (1u << 7)
#define BTRFS_INODE_NODUMP (1u << 8)
#define BTRFS_INODE_NOATIME (1u << 9)
#define BTRFS_INODE_DIRSYNC (1u << 10)
#define BTRFS_INODE_COMPRESS (1u << 11)
#define BTRFS_INODE_ROOT_ITEM_INIT (1u << 31)

/* Physical offset of superblock copy i (0: 64 KiB, 1: 64 MiB, 2: 256 GiB). */
static inline uint64_t btrfs_super_offset(int i)
{
	return i == 0 ? BTRFS_SUPER_OFFSET : (UINT64_C(16) << 10) << (12 * i);
}

struct btrfs_root_backup_disk {
	__le64 tree_root, tree_root_gen;
	__le64 chunk_root, chunk_root_gen;
	__le64 extent_root, extent_root_gen;
	__le64 fs_root, fs_root_gen;
	__le64 dev_root, dev_root_gen;
	__le64 csum_root, csum_root_gen;
	__le64 total_bytes, bytes_used, num_devices;
	__le64 unused_64[4];
	__u8 tree_root_level, chunk_root_level, extent_root_level, fs_root_level, dev_root_level,
		csum_root_level;
	__u8 unused_8[10];
} __attribute__((packed));

struct btrfs_super_disk {
	__u8 csum[BTRFS_CSUM_BYTES];
	__u8 fsid[BTRFS_FSID_BYTES];
	__le64 bytenr;
	__le64 flags;
	__le64 magic;
	__le64 generation;
	__le64 root;
	__le64 chunk_root;
	__le64 log_root;
	__le64 log_root_transid;
	__le64 total_bytes;
	__le64 bytes_used;
	__le64 root_dir_objectid;
	__le64 num_devices;
	__le32 sectorsize;
	__le32 nodesize;
	__le32 leafsize;
	__le32 stripesize;
	__le32 sys_chunk_array_size;
	__le64 chunk_root_generation;
	__le64 compat_flags;
	__le64 compat_ro_flags;
	__le64 incompat_flags;
	__le16 csum_type;
	__u8 root_level;
	__u8 chunk_root_level;
	__u8 log_root_level;
	struct btrfs_dev_item dev_item;
	char label[BTRFS_LABEL_BYTES];
	__le64 cache_generation;
	__le64 uuid_tree_generation;
	__u8 metadata_uuid[BTRFS_FSID_BYTES];
	__le64 nr_global_roots;
	__le64 reserved[27];
	__u8 sys_chunk_array[BTRFS_SYS_CHUNK_ARRAY_BYTES];
	struct btrfs_root_backup_disk super_roots[BTRFS_BACKUP_ROOTS];
	__u8 padding[565];
} __attribute__((packed));

struct btrfs_header_disk {
	__u8 csum[BTRFS_CSUM_BYTES];
	__u8 fsid[BTRFS_FSID_BYTES];
	__le64 bytenr;
	__le64 flags; /* top byte: backref revision */
	__u8 chunk_tree_uuid[BTRFS_UUID_SIZE];
	__le64 generation;
	__le64 owner;
	__le32 nritems;
	__u8 level;
} __attribute__((packed));

struct btrfs_item_disk {
	struct btrfs_disk_key key;
	__le32 offset; /* from the end of the header */
	__le32 size;
} __attribute__((packed));

struct btrfs_key_ptr_disk {
	struct btrfs_disk_key key;
	__le64 blockptr;
	__le64 generation;
} __attribute__((packed));

_Static_assert(sizeof(struct btrfs_root_backup_disk) == 168, "backup root is 168 bytes");
_Static_assert(sizeof(struct btrfs_super_disk) == BTRFS_SUPER_SIZE, "superblock is 4096 bytes");
_Static_assert(offsetof(struct btrfs_super_disk, magic) == 0x40, "magic at 0x40");
_Static_assert(offsetof(struct btrfs_super_disk, csum_type) == 0xc4, "csum_type at 0xc4");
_Static_assert(offsetof(struct btrfs_super_disk, dev_item) == 0xc9, "dev_item at 0xc9");
_Static_assert(offsetof(struct btrfs_super_disk, label) == 0x12b, "label at 0x12b");
_Static_assert(offsetof(struct btrfs_super_disk, sys_chunk_array) == 0x32b, "sys array at 0x32b");
_Static_assert(offsetof(struct btrfs_super_disk, super_roots) == 0xb2b, "backups at 0xb2b");
_Static_assert(sizeof(struct btrfs_dev_item) == 98, "dev_item is 98 bytes");
_Static_assert(sizeof(struct btrfs_header_disk) == 101, "header is 101 bytes");
_Static_assert(sizeof(struct btrfs_item_disk) == 25, "item is 25 bytes");
_Static_assert(sizeof(struct btrfs_key_ptr_disk) == 33, "key pointer is 33 bytes");
_Static_assert(sizeof(struct btrfs_inode_item) == 160, "inode item is 160 bytes");
_Static_assert(sizeof(struct btrfs_root_item) == 439, "root item is 439 bytes");
_Static_assert(sizeof(struct btrfs_chunk) == 80, "chunk item is 48 bytes + one stripe");

/* Little-endian loads from any alignment. */
static inline uint16_t le16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}
static inline uint32_t le32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}
static inline uint64_t le64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}
#define LE16(field) le16(&(field))
#define LE32(field) le32(&(field))
#define LE64(field) le64(&(field))

#endif
