"""The built-in kernel variants: one folder per op, one .cu file per variant."""
