"""pods: GRPO-PODS, policy optimisation with down-sampled rollouts (arXiv 2504.13818).

The algorithm lives in three pure modules: `pods.downsample` (which m of the n rollouts to keep),
`pods.advantages` (group-relative advantages) and `pods.losses` (the GRPO policy loss). Everything
else (data, backends, the training loop, checkpoints, evaluation) calls them.
"""

__version__ = "0.1.0"
