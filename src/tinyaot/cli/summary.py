"""What the commands print about a compiled model: its summary (arena, flash, inputs and outputs), what the buffer
contract cost, whether it fits its target, and what calibration and the --data check found."""
from __future__ import annotations

from rich.table import Table

from tinyaot.cli.compiling import Compiled
from tinyaot.cli.request import Request
from tinyaot.report.memory import io_dicts


def flash(cm) -> str:
    if cm.flash_bytes is None:
        return f"flash {cm.constant_bytes:,} B of constants + code (not measured: no arm-none-eabi-gcc)"
    return f"flash {cm.flash_bytes:,} B"


def summary(cm) -> dict:
    if cm.n_inputs > 1 or cm.n_outputs > 1:
        return _summary_one(cm) | {"inputs": _ios(cm, cm.graph.inputs), "outputs": _ios(cm, cm.graph.outputs)}
    return _summary_one(cm)


def _ios(cm, tensors) -> list[dict]:
    return io_dicts(cm.graph, tensors, layout=False)


def _summary_one(cm) -> dict:
    """The first input and output (the only ones of most models)."""
    first_in, first_out = _ios(cm, cm.graph.inputs[:1])[0], _ios(cm, cm.graph.outputs[:1])[0]
    return {
        "name": cm.name,
        "arena_bytes": cm.arena_bytes,
        "lower_bound_bytes": cm.lower_bound_bytes,
        "float_arena_bytes": cm.float_arena_bytes,
        "constant_bytes": cm.constant_bytes,
        "code_bytes": cm.code_bytes,
        "flash_bytes": cm.flash_bytes,
        "input": first_in,
        "output": first_out,
        **({"int16_layers": dict(cm.int16_layers)} if getattr(cm, "int16_layers", None) else {}),
        **({"budget": cm.budget.to_dict()} if getattr(cm, "budget", None) is not None else {}),
        **({"patch_stages": [stage_dict(s) for s in cm.plan.patches]} if cm.plan.patches else {}),
    }


def stage_dict(stage) -> dict:
    """A patch stage (--patch) as JSON: its layers, bands, scratch and the MACs its halos recompute."""
    return {"layers": list(stage.nodes), "step": stage.start, "bands": stage.bands,
            "scratch_bytes": stage.scratch_bytes, "macs": stage.macs, "extra_macs": stage.extra_macs}


def contract(cm, req: Request) -> dict:
    """What --preserve-input / --separate-output cost in arena bytes."""
    if not (req.preserve_input or req.separate_output):
        return {}
    return {"contract": cm.contract.to_dict()}


def print_contract(c, info: dict) -> None:
    if "contract" not in info:
        return
    d = info["contract"]
    wanted = " and ".join(f for f, on in (("--preserve-input", d["preserve_input"]),
                                          ("--separate-output", d["separate_output"])) if on)
    c.print(f"input {'preserved' if d['input_preserved'] else 'overwritten'} across invoke, output "
            f"{'overlapping' if d['output_overlaps_input'] else 'apart from'} the input: arena "
            f"{d['arena_bytes']:,} B, {d['cost_bytes']:,} B more than without {wanted} "
            f"({d['unconstrained_arena_bytes']:,} B)")


def print_budget(c, cm) -> None:
    """The verdict in one line (what does not fit was a warning on stderr already, with what would help)."""
    if getattr(cm, "budget", None) is not None:
        c.print(cm.budget.summary(), markup=False, highlight=False)


def trust(compiled: Compiled) -> dict:
    """Calibration findings and the --data check, for --json."""
    cm = compiled.cm
    out: dict = {"findings": [f.to_dict() for f in cm.findings]}
    if cm.calibration is not None:
        out["calibration"] = {"samples": cm.calibration.samples, "observer": cm.calibration.observer}
    if compiled.check is not None:
        out["check"] = compiled.check.to_dict()
    return out


def timings(cm, req: Request) -> dict:
    """--timings: each pass's time, in the order they ran (driver.py measures them)."""
    if not req.timings:
        return {}
    return {"timings": [{"pass": t.name, "seconds": t.seconds} for t in cm.timings]}


def print_timings(c, info: dict) -> None:
    if "timings" not in info:
        return
    rows = info["timings"]
    total = sum(r["seconds"] for r in rows) or 1.0
    t = Table(title=f"time per pass ({total:.2f} s in all)")
    for col in ("pass", "ms", "share"):
        t.add_column(col, justify="left" if col == "pass" else "right")
    for r in rows:
        t.add_row(r["pass"], f"{r['seconds'] * 1000:,.1f}", f"{r['seconds'] / total:.1%}")
    c.print(t)


def print_trust(c, compiled: Compiled) -> None:
    """The --data check (its findings, like the calibration's, were warnings on stderr already)."""
    if compiled.check is not None:
        c.print(compiled.check)
