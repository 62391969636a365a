// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kill_traced PID TRACER DELAY_US [SKIP]: watch the threads of PID until
 * a tracer holds one of them (TracerPid in its status) for the SKIP+1-th
 * time (0: the first), wait DELAY_US, and SIGKILL TRACER: a culpert-bpf
 * killed at a chosen moment of an injection or a release
 * (tests/bpf/test_inject.sh).  Prints "killed" or "gone" (TRACER ended
 * first); gives up after 30 s.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int traced(const char *pid)
{
	char path[640], buf[2048];
	struct dirent *d;
	int hit = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%s/task", pid);
	dir = opendir(path);
	while (dir && !hit && (d = readdir(dir))) {
		FILE *f;
		char *p;
		size_t n;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task/%s/status", pid, d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
		p = strstr(buf, "TracerPid:");
		hit = p && atoi(p + 10) > 0;
	}
	if (dir)
		closedir(dir);
	return hit;
}

/* running: a tracer that ended is a zombie until the test's shell waits for it */
static int alive(pid_t pid)
{
	char path[64], buf[256], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

int main(int argc, char **argv)
{
	pid_t tracer;
	long delay, skip;
	time_t end = time(NULL) + 30;
	int was = 0;

	if (argc < 4)
		return 2;
	tracer = (pid_t)atoi(argv[2]);
	delay = atol(argv[3]);
	skip = argc > 4 ? atol(argv[4]) : 0;
	while (time(NULL) < end) {
		int now = traced(argv[1]);

		if (now && !was && skip-- == 0) {
			usleep((useconds_t)delay);
			puts(kill(tracer, SIGKILL) ? "gone" : "killed");
			return 0;
		}
		was = now;
		if (!alive(tracer))
			break;
	}
	puts("gone");
	return 0;
}
