/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The layout of a program's data types from its DWARF (elfutils libdw):
 * where a member sits in a struct, how big it is, how many elements an
 * array has.  For reading another process's data structures (the glibc
 * allocator's arenas) without hard-coding offsets that change between
 * builds.
 */
#ifndef CULPERT_DWLAYOUT_H
#define CULPERT_DWLAYOUT_H

#include <stdint.h>

#include <elfutils/libdw.h>

struct dwlayout;

/* one member of a struct, as the compiler laid it out */
struct dw_field {
	uint64_t offset;	/* bytes from the start of the outermost struct asked about */
	uint64_t size;		/* bytes of the whole member (an array: all its elements) */
	uint64_t count;		/* array elements (all dimensions), 1 for anything else */
	uint64_t elem_size;	/* bytes of one element (== size for a non-array) */
};

/* DWARF of elf (not owned; must outlive the dwlayout); NULL, errno ENODATA when it has none */
struct dwlayout *dwlayout__new(Elf *elf);
void dwlayout__free(struct dwlayout *l);

/*
 * The type of the defined (not merely declared) global or static variable
 * `name`, typedefs and qualifiers peeled.  The unit that defines it is
 * searched first by later dwlayout__type() calls: a program may have
 * several types of one name.  0 or -ENOENT.
 */
int dwlayout__var_type(struct dwlayout *l, const char *name, Dwarf_Die *type);
/*
 * The complete struct, union or typedef named `name` (a typedef peeled to
 * what it names): in the unit of the last dwlayout__var_type() first, then
 * in every unit.  0 or -ENOENT.
 */
int dwlayout__type(struct dwlayout *l, const char *name, Dwarf_Die *type);

/* bytes of the type; 0 or -EINVAL when it has no size */
int dw_type_size(Dwarf_Die *type, uint64_t *size);
/*
 * Member `path` of a struct or union type: a name, or names joined by '.'
 * for members of members ("header.self"; of an array member, its element
 * 0's: "_dl_ns._ns_loaded").  Members of anonymous structs
 * and unions are found as members of the outer type, as C sees them.
 * 0, -ENOENT (no such member), -EINVAL (a member the layout cannot say,
 * such as a bit field).
 */
int dw_type_field(Dwarf_Die *type, const char *path, struct dw_field *f);

#endif /* CULPERT_DWLAYOUT_H */
