/* u64map.h - an open-addressing hash map from u64 keys to u64 values (ref/ only). */
#ifndef BTRSIM_REF_U64MAP_H
#define BTRSIM_REF_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t *used;
	size_t cap, n;
};

/* Returns a pointer to the value of key, inserting it (value 0) when absent and
 * `insert` is set; NULL when absent (or out of memory). */
uint64_t *u64map_get(struct u64map *m, uint64_t key, bool insert);
void u64map_free(struct u64map *m);

#endif
