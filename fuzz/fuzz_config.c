/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: the daemon's configuration (tb_dconfig_parse), parsed
 * twice over the same structure as a SIGHUP reload does. */
#include <stdint.h>

#include "daemon/dconfig.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), err[512];
	struct tb_dconfig c;
	tb_dconfig_default(&c);
	if (text && !tb_dconfig_parse(&c, "fuzz.ini", text, err, sizeof(err)))
		tb_dconfig_parse(&c, "fuzz.ini", text, err, sizeof(err));
	free(text);
	return 0;
}
