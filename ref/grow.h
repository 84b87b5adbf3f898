/*
 * grow.h - room for one more element at the end of a growable array
 * (ref/ only): GROW(arr, n, cap) doubles cap (from 16) when n has reached
 * it; 0, or -ENOMEM with the array as it was.
 */
#ifndef BTRSIM_REF_GROW_H
#define BTRSIM_REF_GROW_H

#include <errno.h>
#include <stdlib.h>

static inline int ref_grow(void **arr, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}
#define GROW(arr, n, cap) ref_grow((void **)&(arr), (n), &(cap), sizeof(*(arr)))

#endif
