/*
 * gate.c - the switch every fault point tests before it asks libfiu
 * (faults/points.h).  It is the one piece of faults/ in the sim library (the
 * Makefile puts it there): sim is the bottom of the link order, so every
 * program that links sim or ref has it, whether or not it links faults/.
 */
#include "faults/points.h"

int fp_armed;
