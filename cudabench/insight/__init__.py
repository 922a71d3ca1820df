"""How far a result is from what the device can do: roofs (and, later, counters, clocks)."""
