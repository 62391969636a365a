// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The memory picture: parsers of /proc and cgroup v2 files on fixture text
 * as the kernel writes it, a fixture cgroup directory, the three output
 * formats and the heap-vs-RSS gap on synthetic numbers.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapgap.h"
#include "memcg.h"
#include "memfmt.h"
#include "memstats.h"
#include "test.h"

#define KB 1024ULL

static uint64_t get(const struct mem_section *s, const struct mem_values *v, const char *name)
{
	uint64_t x = 0;

	if (!mem_get(s, v, name, &x))
		return (uint64_t)-1;
	return x;
}

/* an older kernel: no Pss_Dirty, KSM or Pss_Shmem lines */
static const char rollup_text[] =
	"558e9fd36000-7ffcbbf54000 ---p 00000000 00:00 0                          [rollup]\n"
	"Rss:                1768 kB\n"
	"Pss:                 462 kB\n"
	"Pss_Anon:            116 kB\n"
	"Pss_File:            346 kB\n"
	"Shared_Clean:       1560 kB\n"
	"Anonymous:           116 kB\n"
	"Swap:                 12 kB\n";

static void test_parse_rollup(void)
{
	struct mem_values v = { 0 };

	mem_parse_keyed(rollup_text, &mem_rollup_section, &v);
	ASSERT_EQ(get(&mem_rollup_section, &v, "rss_bytes"), 1768 * KB, "rss in bytes");
	ASSERT_EQ(get(&mem_rollup_section, &v, "pss_anon_bytes"), 116 * KB, "pss_anon");
	ASSERT_EQ(get(&mem_rollup_section, &v, "anonymous_bytes"), 116 * KB, "anonymous");
	ASSERT_EQ(get(&mem_rollup_section, &v, "swap_bytes"), 12 * KB, "swap");
	ASSERT_EQ(get(&mem_rollup_section, &v, "swap_pss_bytes"), (uint64_t)-1,
		  "SwapPss not in the file: absent, not 0");
	ASSERT_EQ(get(&mem_rollup_section, &v, "ksm_bytes"), (uint64_t)-1, "KSM absent");
}

static void test_parse_status(void)
{
	const char text[] = "Name:\tapp\nState:\tS (sleeping)\nVmPeak:\t    3896 kB\n"
			    "VmHWM:\t    1972 kB\nVmRSS:\t    1972 kB\nRssAnon:\t     160 kB\n"
			    "RssFile:\t    1812 kB\nThreads:\t7\nSigQ:\t0/96365\n";
	struct mem_values v = { 0 };

	mem_parse_keyed(text, &mem_status_section, &v);
	ASSERT_EQ(get(&mem_status_section, &v, "vm_rss_bytes"), 1972 * KB, "VmRSS");
	ASSERT_EQ(get(&mem_status_section, &v, "vm_hwm_bytes"), 1972 * KB, "VmHWM");
	ASSERT_EQ(get(&mem_status_section, &v, "rss_anon_bytes"), 160 * KB, "RssAnon");
	ASSERT_EQ(get(&mem_status_section, &v, "threads"), 7, "Threads is a count, not kB");
	ASSERT_EQ(get(&mem_status_section, &v, "vm_swap_bytes"), (uint64_t)-1, "VmSwap absent");
}

static void test_classify(void)
{
	ASSERT_EQ(mem_classify("[heap]", "rd wr mr mw me ac"), MEM_KIND_HEAP, "heap");
	ASSERT_EQ(mem_classify("", "rd wr mr mw me ac"), MEM_KIND_ANON, "anonymous");
	ASSERT_EQ(mem_classify("[anon:jemalloc]", "rd wr"), MEM_KIND_ANON, "named anonymous");
	ASSERT_EQ(mem_classify("[stack]", "rd wr gd"), MEM_KIND_STACK, "stack");
	ASSERT_EQ(mem_classify("/usr/lib/libc.so.6", "rd ex mr mw me"), MEM_KIND_FILE, "code");
	ASSERT_EQ(mem_classify("/dev/zero (deleted)", "rd wr sh mr mw me ms"), MEM_KIND_SHMEM,
		  "MAP_SHARED|MAP_ANONYMOUS");
	ASSERT_EQ(mem_classify("/memfd:buf (deleted)", "rd wr sh"), MEM_KIND_SHMEM, "memfd");
	ASSERT_EQ(mem_classify("/SYSV00000000 (deleted)", "rd wr sh"), MEM_KIND_SHMEM, "SysV");
	ASSERT_EQ(mem_classify("/data/file.db", "rd wr sh mr"), MEM_KIND_FILE,
		  "a shared mapping of a regular file is file-backed");
	ASSERT_EQ(mem_classify("/anon_hugepage (deleted)", "rd wr sh ht"), MEM_KIND_HUGE,
		  "hugetlbfs");
	ASSERT_EQ(mem_classify("[vdso]", "rd ex"), MEM_KIND_OTHER, "vdso");
	ASSERT_EQ(mem_classify("[heap]", "rd wr shx"), MEM_KIND_HEAP, "flags match whole words");
}

/* two anonymous mappings, one without a VmFlags line (older kernels) */
static const char smaps_text[] =
	"55d0c0a00000-55d0c0a01000 r--p 00000000 fe:00 1234                       /usr/bin/app\n"
	"Size:                  4 kB\nRss:                   4 kB\nPss:                   2 kB\n"
	"Swap:                  0 kB\nVmFlags: rd mr mw me\n"
	"55d0c1000000-55d0c1400000 rw-p 00000000 00:00 0                          [heap]\n"
	"Size:               4096 kB\nRss:                4000 kB\nPss:                4000 kB\n"
	"Swap:                 96 kB\nAnonHugePages:         0 kB\nVmFlags: rd wr mr mw me ac\n"
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n"
	"Size:               1024 kB\nRss:                1024 kB\nPss:                1024 kB\n"
	"Swap:                  0 kB\nAnonHugePages:      1024 kB\nVmFlags: rd wr mr mw me ac\n"
	"7f0000100000-7f0000200000 rw-p 00000000 00:00 0\n"
	"Size:               1024 kB\nRss:                 512 kB\nPss:                 512 kB\n"
	"Swap:                  0 kB\n"
	"7f0000200000-7f0000300000 rw-s 00000000 00:01 77                         /dev/zero (deleted)\n"
	"Size:               1024 kB\nRss:                 100 kB\nPss:                  50 kB\n"
	"Swap:                  0 kB\nVmFlags: rd wr sh mr mw me ms\n";

static void test_smaps_kinds(void)
{
	struct mem_values k[MEM_KIND__MAX];

	memset(k, 0, sizeof(k));
	if (!ASSERT_EQ(mem_parse_smaps(smaps_text, k), 0, "parse"))
		return;
	ASSERT_EQ(k[MEM_KIND_HEAP].v[MEM_KIND_F_COUNT], 1, "one heap");
	ASSERT_EQ(k[MEM_KIND_HEAP].v[MEM_KIND_F_SIZE], 4096 * KB, "heap size");
	ASSERT_EQ(k[MEM_KIND_HEAP].v[MEM_KIND_F_RSS], 4000 * KB, "heap rss");
	ASSERT_EQ(k[MEM_KIND_HEAP].v[MEM_KIND_F_SWAP], 96 * KB, "heap swap");
	ASSERT_EQ(k[MEM_KIND_ANON].v[MEM_KIND_F_COUNT], 2, "two anonymous mappings");
	ASSERT_EQ(k[MEM_KIND_ANON].v[MEM_KIND_F_RSS], 1536 * KB, "anon rss summed");
	ASSERT_EQ(k[MEM_KIND_ANON].v[MEM_KIND_F_ANON_HUGE], 1024 * KB, "THP in anon");
	ASSERT_EQ(k[MEM_KIND_SHMEM].v[MEM_KIND_F_RSS], 100 * KB, "shmem rss");
	ASSERT_EQ(k[MEM_KIND_FILE].v[MEM_KIND_F_PSS], 2 * KB, "file pss");
	ASSERT_TRUE(mem_has(&k[MEM_KIND_HUGE], MEM_KIND_F_RSS), "a kind with no mapping is 0, read");
	ASSERT_EQ(k[MEM_KIND_HUGE].v[MEM_KIND_F_COUNT], 0, "no huge mappings");
	memset(k, 0, sizeof(k));
	ASSERT_TRUE(mem_parse_smaps("55d0-zz junk\n", k) < 0, "junk header refused");
}

static void test_proc_cgroup(void)
{
	char path[256];
	bool v1mem;

	ASSERT_EQ(memcg_parse_proc_cgroup("0::/system.slice/app.service\n", path, sizeof(path),
					  &v1mem), 0, "v2 only");
	ASSERT_STREQ(path, "/system.slice/app.service", "v2 path");
	ASSERT_TRUE(!v1mem, "no v1 memory");
	ASSERT_EQ(memcg_parse_proc_cgroup("9:name=systemd:/\n4:memory:/x\n3:cpu,cpuacct:/\n0::/\n",
					  path, sizeof(path), &v1mem), 0, "hybrid");
	ASSERT_STREQ(path, "/", "hybrid v2 path");
	ASSERT_TRUE(v1mem, "memory on v1");
	ASSERT_EQ(memcg_parse_proc_cgroup("5:cpu,memory:/a\n", path, sizeof(path), &v1mem),
		  -ENOENT, "v1 only: no v2 cgroup");
	ASSERT_TRUE(v1mem, "memory in a joint v1 hierarchy");
	memcg_parse_proc_cgroup("6:memory_x:/a\n", path, sizeof(path), &v1mem);
	ASSERT_TRUE(!v1mem, "controller names match whole");
}

static void test_mountinfo(void)
{
	const char text[] =
		"25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw\n"
		"31 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
		"41 31 0:38 / /sys/fs/cgroup/uni\\040fied rw,relatime shared:5 - cgroup2 cgroup2 rw\n";
	char mnt[256], root[256];

	ASSERT_EQ(memcg_parse_mountinfo(text, mnt, sizeof(mnt), root, sizeof(root)), 0, "found");
	ASSERT_STREQ(mnt, "/sys/fs/cgroup/uni fied", "mount point, \\040 unescaped");
	ASSERT_STREQ(root, "/", "root");
	ASSERT_EQ(memcg_parse_mountinfo("31 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n",
					mnt, sizeof(mnt), root, sizeof(root)), -ENOENT,
		  "cgroup v1 mounts are not v2");
}

static void test_pressure(void)
{
	struct mem_pressure p;

	ASSERT_EQ(memcg_parse_pressure("some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\n"
				       "full avg10=0.50 avg60=0.00 avg300=0.00 total=7\n", &p),
		  0, "parse");
	ASSERT_NEAR(p.avg[0][0], 1.5, 1e-9, "some avg10");
	ASSERT_NEAR(p.avg[0][1], 0.25, 1e-9, "some avg60");
	ASSERT_EQ(p.total_us[0], 123456, "some total");
	ASSERT_TRUE(p.has_full, "full");
	ASSERT_EQ(p.total_us[1], 7, "full total");
	ASSERT_TRUE(memcg_parse_pressure("some avg10=x\n", &p) < 0, "junk refused");
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* a cgroup directory as the kernel lays it out */
static void test_cgroup_dir(void)
{
	char dir[] = "/tmp/culpert-memcg.XXXXXX", path[600];
	struct mem_cgroup cg;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "mkdtemp"))
		return;
	write_file(dir, "cgroup.controllers", "cpu io memory pids\n");
	write_file(dir, "memory.current", "104857600\n");
	write_file(dir, "memory.max", "max\n");
	write_file(dir, "memory.high", "209715200\n");
	write_file(dir, "memory.peak", "157286400\n");
	write_file(dir, "memory.stat", "anon 52428800\nfile 41943040\ninactive_file 31457280\n"
		   "pgfault 1234\nunknown_future_key 5\n");
	write_file(dir, "memory.events", "low 0\nhigh 3\nmax 17\noom 2\noom_kill 1\n");
	write_file(dir, "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"
		   "full avg10=0.00 avg60=0.00 avg300=0.00 total=40\n");
	memset(&cg, 0, sizeof(cg));
	memcg__read_dir(dir, "/test.slice/app", false, &cg);
	ASSERT_TRUE(cg.memory, "memory controller read");
	ASSERT_EQ(get(&memcg_memory_section, &cg.mem, "current_bytes"), 104857600, "current");
	ASSERT_EQ(get(&memcg_memory_section, &cg.mem, "max_bytes"), MEM_UNLIMITED, "max: no limit");
	ASSERT_EQ(get(&memcg_memory_section, &cg.mem, "high_bytes"), 209715200, "high");
	ASSERT_EQ(get(&memcg_memory_section, &cg.mem, "peak_bytes"), 157286400, "peak");
	ASSERT_EQ(get(&memcg_memory_section, &cg.mem, "swap_current_bytes"), (uint64_t)-1,
		  "no memory.swap.current file: absent");
	ASSERT_EQ(get(&memcg_memory_section, &cg.mem, "working_set_bytes"), 104857600 - 31457280,
		  "working_set = current - inactive_file");
	ASSERT_EQ(get(&memcg_stat_section, &cg.stat, "anon_bytes"), 52428800, "stat anon (bytes)");
	ASSERT_EQ(get(&memcg_stat_section, &cg.stat, "pgfault"), 1234, "stat pgfault (events)");
	ASSERT_EQ(get(&memcg_events_section, &cg.events, "max"), 17, "events max");
	ASSERT_EQ(get(&memcg_events_section, &cg.events, "oom_kill"), 1, "events oom_kill");
	ASSERT_EQ(get(&memcg_events_section, &cg.events, "oom_group_kill"), (uint64_t)-1,
		  "oom_group_kill absent");
	ASSERT_EQ(cg.pressure.total_us[0], 42, "pressure");

	write_file(dir, "cgroup.controllers", "cpu io pids\n");
	memset(&cg, 0, sizeof(cg));
	memcg__read_dir(dir, "/test.slice/app", false, &cg);
	ASSERT_TRUE(!cg.memory && strstr(cg.absent, "subtree_control"), "controller not enabled");
	ASSERT_TRUE(!mem_has(&cg.mem, 0), "nothing read as 0");
	ASSERT_TRUE(cg.pressure.present, "pressure is there without the memory controller");
	memset(&cg, 0, sizeof(cg));
	memcg__read_dir(dir, "/", true, &cg);
	ASSERT_TRUE(!cg.memory && strstr(cg.absent, "cgroup v1"), "hybrid: memory on v1");
	write_file(dir, "cgroup.controllers", "memory\n");
	memset(&cg, 0, sizeof(cg));
	memcg__read_dir(dir, "/", false, &cg);
	ASSERT_TRUE(!cg.memory && strstr(cg.absent, "root cgroup"), "root cgroup");
	snprintf(path, sizeof(path), "%s/memory.current", dir);
	unlink(path);
	memset(&cg, 0, sizeof(cg));
	memcg__read_dir(dir, "/a", false, &cg);
	ASSERT_TRUE(!cg.memory && strstr(cg.absent, "memory.current"), "unreadable current");
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	ASSERT_EQ(system(path), 0, "clean up");
}

/* a small picture with round numbers for the formats */
static void fill_picture(struct memstats *m, bool memory)
{
	int i;

	memset(m, 0, sizeof(*m));
	m->pid = 42;
	snprintf(m->comm, sizeof(m->comm), "a\"b\\c");
	m->time_ns = 1700000000000000000LL;
	mem_set(&m->rollup, mem_section__index(&mem_rollup_section, "rss_bytes"), 40 << 20);
	mem_set(&m->rollup, mem_section__index(&mem_rollup_section, "anonymous_bytes"), 36 << 20);
	mem_set(&m->status, mem_section__index(&mem_status_section, "threads"), 3);
	for (i = 0; i < MEM_KIND__MAX; i++) {
		mem_set(&m->kinds[i], MEM_KIND_F_COUNT, 0);
		mem_set(&m->kinds[i], MEM_KIND_F_RSS, 0);
	}
	mem_set(&m->kinds[MEM_KIND_HEAP], MEM_KIND_F_COUNT, 1);
	mem_set(&m->kinds[MEM_KIND_HEAP], MEM_KIND_F_RSS, 8 << 20);
	mem_set(&m->kinds[MEM_KIND_ANON], MEM_KIND_F_COUNT, 4);
	mem_set(&m->kinds[MEM_KIND_ANON], MEM_KIND_F_RSS, 24 << 20);
	snprintf(m->cg.path, sizeof(m->cg.path), "/t");
	m->cg.memory = memory;
	if (!memory) {
		snprintf(m->cg.absent, sizeof(m->cg.absent), "the memory controller is not enabled");
		return;
	}
	mem_set(&m->cg.mem, mem_section__index(&memcg_memory_section, "current_bytes"), 50 << 20);
	mem_set(&m->cg.mem, mem_section__index(&memcg_memory_section, "max_bytes"), MEM_UNLIMITED);
	mem_set(&m->cg.events, mem_section__index(&memcg_events_section, "oom_kill"), 2);
}

static char *render(int (*fn)(FILE *, const struct memstats *), const struct memstats *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fn(f, m);
	fclose(f);
	return buf;
}

static void test_json(void)
{
	struct memstats m;
	char *out;

	fill_picture(&m, false);
	out = render(memfmt_json, &m);
	ASSERT_TRUE(out && strstr(out, "\"cgroup\":{\"container_id\":\"\",\"memory\":null,"
				  "\"memory_absent\":\"the memory controller is not enabled\","
				  "\"path\":\"/t\",\"pressure\":null}"),
		    "absent memory is null with its reason, not zeros");
	ASSERT_TRUE(out && strstr(out, "\"comm\":\"a\\\"b\\\\c\""), "strings escaped");
	ASSERT_TRUE(out && strstr(out, "\"heap\":{\"count\":1,\"rss_bytes\":8388608}"),
		    "mappings nested by kind");
	ASSERT_TRUE(out && strstr(out, "\"schema_version\":1"), "schema version");
	ASSERT_TRUE(out && strchr(out, '\n') == out + strlen(out) - 1, "one line");
	free(out);
	/* a cgroup path is whatever bytes a directory name holds: still valid JSON text */
	snprintf(m.cg.path, sizeof(m.cg.path), "/t\n\xff");
	out = render(memfmt_json, &m);
	ASSERT_TRUE(out && strstr(out, "\"path\":\"/t\\n\\ufffd\""),
		    "control and invalid UTF-8 bytes escaped");
	free(out);
	fill_picture(&m, true);
	out = render(memfmt_json, &m);
	ASSERT_TRUE(out && strstr(out, "\"memory\":{\"current_bytes\":52428800,"
				  "\"events\":{\"oom_kill\":2},\"max_bytes\":\"max\"}"),
		    "memory section with events nested and the limit as \"max\"");
	free(out);
}

static void test_prometheus(void)
{
	struct memstats m;
	char *out;

	fill_picture(&m, true);
	out = render(memfmt_prometheus, &m);
	ASSERT_TRUE(out && strstr(out, "# TYPE culpert_cgroup_memory_events_oom_kill_total counter\n"
				  "culpert_cgroup_memory_events_oom_kill_total{pid=\"42\","
				  "comm=\"a\\\"b\\\\c\",container_id=\"\"} 2\n"),
		    "counter with _total, label values escaped");
	ASSERT_TRUE(out && strstr(out, "culpert_cgroup_memory_max_bytes{pid=\"42\",comm=\"a\\\"b\\\\c\","
				  "container_id=\"\"} +Inf\n"), "no limit is +Inf");
	ASSERT_TRUE(out && strstr(out, "# HELP culpert_process_mapping_rss_bytes ") &&
		    strstr(out, "# TYPE culpert_process_mapping_rss_bytes gauge\n"
			   "culpert_process_mapping_rss_bytes{pid=\"42\",comm=\"a\\\"b\\\\c\","
			   "container_id=\"\",kind=\"anon\"} 25165824\n"),
		    "one family for all kinds, kind as a label");
	ASSERT_TRUE(out && strstr(out, "culpert_process_threads{") && !strstr(out, "threads_bytes"),
		    "a count has no unit suffix");
	free(out);
	fill_picture(&m, false);
	out = render(memfmt_prometheus, &m);
	ASSERT_TRUE(out && !strstr(out, "culpert_cgroup_memory_current"),
		    "absent cgroup memory: no series at all, not 0");
	free(out);
}

struct collected {
	char c[64][160];
	int n;
};

static int collect(void *ctx, const char *comment)
{
	struct collected *c = ctx;

	if (c->n < 64)
		snprintf(c->c[c->n++], sizeof(c->c[0]), "%s", comment);
	return 0;
}

static void test_comments(void)
{
	struct collected c = { .n = 0 };
	struct memstats m;
	bool seen_current = false, seen_max = false, sorted = true;
	int i;

	fill_picture(&m, true);
	ASSERT_EQ(memfmt_comments(&m, "mem.start", collect, &c), 0, "comments");
	for (i = 0; i < c.n; i++) {
		seen_current |= !strcmp(c.c[i], "mem.start.cgroup.memory.current_bytes=52428800");
		seen_max |= !strcmp(c.c[i], "mem.start.cgroup.memory.max_bytes=max");
		ASSERT_TRUE(strncmp(c.c[i], "mem.start.pid=", 14) && strncmp(c.c[i], "mem.start.comm=", 15),
			    "pid and comm are target.* comments already");
		if (i && strcmp(c.c[i - 1], c.c[i]) >= 0)
			sorted = false;
	}
	ASSERT_TRUE(seen_current && seen_max, "cgroup values as key=value");
	ASSERT_TRUE(sorted, "sorted");
}

/* the gap as a string: heap_gap__print() into memory */
static char *gap_text(const struct heap_gap *g)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	heap_gap__print(f, g);
	fclose(f);
	return buf;
}

static void test_heap_gap(void)
{
	struct memstats start, end;
	struct heap_gap g;
	struct collected c = { .n = 0 };
	char *buf;

	/*
	 * 20 MiB resident at attach ([heap] 4 + anonymous 16), 32 MiB at the end
	 * ([heap] 8 + anonymous 24): 12 MiB of growth.  The live heap allocated
	 * since attach is 11 MiB +- 256 KiB: 1 MiB of growth it does not explain.
	 */
	fill_picture(&start, true);
	fill_picture(&end, true);
	mem_set(&start.kinds[MEM_KIND_HEAP], MEM_KIND_F_RSS, 4 << 20);
	mem_set(&start.kinds[MEM_KIND_ANON], MEM_KIND_F_RSS, 16 << 20);
	if (!ASSERT_EQ(heap_gap__compute(&start, &end, 11 << 20, 256 << 10, &g), 0, "compute"))
		return;
	ASSERT_TRUE(g.have_start, "a picture at attach");
	ASSERT_EQ(g.start_rss, 20 << 20, "[heap] + anonymous resident at attach");
	ASSERT_EQ(g.heap_rss, 32 << 20, "[heap] + anonymous resident at the end");
	ASSERT_EQ(g.anon_rss, 36 << 20, "anonymous RSS of the process");
	ASSERT_NEAR(g.growth_bytes, 12 << 20, 0, "growth = 32 - 20 MiB");
	ASSERT_NEAR(g.gap_bytes, 1 << 20, 0, "growth beyond the live heap = 12 - 11 MiB");
	ASSERT_NEAR(g.gap_stderr, 256 << 10, 0, "the gap's error is the estimate's");
	buf = gap_text(&g);
	ASSERT_TRUE(buf && strstr(buf, "(the live heap counts only blocks allocated since attach)"),
		    "says what the live heap covers");
	ASSERT_TRUE(buf && strstr(buf, "  [heap] + anonymous resident          20.00 MiB -> "
				   "32.00 MiB: "
				   "+12.00 MiB\n"), "the growth");
	ASSERT_TRUE(buf && strstr(buf, "  growth beyond the new live blocks    +1.00 MiB +- "
				   "256.00 KiB\n"
				   "    RSS grew more than the blocks still live"), "a significant gap");
	ASSERT_TRUE(buf && strstr(buf, "  resident at attach                   20.00 MiB\n"
				   "    memory "
				   "from before attach"), "what was there before is older memory");
	/* what was resident at attach is not called fragmentation */
	ASSERT_TRUE(buf && !strstr(strstr(buf, "resident at attach"), "fragmentation"), "older memory");
	free(buf);
	/* 11.9 MiB live: 0.1 MiB at 0.25 MiB sigma is noise */
	heap_gap__compute(&start, &end, 11.9 * (1 << 20), 256 << 10, &g);
	buf = gap_text(&g);
	ASSERT_TRUE(buf && strstr(buf, "within 2 sigma of 0"), "noise");
	free(buf);
	/* 13 MiB live: the new blocks reused memory resident at attach */
	heap_gap__compute(&start, &end, 13 << 20, 256 << 10, &g);
	buf = gap_text(&g);
	ASSERT_TRUE(buf && strstr(buf, "-1.00 MiB +- 256.00 KiB\n"
				   "    the new live blocks took less growth"),
		    "a negative gap");
	free(buf);
	/* no growth and no live block: no gap, not "less growth than their size" */
	heap_gap__compute(&end, &end, 0, 0, &g);
	buf = gap_text(&g);
	ASSERT_TRUE(buf && strstr(buf, "0 B +- 0 B\n    none: the new live blocks explain") &&
		    !strstr(buf, "less growth"), buf ? buf : "gap text");
	free(buf);
	heap_gap__compute(&start, &end, 13 << 20, 256 << 10, &g);
	heap_gap__comments(&g, "mem.gap", collect, &c);
	ASSERT_EQ(c.n, 8, "eight comments");
	ASSERT_STREQ(c.c[1], "mem.gap.growth_bytes=12582912", "growth comment");
	ASSERT_STREQ(c.c[5], "mem.gap.heap_rss_start_bytes=20971520", "start comment");
	/* no picture at attach: no growth, nothing called a gap */
	ASSERT_EQ(heap_gap__compute(NULL, &end, 1 << 20, 1, &g), 0, "no start");
	ASSERT_TRUE(!g.have_start && g.gap_bytes == 0, "no gap without a start");
	buf = gap_text(&g);
	ASSERT_TRUE(buf && !strstr(buf, "growth beyond") && strstr(buf, "cannot be told apart"),
		    "end only");
	free(buf);
	end.kinds[MEM_KIND_HEAP].present = 0;
	ASSERT_EQ(heap_gap__compute(&start, &end, 1, 1, &g), -ENODATA, "no smaps: no gap");
}

int main(void)
{
	test_group = "memstats";
	RUN_TEST(test_parse_rollup);
	RUN_TEST(test_parse_status);
	RUN_TEST(test_classify);
	RUN_TEST(test_smaps_kinds);
	RUN_TEST(test_proc_cgroup);
	RUN_TEST(test_mountinfo);
	RUN_TEST(test_pressure);
	RUN_TEST(test_cgroup_dir);
	RUN_TEST(test_json);
	RUN_TEST(test_prometheus);
	RUN_TEST(test_comments);
	RUN_TEST(test_heap_gap);
	return TEST_EXIT();
}
