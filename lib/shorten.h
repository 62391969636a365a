/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Function names short enough for a table row: a C++ or Rust name's
 * template arguments and parameter list become an ellipsis, so
 * std::_Hashtable<std::__cxx11::basic_string<...>, ...>::_M_insert(...)
 * reads std::_Hashtable<…>::_M_insert(…).  Names without either stay as
 * they are.
 */
#ifndef CULPERT_SHORTEN_H
#define CULPERT_SHORTEN_H

#include <stddef.h>

/* the first n bytes of name, shortened, into out (always NUL-terminated); returns out */
char *shorten_name(const char *name, size_t n, char *out, size_t len);

#endif /* CULPERT_SHORTEN_H */
