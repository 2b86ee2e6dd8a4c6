"""``python -m kerneldiff serve|exec MODULE_OR_FILE ...``.

serve MODULE_OR_FILE... [--device D] [--version TEXT]
    Import the targets (their @kerneldiff.implements functions register
    themselves) and run the serve loop of protocol 1 on fds 3-5; started by
    ``difftest run --impl 'serve:python -m kerneldiff serve FILE'``.
exec MODULE_OR_FILE IN OUT [--device D]
    Import the target and run one exec-protocol case: read IN
    (in.safetensors), write OUT (out.safetensors).

Exit status: 0 done; 1 the implementation failed (exec) or the reply pipe
broke (serve); 2 usage, a target that cannot be loaded, a bad input file or
request stream; 3 serve stopped after a sticky CUDA error.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import List, Optional

from . import registry
from .execmode import exec_main
from .loader import LoadError, load_target

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kerneldiff", description="Serve or run kernels for the kerneldiff harness.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve protocol 1 on fds 3-5 (started by difftest --impl serve:CMD)")
    s.add_argument("targets", metavar="MODULE_OR_FILE", nargs="+", help="one or more; each registers its kernels")
    s.add_argument("--device", help="cpu, cuda or cuda:N for torch implementations (default $KD_DEVICE, else cpu)")
    s.add_argument("--version", dest="version_text", help="your own version text for the hello")
    e = sub.add_parser("exec", help="run one exec-protocol case: read IN, write OUT")
    e.add_argument("targets", metavar="MODULE_OR_FILE", nargs=1)
    e.add_argument("inp", metavar="IN")
    e.add_argument("out", metavar="OUT")
    e.add_argument("--device", help="cpu, cuda or cuda:N for torch implementations (default $KD_DEVICE, else cpu)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Run the CLI with `argv` (default ``sys.argv[1:]``); returns the exit status."""
    args = _parser().parse_args(argv)
    for target in args.targets:
        try:
            load_target(target)
        except LoadError as e:
            print(f"kerneldiff {args.cmd}: {e}", file=sys.stderr)
            return 2
        except Exception:
            print(f"kerneldiff {args.cmd}: importing {target} failed:", file=sys.stderr)
            traceback.print_exc()
            return 2
    if not registry.kernels():
        print(f"kerneldiff {args.cmd}: {' '.join(args.targets)} registers no kernel "
              "(decorate a function with @kerneldiff.implements(NAME))", file=sys.stderr)
        return 2
    if args.cmd == "exec":
        return exec_main(args.inp, args.out, args.device)
    from .server import ServeError, serve

    try:
        return serve(args.device, args.version_text)
    except ServeError as e:
        print(str(e), file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
