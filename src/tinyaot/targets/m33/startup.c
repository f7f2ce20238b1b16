/* Reset and fault handling for QEMU mps2-an505 (Cortex-M33, Secure state).
 * The core resets Secure with VTOR_S = 0x10000000, so the vector table is
 * placed first in the Secure alias of SSRAM1 by an505.ld.  main()'s return
 * value becomes QEMU's exit status; any fault prints the fault registers and
 * exits with status 99. */
#include <stdint.h>

#include "console.h"
#include "semihost.h"

#define FAULT_EXIT_STATUS 99

#define SCB_CPACR ((volatile uint32_t *)0xE000ED88u)
#define SCB_CFSR  ((volatile uint32_t *)0xE000ED28u) /* UFSR:BFSR:MMFSR */
#define SCB_HFSR  ((volatile uint32_t *)0xE000ED2Cu)
#define SCB_MMFAR ((volatile uint32_t *)0xE000ED34u)
#define SCB_BFAR  ((volatile uint32_t *)0xE000ED38u)
#define SAU_SFSR  ((volatile uint32_t *)0xE000EDE4u)

extern uint32_t __stack_top[], __stack_limit[];
extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern int main(void);

void Reset_Handler(void);
void Fault_Handler(void);
void fault_report(const uint32_t *frame);

__attribute__((section(".vectors"), used))
const void *const g_vectors[16] = {
    __stack_top,   /*  0 initial MSP  */
    Reset_Handler, /*  1 reset        */
    Fault_Handler, /*  2 NMI          */
    Fault_Handler, /*  3 HardFault    */
    Fault_Handler, /*  4 MemManage    */
    Fault_Handler, /*  5 BusFault     */
    Fault_Handler, /*  6 UsageFault   */
    Fault_Handler, /*  7 SecureFault  */
    0, 0, 0,       /*  8-10 reserved  */
    Fault_Handler, /* 11 SVCall       */
    Fault_Handler, /* 12 DebugMonitor */
    0,             /* 13 reserved     */
    Fault_Handler, /* 14 PendSV       */
    Fault_Handler, /* 15 SysTick      */
};

static void put_reg(const char *label, uint32_t value)
{
    console_puts(label);
    console_put_hex32(value);
}

/* Called with the exception frame the core pushed on the main stack:
 * r0-r3, r12, lr, pc, xpsr. */
void fault_report(const uint32_t *frame)
{
    console_flush();
    put_reg("FAULT CFSR=0x", *SCB_CFSR);
    put_reg(" HFSR=0x", *SCB_HFSR);
    put_reg(" SFSR=0x", *SAU_SFSR);
    put_reg(" MMFAR=0x", *SCB_MMFAR);
    put_reg(" BFAR=0x", *SCB_BFAR);
    put_reg(" PC=0x", frame[6]);
    put_reg(" LR=0x", frame[5]);
    console_putc('\n');
    semihost_exit(FAULT_EXIT_STATUS);
}

/* Naked, so the MSP still points at the exception frame when it is read. */
__attribute__((naked)) void Fault_Handler(void)
{
    __asm__ volatile("mrs r0, msp\n\t"
                     "b fault_report\n\t");
}

void Reset_Handler(void)
{
    /* A stack overflow should fault (CFSR.STKOF), not corrupt .bss. */
    __asm__ volatile("msr msplim, %0" : : "r"(__stack_limit));

    /* CP10/CP11 full access before any FP instruction (hard-float ABI). */
    *SCB_CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" : : : "memory");

    const uint32_t *src = __data_load;
    for (uint32_t *dst = __data_start; dst < __data_end;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = __bss_start; dst < __bss_end;) {
        *dst++ = 0u;
    }

    int status = main();
    console_flush();
    semihost_exit(status);
}
