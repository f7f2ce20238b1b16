/* Deterministic instruction counting and stack measurement on QEMU mps2-an505.
 *
 * Under `qemu-system-arm -icount shift=N,sleep=off` virtual time advances by
 * exactly 2^N ns per executed instruction.  IoTKit TIMER0 (a CMSDK APB timer,
 * 20 MHz, i.e. 50 ns per tick, 32-bit down-counter) follows virtual time, so
 * the ticks between bench_begin() and bench_end() give
 *     instructions = round(ticks * 50 / 2^N).
 * Subtract the ticks of an empty begin/end pair to remove the markers' own
 * cost.  The timer wraps after 2^32 ticks (about 1.68 G instructions at N=7).
 *
 * Stack: bench_stack_paint() fills the free stack below the caller's SP with
 * a pattern; bench_stack_used() then reports how many bytes below that SP
 * were overwritten since, i.e. the high-water mark of the calls in between. */
#ifndef TINYAOT_BENCH_H
#define TINYAOT_BENCH_H

#include <stdint.h>

/* noipa keeps GCC from inlining, cloning or folding the markers, so each
 * one is a real call whose cost the empty-region calibration cancels. */
#if defined(__GNUC__) && !defined(__clang__)
#define BENCH_NOINLINE __attribute__((noipa, noinline))
#else
#define BENCH_NOINLINE __attribute__((noinline))
#endif

void bench_timer_start(void);  /* enable TIMER0, free-running from 0xFFFFFFFF */
BENCH_NOINLINE void bench_begin(void);
BENCH_NOINLINE void bench_end(void);
uint32_t bench_ticks(void);    /* timer ticks between the last begin/end pair */
uint32_t bench_now(void);      /* the raw (down-counting) timer value */
uint32_t bench_begin_value(void); /* the timer value the last bench_begin() read */

BENCH_NOINLINE void bench_stack_paint(void);
BENCH_NOINLINE uint32_t bench_stack_used(void);

#endif /* TINYAOT_BENCH_H */
