#!/usr/bin/env python3
"""emu_cxx.py: compile CUDA C++ for the CPU emulator (kernels/emu/host_emu.h).

Usage: kernels/emu/emu_cxx.py [G++ FLAGS] -o OUT SOURCE... [--keep DIR] [--deps FILE]

Each SOURCE (a .cu, .cc or .cpp file that includes host_emu.h before the
kernel) is built with g++ in three steps, all in a temporary directory
(or DIR with --keep, to read the intermediate files):

 1. g++ -E with -fno-strict-aliasing (as nvcc treats type punning;
    NVCC_LIKE below), the FLAGS and the CUDA 13.0 headers of the pinned wheels
    (scripts/setup-cuda --print-include; $KD_EMU_CUDA_INCLUDE overrides,
    a colon-separated list, empty for none) on the include path, so
    host_emu.h finds cuda_fp16.h, cuda_bf16.h, cuda_fp8.h,
    cuda_runtime.h and <nv/target>.
 2. Launch syntax: every `KERNEL<<<GRID, BLOCK[, SMEM[, STREAM]]>>>(ARGS)`
    outside the system headers becomes
    `::emu::chevron(GRID, BLOCK[, SMEM[, STREAM]]).launch(KERNEL, ARGS)`
    (host_emu.h: the cudaLaunchKernelEx stand-in, errors through
    cudaGetLastError as on the device). KERNEL is a possibly qualified
    name with template arguments; a template kernel must name them (they
    cannot be deduced from ARGS here). Anything else before <<< is an
    error naming the file and line.
    PTX asm translation: every asm statement outside the system headers
    (and outside host_emu.h, whose x86-64 fiber switch is asm) is looked
    up in TABLE below (its template with whitespace collapsed,
    and its operands' constraints) and replaced by the C++ the table gives,
    calls into emu::ptx. A statement the table does not know is replaced
    by a call to emu::ptx::refuse, which aborts the kernel when it runs,
    naming the asm and its file and line, and a warning names it at build
    time. The line count is kept, so diagnostics and sanitizer reports
    still point at the original lines.
 3. g++ -c of the translated text, then the link: every undefined
    thread-local symbol the object refers to is an `extern __shared__`
    array (host_emu.h makes __shared__ thread_local), and is linked to
    the emulator's dynamic shared memory, kd_emu_dynamic_smem
    (ld --defsym), as all of a kernel's extern __shared__ arrays share one
    address on the device. C++ runtime thread-locals (names in std:: or
    __gnu_cxx::, or starting with two underscores) are left to the C++
    library. g++ may call an extern thread_local's initialiser (_ZTH...,
    weak) unguarded, and for one of internal linkage (in an unnamed
    namespace) the translation unit's, __tls_init, which it does not define
    when nothing needs one: those calls are linked to host_emu.h's empty
    initialiser.

With -c, step 3 stops at the object file (OUT). With --deps FILE, step 1
also lists every file the preprocessor read (g++ -MD), and FILE gets them
all, one absolute path a line, for a caller's build cache. Exit status:
g++'s, 1 for an asm statement or a launch it cannot parse, or 2 for a
usage error.
"""

import bisect
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _redux(op, ty, cxx):
    return (f"redux.sync.{op}.{ty} %0, %1, %2;", ("=r", "r", "r"), cxx)


# The PTX the emulator knows: normalized template -> (constraints of the
# operands in order, outputs first; C++ with {N} for operand N). A
# constraint "+r" is an output that is also read.
TABLE = {
    "mov.u32 %0, %%laneid;": (("=r",), "{0} = ::emu::ptx::laneid();"),
    "mov.u32 %0, %%lanemask_lt;": (("=r",), "{0} = ::emu::ptx::lanemask_lt();"),
    "griddepcontrol.wait;": ((), "::emu::ptx::griddepcontrol_wait();"),
    "griddepcontrol.launch_dependents;": ((), "::emu::ptx::griddepcontrol_launch_dependents();"),
    # SGLang's elect_one_lane (sgl_kernel/warp.cuh).
    "{ .reg .pred p; .reg .b32 r; elect.sync r|p, 0xFFFFFFFF; selp.b32 %0, 1, 0, p; }": (
        ("=r",),
        "unsigned kd_p_; ::emu::ptx::elect_sync(0xFFFFFFFFu, &kd_p_); {0} = kd_p_;",
    ),
    # CUTLASS's elect_one_sync (cute/arch/util.hpp).
    "{ .reg .b32 %%rx; .reg .pred %%px; elect.sync %%rx|%%px, %2; @%%px mov.s32 %1, 1; mov.s32 %0, %%rx; }": (
        ("+r", "+r", "r"),
        "unsigned kd_p_; {0} = ::emu::ptx::elect_sync({2}, &kd_p_); if (kd_p_) {1} = 1;",
    ),
}
for _op, _ty, _fn, _cast in [
    ("add", "u32", "__reduce_add_sync", "unsigned"),
    ("add", "s32", "__reduce_add_sync", "int"),
    ("min", "u32", "__reduce_min_sync", "unsigned"),
    ("min", "s32", "__reduce_min_sync", "int"),
    ("max", "u32", "__reduce_max_sync", "unsigned"),
    ("max", "s32", "__reduce_max_sync", "int"),
    ("and", "b32", "__reduce_and_sync", "unsigned"),
    ("or", "b32", "__reduce_or_sync", "unsigned"),
    ("xor", "b32", "__reduce_xor_sync", "unsigned"),
]:
    _t, _c, _x = _redux(_op, _ty, f"{{0}} = {_fn}({{2}}, static_cast<{_cast}>({{1}}));")
    TABLE[_t] = (_c, _x)


# Flags before the caller's (which may override them), so g++ compiles
# CUDA C++ as nvcc does where the languages' usual practice differs:
# kernels read vector-loaded integer storage through pointers to the
# element type (SGLang's AlignedVector, bf16 and fp8 packs), which strict
# aliasing makes undefined and g++ -O2 miscompiles (it reads zeros);
# nvcc keeps it working. Tested by features_test.cu's type-punning check.
NVCC_LIKE = ["-fno-strict-aliasing"]


def normalize(template):
    """The template with runs of whitespace made one space, stripped."""
    return " ".join(template.split())


def _skip_string(text, i):
    """Index just past the string or char literal starting at text[i]."""
    q = text[i]
    i += 1
    while i < len(text) and text[i] != q:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _skip_raw(text, i):
    """Index past the raw string whose opening quote is at text[i]."""
    open_paren = text.index("(", i)
    delim = text[i + 1 : open_paren]
    return text.index(")" + delim + '"', open_paren) + len(delim) + 2


def _outside_strings(text, i=0):
    """(index, character, depth) for each character of text from i on that is
    outside string and char literals; depth is the number of brackets open
    after it (an opening bracket counts itself, a closing one is closed)."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _skip_string(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        yield i, c, depth
        i += 1


def _match_paren(text, i):
    """Index of the ')' closing the '(' at text[i]."""
    for j, c, depth in _outside_strings(text, i):
        if c in ")]}" and depth == 0:
            return j
    raise ValueError("unbalanced parentheses in asm statement")


def _split_top(text, sep):
    """text split at sep characters outside strings and brackets."""
    parts, start = [], 0
    for j, c, depth in _outside_strings(text):
        if c == sep and depth == 0:
            parts.append(text[start:j])
            start = j + 1
    parts.append(text[start:])
    return parts


_STR = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)


def _decode(lit_body):
    return bytes(lit_body, "utf-8").decode("unicode_escape")


def _operands(section):
    """[(name, constraint, expression)] of one operand list."""
    out = []
    for op in _split_top(section, ","):
        op = op.strip()
        if not op:
            continue
        m = re.match(r'(?:\[\s*(\w+)\s*\]\s*)?"([^"]*)"\s*\(', op, re.S)
        if not m:
            raise ValueError(f"cannot read asm operand {op!r}")
        open_paren = m.end() - 1
        close = _match_paren(op, open_paren)
        out.append((m.group(1), m.group(2), op[open_paren + 1 : close]))
    return out


def translate(body):
    """(normalized template, C++ or None) for the asm statement whose
    parenthesized part is body."""
    sections = _split_top(body, ":")
    template = "".join(_decode(s) for s in _STR.findall(sections[0]))
    ops = []
    for sec in sections[1:3]:
        ops += _operands(sec)
    for idx, (name, _, _) in enumerate(ops):
        if name:
            template = template.replace(f"%[{name}]", f"%{idx}")
    key = normalize(template)
    entry = TABLE.get(key)
    if entry is None:
        return key, None
    want, cxx = entry
    got = tuple(c.replace("&", "") for _, c, _ in ops)
    if got != want:
        return key + f"  (operands {got}, the table's {want})", None
    return key, cxx.format(*[f"({e})" for _, _, e in ops])


_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)$', re.M)
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b")
_QUALS = re.compile(r"\s*(?:volatile|__volatile__|__volatile|inline|goto)\b")
_LABEL = re.compile(r"^[\w.$@]*$")


class Source:
    """Where a position of preprocessed text comes from (its line markers)."""

    def __init__(self, text):
        self.text = text
        self.pos, self.info = [], []
        for m in _MARKER.finditer(text):
            self.pos.append(m.end() + 1)
            self.info.append((m.group(2), int(m.group(1)), " 3" in m.group(3) + " "))

    def where(self, p):
        k = bisect.bisect_right(self.pos, p) - 1
        if k < 0:
            return "?", 0, False
        f, line, system = self.info[k]
        return f, line + self.text.count("\n", self.pos[k], p), system


def _skip_space_back(text, j):
    """The index just past the last non-space character before j."""
    while j > 0 and text[j - 1].isspace():
        j -= 1
    return j


def _callee_start(text, p):
    """Start of the kernel name ending before the <<< at text[p]: an
    identifier with template arguments and :: qualifiers. Raises
    ValueError when there is none."""
    j = _skip_space_back(text, p)
    while True:
        if j > 0 and text[j - 1] == ">":
            depth, k = 0, j - 1
            while k >= 0:
                c = text[k]
                if c in ">)]":
                    depth += 1
                elif c in "<([":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            if k < 0:
                raise ValueError("unbalanced template arguments before <<<")
            j = _skip_space_back(text, k)
        k = j
        while k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_"):
            k -= 1
        if k == j or text[k].isdigit():
            raise ValueError("no kernel name before <<<")
        if text[k:j] == "operator":
            return None
        q = _skip_space_back(text, k)
        if q >= 2 and text[q - 2 : q] == "::":
            r = _skip_space_back(text, q - 2)
            if r > 0 and (text[r - 1].isalnum() or text[r - 1] in "_>"):
                j = r
                continue
            return q - 2
        return k


def _chevron(text, p):
    """(start, end, replacement) of the launch whose <<< is at text[p], or
    None when the <<< is not a launch (operator<<<T>). Raises ValueError
    when it cannot be read."""
    start = _callee_start(text, p)
    if start is None:
        return None
    callee = text[start:p].strip()
    q = next((j for j, _, depth in _outside_strings(text, p + 3) if depth == 0 and text.startswith(">>>", j)), -1)
    if q < 0:
        raise ValueError("no >>> closing the launch configuration")
    config = text[p + 3 : q]
    a = q + 3
    while a < len(text) and text[a].isspace():
        a += 1
    if a >= len(text) or text[a] != "(":
        raise ValueError("no argument list after >>>")
    close = _match_paren(text, a)
    args = text[a + 1 : close]
    call = f"::emu::chevron({config}).launch({callee}" + (f", {args}" if args.strip() else "") + ")"
    call += "\n" * (text.count("\n", start, close + 1) - call.count("\n"))
    return start, close + 1, call


def rewrite(text, warn):
    """text with its asm statements and <<<>>> launches translated; warn(msg)
    for each asm statement refused. A launch it cannot read raises
    ValueError naming the file and line."""
    src = Source(text)
    out, last, i = [], 0, 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "#" and (i == 0 or text[i - 1] == "\n"):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            if i > 0 and text[i - 1] == "R" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_")):
                i = _skip_raw(text, i)
            else:
                i = _skip_string(text, i)
            continue
        if c == "'":
            if i > 0 and text[i - 1].isalnum() and not re.search(r"(?:^|[^\w])(?:L|u|U|u8)$", text[max(0, i - 3) : i]):
                i += 1  # a digit separator
            else:
                i = _skip_string(text, i)
            continue
        if c == "<" and text.startswith("<<<", i) and not src.where(i)[2]:
            try:
                launch = _chevron(text, i)
            except ValueError as e:
                f, line, _ = src.where(i)
                raise ValueError(f"{f}:{line}: cannot read the <<<>>> launch: {e}") from None
            if launch is not None:
                start, end, call = launch
                if start < last:
                    f, line, _ = src.where(i)
                    raise ValueError(f"{f}:{line}: cannot read the <<<>>> launch: its kernel name overlaps translated text")
                out.append(text[last:start])
                out.append(call)
                last = i = end
                continue
            i += 3
            continue
        if c.isalpha() or c == "_":
            m = re.compile(r"\w+").match(text, i)
            word = m.group(0)
            if _ASM.fullmatch(word) and not src.where(i)[2] and not src.where(i)[0].endswith("host_emu.h"):
                j = m.end()
                quals = False
                while (q := _QUALS.match(text, j)) is not None:
                    quals = True
                    j = q.end()
                while j < n and text[j].isspace():
                    j += 1
                if j < n and text[j] == "(":
                    close = _match_paren(text, j)
                    body = text[j + 1 : close]
                    sections = _split_top(body, ":")
                    tmpl = "".join(_decode(s) for s in _STR.findall(sections[0]))
                    if len(sections) == 1 and not quals and _LABEL.match(tmpl):
                        i = close + 1  # an asm label of a declaration: not PTX
                        continue
                    key, cxx = translate(body)
                    f, line, _ = src.where(i)
                    if cxx is None:
                        warn(f"{f}:{line}: PTX asm not in the emulator's table, refused if it runs: {key}")
                        where = f"{os.path.basename(f)}:{line}"
                        cxx = f"::emu::ptx::refuse({_cxx_string(key)}, {_cxx_string(where)});"
                    newlines = text.count("\n", i, close + 1)
                    out.append(text[last:i])
                    out.append("do { " + cxx + " } while (0)" + "\n" * newlines)
                    last = close + 1
                    i = close + 1
                    continue
            i = m.end()
            continue
        i += 1
    out.append(text[last:])
    return "".join(out)


def _cxx_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


_TLS_RELOC = re.compile(r"R_X86_64_(?:GOTTPOFF|TPOFF32|TPOFF64|TLSGD|TLSLD|DTPOFF32|DTPOFF64|GOTPC32_TLSDESC|TLSDESC_CALL)")


def extern_shared(obj):
    """The undefined thread-local symbols obj refers to, but the C++
    library's: its extern __shared__ arrays."""
    undefined = set()
    for line in subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if parts:
            undefined.add(parts[-1])
    names = set()
    for line in subprocess.run(["readelf", "-rW", obj], capture_output=True, text=True, check=True).stdout.splitlines():
        if not _TLS_RELOC.search(line):
            continue
        parts = line.split()
        sym = parts[4] if len(parts) > 4 else ""
        if sym in undefined and not sym.startswith(("_ZSt", "_ZNSt", "_ZNKSt", "_ZN9__gnu_cxx", "__", "_ZTH", "_ZTW")):
            names.add(sym)
    for name in list(names):
        # The thread-local initialiser g++ may call for an extern
        # thread_local: weak, but called unguarded from a PIE.
        init = "_ZTH" + (name[2:] if name.startswith("_Z") else f"{len(name)}{name}")
        if init in undefined:
            names.add(init)
    if "__tls_init" in undefined:
        names.add("__tls_init")
    return sorted(names)


def cuda_include():
    env = os.environ.get("KD_EMU_CUDA_INCLUDE")
    if env is not None:
        return [d for d in env.split(":") if d]
    r = subprocess.run([os.path.join(ROOT, "scripts", "setup-cuda"), "--print-include"], stdout=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit("emu_cxx: scripts/setup-cuda --print-include failed")
    return [d for d in r.stdout.decode().split() if d]


def read_deps(path):
    """The prerequisites of a make rule file g++ -MD wrote: every file the
    preprocessor read, the source included."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read().replace("\\\n", " ")
    deps = []
    for rule in text.split("\n"):
        if ":" not in rule:
            continue
        _, _, rest = rule.partition(": ")
        for word in re.findall(r"(?:\\.|[^\s\\])+", rest):
            deps.append(re.sub(r"\\(.)", r"\1", word))
    return deps


def main(argv):
    cxx = os.environ.get("CXX", "g++")
    flags, sources, out, keep, compile_only, deps_out = [], [], None, None, False, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-o" and i + 1 < len(argv):
            out = argv[i + 1]
            i += 2
            continue
        if a == "--keep" and i + 1 < len(argv):
            keep = argv[i + 1]
            i += 2
            continue
        if a == "--deps" and i + 1 < len(argv):
            deps_out = argv[i + 1]
            i += 2
            continue
        if a == "-c":
            compile_only = True
        elif a in ("-x",) and i + 1 < len(argv):
            i += 2  # emu_cxx sets the language itself
            continue
        elif not a.startswith("-") and re.search(r"\.(cu|cc|cpp|cxx)$", a):
            sources.append(a)
        else:
            flags.append(a)
        i += 1
    if out is None or not sources or (compile_only and len(sources) != 1):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    inc = [f"-I{d}" for d in cuda_include()]
    flags = NVCC_LIKE + flags
    work = keep or tempfile.mkdtemp(prefix="emu_cxx.")
    os.makedirs(work, exist_ok=True)
    try:
        objs, deps = [], set()
        for k, s in enumerate(sources):
            base = os.path.join(work, f"{k}_{os.path.splitext(os.path.basename(s))[0]}")
            md = ["-MD", "-MF", base + ".d"] if deps_out else []
            r = subprocess.run([cxx, "-E", "-x", "c++", *flags, *inc, *md, s, "-o", base + ".ii"])
            if r.returncode != 0:
                return r.returncode
            if deps_out:
                deps.update(os.path.realpath(d) for d in read_deps(base + ".d"))
            with open(base + ".ii", encoding="utf-8", errors="surrogateescape") as f:
                try:
                    text = rewrite(f.read(), lambda m: print(f"emu_cxx: warning: {m}", file=sys.stderr))
                except ValueError as e:
                    print(f"emu_cxx: {s}: cannot translate its asm or launches: {e}", file=sys.stderr)
                    return 1
            with open(base + ".emu.ii", "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
            obj = out if compile_only else base + ".o"
            r = subprocess.run([cxx, "-c", "-x", "c++-cpp-output", *flags, base + ".emu.ii", "-o", obj])
            if r.returncode != 0:
                return r.returncode
            objs.append(obj)
        if deps_out:
            with open(deps_out, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write("".join(d + "\n" for d in sorted(deps)))
        if compile_only:
            return 0
        defsyms = []
        for o in objs:
            for name in extern_shared(o):
                init = name == "__tls_init" or name.startswith("_ZTH")
                target = "kd_emu_no_tls_init" if init else "kd_emu_dynamic_smem"
                defsyms.append(f"-Wl,--defsym={name}={target}")
        r = subprocess.run([cxx, *objs, "-o", out, *flags, *sorted(set(defsyms))])
        return r.returncode
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
