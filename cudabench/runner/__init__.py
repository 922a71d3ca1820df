"""Runners: turn plans into jobs and run them in watched worker processes, on one GPU, on
several (one worker per GPU) or on a Ray cluster's GPUs (one actor each), streaming every row
to one writer."""
