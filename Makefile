# sandboxd build. Targets install what they need themselves (Debian/Ubuntu).
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
TAGS      := seccomp
# version_ldflags V sets the version the binaries print to V.
version_ldflags = -X github.com/sandboxd/sandboxd/internal/version.Version=$(1)
LDFLAGS   := $(call version_ldflags,$(VERSION))
GOFLAGS_B := -tags '$(TAGS)' -trimpath -ldflags '$(LDFLAGS)'
export CGO_ENABLED := 1

SOCKET    ?= /run/sandboxd/sandboxd.sock
DATA_DIR  ?= /var/lib/sandboxd
RUN_DIR   ?= /run/sandboxd
LOG       ?= /var/log/sandboxd.log
# VM is the harness that boots a throw-away Debian 12 VM (systemd, pure
# cgroup v2) for test-vm: integration/vm/harness, part of the repository
# (its README says what it needs and where it caches the VM image).
VM        ?= integration/vm/harness

.PHONY: test-unit-nobody all deps test-deps build up down demo test test-unit test-vm vm-prep vm-run test-packages test-kubernetes bench fuzz packages old-release clean sdk-deps sdk-python node-deps sdk-js

all: build

# deps installs the C library the seccomp filter links with, the JSON
# library the native supervisor links with (isolation/agent/supervisor),
# python3 for the default template and mkfs.ext4 for disk quotas, when
# they are missing.
deps:
	@if ! pkg-config --exists libseccomp jansson 2>/dev/null || ! command -v python3 >/dev/null || \
		! PATH="$$PATH:/sbin:/usr/sbin" command -v mkfs.ext4 >/dev/null; then \
		echo "installing libseccomp-dev libjansson-dev pkg-config python3 e2fsprogs"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp-dev libjansson-dev pkg-config python3 e2fsprogs >/dev/null; \
	fi

build: deps
	$(GO) build $(GOFLAGS_B) -o bin/sandboxd ./cmd/sandboxd
	$(GO) build $(GOFLAGS_B) -o bin/sandboxctl ./cmd/sandboxctl
	$(GO) build $(GOFLAGS_B) -o bin/sandboxd-init ./cmd/sandboxd-init
	isolation/agent/supervisor/build.sh bin/sandboxd-supervisor

# up builds, starts the daemon in the background on the default socket, and
# shows it running code. lxcfs (installed when missing) shows sandboxes
# their own memory and CPUs in /proc: where no lxcfs.service serves it
# (no systemd), the daemon runs its own.
up: build
	@command -v lxcfs >/dev/null || (echo "installing lxcfs"; apt-get install -y -qq --no-install-recommends lxcfs >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lxcfs >/dev/null))
	@if bin/sandboxctl --socket $(SOCKET) version >/dev/null 2>&1; then \
		echo "sandboxd is already running on $(SOCKET)"; \
	else \
		mkdir -p $(dir $(LOG)); \
		nohup bin/sandboxd --socket $(SOCKET) --data-dir $(DATA_DIR) --run-dir $(RUN_DIR) >>$(LOG) 2>&1 & \
		for i in $$(seq 50); do bin/sandboxctl --socket $(SOCKET) version >/dev/null 2>&1 && break; sleep 0.1; done; \
		echo "sandboxd started (log: $(LOG))"; \
	fi
	@$(MAKE) --no-print-directory demo

demo:
	@set -e; ctl="bin/sandboxctl --socket $(SOCKET)"; \
	echo '$$ sandboxctl info'; $$ctl info; \
	id=$$($$ctl create --memory 256M --label demo=yes); \
	echo "\$$ sandboxctl create --memory 256M   # -> $$id"; \
	echo '$$ sandboxctl exec ID -c "x = 6 * 7"'; $$ctl exec $$id -c 'x = 6 * 7'; \
	echo '$$ sandboxctl exec ID -c "x"'; $$ctl exec $$id -c 'x'; \
	echo '$$ sandboxctl exec ID --shell -c "id; ls /"'; $$ctl exec $$id --shell -c 'id; ls /'; \
	echo '$$ sandboxctl rm ID'; $$ctl rm $$id; \
	echo '$$ sandboxctl run -c "print(sum(range(10)))"'; $$ctl run -c 'print(sum(range(10)))'

down:
	@pkill -TERM -f "^bin/sandboxd --socket $(SOCKET)" && echo "sandboxd stopped" || echo "sandboxd was not running"

# RUNSC_NET is a runsc new enough for networked sessions, which Debian 12's
# (2022) cannot give on Linux 6 and later: built from the Go module proxy at
# a fixed version, for the tests of networks under runsc (integration's
# netRuntimes). The other runsc tests use Debian's, as hosts would. It is
# built as gVisor's own build does it, with its seccomp programs
# precompiled (packaging/runsc/precompile.go): without them every start and
# restore compiles two filters (27 ms of a start here, 200 ms of a restore
# that pages its memory in on the session's one CPU). -trimpath: the copy's
# path differs per clone, and without it no clone reuses another's build.
# The build (~90 s here, most of it compiling gVisor's 608 programs) is
# kept in RUNSC_CACHE under a name made of everything that makes it: the
# gVisor version, precompile.go's hash and Go's version (as Go's own build
# cache keeps a clone's packages); a host without it builds it. The
# version is go.mod's: the daemon speaks to its sandboxes' control socket
# through gVisor's urpc package (isolation/runsc/control.go).
GVISOR_VERSION ?= $(shell sed -n 's,^[[:space:]]*gvisor.dev/gvisor \(v[^ ]*\).*,\1,p' go.mod)
RUNSC_NET      := dist/runsc/runsc
RUNSC_SRC      := dist/runsc/src
RUNSC_CACHE    ?= $(HOME)/.cache/sandboxd
RUNSC_CACHED    = $(RUNSC_CACHE)/runsc-$(GVISOR_VERSION)-$(shell sha256sum packaging/runsc/precompile.go | cut -c1-16)-$(shell $(GO) env GOVERSION)
$(RUNSC_NET): packaging/runsc/precompile.go
	@mkdir -p $(dir $@) $(RUNSC_CACHE)
	@c='$(RUNSC_CACHED)'; if [ -x "$$c" ]; then echo "runsc: $$c"; cp "$$c" $@.new; else \
		$(MAKE) --no-print-directory runsc-from-source && \
		cp $@.new "$$c.$$$$" && mv "$$c.$$$$" "$$c"; fi
	mv $@.new $@
.PHONY: runsc-from-source
runsc-from-source:
	rm -rf $(RUNSC_SRC) && mkdir -p $(dir $(RUNSC_SRC))
	cp -r "$$($(GO) mod download -json gvisor.dev/gvisor@$(GVISOR_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')" $(RUNSC_SRC)
	chmod -R u+w $(RUNSC_SRC) && cp packaging/runsc/precompile.go $(RUNSC_SRC)/
	cd $(RUNSC_SRC) && CGO_ENABLED=0 $(GO) run -trimpath ./precompile.go runsc/boot/filter runsc/fsgofer/filter
	cd $(RUNSC_SRC) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X gvisor.dev/gvisor/runsc/version.version=$(GVISOR_VERSION)" -o $(CURDIR)/$(RUNSC_NET).new ./runsc
	rm -rf $(RUNSC_SRC)

# test-deps: what the tests use beyond the build: matplotlib and pandas
# check rich outputs for real; lxcfs serves sandboxes their own /proc/meminfo, cpuinfo,
# stat and uptime (the procview tests start their own lxcfs from it); pip
# installs packages into sessions (POST …/packages); runsc (gVisor) is the
# second runtime, which the session, restore and isolation tests also run on;
# sdk-deps, the Python SDK's test (integration/sdk_python_test.go);
# node-deps, the JavaScript SDK's (integration/sdk_javascript_test.go).
test-deps: deps sdk-deps node-deps $(RUNSC_NET)
	@/usr/bin/python3 -c 'import matplotlib, pandas' 2>/dev/null || \
		(apt-get install -y -qq --no-install-recommends python3-matplotlib python3-pandas >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib python3-pandas >/dev/null))
	@command -v lxcfs >/dev/null || (apt-get install -y -qq --no-install-recommends lxcfs >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lxcfs >/dev/null))
	@command -v rpm >/dev/null || (apt-get install -y -qq --no-install-recommends rpm >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rpm >/dev/null))
	@command -v runsc >/dev/null || (apt-get install -y -qq --no-install-recommends runsc >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runsc >/dev/null))
	@/usr/bin/python3 -m pip --version >/dev/null 2>&1 || (apt-get install -y -qq --no-install-recommends python3-pip >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >/dev/null))
	@# sshd for sandboxctl --host ssh:// (integration/ssh_test.go runs its own
	@# on loopback); policy-rc.d keeps the package's from starting on :22.
	@[ -x /usr/sbin/sshd ] || { made=; [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made=1; }; \
		(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null)); rc=$$?; \
		[ -z "$$made" ] || rm -f /usr/sbin/policy-rc.d; exit $$rc; }

# test runs every test, as root: the sandbox tests need it and never skip.
# This host's cgroups come first, then the packages' contents, then the VM
# harness (integration/vm/harness): the sandbox tests again on cgroup v2
# under systemd, and the .deb's life. Without the harness the run fails.
# Running the VM beside the host's tests was tried (this host: 2 cores)
# and was no faster, 44 min against ~42: the host's integration suite
# leaves the CPU ~80% idle, but what it waits on is its sandboxes, which
# the emulated VM then starves (integration 1250 s -> 1625 s, the VM's
# ~15 -> 31 min). Within the host's run the integration tests run four
# at a time (-parallel 4; each starts its own daemon, a separate instance):
# 568 s against 1250 s one after the other. The integration package runs
# without the race detector, in a go test of its own beside the other
# packages' (with it): the package is CPU-bound (~3% idle), and its
# daemons are built without it but for the tests that take it (raced in
# integration/harness_test.go, SANDBOXD_TEST_RACE=1): 1087-1140 s so,
# against 1458 s with race-built daemons throughout. The timeout is a
# package's: integration took 607 s on a usual day and 1458 s on
# 2026-11-29, when this host's page faults cost twice as much (~13 µs).
# internal/testreport runs both go tests and prints what go test prints
# without -v, then the slowest tests: where the suite's minutes go. The
# fuzzing, the packages' checks and the chart's run side by side (-j3,
# each one's output whole, -O): alone each leaves the CPU a fifth to a
# third idle (lintian, links, qemu-user); 136 s together against 173 s one
# after the other here. Beside the VM they slowed it by more than they
# took (tried on 2026-11-29).
RACE_PKGS = $(shell $(GO) list ./... | grep -v '/integration$$')
test: test-deps
	$(MAKE) --no-print-directory test-unit-nobody
	$(GO) vet -tags '$(TAGS)' ./...
	SANDBOXD_TEST_RACE=1 $(GO) run ./internal/testreport -slowest 30 \
		"$(GO) test -json -tags '$(TAGS)' -race -count=1 -timeout 45m -parallel 4 $(RACE_PKGS)" \
		"$(GO) test -json -tags '$(TAGS)' -count=1 -timeout 45m -parallel 4 ./integration"
	@[ -x $(VM)/run-in-vm ] || { echo "error: $(VM)/run-in-vm not found: the cgroup v2 + systemd VM tests cannot run (the harness is integration/vm/harness; make test VM=path/to/harness)"; exit 1; }
	$(MAKE) --no-print-directory deps-packages
	$(MAKE) --no-print-directory -j4 -O FUZZSCALE=1 fuzz test-packages test-kubernetes vm-prep
	$(MAKE) --no-print-directory vm-run

# test-packages checks what make packages and make packages-arm64 build
# (integration/packages-test.sh): lintian on the .debs, the arm64
# binaries run under qemu-user (qemu-user-static: no binfmt_misc needed),
# the .rpms unpacked (cpio), the bash completion against the shipped
# binary (bash-completion). The two builds run one after the other: both
# build bin/.
PKG_TEST_DEBS := qemu-user-static lintian cpio bash-completion
test-packages: test-deps
	$(MAKE) --no-print-directory packages
	$(MAKE) --no-print-directory packages-arm64
	@dpkg -s $(PKG_TEST_DEBS) >/dev/null 2>&1 || { echo "installing $(PKG_TEST_DEBS)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(PKG_TEST_DEBS) >/dev/null; }
	integration/packages-test.sh dist/sandboxd_$(PKG_VERSION)-1_$(PKG_ARCH).deb dist/sandboxd-$(PKG_VERSION)-1.$(call rpm_arch,$(PKG_ARCH)).rpm \
		dist/sandboxd_$(PKG_VERSION)-1_arm64.deb dist/sandboxd-$(PKG_VERSION)-1.aarch64.rpm

# test-kubernetes checks the Kubernetes chart (contrib/kubernetes) offline:
# helm from the Go module proxy (built once into dist/helm), lint, template,
# a strict decode into the API's types, and assertions on what it renders.
test-kubernetes: deps
	integration/kubernetes-test.sh

# test-unit is the fast tier: no root, no sandboxes, seconds. The daemon's
# core runs against a fake runtime (daemon/fake_runtime_test.go); the
# packages below need no privilege (isolation, cgroups, volume and unpack
# build real sandboxes, mounts and owners, and run in make test).
UNIT_PKGS := ./api/... ./client/... ./cmd/... ./daemon/... ./internal/... ./isolation/agent/... ./isolation/idmap/... ./isolation/lxcfs/... ./isolation/netpolicy/... ./isolation/netdns/... ./isolation/selfinit/... ./store/... ./seccomp/... ./e2b/...
test-unit: deps
	$(GO) test -tags '$(TAGS)' -count=1 $(UNIT_PKGS)
	$(GO) test -tags '$(TAGS)' -count=1 -run 'TestPatched' ./cgroups/

# test-unit-nobody runs test-unit's tests as the user nobody, as root (it
# copies the tree to a folder nobody owns, modules vendored from this
# host's cache: integration/unit-as-nobody.sh), so the fast tier is shown
# to need no privilege on every run: as root a test can pass that an
# ordinary user's run fails. make test begins with it, so CI (.ci/run:
# make test) runs it too.
test-unit-nobody: deps
	integration/unit-as-nobody.sh '$(TAGS)' $(UNIT_PKGS)

# packages builds dist/sandboxd_*_$(PKG_ARCH).deb and its .rpm with nfpm
# (packaging/nfpm.yaml), fetched from the Go module proxy at a fixed
# version; packaging/package.sh stages what they hold. PKG_VERSION sorts
# below a release (0.1.0~git…). deps-packages: dpkg-shlibdeps (dpkg-dev),
# which versions the .deb's libc6 and libseccomp2 dependencies, and
# python3, which writes its copyright file.
NFPM        ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.0
PKG_VERSION ?= 0.1.0~git$(shell git rev-list --count HEAD 2>/dev/null || echo 0).$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
PKG_ARCH    ?= $(shell $(GO) env GOARCH)
rpm_arch     = $(patsubst amd64,x86_64,$(patsubst arm64,aarch64,$(1)))
.PHONY: deps-packages deps-arm64 build-arm64 packages-arm64
deps-packages: deps
	@command -v dpkg-shlibdeps >/dev/null || { echo "installing dpkg-dev"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null; }
# It removes every older package in dist/ first, of any architecture (one
# dist/sandboxd_*.deb then: contrib/kubernetes/Dockerfile counts on it);
# packages-arm64, run after it, only its own.
packages: deps-packages
	$(MAKE) --no-print-directory build VERSION=$(PKG_VERSION)
	rm -f dist/sandboxd_*.deb dist/sandboxd-*.rpm
	PKG_VERSION='$(PKG_VERSION)' NFPM='$(NFPM)' packaging/package.sh $(PKG_ARCH) bin bin

# packages-arm64 builds the arm64 pair, dist/sandboxd_*_arm64.deb and
# dist/sandboxd-*.aarch64.rpm, on an amd64 host: sandboxd and sandboxctl
# cross-built with cgo by Debian's cross compiler against Debian's arm64
# libseccomp (multiarch), their manual pages and completions written by the
# host's build. deps-arm64 installs those when missing: the arm64
# architecture in dpkg, gcc-aarch64-linux-gnu (with binutils' strip and
# the arm64 C library) and libseccomp-dev:arm64 (which brings
# libc6:arm64 and libseccomp2:arm64, whose symbols files dpkg-shlibdeps
# reads, and whose loader runs the binaries under qemu-user).
ARM64_CC       ?= aarch64-linux-gnu-gcc
ARM64_STRIP    ?= aarch64-linux-gnu-strip
ARM64_DEBS     := gcc-aarch64-linux-gnu libc6-dev-arm64-cross libseccomp-dev:arm64 libjansson-dev:arm64
ARM64_PKG_CONF := /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
deps-arm64: deps-packages
	@command -v $(ARM64_CC) >/dev/null && dpkg -s libseccomp-dev:arm64 libjansson-dev:arm64 >/dev/null 2>&1 || { \
		echo "installing $(ARM64_DEBS)"; \
		dpkg --add-architecture arm64 && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(ARM64_DEBS) >/dev/null; }
# build-arm64 runs with VERSION given (see packages-arm64), as build does.
build-arm64: deps-arm64
	GOOS=linux GOARCH=arm64 CC=$(ARM64_CC) PKG_CONFIG_LIBDIR=$(ARM64_PKG_CONF) \
		$(GO) build $(GOFLAGS_B) -o dist/arm64/bin/ ./cmd/sandboxd ./cmd/sandboxctl ./cmd/sandboxd-init
	CC=$(ARM64_CC) isolation/agent/supervisor/build.sh dist/arm64/bin/sandboxd-supervisor
packages-arm64: deps-arm64
	$(MAKE) --no-print-directory build VERSION=$(PKG_VERSION)
	$(MAKE) --no-print-directory build-arm64 VERSION=$(PKG_VERSION)
	PKG_VERSION='$(PKG_VERSION)' NFPM='$(NFPM)' STRIP=$(ARM64_STRIP) packaging/package.sh arm64 dist/arm64/bin bin

# bench prints one table of sandboxd against its baselines (python3,
# bwrap, a pipe to a local REPL), measured in the same run, and writes
# bench.json (runsc's rows twice: Debian's on ptrace, and RUNSC_NET, a
# current gVisor, on systrap); then the Go benchmarks, the network ones among them (a create
# with a network beside one without, DNS through the daemon beside DNS
# straight to the upstream, a sandbox's TCP throughput beside the host's),
# and E2B's SDK through `sandboxctl e2b serve` beside sandboxd's own API
# (BenchmarkE2B: node runs the SDK); last the parts' own (the agent's
# round trip beside a pipe to python3, the exec meter's files by path
# beside held).
# BENCH_SCALE=0.1 for a quick look.
BENCH_SCALE ?= 1
bench: build node-deps $(RUNSC_NET)
	@command -v bwrap >/dev/null || (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null))
	$(GO) build $(GOFLAGS_B) -o bin/sandboxd-bench ./cmd/sandboxd-bench
	bin/sandboxd-bench --sandboxd bin/sandboxd --json bench.json --scale $(BENCH_SCALE) --runsc-also $(RUNSC_NET):systrap
	$(GO) test -tags '$(TAGS)' -run '^$$' -bench . -skip 'Throughput|DNS|Fork5|ParkedCopy|Gvisor' -benchtime 200x -count 1 ./integration/
	$(GO) test -tags '$(TAGS)' -run '^$$' -bench 'Fork5|ParkedCopy|Gvisor' -benchtime 5x -count 1 ./integration/
	$(GO) test -tags '$(TAGS)' -run '^$$' -bench 'Throughput|DNS' -benchtime 5x -count 1 ./integration/
	$(GO) test -tags '$(TAGS)' -run '^$$' -bench 'AgentExec|Meter' -benchtime 2000x -count 1 ./isolation/agent/ ./cgroups/

# fuzz runs each fuzz target for a number of inputs (about 5 s of fuzzing
# each here per FUZZSCALE, and a few seconds of building; make test: 1,
# half of what it ran until 2026-11-30, to keep within its time). The corpora in */testdata/fuzz run as plain
# tests every time. Counts, not durations: a -fuzztime duration races Go
# 1.26's fuzz coordinator at its deadline (golang/go#75804, fixed in Go
# 1.27), which fails a run with a bare "context deadline exceeded" and no
# crasher (CI's FuzzParseEntry did). FuzzOpen's inputs are whole database
# files, which take minutes to minimize: its minimizing is cut short so the
# run fuzzes; the network parsers' too.
FUZZSCALE ?= 6
fuzzx = $(shell echo $$(( $(1) * $(FUZZSCALE) )))x
fuzz: deps
	$(GO) test -run '^$$' -fuzz FuzzSplit -fuzztime $(call fuzzx,70000) ./daemon/sandboxfs/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(call fuzzx,2000) ./daemon/server/
	$(GO) test -run '^$$' -fuzz FuzzAgentLines -fuzztime $(call fuzzx,90000) ./isolation/agent/
	$(GO) test -run '^$$' -fuzz FuzzLineReader -fuzztime $(call fuzzx,175000) ./isolation/agent/
	$(GO) test -run '^$$' -fuzz FuzzTar -fuzztime $(call fuzzx,1000) ./isolation/unpack/
	$(GO) test -run '^$$' -fuzz FuzzOpen -fuzztime $(call fuzzx,2000) -fuzzminimizetime 10x ./store/
	$(GO) test -run '^$$' -fuzz FuzzParseEntry -fuzztime $(call fuzzx,400000) -fuzzminimizetime 10x ./isolation/netpolicy/
	$(GO) test -run '^$$' -fuzz FuzzQuery -fuzztime $(call fuzzx,150000) -fuzzminimizetime 10x ./isolation/netdns/
	$(GO) test -run '^$$' -fuzz FuzzDecodeRequest -fuzztime $(call fuzzx,20000) -fuzzminimizetime 10x ./daemon/mcpgateway/
	$(GO) test -run '^$$' -fuzz FuzzReadFrame -fuzztime $(call fuzzx,50000) ./api/

# old-release builds sandboxd of OLD_REV (the release the upgrade test
# starts from) into OLD_BIN, from this repository's history (fetched from
# origin when the clone is shallow); the host's integration tests build it
# themselves, the VM's take it from here.
OLD_REV ?= 4f8120808c5e5472b4c8c0dedfdaa25b0a84d788
OLD_BIN ?= dist/old-bin
OLD_SRC ?= dist/old-src
old-release:
	rm -rf $(OLD_SRC) && mkdir -p $(OLD_SRC) $(OLD_BIN)
	git cat-file -e $(OLD_REV)^{commit} 2>/dev/null || git fetch -q --depth 1 origin $(OLD_REV)
	git archive $(OLD_REV) | tar -x -C $(OLD_SRC)
	cd $(OLD_SRC) && $(GO) build -tags seccomp -o $(abspath $(OLD_BIN))/sandboxd ./cmd/sandboxd && $(GO) build -tags seccomp -o $(abspath $(OLD_BIN))/sandboxctl ./cmd/sandboxctl
	rm -rf $(OLD_SRC)

clean:
	rm -rf bin

# sdk-deps installs what builds the Python SDK's wheel offline (Debian's
# setuptools and wheel: no package index is needed) and installs it into a
# venv of its own (venv, pip).
sdk-deps:
	@/usr/bin/python3 -c 'import setuptools, wheel, pip' 2>/dev/null && dpkg -s python3-venv >/dev/null 2>&1 || \
		(apt-get install -y -qq --no-install-recommends python3-setuptools python3-wheel python3-pip python3-venv >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-setuptools python3-wheel python3-pip python3-venv >/dev/null))

# sdk-python builds the Python SDK's wheel into dist/sdk, offline, with
# Debian's python3 and setuptools (pip install dist/sdk/sandboxd-*.whl).
sdk-python: sdk-deps
	/usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index -w dist/sdk $(CURDIR)/contrib/sdk/python

# node-deps installs Debian's nodejs and npm, which test the JavaScript SDK
# (contrib/sdk/js) and pack it, when node or npm is missing (a host with
# its own Node keeps it).
node-deps:
	@command -v node >/dev/null && command -v npm >/dev/null || \
		(apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null))

# sdk-js packs the JavaScript SDK into dist/sdk (sandboxd-*.tgz: npm install
# dist/sdk/sandboxd-0.1.0.tgz). It has no dependencies, so nothing is fetched.
sdk-js: node-deps
	mkdir -p dist/sdk
	cd contrib/sdk/js && npm pack --pack-destination $(CURDIR)/dist/sdk --ignore-scripts --no-audit --no-fund

test-vm: vm-prep
	$(MAKE) --no-print-directory vm-run

# vm-prep builds what the VM runs into dist/vm alone: its own binaries,
# test binaries and packages (vm_deb), never bin/ or dist/'s packages, so
# that make test builds it beside test-packages, which builds those.
vm-prep: deps-packages
	rm -rf dist/vm && mkdir -p dist/vm/bin dist/vm/pkg
	cp integration/vm/run-tests.sh integration/vm/package-test.sh integration/vm/tests.txt dist/vm/
	$(call vm_deb,0.1.0~vmtest1,old)
	$(call vm_deb,0.1.0~vmtest2,new)
	$(GO) build $(GOFLAGS_B) -o dist/vm/bin/sandboxd ./cmd/sandboxd
	$(GO) build $(GOFLAGS_B) -o dist/vm/bin/sandboxctl ./cmd/sandboxctl
	$(GO) build $(GOFLAGS_B) -o dist/vm/bin/sandboxd-init ./cmd/sandboxd-init
	isolation/agent/supervisor/build.sh dist/vm/bin/sandboxd-supervisor
	$(GO) test -c -tags '$(TAGS)' -o dist/vm/cgroups.test ./cgroups
	$(GO) test -c -tags '$(TAGS)' -o dist/vm/isolation.test ./isolation
	$(GO) test -c -tags '$(TAGS)' -o dist/vm/runc.test ./isolation/runc
	$(GO) test -c -tags '$(TAGS)' -o dist/vm/runsc.test ./isolation/runsc
	$(GO) test -c -tags '$(TAGS)' -o dist/vm/integration.test ./integration
	$(MAKE) --no-print-directory old-release OLD_BIN=dist/vm/old-bin OLD_SRC=dist/vm/old-src

# vm_deb VERSION,NAME builds the .deb of version VERSION as the packages
# target does, in a folder of dist/vm (package.sh's PKG_DIST), into
# dist/vm/pkg/NAME.deb.
define vm_deb
	$(GO) build -tags '$(TAGS)' -trimpath -ldflags '$(call version_ldflags,$(1))' -o dist/vm/$(2)/ ./cmd/sandboxd ./cmd/sandboxctl ./cmd/sandboxd-init
	isolation/agent/supervisor/build.sh dist/vm/$(2)/sandboxd-supervisor
	PKG_VERSION='$(1)' NFPM='$(NFPM)' PKG_DIST=dist/vm/$(2) packaging/package.sh $(PKG_ARCH) dist/vm/$(2) dist/vm/$(2)
	mv dist/vm/$(2)/sandboxd_$(1)-1_$(PKG_ARCH).deb dist/vm/pkg/$(2).deb
	rm -rf dist/vm/$(2)
endef

# vm-run boots the VM and runs there what vm-prep built.
vm-run:
	$(VM)/install-host-deps
	VM_EXTRA_PACKAGES=python3-matplotlib,lxcfs,python3-pip,runsc VM_DISK_SIZE=8G VM_TIMEOUT=2400 $(VM)/run-in-vm dist/vm ./run-tests.sh
