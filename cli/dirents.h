/*
 * dirents.h - the entries of a directory of the file system, read whole into
 * an array (for the commands that walk a tree: ls, extract, manifest, rm -r).
 */
#ifndef BTRSIM_CLI_DIRENTS_H
#define BTRSIM_CLI_DIRENTS_H

#include "ref/ref.h"

#include <stddef.h>
#include <stdint.h>

struct cli_dirent {
	char *name; /* a NUL-terminated copy */
	size_t len;
	struct ref_ino ino;
	uint8_t type; /* BTRFS_FT_* */
};

struct cli_dirents {
	struct cli_dirent *e;
	size_t n, cap;
};

/* Reads the entries of dir, in DIR_INDEX order, into *out (zeroed first).
 * Returns 0, or -ENOMEM when out of memory, or ref_readdir's failure (its
 * message in ref_error()); after a failure *out holds the entries read before
 * it.  Either way *out is to be freed with cli_dirents_free. */
int cli_dirents_read(ref_fs *fs, const struct ref_ino *dir, struct cli_dirents *out);

/* Frees the names and the array; *d is left empty. */
void cli_dirents_free(struct cli_dirents *d);

#endif
