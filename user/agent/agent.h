/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `culpert-bpf agent`: the node daemon.  Its options, parsed by
 * agent_opts.c, and the command (agent.c): set-up, the profiling thread's
 * loop, shutdown.  docs/agent.md describes the whole.
 */
#ifndef CULPERT_AGENT_H
#define CULPERT_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

enum agent_labels { AGENT_LABELS_SPAN, AGENT_LABELS_ALL };

struct agent_opts {
	char **selects;
	size_t n_selects;
	char **injects;			/* --inject: selected, and the sampler injected */
	size_t n_injects;
	const char *listen;		/* ADDR:PORT, [ADDR6]:PORT */
	const char *token_file;
	double max_overhead_pct;	/* of one CPU per target; 0 = no limit */
	uint64_t duty_period_ns;	/* --duty-period */
	uint64_t keep_exited_ns;
	uint64_t rescan_ns;
	const char *snapshot_dir;
	uint64_t interval_ns;
	uint64_t keep;
	enum agent_labels labels;
	uint64_t max_targets;
	uint64_t max_stacks;		/* per target */
	uint64_t max_memory;		/* --max-memory, bytes of RSS; 0: the cgroup's limit */
	const char *pods_log_dir;
	bool kube_api;
	bool hold_start;		/* --hold-start: stop new programs until probed */
	const char *kube_api_url;	/* NULL: https://$KUBERNETES_SERVICE_HOST:$..._PORT */
	const char *kube_sa_dir;	/* the service account's token and ca.crt */
	/* attach's collection options (collect_opts.h): every target gets the same */
	struct session_opts collect;
};

/* parse argv into o; 0, -EINVAL after the one error line, or CMD_HELP (cmd.h) */
int agent_opts__parse(int argc, char **argv, struct agent_opts *o);
void agent_opts__free(struct agent_opts *o);

int cmd_agent(int argc, char **argv);

#endif /* CULPERT_AGENT_H */
