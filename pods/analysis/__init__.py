"""Analysis of evaluation results: loaders, curves with 95% bands, speed-ups, the paper's figures.

Modules: `loaders` (paper JSON files, base models, our run directories), `csvruns` (multi-GPU CSV
exports), `settings` (resolve a SETTING from the command line), `curves` (mean over runs + band),
`speedup` (time-to-peak ratios, bootstrap), `steptime` (seconds per step), `figures` (drawing),
`paper` (the paper's figure list), `paired` (paired t intervals over seeds), `traces` and
`leaderboard` (runs on the token-budget axis, the leaderboard's table and figure). Command-line front
ends: scripts/speedup.py, scripts/plot.py, scripts/leaderboard.py.
"""
