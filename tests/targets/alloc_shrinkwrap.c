// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A shrink-wrapped caller of the allocator, as GCC emits at -O2 for a
 * function with an early return: sw_alloc() tests its argument first and
 * sets up %rbp only on the path that calls malloc, 17 bytes in.  Written
 * in assembly so that no compiler version moves it.  A frame-pointer walk
 * through it is whole: --unwind auto must choose fp (docs/unwind.md).
 * Prints "pid N ready", waits for SIGUSR1, allocates, prints
 * "total sw_alloc BYTES CALLS" and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include "ready.h"

#define BLOCKS 1000
#define SIZE 4096

void *sw_alloc(size_t n);

#if defined(__x86_64__)
__asm__(".text\n"
	".globl sw_alloc\n"
	".type sw_alloc, @function\n"
	"sw_alloc:\n"
	"	test %rdi, %rdi\n"		/* 3 bytes */
	"	je 1f\n"			/* 2 */
	"	cmp $0x1000000, %rdi\n"		/* 7 */
	"	ja 1f\n"			/* 2 */
	"	mov %rdi, %rax\n"		/* 3: 17 bytes before the frame */
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	call malloc@PLT\n"
	"	pop %rbp\n"
	"	ret\n"
	"1:	xor %eax, %eax\n"
	"	ret\n"
	".size sw_alloc, .-sw_alloc\n");
#else
__attribute__((noipa)) void *sw_alloc(size_t n)
{
	return n && n <= 0x1000000 ? malloc(n) : NULL;
}
#endif

static void *keep[BLOCKS];

int main(void)
{
	int i;

	ready_then_wait(stdout);
	for (i = 0; i < BLOCKS; i++)
		keep[i] = sw_alloc(SIZE);
	for (i = 0; i < BLOCKS; i++)
		free(keep[i]);
	printf("total sw_alloc %d %d\n", BLOCKS * SIZE, BLOCKS);
	return 0;
}
