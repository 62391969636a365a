/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One ELF object opened with libelf: build ID, load segments, and its
 * function symbols (.symtab and .dynsym) by name and by address.
 */
#ifndef CULPERT_ELFOBJ_H
#define CULPERT_ELFOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfobj;

struct elf_symbol {
	const char *name;	/* owned by the elfobj */
	uint64_t value;		/* st_value: virtual address */
	uint64_t size;
	uint8_t type;		/* STT_FUNC or STT_GNU_IFUNC (elfobj__data_sym: STT_OBJECT, STT_TLS) */
	uint8_t bind;
	uint32_t order;		/* position in its table, .symtab before .dynsym */
};

/* NULL and errno set on failure (ENOEXEC: not an ELF file) */
struct elfobj *elfobj__open(const char *path);
/*
 * The same, with what libelf reads read into memory (pread) rather than the
 * file mapped: for objects kept open per process (a profiled process's
 * libraries).  A file mapping in our own address space is one more mapping
 * every uprobe registered on that file walks (under our mmap lock) and
 * whose touched pages count in our RSS once per process that maps it.
 * Only the sections asked for are read (symbols, notes, CFI); code comes
 * through elfobj__read() either way.
 */
struct elfobj *elfobj__open_unmapped(const char *path);
void elfobj__free(struct elfobj *obj);
/*
 * Forget the symbols and, opened unmapped, every section read so far: they
 * are read again when next asked for.  For an object kept open but seldom
 * used (an idle process's libraries).  Whatever was had from it through
 * elfobj__elf() or a symbol lookup is no longer valid.
 */
void elfobj__trim(struct elfobj *obj);

const char *elfobj__path(const struct elfobj *obj);
/* lower-case hex GNU build ID, "" when the object has none */
const char *elfobj__build_id(const struct elfobj *obj);
/* n bytes as 2n lower-case hex digits and a NUL, as build IDs are written */
void hex_encode(char *out, const unsigned char *b, size_t n);
/* ET_EXEC or ET_DYN */
int elfobj__type(const struct elfobj *obj);
/* e_machine: EM_X86_64, EM_AARCH64, ...; EM_NONE if the header cannot be read */
int elfobj__machine(const struct elfobj *obj);
/* true when the object carries a full .symtab (not stripped) */
bool elfobj__has_symtab(const struct elfobj *obj);
/* the libelf handle and fd, for modules that read DWARF or code */
void *elfobj__elf(const struct elfobj *obj);
int elfobj__fd(const struct elfobj *obj);

/* does any symbol, defined or not, of .symtab or .dynsym have one of these names? */
bool elfobj__mentions_any(const struct elfobj *obj, const char *const *names, size_t n_names);
/* defined function named exactly `name`; NULL if none */
const struct elf_symbol *elfobj__sym_by_name(struct elfobj *obj, const char *name);
/*
 * the function containing virtual address `vaddr`; NULL if none.  Of several
 * at one address, the one addr2line names: the smallest that covers vaddr,
 * then the first in table order.
 */
const struct elf_symbol *elfobj__sym_by_addr(struct elfobj *obj, uint64_t vaddr);
/*
 * The defined data (STT_OBJECT) or thread-local (STT_TLS: value is the
 * offset in the object's TLS block) symbol named exactly `name`, a global
 * one before a local one, .symtab or .dynsym; 0 or -ENOENT.  Not cached:
 * for a few lookups, not for symbolization.
 */
int elfobj__data_sym(const struct elfobj *obj, const char *name, struct elf_symbol *out);
/* every function symbol, sorted by address; count in *n */
const struct elf_symbol *elfobj__symbols(struct elfobj *obj, size_t *n);

/* file offset <-> virtual address through the PT_LOAD segments; 0 or -ENOENT */
int elfobj__vaddr_to_offset(const struct elfobj *obj, uint64_t vaddr, uint64_t *off);
int elfobj__offset_to_vaddr(const struct elfobj *obj, uint64_t off, uint64_t *vaddr);
/* virtual address of .eh_frame_hdr (the PT_GNU_EH_FRAME segment); 0 or -ENOENT */
int elfobj__eh_frame_hdr(const struct elfobj *obj, uint64_t *vaddr);
/* p_vaddr of the one executable PT_LOAD segment; 0, or -ENOENT when none or several */
int elfobj__exec_segment(const struct elfobj *obj, uint64_t *vaddr);
/* copy up to len bytes of code at vaddr; returns bytes copied or -errno */
long elfobj__read(const struct elfobj *obj, uint64_t vaddr, void *buf, size_t len);

/*
 * A mapping's path names a file: not "" (anonymous) nor "[heap]", "[vdso]",
 * ...  For /proc/PID/maps entries and pprof mapping filenames alike.
 */
static inline bool path_is_file(const char *path)
{
	return path[0] && path[0] != '[';
}

#endif /* CULPERT_ELFOBJ_H */
