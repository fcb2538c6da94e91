/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The command line's option parsers: a table of bad command lines, each with
 * the message it must get on standard error, and the bounds of the numbers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "exec/session.h"
#include "util/number.h"
#include "lib-run.h"

/* Runs the parser of COMMAND on the words of LINE (split at spaces) with
 * standard error caught; returns the parser's result and what it said. */
static int parse(const char *command, const char *line, char *said, size_t len)
{
	char words[512], *argv[32];
	int argc = 0;
	snprintf(words, sizeof(words), "%s", line);
	argv[argc++] = (char *)command;
	for (char *w = strtok(words, " "); w && argc < 31; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	FILE *cap = tmpfile();
	assert_non_null(cap);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fileno(cap), 2), 2);
	int rc;
	if (!strcmp(command, "sim")) {
		struct tb_sim_options o;
		rc = tb_sim_parse_options(argc, argv, &o);
	} else if (!strcmp(command, "run")) {
		struct tb_run_opts o;
		rc = tb_run_parse_options(argc, argv, &o);
	} else {
		struct tb_exec_opts o;
		rc = tb_exec_parse_options(argc, argv, &o);
	}
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	rewind(cap);
	size_t n = fread(said, 1, len - 1, cap);
	said[n] = '\0';
	fclose(cap);
	return rc;
}

static const struct {
	const char *command, *line, *message;
} bad_lines[] = {
	{"sim", "--duration 0", "tierbal sim: --duration '0' is not a number from 0.001 to 1e+07"},
	{"sim", "--duration 1e12", "tierbal sim: --duration '1e12' is not a number from 0.001 to 1e+07"},
	{"sim", "--duration nan", "tierbal sim: --duration 'nan' is not a number from 0.001 to 1e+07"},
	{"sim", "--interval 2x", "tierbal sim: --interval '2x' is not a number from 0.001 to 1e+07"},
	{"sim", "--seed -1", "tierbal sim: --seed '-1' is not a whole number from 0 to 18446744073709551615"},
	{"sim", "--seed 18446744073709551616", "tierbal sim: --seed '18446744073709551616' is not a whole number"},
	{"sim", "--jobs 0", "tierbal sim: --jobs '0' is not a whole number from 1 to 256"},
	{"sim", "--jobs 257", "tierbal sim: --jobs '257' is not a whole number from 1 to 256"},
	{"sim", "--jobs +3", "tierbal sim: --jobs '+3' is not a whole number from 1 to 256"},
	{"sim", "--set numa_balancing=7", "tierbal sim: --set: knob numa_balancing: 7 is outside 0..3"},
	{"sim", "--set numa_balancing=-1", "tierbal sim: --set: knob numa_balancing: '-1' is not a whole number"},
	{"sim", "--bogus", "tierbal sim: unknown option '--bogus'"},
	{"sim", "--policy", "tierbal sim: --policy needs a value"},
	{"run", "--pid 0", "tierbal run: --pid '0' is not a whole number from 1 to 4194304"},
	{"run", "--pid 12ab", "tierbal run: --pid '12ab' is not a whole number from 1 to 4194304"},
	{"run", "--pid 1 --duration -5", "tierbal run: --duration '-5' is not a number from 0.001 to 1e+07"},
	{"run", "--socket relative", "tierbal run: --socket 'relative' is not an absolute path"},
	{"run", "--pid 1 extra", "tierbal run: unexpected argument 'extra'"},
	{"exec", "--scan-period-ms 0 -- true",
	 "tierbal exec: --scan-period-ms '0' is not a whole number from 1 to 100000000"},
	{"exec", "--scan-size-mb 1e3 -- true",
	 "tierbal exec: --scan-size-mb '1e3' is not a whole number from 1 to 100000000"},
	{"exec", "--window-kb 48 -- true", "tierbal exec: --window-kb '48' is not a power of two from 4 to 2048"},
	{"exec", "--window-kb 4096 -- true", "tierbal exec: --window-kb '4096' is not a whole number from 4 to 2048"},
	{"exec", "--park-mb 0 -- true", "tierbal exec: --park-mb '0' is not a whole number from 1 to 65536"},
	{"exec", "--sample-ms 9 -- true", "tierbal exec: --sample-ms '9' is not a whole number from 10 to 60000"},
	{"exec", "--read-faults maybe -- true", "tierbal exec: --read-faults 'maybe' is neither on nor off"},
};

static void test_bad_lines(void **state)
{
	(void)state;
	char said[1024];
	for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		int rc = parse(bad_lines[i].command, bad_lines[i].line, said, sizeof(said));
		if (rc != -EINVAL || strncmp(said, bad_lines[i].message, strlen(bad_lines[i].message)))
			fail_msg("tierbal %s %s: %d, '%s'; expected -EINVAL, '%s'", bad_lines[i].command,
				 bad_lines[i].line, rc, said, bad_lines[i].message);
	}
}

/* the bounds themselves are in range, and good lines say nothing */
static void test_good_lines(void **state)
{
	(void)state;
	char said[1024];
	static const struct {
		const char *command, *line;
	} good[] = {
		{"sim", "--duration 0.001 --jobs 256 --seed 18446744073709551615"},
		{"sim", "--interval 1e7 --jobs 1 --seed 0"},
		{"run", "--pid 4194304 --duration 0.5"},
		{"exec", "--window-kb 2048 --park-mb 65536 --sample-ms 10 -- true"},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int rc = parse(good[i].command, good[i].line, said, sizeof(said));
		if (rc || said[0])
			fail_msg("tierbal %s %s: %d, '%s'", good[i].command, good[i].line, rc, said);
	}
}

static void test_number_reader(void **state)
{
	(void)state;
	unsigned long long w;
	double r;
	assert_int_equal(tb_parse_whole("42", 0, 100, &w), 0);
	assert_int_equal(w, 42);
	assert_int_equal(tb_parse_whole("101", 0, 100, &w), -ERANGE);
	assert_int_equal(tb_parse_whole("99999999999999999999", 0, ~0ull, &w), -ERANGE);
	assert_int_equal(tb_parse_whole(" 4", 0, 100, &w), -EINVAL);
	assert_int_equal(tb_parse_whole("4 ", 0, 100, &w), -EINVAL);
	assert_int_equal(tb_parse_whole("", 0, 100, &w), -EINVAL);
	assert_int_equal(tb_parse_whole("0x10", 0, 100, &w), -EINVAL);
	assert_int_equal(tb_parse_real("0.5", 0, 1, &r), 0);
	assert_true(r == 0.5);
	assert_int_equal(tb_parse_real("-0.5", -1, 1, &r), 0);
	assert_int_equal(tb_parse_real("inf", 0, 1e300, &r), -ERANGE);
	assert_int_equal(tb_parse_real("nan", 0, 1, &r), -EINVAL);
	assert_int_equal(tb_parse_real("1e-400", 1e-3, 1, &r), -ERANGE);
	assert_int_equal(tb_parse_real(" 1", 0, 2, &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_good_lines),
		cmocka_unit_test(test_number_reader),
	};
	return tb_test_run("options", tests, sizeof(tests) / sizeof(tests[0]));
}
