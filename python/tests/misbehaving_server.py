"""A serve-protocol program that misbehaves on purpose (issue 10, item 6).

    difftest run --suite quick --run '^topk_transform/' \
        --impl 'serve:python python/tests/misbehaving_server.py MODE --case REGEXP'

It serves examples/numpy_topk.py and examples/numpy_normrope.py correctly
(or the files given with --impl-file) except on requests whose case id
matches --case (default: every case), where it does MODE. The case id, not
the seq, picks the victim, so the behaviour does not depend on whether seq
starts again at 1 after a restart, and the cases after the victim must pass.

Modes at start-up (no case involved):
  nohello      never sends the hello (sleeps)
  badproto     hello with protocol 2
  hello-exit   exits 3 right after the hello
Modes on a matching request:
  die          exits 7 before replying                         -> crash
  kill         SIGKILLs itself                                 -> crash
  hang         never replies                                   -> timeout
  garbage      256 random bytes instead of a message           -> bad-output
  badjson      a well-framed message that is not JSON          -> bad-output
  biglen       a length prefix of 0xFFFFFFFF, then nothing     -> bad-output (nothing allocated)
  othertype    a JSON object of type "bogus"                   -> bad-output
  wrongseq     a valid reply for seq + 1000                    -> crash (protocol error)
  error        status "error" with a message                   -> crash, the program kept
  guard        computes, then writes one byte past the output  -> guard
  underguard   computes, then writes one byte before the output -> guard
  writeinput   computes, then changes the first input byte     -> input-modified
  unwritten    replies ok without writing the outputs          -> unwritten
  stderr50mb   prints 50 MB to stderr, then computes           -> passes (stderr bounded)
  fork         forks a child that sleeps an hour holding the pipes, then computes
               -> passes; the child dies with the process group
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
START_MODES = ("nohello", "badproto", "hello-exit")
CASE_MODES = ("die", "kill", "hang", "garbage", "badjson", "biglen", "othertype", "wrongseq", "error", "guard",
              "underguard", "writeinput", "unwritten", "stderr50mb", "fork")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=START_MODES + CASE_MODES + ("none",))
    ap.add_argument("--case", default="", help="regexp on the case id (re.search); default every case")
    ap.add_argument("--impl-file", action="append",
                    help="implementation files (default examples/numpy_topk.py and examples/numpy_normrope.py)")
    args = ap.parse_args()
    victim = re.compile(args.case)

    from kerneldiff import registry, server
    from kerneldiff.device import Runner
    from kerneldiff.loader import load_target
    from kerneldiff.protocol import PROTOCOL, encode_message, parse_request, read_message, write_message

    for f in args.impl_file or [os.path.join(ROOT, "examples", n) for n in ("numpy_topk.py", "numpy_normrope.py")]:
        load_target(f)
    hello = {"type": "hello", "protocol": PROTOCOL, "kernels": registry.kernels(), "device": "misbehaving cpu",
             "version": server.version_string(f"misbehaving-server {args.mode}")}
    if args.mode == "nohello":
        time.sleep(3600)
    if args.mode == "badproto":
        hello["protocol"] = 2
    write_message(server.REP_FD, hello)
    if args.mode == "hello-exit":
        return 3
    loop = server._Loop(Runner("cpu"), "misbehaving cpu", sys.stderr)
    out = server.REP_FD

    def raw(data: bytes) -> None:
        os.write(out, data)

    while True:
        msg = read_message(server.REQ_FD)
        if msg is None:
            return 0
        req = parse_request(msg, loop.shm.limit())
        hit = args.mode in CASE_MODES and victim.search(req.case) is not None
        mode = args.mode if hit else "none"
        if mode == "die":
            os._exit(7)
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "hang":
            time.sleep(3600)
        if mode == "garbage":
            raw(os.urandom(256))
            continue
        if mode == "badjson":
            raw(struct.pack("<I", 9) + b"{not json")
            continue
        if mode == "biglen":
            raw(struct.pack("<I", 0xFFFFFFFF))
            time.sleep(3600)
        if mode == "othertype":
            raw(encode_message({"type": "bogus", "seq": req.seq}))
            continue
        if mode == "error":
            write_message(out, {"type": "result", "seq": req.seq, "status": "error", "message": "misbehaving: told to fail"})
            continue
        if mode == "stderr50mb":
            chunk = ("x" * 1023 + "\n") * 1024
            for _ in range(50):
                sys.stderr.write(chunk)
            sys.stderr.flush()
        if mode == "fork" and os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
        if mode == "unwritten":
            rep = {"type": "result", "seq": req.seq, "status": "ok"}
        else:
            rep = loop.handle(req)
        mm = loop.shm.mm
        if mode in ("guard", "underguard") and req.outputs and mm is not None:
            o = req.outputs[0]
            at = o.offset + o.nbytes if mode == "guard" else o.offset - 1
            mm[at] = mm[at] ^ 0xFF
        if mode == "writeinput" and mm is not None:
            i = next((t for t in req.inputs if t.nbytes > 0 and t.name not in {o.name for o in req.outputs}), None)
            if i is not None:
                mm[i.offset] = mm[i.offset] ^ 0xFF
        if mode == "wrongseq":
            rep["seq"] = req.seq + 1000
        write_message(out, rep)


if __name__ == "__main__":
    sys.exit(main())
