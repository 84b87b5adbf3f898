/*
 * wl_errno.c - errno values by their Linux names and back, from glibc's
 * strerrorname_np (glibc 2.32 and later), plus the aliases glibc names by
 * their other spelling (EWOULDBLOCK is EAGAIN, ...).
 */
#include "workload.h"

#include <errno.h>
#include <string.h>

/* Linux's user-visible errnos stop at EHWPOISON (133). */
#define WL_ERRNO_MAX 255

static const struct {
	const char *name;
	int e;
} aliases[] = {
	{ "EWOULDBLOCK", EWOULDBLOCK },
	{ "EDEADLOCK", EDEADLOCK },
	{ "ENOTSUP", ENOTSUP },
};

const char *wl_errno_name(int e)
{
	if (e == 0)
		return "0";
	if (e < 0 || e > WL_ERRNO_MAX)
		return NULL;
	return strerrorname_np(e);
}

int wl_errno_parse(const char *name)
{
	if (!strcmp(name, "0") || !strcmp(name, "OK"))
		return 0;
	if (name[0] != 'E')
		return -1;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(name, aliases[i].name))
			return aliases[i].e;
	for (int e = 1; e <= WL_ERRNO_MAX; e++) {
		const char *n = strerrorname_np(e);
		if (n && !strcmp(n, name))
			return e;
	}
	return -1;
}
