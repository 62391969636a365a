// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's pure parts: cgroup layouts of each runtime, the kubelet's log
 * directories, selectors, target resolution, the token compare, listen
 * addresses, snapshot rotation, the Kubernetes PodList and the many-target
 * exposition.  The processes, the kernel and real clients are in
 * tests/bpf/test_agent_frame.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "container.h"
#include "discover.h"
#include "endpoints.h"
#include "http.h"
#include "kubeapi.h"
#include "memfmt.h"
#include "select.h"
#include "snapshot.h"
#include "test.h"

#define ID "4f2b8a3c9d1e0f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90"
#define ID2 "1111111111111111111111111111111111111111111111111111111111111111"
#define UID "0e8b6a52-3f1d-4c2e-9a7b-5d6c4e3f2a1b"
#define UID_ "0e8b6a52_3f1d_4c2e_9a7b_5d6c4e3f2a1b"

static void expect(const char *path, const char *runtime, const char *id, const char *uid)
{
	struct container_info ci;
	bool found = container_parse_path(path, &ci);

	if (!ASSERT_TRUE(found == (id[0] != 0), path))
		return;
	ASSERT_STREQ(ci.runtime, runtime, path);
	ASSERT_STREQ(ci.id, id, path);
	ASSERT_STREQ(ci.pod_uid, uid, path);
}

/* the layouts as each runtime and driver writes them (cgroup v2 and v1 paths look alike) */
static void test_layouts(void)
{
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID ".scope", "containerd", ID, UID);
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	       "containerd", ID, UID);
	expect("/kubepods/burstable/pod" UID "/" ID, "containerd", ID, UID);
	expect("/kubepods/pod" UID "/" ID, "containerd", ID, UID);
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/"
	       "crio-" ID ".scope", "cri-o", ID, UID);
	expect("/kubepods/besteffort/pod" UID "/crio-" ID, "cri-o", ID, UID);
	expect("/system.slice/docker-" ID ".scope", "docker", ID, "");
	expect("/docker/" ID, "docker", ID, "");
	expect("/machine.slice/libpod-" ID ".scope/container", "podman", ID, "");
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
	       "podman", ID, "");
	expect("/libpod_parent/libpod-" ID, "podman", ID, "");
	/* nested under a prefix (kind, docker-in-docker): the innermost container wins */
	expect("/docker/" ID2 "/docker/" ID,
	       "docker", ID, "");
	expect("/culpert-test-1/system.slice/docker-" ID ".scope", "docker", ID, "");
	/* the runtimes' monitors are beside the container, not in it */
	expect("/machine.slice/libpod-conmon-" ID ".scope", "", "", "");
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope", "", "", "");
	/* an id in no layout we know: the id, runtime unknown */
	expect("/x/" ID, "", ID, "");
	expect("/x/" ID "ff", "", "", "");
	expect("/user.slice/user-1000.slice/session-2.scope", "", "", "");
	expect("/", "", "", "");
	expect("", "", "", "");
}

/* the memory picture's container_id label comes from the same place */
static void test_container_id_of_path(void)
{
	char out[72];

	container_id_of_path("/system.slice/docker-" ID ".scope", out, sizeof(out));
	ASSERT_STREQ(out, ID, "docker scope");
	container_id_of_path("/user.slice", out, sizeof(out));
	ASSERT_STREQ(out, "", "no container");
}

static void test_proc_cgroup(void)
{
	struct container_info ci;

	/* hybrid: the v2 line names no container, the v1 memory line does */
	container_parse_proc_cgroup("12:pids:/user.slice\n4:memory:/kubepods/burstable/pod" UID
				    "/" ID "\n1:name=systemd:/user.slice\n0::/user.slice\n", &ci);
	ASSERT_STREQ(ci.id, ID, "v1 memory line");
	ASSERT_STREQ(ci.cgroup, "/kubepods/burstable/pod" UID "/" ID, "the path it came from");
	/* the v2 line first when it names one */
	container_parse_proc_cgroup("4:memory:/docker/" ID2 "\n0::/system.slice/docker-" ID
				    ".scope\n", &ci);
	ASSERT_STREQ(ci.id, ID, "v2 line preferred");
	ASSERT_STREQ(ci.runtime, "docker", "v2 runtime");
	container_parse_proc_cgroup("4:memory:/user.slice\n0::/init.scope\n", &ci);
	ASSERT_STREQ(ci.id, "", "no container");
	ASSERT_STREQ(ci.cgroup, "/init.scope", "the v2 path without a container");
	ASSERT_TRUE(container_cgroup_has_prefix("4:memory:/a/b\n0::/c\n", "/a"), "v1 prefix");
	ASSERT_TRUE(container_cgroup_has_prefix("0::/a/b\n", "/a/b/"), "trailing slash");
	ASSERT_TRUE(!container_cgroup_has_prefix("0::/ab\n", "/a"), "component boundary");
	ASSERT_TRUE(container_cgroup_has_prefix("0::/ab\n", "/"), "/ is every cgroup");
}

/* the start of the stack, in the [stack] mapping, is another after an exec */
static void test_proc_info_exec(void)
{
	unsigned long lo = 0, hi = 0;
	struct proc_info self, before, after;
	char line[512], go;
	int fds[2], i;
	pid_t child;
	FILE *f;

	if (!ASSERT_EQ(proc_info__read(getpid(), &self), 0, "proc_info__read(self)"))
		return;
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]"))
			sscanf(line, "%lx-%lx", &lo, &hi);
	if (f)
		fclose(f);
	ASSERT_TRUE(lo <= self.start_stack && self.start_stack < hi, "start_stack in [stack]");
	if (!ASSERT_EQ(pipe(fds), 0, "pipe"))
		goto out_self;
	child = fork();
	if (!child) {
		close(fds[1]);
		if (read(fds[0], &go, 1) == 1)
			execl("/bin/sleep", "sleep", "10", (char *)NULL);
		_exit(1);
	}
	close(fds[0]);
	ASSERT_EQ(proc_info__read(child, &before), 0, "the child before its exec");
	ASSERT_EQ(before.start_stack, self.start_stack, "a fork's stack is its parent's");
	ASSERT_EQ(write(fds[1], "g", 1), 1, "let it exec");
	close(fds[1]);
	/* bounded: 5 s for the exec to show in /proc */
	for (i = 0; i < 500; i++) {
		if (!proc_info__read(child, &after) && !strcmp(after.comm, "sleep"))
			break;
		proc_info__free(&after);
		memset(&after, 0, sizeof(after));
		usleep(10000);
	}
	ASSERT_STREQ(after.comm, "sleep", "the child exec'd");
	ASSERT_EQ(after.start_ticks, before.start_ticks, "the same process");
	ASSERT_TRUE(after.start_stack && after.start_stack != before.start_stack,
		    "another stack after the exec");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	proc_info__free(&before);
	proc_info__free(&after);
out_self:
	proc_info__free(&self);
}

static char tmpdir[] = "/tmp/culpert-agent-unit.XXXXXX";

static void touch(const char *fmt, const char *a, bool dir)
{
	char path[512];

	snprintf(path, sizeof(path), fmt, tmpdir, a);
	if (dir)
		mkdir(path, 0755);
	else
		close(open(path, O_WRONLY | O_CREAT, 0644));
}

/* the kubelet's directories: /var/log/pods/NS_POD_UID/CONTAINER/, /var/log/containers/ */
static void test_log_dirs(void)
{
	char pods[256], path[512];
	struct container_info ci;

	snprintf(pods, sizeof(pods), "%s/pods", tmpdir);
	touch("%s/pods", "", true);
	touch("%s/containers", "", true);
	touch("%s/pods/shop_cart-7d9f_" UID "%s", "", true);
	touch("%s/pods/shop_cart-7d9f_" UID "/%s", "app", true);
	touch("%s/pods/shop_cart-7d9f_" UID "/%s", "sidecar", true);
	touch("%s/containers/cart-7d9f_shop_%s-" ID ".log", "sidecar", false);
	container_parse_path("/kubepods/burstable/pod" UID "/" ID, &ci);
	ASSERT_TRUE(container_names_from_logs(pods, &ci), "pod found");
	ASSERT_STREQ(ci.pod_namespace, "shop", "namespace");
	ASSERT_STREQ(ci.pod_name, "cart-7d9f", "pod");
	ASSERT_STREQ(ci.container_name, "sidecar", "container from /var/log/containers");
	container_service_name(&ci, NULL);
	ASSERT_STREQ(ci.service_name, "shop/sidecar", "service_name NAMESPACE/CONTAINER");
	container_service_name(&ci, "cart");
	ASSERT_STREQ(ci.service_name, "cart", "the annotation wins");
	/* no symlink for this id: two containers, no name; one container, its name */
	container_parse_path("/kubepods/burstable/pod" UID "/" ID2, &ci);
	ASSERT_TRUE(container_names_from_logs(pods, &ci), "pod found again");
	ASSERT_STREQ(ci.container_name, "", "two containers, no link: no name");
	touch("%s/pods/shop_cart-7d9f_" UID "/%s", "app", true);
	snprintf(path, sizeof(path), "%s/shop_cart-7d9f_" UID "/app", pods);
	ASSERT_EQ(rmdir(path), 0, "rmdir app");
	ASSERT_TRUE(container_names_from_logs(pods, &ci), "pod found a third time");
	ASSERT_STREQ(ci.container_name, "sidecar", "the only container");
	container_parse_path("/system.slice/docker-" ID ".scope", &ci);
	ASSERT_TRUE(!container_names_from_logs(pods, &ci), "no pod, no names");
}

static struct selectors *sel(const char *spec)
{
	struct selectors *s = NULL;
	char *v[] = { (char *)spec };

	return selectors__parse("--select", v, 1, &s) ? NULL : s;
}

static bool matches(const char *spec, const struct select_input *in)
{
	struct selectors *s = sel(spec);
	bool m;

	if (!ASSERT_OK_PTR(s, spec))
		return false;
	m = selectors__match(s, in) != NULL;
	selectors__free(s);
	return m;
}

static void test_selectors(void)
{
	struct container_info ci;
	struct select_input in = { .pid = 42, .comm = "nginx", .exe = "/usr/sbin/nginx",
				   .cgroup_text = "0::/kubepods/burstable/pod" UID "/" ID "\n",
				   .ci = &ci };
	struct selectors *s;

	container_parse_path("/kubepods/burstable/pod" UID "/" ID, &ci);
	snprintf(ci.pod_namespace, sizeof(ci.pod_namespace), "shop");
	snprintf(ci.pod_name, sizeof(ci.pod_name), "cart-1");
	snprintf(ci.container_name, sizeof(ci.container_name), "app");
	ASSERT_TRUE(matches("comm=nginx", &in), "comm");
	ASSERT_TRUE(matches("comm=ng.*|apache", &in), "comm alternation, anchored as a whole");
	ASSERT_TRUE(!matches("comm=ngin", &in), "comm is anchored");
	ASSERT_TRUE(matches("exe=/usr/*nginx", &in), "exe glob crosses /");
	ASSERT_TRUE(!matches("exe=nginx", &in), "exe glob is on the whole path");
	ASSERT_TRUE(matches("cgroup=/kubepods/burstable", &in), "cgroup prefix");
	ASSERT_TRUE(!matches("cgroup=/kubepods/burst", &in), "cgroup prefix at a component");
	ASSERT_TRUE(matches("container=4f2b8a", &in), "container id prefix");
	ASSERT_TRUE(!matches("container=4f2b8b", &in), "other container");
	ASSERT_TRUE(matches("pid=42", &in) && !matches("pid=43", &in), "pid");
	ASSERT_TRUE(matches("pod=shop/cart-1", &in) && !matches("pod=shop/cart", &in), "pod");
	ASSERT_TRUE(matches("namespace=shop", &in) && !matches("namespace=sho", &in), "namespace");
	ASSERT_TRUE(matches("container-name=app", &in), "container-name");
	ASSERT_TRUE(!matches("container-name=sidecar", &in), "other container name");
	{
		char *v[] = { "comm=apache", "pid=42" };

		ASSERT_EQ(selectors__parse("--select", v, 2, &s), 0, "two selectors");
		ASSERT_STREQ(selectors__match(s, &in), "pid=42", "OR'ed: the one that matched");
		selectors__free(s);
	}
	/* bad ones are refused with the opt_error line (on stderr) */
	ASSERT_TRUE(!sel("comm=("), "bad regex");
	ASSERT_TRUE(!sel("pid=x"), "bad pid");
	ASSERT_TRUE(!sel("pod=shop"), "pod without namespace");
	ASSERT_TRUE(!sel("cgroup=kubepods"), "relative cgroup");
	ASSERT_TRUE(!sel("color=blue"), "unknown key");
	ASSERT_TRUE(!sel("comm="), "empty value");
}

static int add_name(void *ctx, const char *name)
{
	char *out = ctx;
	size_t len = strlen(out);

	snprintf(out + len, 256 - len, "%s%s", len ? " " : "", name);
	return 0;
}

/* the names the kernel stops at exec: comm= plain names, exe= globs ending in a plain name */
static void test_selector_names(void)
{
	char *v[] = { "comm=redis-server", "comm=nginx|php-fpm8.2", "comm=ng.*", "comm=(a|b)",
		      "exe=/usr/bin/memcached", "exe=*/postgres", "exe=/opt/*", "exe=/opt/a[bc]",
		      "pid=42", "cgroup=/x", "usdt" };
	char names[256] = "";
	struct selectors *s;

	if (!ASSERT_EQ(selectors__parse("--select", v, sizeof(v) / sizeof(v[0]), &s), 0, "parse"))
		return;
	ASSERT_EQ(selectors__names(s, add_name, names), 0, "names");
	ASSERT_STREQ(names, "redis-server nginx php-fpm8.2 memcached postgres",
		     "plain names only; a regex or a wildcard last holds nothing");
	selectors__free(s);
}

static struct agent_target tgt(pid_t pid, const char *comm, const char *id, bool exited)
{
	struct agent_target t = { .pid = pid, .exited_ns = exited ? 5 : 0, .since_ns = pid };

	snprintf(t.comm, sizeof(t.comm), "%s", comm);
	snprintf(t.ci.id, sizeof(t.ci.id), "%s", id);
	return t;
}

static unsigned int resolve(const struct agent_target *v, size_t n, const char *pid,
			    const char *container, const char *comm, size_t *which, char **body)
{
	struct http_reply r = { 0 };
	unsigned int st = resolve_target(v, n, pid, container, comm, which, &r);

	*body = r.body;
	return st;
}

static void test_resolve(void)
{
	struct agent_target v[] = {
		tgt(10, "app", "aaaa" ID2, false), tgt(11, "app", "bbbb" ID2, false),
		tgt(12, "db", "", false), tgt(12, "db", "", true), tgt(13, "old", "", true),
	};
	size_t which = 99;
	char *body;

	ASSERT_EQ(resolve(v, 5, "10", NULL, NULL, &which, &body), 200, "pid");
	ASSERT_EQ(which, 0, "pid 10");
	ASSERT_EQ(resolve(v, 5, "12", NULL, NULL, &which, &body), 200, "live before exited");
	ASSERT_EQ(which, 2, "the live pid 12");
	ASSERT_EQ(resolve(v, 5, "13", NULL, NULL, &which, &body), 200, "an exited target");
	ASSERT_EQ(resolve(v, 5, NULL, "bbbb", NULL, &which, &body), 200, "container prefix");
	ASSERT_EQ(which, 1, "container bbbb");
	ASSERT_EQ(resolve(v, 5, NULL, NULL, "app", &which, &body), 409, "two apps");
	ASSERT_TRUE(body && strstr(body, "\"pid\": 10") && strstr(body, "\"pid\": 11") &&
		    !strstr(body, "\"pid\": 12") && strstr(body, "2 targets match comm=app"),
		    "409 names the two candidates");
	free(body);
	ASSERT_EQ(resolve(v, 5, NULL, "aaaa", "app", &which, &body), 200, "container and comm");
	ASSERT_EQ(resolve(v, 5, "10", NULL, "db", &which, &body), 404, "pid and comm disagree");
	ASSERT_TRUE(body && strstr(body, "no target matches pid=10 comm=db") &&
		    strstr(body, "\"pid\": 13"), "404 lists every target");
	free(body);
	ASSERT_EQ(resolve(v, 5, "abc", NULL, NULL, &which, &body), 400, "pid not a number");
	free(body);
	ASSERT_EQ(resolve(v, 5, NULL, NULL, NULL, &which, &body), 400, "nothing named");
	free(body);
	ASSERT_EQ(resolve(v, 5, NULL, "", NULL, &which, &body), 400, "empty container=");
	free(body);
}

static void test_token_and_listen(void)
{
	struct http_listen l;

	ASSERT_TRUE(http_token_equal("s3cret", 6, "s3cret", 6), "same");
	ASSERT_TRUE(!http_token_equal("s3cre", 5, "s3cret", 6), "a prefix");
	ASSERT_TRUE(!http_token_equal("s3cretX", 7, "s3cret", 6), "longer");
	ASSERT_TRUE(!http_token_equal("s3creT", 6, "s3cret", 6), "last byte");
	ASSERT_TRUE(!http_token_equal("", 0, "s3cret", 6), "empty");
	ASSERT_TRUE(!http_parse_listen("127.0.0.1:7790", &l) && l.loopback, "v4 loopback");
	ASSERT_TRUE(!http_parse_listen("127.1.2.3:0", &l) && l.loopback, "127/8");
	ASSERT_TRUE(!http_parse_listen("0.0.0.0:7790", &l) && !l.loopback, "any");
	ASSERT_TRUE(!http_parse_listen("10.0.0.1:80", &l) && !l.loopback, "v4");
	ASSERT_TRUE(!http_parse_listen("[::1]:7790", &l) && l.loopback, "v6 loopback");
	ASSERT_TRUE(!http_parse_listen("[::ffff:127.0.0.1]:1", &l) && l.loopback, "mapped");
	ASSERT_TRUE(!http_parse_listen("[::]:7790", &l) && !l.loopback, "v6 any");
	ASSERT_TRUE(http_parse_listen("localhost:7790", &l) < 0, "numeric only");
	ASSERT_TRUE(http_parse_listen("127.0.0.1", &l) < 0, "no port");
	ASSERT_TRUE(http_parse_listen("127.0.0.1:65536", &l) < 0, "port range");
	ASSERT_TRUE(http_parse_listen("::1:7790", &l) < 0, "v6 without brackets");
}

struct fake_writer {
	const char *text;	/* what the profile holds */
	int fail;		/* -errno to fail with, after writing half */
	int calls;
};

static int fake_write(void *ctx, int fd, char *err, size_t errlen)
{
	struct fake_writer *w = ctx;
	size_t n = strlen(w->text);

	w->calls++;
	if (w->fail) {
		if (write(fd, w->text, n / 2) < 0)
			return -errno;
		snprintf(err, errlen, "the fake writer failed on purpose");
		return w->fail;
	}
	return write(fd, w->text, n) == (ssize_t)n ? 0 : -EIO;
}

static int count_files(const char *dir, const char *prefix)
{
	char cmd[512];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c '^%s'", dir, prefix);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

static void test_snapshots(void)
{
	struct snapshot_target t = { .comm = "a-1", .pid = 2,
				     .time_ns = 1700000000LL * 1000000000 };
	struct snapshot_target other = { .comm = "a", .pid = 1, .time_ns = t.time_ns };
	struct fake_writer w = { .text = "profile one" };
	char dir[256], path[512], newest[512], err[256], *got;
	int i;

	snprintf(dir, sizeof(dir), "%s/snap", tmpdir);
	mkdir(dir, 0755);
	/* "culpert-a-1-" is a prefix of "culpert-a-1-2-": rotating one must not touch the other */
	ASSERT_EQ(snapshot__write(dir, 2, &other, fake_write, &w, path, sizeof(path), err,
				  sizeof(err)), 0, "other target");
	for (i = 0; i < 5; i++) {
		t.time_ns += 60LL * 1000000000;
		ASSERT_EQ(snapshot__write(dir, 3, &t, fake_write, &w, path, sizeof(path), err,
					  sizeof(err)), 0, "write");
	}
	ASSERT_TRUE(strstr(path, "/culpert-a-1-2-20231114T221820Z.pb.gz") != NULL, path);
	snprintf(newest, sizeof(newest), "%s", path);
	ASSERT_EQ(count_files(dir, "culpert-a-1-2-"), 3, "--keep 3: the newest three");
	ASSERT_EQ(count_files(dir, "culpert-a-1-[0-9]*T"), 1, "the other target's one stays");
	ASSERT_TRUE(access(path, F_OK) == 0, "the newest is kept");
	/* a failed write: no new file, no temporary left, the old ones intact */
	w.fail = -ENOSPC;
	t.time_ns += 60LL * 1000000000;
	ASSERT_EQ(snapshot__write(dir, 3, &t, fake_write, &w, path, sizeof(path), err,
				  sizeof(err)), -ENOSPC, "failure reported");
	ASSERT_STREQ(err, "the fake writer failed on purpose", "the writer's reason");
	ASSERT_TRUE(access(path, F_OK) != 0, "no file for the failed snapshot");
	ASSERT_EQ(count_files(dir, "\\."), 0, "no temporary file left");
	ASSERT_EQ(count_files(dir, "culpert-a-1-2-"), 3, "older snapshots untouched");
	/* whole content, named only once complete */
	got = NULL;
	{
		FILE *f = fopen(newest, "r");
		char buf[64] = "";

		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = 0;
			fclose(f);
		}
		got = strdup(buf);
	}
	ASSERT_STREQ(got, "profile one", "content");
	free(got);
	/* temporaries of a killed agent are removed at start */
	snprintf(path, sizeof(path), "%s/.culpert-snapshot-1-1.tmp", dir);
	close(open(path, O_WRONLY | O_CREAT, 0644));
	ASSERT_EQ(snapshot__clean(dir), 1, "one temporary removed");
}

static const char podlist[] =
	"{\"kind\":\"PodList\",\"items\":["
	"{\"metadata\":{\"name\":\"cart-1\",\"namespace\":\"shop\",\"uid\":\"" UID "\","
	"\"annotations\":{\"pyroscope.io/service_name\":\"cart-svc\"}},"
	"\"status\":{\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"cri-o://" ID "\"},"
	"{\"name\":\"side\",\"containerID\":\"cri-o://" ID2 "\"}]}},"
	"{\"metadata\":{\"name\":\"x\",\"namespace\":\"y\",\"uid\":\"u2\"},\"status\":{}}]}";

static void test_podlist(void)
{
	struct kubeapi *k = kubeapi__new_offline();
	struct container_info ci;
	struct kubeapi_counts c;

	if (!ASSERT_OK_PTR(k, "kubeapi"))
		return;
	ASSERT_EQ(kubeapi__parse(k, podlist, strlen(podlist)), 0, "parse");
	kubeapi__counts(k, &c);
	ASSERT_EQ(c.pods, 2, "two pods");
	ASSERT_EQ(c.generation, 1, "news");
	ASSERT_EQ(kubeapi__parse(k, podlist, strlen(podlist)), 0, "the same list again");
	kubeapi__counts(k, &c);
	ASSERT_EQ(c.generation, 1, "no news: the profiling thread need not look again");
	container_parse_path("/kubepods/besteffort/pod" UID "/" ID2, &ci);
	ASSERT_TRUE(kubeapi__lookup(k, &ci), "the pod is known");
	ASSERT_STREQ(ci.pod_name, "cart-1", "pod");
	ASSERT_STREQ(ci.container_name, "side", "container by id");
	ASSERT_STREQ(ci.runtime, "cri-o", "runtime from the containerID scheme");
	ASSERT_STREQ(ci.service_name, "cart-svc", "the annotation");
	container_parse_path("/kubepods/besteffort/pod" UID_ "x/" ID2, &ci);
	ASSERT_TRUE(!kubeapi__lookup(k, &ci), "an unknown pod");
	ASSERT_EQ(kubeapi__parse(k, "{\"kind\":\"Status\"}", 17), -EINVAL, "not a PodList");
	ASSERT_EQ(kubeapi__parse(k, "{\"items\":[", 10), -EINVAL, "truncated");
	kubeapi__counts(k, &c);
	ASSERT_EQ(c.pods, 2, "a bad answer keeps the last list");
	kubeapi__stop(k);
}

/* two processes in one exposition: each family's HELP and TYPE once, both samples under it */
static void test_prometheus_many(void)
{
	struct memstats *m = calloc(2, sizeof(*m));
	const struct memstats *mp[2] = { &m[0], &m[1] };
	struct mem_prom_labels l[2] = {
		{ .key = { "pod" }, .val = { "cart-1" }, .n = 1 },
		{ .key = { "pod" }, .val = { "" }, .n = 1 },
	};
	char *out = NULL;
	size_t len;
	FILE *f;

	if (!ASSERT_OK_PTR(m, "alloc"))
		return;
	m[0].pid = 10;
	m[1].pid = 11;
	mem_set(&m[0].rollup, mem_section__index(&mem_rollup_section, "rss_bytes"), 4096);
	mem_set(&m[1].rollup, mem_section__index(&mem_rollup_section, "rss_bytes"), 8192);
	f = open_memstream(&out, &len);
	ASSERT_EQ(memfmt_prometheus_many(f, mp, l, 2), 0, "write");
	fclose(f);
	ASSERT_TRUE(out && strstr(out, "# TYPE culpert_process_rss_bytes gauge\n"
			   "culpert_process_rss_bytes{pid=\"10\",comm=\"\",container_id=\"\","
			   "pod=\"cart-1\"} 4096\n"
			   "culpert_process_rss_bytes{pid=\"11\",comm=\"\",container_id=\"\","
			   "pod=\"\"} 8192\n"), "both under one TYPE");
	ASSERT_TRUE(out && strstr(out, "# HELP culpert_process_rss_bytes") &&
		    !strstr(strstr(out, "# HELP culpert_process_rss_bytes") + 1,
			    "# HELP culpert_process_rss_bytes"), "one HELP");
	free(out);
	free(m);
}

int main(void)
{
	test_group = "agent";
	if (!mkdtemp(tmpdir))
		return 1;
	RUN_TEST(test_layouts);
	RUN_TEST(test_container_id_of_path);
	RUN_TEST(test_proc_cgroup);
	RUN_TEST(test_proc_info_exec);
	RUN_TEST(test_log_dirs);
	RUN_TEST(test_selectors);
	RUN_TEST(test_selector_names);
	RUN_TEST(test_resolve);
	RUN_TEST(test_token_and_listen);
	RUN_TEST(test_snapshots);
	RUN_TEST(test_podlist);
	RUN_TEST(test_prometheus_many);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", tmpdir);
	}
	return TEST_EXIT();
}
