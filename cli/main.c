// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert: reads and compares profiles; needs no privilege. */
#include <stdio.h>
#include <string.h>

#include "log.h"

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("culpert %s\n", CULPERT_VERSION);
		return 0;
	}
	pr_error("no commands yet\n");
	return 2;
}
