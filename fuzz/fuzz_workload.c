/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: workload files (tb_workload_parse). The label puts relative
 * trace paths in a directory that does not exist, so only the text is fuzzed. */
#include <stdint.h>

#include "fuzz_text.h"
#include "sim/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), err[512];
	struct tb_workload w;
	if (text && !tb_workload_parse(&w, "/nonexistent-tierbal-fuzz/w.ini", text, err, sizeof(err)))
		tb_workload_free(&w);
	free(text);
	return 0;
}
