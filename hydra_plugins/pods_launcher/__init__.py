"""pods' Hydra launchers for train.py's `-m` sweeps (launchers.py); Hydra finds launchers only in `hydra_plugins`."""
