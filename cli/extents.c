/* extents.c - operands, path walking and file extent items for `du` and `filefrag`. */
#include "cli/extents.h"
#include "cli/fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FE_HEADER offsetof(struct btrfs_file_extent_item, disk_bytenr) /* 21 bytes */

/* Whether the host file at path holds a Btrfs superblock's magic. */
static bool host_btrfs_image(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	uint8_t magic[8];
	ssize_t n = pread(fd, magic, sizeof(magic),
			  BTRFS_SUPER_OFFSET + offsetof(struct btrfs_super_disk, magic));
	close(fd);
	return n == (ssize_t)sizeof(magic) && le64(magic) == BTRFS_MAGIC_VALUE;
}

int cli_split_operands(char **ops, int n)
{
	int i = 1;
	while (i < n - 1 && host_btrfs_image(ops[i]))
		i++;
	return i;
}

int cli_path_fail(const struct cli_cmd *cmd, const char *path, int err, const char *detail)
{
	char es[96];
	return cli_fail(cmd, "%s: %s%s%s", path, cli_errno_str(err, es, sizeof(es)),
			detail ? ": " : "", detail ? detail : "");
}

int cli_path_walk(ref_fs *fs, const char *path, bool follow, struct ref_ino *out,
		  struct ref_stat *st, const char **detail)
{
	*detail = NULL;
	/* ref's own path walk, Linux's rules (vfs_resolve); the stat walks it
	 * again, so that a snapshot's stand-in is seen from its directory */
	int r = ref_lookup_path(fs, path, follow, out);
	if (!r)
		r = ref_stat_path(fs, path, follow, st);
	if (r && r != -ENOENT && r != -ENOTDIR && r != -ELOOP && r != -ENAMETOOLONG &&
	    r != -ENOMEM)
		*detail = ref_error(fs);
	return r;
}

int cli_file_extents(ref_fs *fs, const struct ref_ino *ino, cli_fext_fn fn, void *ctx, char *err,
		     size_t errlen)
{
	*err = '\0';
	struct ref_root root;
	int r = ref_find_root(fs, ino->subvol, &root);
	if (r) {
		snprintf(err, errlen, "%s", ref_error(fs));
		return r;
	}
	struct ref_path path;
	struct ref_key key = { ino->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	int ret = 0;
	r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid != ino->ino || k.type != BTRFS_EXTENT_DATA_KEY)
			break;
		const struct btrfs_file_extent_item *fi = (const void *)data;
		if (size < FE_HEADER ||
		    (fi->type != BTRFS_FILE_EXTENT_INLINE && size != sizeof(*fi))) {
			snprintf(err, errlen,
				 "subvolume %llu inode %llu: file extent item at %llu is %u bytes",
				 (unsigned long long)ino->subvol, (unsigned long long)ino->ino,
				 (unsigned long long)k.offset, size);
			ret = -EUCLEAN;
			break;
		}
		struct cli_fext e = {
			.file_off = k.offset,
			.item_size = size,
			.type = fi->type,
			.compression = fi->compression,
			.generation = LE64(fi->generation),
			.ram_bytes = LE64(fi->ram_bytes),
			.path = &path,
		};
		if (fi->type != BTRFS_FILE_EXTENT_INLINE) {
			e.disk_bytenr = LE64(fi->disk_bytenr);
			e.disk_num_bytes = LE64(fi->disk_num_bytes);
			e.offset = LE64(fi->offset);
			e.num_bytes = LE64(fi->num_bytes);
		}
		/* The item lives in the path's leaf: used before moving on. */
		if ((ret = fn(ctx, &e)))
			break;
		r = ref_next(fs, &path);
	}
	if (r < 0) {
		snprintf(err, errlen, "%s", ref_error(fs));
		ret = r;
	} else if (ret < 0 && !*err) {
		snprintf(err, errlen, "%s", ref_error(fs));
	}
	ref_path_release(fs, &path);
	return ret;
}
