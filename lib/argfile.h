/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Argument files: an argument "@FILE" stands for the lines of FILE, one
 * argument per line, so that a Kubernetes ConfigMap can hold a command's
 * options (deploy/kubernetes).  Blank lines and lines starting with '#' are
 * skipped; a line is taken whole (no quoting: "--select comm=a b" is one
 * argument), without its trailing blanks.  Not recursive; "./@x" names a
 * file called @x.
 */
#ifndef CULPERT_ARGFILE_H
#define CULPERT_ARGFILE_H

#define ARGFILE_MAX_BYTES	(64 * 1024)	/* larger files are refused */
#define ARGFILE_MAX_ARGS	4096		/* arguments after expansion */

/*
 * Expand every "@FILE" of argv[1..argc-1]: *argvp becomes a new array that
 * lives as long as the process (it stays argv when there is none).  0, or
 * -errno after printing the one error line.
 */
int argfile_expand(int *argcp, char ***argvp);

#endif /* CULPERT_ARGFILE_H */
