"""Launchers of train.py's sweeps (`-m`): every job in a fresh process, on this machine or on Slurm.

    train.py -m experiment=gsm8k_main seed=0,1,2                          # hydra/launcher=local (the default)
    train.py -m experiment=gsm8k_main seed=0,1,2 hydra/launcher=slurm hydra.launcher.partition=gpu

Hydra's submitit launchers (hydra-submitit-launcher) with pods' settings (config/hydra/launcher/;
Hydra instantiates launchers only from the `hydra_plugins` namespace, hence this folder):
`LocalLauncher` runs one job after another, each in its own process, so no engine or GPU memory
of one job reaches the next; `SlurmLauncher` submits every job at once as a Slurm array job.
Contract: a job's failure (`pods.cli.JobFailure`, returned by `HydraApp.job` in the job's process)
does not stop the others; after the last job the failures are raised as `pods.cli.SweepFailed`,
which `HydraApp.main` summarises (exit 2, or 1 after an unexpected error).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from hydra.core.utils import JobReturn
from hydra_plugins.hydra_submitit_launcher import submitit_launcher

from pods.cli import JobFailure, SweepFailed, job_label

# The local job controller starts in a shell that ignores the terminal's Ctrl-C: submitit's controller would
# SIGKILL the job 1 s after it, mid-step. The job itself still gets Ctrl-C (pods.cli.HydraApp.job takes it back).
IGNORE_CTRL_C = "trap '' INT"


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
        self.params["setup"] = [IGNORE_CTRL_C]

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
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
    """Every job at once, as one Slurm array job (submitit's Slurm executor)."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        results = super().launch(job_overrides, initial_job_idx)
        labels = [job_label(num, o) for num, o in enumerate(job_overrides, start=initial_job_idx)]
        found = failures(results, labels, str(self.params["submitit_folder"]))
        if found:
            raise SweepFailed(found, len(job_overrides))
        return results
