/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pages that tell when they were damaged: the guest programs and benches
 * write each page with this pattern and check it after tierbal has moved,
 * parked or protected them. Word 0 holds the page's generation (how often it
 * was rewritten), word 1 a checksum of it, the rest a fixed pattern of the
 * area and the page. Header only, as most of these programs link none of
 * tierbal's libraries. */
#ifndef TB_TEST_PAGES_H
#define TB_TEST_PAGES_H

#include <stddef.h>
#include <stdint.h>

#define TB_PAGE 4096u
#define TB_PAGE_WORDS (TB_PAGE / 8)

/* word WORD of page PAGE of area AREA (for words 0 and 1, WORD is the generation) */
static inline uint64_t tb_page_word(uint64_t area, size_t page, uint64_t word)
{
	return (area * 0x9e3779b97f4a7c15ull) ^ (page * 0xc2b2ae3d27d4eb4full) ^ (word + 1);
}

/* rewrites the generation of a page that tb_page_fill wrote: a cheap write that changes the page */
static inline void tb_page_touch(void *page_start, uint64_t area, size_t page, uint64_t gen)
{
	volatile uint64_t *w = page_start;
	w[0] = gen;
	w[1] = tb_page_word(area, page, gen);
}

static inline void tb_page_fill(void *page_start, uint64_t area, size_t page, uint64_t gen)
{
	uint64_t *w = page_start;
	for (size_t k = 2; k < TB_PAGE_WORDS; k++)
		w[k] = tb_page_word(area, page, k);
	tb_page_touch(page_start, area, page, gen);
}

/* N pages from P, pages FIRST.. of AREA, all of generation 0 */
static inline void tb_pages_fill(void *p, size_t n, uint64_t area, size_t first)
{
	for (size_t i = 0; i < n; i++)
		tb_page_fill((char *)p + i * TB_PAGE, area, first + i, 0);
}

/* how many of N pages from P do not hold what was written: pages FIRST.. of
 * AREA, page i of generation GEN[i] (GEN NULL: all of generation 0) */
static inline size_t tb_pages_bad(const void *p, size_t n, uint64_t area, size_t first, const uint64_t *gen)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		const volatile uint64_t *w = (const volatile uint64_t *)((const char *)p + i * TB_PAGE);
		uint64_t g = gen ? gen[i] : 0;
		int wrong = w[0] != g || w[1] != tb_page_word(area, first + i, g);
		for (size_t k = 2; k < TB_PAGE_WORDS && !wrong; k++)
			wrong = w[k] != tb_page_word(area, first + i, k);
		bad += (size_t)wrong;
	}
	return bad;
}

#endif
