/* u64map.c - open addressing with linear probing; grows at 1/2 load. */
#include "ref/tree/u64map.h"

#include <stdlib.h>

static size_t slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static int grow(struct u64map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	uint64_t *keys = malloc(cap * sizeof(*keys)), *vals = malloc(cap * sizeof(*vals));
	uint8_t *used = calloc(cap, 1);
	if (!keys || !vals || !used) {
		free(keys);
		free(vals);
		free(used);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t s = slot(m->keys[i], cap);
		while (used[s])
			s = (s + 1) & (cap - 1);
		used[s] = 1;
		keys[s] = m->keys[i];
		vals[s] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	free(m->used);
	m->keys = keys;
	m->vals = vals;
	m->used = used;
	m->cap = cap;
	return 0;
}

uint64_t *u64map_get(struct u64map *m, uint64_t key, bool insert)
{
	if (m->cap) {
		for (size_t s = slot(key, m->cap);; s = (s + 1) & (m->cap - 1)) {
			if (!m->used[s])
				break;
			if (m->keys[s] == key)
				return &m->vals[s];
		}
	}
	if (!insert)
		return NULL;
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return NULL;
	size_t s = slot(key, m->cap);
	while (m->used[s])
		s = (s + 1) & (m->cap - 1);
	m->used[s] = 1;
	m->keys[s] = key;
	m->vals[s] = 0;
	m->n++;
	return &m->vals[s];
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	*m = (struct u64map){ 0 };
}
