# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf: one top-level build.  Everything generated goes to $(OUTPUT).
#
#   make            build culpert-bpf and culpert
#   make demo       install what is missing, build, profile the example service
#   make test       install what is missing, build, run the whole suite
#   make help       all targets

OUTPUT ?= .output
CLANG ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config
PROTOC_C ?= protoc-c
CC ?= cc
CXX ?= g++
GO ?= go
PREFIX ?= /usr/local

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

# Debian 12 packages the build, the demo and the tests need (see `make deps`)
DEB_PACKAGES := make gcc g++ clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev \
	protobuf-c-compiler libprotobuf-c-dev pkg-config libiberty-dev systemtap-sdt-dev \
	libdebuginfod-dev debuginfod elfutils binutils golang-go musl-tools \
	libjemalloc2 libjemalloc-dev libmimalloc2.0 libmimalloc-dev libtcmalloc-minimal4 \
	hyperfine valgrind python3 python3-prometheus-client procps sqlite3 libcapstone-dev \
	rustc dwz libc6-dbg time python3-jsonschema libxml2-utils \
	qemu-system-x86 busybox cpio
# the Rust tracing layer and its example (rust/Makefile.inc); rust-src and lld: the aarch64 check
DEB_PACKAGES += cargo librust-tracing-dev librust-tracing-subscriber-dev librust-tracing-core-dev \
	librust-tokio-dev librust-hyper-dev rust-src lld

LIBS_PC := libbpf libelf libdw libdebuginfod zlib libprotobuf-c capstone
# recursive (=) on purpose: evaluated after `make deps` may have installed them
PC_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(LIBS_PC) 2>/dev/null)
PC_LIBS = $(shell $(PKG_CONFIG) --libs $(LIBS_PC) 2>/dev/null)

WARNINGS := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wno-unused-parameter
ifneq ($(CI),)
WARNINGS += -Werror
endif
CFLAGS ?= -O2 -g
ALL_CFLAGS = $(CFLAGS) $(WARNINGS) -std=gnu11 -D_GNU_SOURCE -MMD -MP \
	-DCULPERT_VERSION='"$(VERSION)"' -iquote $(OUTPUT) -iquote $(OUTPUT)/proto -iquote bpf \
	-iquote user -iquote proto -Iinclude $(PC_CFLAGS) $(EXTRA_CFLAGS)
ALL_LDFLAGS = -Wl,--as-needed $(LDFLAGS) $(EXTRA_LDFLAGS)
LDLIBS_ALL = $(PC_LIBS) -liberty -lm -lpthread

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Werror=implicit-function-declaration -D__TARGET_ARCH_$(ARCH) -I$(OUTPUT) -Ibpf \
	-Ivmlinux/$(ARCH) -idirafter /usr/include/$(MULTIARCH) -Wall -Wno-unused-function

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-9s %s\n' "$(1)" "$(2)";
MAKEFLAGS += --no-print-directory
endif

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

PROTO_GEN := $(OUTPUT)/proto/profile.pb-c.c $(OUTPUT)/proto/profile.pb-c.h
PROTO_OBJS := $(OUTPUT)/proto/profile.pb-c.o $(patsubst %.c,$(OUTPUT)/%.o,$(wildcard proto/*.c))

USER_SRCS := $(wildcard user/*.c)
USER_MAIN := $(OUTPUT)/user/main.o
USER_OBJS := $(filter-out $(USER_MAIN),$(patsubst %.c,$(OUTPUT)/%.o,$(USER_SRCS)))
CLI_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(wildcard cli/*.c))

# modules of user/ and proto/, shared by both binaries and the tests
LIBCULPERT := $(OUTPUT)/libculpert.a

BIN_BPF := $(OUTPUT)/culpert-bpf
BIN_CLI := $(OUTPUT)/culpert

.DELETE_ON_ERROR:
# generated files are not intermediates to throw away
.SECONDARY:
.PHONY: all deps demo test bench install vmlinux clean help check-deps \
	_demo _test _bench test-targets examples fuzz

all: check-deps $(BIN_BPF) $(BIN_CLI)

help:
	@echo 'Targets:'
	@echo '  all       build $(BIN_BPF) and $(BIN_CLI) (default)'
	@echo '  deps      install the Debian packages that are missing (apt-get, as root)'
	@echo '  demo      deps + build + profile examples/demo_service for a few seconds, print the report'
	@echo '  test      deps + build + run every test (unit, BPF, CLI); ends with "N passed, N failed"'
	@echo '  bench     overhead and cost measurements, medians over repeated runs'
	@echo '  rust      the Rust tracing layer and its example service (demo-rust: profile it under load)'
	@echo '  fuzz      run the libFuzzer harness of the pprof reader (FUZZ_SECONDS=600)'
	@echo '  install   install both binaries and the span header under PREFIX=$(PREFIX)'
	@echo '  vmlinux   regenerate vmlinux/$(ARCH)/vmlinux.h from /sys/kernel/btf/vmlinux'
	@echo '  clean     remove $(OUTPUT)'
	@echo 'Variables: V=1 (show commands), OUTPUT, CLANG, BPFTOOL, PKG_CONFIG, EXTRA_CFLAGS, EXTRA_LDFLAGS'

# --- dependencies ------------------------------------------------------------

deps:
	$(Q)DEB_PACKAGES="$(DEB_PACKAGES)" sh tests/install-deps.sh

check-deps:
	$(Q)DEB_PACKAGES="$(DEB_PACKAGES)" sh tests/install-deps.sh --check

# --- BPF ---------------------------------------------------------------------

$(OUTPUT) $(OUTPUT)/user $(OUTPUT)/cli $(OUTPUT)/proto $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/%.tmp.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.bpf.o: $(OUTPUT)/%.tmp.bpf.o
	$(call msg,GEN-OBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

vmlinux:
	$(call msg,GEN,vmlinux/$(ARCH)/vmlinux.h)
	$(Q)mkdir -p vmlinux/$(ARCH)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h.tmp
	$(Q)mv vmlinux/$(ARCH)/vmlinux.h.tmp vmlinux/$(ARCH)/vmlinux.h

# --- protobuf ----------------------------------------------------------------

$(PROTO_GEN) &: proto/profile.proto | $(OUTPUT)/proto
	$(call msg,PROTOC,$<)
	$(Q)$(PROTOC_C) --proto_path=proto --c_out=$(OUTPUT)/proto $<

# --- C -----------------------------------------------------------------------

# every object may include a generated header; -MMD tracks the rest
GEN_HEADERS := $(SKELS) $(OUTPUT)/proto/profile.pb-c.h

$(OUTPUT)/%.o: %.c $(GEN_HEADERS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUTPUT)/proto/profile.pb-c.o: $(OUTPUT)/proto/profile.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUTPUT)/proto $(PC_CFLAGS) -c $< -o $@

$(LIBCULPERT): $(PROTO_OBJS) $(USER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN_BPF): $(USER_MAIN) $(LIBCULPERT)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) $^ $(LDLIBS_ALL) -o $@

$(BIN_CLI): $(CLI_OBJS) $(LIBCULPERT)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) $^ $(LDLIBS_ALL) -o $@

-include $(shell find $(OUTPUT) -name '*.d' 2>/dev/null)

# --- examples, test targets and tests ----------------------------------------

include examples/Makefile.inc
include tests/Makefile.inc
include rust/Makefile.inc

# --- top-level flows -----------------------------------------------------------

# deps first, then a fresh make: pkg-config answers only once the packages are in
demo: deps
	$(Q)$(MAKE) _demo

test: deps
	$(Q)$(MAKE) _test

bench: deps
	$(Q)$(MAKE) _bench

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/culpert
	install -m 0755 $(BIN_BPF) $(BIN_CLI) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 include/culpert/span.h $(DESTDIR)$(PREFIX)/include/culpert/

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
