/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sim/builtin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cfg.h"

static const char *builtin_find(const char *kind, const char *name)
{
	for (size_t i = 0; i < tb_nr_builtins; i++)
		if (!strcmp(tb_builtins[i].kind, kind) && !strcmp(tb_builtins[i].name, name))
			return tb_builtins[i].text;
	return NULL;
}

char *tb_builtin_or_file(const char *kind, const char *name, char *label, size_t labellen, char *err, size_t errlen)
{
	const char *text = strchr(name, '/') || strchr(name, '.') ? NULL : builtin_find(kind, name);
	if (text) {
		snprintf(label, labellen, "builtin:%s", name);
		return strdup(text);
	}
	if (!strchr(name, '/') && !strchr(name, '.')) {
		char names[512] = "";
		for (size_t i = 0; i < tb_nr_builtins; i++)
			if (!strcmp(tb_builtins[i].kind, kind)) {
				strncat(names, names[0] ? ", " : "", sizeof(names) - strlen(names) - 1);
				strncat(names, tb_builtins[i].name, sizeof(names) - strlen(names) - 1);
			}
		snprintf(err, errlen, "no shipped %s named '%s' (shipped: %s); give a file path to use your own", kind,
			 name, names);
		return NULL;
	}
	snprintf(label, labellen, "%s", name);
	return tb_cfg_read_file(name, NULL, err, errlen);
}
