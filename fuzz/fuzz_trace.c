/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: access traces (tb_trace_parse). */
#include <stdint.h>

#include "fuzz_text.h"
#include "sim/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), err[512];
	struct tb_trace *t = NULL;
	if (text && !tb_trace_parse(&t, "fuzz.trace", text, err, sizeof(err)))
		tb_trace_free(t);
	free(text);
	return 0;
}
