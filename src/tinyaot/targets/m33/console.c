#include "console.h"

#include "semihost.h"

/* One semihosting trap per line (or per full buffer) keeps big output
 * batches fast; each trap is a round trip into QEMU. */
static char s_line[128];
static size_t s_len;

static const char k_hex[] = "0123456789abcdef";

void console_flush(void)
{
    if (s_len == 0) {
        return;
    }
    s_line[s_len] = '\0';
    semihost_write0(s_line);
    s_len = 0;
}

void console_putc(char c)
{
    s_line[s_len++] = c;
    if (c == '\n' || s_len == sizeof s_line - 1) {
        console_flush();
    }
}

void console_puts(const char *s)
{
    while (*s != '\0') {
        console_putc(*s++);
    }
}

void console_put_u32(uint32_t v)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    while (n > 0) {
        console_putc(digits[--n]);
    }
}

void console_put_i32(int32_t v)
{
    if (v < 0) {
        console_putc('-');
        console_put_u32(0u - (uint32_t)v);
    } else {
        console_put_u32((uint32_t)v);
    }
}

void console_put_hex32(uint32_t v)
{
    for (int shift = 28; shift >= 0; shift -= 4) {
        console_putc(k_hex[(v >> shift) & 0xFu]);
    }
}

void console_put_hex_bytes(const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n; i++) {
        console_putc(k_hex[b[i] >> 4]);
        console_putc(k_hex[b[i] & 0xFu]);
    }
}
