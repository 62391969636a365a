/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The culpert commands; each parses its own options and returns the exit code (0, 1, 2). */
#ifndef CULPERT_CLI_COMMANDS_H
#define CULPERT_CLI_COMMANDS_H

int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_upload(int argc, char **argv);
int cmd_pull(int argc, char **argv);

#endif /* CULPERT_CLI_COMMANDS_H */
