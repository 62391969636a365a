// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// Built with go_alloc.go into go_alloc_cgo: importing "C" links the C
// library dynamically, so the process maps libc's malloc, which Go's own
// allocations never call.
package main

import "C"
