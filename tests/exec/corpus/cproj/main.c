#include <stdio.h>

#include "lib.h"

int main(void)
{
	printf("fib(30) = %lu, primes below 50000: %u\n", fib(30), primes(50000));
	return 0;
}
