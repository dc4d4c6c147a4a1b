# kapi: one Makefile. `make run` and `make test` install what they need first.

CC      ?= cc
BUILD   ?= build
PKGS    := libuv jansson openssl sqlite3 yaml-0.1 re2 libnghttp2
# libcurl's headers only: src/webhook loads the library at its first call (webhook.c).
HDR_PKGS := libcurl
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Werror -Isrc -I$(BUILD)/gen \
           $(shell pkg-config --cflags $(PKGS) $(HDR_PKGS) 2>/dev/null) -MMD -MP -pthread
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhttp_parser -lmimalloc -lpthread -lm -lstdc++
# src/base/regex.cc, the one C++ file (RE2), is built with the C flags as C++17.
KAPI_CXXFLAGS = $(filter-out -std=c11,$(CFLAGS)) -std=c++17

LIB_SRC   := $(filter-out src/main.c,$(wildcard src/*/*.c))
TYPE_DATA := $(sort $(wildcard src/registry/types/*.json src/schema/defs/*.json))
GEN_SRC   := $(BUILD)/gen/types_data.c $(BUILD)/gen/rbac_data.c $(BUILD)/gen/version.c
RBAC_DATA := src/controllers/rbac-bootstrap.json
LIB_CXX   := $(wildcard src/*/*.cc)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(LIB_CXX:%.cc=$(BUILD)/%.o) $(BUILD)/gen/types_data.o \
             $(BUILD)/gen/rbac_data.o $(BUILD)/gen/version.o
UNIT_SRC  := $(wildcard tests/unit/*.c tests/unit/*/*.c)
UNIT_OBJ  := $(UNIT_SRC:%.c=$(BUILD)/%.o)
# The cel-spec conformance suite's runner (tests/cel), over the library.
CONF_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/cel/*.c))
CEL_SUITE ?= $(or $(KAPI_TESTDATA),$(SHARED)/testdata)/cel/json
# The benchmark harness: its own sources plus src/base (buffers) and src/cel with what it
# needs (the cel scenario's evaluations), none of the server.
BENCH_SRC := $(filter-out bench/main.c,$(wildcard bench/*.c))
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/%.o)
BENCH_BASE := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/cel/*.c src/codec/go*.c \
              src/codec/json*.c)) $(addprefix $(BUILD)/src/base/,base.o base64.o map.o \
              regex.o tz.o)

# kapi's own version (`kapi --version`, the package's): the nearest tag vX.Y.Z as git
# describe gives it, else the version below; the commit and the build date come from git
# and SOURCE_DATE_EPOCH through tools/version.sh.
VERSION  ?= $(or $(shell git describe --tags --match 'v[0-9]*' 2>/dev/null | sed 's/^v//'),0.21.0)
DATA_DIR ?= kapi-data
SHARED   ?= ../shared

.PHONY: all run test unit e2e golden asan deps test-deps format clean bench bench-smoke fuzz install deb \
        fuzz-smoke crash-test e2e-asan e2e-etcd format-check

all: $(BUILD)/kapi $(BUILD)/unit-tests $(BUILD)/cel-conformance $(BUILD)/kapi-bench

$(BUILD)/kapi: $(BUILD)/src/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/unit-tests: $(UNIT_OBJ) $(LIB_OBJ) $(BENCH_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/cel-conformance: $(CONF_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/kapi-bench: $(BUILD)/bench/main.o $(BENCH_OBJ) $(BENCH_BASE)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c | $(GEN_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -Ibench -c -o $@ $<

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(KAPI_CXXFLAGS) -c -o $@ $<

# Built-in type definitions are data, embedded at build time (DESIGN.md invariant 1).
$(BUILD)/gen/types_data.c: $(TYPE_DATA) tools/embed.sh
	@mkdir -p $(dir $@)
	tools/embed.sh $(TYPE_DATA) > $@.tmp && mv $@.tmp $@

# The RBAC policy kube-apiserver bootstraps: data too, reconciled at start.
$(BUILD)/gen/rbac_data.c: $(RBAC_DATA) tools/embed.sh
	@mkdir -p $(dir $@)
	tools/embed.sh -s kapi_rbac_bootstrap_files $(RBAC_DATA) > $@.tmp && mv $@.tmp $@

# The build's identity (src/base/version.h): remade at every make, rewritten only when the
# commit or tree state changes.
$(BUILD)/gen/version.c: FORCE
	@mkdir -p $(dir $@)
	@tools/version.sh $(VERSION) $@

FORCE:

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CFLAGS) -c -o $@ $<

deps:
	@scripts/deps.sh build

# The man page, from `kapi --help` (the flag table in src/main/options.c).
$(BUILD)/kapi.1: $(BUILD)/kapi tools/man.sh
	tools/man.sh $(BUILD)/kapi > $@.tmp && mv $@.tmp $@

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, its man page, the systemd unit
# (run from PREFIX's bin) and /etc/kapi/config.yaml when there is none.
PREFIX  ?= /usr/local
UNITDIR ?= $(PREFIX)/lib/systemd/system
install: $(BUILD)/kapi $(BUILD)/kapi.1
	install -D -m 0755 $(BUILD)/kapi $(DESTDIR)$(PREFIX)/bin/kapi
	install -D -m 0644 $(BUILD)/kapi.1 $(DESTDIR)$(PREFIX)/share/man/man1/kapi.1
	@mkdir -p $(DESTDIR)$(UNITDIR)
	sed 's|/usr/bin/kapi|$(PREFIX)/bin/kapi|' deploy/systemd/kapi.service > \
	    $(DESTDIR)$(UNITDIR)/kapi.service
	test -e $(DESTDIR)/etc/kapi/config.yaml || \
	    install -D -m 0644 deploy/config.yaml $(DESTDIR)/etc/kapi/config.yaml

# The Debian package, build/kapi_VERSION_ARCH.deb (tools/deb.sh), of DEB_BIN: by default
# the binary built here; the e2e test passes the one it tests.
DEB_BIN ?= $(BUILD)/kapi
deb: $(DEB_BIN)
	@scripts/deps.sh build deb
	tools/deb.sh $(DEB_BIN) $(VERSION) $(BUILD)

test-deps:
	@scripts/deps.sh test

# ETCD=1: on a single-member etcd started in DATA_DIR/etcd instead of SQLite.
run:
	@scripts/deps.sh build $(if $(ETCD),etcd)
	$(MAKE) $(BUILD)/kapi
	$(if $(ETCD),scripts/run-etcd.sh $(BUILD)/kapi $(DATA_DIR),$(BUILD)/kapi --data-dir $(DATA_DIR))

test: test-deps
	$(MAKE) format-check
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) asan
	$(MAKE) e2e
	$(MAKE) e2e-asan
	$(MAKE) e2e-etcd
	$(MAKE) golden
	$(MAKE) bench-smoke
	$(MAKE) fuzz-smoke
	$(MAKE) crash-test

# The unit tests, then the CEL conformance suite (tests/cel/conformance.c).
unit: $(BUILD)/unit-tests $(BUILD)/cel-conformance
	$(BUILD)/unit-tests
	$(BUILD)/cel-conformance $(CEL_SUITE)

# The unit tests and the CEL suite again under AddressSanitizer and UndefinedBehaviorSanitizer.
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -Wno-format-truncation
asan:
	CFLAGS="$(ASAN_CFLAGS)" $(MAKE) BUILD=build/asan build/asan/unit-tests build/asan/cel-conformance
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 build/asan/unit-tests
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 build/asan/cel-conformance $(CEL_SUITE)

e2e: $(BUILD)/kapi
	tests/e2e/run.sh $(BUILD)/kapi

# The e2e suite and the golden replay again with every kapi on an etcd of its own
# (lib.sh's E2E_ETCD), but for the scripts of the HTTP layer alone, which never reach the
# store (etcd.sh runs in both: it starts its own three-member etcd and two kapis).
E2E_HTTP_ONLY := limits_conn.sh limits_memory.sh limits_regex.sh http2.sh
e2e-etcd: $(BUILD)/kapi
	E2E_ETCD=1 E2E_SKIP="$(E2E_HTTP_ONLY) etcd.sh" tests/e2e/run.sh $(BUILD)/kapi
	E2E_ETCD=1 tests/golden/run.sh $(BUILD)/kapi $(SHARED)/testdata/golden

golden: $(BUILD)/kapi
	tests/golden/run.sh $(BUILD)/kapi $(SHARED)/testdata/golden

# Issue 6's scenarios against a fresh kapi: the table on stdout, the figures as JSON in
# bench/results/latest.json. BENCH_FLAGS=--quick runs them at a tenth of their size.
bench: deps
	$(MAKE) $(BUILD)/kapi $(BUILD)/kapi-bench
	@mkdir -p bench/results
	$(BUILD)/kapi-bench --kapi $(BUILD)/kapi --json bench/results/latest.json $(BENCH_FLAGS)

# The harness at a hundredth of its size against a fresh kapi, so that it keeps working;
# it checks the run's output, not its times.
bench-smoke: $(BUILD)/kapi $(BUILD)/kapi-bench
	tests/bench/smoke.sh $(BUILD)/kapi-bench $(BUILD)/kapi

# The e2e suite against a server built with ASan and UBSan: any report is fatal, and
# tests/e2e/lib.sh fails a script whose server log holds one. E2E_SANITIZED tells the
# scripts (see lib.sh).
e2e-asan:
	CFLAGS="$(ASAN_CFLAGS)" $(MAKE) BUILD=build/asan build/asan/kapi
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    E2E_SANITIZED=1 tests/e2e/run.sh build/asan/kapi

# libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang, ASan and UBSan over the
# library compiled the same way into build/fuzz/. `make fuzz` runs each for FUZZ_SECONDS
# on a copy of its corpus; fuzz-smoke (in `make test`) replays each seed corpus, then
# fuzzes each for FUZZ_SMOKE_SECONDS.
FUZZ_DIR      := build/fuzz
FUZZ_SECONDS  ?= 60
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_CFLAGS   := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
                 -fno-omit-frame-pointer -D_GNU_SOURCE -Wall -Wextra -Wshadow -Isrc -I$(BUILD)/gen \
                 $(shell pkg-config --cflags $(PKGS) $(HDR_PKGS) 2>/dev/null) -pthread
FUZZ_LD       := $(if $(LIB_CXX),clang++,clang)
FUZZ_OBJ      := $(LIB_SRC:%.c=$(FUZZ_DIR)/%.o) $(LIB_CXX:%.cc=$(FUZZ_DIR)/%.o) \
                 $(FUZZ_DIR)/gen/types_data.o $(FUZZ_DIR)/gen/rbac_data.o $(FUZZ_DIR)/gen/version.o
FUZZ_TARGETS  := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_MAIN_OBJ := $(patsubst %.c,$(FUZZ_DIR)/%.o,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_RUN      := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/fuzz/run.sh

.SECONDARY: $(FUZZ_OBJ) $(FUZZ_MAIN_OBJ)

$(FUZZ_DIR)/%.o: %.c | $(GEN_SRC)
	@mkdir -p $(dir $@)
	clang -std=c11 $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/%.o: %.cc
	@mkdir -p $(dir $@)
	clang++ -std=c++17 $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	clang -std=c11 $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/tests/fuzz/fuzz_%.o $(FUZZ_OBJ)
	$(FUZZ_LD) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(LDLIBS)

fuzz: test-deps $(FUZZ_TARGETS)
	$(FUZZ_RUN) $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: $(FUZZ_TARGETS)
	$(FUZZ_RUN) --replay $(FUZZ_DIR) $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

# kill -9 under load (tests/crash): CYCLES restarts of a kapi on one data dir, checking
# that no acknowledged write is lost and watches resume.
CYCLES ?= 5
crash-test: $(BUILD)/kapi
	python3 tests/crash/crash.py --kapi $(BUILD)/kapi --cycles $(CYCLES)

FORMAT_SRC = $$(git ls-files '*.c' '*.h' '*.cc')

format:
	clang-format -i $(FORMAT_SRC)

# Every C file is as clang-format leaves it (.clang-format); `make format` fixes it.
format-check:
	clang-format --dry-run -Werror $(FORMAT_SRC)

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
