"""Which configuration a search measures next: brute force, random, or Optuna's TPE.

A strategy hands out indices into a Space's plans, each once, and hears each one's
median (None: it failed). Every choice comes from the seed, so the same seed, space and
results give the same order: a resumed search asks again for what it asked before, the
cache answers, and it goes on where it stopped.
"""

from __future__ import annotations

import importlib
import random
from typing import Any, Protocol

from cudabench.common.extras import broken, install_hint
from cudabench.errors import UsageError
from cudabench.tuning.space import Space

STRATEGIES = ("brute", "random", "bayes")
INSTALL_HINT = install_hint("tune")
MISSES = 32  # TPE proposals that are invalid or already asked before a random pick instead


class Strategy(Protocol):
    """Hands out configurations to measure and hears how each went."""

    def ask(self, count: int) -> list[int]:
        """Return up to count indices not asked before (fewer when the space runs out)."""

    def tell(self, index: int, median_s: float | None) -> None:
        """Record index's median (None: failed, skipped or timed out)."""


class Ordered:
    """Brute force (the enumeration order) or random (a seeded permutation of it)."""

    def __init__(self, size: int, seed: int | None = None) -> None:
        self.order = list(range(size))
        if seed is not None:
            random.Random(seed).shuffle(self.order)
        self.next = 0

    def ask(self, count: int) -> list[int]:
        """Return the next count indices of the order."""
        chosen = self.order[self.next:self.next + count]
        self.next += len(chosen)
        return chosen

    def tell(self, index: int, median_s: float | None) -> None:
        """An order does not learn."""


class Bayes:
    """Optuna's TPE sampler over the varying parameters' values (optional extra `tune`)."""

    def __init__(self, space: Space, seed: int, budget: int) -> None:
        optuna = load_optuna()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(
            # NumPy's generator under TPE takes 32 bits; --seed takes 63: the same seed
            # still gives the same search
            seed=seed % 2**32, multivariate=True, constant_liar=True,
            n_startup_trials=max(4, min(10, budget // 5)))  # random first, then the model
        self.optuna = optuna
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.names = space.names
        self.distributions = {name: optuna.distributions.CategoricalDistribution(
            space.values[name]) for name in self.names}
        self.index_of = {tuple(space.params(i)[n] for n in self.names): i
                         for i in range(len(space.plans))}
        self.fallback = random.Random(seed)
        self.asked: set[int] = set()
        self.trials: dict[int, Any] = {}  # index -> its trial, until told
        self.known: dict[int, float | None] = {}

    def ask(self, count: int) -> list[int]:
        """Return up to count new indices proposed by TPE (a seeded random pick after
        MISSES proposals that are invalid or asked before)."""
        chosen: list[int] = []
        misses = 0
        while len(chosen) < count and len(self.asked) < len(self.index_of):
            trial = self.study.ask(self.distributions)
            index = self.index_of.get(tuple(trial.params[n] for n in self.names))
            if index is None or index in self.asked:
                if index is not None and self.known.get(index) is not None:
                    self.study.tell(trial, self.known[index])  # a repeat: the model learns
                else:
                    self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
                misses += 1
                if misses < MISSES:
                    continue
                index = self.fallback.choice(sorted(set(self.index_of.values()) - self.asked))
                trial = None
            misses = 0
            self.asked.add(index)
            chosen.append(index)
            if trial is not None:
                self.trials[index] = trial
        return chosen

    def tell(self, index: int, median_s: float | None) -> None:
        """Complete index's trial with its median, or fail it."""
        self.known[index] = median_s
        trial = self.trials.pop(index, None)
        if trial is None:
            return
        if median_s is None:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, median_s)


def load_optuna() -> Any:
    """Import Optuna, or say how to install it (a usage error, exit 2)."""
    try:
        return importlib.import_module("optuna")
    except ImportError as exc:
        why = broken("optuna", exc)
        raise UsageError("--strategy bayes needs Optuna" + (f", and {why}" if why else "")
                         + f": {INSTALL_HINT}") from None


def make_strategy(name: str, space: Space, seed: int, budget: int) -> Strategy:
    """Return the strategy called name over space."""
    if name == "brute":
        return Ordered(len(space.plans))
    if name == "random":
        return Ordered(len(space.plans), seed)
    if name == "bayes":
        return Bayes(space, seed, budget)
    raise UsageError(f"--strategy {name}: expected one of {', '.join(STRATEGIES)}")
