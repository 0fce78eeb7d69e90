"""PODS in TRL across 2 real processes: `accelerate launch --num_processes 2 --cpu` (gloo).

    uv run pytest tests/pods/integrations/test_trl_multiprocess.py
    (~95-115 s here on 2 cores shared with other jobs: ~14 s of it is training, the rest is starting
    the launcher and two ranks that each import torch / transformers / trl)

This file is also the worker: the test launches it with `--worker OUT` through accelerate
(config/accelerate/cpu-2proc.yaml). Each rank trains two tiny-Qwen2 phases of 2 steps:
  A  per-device 6 generated, n=4, m=2: 3 groups over 2 processes, the middle one split across
     them, so the kept rows must be gathered and re-split (3 kept per process);
  B  per-device 4 generated x 2 accumulation steps: whole groups per process, no communication;
  C  as A with the `random` rule, which must draw the same subsets on both processes;
  D  `prompt_repeats=2`, 4 generated x 2 accumulation steps: each process gets ONE prompt per step and
     generates 2 groups of it (the authors' 8-GPU layout), each group selected on its own;
  E  the matching GRPO-GA (GRPOGATrainer, groups of m = 2, prompt_repeats=4): one prompt per process,
     all rows trained.
Each rank dumps what the rewards saw, what TRL logged (gathered) and every loss batch; the test
checks the union over ranks is exactly `select`'s choice per group, equal shares per rank, and
that both replicas trained to the same (changed) parameters.
"""

import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # real process launch: ~1-2 min on 2 busy cores, mostly interpreter start-up
ROOT = Path(__file__).resolve().parents[3]
N, M = 4, 2
PHASES = {"A": dict(per_device_train_batch_size=6, gradient_accumulation_steps=1),
          "B": dict(per_device_train_batch_size=4, gradient_accumulation_steps=2),
          "C": dict(per_device_train_batch_size=6, gradient_accumulation_steps=1, pods_rule="random"),
          "D": dict(per_device_train_batch_size=4, gradient_accumulation_steps=2, prompt_repeats=2)}
GA_PHASE = dict(num_generations=2, per_device_train_batch_size=2, gradient_accumulation_steps=4, prompt_repeats=4)


def _worker(out: Path):
    from accelerate.utils import gather_object
    from datasets import Dataset

    from pods.backends.tiny import byte_tokenizer, tiny_causal_lm
    from pods.integrations.trl import GRPOGAConfig, GRPOGATrainer, PODSConfig, PODSTrainer

    def recorder(base):
        class Recorder(base):
            def _generate_and_score_completions(self, inputs):
                self.local_ids = None
                result = super()._generate_and_score_completions(inputs)
                selection = getattr(self, "pods_last_selection", None) or {"local": True}
                self.rounds.append(dict(logged=list(self._logs["rewards"]["reward_fn"])[-len(inputs) * 2:],
                                        ids=[list(x) for x in gather_object(self.local_ids)], losses=[],
                                        regrouped=not selection["local"], prompts=[x["prompt"] for x in inputs]))
                return result

            def _compute_loss(self, model, inputs):
                ids = [r[m.bool()].tolist() for r, m in zip(inputs["completion_ids"], inputs["completion_mask"])]
                self.rounds[-1]["losses"].append([[i, a] for i, a in zip(ids, inputs["advantages"].tolist())])
                return super()._compute_loss(model, inputs)

        return Recorder

    tok = byte_tokenizer()
    report = {}
    for name, sizes in [*PHASES.items(), ("E", GA_PHASE)]:
        model = tiny_causal_lm(tok)
        before = [p.detach().clone() for p in model.parameters()]
        common = dict(output_dir=str(out / name), max_steps=2, max_completion_length=8, learning_rate=1e-2,
                      use_cpu=True, report_to=[], save_strategy="no", seed=0)
        if name == "E":
            args, Recorder = GRPOGAConfig(**common, **sizes), recorder(GRPOGATrainer)
        else:
            args, Recorder = PODSConfig(**common, num_generations=N, pods_m=M, **sizes), recorder(PODSTrainer)
        holder = {}

        def reward_fn(completions, completion_ids, **kwargs):
            holder["trainer"].local_ids = [tuple(c) for c in completion_ids]
            return [float(sum(c) % 3) for c in completion_ids]

        trainer = Recorder(model=model, reward_funcs=[reward_fn], args=args, processing_class=tok,
                           train_dataset=Dataset.from_dict({"prompt": [f"{i}*{i}=" for i in range(48)]}))
        holder["trainer"], trainer.rounds = trainer, []
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
        params = list(trainer.model.parameters())
        changed = all(not torch.equal(b, p.detach()) for b, p in zip(before, params))
        report[name] = dict(rounds=trainer.rounds, changed=changed, train_seconds=seconds,
                            checksum=sum(p.detach().double().sum().item() for p in params))
    rank = int(os.environ.get("RANK", "0"))
    (out / f"rank{rank}.json").write_text(json.dumps(report))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory, worker_id):
    """The two ranks' records, launched once a test session. The slow tier runs this module on one xdist worker
    (tests/conftest.py ONE_WORKER); under another distribution the workers that run its tests share one launch (the
    first takes a lock and launches, the others wait for its files; xdist's own recipe)."""
    if worker_id == "master":  # no xdist
        out = tmp_path_factory.mktemp("trl-2proc")
        _launch(out)
    else:
        out = tmp_path_factory.getbasetemp().parent / "trl-2proc"  # the session's folder, shared by its workers
        with open(f"{out}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the worker dies
            if not out.is_dir():
                part = out.with_name(f"{out.name}.{worker_id}")
                _launch(part)
                part.rename(out)  # whole or not at all: a failed launch leaves nothing for the next worker
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def _launch(out: Path) -> None:
    out.mkdir()
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
           str(ROOT / "config/accelerate/cpu-2proc.yaml"), "--main_process_port", str(_free_port()),
           __file__, "--worker", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]


@pytest.mark.parametrize("phase", list(PHASES))
def test_two_processes_select_per_group(ranks, phase):
    from pods.core.advantages import group_advantages
    from pods.core.downsample import select
    from pods.integrations.trl import selection_generator

    per_device = PHASES[phase]["per_device_train_batch_size"]
    local_rows = per_device * PHASES[phase]["gradient_accumulation_steps"]  # generated per rank per round
    r0, r1 = ranks[0][phase], ranks[1][phase]
    assert len(r0["rounds"]) == len(r1["rounds"]) == 2
    for round_, (a, b) in enumerate(zip(r0["rounds"], r1["rounds"])):
        assert a["logged"] == b["logged"] and a["ids"] == b["ids"]  # both ranks see the gathered round
        assert a["regrouped"] == b["regrouped"]
        logged = torch.tensor(a["logged"]).view(-1, N)  # [G, n], G = 3 (A, C) or 4 (B)
        assert logged.flatten().tolist() == [float(sum(i) % 3) for i in a["ids"]]
        rule = PHASES[phase].get("pods_rule", "max_variance")
        kept = select(logged, M, rule, generator=selection_generator(0, round_))
        adv = group_advantages(logged.gather(1, kept))
        rows = sorted(g * N + j for g in range(len(kept)) for j in kept[g].tolist())  # kept global rows
        share = len(rows) // 2
        stays_local = all(r // local_rows == i // share for i, r in enumerate(rows))  # its share is its own
        assert a["regrouped"] == (not stays_local)  # gathered and re-split exactly when shares cross ranks
        expected = Counter((tuple(a["ids"][g * N + j]), round(adv[g, k].item(), 4))
                           for g in range(len(kept)) for k, j in enumerate(kept[g].tolist()))
        per_rank = [Counter((tuple(i), round(x, 4)) for batch in r["losses"] for i, x in batch) for r in (a, b)]
        assert per_rank[0] + per_rank[1] == expected  # exactly the kept m per group, over both processes
        assert sum(per_rank[0].values()) == sum(per_rank[1].values()) == len(kept) * M // 2  # equal shares
        for r in (a, b):
            assert all(len(batch) == per_device * M // N for batch in r["losses"])  # loss micro-batch size


def test_split_groups_exercise_regrouping(ranks):
    assert not any(r["regrouped"] for r in ranks[0]["B"]["rounds"])  # whole groups: never
    assert any(r["regrouped"] for p in ("A", "C") for r in ranks[0][p]["rounds"])  # the gather path ran


@pytest.mark.parametrize("phase", ["D", "E"])
def test_prompt_repeats_give_each_process_one_prompt(ranks, phase):
    seen = set()
    for a, b in zip(ranks[0][phase]["rounds"], ranks[1][phase]["rounds"]):
        assert len(a["prompts"]) == len(b["prompts"]) == 8  # 2 groups of 4 (D) or 4 groups of 2 (E)
        assert len(set(a["prompts"])) == len(set(b["prompts"])) == 1 and a["prompts"][0] != b["prompts"][0]
        seen |= {a["prompts"][0], b["prompts"][0]}
    assert len(seen) == 4  # 2 steps x 2 processes, a new prompt each time
    for r in (ranks[0]["E"], ranks[1]["E"]):  # GRPO-GA trains all 8 of its rows, 4 micro-batches of 2
        assert all(sum(len(b) for b in rnd["losses"]) == 8 for rnd in r["rounds"])


def test_two_processes_train_in_sync(ranks):
    for phase in [*PHASES, "E"]:
        print(f"phase {phase}: 2 steps in {ranks[0][phase]['train_seconds']:.2f} s (rank 0)")
        assert ranks[0][phase]["changed"] and ranks[1][phase]["changed"]
        assert ranks[0][phase]["checksum"] == pytest.approx(ranks[1][phase]["checksum"], rel=1e-9)


if __name__ == "__main__" and "--worker" in sys.argv:
    torch.set_num_threads(1)
    _worker(Path(sys.argv[sys.argv.index("--worker") + 1]))
