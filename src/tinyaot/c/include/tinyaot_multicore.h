/*
 * tinyaot_multicore.h - the two-core contract of a model compiled with cores=2.
 *
 * Core 0 runs invoke(); core 1 is launched once, by init, into a loop that waits for work. For each layer split
 * between the cores, core 0 posts the layer's number to the mailbox, runs its own part, then waits until core 1
 * says it finished its part: one barrier per split layer, in shared memory (a DMB before every flag store and
 * after every flag load, SEV after a store, WFE while waiting), no interrupts and no locks. Each part writes its
 * own rows or channels of the output, so the bytes are the one-core model's whatever the timing.
 *
 * The port provides tinyaot_core1_launch: start core 1 running `entry` (which never returns) and answer 0, or
 * answer nonzero when there is no second core. multicore.c defines a weak one that answers 1, so a model built
 * where nobody provides it (the host, a one-core board) runs core 1's parts on core 0 right after its own: the
 * same bytes, one core's time. On an RP2350 it is multicore_launch_core1; on QEMU mps2-an521 the harness's
 * (targets/m33/an521.c).
 */
#ifndef TINYAOT_MULTICORE_H
#define TINYAOT_MULTICORE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int tinyaot_core1_launch(void (*entry)(void));

typedef struct {
    volatile uint32_t posted;      /* jobs core 0 has posted */
    volatile uint32_t done;        /* jobs core 1 has finished */
    volatile int32_t job;          /* the posted job: the split layer's number */
    uint8_t *volatile arena;       /* the arena it works in */
} tinyaot_mailbox;

#if defined(__arm__) || defined(__thumb__)
static inline void tinyaot_mc_fence(void) { __asm__ volatile("dmb" : : : "memory"); }
static inline void tinyaot_mc_signal(void) { __asm__ volatile("sev" : : : "memory"); }
static inline void tinyaot_mc_idle(void) { __asm__ volatile("wfe" : : : "memory"); }
#else
static inline void tinyaot_mc_fence(void) { __sync_synchronize(); }
static inline void tinyaot_mc_signal(void) {}
static inline void tinyaot_mc_idle(void) {}
#endif

/* Core 0: hand `job` in `arena` to core 1. */
static inline void tinyaot_mc_post(tinyaot_mailbox *mb, int32_t job, uint8_t *arena)
{
    mb->job = job;
    mb->arena = arena;
    tinyaot_mc_fence();
    mb->posted = mb->posted + 1u;
    tinyaot_mc_fence();
    tinyaot_mc_signal();
}

/* Core 0: wait until core 1 has finished every posted job (the barrier). */
static inline void tinyaot_mc_join(const tinyaot_mailbox *mb)
{
    while (mb->done != mb->posted) {
        tinyaot_mc_idle();
    }
    tinyaot_mc_fence();
}

/* Core 1: wait for the job after `seen`, answer its number. */
static inline uint32_t tinyaot_mc_next(const tinyaot_mailbox *mb, uint32_t seen)
{
    while (mb->posted == seen) {
        tinyaot_mc_idle();
    }
    tinyaot_mc_fence();
    return seen + 1u;
}

/* Core 1: job number `seq` is finished; its writes are visible before the flag. */
static inline void tinyaot_mc_finish(tinyaot_mailbox *mb, uint32_t seq)
{
    tinyaot_mc_fence();
    mb->done = seq;
    tinyaot_mc_fence();
    tinyaot_mc_signal();
}

#ifdef __cplusplus
}
#endif

#endif /* TINYAOT_MULTICORE_H */
