"""Budgets: the fastest plan that fits the RAM and flash a user gives (compile(ram=, flash=), --ram / --flash), and
the plans it weighed (cm.tradeoffs, `tinyaot report --tradeoffs`).

What a plan may choose per layer: its kernels' optimize mode (speed: the fast kernels on int16 weights and their
work buffers; size: the same kernels on int8 weights; memory: the plain kernels and their in-place rings),
whether its first stages run band by band (patch-based execution, plan/patch.py, where the arena does not fit
otherwise), and whether its constants are copied to SRAM (codegen/placement.py). RAM is the model's arena, state
and constants in SRAM; flash its constants. Speed is estimated cycles (targets/m33/timing.py, docs/timing.md):
each mode's layers are measured once on the emulated Cortex-M33 (their exact instructions and mix), a mixed plan's
estimate is the sum of its layers' figures in their modes, and on the Pico 2 the XIP estimate of the constants left
in flash is added. The winner among mixed plans is profiled itself and kept only if it is at least as fast as the
fastest single mode that fits; when nothing fits, the error names what overflows and the smallest RAM and flash
any plan needed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from rich.table import Table

from tinyaot.driver import result_of, run_passes
from tinyaot.errors import ModelError
from tinyaot.ir.ops import OPS
from tinyaot.ir.variants import OPTIMIZE_MODES
from tinyaot.model import CompiledModel
from tinyaot.plan.lifetimes import busiest_step_text
from tinyaot.report.budget import PICO2
from tinyaot.report.render import render_text
from tinyaot.report.sram_offer import sram_offer
from tinyaot.targets.m33.timing import xip_estimate
from tinyaot.targets.toolchain import have_m33_toolchain


@dataclass(frozen=True)
class PlanPoint:
    """One plan the search built: its choices, its exact RAM and flash, its estimated cycles."""

    label: str
    optimize: str
    layer_modes: tuple[tuple[str, str], ...]
    sram_constants: tuple[str, ...]
    ram_bytes: int
    flash_bytes: int
    estimated_cycles: int  # composed from the measured layers, XIP estimate included on the Pico 2
    fits: bool
    measured: bool = False  # estimated_cycles from a profile of this very plan
    peak: str = ""  # what the arena's peak is made of (plan/lifetimes.py busiest_step_text)
    patched: bool = False  # its first stages run band by band (plan/patch.py)

    def to_dict(self) -> dict:
        return {"label": self.label, "optimize": self.optimize, "layer_optimize": dict(self.layer_modes),
                "sram_constants": list(self.sram_constants), "patched": self.patched, "ram_bytes": self.ram_bytes,
                "flash_bytes": self.flash_bytes, "estimated_cycles": self.estimated_cycles, "fits": self.fits}


@dataclass(frozen=True)
class Tradeoffs:
    """The plans considered under the budgets, and the one chosen (None when none fits)."""

    ram_budget: int
    flash_budget: int
    points: tuple[PlanPoint, ...]
    chosen: PlanPoint | None

    @property
    def frontier(self) -> tuple[PlanPoint, ...]:
        """The plans no other beats on RAM, flash and estimated cycles at once."""
        def beaten(p):
            return any(q is not p and q.ram_bytes <= p.ram_bytes and q.flash_bytes <= p.flash_bytes
                       and q.estimated_cycles <= p.estimated_cycles
                       and (q.ram_bytes, q.flash_bytes, q.estimated_cycles) != (p.ram_bytes, p.flash_bytes,
                                                                                p.estimated_cycles)
                       for q in self.points)
        return tuple(p for p in self.points if not beaten(p))

    def to_dict(self) -> dict:
        return {"note": "estimated cycles: measured layers composed (docs/timing.md); RAM and flash exact",
                "ram_budget": self.ram_budget, "flash_budget": self.flash_budget,
                "points": [p.to_dict() | {"frontier": p in self.frontier} for p in self.points],
                "chosen": None if self.chosen is None else self.chosen.label}

    def __rich_console__(self, console, options):
        t = Table(title=f"plans considered for RAM <= {self.ram_budget:,} B and flash <= {self.flash_budget:,} B "
                  "(cycles estimated)")
        for col in ("plan", "RAM", "flash", "est. cycles", "fits", "frontier"):
            t.add_column(col, justify="left" if col == "plan" else "right")
        front = self.frontier
        for p in sorted(self.points, key=lambda p: p.estimated_cycles):
            mark = " (chosen)" if p is self.chosen else ""
            t.add_row(p.label + mark, f"{p.ram_bytes:,}", f"{p.flash_bytes:,}", f"{p.estimated_cycles:,}",
                      "yes" if p.fits else "no", "*" if p in front else "")
        yield t

    def __str__(self) -> str:
        return render_text(self)


@dataclass(frozen=True)
class _Measured:
    """One uniform mode, compiled and profiled: each layer's estimated cycles and the cycles between the ops."""

    cm: CompiledModel
    layer_cycles: dict
    between: int


class _Search:
    def __init__(self, unit, backend, options):
        self.unit, self.backend = unit, backend
        self.base = replace(options, ram=None, flash=None, layer_optimize=None, sram_constants=(), progress=None)
        self.ram = options.ram if options.ram is not None else options.target_memory.ram_bytes
        self.flash = options.flash if options.flash is not None else options.target_memory.flash_bytes
        self.pico2 = options.target_memory == PICO2
        self.points: list[tuple[PlanPoint, CompiledModel]] = []

    def build(self, optimize: str, layer_modes=(), sram=(), patch=None) -> CompiledModel:
        opts = replace(self.base, optimize=optimize, layer_optimize=dict(layer_modes) or None,
                       sram_constants=tuple(sram), patch=self.base.patch if patch is None else patch)
        unit, _ = run_passes(self.backend, replace(self.unit, options=opts))
        return CompiledModel(result_of(unit, ()))

    def measure(self, cm: CompiledModel) -> _Measured:
        prof = cm.profile(mix=True)
        cycles = {o.layer: o.estimated_cycles for o in prof.ops}
        return _Measured(cm, cycles, prof.estimated_cycles - sum(cycles.values()))

    def estimate(self, cm: CompiledModel, tables: dict[str, _Measured]) -> int:
        base = tables[cm.plan.optimize]
        total = base.between
        for node in cm.graph.nodes:
            mode = cm.plan.mode_of(node.name)
            total += tables[mode].layer_cycles.get(node.name, base.layer_cycles.get(node.name, 0))
        if self.pico2:
            total += xip_estimate(cm.constant_bytes - cm.sram_constant_bytes).cycles
        return total

    def add(self, cm: CompiledModel, cycles: int, measured: bool = False) -> PlanPoint:
        same = [p for p, _ in self.points if (p.optimize, p.layer_modes, p.sram_constants, p.patched)
                == (cm.plan.optimize, cm.plan.layer_modes, cm.c_sources.sram_layers, bool(cm.plan.patches))]
        if same:  # two routes to one plan: weighed once
            return same[0]
        p = PlanPoint(_label(cm), cm.plan.optimize, cm.plan.layer_modes, cm.c_sources.sram_layers, cm.ram_bytes,
                      cm.constant_bytes, cycles, cm.ram_bytes <= self.ram and cm.constant_bytes <= self.flash,
                      measured, busiest_step_text(cm.plan), bool(cm.plan.patches))
        self.points.append((p, cm))
        return p


def search(unit, backend, options) -> tuple[Tradeoffs, object]:
    """The plans weighed for `options`' budgets (the target's memory where one is not given) and the options of
    the chosen plan (None when none fits: the caller raises budget_error)."""
    s = _Search(unit, backend, options)
    single = {mode: s.build(mode) for mode in OPTIMIZE_MODES}
    least = _least(s, single)
    if least is not None:  # no plan the search can make fits: said without profiling anything
        return Tradeoffs(s.ram, s.flash, least, None), None
    if not have_m33_toolchain():
        raise ModelError("ram= / flash= budgets measure each kernel mode on the emulated Cortex-M33: install "
                         "gcc-arm-none-eabi, libnewlib-arm-none-eabi and qemu-system-arm (scripts/setup.sh), or "
                         "compile with one optimize= mode and read cm.budget")
    tables = {mode: s.measure(cm) for mode, cm in single.items()}
    for mode, m in tables.items():
        s.add(m.cm, s.estimate(m.cm, tables))
    _mixed_for_flash(s, tables)
    _mixed_for_ram(s, tables)
    _patched(s, tables)
    _with_sram(s, tables)
    chosen = _choose(s, tables)
    t = Tradeoffs(s.ram, s.flash, tuple(p for p, _ in s.points), chosen)
    if chosen is None:
        return t, None
    return t, replace(options, optimize=chosen.optimize, layer_optimize=dict(chosen.layer_modes) or None,
                      sram_constants=chosen.sram_constants, patch=chosen.patched or options.patch)


def _least(s: _Search, single: dict[str, CompiledModel]) -> tuple[PlanPoint, ...] | None:
    """When even the least RAM and the least flash any plan could take exceed the budgets, the plans that show
    it (their cycles not estimated: 0); else None. The least RAM: a single mode's plan, or memory mode's patched
    (constants in SRAM only add RAM); the least flash: each layer's arrays in its smallest mode."""
    plans = list(single.values())
    if s.base.cores != 2:
        patched = s.build("memory", patch=True)
        plans += [patched] if patched.plan.patches else []
    ram = min(plans, key=lambda cm: cm.ram_bytes)
    arrays = {m: cm.c_sources.layer_array_bytes for m, cm in single.items()}
    speed = single["speed"]
    least_flash = speed.constant_bytes + sum(min(a.get(n, 0) for a in arrays.values()) - arrays["speed"].get(n, 0)
                                             for n in arrays["speed"])
    if ram.ram_bytes <= s.ram and least_flash <= s.flash:
        return None
    modes = tuple(sorted((n, min(arrays, key=lambda m: (arrays[m].get(n, 0), m != "size"))) for n in arrays["speed"]))
    modes = tuple((n, m) for n, m in modes if m != "speed")
    if modes:  # each layer in its smallest mode: the plan with the least flash
        plans.append(s.build("speed", modes))
    for cm in plans:
        s.add(cm, 0)
    return tuple(p for p, _ in s.points)


def _label(cm: CompiledModel) -> str:
    """'speed', 'speed, 3 layers in other modes', '..., constants of 10 layers in SRAM'."""
    label = cm.plan.optimize
    if cm.plan.layer_modes:
        n = len(cm.plan.layer_modes)
        label += f", {n} layer{'s' * (n > 1)} in other modes"
    if cm.plan.patches:
        n = len(cm.plan.patches)
        label += f", patched ({n} stage{'s' * (n > 1)})"
    if cm.c_sources.sram_layers:
        n = len(cm.c_sources.sram_layers)
        label += f", constants of {n} layer{'s' * (n > 1)} in SRAM"
    return label


def _variant_layers(cm: CompiledModel) -> list[str]:
    return [n.name for n in cm.graph.nodes if OPS[n.op].variants]


def _mixed_for_flash(s: _Search, tables) -> None:
    """From every layer in its fastest mode, give up speed where it buys the most flash until the constants fit."""
    speed = tables["speed"].cm
    layers = _variant_layers(speed)
    flash = {mode: m.cm.c_sources.layer_array_bytes for mode, m in tables.items()}
    cycles = {mode: m.layer_cycles for mode, m in tables.items()}
    modes = {n: min(OPTIMIZE_MODES, key=lambda m: cycles[m].get(n, 1 << 62)) for n in layers}
    total = speed.constant_bytes + sum(flash[modes[n]].get(n, 0) - flash["speed"].get(n, 0) for n in layers)
    while total > s.flash:
        best = None
        for n in layers:
            for m in OPTIMIZE_MODES:
                saved = flash[modes[n]].get(n, 0) - flash[m].get(n, 0)
                if saved <= 0:
                    continue
                cost = cycles[m].get(n, 0) - cycles[modes[n]].get(n, 0)
                key = max(cost, 0) / saved
                if best is None or key < best[0]:
                    best = (key, n, m, saved)
        if best is None:
            break
        _, n, m, saved = best
        modes[n], total = m, total - saved
    mixed = tuple(sorted((n, m) for n, m in modes.items() if m != "speed"))
    if mixed and not any(p.layer_modes == mixed and p.optimize == "speed" for p, _ in s.points):
        cm = s.build("speed", mixed)
        s.add(cm, s.estimate(cm, tables))


def _mixed_for_ram(s: _Search, tables) -> None:
    """From each fitting-flash plan over the RAM budget, move the layers with the largest work buffers to memory
    mode (no scratch, rings allowed) one at a time until the arena fits."""
    for point, cm in list(s.points):
        if point.ram_bytes <= s.ram or point.flash_bytes > s.flash or point.optimize == "memory":
            continue
        modes = dict(point.layer_modes)
        work = sorted((c for c in cm.plan.kernels if c.work_bytes), key=lambda c: -c.work_bytes)
        for c in work:
            modes[c.node] = "memory"
            trial = s.build(point.optimize, tuple(sorted(modes.items())))
            if trial.ram_bytes <= s.ram:
                s.add(trial, s.estimate(trial, tables))
                break


def _patched(s: _Search, tables) -> None:
    """Each plan whose constants fit but whose arena does not, with its first stages run band by band (patch-based
    execution, plan/patch.py, within its default bound on recomputed MACs); not with cores=2, which it excludes."""
    if s.base.cores == 2:
        return
    for point, cm in list(s.points):
        if point.ram_bytes <= s.ram or point.flash_bytes > s.flash or point.patched:
            continue
        trial = s.build(point.optimize, point.layer_modes, point.sram_constants, patch=True)
        if trial.plan.patches:
            s.add(trial, s.estimate(trial, tables))


def _with_sram(s: _Search, tables) -> None:
    """Each fitting plan with the constants the RAM left can hold copied to SRAM, where that saves XIP time."""
    if not s.pico2:
        return
    for point, cm in list(s.points):
        if not point.fits:
            continue
        offer = sram_offer(cm.c_sources, cm.ram_bytes, s.ram)
        if offer is None:
            continue
        trial = s.build(point.optimize, point.layer_modes, [n for n, _ in offer.layers], patch=point.patched)
        s.add(trial, s.estimate(trial, tables))


def _choose(s: _Search, tables) -> PlanPoint | None:
    """The fastest fitting plan by estimate; a mixed winner is profiled and must beat the best single mode."""
    fitting = sorted((p for p, _ in s.points if p.fits), key=lambda p: p.estimated_cycles)
    if not fitting:
        return None
    uniform = [p for p in fitting if not p.layer_modes and not p.sram_constants and not p.patched]
    best = fitting[0]
    if best in uniform or not uniform:
        return best
    cm = next(c for p, c in s.points if p is best)
    prof = cm.profile(mix=True)
    real = prof.estimated_cycles + (xip_estimate(cm.constant_bytes - cm.sram_constant_bytes).cycles
                                    if s.pico2 else 0)
    measured = replace(best, estimated_cycles=real, measured=True)
    s.points[[p for p, _ in s.points].index(best)] = (measured, cm)
    return measured if real <= uniform[0].estimated_cycles else uniform[0]


def budget_error(t: Tradeoffs) -> ModelError:
    """Nothing fits: what overflows, by how much, and the smallest RAM and flash any plan needed."""
    least_ram = min(t.points, key=lambda p: p.ram_bytes)
    least_flash = min(t.points, key=lambda p: p.flash_bytes)
    parts = []
    if least_ram.ram_bytes > t.ram_budget:
        parts.append(f"RAM: the smallest plan ({least_ram.label}) needs {least_ram.ram_bytes:,} B, "
                     f"{least_ram.ram_bytes - t.ram_budget:,} B over the {t.ram_budget:,} B budget (its busiest "
                     f"{least_ram.peak})")
    if least_flash.flash_bytes > t.flash_budget:
        parts.append(f"flash: the smallest plan ({least_flash.label}) needs {least_flash.flash_bytes:,} B of "
                     f"constants, {least_flash.flash_bytes - t.flash_budget:,} B over the {t.flash_budget:,} B "
                     "budget")
    if not parts:
        parts.append(f"no single plan fits both: the smallest RAM ({least_ram.ram_bytes:,} B, {least_ram.label}) "
                     f"takes {least_ram.flash_bytes:,} B of flash, the smallest flash ({least_flash.flash_bytes:,} "
                     f"B, {least_flash.label}) {least_flash.ram_bytes:,} B of RAM")
    return ModelError("no plan fits the budget: " + "; ".join(parts) + f". The smallest RAM any plan needs is "
                      f"{least_ram.ram_bytes:,} B and the smallest flash {least_flash.flash_bytes:,} B; "
                      "raise the budget, or shrink the model (tinyaot report --tradeoffs lists every plan)")

