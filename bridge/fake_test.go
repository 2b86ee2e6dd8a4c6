package bridge

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/gob"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// The test kernel "test_copy": y[i] = x[i] ^ 0x5A over n bytes, on the
// fake device. Its first input byte selects a fault, so each case carries
// its own behaviour across the process boundary:
const (
	faultNone      = 0 // a correct run
	faultIllegal   = 1 // writes 1 MiB past y, beyond its guards: CUDA_ERROR_ILLEGAL_ADDRESS at the sync
	faultHang      = 2 // never returns
	faultCrash     = 3 // the worker process is killed by a signal
	faultLaunch    = 4 // CUDA_ERROR_LAUNCH_FAILED (sticky) at the sync
	faultMisalign  = 5 // CUDA_ERROR_MISALIGNED_ADDRESS: also illegal-address
	faultNoEntry   = 6 // asks for an entry point the module lacks
	faultUnknown   = 7 // CUDA_ERROR_UNKNOWN at the sync, and the context is lost (not a code Result.Sticky lists)
	faultOutOfRes  = 8 // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES at the sync; the context survives
	faultWriteIn   = 9 // a correct y, then x[5] += 1 on the device: input-modified
	testCopyKernel = "test_copy"
)

// testCopyParams are test_copy's params.
type testCopyParams struct {
	N     int `json:"n"`
	Fault int `json:"fault"`
}

// packTestCopy packs {u64 x, u64 y, u64 n} for kd_test_copy (or
// kd_test_missing when x[0] asks for a missing entry point; in a dry run
// the entry is not known and does not matter).
var packTestCopy = decoded(testCopyKernel, func(p testCopyParams, ts map[string]devTensor) (launch, error) {
	x, err := need(ts, "x", difftest.U8, 1)
	if err != nil {
		return launch{}, err
	}
	y, err := need(ts, "y", difftest.U8, 1)
	if err != nil {
		return launch{}, err
	}
	if err := dim(x, "x", 0, p.N, "n"); err != nil {
		return launch{}, err
	}
	if err := dim(y, "y", 0, p.N, "n"); err != nil {
		return launch{}, err
	}
	arg := make([]byte, 24)
	binary.LittleEndian.PutUint64(arg[0:], uint64(x.Ptr))
	binary.LittleEndian.PutUint64(arg[8:], uint64(y.Ptr))
	binary.LittleEndian.PutUint64(arg[16:], uint64(p.N))
	entry := "kd_test_copy"
	if p.Fault == faultNoEntry {
		entry = "kd_test_missing"
	}
	return launch{Entry: entry, Grid: cuda.Dim3{X: 1, Y: 1, Z: 1}, Block: cuda.Dim3{X: 32, Y: 1, Z: 1}, Args: [][]byte{arg}}, nil
})

func testPackers() map[string]packer {
	pk := packers()
	pk[testCopyKernel] = packTestCopy
	return pk
}

// kdTestCopy is the fake device's implementation of kd_test_copy.
func kdTestCopy(d *fakecuda.Driver, _, _ cuda.Dim3, args [][]byte) error {
	a := args[0]
	xp, yp, n := fakecuda.Ptr(a, 0), fakecuda.Ptr(a, 8), binary.LittleEndian.Uint64(a[16:])
	x, err := d.Bytes(xp, n)
	if err != nil {
		return err
	}
	switch x[0] {
	case faultIllegal:
		_, err := d.Bytes(yp+1<<20, 1)
		return err
	case faultHang:
		fmt.Fprintln(os.Stderr, "fake device: kd_test_copy spins in block (0,0,0)")
		select {}
	case faultCrash:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case faultLaunch:
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorLaunchFailed}
	case faultMisalign:
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorMisalignedAddress}
	case faultUnknown:
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorUnknown}
	case faultOutOfRes:
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorLaunchOutOfRes}
	}
	y, err := d.Bytes(yp, n)
	if err != nil {
		return err
	}
	for i := range y {
		y[i] = x[i] ^ 0x5A
	}
	if x[0] == faultWriteIn {
		x[5]++
	}
	return nil
}

// testCopyPTX is kd_test_copy for a real GPU, with the same faults.
//
//go:embed testdata/test_copy.ptx
var testCopyPTX string

// Environment of a test worker process (this test binary re-executed).
const (
	envWorker = "KD_BRIDGE_TEST_WORKER" // "fake", "fake-nodevice", "fake-nobinary", "fake-slow-exit", "real", "ptx", ...
)

// newFake returns the fake device for a worker mode.
func newFake(mode string) *fakecuda.Driver {
	d := fakecuda.New(map[string]fakecuda.Kernel{"kd_test_copy": kdTestCopy})
	d.LostContextCodes = []cuda.Result{cuda.ErrorUnknown}
	switch mode {
	case "fake-nodevice":
		d.InitError = &cuda.CUDAError{Call: "cuInit", Code: cuda.ErrorNoDevice}
	case "fake-nobinary":
		d.CCMajor = 8
		d.LoadError = &cuda.CUDAError{Call: "cuModuleLoadData", Code: cuda.ErrorNoBinaryForGPU}
	}
	return d
}

// TestMain lets this test binary act as a GPU worker: with envWorker set
// it serves the worker protocol on fds 3 and 4 and exits.
func TestMain(m *testing.M) {
	switch mode := os.Getenv(envWorker); mode {
	case "":
		os.Exit(m.Run())
	case "real":
		// The production worker (what `difftest cuda-worker` serves), with
		// whatever driver this machine has.
		fs := flag.NewFlagSet(WorkerCommand, flag.ExitOnError)
		var c WorkerConfig
		c.Flags(fs)
		_ = fs.Parse(os.Args[1:])
		req, rep, err := OpenWorkerPipes()
		if err == nil {
			err = ServeWorker(req, rep, c)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "test worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "fake-by-fatbin":
		// The production worker's flags; the fatbin's bytes pick a correct
		// (any content) or buggy ("TOPK_BUG") fake topk kernel.
		fs := flag.NewFlagSet(WorkerCommand, flag.ExitOnError)
		fatbin := fs.String("fatbin", "", "")
		fs.Int("device", 0, "")
		fs.String("driver", "", "")
		_ = fs.Parse(os.Args[2:])
		img, err := os.ReadFile(*fatbin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test worker:", err)
			os.Exit(1)
		}
		req, rep := os.NewFile(requestFD, "requests"), os.NewFile(replyFD, "replies")
		if err := serve(req, rep, newTopkFake(bytes.Contains(img, []byte("TOPK_BUG"))), img, 0, testPackers()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "ptx":
		// The real driver running testdata/test_copy.ptx (GPU tests).
		drv, _ := cuda.Open()
		req, rep := os.NewFile(requestFD, "requests"), os.NewFile(replyFD, "replies")
		if err := serve(req, rep, drv, append([]byte(testCopyPTX), 0), 0, testPackers()); err != nil {
			fmt.Fprintln(os.Stderr, "test worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "fake-misnumbered":
		req, rep := os.NewFile(requestFD, "requests"), os.NewFile(replyFD, "replies")
		if err := serveMisnumbered(req, rep); err != nil {
			fmt.Fprintln(os.Stderr, "test worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "fake-forks-helper":
		// A worker whose adapter forks helpers that outlive it and hold its
		// stdout and stderr: one in its process group, one that left it
		// (setsid). Their pids go to $KD_TEST_HELPER_DIR/{group,setsid}.pid.
		dir := os.Getenv("KD_TEST_HELPER_DIR")
		h := exec.Command("/bin/sh", "-c", `sleep 1000 & echo $! > "$0/group.pid"; setsid sleep 1000 & echo $! > "$0/setsid.pid"`, dir)
		h.Stdout, h.Stderr = os.Stdout, os.Stderr
		if err := h.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "test worker:", err)
			os.Exit(1)
		}
		req, rep := os.NewFile(requestFD, "requests"), os.NewFile(replyFD, "replies")
		if err := serve(req, rep, newFake("fake"), []byte("fake fatbin"), 0, testPackers()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	default:
		req, rep := os.NewFile(requestFD, "requests"), os.NewFile(replyFD, "replies")
		drv := newFake(mode)
		switch mode {
		case "fake-topk", "fake-topk-bug":
			drv = newTopkFake(mode == "fake-topk-bug")
		case "fake-normrope", "fake-normrope-bug":
			drv = fakecuda.New(map[string]fakecuda.Kernel{"kd_norm_rope_store": fakeNormRope(mode == "fake-normrope-bug")})
		case "fake-logits", "fake-logits-bug":
			drv = fakecuda.New(map[string]fakecuda.Kernel{"kd_indexer_logits": fakeLogits(mode == "fake-logits-bug")})
		case "fake-both":
			ks := topkFakeKernels(false)
			ks["kd_norm_rope_store"] = fakeNormRope(false)
			ks["kd_indexer_logits"] = fakeLogits(false)
			drv = fakecuda.New(ks)
		}
		err := serve(req, rep, drv, []byte("fake fatbin"), 0, testPackers())
		if err != nil {
			fmt.Fprintln(os.Stderr, "test worker:", err)
			os.Exit(1)
		}
		if mode == "fake-slow-exit" {
			// An instrumented worker writing its report as it exits.
			time.Sleep(time.Second)
		}
		os.Exit(0)
	}
}

// serveMisnumbered is a worker on the fake device that breaks the
// protocol on purpose: a case whose id contains "misnumbered" gets an
// error reply numbered for the next request; other cases run normally.
func serveMisnumbered(r io.Reader, w io.Writer) error {
	wk := &worker{drv: newFake("fake"), packers: testPackers(), funcs: map[string]cuda.Function{}}
	enc := gob.NewEncoder(w)
	desc, props, err := wk.open([]byte("fake fatbin"), 0)
	if err != nil {
		return err
	}
	if err := enc.Encode(reply{Device: desc, Props: props}); err != nil {
		return err
	}
	dec := gob.NewDecoder(r)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			return nil
		}
		rep := wk.run(&req)
		rep.Seq = req.Seq
		if strings.Contains(req.CaseID, "misnumbered") {
			rep = reply{Seq: req.Seq + 1, Class: difftest.LaunchError, Msg: "an answer to another request"}
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
}
