// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "perfuprobe.h"
#include "readfile.h"

int perf_uprobe_pmu_type(void)
{
	char *text;
	int type, err;

	err = read_file_at(AT_FDCWD, UPROBE_PMU_TYPE, &text, NULL);
	if (err)
		return err;
	type = atoi(text);
	free(text);
	return type > 0 ? type : -ENOENT;
}
