"""The README's "What it supports" names every operation the converter tables compile, so adding an op (a converter
in a front end's table) cannot leave the README behind: the test fails until the op is written there.

TFLite builtins are matched as words. A PyTorch op is matched by its ATen name's stem (leading and trailing
underscores, `unsafe_` and a `1d` / `2d` / `_nd` suffix dropped; compared letters and digits only, so `max_pool2d`
is the README's "MaxPool"), or, where the README says it in a user's words, by the phrase in SPELLED_OTHERWISE.
"""
from __future__ import annotations

import re
from pathlib import Path

from tinyaot.frontend.pytorch import supported_ops
from tinyaot.frontend.refusals import base_name
from tinyaot.frontend.tflite import CONVERTERS as TFLITE

README = Path(__file__).resolve().parents[1] / "README.md"

# ATen stem -> the README's words for it
SPELLED_OTHERWISE = {
    "getitem": "`x[:, :k]`",
    "select": "`x[:, i]`",
    "split_with_sizes": "`torch.split` by a size or a list of sizes",
    "prelu_kernel": "PReLU",
    "to_copy": "`.to()`",
    "upsample_nearest_exact": "'nearest-exact'",
    "upsample_bilinear": "'bilinear'",
    "upsample_linear": "'linear' on 1-D signals",
    "clamp_max": "clamp with tensor bounds",
    "clamp_min": "clamp with tensor bounds",
    "constant_pad": "zero padding",
    "reflection_pad": "padding_mode='reflect' | 'replicate'",
    "replication_pad": "padding_mode='reflect' | 'replicate'",
    "feature_dropout": "dropout",
    "linalg_vector_norm": "`F.normalize`",
}


def _section() -> str:
    text = README.read_text()
    start = text.index("## What it supports")
    return text[start:text.index("\n## ", start + 1)]


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _stem(op: str) -> str:
    base = base_name(op).strip("_")
    base = re.sub(r"^unsafe_", "", base)
    return re.sub(r"(_?[123]d|_nd)$", "", base)


def test_every_tflite_builtin_is_named():
    section = _section()
    missing = sorted(op for op in TFLITE if not re.search(rf"\b{op}\b", section))
    assert missing == [], f"README's 'What it supports' does not name the TFLite operators {missing}"


def test_every_pytorch_op_is_named():
    section = _section()
    letters = _letters(section)
    missing = sorted(op for op in supported_ops()
                     if _letters(_stem(op)) not in letters and SPELLED_OTHERWISE.get(_stem(op)) is None)
    assert missing == [], (f"README's 'What it supports' does not name the PyTorch ops {missing}: write them there "
                           "(or, said in other words, add those words to SPELLED_OTHERWISE)")


def test_the_other_words_are_in_the_readme_and_still_needed():
    section = _section()
    stems = {_stem(op) for op in supported_ops()}
    assert [w for w in SPELLED_OTHERWISE.values() if w not in section] == []
    assert sorted(set(SPELLED_OTHERWISE) - stems) == []  # no entry for an op the tables no longer have
