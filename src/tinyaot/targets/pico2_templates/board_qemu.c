/* board_qemu.c - tinyaot's QEMU mps2-an505 board layer for a Pico 2 project's
 * app.c (tests only; not part of the exported project).  Text goes out over
 * semihosting; the clock is IoTKit TIMER0, which under `-icount` advances a
 * fixed number of ticks per executed instruction, so app.c's "time" is an
 * exact instruction count.  The stack is painted before app_run() and its
 * high-water mark printed after it ("stack <bytes>").  app_run()'s status
 * becomes QEMU's exit status. */
#include <stdint.h>

#include "app.h"
#include "bench.h"
#include "console.h"

#define TIMER0_VALUE ((volatile uint32_t *)0x50000004u) /* Secure alias, down-counter */
#define TIMER_NS_PER_TICK 50u
#define NS_PER_INSTRUCTION (1u << @ICOUNT_SHIFT@)

static void qemu_print(const char *text)
{
    console_puts(text);
}

/* Instructions since bench_timer_start(); the timer counts down from 2^32 - 1. */
static uint64_t qemu_instructions(void)
{
    uint64_t ticks = 0xFFFFFFFFu - *TIMER0_VALUE;
    return ticks * TIMER_NS_PER_TICK / NS_PER_INSTRUCTION;
}

int main(void)
{
    bench_timer_start();
    bench_stack_paint();
    int rc = app_run(qemu_print, qemu_instructions, "instructions");
    uint32_t stack = bench_stack_used();
    console_puts("checksum ");
    console_put_hex32(app_checksum);
    console_puts("\nstack ");
    console_put_u32(stack);
    console_putc('\n');
    console_flush();
    return rc == 0 ? 0 : 1;
}
