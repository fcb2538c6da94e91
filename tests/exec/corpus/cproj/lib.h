unsigned long fib(unsigned n);
unsigned primes(unsigned below);
