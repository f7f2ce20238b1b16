/* Core 1 of QEMU mps2-an521 (SSE-200: two Cortex-M33 cores, Secure state): tinyaot_core1_launch.
 *
 * Core 1 starts held: the SSE-200 system control block's CPUWAIT register (offset 0x118) resets with bit 1 set.
 * Writing its initial Secure vector table address to INITSVTOR1 (offset 0x114) and then clearing CPUWAIT bit 1
 * powers it up and resets it (QEMU hw/misc/iotkit-sysctl.c: cpuwait_write -> arm_set_cpu_on_and_reset), so it
 * takes its SP and PC from that table. Its table here gives it its own stack (CORE1_STACK_BYTES of .bss, with
 * MSPLIM at its base) and a reset handler that enables its FPU and calls the entry core 0 passed. */
#include <stdint.h>

#include "tinyaot_multicore.h"

void tinyaot_core_mark(void);

#define SYSCTL_BASE      0x50021000u  /* Secure alias of the SSE-200 system control registers */
#define SYSCTL_INITSVTOR1 (*(volatile uint32_t *)(SYSCTL_BASE + 0x114u))
#define SYSCTL_CPUWAIT   (*(volatile uint32_t *)(SYSCTL_BASE + 0x118u))
#define SCB_CPACR        (*(volatile uint32_t *)0xE000ED88u)

#define CORE1_STACK_BYTES 16384u

void Fault_Handler(void);
static void core1_reset(void);

static uint64_t s_core1_stack[CORE1_STACK_BYTES / 8u];
static void (*volatile s_core1_entry)(void);

/* VTOR ignores the low 7 bits: the table is 128-byte aligned. */
__attribute__((aligned(128), used))
static const void *const s_core1_vectors[16] = {
    &s_core1_stack[CORE1_STACK_BYTES / 8u], /*  0 initial MSP */
    core1_reset,                            /*  1 reset       */
    Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
    0, 0, 0,
    Fault_Handler, Fault_Handler, 0, Fault_Handler, Fault_Handler,
};

static void core1_reset(void)
{
    __asm__ volatile("msr msplim, %0" : : "r"(s_core1_stack));
    SCB_CPACR |= 0xFu << 20;  /* each core has its own CPACR */
    __asm__ volatile("dsb\n\tisb" : : : "memory");
    s_core1_entry();
    for (;;) {
        __asm__ volatile("wfe");
    }
}

int tinyaot_core1_launch(void (*entry)(void))
{
    s_core1_entry = entry;
    __asm__ volatile("dmb" : : : "memory");
    SYSCTL_INITSVTOR1 = (uint32_t)(uintptr_t)s_core1_vectors;
    SYSCTL_CPUWAIT = SYSCTL_CPUWAIT & ~2u;
    return 0;
}

/* A mark for the core-count plugin (core_count_plugin.c): each call records how many instructions the calling
 * core has executed. Not inlined, so its one instruction has one address the plugin watches. */
__attribute__((noinline)) void tinyaot_core_mark(void)
{
    __asm__ volatile("" : : : "memory");
}
