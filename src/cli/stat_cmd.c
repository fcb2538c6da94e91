/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal stat: a running daemon's counters, as text, JSON or Prometheus. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/ctl.h"
#include "daemon/dconfig.h"
#include "cli/cli.h"

static bool numeric(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* The daemon answers "name value" lines; each format is a rewrite of them. */
static void print_as(const char *answer, int format)
{
	char *copy = strdup(answer);
	if (!copy)
		return;
	bool first = true;
	char info[512] = "";
	if (format == 1)
		printf("{");
	for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
		char *val = strchr(line, ' ');
		if (!val)
			continue;
		*val++ = '\0';
		if (format == 0) {
			printf("%s %s\n", line, val);
		} else if (format == 1) {
			printf(numeric(val) ? "%s\n  \"%s\": %s" : "%s\n  \"%s\": \"%s\"", first ? "" : ",", line, val);
		} else if (numeric(val)) {
			bool gauge = !strncmp(line, "node", 4) || !strcmp(line, "targets") ||
				     !strcmp(line, "pages_managed") || !strcmp(line, "hot_threshold_ms") ||
				     !strcmp(line, "dry_run");
			printf("# TYPE tierbal_%s %s\ntierbal_%s %s\n", line, gauge ? "gauge" : "counter", line, val);
		} else {
			size_t n = strlen(info);
			snprintf(info + n, sizeof(info) - n, "%s%s=\"%s\"", n ? "," : "", line, val);
		}
		first = false;
	}
	if (format == 1)
		printf("\n}\n");
	if (format == 2 && info[0])
		printf("# TYPE tierbal_info gauge\ntierbal_info{%s} 1\n", info);
	free(copy);
}

int tb_cmd_stat(int argc, char **argv)
{
	int format = 0;
	const char *sock = TB_DEFAULT_SOCKET;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			format = 1;
		} else if (!strcmp(argv[i], "--prometheus")) {
			format = 2;
		} else if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			sock = argv[++i];
		} else if (!strcmp(argv[i], "--help")) {
			printf("usage: tierbal stat [--json|--prometheus] [--socket PATH]\n\n"
			       "Prints a running 'tierbal run' daemon's counters: the kernel's vmstat names\n"
			       "(pgpromote_success, pgdemote_kswapd, numa_hint_faults, ...), then the daemon's own.\n"
			       "Only root may read them (default socket %s).\n",
			       TB_DEFAULT_SOCKET);
			return TB_EXIT_OK;
		} else {
			fprintf(stderr, "tierbal stat: unknown argument '%s'\nTry 'tierbal stat --help'.\n", argv[i]);
			return TB_EXIT_USAGE;
		}
	}
	char *answer, err[512];
	if (tb_ctl_request(sock, "stat", &answer, err, sizeof(err))) {
		fprintf(stderr, "tierbal stat: %s\n", err);
		return TB_EXIT_FAIL;
	}
	print_as(answer, format);
	free(answer);
	return TB_EXIT_OK;
}
