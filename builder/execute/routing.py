"""Which of a run's engines build its stages: those whose daemon reports the plan's architecture
(natively), else every one (under emulation: binfmt on each machine runs the foreign binaries). buildx's
node resolver routes by platform the same way; the pool then spreads the stages over the engines
routed to, least busy first, preferring the one that built a stage's parents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from builder.engine import Engine, EngineError
from builder.model.arch import Arch


@dataclass(frozen=True)
class Reported:
    """One engine of a run and the architecture it reports."""

    name: str
    arch: Arch | None  # None: unknown (it did not answer, or runs on a machine stackbuild builds none of)
    unknown: str = ""  # why it is unknown

    def describe(self) -> str:
        return f"{self.name} ({self.arch or 'architecture unknown: ' + self.unknown})"


@dataclass(frozen=True)
class Routing:
    """A plan's architecture and its run's engines (the first the one the build reports to)."""

    arch: Arch
    engines: tuple[Reported, ...]

    @property
    def native(self) -> bool:
        return any(engine.arch == self.arch for engine in self.engines)

    @property
    def eligible(self) -> tuple[int, ...]:
        """The engines the stages go to, by their place in the run: the native ones, else all."""
        everyone = range(len(self.engines))
        return tuple(i for i in everyone if self.engines[i].arch == self.arch) or tuple(everyone)

    def how(self) -> str:
        """How a stage of the plan is built: natively or under emulation."""
        return "native" if self.native else "emulated"

    def line(self) -> str:
        """What plan and build say of it, once per run."""
        if not self.native:
            on = ", ".join(engine.describe() for engine in self.engines)
            return f"engines: {self.arch} stages build under emulation on {on}: no engine reports {self.arch}"
        on = ", ".join(self.engines[i].name for i in self.eligible)
        idle = [engine.describe() for engine in self.engines if engine.arch != self.arch]
        return f"engines: {self.arch} stages build natively on {on}" + (f"; none on {', '.join(idle)}" if idle else "")

    def as_json(self) -> dict[str, object]:
        """`plan --json`'s: whether the stages build natively, and each engine with its architecture
        (null: unknown) and whether it builds any."""
        eligible = self.eligible
        engines = [
            {"name": engine.name, "arch": engine.arch, "builds": i in eligible} for i, engine in enumerate(self.engines)
        ]
        return {"native": self.native, "engines": engines}


def report(name: str, engine: Engine) -> Reported:
    """The engine's architecture, as its daemon says it; an engine that does not answer is of none."""
    try:
        facts = engine.about()
    except EngineError as err:
        return Reported(name, None, str(err))
    return Reported(name, facts.arch, "" if facts.arch else "a machine stackbuild builds none of")


def route(arch: Arch, engines: Sequence[tuple[str, Engine]]) -> Routing:
    """Each engine asked for its architecture, for a plan of arch."""
    return Routing(arch, tuple(report(name, engine) for name, engine in engines))
