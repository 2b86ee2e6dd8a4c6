"""The kerneldiff pytest plugin: one pytest item per kerneldiff case.

Installed with the package and loaded by pytest through the ``pytest11``
entry point. A test file registers its op with
:func:`kerneldiff.implements` and asks for the ``kerneldiff_case``
fixture::

    import kerneldiff

    @kerneldiff.implements("topk_transform")
    def topk(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
        ...

    def test_topk(kerneldiff_case):
        pass  # the verdict is checked before the body runs

The test is parametrized over the suite's cases (``difftest list cases
--json``), one item per case, the case id as the item's id
(``test_topk[topk_transform/lengths-k512]``). The first item that runs
starts one ``difftest run --json`` over every selected item of the same
settings, with ``serve:python -m kerneldiff serve THIS_FILE`` as the
implementation; each item then waits for its case's record. A failing case
fails its item with the diagnosis, the first broken element and the replay
line; a case the op does not implement (another kernel, or
:class:`kerneldiff.Unsupported`) is a skip with the harness's reason; the
record's details go into the item's ``user_properties`` (JUnit
``<property>``).

Settings, most specific last wins: the default, the ini key, the test's
``@pytest.mark.kerneldiff(...)``, the command line:

==================  ======================  ==================================
command line        ini key                 what
==================  ======================  ==================================
--kerneldiff-suite  kerneldiff_suite        suite NAME|FILE|DIR (``default``)
--kerneldiff-seed   kerneldiff_seed         suite seed (1)
--kerneldiff-impl   kerneldiff_impl         a difftest --impl instead of
                                            serving the test's file
--kerneldiff-device kerneldiff_device       serve --device (torch ops)
--kerneldiff-difftest kerneldiff_difftest   the difftest binary
--kerneldiff-args   kerneldiff_args         more ``difftest run`` flags
==================  ======================  ==================================

Under pytest-xdist each worker runs the cases it has been handed, in
batches (one ``difftest run`` per batch).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pytest

__all__ = [
    "KerneldiffCase",
    "CaseInfo",
    "Settings",
    "PluginError",
    "failure_message",
    "FIXTURE",
    "MARKER",
]

#: The fixture a test asks for to be parametrized over the cases.
FIXTURE = "kerneldiff_case"
#: The marker that sets a test's suite, seed, serve targets or kernels.
MARKER = "kerneldiff"
#: Worst elements shown in a failure's message (the record has up to 16).
SHOWN_WORST = 4
_TAIL = 4000  # characters of difftest's output kept for a message


class PluginError(Exception):
    """A setting, the difftest binary or a suite the plugin cannot use;
    the message says what and how to fix it."""


# --------------------------------------------------------------------------
# options, ini keys, marker


_OPTIONS: Tuple[Tuple[str, str, str], ...] = (
    ("suite", "default", "kerneldiff suite NAME|FILE|DIR whose cases become items (default: default)"),
    ("seed", "1", "kerneldiff suite seed: inputs are drawn from (seed, case id) (default: 1)"),
    ("impl", "", "difftest --impl for every kerneldiff test (cuda, emu, reference, mutant:NAME, serve:CMD, exec:CMD) "
                 "instead of serving each test's own file"),
    ("device", "", "serve --device for torch ops: cpu, cuda or cuda:N (default: $KD_DEVICE, else cpu)"),
    ("difftest", "", "the difftest binary (default: $KD_DIFFTEST, else difftest on PATH, else ROOTDIR/build/difftest)"),
    ("args", "", "more difftest run flags, split as a shell does, e.g. '--diagnose off --timeout 30s'"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--kerneldiff-*`` options and ``kerneldiff_*`` ini keys."""
    group = parser.getgroup("kerneldiff", "kerneldiff: kernel cases as pytest items")
    for name, default, help_text in _OPTIONS:
        group.addoption(f"--kerneldiff-{name}", dest=f"kerneldiff_{name}", default=None, metavar=name.upper(),
                        help=help_text)
        parser.addini(f"kerneldiff_{name}", help_text, default=default)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``kerneldiff`` marker."""
    config.addinivalue_line(
        "markers",
        "kerneldiff(serve=None, suite=None, seed=None, kernels=None, select=None, impl=None): settings of a test "
        "that takes the kerneldiff_case fixture: serve targets (default: the test's own file), suite, seed, "
        "kernels to keep (contract names), select (a Python regular expression the case id must match), impl",
    )
    config.stash[_STATE] = _State(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop every difftest run still going (after -x or an interrupt)."""
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


# --------------------------------------------------------------------------
# settings


@dataclasses.dataclass(frozen=True)
class Settings:
    """What one ``difftest run`` is started with; items of equal settings
    share a run.

    Attributes
    ----------
    difftest : str
        Path of the difftest binary.
    suite : str
        Suite name, TOML file or capture folder.
    seed : int
        Suite seed.
    impl : str
        The ``--impl`` value.
    args : tuple of str
        More ``difftest run`` flags.
    cwd : str
        Working directory of the run: where pytest was started, so the
        replay lines work from there.
    """

    difftest: str
    suite: str
    seed: int
    impl: str
    args: Tuple[str, ...]
    cwd: str


@dataclasses.dataclass(frozen=True)
class CaseInfo:
    """One case of a suite, as ``difftest list cases --json`` gives it.

    Attributes
    ----------
    case : str
        Case id, ``kernel/name``; the item's id.
    index : int
        Position in the expanded suite.
    kernel : str
        Contract name (``pipeline`` for a chained case).
    family : str
        Input family.
    file : str
        Suite file the case comes from.
    settings : Settings
        The run the case's verdict comes from.
    """

    case: str
    index: int
    kernel: str
    family: str
    file: str
    settings: Settings


def _setting(config: pytest.Config, name: str, marker_value: Any, marker_base: str = "") -> Tuple[str, str]:
    """A setting's value and the folder a relative path in it is relative
    to: the invocation folder for the command line, the test file's for
    the marker, the ini file's (else the rootdir) for the ini key."""
    cli = config.getoption(f"kerneldiff_{name}")
    if cli is not None:
        return str(cli), str(config.invocation_params.dir)
    if marker_value is not None:
        return str(marker_value), marker_base
    base = os.path.dirname(str(config.inipath)) if config.inipath else str(config.rootpath)
    return str(config.getini(f"kerneldiff_{name}")), base


def _path(value: str, base: str) -> str:
    """value made absolute against base when it names a file or folder there."""
    if value and base and not os.path.isabs(value):
        p = os.path.join(base, value)
        if os.path.exists(p):
            return os.path.abspath(p)
    return value


def _find_difftest(config: pytest.Config) -> str:
    given, base = _setting(config, "difftest", None)
    if not given:
        given, base = os.environ.get("KD_DIFFTEST", ""), str(config.invocation_params.dir)
    if given:
        given = _path(given, base)
        if os.sep not in given and not os.path.exists(given):
            given = shutil.which(given) or given
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise PluginError(f"kerneldiff: difftest binary {given!r} (--kerneldiff-difftest, kerneldiff_difftest "
                              "or KD_DIFFTEST) is not an executable file")
        return os.path.abspath(given)
    found = shutil.which("difftest")
    if found:
        return found
    local = os.path.join(str(config.rootpath), "build", "difftest")
    if os.path.isfile(local) and os.access(local, os.X_OK):
        return local
    raise PluginError("kerneldiff: no difftest binary: build it (make build/difftest) and name it with "
                      "--kerneldiff-difftest PATH, the kerneldiff_difftest ini key or KD_DIFFTEST")


def _marker_kwargs(marker: Optional[pytest.Mark]) -> Dict[str, Any]:
    if marker is None:
        return {}
    if marker.args:
        raise PluginError(f"@pytest.mark.kerneldiff takes keywords only (serve=, suite=, seed=, kernels=, select=, "
                          f"impl=), got positional {marker.args!r}")
    known = {"serve", "suite", "seed", "kernels", "select", "impl"}
    unknown = sorted(set(marker.kwargs) - known)
    if unknown:
        raise PluginError(f"@pytest.mark.kerneldiff: unknown keyword {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(known))})")
    return dict(marker.kwargs)


def _names(value: Any, what: str) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value):
        return list(value)
    raise PluginError(f"@pytest.mark.kerneldiff({what}=...): want a string or a list of strings, got {value!r}")


def _serve_impl(targets: Sequence[str], device: str) -> str:
    words = [sys.executable, "-m", "kerneldiff", "serve", *targets]
    if device:
        words += ["--device", device]
    return "serve:" + " ".join(shlex.quote(w) for w in words)


def _resolve(config: pytest.Config, module_file: str, marker: Optional[pytest.Mark],
             registered: Sequence[str]) -> Tuple[Settings, List[str], Optional[str]]:
    kw = _marker_kwargs(marker)
    here = os.path.dirname(module_file)
    suite = _path(*_setting(config, "suite", kw.get("suite"), here))
    seed_text, _ = _setting(config, "seed", kw.get("seed"))
    try:
        seed = int(seed_text)
        if seed < 0:
            raise ValueError
    except ValueError:
        raise PluginError(f"kerneldiff: seed {seed_text!r} is not a non-negative integer") from None
    impl, _ = _setting(config, "impl", kw.get("impl"))
    if not impl:
        targets = [_path(t, here) for t in _names(kw.get("serve"), "serve")]
        if not targets:
            if not registered:
                raise PluginError(
                    f"kerneldiff: {os.path.basename(module_file)} registers no kernel: decorate the op with "
                    "@kerneldiff.implements(NAME) in this file, name the file or module that does with "
                    "@pytest.mark.kerneldiff(serve=...), or give --kerneldiff-impl")
            targets = [module_file]
        impl = _serve_impl(targets, _setting(config, "device", None)[0])
    try:
        args = tuple(shlex.split(_setting(config, "args", None)[0]))
    except ValueError as e:
        raise PluginError(f"kerneldiff: --kerneldiff-args / kerneldiff_args: {e}") from None
    for a in args:
        flag = a.lstrip("-").split("=", 1)[0]
        if a.startswith("-") and flag in ("suite", "seed", "impl", "run", "json", "repeat", "shard"):
            raise PluginError(f"kerneldiff: --kerneldiff-args must not set -{flag}: the plugin sets it "
                              "(use --kerneldiff-suite/-seed/-impl, -k to select cases)")
        if a.startswith("-") and flag == "failfast":
            raise PluginError("kerneldiff: --kerneldiff-args must not set -failfast: the cases after the first "
                              "failure would have no verdict (pytest's -x stops the run instead)")
    settings = Settings(_find_difftest(config), suite, seed, impl, args, str(config.invocation_params.dir))
    kernels = _names(kw.get("kernels"), "kernels")
    select = kw.get("select")
    if select is not None:
        if not isinstance(select, str):
            raise PluginError(f"@pytest.mark.kerneldiff(select=...): want a regular expression string, got {select!r}")
        try:
            re.compile(select)
        except re.error as e:
            raise PluginError(f"@pytest.mark.kerneldiff(select={select!r}): {e}") from None
    return settings, kernels, select


# --------------------------------------------------------------------------
# collection


def _list_cases(state: "_State", settings: Settings) -> List[Dict[str, Any]]:
    key = (settings.difftest, settings.suite, settings.cwd)
    with state.lock:
        if key in state.listed:
            return state.listed[key]
    try:
        r = subprocess.run([settings.difftest, "list", "cases", "--suite", settings.suite, "--json"],
                           capture_output=True, text=True, timeout=120, cwd=settings.cwd)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PluginError(f"kerneldiff: {settings.difftest} list cases: {e}") from None
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip()
        if "--json goes with" in msg:
            msg += " (this difftest predates list cases --json: rebuild it)"
        raise PluginError(f"kerneldiff: suite {settings.suite!r}: difftest list cases exited {r.returncode}: {msg}")
    cases = []
    for line in r.stdout.splitlines():
        if line.strip():
            cases.append(json.loads(line))
    with state.lock:
        state.listed[key] = cases
    return cases


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Import each test module with an empty registry, so that two test
    files may each implement the same contract and a test's default serve
    target is its own file only when that file registers a kernel. The
    module's registrations are added back to the registry afterwards
    (where another module's do not already hold the kernel)."""
    if not isinstance(collector, pytest.Module):
        yield
        return
    from . import registry

    with registry._lock:
        saved = dict(registry._registry)
        registry._registry.clear()
    try:
        yield
    finally:
        with registry._lock:
            mine = dict(registry._registry)
            registry._registry.clear()
            registry._registry.update(saved)
            for k, v in mine.items():
                registry._registry.setdefault(k, v)
        state = collector.config.stash.get(_STATE, None)
        if state is not None:
            state.module_kernels[os.path.abspath(str(collector.path))] = sorted(mine)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize a test that takes ``kerneldiff_case`` over the suite's cases."""
    if FIXTURE not in metafunc.fixturenames:
        return
    from . import registry

    state: _State = metafunc.config.stash[_STATE]
    module_file = os.path.abspath(str(metafunc.definition.path))
    # A module's own functions are generated while it is collected (the
    # registry holds its registrations only); a class's, after.
    registered = state.module_kernels.get(module_file)
    if registered is None:
        registered = registry.kernels()
    try:
        settings, kernels, select = _resolve(metafunc.config, module_file,
                                             metafunc.definition.get_closest_marker(MARKER), registered)
        listed = _list_cases(state, settings)
    except PluginError as e:
        raise pytest.Collector.CollectError(str(e)) from None
    if kernels:
        known = {c["kernel"] for c in listed}
        missing = [k for k in kernels if k not in known]
        if missing:
            raise pytest.Collector.CollectError(
                f"kerneldiff: suite {settings.suite!r} has no case of {', '.join(missing)} "
                f"(its kernels: {', '.join(sorted(known))})")
    params = []
    for c in listed:
        if kernels and c["kernel"] not in kernels:
            continue
        if select is not None and not re.search(select, c["case"]):
            continue
        info = CaseInfo(c["case"], int(c["index"]), c["kernel"], c["family"], c.get("file", ""), settings)
        params.append(pytest.param(info, id=c["case"]))
    metafunc.parametrize(FIXTURE, params, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """Let ``-k`` match a case's input family as well as its id."""
    for item in items:
        info = _info(item)
        if info is not None:
            item.extra_keyword_matches.update(k for k in (info.family, info.kernel) if k)


def _info(item: pytest.Item) -> Optional[CaseInfo]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    v = callspec.params.get(FIXTURE)
    return v if isinstance(v, CaseInfo) else None


# --------------------------------------------------------------------------
# the fixture and the verdict


class KerneldiffCase:
    """One kerneldiff case as a test sees it (the ``kerneldiff_case`` fixture).

    Attributes
    ----------
    info : CaseInfo
        The case id, kernel, family and the run's settings.
    """

    def __init__(self, info: CaseInfo, item: pytest.Item, state: "_State") -> None:
        self.info = info
        self._item = item
        self._state = state
        self._record: Optional[Dict[str, Any]] = None
        self._run_cases = 0
        self._checked = False

    @property
    def id(self) -> str:
        """The case id, ``kernel/name``."""
        return self.info.case

    @property
    def record(self) -> Dict[str, Any]:
        """The case's JSON Lines record (docs/running.md, "Per-case
        record"); waits for the run to reach the case.

        Raises
        ------
        PluginError
            The run ended without a record of this case (difftest could
            not start, the implementation could not be served); the
            message holds the exit status and the end of difftest's output.
        """
        if self._record is None:
            self._record, self._run_cases = self._state.record(self.info, self._item)
        return self._record

    def check(self) -> None:
        """Fail or skip the running test by the case's verdict (once).

        A pass returns; a fail calls ``pytest.fail`` with the diagnosis, the
        first broken element and the replay line; a skip (a kernel the
        implementation does not offer, :class:`kerneldiff.Unsupported`)
        calls ``pytest.skip`` with the harness's reason. The record's
        details are added to the item's ``user_properties`` (JUnit).
        """
        if self._checked:
            return
        self._checked = True
        try:
            rec = self.record
        except PluginError as e:
            pytest.fail(str(e), pytrace=False)
        for name, value in _properties(rec):
            self._item.user_properties.append((name, value))
        # how many cases the difftest run that gave this verdict covered
        self._item.user_properties.append(("kerneldiff_run_cases", str(self._run_cases)))
        verdict = rec.get("verdict")
        if verdict == "pass":
            return
        if verdict == "skip":
            _skip(f"{rec.get('class') or 'not tested'}: {rec.get('message', '')}")
        pytest.fail(failure_message(rec, self._state.mutant_faults(self.info.settings)), pytrace=False)


def _skip(reason: str) -> None:
    """pytest.skip, reported at the test's location rather than this file's."""
    try:
        exc = pytest.skip.Exception(reason, allow_module_level=False, _use_item_location=True)
    except TypeError:  # a pytest without the keyword
        exc = pytest.skip.Exception(reason)
    raise exc


@pytest.fixture
def kerneldiff_case(request: pytest.FixtureRequest) -> KerneldiffCase:
    """The kerneldiff case of this item; a test that asks for it is
    parametrized over the suite's cases and checked against the case's
    verdict before its body runs.

    Returns
    -------
    KerneldiffCase
        The case; ``.record`` is its JSON Lines record.
    """
    info = getattr(request, "param", None)
    if not isinstance(info, CaseInfo):
        raise PluginError("kerneldiff_case is parametrized by the kerneldiff plugin only: do not parametrize it yourself")
    return KerneldiffCase(info, request.node, request.config.stash[_STATE])


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Optional[object]:
    """Check the case's verdict before the test's body runs (returns None,
    so pytest then calls the body as usual)."""
    case = pyfuncitem.funcargs.get(FIXTURE)
    if isinstance(case, KerneldiffCase):
        case.check()
    return None


def _properties(rec: Dict[str, Any]) -> List[Tuple[str, str]]:
    props = [("kerneldiff_case", rec.get("case", "")), ("kerneldiff_verdict", rec.get("verdict", ""))]
    for key in ("class", "key_metric", "seed", "generator_version", "input_sha256", "impl", "device",
                "kernel_time_ns", "wall_time_ns", "message", "diagnosis_note", "replay", "capture", "replay_capture"):
        v = rec.get(key)
        if v not in (None, ""):
            props.append((f"kerneldiff_{key}", str(v)))
    if rec.get("diagnosis"):
        props.append(("kerneldiff_diagnosis", ", ".join(rec["diagnosis"])))
    for name, v in sorted((rec.get("metrics") or {}).items()):
        props.append((f"kerneldiff_metric_{name}", json.dumps(v) if not isinstance(v, str) else v))
    for w in rec.get("warnings") or []:
        props.append(("kerneldiff_warning", w))
    return props


def _element(w: Dict[str, Any]) -> str:
    s = f"{w.get('tensor', '')}{w.get('index', '')}: got {w.get('got', '?')}, want {w.get('want', '?')}"
    if w.get("ratio"):
        s += f" (ratio {w['ratio']:.3g})" if isinstance(w["ratio"], (int, float)) else f" (ratio {w['ratio']})"
    return s


def failure_message(rec: Dict[str, Any], faults: Optional[Dict[str, str]] = None) -> str:
    """A failing record as the text of a pytest failure.

    Parameters
    ----------
    rec : dict
        A case record whose verdict is ``fail``.
    faults : dict, optional
        Mutant name → its fault (``difftest list mutants``), to say what a
        diagnosis means.

    Returns
    -------
    str
        ``CASE (seed N): CLASS: MESSAGE``, then the diagnosis, the first
        broken element, a few more, and the replay line, one per line.
    """
    lines = [f"{rec.get('case', '?')} (seed {rec.get('seed', '?')}): {rec.get('class', 'fail')}: {rec.get('message', '')}"]
    diag = rec.get("diagnosis") or []
    if diag:
        for d in diag:
            fault = (faults or {}).get(d)
            lines.append(f"  behaves like {d}: {fault}" if fault else f"  behaves like {d}")
    else:
        lines.append("  no diagnosis (behaves like no catalog mutant or semantic variant)")
    if rec.get("diagnosis_note"):
        lines.append(f"  diagnosis note: {rec['diagnosis_note']}")
    worst = rec.get("worst") or []
    if worst:
        lines.append(f"  first broken element: {_element(worst[0])}")
        for w in worst[1:SHOWN_WORST]:
            lines.append(f"  also: {_element(w)}")
        if len(worst) > SHOWN_WORST:
            lines.append(f"  ... {len(worst) - SHOWN_WORST} more worst elements in the record")
    for w in rec.get("warnings") or []:
        lines.append(f"  warning: {w}")
    if rec.get("replay"):
        lines.append(f"  replay: {rec['replay']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# runs


def _go_quote(s: str) -> str:
    """s as a literal in a Go (RE2) regular expression."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s)


class _Run:
    """One ``difftest run --json`` over a batch of case ids, read as it writes."""

    def __init__(self, settings: Settings, ids: Sequence[str], tmpdir: str) -> None:
        self.settings = settings
        self.ids = set(ids)
        fd, self.json_path = tempfile.mkstemp(prefix="kerneldiff-", suffix=".jsonl", dir=tmpdir)
        os.close(fd)
        self.log_path = self.json_path[: -len(".jsonl")] + ".log"
        run_re = "^(?:" + "|".join(_go_quote(i) for i in ids) + ")$"
        self.argv = [settings.difftest, "run", "--suite", settings.suite, "--seed", str(settings.seed),
                     "--impl", settings.impl, "--run", run_re, "--json", self.json_path, *settings.args]
        self._log = open(self.log_path, "wb")
        try:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                self.argv, cwd=settings.cwd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                start_new_session=True)
        except OSError as e:
            self._log.close()
            raise PluginError(f"kerneldiff: cannot start {settings.difftest}: {e}") from None
        self._file = open(self.json_path, "rb")
        self._partial = b""
        self.records: Dict[str, Dict[str, Any]] = {}
        self.lock = threading.Lock()

    def _read(self) -> None:
        chunk = self._file.read()
        if not chunk:
            return
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            o = json.loads(line)
            if o.get("type") == "case":
                self.records[o["case"]] = o

    def wait(self, case: str) -> Optional[Dict[str, Any]]:
        """The record of `case`, or None when the run ended without it."""
        with self.lock:
            while True:
                self._read()
                if case in self.records:
                    return self.records[case]
                if self.proc.poll() is not None:
                    self._read()
                    return self.records.get(case)
                time.sleep(0.01)

    def missing(self, case: str) -> str:
        self._log.flush()
        with open(self.log_path, "rb") as f:
            out = f.read().decode("utf-8", errors="replace").strip()
        if len(out) > _TAIL:
            out = "..." + out[-_TAIL:]
        cmd = " ".join(shlex.quote(a) for a in self.argv)
        return (f"kerneldiff: difftest exited {self.proc.returncode} without a verdict on {case}:\n{out}\n"
                f"  command: {cmd}")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._file.close()
        self._log.close()


class _State:
    """The plugin's per-session state: listed suites and the runs."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.lock = threading.Lock()
        self.listed: Dict[Tuple[str, str, str], List[Dict[str, Any]]] = {}
        self.runs: List[_Run] = []
        self.by_case: Dict[Tuple[Settings, str], _Run] = {}
        self.faults: Dict[str, Dict[str, str]] = {}
        self.module_kernels: Dict[str, List[str]] = {}
        self._tmp: Optional[str] = None

    def _tmpdir(self) -> str:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="kerneldiff-pytest-")
        return self._tmp

    def _batch(self, info: CaseInfo, item: pytest.Item) -> List[str]:
        """The case ids to run with `info`'s: every selected item of the
        same settings that this process will run and no run covers yet."""
        items = item.session.items
        pending = _xdist_pending(self.config)
        if pending is not None:
            items = [items[i] for i in pending if 0 <= i < len(items)]
        ids = [info.case]
        for it in items:
            other = _info(it)
            if other is not None and other.settings == info.settings and other.case != info.case \
                    and (info.settings, other.case) not in self.by_case and other.case not in ids:
                ids.append(other.case)
        return ids

    def record(self, info: CaseInfo, item: pytest.Item) -> Tuple[Dict[str, Any], int]:
        """The case's record and the number of cases its run covers,
        starting a run when none covers the case yet."""
        key = (info.settings, info.case)
        with self.lock:
            run = self.by_case.get(key)
            if run is None:
                run = _Run(info.settings, self._batch(info, item), self._tmpdir())
                self.runs.append(run)
                for c in run.ids:
                    self.by_case[(info.settings, c)] = run
        rec = run.wait(info.case)
        if rec is None:
            raise PluginError(run.missing(info.case))
        return rec, len(run.ids)

    def mutant_faults(self, settings: Settings) -> Dict[str, str]:
        with self.lock:
            if settings.difftest in self.faults:
                return self.faults[settings.difftest]
        faults: Dict[str, str] = {}
        try:
            r = subprocess.run([settings.difftest, "list", "mutants"], capture_output=True, text=True, timeout=60)
            for line in r.stdout.splitlines()[1:]:
                parts = re.split(r"\s{2,}", line.strip(), maxsplit=2)
                if len(parts) == 3:
                    faults[parts[1]] = parts[2]
        except (OSError, subprocess.TimeoutExpired):
            pass
        with self.lock:
            self.faults[settings.difftest] = faults
        return faults

    def close(self) -> None:
        for run in self.runs:
            run.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


def _xdist_pending(config: pytest.Config) -> Optional[List[int]]:
    """Under a pytest-xdist worker: the indices of the items it has been
    handed and not yet run (its queue), else None. Best effort: a worker
    whose queue cannot be read batches only the item at hand."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if torun is not None and hasattr(torun, "lock") and hasattr(plugin, "nextitem_index"):
            try:
                with torun.lock() as queue:
                    pending = [i for i in queue if isinstance(i, int)]
            except Exception:
                return []
            nxt = plugin.nextitem_index
            if isinstance(nxt, int):
                pending.insert(0, nxt)
            return pending
    return []


_STATE = pytest.StashKey[_State]()
