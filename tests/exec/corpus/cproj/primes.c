#include <stdlib.h>

#include "lib.h"

unsigned primes(unsigned below)
{
	char *sieve = calloc(below, 1);
	unsigned n = 0;
	for (unsigned i = 2; i < below; i++) {
		if (sieve[i])
			continue;
		n++;
		for (unsigned j = i * 2; j < below; j += i)
			sieve[j] = 1;
	}
	free(sieve);
	return n;
}
