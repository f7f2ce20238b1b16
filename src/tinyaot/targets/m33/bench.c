#include "bench.h"

/* Secure alias of IoTKit TIMER0 (non-secure address 0x40000000). */
#define TIMER0_BASE   0x50000000u
#define TIMER_CTRL    0u   /* word offsets of the CMSDK APB timer registers */
#define TIMER_VALUE   1u
#define TIMER_RELOAD  2u
#define TIMER_CTRL_EN 1u

#define STACK_PAINT 0xC0DEFACEu

extern uint32_t __stack_limit[]; /* lowest stack address, from an505.ld */

static volatile uint32_t *const s_timer = (volatile uint32_t *)TIMER0_BASE;
static volatile uint32_t s_begin, s_end;
static uint32_t *s_painted_top;

void bench_timer_start(void)
{
    /* The timer is disabled at reset and reloads from RELOAD on underflow;
     * load both with the maximum so it counts down for 2^32 ticks. */
    s_timer[TIMER_CTRL] = 0u;
    s_timer[TIMER_RELOAD] = 0xFFFFFFFFu;
    s_timer[TIMER_VALUE] = 0xFFFFFFFFu;
    s_timer[TIMER_CTRL] = TIMER_CTRL_EN;
}

/* Down-counter: elapsed ticks = begin - end (mod 2^32).  The two bodies
 * store to different variables so identical-code folding cannot merge them. */
void bench_begin(void) { s_begin = s_timer[TIMER_VALUE]; }
void bench_end(void) { s_end = s_timer[TIMER_VALUE]; }
uint32_t bench_ticks(void) { return s_begin - s_end; }
uint32_t bench_now(void) { return s_timer[TIMER_VALUE]; }
uint32_t bench_begin_value(void) { return s_begin; }

/* A leaf without locals: its SP is the caller's SP at the call.  The stores
 * go through a volatile pointer so GCC does not turn the loop into a memset
 * call, whose own frame would land in the painted area. */
void bench_stack_paint(void)
{
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    s_painted_top = sp;
    for (volatile uint32_t *p = __stack_limit; p < sp; p++) {
        *p = STACK_PAINT;
    }
}

uint32_t bench_stack_used(void)
{
    const volatile uint32_t *p = __stack_limit;
    while (p < s_painted_top && *p == STACK_PAINT) {
        p++;
    }
    return (uint32_t)((uintptr_t)s_painted_top - (uintptr_t)p);
}
