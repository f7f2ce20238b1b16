"""Load and check what the CLI names: `path/to/file.py:name` models, .npy/.npz arrays and output paths.

Each problem is a TinyAOTError that says what is wrong and what to do, raised before a compile that may take
a while, so a typo costs no wait.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import traceback
import zipfile
from pathlib import Path

import numpy as np

from tinyaot.errors import CalibrationError, ModelError

INPUT_KEYS = ("x", "inputs", "images", "data", "calibration")  # the inputs' name in an .npz
LABEL_KEYS = ("y", "labels", "targets")


def _error(what: str):
    """Calibration problems are CalibrationErrors (as compile() raises them); the rest are about inputs."""
    return CalibrationError if what == "calibration" else ModelError


# ---- models --------------------------------------------------------------------------------------------------


def split_model_spec(spec: str) -> tuple[Path, str]:
    """`path/to/file.py:name` -> (file, name), checked without importing torch."""
    path, sep, attr = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not attr.isidentifier():
        raise ModelError(
            f"cannot load model {spec!r}: give a .tflite file or path/to/file.py:name, where name is an "
            "nn.Module instance or a function returning one"
        )
    return Path(path), attr


def check_model(spec: str) -> None:
    """The model file exists and can be read (the model itself is imported later, once)."""
    if spec.lower().endswith(".tflite"):
        check_readable(spec, "TFLite model")
    else:
        check_readable(split_model_spec(spec)[0], "model")


def load_model(spec: str):
    """Import the user's file and return the nn.Module it names; errors in that file are the user's to fix."""
    file, attr = split_model_spec(spec)
    check_readable(file, "model")
    module = _import_user_file(file)
    if not hasattr(module, attr):
        raise ModelError(f"{file} defines no {attr!r}; name an nn.Module or a function returning one")
    obj = getattr(module, attr)
    import torch

    if not isinstance(obj, torch.nn.Module) and callable(obj):
        obj = _user_call(obj, file, f"calling {attr}()")
    if not isinstance(obj, torch.nn.Module):
        raise ModelError(f"{spec} is a {type(obj).__name__}, not a torch.nn.Module")
    return obj


def _import_user_file(file: Path):
    mod_name = f"_tinyaot_user_{file.stem}"
    module_spec = importlib.util.spec_from_file_location(mod_name, file)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, str(file.parent.resolve()))
    try:
        _user_call(lambda: module_spec.loader.exec_module(module), file, f"importing {file}")
    finally:
        sys.path.pop(0)
    return module


def _user_call(fn, file: Path, doing: str):
    """Run user code; an exception in it is a ModelError naming the user's line, not a tinyaot traceback."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 -- anything the user's code raises is theirs to fix
        text = exc.msg if isinstance(exc, SyntaxError) else exc
        raise ModelError(f"{_user_line(exc, file)}: {type(exc).__name__}: {text} (while {doing}); fix the model "
                         f"file, or run `python {file}` to see the whole traceback") from None


def _user_line(exc: BaseException, file: Path) -> str:
    """file:line of the last frame of the user's file in exc's traceback (a SyntaxError carries its own)."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f"{file}:{exc.lineno}"
    target = os.path.abspath(file)
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == target]
    return f"{file}:{lines[-1]}" if lines else str(file)


# ---- input files ---------------------------------------------------------------------------------------------


def check_readable(path, what: str) -> Path:
    """An input file exists, is a file and can be read."""
    cls = _error(what)
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise cls(f"{what} file {str(path)!r} does not exist; check the path") from None
    except OSError as exc:
        raise cls(f"{what} file {str(path)!r} cannot be read: {exc.strerror}") from None
    if os.path.isdir(path):
        raise cls(f"{what} file {str(path)!r} is a directory; give the file itself") from None
    if not os.access(path, os.R_OK):
        raise cls(f"{what} file {str(path)!r} is not readable (permission denied); check its permissions")
    return Path(path)


def load_array(path: str, what: str) -> np.ndarray:
    """A non-empty numeric array from a .npy (or the inputs of an .npz)."""
    return load_arrays(path, what)[0]


def load_arrays(path: str, what: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(inputs, labels or None) from a .npy of inputs or an .npz holding inputs 'x' (and labels 'y')."""
    check_readable(path, what)
    loaded = _np_load(path, what)
    if isinstance(loaded, np.ndarray):
        return _checked(loaded, path, what), None
    with loaded:
        x, y = _from_npz(loaded, path, what)
    return _checked(x, path, what), (None if y is None else _checked(y, path, f"{what} labels"))


def _np_load(path: str, what: str):
    try:
        return np.load(path, allow_pickle=False)
    except EOFError:
        reason = "the file is empty"
    except zipfile.BadZipFile:
        reason = "it looks like an .npz but is not a valid zip file"
    except ValueError as exc:
        reason = str(exc).split(". ")[0]
        reason = reason[:1].lower() + reason[1:]
    raise _error(what)(f"{what} file {path!r} is not a NumPy array ({reason}); save the array with "
                       "numpy.save('file.npy', x) or numpy.savez('file.npz', x=x, y=labels)")


def _from_npz(npz, path: str, what: str) -> tuple[np.ndarray, np.ndarray | None]:
    names = list(npz.files)
    xs = [k for k in INPUT_KEYS if k in names]
    if not xs and len(names) == 1:
        xs = names
    if not xs:
        raise _error(what)(f"{what} file {path} holds arrays {names}; name the inputs 'x' (and the labels 'y'), "
                           "e.g. numpy.savez(path, x=inputs, y=labels)")
    ys = [k for k in LABEL_KEYS if k in names]
    return npz[xs[0]], (npz[ys[0]] if ys else None)


def _checked(a: np.ndarray, path: str, what: str) -> np.ndarray:
    cls = _error(what)
    if a.dtype.kind not in "biuf":
        raise cls(f"{what} file {path!r} holds {a.dtype} values; give numbers (float or integer)")
    if a.ndim == 0:
        raise cls(f"{what} file {path!r} holds a single number; give samples shaped (N, ...)")
    if a.size == 0:
        raise cls(f"{what} file {path!r} holds no samples (shape {a.shape}); give at least one sample")
    return a


def check_labels(y: np.ndarray, n: int | None, source: str) -> np.ndarray:
    """Class indices, one per input: whole numbers >= 0 (n=None: the count is checked later)."""
    flat = y.reshape(-1)
    if n is not None and len(flat) != n:
        hint = "; they look one-hot: save y.argmax(1)" if y.ndim == 2 and len(y) == n else ""
        raise ModelError(f"{source} has {n} inputs but {len(flat)} labels; give one class index per input{hint}")
    if (np.issubdtype(flat.dtype, np.floating) and not np.all(flat == np.round(flat))) or flat.min() < 0:
        raise ModelError(f"{source}: labels must be class indices (whole numbers >= 0), got "
                         f"{flat[:6].tolist()}...")
    return flat.astype(np.int64)


def parse_shape(text: str) -> tuple[int, ...]:
    """--input-shape: the batch dimension 1, then the sample's, e.g. 1,28,28 (or 1x28x28)."""
    parts = text.replace("x", ",").split(",")
    try:
        shape = tuple(int(v) for v in parts)
    except ValueError:
        raise ModelError(f"--input-shape {text!r}: expected integers like 1,28,28") from None
    if min(shape) < 1:
        raise ModelError(f"--input-shape {text!r}: every dimension must be >= 1, e.g. 1,28,28")
    if len(shape) < 2 or shape[0] != 1:
        raise ModelError(f"--input-shape {text!r}: give the batch dimension 1 first, then the sample's, e.g. "
                         f"1,{','.join(map(str, shape if shape[0] != 1 else shape[1:] or (28,)))}")
    return shape


# ---- output paths --------------------------------------------------------------------------------------------


def check_output_dir(path, flag: str) -> Path:
    """A directory tinyaot will create (with its parents) and write into."""
    p = Path(path)
    if os.path.exists(p) and not os.path.isdir(p):
        raise ModelError(f"{flag} {str(path)!r} is a file, not a directory; give a directory to write into")
    _check_creatable(p, flag)
    return p


def check_output_file(path, flag: str, example: str) -> Path:
    """A file tinyaot will write (its parent directories are created)."""
    p = Path(path)
    if os.path.isdir(p):
        raise ModelError(f"{flag} {str(path)!r} is a directory; give a file name, e.g. {str(p / example)!r}")
    if os.path.exists(p) and not os.access(p, os.W_OK):
        raise ModelError(f"{flag} {str(path)!r} exists and is not writable; check its permissions or choose "
                         "another file")
    _check_creatable(p.parent, flag, shown=p)
    return p


def _check_creatable(p: Path, flag: str, shown: Path | None = None) -> None:
    """The nearest existing ancestor is a writable directory and the names still to create are not too long."""
    shown = p if shown is None else shown
    absolute = Path(os.path.abspath(p))
    missing = []
    while not os.path.exists(absolute) and absolute.parent != absolute:
        missing.append(absolute.name)
        absolute = absolute.parent
    if not os.path.isdir(absolute):
        raise ModelError(f"{flag} {str(shown)!r}: {absolute} is a file, so nothing can be created inside it; "
                         "choose another path")
    if not os.access(absolute, os.W_OK | os.X_OK):
        raise ModelError(f"{flag} {str(shown)!r}: cannot write in {absolute} (permission denied); choose a "
                         "directory you can write to")
    limit = _name_max(absolute)
    for name in missing:
        if len(os.fsencode(name)) > limit:
            raise ModelError(f"{flag} {str(shown)[:60]!r}...: a file or directory name is {len(os.fsencode(name))} "
                             f"bytes long, more than this file system's {limit}; use a shorter name")


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255
