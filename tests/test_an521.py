"""Two Cortex-M33 cores on QEMU mps2-an521: core 1 launched, a shared-memory barrier, per-core instruction counts."""

from __future__ import annotations

import pytest

from tinyaot.targets.m33.an521 import build_two_core_program, run_two_cores
from tinyaot.targets.toolchain import find_m33_toolchain

pytestmark = pytest.mark.m33

# Both cores run the same function on the same n: their marks around it must count the same instructions.
PROGRAM = """\
#include <stdint.h>
#include "console.h"
#include "tinyaot_multicore.h"

void tinyaot_core_mark(void);
static tinyaot_mailbox mb;
static volatile int32_t result[2];

__attribute__((noinline)) static void work(int core, int32_t n)
{
    int32_t s = 0;
    for (int32_t i = 0; i < n; i++) {
        s += i * (core + 1);
    }
    result[core] = s;
}

static void core1_main(void)
{
    uint32_t seen = 0;
    for (;;) {
        seen = tinyaot_mc_next(&mb, seen);
        const int32_t n = mb.job;
        tinyaot_core_mark();
        work(1, n);
        tinyaot_core_mark();
        tinyaot_mc_finish(&mb, seen);
    }
}

int main(void)
{
    if (tinyaot_core1_launch(core1_main) != 0) {
        return 3;
    }
    for (int32_t k = 1; k <= 3; k++) {
        tinyaot_mc_post(&mb, 1000 * k, 0);
        const int32_t n = mb.job;
        tinyaot_core_mark();
        work(0, n);
        tinyaot_core_mark();
        tinyaot_mc_join(&mb);
        console_puts("R ");
        console_put_i32(result[0]);
        console_putc(' ');
        console_put_i32(result[1]);
        console_putc('\\n');
    }
    return 0;
}
"""


def test_two_cores_meet_at_barrier_and_count_alike(tmp_path):
    tc = find_m33_toolchain()
    (tmp_path / "two.c").write_text(PROGRAM)
    elf = build_two_core_program(tc.gcc, [tmp_path / "two.c"], tmp_path / "build", elf_name="two")
    stdout, counts = run_two_cores(tc.qemu, elf, timeout=30)
    sums = [sum(range(1000 * k)) for k in (1, 2, 3)]
    # Core 0 reads core 1's result only after the barrier: every line has both.
    assert [line.split()[1:] for line in stdout.splitlines() if line.startswith("R ")] == \
        [[str(s), str(2 * s)] for s in sums]
    core0, core1 = counts.core(0), counts.core(1)
    assert len(core0) == len(core1) == 6
    spans0 = [b - a for a, b in zip(core0[::2], core0[1::2])]
    spans1 = [b - a for a, b in zip(core1[::2], core1[1::2])]
    # The same loop on either core: the same instructions per 1000 iterations (the calls' few set-up
    # instructions may differ: GCC may specialise work() for each constant core).
    assert spans0[1] - spans0[0] == spans0[2] - spans0[1] == spans1[1] - spans1[0] == spans1[2] - spans1[1] > 1000
    assert abs(spans0[0] - spans1[0]) < 10
    assert counts.totals[1] > sum(spans1)
