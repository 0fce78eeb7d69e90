"""pods: GRPO-PODS, policy optimisation with down-sampled rollouts (arXiv 2504.13818).

    from pods import select, group_advantages      # the algorithm, pure tensor functions
    from pods import PODSConfig, PODSTrainer       # PODS as a TRL GRPOTrainer (pods.integrations.trl)
    from pods import rewards                       # the verifier registry: rewards.get / names / combined
    from pods import get_reward, reward_names, combined_rewards   # the same three, flat

Imported lazily: `import pods` and `help(pods)` load neither torch nor TRL; `help(pods.select)` etc. document
each name. The method is `pods.core` (downsample, advantages, algorithms, losses): docs/development.md.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {  # public name -> (module, attribute or None for the module itself)
    "select": ("pods.core.downsample", "select"),
    "group_advantages": ("pods.core.advantages", "group_advantages"),
    "PODSConfig": ("pods.integrations.trl", "PODSConfig"),
    "PODSTrainer": ("pods.integrations.trl", "PODSTrainer"),
    "rewards": ("pods.rewards", None),
    "get_reward": ("pods.rewards", "get"),
    "reward_names": ("pods.rewards", "names"),
    "combined_rewards": ("pods.rewards", "combined"),
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pods' has no attribute {name!r}; public names: {', '.join(_EXPORTS)}")
    module, attr = _EXPORTS[name]
    value = importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value  # cached: later lookups do not come here
    return value
