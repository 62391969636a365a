# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# culpert-bpf: one top-level build; everything generated goes to $(OUTPUT).
# Targets (`make help` prints this):
#   all           culpert-bpf, culpert and libculpert-sampler.so (the default)
#   culpert       the CLI only (no BPF toolchain needed)
#   deps          install the Debian packages that are missing (apt-get, as root)
#   deps-list     print the Debian packages `make deps` needs (scripts/packages/)
#   demo          deps, build, profile examples/demo_service for a few seconds
#   test          deps, build, run every test; TESTS=pattern runs the matching files only
#   bench         overhead and cost measurements, medians over repeated runs
#   rust          the Rust tracing layer and its example (demo-rust: profiled under load)
#   fuzz          libFuzzer on the pprof reader and every printer (FUZZ_SECONDS=600 each)
#   check-layout  fail if a file includes a header from a layer above its own
#   install       both binaries, the sampler library and the public headers under PREFIX
#   image         the container image culpert-bpf:VERSION (IMAGE_ARCHES="x86 arm64")
#   vmlinux       regenerate vmlinux/$(ARCH)/vmlinux.h
#   clean         remove $(OUTPUT)
# Variables: V=1 (commands), OUTPUT, ARCH, CI=1 (-Werror, sanitizers), EXTRA_CFLAGS,
# EXTRA_LDFLAGS, and the tools: CLANG, BPFTOOL, PKG_CONFIG, CC ... (their defaults: below).

HOST_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ARCH ?= $(HOST_ARCH)
# ARCH=arm64 on an x86-64 host: Debian's cross toolchain against the arm64 multiarch
# libraries, in an OUTPUT of its own so host and cross objects never mix
CROSS := $(filter-out $(HOST_ARCH),$(ARCH))
ifneq ($(CROSS),)
ifneq ($(ARCH),arm64)
$(error ARCH=$(ARCH): only arm64 can be cross-built (from $(HOST_ARCH)))
endif
CROSS_COMPILE ?= aarch64-linux-gnu-
OUTPUT ?= .output/$(ARCH)
ifeq ($(origin CC),default)
CC := $(CROSS_COMPILE)gcc
endif
CXX := $(CROSS_COMPILE)g++
AR := $(CROSS_COMPILE)ar
STRIP := $(CROSS_COMPILE)strip
# only the target's .pc files: the host's would hand out x86-64 library paths
PKG_CONFIG ?= PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config
# test targets: musl-dev:arm64's specs behind the cross gcc, rustc with libstd-rust-dev:arm64
MUSL_GCC ?= $(CC) -specs /usr/lib/aarch64-linux-musl/musl-gcc.specs
RUST_ARCH_FLAGS := --target aarch64-unknown-linux-gnu -C linker=$(CROSS_COMPILE)gcc
# Debian's rustc: the one libstd-rust-dev:arm64 matches (a rustup toolchain has no arm64 std)
RUSTC ?= /usr/bin/rustc
endif

# the tools, every default in this one place (CC, CXX and AR: make's own)
OUTPUT ?= .output
CLANG ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config
STRIP ?= strip
HOSTCC ?= cc
GO ?= go
RUSTC ?= $(shell command -v rustc 2>/dev/null || echo $(HOME)/.cargo/bin/rustc)
MUSL_GCC ?= musl-gcc
# the Rust workspace's: Debian's by path, not a rustup toolchain earlier in PATH (rust/Makefile.inc)
CARGO ?= /usr/bin/cargo
RUST_RUSTC ?= /usr/bin/rustc
RUST_RUSTDOC ?= /usr/bin/rustdoc
RUST_CORE_SRC ?= /usr/lib/rustlib/src/rust/library/core/src/lib.rs
LLD ?= ld.lld
PREFIX ?= /usr/local

MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

# Debian packages by what needs them: one list a need in scripts/packages/
PKGS_CLI := cli $(if $(CROSS),arm64-cli)
PKGS_BUILD := cli build $(if $(CROSS),arm64-cli arm64)
# on x86-64 the suite cross-builds for arm64 and boots it (tests/bpf/test_arm64.sh)
PKGS_TEST_ARM64 := $(if $(filter x86,$(HOST_ARCH)),arm64-cli arm64 arm64-test)
PKGS_ALL := $(PKGS_BUILD) demo test image $(PKGS_TEST_ARM64)

# The layers (README "Layout"): lib/ <- proto/ <- proto/query/ <- cli/ and user/.  Each part
# sees only the headers of those below, so a forbidden include does not compile.
LIB_DIRS := lib lib/sym
PROTO_DIRS := proto
QUERY_DIRS := $(PROTO_DIRS) proto/query
CLI_DIRS := cli
iquote = $(addprefix -iquote ,$(1))
LIB_INC := $(call iquote,$(LIB_DIRS))
PROTO_INC := $(LIB_INC) $(call iquote,$(PROTO_DIRS))
QUERY_INC := $(LIB_INC) $(call iquote,$(QUERY_DIRS))
CLI_INC := $(QUERY_INC) $(call iquote,$(CLI_DIRS))

# Inside user/, lowest first: what a process is (target/); probe placement (probe/) and stack
# walking (unwind/) over it; allocator memory (mem/); the collection of samples (collect/);
# the commands (cmd/) and the agent (agent/) on top.  A folder sees itself and the folders
# its line names, never a sibling; user/main.c sees them all; every folder sees bpf/.
USER_SEES_target := target
USER_SEES_probe := target probe
USER_SEES_unwind := target unwind
USER_SEES_mem := target probe mem
USER_SEES_collect := target probe unwind mem collect
USER_SEES_cmd := target probe unwind mem collect cmd
USER_SEES_agent := target probe unwind mem collect agent
USER_SEES_main := target probe unwind mem collect cmd agent
user_inc = $(QUERY_INC) -iquote user \
	$(call iquote,$(addprefix user/,$(USER_SEES_$(1))) bpf $(OUTPUT))

# pkg-config's libraries by layer, read when used (=): `make deps` may just have installed
# them.  culpert-bpf adds the agent's HTTP server and Kubernetes client, culpert its uploads.
LIB_PC := libelf libdw libdebuginfod zlib
USER_PC := $(LIB_PC) libbpf capstone libmicrohttpd libcurl json-c
CLI_PC := libcurl
LIB_PC_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(LIB_PC) 2>/dev/null)
PC_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(USER_PC) 2>/dev/null)
LIB_LIBS = $(shell $(PKG_CONFIG) --libs $(LIB_PC) 2>/dev/null) -liberty -lm -lpthread
USER_LIBS = $(shell $(PKG_CONFIG) --libs $(USER_PC) 2>/dev/null) -liberty -lm -lpthread
CLI_PC_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(CLI_PC) 2>/dev/null)
CLI_LIBS = $(shell $(PKG_CONFIG) --libs $(CLI_PC) 2>/dev/null)
WARNINGS := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wno-unused-parameter $(if $(CI),-Werror)
CFLAGS ?= -O2 -g
BASE_CFLAGS = $(CFLAGS) $(WARNINGS) -std=gnu11 -D_GNU_SOURCE -MMD -MP \
	-DCULPERT_VERSION='"$(VERSION)"' -Iinclude $(EXTRA_CFLAGS)
# tests and tools see every layer
ALL_CFLAGS = $(BASE_CFLAGS) $(PC_CFLAGS) $(CLI_PC_CFLAGS) $(call user_inc,main) \
	$(call iquote,$(CLI_DIRS))
ALL_LDFLAGS = -Wl,--as-needed $(LDFLAGS) $(EXTRA_LDFLAGS)
LDLIBS_ALL = $(USER_LIBS) $(CLI_LIBS)
VMLINUX_H := vmlinux/$(ARCH)/vmlinux.h
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Werror=implicit-function-declaration \
	-D__TARGET_ARCH_$(ARCH) -I$(OUTPUT) -Ibpf -Ivmlinux/$(ARCH) \
	-idirafter /usr/include/$(MULTIARCH) -Wall -Wno-unused-function

# One tagged line per step (V=1: the commands instead).  A recipe starts with
# $(call step,TAG): its line, then its target's directory, so no rule makes its own.
ifneq ($(V),1)
Q = @
MAKEFLAGS += --no-print-directory
endif
tag = $(if $(Q),printf '  %-9s %s\n' "$(1)" "$(2)"; )
msg = $(Q)$(call tag,$(1),$(2))
step = $(Q)$(call tag,$(1),$@)mkdir -p $(@D) &&
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(wildcard bpf/*.bpf.c))
objs_of = $(patsubst %.c,$(OUTPUT)/%.o,$(1))
LIB_OBJS := $(call objs_of,$(wildcard $(addsuffix /*.c,$(LIB_DIRS))))
PROTO_OBJS := $(call objs_of,$(wildcard proto/*.c proto/query/*.c))
USER_MAIN := $(OUTPUT)/user/main.o
USER_OBJS := $(filter-out $(USER_MAIN),$(call objs_of,$(wildcard user/*.c user/*/*.c)))
CLI_MAIN := $(OUTPUT)/cli/main.o
CLI_OBJS := $(filter-out $(CLI_MAIN),$(call objs_of,$(wildcard cli/*.c)))
# lib/ and proto/, which both binaries link; user/ without main(), for the tests and tools
LIBCULPERT := $(OUTPUT)/libculpert.a
LIBCOLLECT := $(OUTPUT)/libcollect.a
BIN_BPF := $(OUTPUT)/culpert-bpf
BIN_CLI := $(OUTPUT)/culpert
.DELETE_ON_ERROR:
# generated files are not intermediates to throw away
.SECONDARY:
.PHONY: all culpert culpert-bpf deps deps-list deps-demo demo test bench install vmlinux clean \
	help check-deps check-deps-cli check-layout examples _demo _test _bench test-targets FORCE
# what `all` builds, `install` installs and the suite needs: each part adds to these
# lists (ALL_TARGETS, INSTALL_TARGETS, TEST_TARGETS); the rules using them come last
.DEFAULT_GOAL := all
ALL_TARGETS := $(BIN_BPF) $(BIN_CLI)
# the CLI alone: no clang, bpftool or libbpf needed
culpert: check-deps-cli $(BIN_CLI)
culpert-bpf: check-deps $(BIN_BPF)
help:
	@sed -n '3,/^$$/s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

# --- dependencies: the package sets each target hands scripts/install-deps.sh ---
# the command it tells to run when packages are missing
export DEPS_CMD := make deps$(if $(CROSS), ARCH=$(ARCH))
deps: DEPS_ARGS = $(PKGS_ALL)
deps-demo: DEPS_ARGS = $(PKGS_BUILD) demo
check-deps: DEPS_ARGS = --check $(PKGS_BUILD)
check-deps-cli: DEPS_ARGS = --check $(PKGS_CLI)
deps deps-demo check-deps check-deps-cli image-deps:
	$(Q)sh scripts/install-deps.sh $(DEPS_ARGS)
deps-list:
	@sh scripts/install-deps.sh --list $(PKGS_ALL)
check-layout:
	$(Q)sh scripts/check_layout.sh

# --- BPF ---------------------------------------------------------------------
$(OUTPUT)/%.tmp.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(VMLINUX_H)
	$(call step,BPF) $(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(OUTPUT)/%.bpf.o: $(OUTPUT)/%.tmp.bpf.o
	$(call step,GEN-OBJ) $(BPFTOOL) gen object $@ $<
$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call step,GEN-SKEL) $(BPFTOOL) gen skeleton $< > $@
# The host's from its running kernel; arm64's from the BTF inside the Image of Debian's
# current arm64 kernel package (vmlinux/gen_deb.sh: the package version goes in the header)
ifeq ($(CROSS),)
vmlinux:
	$(call msg,GEN,$(VMLINUX_H))
	$(Q)mkdir -p vmlinux/$(ARCH)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX_H).tmp
	$(Q)mv $(VMLINUX_H).tmp $(VMLINUX_H)
else
vmlinux: $(OUTPUT)/btf_extract
	$(call msg,GEN,$(VMLINUX_H))
	$(Q)BPFTOOL="$(BPFTOOL)" sh vmlinux/gen_deb.sh $(ARCH) $(OUTPUT) $(OUTPUT)/btf_extract
$(OUTPUT)/btf_extract: vmlinux/btf_extract.c
	$(call step,HOSTCC) $(HOSTCC) -O2 $(WARNINGS) -o $@ $<
endif

# --- C -----------------------------------------------------------------------
# The version is in the objects that print it: they are built again when it changes
# (a commit, a dirty tree).  The stamp is rewritten only when its content would change.
VERSION_OBJS := $(addprefix $(OUTPUT)/,lib/cmd.o user/collect/export.o user/agent/metrics.o \
	cli/archive_client.o)
$(OUTPUT)/.version: FORCE
	$(Q)mkdir -p $(@D) && [ "$$(cat $@ 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" >$@
$(VERSION_OBJS): $(OUTPUT)/.version
FORCE:
# One rule for every object of lib/, proto/, cli/ and user/, each layer's include path by
# pattern.  Only user/ waits for the BPF skeletons, order-only (-MMD then records who
# includes them), so culpert builds without clang or bpftool.
$(OUTPUT)/%.o: %.c
	$(call step,CC) $(CC) $(BASE_CFLAGS) $(OBJ_CFLAGS) -c $< -o $@
$(OUTPUT)/lib/%.o: OBJ_CFLAGS = $(LIB_PC_CFLAGS) $(LIB_INC)
$(OUTPUT)/proto/%.o: OBJ_CFLAGS = $(LIB_PC_CFLAGS) $(PROTO_INC)
$(OUTPUT)/proto/query/%.o: OBJ_CFLAGS = $(LIB_PC_CFLAGS) $(QUERY_INC)
$(OUTPUT)/cli/%.o: OBJ_CFLAGS = $(LIB_PC_CFLAGS) $(CLI_PC_CFLAGS) $(CLI_INC)
$(OUTPUT)/user/%.o: OBJ_CFLAGS = $(PC_CFLAGS) $(call user_inc,$(word 2,$(subst /, ,$(basename $<))))
$(USER_MAIN) $(USER_OBJS): | $(SKELS)
$(LIBCULPERT): $(LIB_OBJS) $(PROTO_OBJS)
	$(call step,AR) rm -f $@ && $(AR) rcs $@ $^
$(LIBCOLLECT): $(USER_OBJS)
	$(call step,AR) rm -f $@ && $(AR) rcs $@ $^
$(BIN_BPF): $(USER_MAIN) $(LIBCOLLECT) $(LIBCULPERT)
	$(call step,LINK) $(CC) $(ALL_LDFLAGS) $^ $(USER_LIBS) -o $@
$(BIN_CLI): $(CLI_MAIN) $(CLI_OBJS) $(LIBCULPERT)
	$(call step,LINK) $(CC) $(ALL_LDFLAGS) $^ $(LIB_LIBS) $(CLI_LIBS) -o $@
# not the cross build's dependency files under .output/arm64
-include $(shell find $(OUTPUT) -path '$(OUTPUT)/arm64' -prune -o -type f -name '*.d' -print \
	2>/dev/null)

# --- the example service: frame pointers, as a service meant to be profiled should have
EXAMPLE_CFLAGS := -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter -MMD -MP
DEMO_SECONDS ?= 5
examples: $(OUTPUT)/examples/demo_service
$(OUTPUT)/examples/%: examples/%.c
	$(call step,CC) $(CC) $(EXAMPLE_CFLAGS) -Iinclude $< -o $@

# --- the other parts: each adds its targets to the lists above ----------------
include tests/Makefile.inc
include deploy/archive/Makefile.inc
include preload/Makefile.inc
include rust/Makefile.inc
include deploy/image/Makefile.inc

# --- top-level flows ---------------------------------------------------------
all: check-deps $(ALL_TARGETS)
# deps first, then a fresh make: pkg-config answers only once the packages are in
demo: deps-demo
	$(Q)$(MAKE) _demo
# run the example service, profile it for a few seconds, print where it allocates
_demo: all examples
	$(Q)sh examples/demo.sh $(OUTPUT) $(DEMO_SECONDS)
# the build on every core, unless make was given its own -j
test bench: deps
	$(Q)$(MAKE) $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc)) _$@
test-targets: $(TEST_TARGETS)
_test: all test-targets $(if $(SANITIZE),sanitized $(FUZZ_BINS) fuzz-seeds)
	$(Q)OUTPUT=$(OUTPUT) $(if $(SANITIZE),SAN_OUTPUT=$(SAN_OUTPUT) FUZZ_DIR=$(FUZZ_DIR) \
		FUZZ_SHORT=$(FUZZ_SHORT)) sh tests/run.sh $(TESTS)

install: all $(INSTALL_TARGETS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/culpert
	install -m 0755 $(BIN_BPF) $(BIN_CLI) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 include/culpert/span.h $(DESTDIR)$(PREFIX)/include/culpert/
clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
