# kerneldiff: see README.md. Every target installs what it needs.
GO      ?= go
BUILD   ?= build
FATBIN  ?= $(BUILD)/kernels.fatbin
# go-nvml resolves NVML lazily; a "-z now" link dies at start-up (DESIGN.md §2).
GOLDFLAGS ?= -ldflags=-extldflags=-Wl,-z,lazy
DIFFTEST_ARGS ?=
# go-nvml's header marks NVML 13 deprecations; they are not ours to fix.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_CFLAGS

.PHONY: all kernels test emu emu-driver emu-faults emu-race xarch gotest difftest selftest bench gpu-bundle clean

all: $(BUILD)/difftest kernels

$(BUILD)/difftest: FORCE
	@mkdir -p $(BUILD)
	$(GO) build -buildvcs=auto $(GOLDFLAGS) -o $@ ./cmd/difftest

kernels:
	scripts/build-kernels $(BUILD)

# The test command of README.md: builds the kernels (nvcc from pinned
# wheels, spill check), runs the CUDA source on the CPU emulator against the
# contracts and through the harness (quick suite), runs difftest's GPU path
# on the emulated driver, sets up the Python test tools, runs every Go test.
test: kernels emu emu-driver gotest

# The CUDA kernels' own source, run on the CPU (kernels/emu): contract tests
# and the quick suite through the harness via the exec protocol.
emu:
	scripts/test-kernels-emu --harness $(BUILD)/emu

# difftest's whole GPU path (dlopen shim, cgo launchers, worker and its
# restarts) on kernels/emu/libcuda_emu.cu, a libcuda.so.1 that runs the
# kernels on the CPU: the quick suite, two fault builds, four injected
# device faults and the GPU-tagged Go tests (about a minute).
emu-driver: kernels
	FATBIN=$(FATBIN) scripts/test-emu-driver $(BUILD)/emu

# Every fault build of kernels/faults.txt, emulated, must fail its contract
# test (the GPU selftest's CPU counterpart; about a minute of compiling).
emu-faults:
	scripts/test-kernels-emu --faults $(BUILD)/emu

# The contract tests under ThreadSanitizer with CUDA's happens-before edges
# (kernels/emu/host_emu.h): no race in the real kernels, and every RACE_*
# fault build reported (about a minute and a half).
emu-race:
	scripts/test-kernels-emu --race $(BUILD)/emu

# The input generators on arm64 (under qemu-aarch64, fetched by
# scripts/setup-qemu): every suite case's input digest and the rng, detmath
# and per-kernel digest tests must match the x86-64 goldens (about a minute).
xarch:
	scripts/test-xarch $(BUILD)

gotest:
	scripts/setup-pytools
	KD_PYTHON=$(CURDIR)/.venv/bin/python $(GO) test ./...

# The main job: build the kernels and run the default suite on the GPU.
difftest: kernels $(BUILD)/difftest
	$(BUILD)/difftest run --fatbin $(FATBIN) $(DIFFTEST_ARGS)

selftest: $(BUILD)/difftest
	$(BUILD)/difftest selftest

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

gpu-bundle: kernels
	scripts/gpu-bundle $(BUILD) dist

clean:
	rm -rf $(BUILD) dist

FORCE:
