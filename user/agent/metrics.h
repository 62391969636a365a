/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * GET /metrics: the Prometheus text exposition (format 0.0.4) of the
 * agent's own state (culpert_agent_*), one culpert_target_info series per
 * target with its container and pod, and the memory picture of every live
 * target (docs/memory-picture.md: culpert_process_*, culpert_cgroup_*, memfmt.h) with
 * pid, comm, container_id, container, namespace and pod labels.
 */
#ifndef CULPERT_METRICS_H
#define CULPERT_METRICS_H

#include <stdio.h>

#include "http.h"

struct endpoints;

/* the whole exposition; 0 or -errno */
int metrics_write(FILE *f, struct endpoints *e);
void metrics_route(void *ctx, const struct http_request *r, struct http_reply *out);

#endif /* CULPERT_METRICS_H */
