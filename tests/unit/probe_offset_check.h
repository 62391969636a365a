/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every probe-offset decision on random code must satisfy, on x86-64 and arm64 alike. */
#ifndef CULPERT_TEST_PROBE_OFFSET_CHECK_H
#define CULPERT_TEST_PROBE_OFFSET_CHECK_H

#include "probe_offset.h"
#include "test.h"

/* within the `len` bytes and the skip limit, on an instruction boundary `align`, said first */
static bool decision_sane(const struct probe_offset *po, size_t len, size_t align)
{
	char want[24];

	if (!ASSERT_TRUE(po->offset <= PROBE_OFFSET_MAX_SKIP && po->offset < len &&
			 po->offset % align == 0, "in range"))
		return false;
	snprintf(want, sizeof(want), "+%llu: ", (unsigned long long)po->offset);
	return ASSERT_TRUE(!strncmp(po->reason, want, strlen(want)), po->reason);
}

#endif /* CULPERT_TEST_PROBE_OFFSET_CHECK_H */
