/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * File capabilities for a non-root culpert-bpf (the container image runs it as
 * uid 65532 with `setcap ...+p`): what the kernel grants lands in the permitted
 * set only, and this moves it to the effective set.
 */
#ifndef CULPERT_CAPS_H
#define CULPERT_CAPS_H

/* make every permitted capability effective; 0 or -errno (nothing changes then) */
int caps__raise_permitted(void);

#endif /* CULPERT_CAPS_H */
