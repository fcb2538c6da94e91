/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: simulated machine files (tb_machine_parse). */
#include <stdint.h>

#include "fuzz_text.h"
#include "sim/machine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), err[512];
	struct tb_machine m;
	if (text)
		tb_machine_parse(&m, "fuzz.ini", text, err, sizeof(err));
	free(text);
	return 0;
}
