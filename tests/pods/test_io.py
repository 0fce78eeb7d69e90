"""Atomic writes: new content appears whole; a failed write leaves the old file and no temp file. The lock."""

import json
import os

import pytest

from pods.io import atomic_write_json, atomic_write_text


def test_writes_and_replaces(tmp_path):
    path = tmp_path / "sub" / "results.json"
    atomic_write_json(path, {"a": [1, 2]})
    assert json.loads(path.read_text()) == {"a": [1, 2]}
    atomic_write_text(path, "replaced\n")
    assert path.read_text() == "replaced\n"
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "results.json"
    atomic_write_text(path, "old")
    with pytest.raises(TypeError):
        atomic_write_json(path, {"not serialisable": object()})
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_new_files_honour_the_umask_and_replaced_files_keep_their_mode(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.yaml", "x")
        assert stat.S_IMODE((tmp_path / "a.yaml").stat().st_mode) == 0o644  # not mkstemp's 0600
        os.umask(0o077)
        atomic_write_text(tmp_path / "b.yaml", "x")
        assert stat.S_IMODE((tmp_path / "b.yaml").stat().st_mode) == 0o600
        os.chmod(tmp_path / "a.yaml", 0o664)
        atomic_write_text(tmp_path / "a.yaml", "y")  # like open(path, "w"): the mode stays
        assert stat.S_IMODE((tmp_path / "a.yaml").stat().st_mode) == 0o664
    finally:
        os.umask(old)


def test_a_directory_a_library_wrote_gets_the_modes_of_the_umask(tmp_path):
    import stat

    import torch
    from safetensors.torch import save_file

    from pods.io import honour_umask

    old = os.umask(0o022)
    try:
        (tmp_path / "d" / "sub").mkdir(parents=True)
        os.chmod(tmp_path / "d", 0o700)  # as tempfile.mkdtemp makes it
        save_file({"w": torch.zeros(2)}, str(tmp_path / "d" / "sub" / "model.safetensors"))  # safetensors: 0600
        (tmp_path / "d" / "run.sh").write_text("#!/bin/sh\n")
        os.chmod(tmp_path / "d" / "run.sh", 0o700)
        assert stat.S_IMODE((tmp_path / "d" / "sub" / "model.safetensors").stat().st_mode) == 0o600
        honour_umask(tmp_path / "d")
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [tmp_path / "d", *(tmp_path / "d").rglob("*")]}
        assert modes == {"d": 0o755, "sub": 0o755, "model.safetensors": 0o644, "run.sh": 0o755}
    finally:
        os.umask(old)


def test_a_failed_write_says_cause_and_path_and_keeps_the_old_file(tmp_path, monkeypatch):
    import errno
    import os

    from pods.io import WriteError

    path = tmp_path / "eval_results.json"
    atomic_write_json(path, {"old": 1})

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError) as err:
        atomic_write_json(path, {"new": 2})
    assert str(err.value) == f"no space left on device: {path}" and err.value.errno == errno.ENOSPC
    assert isinstance(err.value, OSError) and err.value.disk_full
    assert json.loads(path.read_text()) == {"old": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["eval_results.json"]


def test_os_errors_wrapped_by_torch_and_safetensors_are_found(tmp_path):
    """Real failing writes (a file size limit, EFBIG) through torch.save and safetensors in a child process."""
    import subprocess
    import sys

    script = f"""
import resource, signal, torch
from safetensors.torch import save_file
from pods.io import WriteError, writing
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
x = torch.zeros(100000)
for name, save in [("a.pt", lambda p: torch.save(x, open(p, "wb"))), ("b.safetensors", lambda p: save_file({{"x": x}}, p))]:
    try:
        with writing({str(tmp_path)!r} + "/" + name):
            save({str(tmp_path)!r} + "/" + name)
    except WriteError as e:
        print(e)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines() == [f"file too large: {tmp_path}/a.pt", f"file too large: {tmp_path}/b.safetensors"], out.stderr


HOLD = """
import sys, time
from pathlib import Path
from pods.io import exclusive_lock
with exclusive_lock(Path(sys.argv[1]), "the thing", "wait"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def holder(path, seconds=600):
    """A real second process holding the lock on `path`; returns once it holds it."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_is_refused_with_the_holders_pid_and_host(tmp_path):
    import socket

    from pods.io import LockedError, exclusive_lock

    lock = tmp_path / ".lock"
    proc = holder(lock)
    try:
        with pytest.raises(LockedError) as err:
            with exclusive_lock(lock, "run directory x", "choose another run_name"):
                pass
        msg = str(err.value)
        assert f"run directory x is in use by another process (pid {proc.pid} on host {socket.gethostname()}" in msg
        assert msg.endswith("; choose another run_name")
    finally:
        proc.terminate()
        proc.wait()
    with exclusive_lock(lock, "run directory x", ""):  # free once it ended (SIGTERM: not even its finally ran)
        assert f"pid {os.getpid()} " in lock.read_text()
    assert not lock.exists()  # removed on release


def test_a_killed_holder_leaves_no_lock(tmp_path):
    import signal

    from pods.io import exclusive_lock

    lock = tmp_path / ".lock"
    proc = holder(lock)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert lock.exists()  # the file stays, the lock does not
    with exclusive_lock(lock, "x", ""):
        assert f"pid {os.getpid()} " in lock.read_text()


def test_released_locks_can_be_taken_again_in_the_same_process(tmp_path):
    from pods.io import LockedError, exclusive_lock

    lock = tmp_path / ".lock"
    with exclusive_lock(lock, "x", ""):
        with pytest.raises(LockedError):  # the same process twice is refused too
            with exclusive_lock(lock, "x", ""):
                pass
    with pytest.raises(RuntimeError):
        with exclusive_lock(lock, "x", ""):
            raise RuntimeError("boom")
    with exclusive_lock(lock, "x", ""):
        pass
    assert list(tmp_path.iterdir()) == []


def _flock_failing_with(code):
    """A flock as a file system without locks answers it (NFS without a lock manager: ENOLCK; Lustre without
    `-o flock` or a FUSE file system: EOPNOTSUPP / ENOSYS)."""
    def flock(fd, operation):
        raise OSError(code, os.strerror(code))
    return flock


@pytest.mark.parametrize("code", ["ENOLCK", "EOPNOTSUPP", "ENOSYS"])
def test_a_file_system_without_flock_is_refused_naming_it_and_the_setting(tmp_path, code, capsys):
    import errno

    from pods.io import NoLockError, exclusive_lock, file_system

    lock = tmp_path / ".lock"
    with pytest.raises(NoLockError) as err:
        with exclusive_lock(lock, f"run directory {tmp_path}", "", lock=_flock_failing_with(getattr(errno, code))):
            pass
    assert str(err.value) == (
        f"cannot lock {lock}: its file system ({file_system(tmp_path)}) does not support file locks (flock: "
        f"{os.strerror(getattr(errno, code)).lower()}), so nothing would keep a second process from writing run "
        f"directory {tmp_path} at the same time. Mount it with locking (Lustre: the `flock` mount option; NFS: the "
        "server's lock manager, lockd / statd for NFSv3), use a local or locking file system, or set PODS_LOCK=off "
        "to run without the lock (then start only one process per run directory yourself)")
    assert not lock.exists()  # nothing left behind
    with exclusive_lock(lock, "run directory x", "", lock=_flock_failing_with(getattr(errno, code)),
                        environ={"PODS_LOCK": "off"}):  # the setting: no lock at all, with a warning
        assert not lock.exists()
    assert capsys.readouterr().err == "warning: PODS_LOCK=off: run directory x is not locked; make sure no other " \
                                      "process writes it\n"


def test_the_file_system_is_named_from_mountinfo(tmp_path):
    from pods.io import NoLockError, exclusive_lock, file_system

    mounts = {line.split()[4]: line.split()[line.split().index("-") + 1] for line in open("/proc/self/mountinfo")}
    assert file_system("/proc/self") == f"{mounts['/proc']} at /proc"
    assert file_system(tmp_path).split(" at ")[0] in mounts.values()
    with pytest.raises(NoLockError, match=r"PODS_LOCK='maybe': must be on \(the default\) or off"):
        with exclusive_lock(tmp_path / ".lock", "x", "", environ={"PODS_LOCK": "maybe"}):
            pass
