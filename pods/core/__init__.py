"""The method, as pure tensor functions: generate n -> score -> select m -> advantages -> loss.

    from pods.core.downsample import select            # which m of the n rollouts to keep  [G, n] -> [G, m]
    from pods.core.advantages import group_advantages  # group-relative advantages          [G, m] -> [G, m]
    from pods.core.algorithms import plan_update       # PODS / GRPO / GRPO-GA: kept indices and advantages
    from pods.core.losses import policy_loss           # the policy-gradient loss of one micro-batch

Also here: `rollouts` (a step's completions, grouped per prompt), `collect` (generation rounds and
dynamic sampling), `schedule` (the learning-rate factor), and the selection lab's other hook kinds:
`prompt_rules`, `allocation`, `token_masks`, `m_schedule`, with `compat` (docs/rules.md). Nothing in core
reads a config, a file or a model: it imports torch and pods.errors only.
"""
