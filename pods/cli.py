"""Error handling shared by the command-line programs: messages for our errors, tracebacks for bugs.

    sys.exit(pods.cli.run_script(main, program="speedup.py"))   # an argparse script, under __main__
    app = pods.cli.HydraApp("train.py")             # a Hydra program (train.py): app.main(main) under __main__,
    app.job(lambda: train(cfg), doing="training")   # and this inside the @hydra.main function
    with pods.cli.doing(f"loading {checkpoint}"): ...     # library code: what an unexpected error interrupted
    pods.cli.quiet_openmp(); pods.cli.set_cpu_threads()   # first in an entry point, before torch loads
    bar = pods.cli.progress(10, "leaderboard", "runs")    # counts and an ETA on stderr (tqdm), anything over ~30 s

Exit codes: 0 done; 2 a `pods.errors.PodsError` ("<program>: error: <message>", no traceback), Hydra's own
error, or a file system problem of a named path (a directory where a file should be, permissions, a full
disk); 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (one line; the program's children end first); 141 stdout closed
(`| head`: quietly); 1 anything else (its traceback, then what it was doing). docs/configuration.md.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from pods.errors import ConfigError, PodsError

DUPLICATE_SECONDS = 1.0  # the same signal sooner is the first delivered twice: uv run relays Ctrl-C ~0.2 s later
NOTE = "pods: while "  # prefix of the notes `doing` adds to an unexpected exception
THREADS_ENV = "PODS_THREADS"  # torch CPU threads, overriding the choice of `cpu_threads`


@contextmanager
def doing(what: str):
    """Add "while <what>" to an unexpected exception passing through (PodsErrors say it themselves)."""
    try:
        yield
    except PodsError:
        raise
    except Exception as exc:
        note(exc, what)
        raise


def note(exc: BaseException, what: str) -> None:
    """Add "while <what>" to `exc` (for an `except` clause that re-raises; `doing` for a `with` block)."""
    if not isinstance(exc, PodsError):
        exc.add_note(NOTE + what)


def activity(exc: BaseException, default: str = "") -> str:
    """What the program was doing when `exc` happened: its `doing` notes, innermost first."""
    notes = [n[len(NOTE):] for n in getattr(exc, "__notes__", []) if n.startswith(NOTE)]
    return ", ".join(notes) or default


def report_unexpected(program: str, exc: BaseException, default: str = "") -> None:
    """The traceback of `exc`, then one line: which program, which error, what it was doing."""
    traceback.print_exception(exc)
    what = activity(exc, default)
    print(f"{program}: unexpected {type(exc).__name__}" + (f" while {what}" if what else "")
          + "; the traceback above shows where. This is a bug or a problem of the environment, "
          "not of a setting: please report it with the traceback", file=sys.stderr)


def report_error(program: str, err: PodsError, where: str = "") -> None:
    say(f"{program}: error{where}: {err}")


def run_script(main: Callable, argv: list[str] | None = None, *, program: str, interrupted: str = "") -> int:
    """`main(argv)` of an argparse script -> exit code (its return value, 0 for None; else as in the module's
    docstring). `interrupted`: what the one line after Ctrl-C or a signal adds (e.g. how to resume)."""
    guard_streams()
    try:
        with signals_raise():
            try:
                code = main(argv)
            finally:
                flush_streams()  # a closed stdout surfaces here, inside the handlers below
    except ClosedPipe:
        return closed_pipe()
    except (KeyboardInterrupt, Stopped) as stop:
        return stopped(program, stop, interrupted)
    except PodsError as err:
        report_error(program, err)
        return err.exit_code
    except Exception as exc:  # noqa: BLE001 - reported with its traceback
        problem = environment_problem(exc)
        if problem:
            say(f"{program}: error: {problem}")
            return 2
        report_unexpected(program, exc, "running " + " ".join([program, *(sys.argv[1:] if argv is None else argv)]))
        return 1
    return 0 if code is None else int(code)


# ----------------------------------------------------------------------------- pipes, signals, the file system


class ClosedPipe(BaseException):
    """stdout or stderr was a pipe whose reader went away (`pods ... | head -1`); raised in place of BrokenPipeError
    so that no `except Exception` on the way turns it into an error report."""


class Stopped(BaseException):
    """SIGTERM or SIGHUP in a program under `signals_raise` (Ctrl-C is KeyboardInterrupt); args[0]: the signal."""

    @property
    def signum(self) -> int:
        return self.args[0]


class _Guarded:
    """A text stream whose BrokenPipeError (EPIPE) becomes ClosedPipe; everything else is the stream's own."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ClosedPipe() from None

    def flush(self):
        try:
            return self._stream.flush()
        except BrokenPipeError:
            raise ClosedPipe() from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def guard_streams() -> None:
    """Make a closed stdout / stderr raise ClosedPipe (idempotent; `run_script`, `HydraApp.main`, `pods`)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _Guarded):
            setattr(sys, name, _Guarded(stream))


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def closed_pipe() -> int:
    """After ClosedPipe: point the closed pipe at /dev/null (the interpreter's last flush must not fail again),
    say nothing, and return 141, the status of a program that SIGPIPE ended."""
    import select
    import stat

    for fd in (1, 2):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
                if any(event & select.POLLERR for _, event in poller.poll(0)):  # the write end of a pipe nobody reads
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, fd)
                    os.close(devnull)
        except OSError:
            pass
    return 128 + signal.SIGPIPE


def show(text: str) -> int:
    """Print `text` (a command's help) on stdout: 0, or 141 quietly when stdout is a closed pipe."""
    guard_streams()
    try:
        print(text, end="" if text.endswith("\n") else "\n", flush=True)
    except ClosedPipe:
        return closed_pipe()
    return 0


def say(line: str) -> None:
    """One line on stderr, unless stderr is gone (a closed pipe, a closed terminal)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ClosedPipe, ValueError):
        pass


def stopped(program: str, stop: BaseException, what: str = "") -> int:
    """The one line after Ctrl-C or a signal, and its exit code 128 + the signal's number."""
    signum = signal.SIGINT if isinstance(stop, KeyboardInterrupt) else stop.signum
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    say(f"{program}: stopped by {name}" + (f"; {what}" if what else ""))
    return 128 + signum


def _raise_stopped(signum, frame):
    raise Stopped(signum)


@contextmanager
def signals_raise():
    """SIGTERM and SIGHUP raise `Stopped` in the block (Ctrl-C raises KeyboardInterrupt), so that `finally`
    clauses and `subprocess.run` end the program's children; a signal that is ignored (nohup) stays ignored."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for s, handler in previous.items():
        if handler is signal.SIG_DFL:
            signal.signal(s, _raise_stopped)
    try:
        yield
    finally:
        for s, handler in previous.items():
            if handler is signal.SIG_DFL:
                signal.signal(s, handler)


FILE_SYSTEM = {  # errno -> what it means for the path it names
    "EISDIR": "is a directory where a file was expected: move it aside",
    "ENOTDIR": "is not a directory (a file stands where a directory was expected): move it aside or choose "
               "another path",
    "EEXIST": "exists and is not a directory (a directory was expected there): move it aside or choose another path",
    "EACCES": "permission denied: fix the permissions or choose another path",
    "EPERM": "operation not permitted: fix the permissions or choose another path",
    "EROFS": "is on a read-only file system: choose a writable path",
    "ENOSPC": "no space left on device: free some space or choose another path",
    "EDQUOT": "disk quota exceeded: free some space or choose another path",
    "ENAMETOOLONG": "file name too long: choose a shorter path",
}


def environment_problem(exc: BaseException) -> str | None:
    """'<path>: is a directory where a file was expected: ...' for an OSError of the file system that names its
    path (a problem of the machine the user can fix, not a bug), plus what the program was doing; else None."""
    import errno

    if not isinstance(exc, OSError) or exc.filename is None:
        return None
    meaning = FILE_SYSTEM.get(errno.errorcode.get(exc.errno, ""))
    if meaning is None:
        return None
    what = activity(exc)
    return f"{exc.filename}: {meaning}" + (f" (while {what})" if what else "")


def out_dir(text: str):
    """argparse type of an output directory (created when missing): refuses a path that is a file, before
    anything is written."""
    import argparse
    from pathlib import Path

    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; give a directory (it is created if missing)")
    return path


def progress(total: int, what: str, units: str, *, initial: int = 0, enabled: bool = True):
    """A tqdm bar on stderr, "<what>:  40%|####  | 4/10 runs [01:02<01:33, 15.52s/runs]": counts, elapsed and the
    time left; `initial` counts what was done before (skipped), without taking part in the ETA. Written to a file
    or a pipe (not a terminal): a line every 30 s at most."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=what, unit=f" {units}", disable=not enabled, dynamic_ncols=True,
                file=sys.stderr, mininterval=0.1 if sys.stderr.isatty() else 30,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}<{remaining}, "
                           "{rate_fmt}]")


def quiet_openmp(environ=os.environ) -> None:
    """Idle OpenMP threads sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE unless set). OpenMP reads
    it once, when torch loads: after that it is left alone, so the environment says what torch uses."""
    if "torch" not in sys.modules:
        environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def cpu_threads(environ=os.environ) -> int | None:
    """torch's CPU thread count: PODS_THREADS (a positive integer, else ConfigError); else None (torch's
    default, one per core) when idle threads sleep (OMP_WAIT_POLICY=PASSIVE); else 1."""
    text = environ.get(THREADS_ENV)
    if text is None:
        return None if environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE" else 1
    if not text.strip().isdigit() or int(text) < 1:
        raise ConfigError(f"{THREADS_ENV}={text!r}: must be a positive integer (torch CPU threads), or unset for "
                          "the default (docs/development.md)")
    return int(text)


def set_cpu_threads(environ=os.environ) -> int:
    """Apply `cpu_threads(environ)` to torch; returns the thread count torch now uses."""
    import torch

    threads = cpu_threads(environ)
    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def check_overrides(program: str, argv: list[str]) -> None:
    """Exit 2 naming each command-line override Hydra's grammar cannot parse (Hydra's own message does
    not say which one); arguments without "=" and flags are left to Hydra."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    bad = []
    for arg in argv:
        if "=" in arg and not arg.startswith("-"):
            try:
                parser.parse_override(arg)
            except HydraException as err:  # OverrideParseException, or a bare HydraException
                bad.append(f"cannot parse {arg!r}: {str(err).splitlines()[0]}")
    if bad:
        print(f"{program}: error: " + "\n  - ".join(["invalid command line:", *bad])
              + "\nquote values with special characters, e.g. 'key=\"a b\"' "
              "(https://hydra.cc/docs/advanced/override_grammar/basic/)", file=sys.stderr)
        sys.exit(2)


@dataclass(frozen=True)
class JobFailure:
    """A failed sweep job, as its process reported it (picklable: it travels back from a job's process)."""

    label: str  # "job 1 (rl.n=4.5)"
    code: int  # 2: a problem the user can fix; 1: an unexpected error
    message: str  # what the job printed (its last line for an unexpected error, the traceback is in its log)


class SweepFailed(SystemExit):
    """Raised by a launcher whose jobs ran in other processes, after the last one: their failures."""

    def __init__(self, failures: list[JobFailure], jobs: int):
        super().__init__(sweep_exit_code(failures))
        self.failures, self.jobs = failures, jobs


class SweepRefused(SystemExit):
    """A launcher's PodsError before any job ran, raised past Hydra's own report (which prints a traceback)."""

    def __init__(self, error: PodsError):
        super().__init__(error.exit_code)
        self.error = error


def sweep_exit_code(failures: list[JobFailure]) -> int:
    """A failed sweep's exit code: 1 when a job met an unexpected error (a bug), else 2 (a setting to fix)."""
    return 1 if any(f.code == 1 for f in failures) else 2


class HungUp(BaseException):
    """SIGHUP (the terminal closed) outside the training loop, which handles it itself (pods.run.guard)."""


def _hung_up(signum, frame):
    raise HungUp()


class HydraApp:
    """A Hydra program's error handling; `job` runs inside the @hydra.main function, `main` around it."""

    def __init__(self, program: str, interrupted: str = ""):
        self.program = program
        self.interrupted = interrupted  # the line after Ctrl-C outside a training loop; default: a sweep's
        self.jobs = 0
        self.failed: list[JobFailure] = []  # failed sweep jobs that ran in this process

    def job(self, task: Callable[[], object], *, doing: str = "") -> JobFailure | None:
        """Run one (sweep) job; a failure exits at once in a single run, is recorded and returned in a sweep."""
        self.jobs += 1
        job = sweep_job()
        label = job_label(*job) if job else None
        if label is not None and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # its launcher's shell ignored Ctrl-C
        try:
            task()
            return None
        except PodsError as err:
            where = f" in sweep {label}" if label else ""
            failure = JobFailure(label or "", err.exit_code, f"{self.program}: error{where}: {err}")
            say(failure.message)
        except Exception as exc:  # noqa: BLE001 - reported with its traceback
            problem = environment_problem(exc)
            if problem:  # a path of the file system to fix (a directory where a file was expected, a full disk)
                where = f" in sweep {label}" if label else ""
                failure = JobFailure(label or "", 2, f"{self.program}: error{where}: {problem}")
                say(failure.message)
            else:
                report_unexpected(self.program, exc, doing)
                failure = JobFailure(label or "", 1, f"{self.program}: unexpected {type(exc).__name__}: {exc}")
        if label is None:
            sys.exit(failure.code)
        self.failed.append(failure)
        return failure  # a launcher running this job in its own process hands it back (hydra_plugins/pods_launcher)

    def main(self, hydra_main: Callable[[], object]) -> None:
        """Call the @hydra.main function; exit 2 on Hydra's own errors, summarise failed sweep jobs."""
        guard_streams()
        check_overrides(self.program, sys.argv[1:])
        previous = signal.getsignal(signal.SIGHUP)  # SIG_IGN under nohup: left ignored
        if previous is signal.SIG_DFL:
            signal.signal(signal.SIGHUP, _hung_up)  # a message and exit 129 rather than a silent death
        try:
            try:
                hydra_main()
            finally:
                flush_streams()  # a closed stdout (`| head`) surfaces here, inside the handlers below
            jobs, failed = self.jobs, self.failed
        except ClosedPipe:
            sys.exit(closed_pipe())
        except SweepFailed as stop:  # the jobs ran in their own processes, their messages are in their logs
            for failure in stop.failures:
                say(failure.message)
            jobs, failed = stop.jobs, stop.failures
        except SweepRefused as stop:
            report_error(self.program, stop.error)
            sys.exit(stop.code)
        except SystemExit as stop:
            if stop.code == 1 and self.jobs == 0:  # Hydra printed why it could not compose the config
                sys.exit(2)
            raise
        except ValueError as err:  # before any job: Hydra's own flags (--cfg with -m), a job reports its own
            if self.jobs:
                raise
            say(f"{self.program}: error: {err}")
            sys.exit(2)
        except KeyboardInterrupt:  # Ctrl-C in a sweep's own process (a job handles it in its process)
            if self.interrupted:
                sys.exit(stopped(self.program, KeyboardInterrupt(), self.interrupted))
            say(f"{self.program}: interrupted; a job in progress saves its step before it stops; rerun the "
                "same command to resume (finished jobs have nothing left to do)")
            sys.exit(130)
        except HungUp:  # outside a training loop (which saves its step itself, pods.run.guard)
            said = ("a sweep job in progress saves its step before it stops; rerun the same command to resume "
                    "(finished jobs have nothing left to do)") if self.jobs == 0 else \
                "nothing was trained in this attempt; rerun the same command to continue"
            say(f"{self.program}: stopped by SIGHUP (the terminal closed); {said}")  # unless the terminal is gone
            sys.exit(128 + signal.SIGHUP)
        finally:
            if previous is signal.SIG_DFL:
                signal.signal(signal.SIGHUP, previous)
        if failed:
            names = "; ".join(f.label for f in failed)
            say(f"{self.program}: {len(failed)} of {jobs} sweep jobs failed: {names}")
            sys.exit(sweep_exit_code(failed))


def sweep_job() -> tuple[int, list[str]] | None:
    """(job number, its overrides) inside a -m sweep's job, None in a single run (or outside Hydra)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
    except (ImportError, ValueError):
        return None
    if hc.mode != RunMode.MULTIRUN:
        return None
    return int(hc.job.num), list(hc.overrides.task)


def job_label(num: int, overrides) -> str:
    """'job 1 (rl.n=4.5)': a sweep job's number and its overrides."""
    return f"job {num} ({' '.join(overrides)})"
