"""Atomic file writes, and write failures reported as "<cause>: <path>" instead of a library traceback.

    atomic_write_json(run_dir / "eval_results.json", results)
    atomic_write_text(run_dir / "config.yaml", text)
    with writing(path): torch.save(obj, f)      # any failure that is an OS error -> WriteError
    with exclusive_lock(path, "run directory x", hint): ...   # LockedError at once while another process holds it
                                                              # (NoLockError: a file system without flock)
    user_cache("models")                    # ~/.cache/pods/models ($PODS_CACHE_DIR, else $XDG_CACHE_HOME/pods)
    publish_dir(final, fill, "gguf.json")   # a cache directory: filled aside, checksummed, renamed into place
    problem = checksum_problem(final, "gguf.json", required=("model.safetensors",))  # None: every file intact
    discard_dir(final)                      # a damaged one: renamed aside, then removed

A write goes to a temporary file beside the target, is flushed to disk and renamed over it (`os.replace`): on any
error the old target is left untouched. A new file gets the mode `open(path, "w")` would give it (`honour_umask`
does the same for a directory a library wrote). A failed write
(disk full, permission, I/O, quota) raises `WriteError`, an OSError and a PodsError: "no space left on device: x".
"""

from __future__ import annotations

import errno as errno_codes
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, TextIO

from pods.errors import PodsError

_OS_ERROR_IN_TEXT = re.compile(r"\(os error (\d+)\)")  # Rust's io::Error: a SafetensorError ends in "(os error 28)"


class WriteError(PodsError, OSError):
    """Writing `path` failed; str() is "<cause>: <path>", e.g. "no space left on device: x/metrics.jsonl"."""

    def __init__(self, path: str | Path, cause: OSError):
        code = cause.errno
        reason = (os.strerror(code) if code else str(cause)).lower()
        super().__init__(code, reason, str(path))
        self.path, self.reason = Path(path), reason

    def __str__(self) -> str:
        return f"{self.reason}: {self.path}"

    @property
    def disk_full(self) -> bool:
        return self.errno in (errno_codes.ENOSPC, errno_codes.EDQUOT)


class LockedError(PodsError):
    """Another process holds the lock; str() names the locked thing, the holder (PID, host) and what to do."""


class NoLockError(PodsError):
    """The file system cannot lock (flock fails with ENOLCK / EOPNOTSUPP / ENOSYS); str() names it and the fix."""


LOCK_ENV = "PODS_LOCK"  # "off": no exclusive_lock (a file system without flock, and no way to mount it with one)
NO_FLOCK = (errno_codes.ENOLCK, errno_codes.EOPNOTSUPP, errno_codes.ENOTSUP, errno_codes.ENOSYS)


def file_system(path: str | Path) -> str:
    """'nfs4 at /shared' (type and mount point of the mount holding `path`, from /proc/self/mountinfo), or
    'unknown' where that cannot be read."""
    target, best = os.path.realpath(path), ("unknown", "")
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return best[0]
    for line in lines:
        fields = line.split()
        if "-" not in fields:
            continue
        mount = fields[4].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best[1]):
            best = (f"{fields[fields.index('-') + 1]} at {mount}", mount)
    return best[0]


def os_error_in(exc: BaseException) -> OSError | None:
    """The OSError that caused `exc` (itself, one in its __cause__/__context__ chain, or "(os error N)"
    in a wrapped library's message), or None when `exc` is not a failed system call."""
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno is not None:
            return e
        found = _OS_ERROR_IN_TEXT.search(str(e))
        if found:
            code = int(found.group(1))
            return OSError(code, os.strerror(code))
        e = e.__cause__ or e.__context__  # torch.save raises a RuntimeError whose __context__ is the OSError
    return None


@contextmanager
def writing(path: str | Path):
    """Turn a failure inside the block that comes from the OS into `WriteError(path, ...)`."""
    try:
        yield
    except WriteError:
        raise
    except Exception as exc:
        cause = os_error_in(exc)
        if cause is None:
            raise
        raise WriteError(path, cause) from exc


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode(path: str | Path) -> int:
    """The mode `open(path, "w")` would leave: the existing file's, else 0666 minus the umask (so teammates on a
    shared cluster can read configs and results)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def honour_umask(directory: str | Path) -> None:
    """Give `directory` and everything under it the modes a plain `mkdir` / `open(path, "w")` gives: 0777 / 0666
    (0777 where an execute bit was set) minus the umask. Libraries write private files: safetensors 0600,
    tempfile.mkdtemp 0700; a teammate must be able to read, evaluate and resume a run."""
    mask = _umask()
    for root, _, files in os.walk(directory):
        os.chmod(root, 0o777 & ~mask)
        for name in files:
            path = os.path.join(root, name)
            executable = os.stat(path).st_mode & 0o111
            os.chmod(path, (0o777 if executable else 0o666) & ~mask)


def atomic_write(path: str | Path, write: Callable[[TextIO], None]) -> None:
    """Replace `path` with what `write(file)` writes, atomically; WriteError when the OS refuses."""
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = new_file_mode(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                os.fchmod(f.fileno(), mode)  # not mkstemp's 0600
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text))


def atomic_write_json(path: str | Path, data, indent: int = 1) -> None:
    atomic_write(path, lambda f: json.dump(data, f, indent=indent))


def _holder(fd: int) -> str:
    """What a lock file says about its holder ("pid 12 on host x since 18:02:11"), or that it says nothing yet."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "a process that has not yet written its PID"


def _no_lock(path: Path, what: str, err: OSError) -> NoLockError:
    return NoLockError(
        f"cannot lock {path}: its file system ({file_system(path.parent)}) does not support file locks "
        f"(flock: {os.strerror(err.errno).lower()}), so nothing would keep a second process from writing {what} at "
        "the same time. Mount it with locking (Lustre: the `flock` mount option; NFS: the server's lock manager, "
        f"lockd / statd for NFSv3), use a local or locking file system, or set {LOCK_ENV}=off to run without the "
        "lock (then start only one process per run directory yourself)")


@contextmanager
def exclusive_lock(path: str | Path, what: str, hint: str, *, lock=fcntl.flock, environ=os.environ):
    """Hold an exclusive flock on `path` (created naming this process's PID and host, removed on release) for
    the block; LockedError "<what> is in use by <holder>; <hint>" at once when another process holds it. The OS
    drops the lock when its process dies, however it dies. NoLockError when the file system cannot lock (NFS
    without a lock manager, Lustre without `-o flock`), unless PODS_LOCK=off in `environ` (a warning, no lock).
    `lock`: the flock call (a test passes one that fails as such a file system does)."""
    path = Path(path)
    setting = environ.get(LOCK_ENV, "on")
    if setting not in ("on", "off"):
        raise NoLockError(f"{LOCK_ENV}={setting!r}: must be on (the default) or off")
    if setting == "off":
        print(f"warning: {LOCK_ENV}=off: {what} is not locked; make sure no other process writes it", file=sys.stderr)
        yield
        return
    while True:
        with writing(path):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            lock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise LockedError(f"{what} is in use by another process ({holder}; lock file {path}); {hint}") from None
        except OSError as err:
            os.close(fd)
            if err.errno not in NO_FLOCK:
                raise WriteError(path, err) from err
            _remove(path)
            raise _no_lock(path, what, err) from None
        try:  # the previous holder may have removed the file between our open and flock: lock the new one
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        with writing(path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
                      .encode(), 0)
        yield
    finally:
        _remove(path)  # while still holding the lock (see the inode check above)
        os.close(fd)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def user_cache(*parts: str) -> Path:
    """pods' cache on this machine, shared by every checkout and working directory (converted models, the demo's
    warm start): $PODS_CACHE_DIR, else $XDG_CACHE_HOME/pods, else ~/.cache/pods; then `parts`."""
    root = os.environ.get("PODS_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pods"
    return Path(root).expanduser().joinpath(*parts)


def sha256(path: str | Path) -> str:
    """The file's sha256 hex digest, read in chunks."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def checksum_problem(directory: Path, info_file: str, required: tuple[str, ...] = ()) -> str | None:
    """Why the files `directory/info_file` lists ({"files": {name: sha256}}) cannot be trusted, else None."""
    try:
        files = json.loads((directory / info_file).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"{info_file} is missing, unreadable or without checksums ({type(err).__name__})"
    if not isinstance(files, dict) or not files:
        return f"{info_file} lists no files"
    for name in required:
        if name not in files:
            return f"{info_file} lists no {name}"
    for name, digest in files.items():
        f = directory / str(name)
        if not f.is_file():
            return f"{name} is missing"
        if sha256(f) != digest:
            return f"{name} does not match its checksum ({f.stat().st_size} bytes; truncated or changed)"
    return None


def publish_dir(final: Path, fill: Callable[[Path], dict], info_file: str) -> None:
    """Create the directory `final` whole or not at all: `fill(tmp)` writes its files into a hidden directory beside
    it and returns the info, written to `info_file` with every file's sha256 under "files"; then one rename.
    A failed write is a WriteError naming `final`; if another process published `final` first, theirs is kept."""
    with writing(final):
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        with writing(final):  # a full disk: "no space left on device: <final>", nothing left half-written
            info = fill(tmp)
            files = {p.name: sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
            (tmp / info_file).write_text(json.dumps({**info, "files": files}, indent=1), encoding="utf-8")
            honour_umask(tmp)  # shareable like any directory, not mkdtemp's 0700 or safetensors' 0600
        try:
            os.rename(tmp, final)
        except OSError:
            if checksum_problem(final, info_file) is not None:
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def discard_dir(directory: Path) -> None:
    """Remove a damaged directory, renamed aside first so no process sees it half-deleted."""
    aside = directory.with_name(f".{directory.name}.damaged-{os.getpid()}")
    try:
        os.rename(directory, aside)
    except FileNotFoundError:  # another process discarded it first
        return
    shutil.rmtree(aside, ignore_errors=True)
