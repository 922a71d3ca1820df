"""Runners: turn plans into jobs and run them in watched worker processes, on one GPU, on
several (one worker per GPU) or as Ray tasks, streaming every row to one writer."""
