# voice-hub: `make run` starts the service with the shipped config, `make test` runs the whole suite,
# `make check` the fast tier (type check and the tests that need nothing beyond npm packages),
# `make check-node24` the fast tier on Node 24 (`make test` runs it with the hostile-input suites added).
# run and test install what is missing first (npm packages via npm ci, Debian packages via apt-get).
SHELL := /bin/bash
NODE ?= node
PORT ?= 5000
# build.mjs compiles our own small addons (src/native/*.c, with src/native/node-exports.h) for this machine with gcc.
NATIVE_DEBS := gcc
# make binaries: strip each runtime with its own binutils, make the ARM SEA blobs under qemu-user,
# cross-compile our addons for each target.
BINARY_DEBS := binutils binutils-aarch64-linux-gnu binutils-arm-linux-gnueabihf qemu-user \
  libc6-arm64-cross libstdc++6-arm64-cross libc6-armhf-cross libstdc++6-armhf-cross libatomic1-armhf-cross \
  gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf
DEB_DEBS := lintian
# The booted-package test: debootstrap makes its Debian root (unshare, nsenter, pivot_root: util-linux).
BOOTED_ROOT_DEBS := debootstrap util-linux
# Debian 13's libraries for the Node 24 builds (scripts/debian-libs.mjs): apt-get download checks the
# archive's signatures (gpgv, the keyring), patchelf points a Node 24 at them for check-node24.
DEBIAN13_DEBS := gpgv debian-archive-keyring patchelf
TEST_DEBS := $(NATIVE_DEBS) mosquitto mosquitto-clients chromium libopus0 openssl strace $(BINARY_DEBS) $(DEB_DEBS) $(BOOTED_ROOT_DEBS) $(DEBIAN13_DEBS) systemd
SOURCES := $(shell find src -name '*.ts' -o -name '*.mjs' -o -name '*.mts' -o -name '*.c' -o -name '*.h') build.mjs scripts/build-native.mjs package.json

.PHONY: deps run test check check-node24 typecheck build bench clean binaries deb install

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.package-lock.json

dist/voice-hub.cjs: node_modules/.package-lock.json $(SOURCES)
	scripts/ensure-debs.sh $(NATIVE_DEBS)
	$(NODE) build.mjs

build: dist/voice-hub.cjs

typecheck: deps
	npx tsc --noEmit

# The shipped config names the built-in echo voice server on 127.0.0.1:5050 and a broker on localhost:1883:
# run-local.sh starts both beside the service (when not already running) and stops them with it.
# libopus0: the system libopus that decodes upstream audio (VoiceService.OpusLibrary).
run: build
	scripts/ensure-debs.sh mosquitto libopus0
	PORT=$(PORT) scripts/run-local.sh

# What the suite writes at its peak on a fresh clone, measured: 2.1 GB (a booted Debian root with its
# packages, the roots' debootstrap tarballs, copies of the executables), with a margin. 0 skips the check.
TEST_FREE_GIB ?= 2.5
# Per test file. The longest, test/packaging/booted-root.test.ts, builds two Debian roots with debootstrap
# on a fresh clone and boots each: 290-300 s on a slow day of this 2-core machine, which timed it out at
# 300 s. Twice that, as the same commit here varies up to 2x; a hang still ends well inside CI's limit.
TEST_FILE_TIMEOUT_MS ?= 600000
test: deps
	scripts/ensure-debs.sh $(TEST_DEBS)
	npx tsc --noEmit
	$(NODE) build.mjs
	$(NODE) scripts/build-binaries.mjs
	scripts/check-free-space.sh $(TEST_FREE_GIB) "$${TMPDIR:-/tmp}" .
	$(NODE) --import tsx --test --test-concurrency=2 --test-timeout=$(TEST_FILE_TIMEOUT_MS) test/*/*.test.ts
	$(MAKE) --no-print-directory check-node24 NODE24_TESTS='$(NODE24_FULL_TESTS)' NODE24_TIMEOUT_MS=$(TEST_FILE_TIMEOUT_MS)

# The fast tier: the test folders whose tests need no Debian package, executable, bundle or child
# process: unit tests, in-process API tests through inject, the hub and the API on loopback ports.
# A test that needs any of those goes in another folder (test/unit/fast-tier.test.ts checks).
FAST_TEST_DIRS := unit inject config auth log hub api architecture
FAST_TESTS = $(foreach d,$(FAST_TEST_DIRS),test/$(d)/*.test.ts)
check: deps
	npx tsc --noEmit
	$(NODE) --import tsx --test --test-concurrency=2 --test-timeout=60000 $(FAST_TESTS)

# The fast tier again on Node 24, the runtime of the Node 24 executables (the same pinned npm package),
# on Debian 13's C libraries: its uWS addon needs glibc >= 2.38, which Debian 12 lacks. `make test` adds
# the hostile-input suites (they run the built bundle): that addon, uWS v20.56, answers request heads
# itself where Node 20's does not, and the suites expect what the addon under them does.
NODE24_TESTS ?= $(FAST_TESTS)
NODE24_TIMEOUT_MS ?= 60000
NODE24_FULL_TESTS = $(FAST_TESTS) test/hardening/*.test.ts
check-node24: deps
	scripts/ensure-debs.sh $(DEBIAN13_DEBS)
	node24=$$($(NODE) scripts/debian-libs.mjs node24) && $$node24 --import tsx --test --test-concurrency=2 --test-timeout=$(NODE24_TIMEOUT_MS) $(NODE24_TESTS)

# dist/voice-hub-linux-{x64,arm64}: single executables (Node SEA) on Node 24, for glibc >= 2.38;
# dist/voice-hub-linux-{x64,arm64,armv7}-legacy: on Node 20, for Debian 12 and 32-bit ARM. Reuses unchanged outputs.
binaries: build
	scripts/ensure-debs.sh $(BINARY_DEBS)
	$(NODE) scripts/build-binaries.mjs

# dist/voice-hub_<version>_{amd64,arm64}.deb (Node 24) and dist/voice-hub_<version>~legacy_{amd64,arm64,armhf}.deb
# (Node 20), checked by lintian.
deb: binaries
	scripts/ensure-debs.sh $(DEB_DEBS)
	$(NODE) packaging/build-deb.mjs

# This machine's executable, unit and config, without Debian packaging (PREFIX, DESTDIR as usual).
install: build
	$(NODE) scripts/build-binaries.mjs host
	NODE=$(NODE) packaging/install.sh

bench: build
	npm run bench

clean:
	rm -rf dist
