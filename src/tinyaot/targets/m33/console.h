/* Line-buffered text output over semihosting, with just the number
 * formatting the harness needs.  Replaces printf, so the image links no
 * stdio and its reported flash size stays close to the model's own. */
#ifndef TINYAOT_CONSOLE_H
#define TINYAOT_CONSOLE_H

#include <stddef.h>
#include <stdint.h>

void console_puts(const char *s);
void console_putc(char c);
void console_put_u32(uint32_t v);           /* decimal */
void console_put_i32(int32_t v);            /* decimal, with sign */
void console_put_hex32(uint32_t v);         /* 8 lowercase hex digits */
void console_put_hex_bytes(const void *p, size_t n);
void console_flush(void);

#endif /* TINYAOT_CONSOLE_H */
