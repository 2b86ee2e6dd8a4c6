# kerneldiff: see README.md. Every target installs what it needs.
GO      ?= go
BUILD   ?= build
FATBIN  ?= $(BUILD)/kernels.fatbin
# go-nvml resolves NVML lazily; a "-z now" link dies at start-up (docs/architecture.md).
GOLDFLAGS ?= -ldflags=-extldflags=-Wl,-z,lazy
DIFFTEST_ARGS ?=
# The implementation `make difftest` runs: cuda (the GPU), or emu (the
# kernels' CUDA source on the CPU emulator, through the emulated driver
# EMU_DRIVER: the whole GPU path without a GPU; slow).
IMPL    ?= cuda
EMU_DRIVER ?= $(BUILD)/emu-driver/libcuda.so.1
# go-nvml's header marks NVML 13 deprecations; they are not ours to fix.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_CFLAGS

.PHONY: all generate kernels emu-lib test bisect-test pytest emu emu-driver emu-faults emu-race xarch gotest difftest selftest bench report-test recipes-test gpu-bundle docs clean sglang sglang-default

all: $(BUILD)/difftest kernels

$(BUILD)/difftest: FORCE
	@mkdir -p $(BUILD)
	$(GO) build -buildvcs=auto $(GOLDFLAGS) -o $@ ./cmd/difftest

kernels:
	scripts/build-kernels $(BUILD)

# The lists of kernels that derive from the kernel folders
# (docs/adding-a-kernel.md): kernels/all/all_gen.go, kernels/kernels.cu,
# kernels/entries.txt, then the Python package's contracts.json. Tests fail
# while any of them is stale.
generate:
	$(GO) run ./internal/kernelsgen
	$(GO) run ./cmd/difftest list contracts --json > python/src/kerneldiff/contracts.json.tmp
	mv python/src/kerneldiff/contracts.json.tmp python/src/kerneldiff/contracts.json

# The test command of README.md: builds the kernels (nvcc from pinned
# wheels, spill check), runs the CUDA source on the CPU emulator against the
# contracts and through the harness (quick suite), runs SGLang's own
# kernels from the pinned wheel through the harness on the emulator (quick
# suite), runs difftest's GPU path on the emulated driver, bisects a planted bad commit in a throwaway
# repository, sets up the Python test tools, runs every Go test, then the
# Python package's tests and the examples.
test: kernels emu emu-driver sglang bisect-test gotest pytest report-test recipes-test

# The CUDA kernels' own source, run on the CPU (kernels/emu): contract tests
# and the emulator's own tests. (The quick suite through the harness on the
# same source is emu-driver's.)
emu:
	scripts/test-kernels-emu $(BUILD)/emu

# SGLang 0.5.23's topk_v1, DSv4 indexer store and V3.2 indexer-key kernels,
# read in place from the pinned wheel (fetched from PyPI, cached in
# .cache/wheels, hash-checked), through their adapters (adapters/sglang) on
# the CPU emulator and the harness (--impl cudasrc-emu): the quick suite
# (sglang, part of test, about three minutes with the builds) or the
# default suite (sglang-default, about five); each run must fail exactly
# the cases adapters/sglang/expected.txt lists.
sglang:
	scripts/sglang-emu $(BUILD)/sglang-emu

sglang-default:
	scripts/sglang-emu --suite default $(BUILD)/sglang-emu

# difftest's whole GPU path (dlopen shim, cgo launchers, worker and its
# restarts) on kernels/emu/libcuda_emu.cu, a libcuda.so.1 that runs the
# kernels on the CPU: the quick suite, two fault builds, four injected
# device faults and the GPU-tagged Go tests (about a minute).
emu-driver: kernels
	FATBIN=$(FATBIN) scripts/test-emu-driver $(BUILD)/emu

# The git bisect recipe of docs/gpu.md, end to end in a throwaway repository: a copy
# of scripts/bisect-step with --impl emu must name a planted bad commit.
bisect-test:
	scripts/test-bisect

# Every fault build of kernels/faults.txt, emulated, must fail its contract
# test (the GPU selftest's CPU counterpart; mostly compiling, two at a time
# on two CPUs). After make emu the contract tests themselves are not run
# again (scripts/test-kernels-emu --rerun forces them).
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

# difftest report's HTML rendered by headless Chromium (installed from
# Debian when missing): the DOM text and a non-trivial screenshot.
report-test: kernels
	FATBIN=$(FATBIN) scripts/test-report $(BUILD)/report-test

# The nightly recipes of examples/nightly (Slurm array, Kubernetes indexed
# Job, GitHub Actions matrix) run here end to end with --shard auto, merge
# and report; the YAML parsed, schema-checked and linted.
recipes-test:
	scripts/test-recipes $(BUILD)/recipes-test

# The Python package (python/, pytest) and the examples (examples/) through
# difftest, exec and serve.
pytest:
	scripts/test-python

# Every Go package's tests. go test starts the packages' test binaries in
# the order named (-p of them at once, one per CPU), and ./... names each
# package once, so the slowest packages, named first, run beside the rest
# instead of alone at the end.
GOTEST_FIRST ?= ./kernels/normrope ./cmd/difftest ./bridge ./kernels/logits ./kernels/topk ./fixtures
gotest:
	scripts/setup-pytools
	KD_PYTHON=$(CURDIR)/.venv/bin/python $(GO) test -timeout 40m $(GOTEST_FIRST) ./...

# The emulated driver --impl emu loads (kernels/emu/libcuda_emu.cu).
emu-lib:
	scripts/build-emu-driver $(dir $(EMU_DRIVER))

# The main job: build the kernels and run the default suite on the GPU
# (IMPL=emu: on the CPU emulator instead). Without a driver, IMPL=cuda
# exits 125: a GPU job whose driver broke never passes on the emulator.
ifeq ($(IMPL),emu)
difftest: kernels emu-lib $(BUILD)/difftest
	KD_LIBCUDA=$(abspath $(EMU_DRIVER)) $(BUILD)/difftest run --impl emu --fatbin $(FATBIN) $(DIFFTEST_ARGS)
else
difftest: kernels $(BUILD)/difftest
	$(BUILD)/difftest run --impl $(IMPL) --fatbin $(FATBIN) $(DIFFTEST_ARGS)
endif

selftest: $(BUILD)/difftest
	$(BUILD)/difftest selftest

# docs/flags.md from the subcommands' flag sets and the catalog table of
# docs/mutants.md from `difftest list mutants` (TestFlagsDoc and
# TestMutantsDoc in cmd/difftest fail when they are stale).
docs:
	cd cmd/difftest && $(GO) generate

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

gpu-bundle: kernels
	scripts/gpu-bundle $(BUILD) dist

clean:
	rm -rf $(BUILD) dist

FORCE:
