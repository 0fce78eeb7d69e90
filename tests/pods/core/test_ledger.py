"""The ledger's row format (pure): one row per prompt group, list columns per rollout, skipped prompts empty."""

import pytest
import torch

from pods.core import ledger as fmt


def test_group_rows_lay_out_one_row_per_group_and_one_value_per_rollout():
    total = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.5]])  # [B=2, n=3]
    rows = fmt.group_rows(step=4, round_=1, prompts=[9, 3], status=["trained", "dropped"], total=total,
                          per_fn={"exact": total}, accuracy=total, lengths=torch.tensor([[2, 3, 4], [5, 6, 7]]),
                          kept=torch.tensor([[0, 1], [1, 2]]), group=[0, -1])
    assert rows["step"].tolist() == [4, 4] and rows["round"].tolist() == [1, 1] and rows["slot"].tolist() == [0, 1]
    assert rows["prompt"].tolist() == [9, 3] and rows["group"].tolist() == [0, -1]
    assert rows["n"].tolist() == [3, 3] and rows["status"] == ["trained", "dropped"]
    values, lens = rows["reward"]
    assert values.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0, 0.5] and lens.tolist() == [3, 3]
    assert rows["reward/exact"][0].tolist() == values.tolist()
    assert rows["kept"][0].tolist() == [0, 1, 1, 2] and rows["kept"][1].tolist() == [2, 2]
    assert torch.isnan(rows["entropy"][0]).all()  # not measured


def test_groups_of_their_own_n_and_skipped_prompts_concatenate():
    ragged = [torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0, 0.0, 0.0])]
    a = fmt.group_rows(step=1, round_=0, prompts=[1, 2], status=["trained"] * 2, total=ragged, per_fn={},
                       accuracy=ragged, lengths=ragged, kept=[torch.tensor([0, 1]), torch.tensor([0, 3])])
    b = fmt.skipped_rows(step=1, round_=0, prompts=[5], reward_names=[], positions=[7])
    rows = fmt.concat_rows([a, b])
    assert rows["n"].tolist() == [2, 4, 0] and rows["status"] == ["trained", "trained", "skipped"]
    assert rows["position"].tolist() == [-1, -1, 7]
    assert rows["reward"][1].tolist() == [2, 4, 0] and rows["kept"][1].tolist() == [2, 2, 0]


def test_bad_status_and_other_versions_are_named():
    with pytest.raises(ValueError, match="status"):
        fmt.group_rows(step=1, round_=0, prompts=[1], status=["kept"], total=torch.zeros(1, 2), per_fn={},
                       accuracy=torch.zeros(1, 2), lengths=torch.zeros(1, 2), kept=torch.zeros(1, 1))
    assert fmt.version_problem({"format": fmt.FORMAT, "version": fmt.VERSION}) is None
    assert "version 0" in fmt.version_problem({"format": fmt.FORMAT, "version": 0})
    assert "not a pods rollout ledger" in fmt.version_problem({"rows": 3})
