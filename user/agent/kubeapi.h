/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pods of this node from the Kubernetes API (--kube-api): names,
 * namespaces, the pyroscope.io/service_name annotation and which container
 * id is which container.  In-cluster: the service account's token (re-read
 * at every request: bound tokens rotate) and CA, GET
 * /api/v1/pods?fieldSelector=spec.nodeName=NODE, so the agent sees the pods
 * of its own node only and needs RBAC for "list pods" and nothing else.
 * A thread of its own does the requests, so a slow API server never holds
 * up the profiling thread, which only reads the last answer.
 */
#ifndef CULPERT_KUBEAPI_H
#define CULPERT_KUBEAPI_H

#include <stdbool.h>
#include <stdint.h>

#include "container.h"

struct kubeapi_opts {
	const char *url;		/* "https://HOST:PORT" */
	const char *sa_dir;		/* token and ca.crt */
	const char *node;		/* $NODE_NAME */
	uint64_t refresh_ns;		/* list again this often */
};

struct kubeapi_counts {
	uint64_t requests, failures;
	uint64_t generation;		/* lists that changed what is known of the pods */
	uint64_t pods;			/* in the last one */
};

struct kubeapi;

/* check the service account files and start the thread; NULL and a reason in err */
struct kubeapi *kubeapi__start(const struct kubeapi_opts *o, char *err, size_t errlen);
void kubeapi__stop(struct kubeapi *k);
/*
 * Names of ci's pod and container from the last list: true when the pod was
 * in it (then the annotation decides service_name).  A pod it does not know
 * asks for an early list (at most one every 2 s).
 */
bool kubeapi__lookup(struct kubeapi *k, struct container_info *ci);
void kubeapi__counts(struct kubeapi *k, struct kubeapi_counts *out);

/* parse a PodList into k's cache (the unit tests feed it text); 0 or -EINVAL */
int kubeapi__parse(struct kubeapi *k, const char *json, size_t len);
/* a kubeapi that does no requests, for kubeapi__parse() in tests */
struct kubeapi *kubeapi__new_offline(void);

#endif /* CULPERT_KUBEAPI_H */
