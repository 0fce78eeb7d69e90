"""Launchers of train.py's sweeps (`-m`): every job in a fresh process, on this machine or on Slurm.

    train.py -m experiment=gsm8k_main seed=0,1,2                          # hydra/launcher=local (the default)
    train.py -m experiment=gsm8k_main seed=0,1,2 hydra/launcher=slurm hydra.launcher.partition=gpu

Hydra's submitit launchers (hydra-submitit-launcher) with pods' settings (config/hydra/launcher/;
Hydra instantiates launchers only from the `hydra_plugins` namespace, hence this folder):
`LocalLauncher` runs one job after another, each in its own process, so no engine or GPU memory
of one job reaches the next, on the GPUs the caller's CUDA_VISIBLE_DEVICES chose; `SlurmLauncher` submits
every job at once as a Slurm array job whose trap requeues a job train.py stopped at the time limit, at most
`max_num_timeout` times.
Contract: a job's failure (`pods.cli.JobFailure`, returned by `HydraApp.job` in the job's process)
does not stop the others; after the last job the failures are raised as `pods.cli.SweepFailed`,
which `HydraApp.main` summarises (exit 2, or 1 after an unexpected error).
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from hydra.core.utils import JobReturn

from hydra_plugins.hydra_submitit_launcher import submitit_launcher
from pods.cli import JobFailure, SweepFailed, SweepRefused, job_label
from pods.errors import ConfigError

# The local job controller starts in a shell that ignores the terminal's Ctrl-C: submitit's controller would
# SIGKILL the job 1 s after it, mid-step. The job itself still gets Ctrl-C (pods.cli.HydraApp.job takes it back).
IGNORE_CTRL_C = "trap '' INT"
SLURM_TOOLS = ("sbatch", "srun")  # what submitting needs (submitit calls sacct / scontrol while it waits)
# Slurm's signal may come up to a minute early (it checks the time limit once a minute)
SIGNAL_SLACK_S = 60


def visible_devices(env=os.environ) -> str:
    """A shell line that gives the job the caller's CUDA_VISIBLE_DEVICES: submitit's local executor sets it to
    0..gpus_per_node-1, which would move a job the caller put on GPU 3 to GPU 0."""
    if "CUDA_VISIBLE_DEVICES" not in env:
        return "unset CUDA_VISIBLE_DEVICES"
    return f"export CUDA_VISIBLE_DEVICES={shlex.quote(env['CUDA_VISIBLE_DEVICES'])}"


def requeue_trap(timeout_min: float, signal_delay_s: int, max_requeues: int) -> list[str]:
    """Shell lines for the top of a Slurm job's script: requeue the job when train.py stopped at the time limit
    (exit 143 within signal_delay_s + SIGNAL_SLACK_S of it) and it was requeued fewer than max_requeues times
    (SLURM_RESTART_COUNT). A SIGTERM earlier than that (`scancel --signal=TERM`, a preemption) is not requeued by
    the trap: the job stops (Slurm itself requeues a preempted job under PreemptMode=REQUEUE; docs/long-runs.md)."""
    near_limit = int(timeout_min * 60) - int(signal_delay_s) - SIGNAL_SLACK_S
    return ["PODS_JOB_START=$(date +%s)",
            "trap 'code=$?; restarts=$SLURM_RESTART_COUNT; "
            f"if [ $code -eq 143 ] && [ $(( $(date +%s) - PODS_JOB_START )) -ge {near_limit} ] "
            f"&& [ \"${{restarts:-0}}\" -lt {int(max_requeues)} ]; "
            "then scontrol requeue \"$SLURM_JOB_ID\"; fi; exit $code' EXIT"]


def job_log(result: JobReturn, folder: str) -> Path:
    """The stderr log submitit wrote for the job of `result` (`folder`: the launcher's submitit_folder)."""
    job_id = str(result.hydra_cfg.hydra.job.id) if result.hydra_cfg is not None else "%j"
    return Path(folder.replace("%j", job_id)) / f"{job_id}_0_log.err"


def failures(results: Sequence[JobReturn], labels: Sequence[str], folder: str) -> list[JobFailure]:
    """The failed jobs among `results` (one per label), each with its log: a JobFailure the job returned, or
    an exception that escaped it (Hydra marked the job FAILED)."""
    found = []
    for result, label in zip(results, labels):
        try:
            value = result.return_value
        except Exception as err:  # noqa: BLE001 - reported like HydraApp.job reports it
            value = JobFailure(label, 1, f"{label}: unexpected {type(err).__name__}: {err}")
        if isinstance(value, JobFailure):
            found.append(replace(value, message=f"{value.message}\n  (the job's log: {job_log(result, folder)})"))
    return found


class LocalLauncher(submitit_launcher.LocalLauncher):
    """One job after another, each in its own process (submitit's local executor)."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.user_setup = list(self.params.get("setup") or [])

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        self.params["setup"] = [IGNORE_CTRL_C, visible_devices(), *self.user_setup]
        results, found, folder = [], [], str(self.params["submitit_folder"])
        for num, overrides in enumerate(job_overrides, start=initial_job_idx):
            label = job_label(num, overrides)
            try:
                done = super().launch([overrides], num)
            except Exception as err:  # noqa: BLE001 - the job's process died without a result (killed, crashed)
                found.append(JobFailure(label, 1, f"{label} ended without a result: {str(err).strip()[-2000:]}"))
                continue
            results += done
            found += failures(done, [label], folder)
        if found:
            raise SweepFailed(found, len(job_overrides))
        return results


class SlurmLauncher(submitit_launcher.SlurmLauncher):
    """Every job at once, as one Slurm array job (submitit's Slurm executor), with pods' requeue trap."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = self.params
        p["setup"] = [*requeue_trap(p["timeout_min"], p["signal_delay_s"], p["max_num_timeout"]), *(p.get("setup") or [])]

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        missing, jobs = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None], len(job_overrides)
        if missing:  # submitit's own error is a traceback ("Could not detect srun")
            raise SweepRefused(ConfigError(
                f"hydra/launcher=slurm submits the sweep's {jobs} job{'s' * (jobs != 1)} to Slurm, but "
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on this machine's PATH: run the "
                "command on a Slurm login node (or load its module), or leave hydra/launcher out to run the jobs "
                "here, one after another"))
        results = super().launch(job_overrides, initial_job_idx)
        labels = [job_label(num, o) for num, o in enumerate(job_overrides, start=initial_job_idx)]
        found = failures(results, labels, str(self.params["submitit_folder"]))
        if found:
            raise SweepFailed(found, len(job_overrides))
        return results
