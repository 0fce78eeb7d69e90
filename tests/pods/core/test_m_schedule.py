"""m schedules: relaxing from m to m_end over a horizon, pure in the step."""

import pytest

from pods.core.m_schedule import M_SCHEDULES, m_at


def test_curves_go_from_m_to_m_end_and_stay():
    for name in ("linear", "cosine", "step"):
        values = [m_at(name, s, m=8, n=32, horizon=100) for s in range(0, 150)]
        assert values[0] == 8 and values[100:] == [32] * 50
        assert values == sorted(values) and all(8 <= v <= 32 for v in values)
    assert m_at("linear", 50, m=8, n=32, horizon=100) == 20
    assert m_at("cosine", 50, m=8, n=32, horizon=100, m_end=16) == 12
    assert m_at("step", 99, m=8, n=32, horizon=100) == 8
    assert [m_at("constant", s, m=8, n=32) for s in (0, 10**6)] == [8, 8]


def test_errors():
    assert set(M_SCHEDULES) == {"constant", "linear", "cosine", "step"}
    with pytest.raises(ValueError, match="needs a horizon"):
        m_at("linear", 3, m=4, n=8)
    with pytest.raises(ValueError, match="1 <= m, m_end <= n=8"):
        m_at("linear", 3, m=4, n=8, horizon=10, m_end=9)
    with pytest.raises(ValueError, match="did you mean 'cosine'"):
        m_at("cosin", 3, m=4, n=8, horizon=10)
