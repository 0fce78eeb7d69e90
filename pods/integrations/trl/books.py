"""PODSTrainer's books: the cost ledger in TRL's logs, the token budget's stop and the rollout ledger (main process).

    books = PODSBooks(budget=2e6, weight=2.0, metrics=trainer._metrics["train"], total=sum_over_processes)
    trainer.add_callback(books)
    books.generated(lengths=[...], rollouts_trained=64, prompts_skipped=3, rounds=2, trained_tokens=812)
    books.record(step, rows)                  # pods.core.ledger rows, main process only; books.flush() before saves

Contract: each optimizer step's cost/* counts (pods.core.cost.cost_metrics) go into TRL's logged metrics and the
running totals into every train log; the totals are saved in trainer_state.json (`stateful_callbacks.PODSBooks`)
and continue on resume. The run stops after the first step whose cost, pods.core.cost.spent, reaches the budget
(as train.py), and that step is checkpointed. Tokens trained under a token mask are counted in the loss
(`trained(k)`, this process's) and summed over processes at the step's end. The rollout ledger opens when training
begins, as train.py's (pods.core.ledger_writer): a resume from checkpoint-<k> reads <run dir>/ledger/ back against
the run and the ledger id the checkpoint recorded (`ledger_id`, set from its lab.pt) and drops rows past k; damage or
another run's ledger is one CheckpointError, nothing changed. With the ledger off, an existing one records the
steps as a gap (switch_off).
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

from pods.core.cost import COST_TOTAL, cost_metrics, spent
from pods.core.ledger_writer import Ledger, switch_off
from pods.errors import CheckpointError
from pods.integrations.trl.lab_settings import in_trl_names


class PODSBooks(TrainerCallback, ExportableState):
    """Cost ledger, token budget, rollout ledger (see the module docstring)."""

    def __init__(self, *, budget: float | None = None, weight: float = 1.0, metrics=None, total=None,
                 main: bool = True, run_dir: str | Path | None = None, ledger_meta: dict | None = None):
        self.budget, self.weight, self.metrics, self.total, self.main = budget, weight, metrics, total, main
        self.totals: dict = {}  # COST_TOTAL running totals up to the last finished step
        self.row: dict | None = None  # the last finished step's cost/* keys
        self._pending: dict | None = None  # the generation counts of the step in progress
        self._masked = 0  # tokens trained under a token mask, this process, this step (None: no mask)
        self.run_dir, self.ledger_meta, self.ledger = run_dir, ledger_meta, None  # <run dir>/ledger/ (meta None: off)
        self.ledger_id: str | None = None  # the id the checkpoint resumed from recorded (pods.core.ledger_writer)

    # ----------------------------------------------------------------------------------------- cost ledger

    def generated(self, *, lengths: list[torch.Tensor], rollouts_trained: int, prompts_skipped: int, rounds: int,
                  trained_tokens: float | None) -> None:
        """A generation step's counts (every process alike); trained_tokens None: counted in the loss (token mask)."""
        before = self._pending or {"lengths": [], "rollouts_trained": 0, "prompts_skipped": 0, "rounds": 0,
                                   "trained_tokens": 0.0}
        self._pending = {"lengths": before["lengths"] + [g.float().cpu() for g in lengths],
                         "rollouts_trained": before["rollouts_trained"] + rollouts_trained,
                         "prompts_skipped": before["prompts_skipped"] + prompts_skipped,
                         "rounds": before["rounds"] + rounds,
                         "trained_tokens": before["trained_tokens"] + (trained_tokens or 0.0),
                         "masked": trained_tokens is None}

    def trained(self, tokens: int) -> None:
        """Tokens a token mask let carry the gradient in one micro-batch of this process."""
        self._masked += int(tokens)

    def on_step_end(self, args, state, control, **kwargs):
        p = self._pending or {"lengths": [], "rollouts_trained": 0, "prompts_skipped": 0, "rounds": 0,
                              "trained_tokens": 0.0, "masked": False}
        trained = p["trained_tokens"]
        if p.get("masked"):  # every process's count (total: float -> float, summed over the processes)
            trained = float(self._masked) if self.total is None else self.total(float(self._masked))
        self.row = cost_metrics(generated=p["lengths"], trained_tokens=trained, rollouts_trained=p["rollouts_trained"],
                                prompts_skipped=p["prompts_skipped"], rounds=p["rounds"], previous=self.totals)
        self.totals = {key: self.row[key] for key in COST_TOTAL.values()}
        if self.metrics is not None:
            for key, value in self.row.items():
                if key not in self.totals:
                    self.metrics[key].append(float(value))
        self._pending, self._masked = None, 0
        if self.budget is not None and spent(self.totals, self.weight) >= self.budget:
            control.should_training_stop = True  # after the first step that reaches it, as train.py
            control.should_save = True

    # ----------------------------------------------------------------------------------------- rollout ledger

    def open(self, step: int) -> None:
        """The main process opens the rollout ledger resumed at `step` (0: fresh), or, with it off, marks an
        existing one's steps from step + 1 as not recorded; CheckpointError when it cannot continue."""
        if not self.main or self.run_dir is None:
            return
        if self.ledger_meta is None:
            switch_off(self.run_dir, step)
        elif self.ledger is None:
            try:
                self.ledger = Ledger(self.run_dir, self.ledger_meta, resume_step=step, ledger_id=self.ledger_id)
            except CheckpointError as err:  # train.py's sentence, in TRL's names
                raise CheckpointError(in_trl_names(str(err))) from None

    def record(self, step: int, rows: dict) -> None:
        """Buffer step `step`'s ledger rows (main process)."""
        if self.ledger is not None:
            self.ledger.record(step, rows)

    def flush(self) -> None:
        if self.ledger is not None:
            self.ledger.flush()

    # ----------------------------------------------------------------------------------------- state

    def state(self) -> dict:
        return {"args": {}, "attributes": {"totals": dict(self.totals)}}

    def on_train_begin(self, args, state, control, **kwargs):
        saved = (state.stateful_callbacks or {}).get(type(self).__name__)
        if state.global_step > 0 and isinstance(saved, dict):  # resumed from a checkpoint: the totals continue
            self.totals = dict(saved["attributes"]["totals"])
        self.open(state.global_step)  # after the checkpoint's lab.pt gave ledger_id

    def on_train_end(self, args, state, control, **kwargs):
        if self.ledger is not None:
            self.ledger.close()
