// Command serveimpl speaks the serve protocol (docs/python.md, "The serve
// protocol, version 1") for the tests of difftest's serve implementation:
//
//	serveimpl [-mode MODE] [-match REGEXP] [-kernels LIST] [-pidfile FILE] [-hello-delay D]
//
// It answers every request with the Go reference of the registered kernel
// (every kernel of kernels/all), computed straight into the shared
// memory, and misbehaves as MODE says on the first request whose case id
// matches -match (every request when -match is empty). -kernels is the
// comma-separated list its hello names (default: every registered kernel
// but the chains). -hello-delay waits that long before the hello (a
// program's start-up, as importing torch is).
//
// Modes, one per failure of the protocol:
//
//	correct      answer every request
//	noop         answer every request at once without computing (for
//	             the benchmarks of the harness's own overhead)
//	die          exit status 3 in the middle of the request
//	hang         never answer that request
//	no-hello     never send the hello (sleep)
//	protocol2    a hello that speaks protocol 2
//	garbage      a reply of 16 bytes that are not JSON
//	oversize     a reply whose length field claims 2 GiB
//	wrong-seq    a reply for the next request's seq
//	error        a reply with status "error"
//	error-exit   a reply with status "error", then exit status 3 (what a
//	             program does after a sticky CUDA error)
//	guard        one byte written just past the first output
//	write-input  the first input's first byte changed
//	flood        50 MB on stderr, then the right answer
//	fork         a child in the process group that keeps running (its
//	             pid written to -pidfile), then the right answer
//	setsid       the same with a child that leaves the group (setsid)
//	nondet       the second run of the case (poison B) answers with its
//	             first output's first 4 bytes changed
//	shrink       ftruncate(5, 0) before the reply (what makes an unsealed
//	             mapping fault), then the right answer; "serveimpl:
//	             ftruncate: ERR" on stderr when it is refused
//	grow         ftruncate(5, 1 TiB + 4 KiB) the same way
//	die-setsid   a child that leaves the group (setsid) holding the reply
//	             pipe open, then exit status 3 without replying
//	no-hello-setsid  the same before the hello
//	unwritten    write nothing, on every run of the matching case, and say
//	             so in an "ok" reply's message
//	             (what python -m kerneldiff serve does for an output left
//	             holding only the poison)
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
	_ "github.com/kerneldiff/kerneldiff/kernels/all"
)

func main() {
	mode := flag.String("mode", "correct", "behaviour (see the package doc)")
	match := flag.String("match", "", "misbehave on the first case whose id matches")
	kernels := flag.String("kernels", strings.Join(unchained(), ","), "kernels the hello names (default: every registered kernel that is not a chain)")
	pidfile := flag.String("pidfile", "", "fork: where to write the child's pid")
	helloDelay := flag.Duration("hello-delay", 0, "wait this long before the hello")
	flag.Parse()
	time.Sleep(*helloDelay)
	if *mode == "sleep" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	re := regexp.MustCompile(*match)
	req, rep := os.NewFile(3, "requests"), os.NewFile(4, "replies")
	if *mode == "no-hello" {
		time.Sleep(time.Hour)
	}
	if *mode == "no-hello-setsid" {
		holdAndExit(req, rep, *pidfile)
	}
	protocol := proc.ServeProtocol
	if *mode == "protocol2" {
		protocol = 2
	}
	must(proc.WriteServeMessage(rep, proc.ServeHello{Type: "hello", Protocol: protocol, Kernels: strings.Split(*kernels, ","), Device: "serveimpl test device", Version: "serveimpl 1"}))
	done := false // misbehaved once already
	seen := 0     // runs of the matching case answered right (nondet)
	for {
		b, err := proc.ReadServeMessage(req)
		if err != nil {
			os.Exit(0) // end of requests
		}
		var r proc.ServeRequest
		must(json.Unmarshal(b, &r))
		mem, err := syscall.Mmap(5, 0, int(r.ShmSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		must(err)
		bad := !done && re.MatchString(r.Case)
		if bad && *mode == "nondet" && seen == 0 {
			seen++ // the first run answers right
			bad = false
		}
		if bad && *mode != "unwritten" { // unwritten misbehaves on every run of the case
			done = true
		}
		reply := proc.ServeReply{Type: "result", Seq: r.Seq, Status: "ok", KernelTimeNS: 1000}
		if bad {
			switch *mode {
			case "die":
				fmt.Fprintln(os.Stderr, "serveimpl: dying on purpose")
				os.Exit(3)
			case "hang":
				time.Sleep(time.Hour)
			case "garbage":
				var hdr [4]byte
				binary.LittleEndian.PutUint32(hdr[:], 16)
				os.Stdout.Sync()
				_, _ = rep.Write(append(hdr[:], []byte("0123456789abcdef")...))
				syscall.Munmap(mem)
				continue
			case "oversize":
				var hdr [4]byte
				binary.LittleEndian.PutUint32(hdr[:], 1<<31)
				_, _ = rep.Write(hdr[:])
				time.Sleep(time.Hour)
			case "wrong-seq":
				reply.Seq++
			case "unwritten":
				reply.Message = "output '" + r.Outputs[0].Name + "' still holds only the poison: fill it in place"
			case "error", "error-exit":
				reply.Status, reply.Message = "error", "serveimpl: failing on purpose\nsecond line"
			case "flood":
				line := strings.Repeat("x", 1023) + "\n"
				for i := 0; i < 50*1024; i++ {
					os.Stderr.WriteString(line)
				}
			case "shrink", "grow":
				size := int64(0)
				if *mode == "grow" {
					size = 1<<40 + 4096
				}
				if err := syscall.Ftruncate(5, size); err != nil {
					fmt.Fprintf(os.Stderr, "serveimpl: ftruncate: %v\n", err)
				}
			case "die-setsid":
				holdAndExit(req, rep, *pidfile)
			case "fork", "setsid":
				child := exec.Command(os.Args[0], "-mode", "sleep")
				child.SysProcAttr = &syscall.SysProcAttr{Setsid: *mode == "setsid"}
				must(child.Start())
				must(os.WriteFile(*pidfile, []byte(fmt.Sprint(child.Process.Pid)), 0o644))
			}
		}
		if reply.Status == "ok" && *mode != "noop" && !(bad && *mode == "unwritten") {
			must(compute(&r, mem))
		}
		if bad {
			switch *mode {
			case "guard":
				o := r.Outputs[0]
				mem[o.Offset+o.NBytes] ^= 0xFF
			case "write-input":
				mem[r.Inputs[0].Offset] ^= 0xFF
			case "nondet":
				o := r.Outputs[0]
				mem[o.Offset]++
			}
		}
		must(syscall.Munmap(mem))
		must(proc.WriteServeMessage(rep, reply))
		if bad && *mode == "error-exit" {
			os.Exit(3)
		}
	}
}

// holdAndExit starts a child that leaves the process group (setsid)
// holding the request and reply pipes, writes its pid to pidfile, and
// exits with status 3.
func holdAndExit(req, rep *os.File, pidfile string) {
	child := exec.Command(os.Args[0], "-mode", "sleep")
	child.ExtraFiles = []*os.File{req, rep}
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	must(child.Start())
	if pidfile != "" {
		must(os.WriteFile(pidfile, []byte(fmt.Sprint(child.Process.Pid)), 0o644))
	}
	fmt.Fprintln(os.Stderr, "serveimpl: exiting, a setsid child keeps the pipes")
	os.Exit(3)
}

// compute runs the kernel's Go reference on the request's tensors, with
// the outputs as views of the shared memory.
func compute(r *proc.ServeRequest, mem []byte) error {
	k, ok := difftest.LookupKernel(r.Kernel)
	if !ok {
		return fmt.Errorf("kernel %q is not registered", r.Kernel)
	}
	view := func(t proc.ServeTensor) *difftest.Tensor {
		return &difftest.Tensor{Name: t.Name, DType: difftest.DType(t.DType), Shape: t.Shape, Data: mem[t.Offset : t.Offset+t.NBytes : t.Offset+t.NBytes]}
	}
	ts := map[string]*difftest.Tensor{}
	for _, t := range r.Inputs {
		ts[t.Name] = view(t)
	}
	for _, t := range r.Outputs {
		ts[t.Name] = view(t) // an InOut output is also an input
	}
	c, err := k.FromTensors(r.Case, r.Params, ts)
	if err != nil {
		return err
	}
	outs := make([]*difftest.Tensor, len(c.Outputs))
	for i, o := range c.Outputs {
		outs[i] = ts[o.Name]
		if outs[i] == nil {
			return fmt.Errorf("request has no output %s", o.Name)
		}
	}
	return k.Reference(c, outs)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveimpl:", err)
		os.Exit(1)
	}
}

// unchained returns the registered kernels an implementation runs itself:
// all but chains (whose stages are those kernels).
func unchained() []string {
	var names []string
	for _, k := range difftest.Kernels() {
		if _, chain := k.(difftest.Chain); !chain {
			names = append(names, k.Name())
		}
	}
	return names
}
