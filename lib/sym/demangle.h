/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Symbol names as people write them: C++ and Rust (legacy and v0) demangled by libiberty. */
#ifndef CULPERT_DEMANGLE_H
#define CULPERT_DEMANGLE_H

#include <stdbool.h>

/*
 * The demangled name (Rust hash suffixes dropped), with the parameter list
 * when `params`; a copy of sym when it is not mangled.  malloc'd, NULL on ENOMEM.
 */
char *demangle(const char *sym, bool params);

#endif /* CULPERT_DEMANGLE_H */
