"""Observers: passes that watch a measurement without disturbing its timing (NVML telemetry
and energy, Nsight Compute counters, compute-sanitizer, host<->device transfers)."""
