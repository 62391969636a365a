/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The culpert-bpf commands; each parses its own options and returns the exit code. */
#ifndef CULPERT_COMMANDS_H
#define CULPERT_COMMANDS_H

int cmd_attach(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_probes(int argc, char **argv);
int cmd_stats(int argc, char **argv);

#endif /* CULPERT_COMMANDS_H */
