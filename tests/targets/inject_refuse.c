// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A process injection must refuse (docs/inject.md): MODE seccomp runs
 * under a seccomp filter (one that allows everything: any filter is a
 * refusal, since its verdicts cannot be checked beforehand), MODE nodump
 * has asked not to be dumped.  Prints "pid N ready", waits for SIGUSR1,
 * then checks that nothing was loaded into it: "clean" or "LOADED".
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "ready.h"

static int allow_all(void)
{
	struct sock_filter insn[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { .len = 1, .filter = insn };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char line[512];
	FILE *maps;
	int loaded = 0;

	if (!strcmp(mode, "seccomp") ? allow_all() :
	    !strcmp(mode, "nodump") ? prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) : -1) {
		perror(mode);
		return 2;
	}
	ready_then_wait(stdout);
	maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof(line), maps))
		loaded |= strstr(line, "libculpert-sampler") != NULL;
	printf("%s\n", loaded ? "LOADED" : "clean");
	return loaded;
}
