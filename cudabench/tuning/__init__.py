"""--best at scale: a search over a variant's configurations (tuning/search.py), by brute
force, random sampling or Optuna's TPE, with a budget and a resumable cache."""
