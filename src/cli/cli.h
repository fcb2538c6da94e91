#ifndef TB_CLI_H
#define TB_CLI_H

#include <stdbool.h>

#define TB_VERSION "0.1.0"

/* Exit codes shared by all subcommands. */
#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

int cmd_sim(int argc, char **argv);
int cmd_topology(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_exec(int argc, char **argv);

#endif
