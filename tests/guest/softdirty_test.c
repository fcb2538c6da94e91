/* Runs in the guest, whose Debian kernel tracks soft-dirty pages: the
 * sampler sees exactly the pages written since its last clear. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "softdirty.h"

static int pass, fail;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	ok ? pass++ : fail++;
}

int main(void)
{
	check(tb_sd_probe() == 0, "the kernel tracks soft-dirty pages");
	long psz = sysconf(_SC_PAGESIZE);
	size_t n = 256;
	volatile char *p = mmap(NULL, n * (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("FAIL mmap\nsoftdirty: %d passed, %d failed\n", pass, fail + 1);
		return 1;
	}
	madvise((void *)p, n * (size_t)psz, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < n; i++)
		p[i * (size_t)psz] = 1;
	check(tb_sd_clear(0) == 0, "clear_refs accepted");
	p[3 * psz] = 2;
	p[100 * psz + 17] = 2;
	p[255 * psz] = 2;
	char sink = p[50 * psz]; /* a read does not make a page dirty */
	(void)sink;
	uint8_t w[256], pr[256];
	check(tb_sd_scan(0, (uintptr_t)p, n, w, pr) == 0, "pagemap read");
	size_t dirty = 0, present = 0;
	for (size_t i = 0; i < n; i++) {
		dirty += w[i];
		present += pr[i];
	}
	check(dirty == 3 && w[3] && w[100] && w[255], "exactly the 3 written pages are soft-dirty");
	check(!w[50], "the page only read is not");
	check(present == n, "all 256 pages present");
	check(tb_sd_clear(0) == 0 && tb_sd_scan(0, (uintptr_t)p, n, w, NULL) == 0 && memchr(w, 1, n) == NULL,
	      "a second clear leaves none dirty");
	printf("softdirty: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
