/*
 * rng.h - the one random number generator of sim/: xoshiro256** seeded by
 * splitmix64, so that a 64-bit seed reproduces every choice on every machine.
 */
#ifndef BTRSIM_SIM_RNG_H
#define BTRSIM_SIM_RNG_H

#include <stdint.h>

struct sim_rng {
	uint64_t s[4];
};

void sim_rng_seed(struct sim_rng *r, uint64_t seed);
uint64_t sim_rng_next(struct sim_rng *r);
/* Uniform in [0, bound); bound 0 gives 0. */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t bound);
/* True with probability p (p <= 0 never, p >= 1 always, drawing nothing then). */
int sim_rng_chance(struct sim_rng *r, double p);
/* splitmix64 step: derives independent seeds from one. */
uint64_t sim_mix64(uint64_t x);

#endif
