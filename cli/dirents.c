/*
 * dirents.c - reads a directory's entries (ref_readdir) into a growable array
 * of name copies, for the commands that walk a tree; see dirents.h.
 */
#include "cli/dirents.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>

static int add_dirent(void *ctx, const struct ref_dirent *de)
{
	struct cli_dirents *d = ctx;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct cli_dirent *p = realloc(d->e, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->e = p;
		d->cap = cap;
	}
	char *name = cli_name_dup(de->name, de->len);
	if (!name)
		return -ENOMEM;
	d->e[d->n++] = (struct cli_dirent){ name, de->len, de->ino, de->type };
	return 0;
}

int cli_dirents_read(ref_fs *fs, const struct ref_ino *dir, struct cli_dirents *out)
{
	*out = (struct cli_dirents){ 0 };
	return ref_readdir(fs, dir, add_dirent, out);
}

void cli_dirents_free(struct cli_dirents *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].name);
	free(d->e);
	*d = (struct cli_dirents){ 0 };
}
