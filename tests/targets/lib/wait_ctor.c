// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Preloaded, a program waits in this library's constructor: after the
 * loader mapped its libraries, before its entry point.  It prints "pid N
 * ready" and goes on at SIGUSR1 (tests/agent/test_pickup.sh: the program
 * is pending in between).
 */
#include "ready.h"

__attribute__((constructor)) static void wait_first(void)
{
	ready_then_wait(stdout);
}
