"""The trained test models: trained once, committed, the same bytes on every machine.

A model trained inside a test is another model on another processor: CPU kernels sum in another order, the first
ulp differs, and a few hundred Adam steps later the weights (and every accuracy or agreement measured on them) have
wandered. So no test trains. Each model a test needs trained is a Recipe here; `python tests/trained_weights.py`
trains every recipe once (one thread, deterministic algorithms, fixed seed), rounds the weights to float16's grid
and writes tests/weights/<key>.npz with a fingerprint of the code that trained it. Tests load those bytes; when the
training code changes the fingerprint no longer matches and the test fails, saying which command retrains.

Usage: python tests/trained_weights.py [KEY ...]   (no key: every recipe; --list names them)
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn as nn

WEIGHTS = Path(__file__).resolve().parent / "weights"
_RETRAIN = "python tests/trained_weights.py"


class StaleWeights(RuntimeError):
    """A recipe's committed weights are missing or were trained by other code."""


@dataclass(frozen=True)
class Recipe:
    """How one test model is built and trained. `train(model)` trains it in place (needing nothing but the data
    it loads itself); `code` are the functions and classes whose source keys the weights, `params` the
    hyperparameters that do."""

    key: str
    build: Callable[[], nn.Module]
    train: Callable[[nn.Module], Any]
    code: tuple = ()
    params: dict = field(default_factory=dict)

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for obj in (self.build, self.train, *self.code):
            while isinstance(obj, functools.partial):  # its arguments are in params
                obj = obj.func
            try:
                digest.update(inspect.getsource(obj).encode())
            except (OSError, TypeError):  # a builtin: its name stands for it
                digest.update(getattr(obj, "__qualname__", type(obj).__qualname__).encode())
        digest.update(repr(sorted(self.params.items())).encode())
        return digest.hexdigest()[:16]

    @property
    def path(self) -> Path:
        return WEIGHTS / f"{self.key}.npz"


_FINGERPRINT = "__fingerprint__"


def load(recipe: Recipe) -> nn.Module:
    """The recipe's model with its committed weights, in eval mode."""
    if not recipe.path.exists():
        raise StaleWeights(f"{recipe.path.name} is missing: run `{_RETRAIN} {recipe.key}` and commit "
                           f"tests/weights/{recipe.path.name}")
    with np.load(recipe.path) as data:
        stored = {k: data[k] for k in data.files}
    found = str(stored.pop(_FINGERPRINT, ""))
    if found != recipe.fingerprint():
        raise StaleWeights(f"tests/weights/{recipe.path.name} was trained by other code (fingerprint {found}, the "
                           f"code now gives {recipe.fingerprint()}): run `{_RETRAIN} {recipe.key}` and commit it")
    model = recipe.build()
    want = model.state_dict()
    state = {k: torch.from_numpy(np.asarray(v, dtype=np.float32 if want[k].is_floating_point() else v.dtype))
             for k, v in stored.items()}
    model.load_state_dict(state, strict=True)
    return model.eval()


def train_and_save(recipe: Recipe) -> Path:
    """Train on one thread with deterministic algorithms and a fixed seed, round to float16, save."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(0)
        model = recipe.build()
        recipe.train(model)
    finally:
        torch.use_deterministic_algorithms(False)
        torch.set_num_threads(threads)
    arrays = {}
    for name, value in model.state_dict().items():
        value = value.detach().cpu().numpy()
        arrays[name] = value.astype(np.float16) if np.issubdtype(value.dtype, np.floating) else value
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(arrays[name]).all():
            raise ValueError(f"{recipe.key}: {name} does not fit float16")
    WEIGHTS.mkdir(exist_ok=True)
    np.savez_compressed(recipe.path, **arrays, **{_FINGERPRINT: np.array(recipe.fingerprint())})
    return recipe.path


def recipes() -> dict[str, Recipe]:
    """Every recipe the tests use, by key (imported here, not at the top: each module imports this one)."""
    import mnist_models
    import pt2e_models
    import zoo

    found = [*zoo.RECIPES.values(), *mnist_models.RECIPES.values(), *pt2e_models.RECIPES.values()]
    return {r.key: r for r in found}


def main(argv: list[str]) -> int:
    known = recipes()
    if argv[:1] == ["--list"]:
        print("\n".join(known))
        return 0
    unknown = [k for k in argv if k not in known]
    if unknown:
        print(f"unknown recipe(s) {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    for key in argv or list(known):
        path = train_and_save(known[key])
        print(f"{key}: {path.stat().st_size:,} B")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))
