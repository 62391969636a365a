/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which container and pod a process runs in, from its cgroup path: the
 * layouts of containerd, cri-o, docker and podman under cgroup v2 and v1,
 * with systemd's and the cgroupfs cgroup drivers.  The pod's namespace and
 * name and the container's name come from the kubelet's log directories
 * (/var/log/pods/NAMESPACE_POD_UID/CONTAINER/, /var/log/containers/), or
 * from the Kubernetes API (kubeapi.h) when the agent is given --kube-api.
 */
#ifndef CULPERT_CONTAINER_H
#define CULPERT_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>

/* Kubernetes' limits: namespace and container names are DNS labels, pod names DNS subdomains */
#define CONTAINER_ID_LEN	72
#define POD_UID_LEN		40
#define POD_NS_LEN		64
#define POD_NAME_LEN		256
#define CONTAINER_NAME_LEN	64
#define SERVICE_NAME_LEN	256

struct container_info {
	char runtime[16];			/* "containerd", "cri-o", "docker", "podman", "" */
	char id[CONTAINER_ID_LEN];		/* 64 hex digits, "" outside a container */
	char pod_uid[POD_UID_LEN];		/* with dashes, "" outside a pod */
	char cgroup[1024];			/* the cgroup path all this came from */
	/* names, where the node or the API tells them */
	char pod_namespace[POD_NS_LEN];
	char pod_name[POD_NAME_LEN];
	char container_name[CONTAINER_NAME_LEN];
	/* Pyroscope's: annotation pyroscope.io/service_name, else NAMESPACE/CONTAINER */
	char service_name[SERVICE_NAME_LEN];
};

/*
 * Runtime, container id and pod UID from one cgroup path.  False (and only
 * ci->cgroup set) when the path names no container.  A 64-hex-digit
 * component in no known layout still gives the id, with runtime "".
 */
bool container_parse_path(const char *path, struct container_info *ci);
/* the container id in a cgroup path, or "" (for the memory picture's label) */
void container_id_of_path(const char *path, char *out, size_t len);
/*
 * From the text of /proc/PID/cgroup: the cgroup v2 line when it names a
 * container, else the first cgroup v1 line that does (memory first); else
 * no container, and ci->cgroup the v2 path (or the first v1 one).
 */
void container_parse_proc_cgroup(const char *text, struct container_info *ci);
/* does any line of /proc/PID/cgroup's text have a path that is prefix or under it? */
bool container_cgroup_has_prefix(const char *text, const char *prefix);

/*
 * Names from the kubelet's directories: pods_dir/NAMESPACE_POD_UID/ for the
 * pod, pods_dir/../containers/POD_NAMESPACE_CONTAINER-ID.log (a symlink
 * into the pod's directory) for the container, or the pod's only container
 * directory.  Fills what it finds; false when it finds no pod.
 */
bool container_names_from_logs(const char *pods_dir, struct container_info *ci);
/* service_name from the annotation (NULL or "" if none), else NAMESPACE/CONTAINER */
void container_service_name(struct container_info *ci, const char *annotation);

#endif /* CULPERT_CONTAINER_H */
