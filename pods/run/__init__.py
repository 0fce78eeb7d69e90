"""One training run of train.py: the loop, its run directory, checkpoints, metrics and guards.

    from pods.run.trainer import train
    run_dir = train(cfg)          # cfg: config/train.yaml composed by Hydra (see train.py)

The run directory `<output_root>/<run_name>/` holds `config.yaml` (the resolved config),
`metrics.jsonl` (one row per step: `metrics`), `samples.jsonl` (what the model wrote: `samples`),
`checkpoint-<step>/` (`checkpoint`, each with a `manifest`) and `eval_results.json` once
evaluate-run.py has run (pods.evaluation). `rundir` refuses a directory that holds another run;
`guard` turns signals and non-finite steps into clean stops; `warmstart` builds the CPU demo's model; `prepare`
is the start-up step (checks, data, plug-ins, warm start, memory, lock, model, resume), `optim` the optimizer.
"""
