/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * USDT probe sites written by hand rather than through <sys/sdt.h>, which
 * on x86 puts a 1-byte `nop` at the site.  Linux 6.18 optimizes a uprobe
 * on a 5-byte NOP into a call instead of an int3 trap, so every site here
 * is `nopl 0x0(%rax,%rax,1)` (0f 1f 44 00 00).  arm64 has one NOP size.
 *
 * The note is the SystemTap SDT v3 layout every USDT reader parses
 * (libbpf, bpftrace, systemtap, parca-dev/usdt): an ELF note of type 3
 * owned by "stapsdt" in the non-allocated section .note.stapsdt, whose
 * descriptor holds three addresses (site, the _.stapsdt.base symbol,
 * semaphore) and then provider, probe name and argument string, each
 * NUL-terminated.  Readers compare _.stapsdt.base's address in the note
 * with the .stapsdt.base section's to undo prelinking, so that section
 * (USDT_BASE_SECTION, once per object) must exist.
 *
 * Arguments are pinned to the SysV argument registers by the callers'
 * constraints, and the argument string says so.
 */
#ifndef CULPERT_SAMPLER_USDT_H
#define CULPERT_SAMPLER_USDT_H

#if defined(__x86_64__)
#define USDT_NOP	".byte 0x0f, 0x1f, 0x44, 0x00, 0x00"	/* nopl 0x0(%rax,%rax,1) */
#define USDT_ARGS1	"8@%%rdi"
#define USDT_ARGS2	"8@%%rdi 8@%%rsi"
#define USDT_ARGS3	"8@%%rdi 8@%%rsi 8@%%rdx"
#elif defined(__aarch64__)
#define USDT_NOP	"nop"
#define USDT_ARGS1	"8@x0"
#define USDT_ARGS2	"8@x0 8@x1"
#define USDT_ARGS3	"8@x0 8@x1 8@x2"
#else
#error "libculpert-sampler: USDT sites are written for x86-64 and arm64 only"
#endif

/*
 * One probe site: the NOP here, behind the hidden symbol `label` (the code
 * may look at its own site), its note in .note.stapsdt.  An asm template:
 * '%' doubled.
 */
#define USDT_SITE(provider, name, semaphore, args, label)				\
	"	.globl " label "\n"							\
	"	.hidden " label "\n"							\
	label ":\n"									\
	"990:	" USDT_NOP "\n"								\
	"	.pushsection .note.stapsdt, \"\", \"note\"\n"				\
	"	.balign 4\n"								\
	"	.4byte 992f - 991f, 994f - 993f, 3\n"					\
	"991:	.asciz \"stapsdt\"\n"							\
	"992:	.balign 4\n"								\
	"993:	.8byte 990b, _.stapsdt.base, " semaphore "\n"				\
	"	.asciz \"" provider "\"\n"						\
	"	.asciz \"" name "\"\n"							\
	"	.asciz \"" args "\"\n"							\
	"994:	.balign 4\n"								\
	"	.popsection\n"

/*
 * The base the notes point at: a one-byte allocated section in a COMDAT
 * group, so that objects linked together keep a single one (as objects
 * built with <sys/sdt.h> do), behind a hidden symbol.  A file-scope asm.
 */
#define USDT_BASE_SECTION								\
	"	.pushsection .stapsdt.base, \"aG\", @progbits, .stapsdt.base, comdat\n"	\
	"	.weak _.stapsdt.base\n"							\
	"	.hidden _.stapsdt.base\n"						\
	"_.stapsdt.base:\n"								\
	"	.space 1\n"								\
	"	.size _.stapsdt.base, 1\n"						\
	"	.popsection\n"

/*
 * The kernel adds to a semaphore while a uprobe is on its probe.  It
 * needs the u16 in file-backed data (not .bss), hence .probes, the
 * section <sys/sdt.h> uses.
 */
#define USDT_SEMAPHORE(name)								\
	__attribute__((used, section(".probes"), visibility("hidden")))			\
	volatile unsigned short name

#endif /* CULPERT_SAMPLER_USDT_H */
