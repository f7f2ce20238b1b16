/* ARM semihosting for Cortex-M: the guest traps with BKPT 0xAB and QEMU
 * (-semihosting-config enable=on,target=native) services the request.
 * This is the only I/O channel the M33 harness uses, so no UART driver and
 * no libc stdio are needed.  Operation numbers: Arm "Semihosting for AArch32
 * and AArch64", version 2. */
#ifndef TINYAOT_SEMIHOST_H
#define TINYAOT_SEMIHOST_H

#include <stdint.h>

#define SEMIHOST_SYS_WRITE0        0x04u
#define SEMIHOST_SYS_EXIT          0x18u
#define SEMIHOST_SYS_EXIT_EXTENDED 0x20u
#define SEMIHOST_ADP_APP_EXIT      0x20026u /* ADP_Stopped_ApplicationExit */
#define SEMIHOST_ADP_RUNTIME_ERROR 0x20023u /* ADP_Stopped_RunTimeErrorUnknown */

static inline uint32_t semihost_call(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* Writes a NUL-terminated string to the host console. */
static inline void semihost_write0(const char *s)
{
    (void)semihost_call(SEMIHOST_SYS_WRITE0, s);
}

/* Ends the QEMU process with `status` as its exit code.  SYS_EXIT_EXTENDED
 * carries the full code; plain SYS_EXIT on AArch32 can only say ok/failed,
 * so it is kept as a fallback for hosts without the extension. */
static inline __attribute__((noreturn)) void semihost_exit(int status)
{
    const uint32_t block[2] = { SEMIHOST_ADP_APP_EXIT, (uint32_t)status };
    (void)semihost_call(SEMIHOST_SYS_EXIT_EXTENDED, block);
    (void)semihost_call(SEMIHOST_SYS_EXIT,
                        (const void *)(uintptr_t)(status == 0 ? SEMIHOST_ADP_APP_EXIT
                                                              : SEMIHOST_ADP_RUNTIME_ERROR));
    for (;;) {
    }
}

#endif /* TINYAOT_SEMIHOST_H */
