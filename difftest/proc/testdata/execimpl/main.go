// Command execimpl speaks the exec protocol of docs/interfaces.md for the tests
// of difftest's exec implementation:
//
//	execimpl [-mode MODE] [-pidfile FILE] IN OUT
//
// It reads IN (in.safetensors), checks its __metadata__ (kernel, case,
// params), computes the outputs of the case, then misbehaves as MODE
// says. It knows the test kernel "copy_kernel" (y = x; the InOut cache
// keeps its bytes except the first half, which becomes stamp+i); built
// with -tags kd_kernels it also runs the Go reference of every kernel
// registered by the kernel packages.
//
// Modes, one per failure class of the exec implementation:
//
//	correct      write every output
//	extra        correct, plus a tensor that is no output ("debug")
//	faulty       the first output wrong at its first written element
//	exit3        message on stderr, exit status 3
//	panic        a Go panic (exit status 2, trace on stderr)
//	kill         SIGKILL to itself
//	noisy        10 KB on stderr, then exit status 1
//	hang         start a sleeping child, write "pid\nchild pid\nIN" to
//	             -pidfile, sleep forever
//	sleep        sleep forever (the child of hang)
//	wrong-dtype  the first output relabelled (F32 <-> I32, I64 <-> F64)
//	wrong-shape  the first output flattened to one dimension
//	missing      the first output left out
//	garbage      OUT holds bytes that are not safetensors
//	truncated    OUT cut in the middle of the data
//	nofile       exit 0 without writing OUT
//	note         correct, with a two-line note in OUT's __metadata__
//	             (proc.MetaNote)
//	long-version correct, with a version line over ServeMaxText bytes
//
// Every OUT it writes whole states __metadata__ "version" = "execimpl 1"
// and "device" = "execimpl test device".
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
)

func main() {
	mode := flag.String("mode", "correct", "behaviour (see the package doc)")
	pidfile := flag.String("pidfile", "", "hang: where to write the pids")
	flag.Parse()
	if *mode == "sleep" {
		sleepForever()
	}
	if flag.NArg() != 2 {
		fail("usage: execimpl [-mode MODE] [-pidfile FILE] IN OUT")
	}
	in, out := flag.Arg(0), flag.Arg(1)
	tensors, meta, err := difftest.ReadSafetensors(in)
	if err != nil {
		fail(err.Error())
	}
	for _, key := range []string{difftest.MetaKernel, difftest.MetaCase, difftest.MetaParams} {
		if meta[key] == "" {
			fail("in.safetensors: __metadata__ has no " + key)
		}
	}
	params := json.RawMessage(meta[difftest.MetaParams])
	if !json.Valid(params) {
		fail("in.safetensors: params is not JSON: " + string(params))
	}
	var outs []*difftest.Tensor
	faultAt := 0 // byte offset in outs[0] that the faulty mode changes
	if meta[difftest.MetaKernel] == "copy_kernel" {
		outs, err = copyKernel(params, tensors)
	} else {
		outs, faultAt, err = registryOutputs(meta[difftest.MetaKernel], meta[difftest.MetaCase], params, tensors)
	}
	if err != nil {
		fail(err.Error())
	}

	switch *mode {
	case "correct":
	case "extra":
		outs = append(outs, &difftest.Tensor{Name: "debug", DType: difftest.U8, Shape: []int{3}, Data: []byte{1, 2, 3}})
	case "faulty":
		corrupt(outs[0], faultAt)
	case "exit3":
		fmt.Fprintln(os.Stderr, "execimpl: deliberate failure, exit 3")
		os.Exit(3)
	case "panic":
		panic("execimpl: deliberate panic")
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		sleepForever()
	case "noisy":
		for i := range 200 {
			fmt.Fprintf(os.Stderr, "execimpl: noise line %03d %s\n", i, strings.Repeat("x", 40))
		}
		fmt.Fprintln(os.Stderr, "execimpl: LAST LINE")
		os.Exit(1)
	case "hang":
		hang(*pidfile, in)
	case "wrong-dtype":
		swap := map[difftest.DType]difftest.DType{difftest.F32: difftest.I32, difftest.I32: difftest.F32, difftest.I64: difftest.F64, difftest.F64: difftest.I64}
		if swap[outs[0].DType] == "" {
			fail("wrong-dtype: no same-size dtype for " + string(outs[0].DType))
		}
		outs[0].DType = swap[outs[0].DType]
	case "wrong-shape":
		outs[0].Shape = []int{outs[0].Len()}
	case "missing":
		outs = outs[1:]
	case "garbage":
		write(out, []byte("this is not a safetensors file\n"))
		return
	case "truncated":
		if err := difftest.WriteSafetensors(out, outs, nil); err != nil {
			fail(err.Error())
		}
		st, err := os.Stat(out)
		if err != nil {
			fail(err.Error())
		}
		if err := os.Truncate(out, st.Size()-3); err != nil {
			fail(err.Error())
		}
		return
	case "nofile":
		return
	case "note":
		if err := difftest.WriteSafetensors(out, outs, map[string]string{proc.MetaNote: "a note\n  on two lines " + strings.Repeat("é", 1000)}); err != nil {
			fail(err.Error())
		}
		return
	case "long-version":
	default:
		fail("unknown mode " + *mode)
	}
	who := map[string]string{"producer": "execimpl", "version": "execimpl 1", "device": "execimpl test device"}
	if *mode == "long-version" {
		who["version"] = strings.Repeat("v", 300)
	}
	if err := difftest.WriteSafetensors(out, outs, who); err != nil {
		fail(err.Error())
	}
}

// copyKernel computes the outputs of the test kernel copy_kernel: y, a
// copy of x, and cache, the incoming cache with bytes [0, n/2) set to
// stamp+i.
func copyKernel(params json.RawMessage, tensors map[string]*difftest.Tensor) ([]*difftest.Tensor, error) {
	var p struct {
		Rows, Cols, Stamp int
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("copy_kernel params: %v", err)
	}
	x, cache := tensors["x"], tensors["cache"]
	if x == nil || cache == nil {
		return nil, errors.New("copy_kernel: in.safetensors lacks x or cache")
	}
	if len(x.Shape) != 2 || x.Shape[0] != p.Rows || x.Shape[1] != p.Cols {
		return nil, fmt.Errorf("copy_kernel: x has shape %v, params say [%d %d]", x.Shape, p.Rows, p.Cols)
	}
	y := x.Clone()
	y.Name = "y"
	for i := range len(cache.Data) / 2 {
		cache.Data[i] = byte(p.Stamp + i)
	}
	return []*difftest.Tensor{y, cache}, nil
}

// corrupt changes the element of t holding byte off: by one unit for
// F32, I32 and I64 elements, by flipping bit 6 of the byte otherwise (a
// change of several e4m3 steps or bf16 ULPs, past any tolerance).
func corrupt(t *difftest.Tensor, off int) {
	if off >= len(t.Data) {
		fail("faulty: first output has no byte " + fmt.Sprint(off))
	}
	switch i := off / t.DType.Size(); t.DType {
	case difftest.F32:
		t.SetF32(i, t.F32(i)+1)
	case difftest.I32:
		t.SetI32(i, t.I32(i)+1)
	case difftest.I64:
		t.SetI64(i, t.I64(i)+1)
	default:
		t.Data[off] ^= 0x40
	}
}

func hang(pidfile, in string) {
	child := exec.Command(os.Args[0], "-mode", "sleep")
	if err := child.Start(); err != nil {
		fail(err.Error())
	}
	write(pidfile, fmt.Appendf(nil, "%d\n%d\n%s\n", os.Getpid(), child.Process.Pid, in))
	sleepForever()
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func write(path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "execimpl:", msg)
	os.Exit(4)
}
