"""The generated C contract: what invoke does to the input, where the output sits, several instances of one
model and several models in one folder, checked by C programs on the host and on the emulated Cortex-M33."""
from __future__ import annotations

import re
import subprocess
import warnings

import numpy as np
import pytest
from conftest import shared_file

import tinyaot
from tinyaot.errors import ModelError, PlanError

AE = "models/mlperf_tiny/ad01_int8.tflite"
KWS = "models/mlperf_tiny/kws_ref_model.tflite"

# One program for host and M33: writes an input, invokes, and reports whether the input survived, whether
# the output survived writing the next input, and the outputs of two instances of the same model.
PROGRAM = r"""
#include <stdint.h>
#include <string.h>
#include "@NAME@.h"
#include "vectors.h"
#ifdef TINYAOT_M33
#include "console.h"
static void put_hex(const void *p, size_t n) { console_put_hex_bytes(p, n); }
static void put_s(const char *s) { console_puts(s); }
#else
#include <stdio.h>
static void put_hex(const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n; i++) {
        printf("%02x", (unsigned)b[i]);
    }
}
static void put_s(const char *s) { fputs(s, stdout); }
#endif

static union { uint8_t bytes[@UNAME@_ARENA_SIZE]; int64_t align; } arena_b;
static int8_t saved[@UNAME@_OUTPUT_SIZE];

int main(void)
{
    @NAME@_instance_t second;
    if (@NAME@_init(NULL, 0) != @UNAME@_OK || @NAME@_instance_init(&second, arena_b.bytes, sizeof arena_b.bytes) != 0) {
        put_s("INIT FAILED\n");
        return 1;
    }
    memcpy(@NAME@_input(), input0, @UNAME@_INPUT_SIZE);
    memcpy(@NAME@_instance_input(&second), input1, @UNAME@_INPUT_SIZE);
    if (@NAME@_invoke() != @UNAME@_OK || @NAME@_instance_invoke(&second) != @UNAME@_OK) {
        put_s("INVOKE FAILED\n");
        return 1;
    }
    put_s(memcmp(@NAME@_input(), input0, @UNAME@_INPUT_SIZE) == 0 ? "INPUT_KEPT 1\n" : "INPUT_KEPT 0\n");
    put_s("OUT0 ");
    put_hex(@NAME@_output(), @UNAME@_OUTPUT_SIZE);
    put_s("\nOUT1 ");
    put_hex(@NAME@_instance_output(&second), @UNAME@_OUTPUT_SIZE);
    put_s("\n");
    memcpy(saved, @NAME@_output(), @UNAME@_OUTPUT_SIZE);
    memcpy(@NAME@_input(), input1, @UNAME@_INPUT_SIZE);  /* the next input, before reading the output again */
    put_s(memcmp(@NAME@_output(), saved, @UNAME@_OUTPUT_SIZE) == 0 ? "OUTPUT_KEPT 1\n" : "OUTPUT_KEPT 0\n");
    put_s(@NAME@_instance_invoke(NULL) == @UNAME@_ERROR_NOT_INITIALIZED ? "NULL_OK 1\n" : "NULL_OK 0\n");
    return 0;
}
"""


def _c_array(name: str, x: np.ndarray) -> str:
    body = ", ".join(str(int(v)) for v in x.reshape(-1))
    return f"static const int8_t {name}[{x.size}] = {{{body}}};\n"


def _program(cm, directory, inputs) -> list:
    cm.export(directory)
    (directory / "vectors.h").write_text(_c_array("input0", inputs[0]) + _c_array("input1", inputs[1]))
    main = directory / "main_contract.c"
    main.write_text(PROGRAM.replace("@NAME@", cm.name).replace("@UNAME@", cm.name.upper()))
    return [main, *sorted(p for p in directory.glob("*.c") if p != main)]


def _host(sources, directory) -> str:
    exe = directory / "contract"
    cmd = ["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{directory}", *map(str, sources), "-o",
           str(exe)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


def _m33(sources, directory) -> str:
    from tinyaot.targets.m33 import C_FLAGS, build_and_run_m33

    out, _ = build_and_run_m33(sources, directory / "build", include_dirs=(directory,),
                               c_flags=(*C_FLAGS, "-DTINYAOT_M33"), elf_name="contract")
    return out


def _parse(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+) (\S+)$", text, flags=re.M))


def _inputs(cm, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(-128, 128, size=(2, cm.input_size), dtype=np.int64).astype(np.int8)


def _expected(cm, x) -> list[str]:
    return [_run_hex(cm, x[i]) for i in range(2)]


def _run_hex(cm, row) -> str:
    return bytes(cm.run(row.reshape(cm.input_shape)).astype(np.int8).reshape(-1)).hex()


def _macro(cm, name) -> int:
    return int(re.search(rf"#define {cm.name.upper()}_{name} (\d)", cm.c_sources.files[f"{cm.name}.h"]).group(1))


@pytest.fixture(scope="module")
def ae_path():
    return shared_file(AE)


@pytest.mark.host
@pytest.mark.parametrize("options, arena, input_kept, output_kept", [
    ({}, 768, 0, 0),  # the autoencoder's input and output both sit at arena offset 0
    ({"preserve_input": True}, 1408, 1, 1),
    ({"separate_output": True}, 1408, 0, 1),
])
def test_autoencoder_contract_on_host(ae_path, tmp_path, options, arena, input_kept, output_kept):
    cm = tinyaot.compile(ae_path, name="ad", **options)
    assert cm.arena_bytes == arena
    assert cm.contract.cost_bytes == arena - 768
    assert _macro(cm, "INVOKE_PRESERVES_INPUT") == input_kept
    assert _macro(cm, "OUTPUT_OVERLAPS_INPUT") == 1 - output_kept
    x = _inputs(cm)
    got = _parse(_host(_program(cm, tmp_path, x), tmp_path))
    assert [got["OUT0"], got["OUT1"]] == _expected(cm, x)  # two instances, interleaved, each right
    assert int(got["INPUT_KEPT"]) == input_kept
    assert int(got["OUTPUT_KEPT"]) == output_kept
    assert got["NULL_OK"] == "1"


@pytest.mark.m33
def test_preserve_input_holds_on_the_m33(ae_path, tmp_path):
    cm = tinyaot.compile(ae_path, name="ad", preserve_input=True)
    x = _inputs(cm, seed=1)
    got = _parse(_m33(_program(cm, tmp_path, x), tmp_path))
    assert got["INPUT_KEPT"] == "1" and got["OUTPUT_KEPT"] == "1"
    assert [got["OUT0"], got["OUT1"]] == _expected(cm, x)


@pytest.mark.host
def test_kws_loses_its_input_unless_preserved(tmp_path):
    path = shared_file(KWS)
    plain, kept = tinyaot.compile(path, name="kws"), tinyaot.compile(path, name="kws", preserve_input=True)
    assert not plain.contract.input_preserved and kept.contract.input_preserved
    assert kept.arena_bytes >= plain.arena_bytes
    assert kept.contract.unconstrained_arena_bytes == plain.arena_bytes
    x = _inputs(kept, seed=2)
    got = _parse(_host(_program(kept, tmp_path, x), tmp_path))
    assert got["INPUT_KEPT"] == "1" and [got["OUT0"], got["OUT1"]] == _expected(kept, x)


def test_the_verifier_refuses_a_plan_that_breaks_the_contract(ae_path):
    from dataclasses import replace

    from tinyaot.plan.verify import verify_plan

    cm = tinyaot.compile(ae_path, name="ad")  # input and output share bytes
    with pytest.raises(PlanError, match="must survive invoke"):
        verify_plan(replace(cm.plan, keep_input=True))
    with pytest.raises(PlanError, match="asked apart"):
        verify_plan(replace(cm.plan, separate_output=True))


@pytest.mark.host
def test_contract_on_a_cnn_costs_what_the_report_says():
    import torch
    from zoo import ZOO, synthetic_data

    entry = next(e for e in ZOO if e.name == "branch_concat")
    model = entry.build().eval()
    cal, _ = synthetic_data(entry, 64, 0)
    example = torch.from_numpy(cal[:1])
    plain = tinyaot.compile(model, example, calibration=cal, name="cnn")
    kept = tinyaot.compile(model, example, calibration=cal, name="cnn", preserve_input=True)
    apart = tinyaot.compile(model, example, calibration=cal, name="cnn", separate_output=True)
    assert kept.contract.input_preserved and not kept.contract.output_overlaps_input
    assert not apart.contract.output_overlaps_input
    assert plain.arena_bytes <= apart.arena_bytes <= kept.arena_bytes
    assert kept.contract.cost_bytes == kept.arena_bytes - plain.arena_bytes
    assert not plain.contract.input_preserved  # the first conv writes over the dying input
    x = kept.quantize_input(kept.to_model_layout(cal[:3]))
    np.testing.assert_array_equal(kept.run(x, engine="host"), kept.run(x))
    np.testing.assert_array_equal(apart.run(x, engine="host"), plain.run(x))


def _two_models(tmp_path):
    """Kernels are shared files: the second export reuses them, and one program links both models."""
    ae, kws = tinyaot.compile(shared_file(AE), name="ad"), tinyaot.compile(shared_file(KWS), name="kws")
    first = {p.name for p in ae.export(tmp_path)}
    second = {p.name for p in kws.export(tmp_path)}
    assert first & second >= {"tinyaot_kernels.h", "fully_connected_s8.c"}
    xa, xk = _inputs(ae, 3), _inputs(kws, 4)
    vectors = (_c_array("ad_in", xa[0]) + _c_array("kws_in", xk[0]))
    (tmp_path / "vectors.h").write_text(vectors)
    main = tmp_path / "main_two.c"
    main.write_text(TWO_MODELS)
    sources = [main, *sorted(p for p in tmp_path.glob("*.c") if p != main)]
    return sources, {"AD": _run_hex(ae, xa[0]), "KWS": _run_hex(kws, xk[0])}


@pytest.mark.host
def test_two_models_in_one_folder_build_together(tmp_path):
    sources, expected = _two_models(tmp_path)
    got = _parse(_host(sources, tmp_path))
    assert {k: got[k] for k in expected} == expected


@pytest.mark.m33
def test_two_models_in_one_folder_build_together_on_the_m33(tmp_path):
    sources, expected = _two_models(tmp_path)
    got = _parse(_m33(sources, tmp_path))
    assert {k: got[k] for k in expected} == expected


TWO_MODELS = r"""
#include <stdint.h>
#include <string.h>
#include "ad.h"
#include "kws.h"
#include "vectors.h"
#ifdef TINYAOT_M33
#include "console.h"
#define PUT_HEX(p, n) console_put_hex_bytes((p), (n))
#define PUT_S(s) console_puts(s)
#else
#include <stdio.h>
static void put_hex(const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n; i++) {
        printf("%02x", (unsigned)b[i]);
    }
}
#define PUT_HEX(p, n) put_hex((p), (n))
#define PUT_S(s) fputs((s), stdout)
#endif

int main(void)
{
    if (ad_init(NULL, 0) != AD_OK || kws_init(NULL, 0) != KWS_OK) {
        return 1;
    }
    memcpy(ad_input(), ad_in, AD_INPUT_SIZE);
    memcpy(kws_input(), kws_in, KWS_INPUT_SIZE);
    if (ad_invoke() != AD_OK || kws_invoke() != KWS_OK) {
        return 1;
    }
    PUT_S("AD ");
    PUT_HEX(ad_output(), AD_OUTPUT_SIZE);
    PUT_S("\nKWS ");
    PUT_HEX(kws_output(), KWS_OUTPUT_SIZE);
    PUT_S("\n");
    return 0;
}
"""


def test_export_removes_stale_files_and_never_replaces_foreign_ones(ae_path, tmp_path):
    from tinyaot.codegen.folder import MANIFEST

    kws = tinyaot.compile(shared_file(KWS), name="kws")
    ae = tinyaot.compile(ae_path, name="kws")  # the same name, other kernels
    kws.export(tmp_path)
    only_kws = {p.name for p in tmp_path.glob("*.c")} - set(ae.c_sources.files)
    assert only_kws  # e.g. the conv kernels the autoencoder does not use
    with pytest.warns(UserWarning, match="already held model 'kws'"):
        ae.export(tmp_path)
    assert not any((tmp_path / f).exists() for f in only_kws)
    assert (tmp_path / MANIFEST).is_file()
    other = tmp_path / "other"
    other.mkdir()
    (other / "kws.c").write_text("/* my own file */\n")
    with pytest.raises(ModelError, match="did not write them"):
        ae.export(other)
    assert (other / "kws.c").read_text() == "/* my own file */\n"
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ModelError, match="is a file"):
        ae.export(tmp_path / "afile")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ae.export(tmp_path)  # the same model again: nothing replaced, no warning
