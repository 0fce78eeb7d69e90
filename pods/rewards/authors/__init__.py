"""The authors' graders, kept apart from the suite's own verifiers: they reproduce the paper's verdicts, quirks
included, and are not correct verifiers (pods.rewards registers them as paper_* and openr1_*).

    from pods.rewards.authors.paper import paper_correct       # the 1-GPU runs' grader (utils/grader.py)
    from pods.rewards.authors.openr1 import openr1_accuracy    # the 8-GPU runs' open-r1 rewards

Contract: each module re-implements one of the authors' graders at the commit its docstring names, and is
tested verdict for verdict on their published completions (docs/evaluation.md, docs/multi-gpu.md).
"""
