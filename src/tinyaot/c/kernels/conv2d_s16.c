/*
 * conv2d_s16.c - 16x8 NHWC convolution (int16 activations, int8 weights); twin of ref/conv2d_s16.py
 * (TFLite Micro's int16 ConvPerChannel).
 *
 * acc = sum over the taps inside the image of w * x (no offsets: int16 zero points are 0), then bias and
 * requantization: an int64 bias takes the int64 sum and tinyaot_requantize_64, an int32 one the sum wrapped to
 * int32 and tinyaot_requantize (accumulator_bits). Either way the sum is formed exactly in int64 (wrapping it to
 * int32 afterwards is what TFLM's wrapping int32 sum gives).
 *
 * Per output pixel the valid taps of a kernel row are one contiguous run of (valid kw) * in_c values (groups 1,
 * no dilation along w) or one run of in_c / groups per tap, the runs of successive kernel rows a fixed step
 * apart; four output channels share each run. Runs are summed in int32 pieces of at most CHUNK values, each exact
 * (|w * x| <= 2^22, CHUNK * 2^22 < 2^31), then added to the int64 accumulators: a whole window in one piece when
 * it fits (3x3 x 16 channels does), else run by run. On cores with the DSP extension a piece reads two int16
 * pairs per word, PKHBT / PKHTB pair them as (x0, x2) and (x1, x3), which is how SXTB16 widens four weight bytes,
 * and SMLAD does two MACs per instruction; in speed mode the weights also come widened to int16 (weights16),
 * which SMLAD takes as they are (two LDR per channel and four values, no SXTB16 / PKH: 20 instructions per 16
 * MACs instead of 29). Output pixels are written row-major.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define CHUNK 508       /* values per exact int32 piece: 508 * 2^22 < 2^31, a multiple of 4 */
#define CONV16_BLOCK 32 /* output channels per block: their int64 sums stay on the stack */

#if TINYAOT_DSP
/* Two int16 from any address (unaligned LDR is fine on M33). */
static inline int32_t read_s16x2(const int16_t *p)
{
    return *(const tinyaot_unaligned_i32 *)(const void *)p;
}

/* (low half of a, low half of b) and (high half of a, high half of b): x0 x1 | x2 x3 -> x0 x2 | x1 x3. */
static inline void pair_even_odd(int32_t x01, int32_t x23, int32_t *even, int32_t *odd)
{
    int32_t e;
    int32_t o;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(e) : "r"(x01), "r"(x23));
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(o) : "r"(x23), "r"(x01));
    *even = e;
    *odd = o;
}

/* acc + four MACs: input pairs (x0, x2) and (x1, x3), the weight bytes w0..w3 loaded from p[offset] in the same
 * asm, so that GCC keeps one weight word live at a time (loaded up front, four of them spill the loop). The
 * weights are constants nothing writes while the kernel runs, so the asm needs no memory operand. */
static inline int32_t mac4_load(int32_t x_even, int32_t x_odd, const int8_t *p, int32_t offset, int32_t acc)
{
    int32_t w;
    int32_t t;
    __asm__("ldr %[w], [%[p], %[off]]\n\t"
            "sxtb16 %[t], %[w]\n\t"
            "smlad %[acc], %[xe], %[t], %[acc]\n\t"
            "sxtb16 %[w], %[w], ror #8\n\t"
            "smlad %[acc], %[xo], %[w], %[acc]"
            : [acc] "+r"(acc), [w] "=&r"(w), [t] "=&r"(t)
            : [xe] "r"(x_even), [xo] "r"(x_odd), [p] "r"(p), [off] "r"(offset));
    return acc;
}

/* Four output channels of one piece: acc[i] = sum over rows r < rows, k < n of
 * w[i * w_stride + r * w_step + k] * x[r * x_step + k]. */
static inline void quad_sums(const int16_t *x, int32_t x_step, const int8_t *w, int32_t w_step, int32_t w_stride,
                             int32_t rows, int32_t n, int32_t *acc)
{
    const int32_t zero = 0;
    int32_t a0 = 0;
    int32_t a1 = 0;
    int32_t a2 = 0;
    int32_t a3 = 0;
    int32_t r;
    for (r = 0; r < rows; ++r) {
        const int16_t *xr = x + r * x_step;
        const int8_t *wr = w + r * w_step;
        const int8_t *w2 = wr + 2 * w_stride;
        const int16_t *x_end = xr + (n & ~3);
        int32_t k;
        while (xr != x_end) {
            int32_t xe;
            int32_t xo;
            pair_even_odd(read_s16x2(xr), read_s16x2(xr + 2), &xe, &xo);
            a0 = mac4_load(xe, xo, wr, zero, a0);
            a1 = mac4_load(xe, xo, wr, w_stride, a1);
            a2 = mac4_load(xe, xo, w2, zero, a2);
            a3 = mac4_load(xe, xo, w2, w_stride, a3);
            xr += 4;
            wr += 4;
            w2 += 4;
        }
        for (k = n & 3; k > 0; --k) {
            const int32_t xv = *xr++;
            a0 += xv * wr[0];
            a1 += xv * wr[w_stride];
            a2 += xv * w2[0];
            a3 += xv * w2[w_stride];
            ++wr;
            ++w2;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* quad_sums with the weights widened to int16 at compile time: per four values two LDR of x, per channel two LDR
 * of weights (four row pointers, post-incremented: any alignment) and two SMLAD straight on the halfword pairs,
 * 20 instructions for 16 MACs with the loop test. */
static inline void quad_sums_wide(const int16_t *x, int32_t x_step, const int16_t *w, int32_t w_step,
                                  int32_t w_stride, int32_t rows, int32_t n, int32_t *acc)
{
    int32_t a0 = 0;
    int32_t a1 = 0;
    int32_t a2 = 0;
    int32_t a3 = 0;
    int32_t r;
    for (r = 0; r < rows; ++r) {
        const int16_t *xr = x + r * x_step;
        const int16_t *w0 = w + r * w_step;
        const int16_t *w1 = w0 + w_stride;
        const int16_t *w2 = w1 + w_stride;
        const int16_t *w3 = w2 + w_stride;
        const int16_t *const x_end = xr + (n & ~3);
        int32_t k;
        if (xr != x_end) {
            int32_t u, v, t;
            __asm__ volatile(
                "1:\n\t"
                "ldr %[u], [%[x]], #4\n\t"
                "ldr %[v], [%[x]], #4\n\t"
                "ldr %[t], [%[w0]], #4\n\t"
                "smlad %[a0], %[u], %[t], %[a0]\n\t"
                "ldr %[t], [%[w0]], #4\n\t"
                "smlad %[a0], %[v], %[t], %[a0]\n\t"
                "ldr %[t], [%[w1]], #4\n\t"
                "smlad %[a1], %[u], %[t], %[a1]\n\t"
                "ldr %[t], [%[w1]], #4\n\t"
                "smlad %[a1], %[v], %[t], %[a1]\n\t"
                "ldr %[t], [%[w2]], #4\n\t"
                "smlad %[a2], %[u], %[t], %[a2]\n\t"
                "ldr %[t], [%[w2]], #4\n\t"
                "smlad %[a2], %[v], %[t], %[a2]\n\t"
                "ldr %[t], [%[w3]], #4\n\t"
                "smlad %[a3], %[u], %[t], %[a3]\n\t"
                "ldr %[t], [%[w3]], #4\n\t"
                "smlad %[a3], %[v], %[t], %[a3]\n\t"
                "cmp %[x], %[end]\n\t"
                "bne 1b"
                : [x] "+r"(xr), [w0] "+r"(w0), [w1] "+r"(w1), [w2] "+r"(w2), [w3] "+r"(w3), [a0] "+r"(a0),
                  [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [u] "=&r"(u), [v] "=&r"(v), [t] "=&r"(t)
                : [end] "r"(x_end)
                : "cc", "memory");
        }
        for (k = n & 3; k > 0; --k) {
            const int32_t xv = *xr++;
            a0 += xv * *w0++;
            a1 += xv * *w1++;
            a2 += xv * *w2++;
            a3 += xv * *w3++;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
/* The portable definition of quad_sums above. */
static void quad_sums(const int16_t *x, int32_t x_step, const int8_t *w, int32_t w_step, int32_t w_stride,
                      int32_t rows, int32_t n, int32_t *acc)
{
    int32_t a0 = 0;
    int32_t a1 = 0;
    int32_t a2 = 0;
    int32_t a3 = 0;
    int32_t r;
    for (r = 0; r < rows; ++r) {
        const int16_t *xr = x + r * x_step;
        const int8_t *wr = w + r * w_step;
        int32_t k;
        for (k = 0; k < n; ++k) {
            const int32_t xv = xr[k];
            a0 += (int32_t)wr[k] * xv;
            a1 += (int32_t)wr[w_stride + k] * xv;
            a2 += (int32_t)wr[2 * w_stride + k] * xv;
            a3 += (int32_t)wr[3 * w_stride + k] * xv;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* quad_sums on weights widened to int16: the same sums. */
static void quad_sums_wide(const int16_t *x, int32_t x_step, const int16_t *w, int32_t w_step, int32_t w_stride,
                           int32_t rows, int32_t n, int32_t *acc)
{
    int32_t r;
    int32_t i;
    for (i = 0; i < 4; ++i) {
        acc[i] = 0;
    }
    for (r = 0; r < rows; ++r) {
        int32_t k;
        for (k = 0; k < n; ++k) {
            const int32_t xv = x[r * x_step + k];
            for (i = 0; i < 4; ++i) {
                acc[i] += (int32_t)w[i * w_stride + r * w_step + k] * xv;
            }
        }
    }
}
#endif

/* One exact piece (rows * n <= CHUNK) for `count` output channels, w_stride apart: acc[c] += its int32 sum (w16:
 * the same weights widened, or NULL).
 * Not inlined: alone in its function the quad loop keeps every operand in a register. */
__attribute__((noinline)) static void piece(const int16_t *x, int32_t x_step, const int8_t *w, const int16_t *w16,
                                            int32_t w_step, int32_t w_stride, int32_t rows, int32_t n, int32_t count,
                                            int64_t *acc)
{
    int32_t sums[4];
    int32_t c = 0;
    for (; c + 4 <= count; c += 4) {
        if (w16 != 0) {
            quad_sums_wide(x, x_step, w16 + c * w_stride, w_step, w_stride, rows, n, sums);
        } else {
            quad_sums(x, x_step, w + c * w_stride, w_step, w_stride, rows, n, sums);
        }
        acc[c] += sums[0];
        acc[c + 1] += sums[1];
        acc[c + 2] += sums[2];
        acc[c + 3] += sums[3];
    }
    for (; c < count; ++c) {
        const int8_t *wc = w + c * w_stride;
        int32_t sum = 0;
        int32_t r;
        for (r = 0; r < rows; ++r) {
            const int16_t *xr = x + r * x_step;
            const int8_t *wr = wc + r * w_step;
            int32_t k;
            for (k = 0; k < n; ++k) {
                sum += (int32_t)wr[k] * (int32_t)xr[k];
            }
        }
        acc[c] += sum;
    }
}

/* acc[c] += sum over `rows` runs of n values (x one x_step, w one w_step apart) of w[c * w_stride + k] * x[k] for
 * `count` output channels: the whole window in one exact piece when rows * n <= CHUNK, else run by run in pieces
 * of at most CHUNK values. */
static void runs_dot(const int16_t *x, int32_t x_step, const int8_t *w, const int16_t *w16, int32_t w_step,
                     int32_t w_stride, int32_t rows, int32_t n, int32_t count, int64_t *acc)
{
    int32_t r;
    if (rows * n <= CHUNK) {
        piece(x, x_step, w, w16, w_step, w_stride, rows, n, count, acc);
        return;
    }
    for (r = 0; r < rows; ++r) {
        int32_t done;
        for (done = 0; done < n; done += CHUNK) {
            const int32_t len = n - done < CHUNK ? n - done : CHUNK;
            const int32_t at = r * w_step + done;
            piece(x + r * x_step + done, x_step, w + at, w16 != 0 ? w16 + at : 0, w_step, w_stride, 1, len, count,
                  acc);
        }
    }
}

static int16_t conv16_output(int64_t acc, int32_t oc, const tinyaot_conv16_params *params)
{
    int32_t v;
    acc += params->bias[oc];
    if (params->accumulator_bits == 64) {
        v = acc == (int32_t)acc ? tinyaot_requantize_64_int32((int32_t)acc, params->multiplier[oc], params->shift[oc])
                                : tinyaot_requantize_64(acc, params->multiplier[oc], params->shift[oc]);
    } else {
        v = tinyaot_requantize((int32_t)(uint32_t)(uint64_t)acc, params->multiplier[oc], params->shift[oc]);
    }
    return (int16_t)tinyaot_clamp(v, params->act_min, params->act_max);
}

/* The valid taps of one output pixel: kernel rows [ky0, ky1) and columns [kx0, kx1), the input pixel of tap (0, 0)
 * at (iy0, ix0) (outside the image when padded). */
typedef struct {
    int32_t iy0, ix0;
    int32_t ky0, ky1, kx0, kx1;
} conv16_window;

/* Output channels [oc, oc + count) of group g at one pixel into out[oc..]. */
static void conv16_block(const int16_t *image, const tinyaot_conv16_params *params, const conv16_window *win,
                         int32_t g, int32_t oc, int32_t count, int16_t *out)
{
    const int32_t in_c = params->in_c;
    const int32_t group_c = in_c / params->groups;
    const int32_t kw = params->kernel_w;
    const int32_t w_stride = params->kernel_h * kw * group_c;
    const int32_t row_step = params->dilation_h * params->in_w * in_c;
    int64_t acc[CONV16_BLOCK];
    int32_t i;
    for (i = 0; i < count; ++i) {
        acc[i] = 0;
    }
    if (win->ky1 > win->ky0 && win->kx1 > win->kx0) {  /* else no tap inside the image: the sum is 0 */
        const int32_t rows = win->ky1 - win->ky0;
        const int32_t w_at = oc * w_stride + win->ky0 * kw * group_c;
        const int8_t *w = params->weights + w_at;
        const int16_t *w16 = params->weights16 != 0 ? params->weights16 + w_at : 0;
        const int16_t *x = image + (win->iy0 + win->ky0 * params->dilation_h) * params->in_w * in_c + g * group_c;
        if (params->groups == 1 && params->dilation_w == 1) {  /* a kernel row's valid taps are one run */
            const int32_t first = win->kx0 * group_c;
            runs_dot(x + (win->ix0 + win->kx0) * in_c, row_step, w + first, w16 != 0 ? w16 + first : 0,
                     kw * group_c, w_stride, rows, (win->kx1 - win->kx0) * in_c, count, acc);
        } else {  /* one run of in_c / groups values per tap */
            int32_t kx;
            for (kx = win->kx0; kx < win->kx1; ++kx) {
                runs_dot(x + (win->ix0 + kx * params->dilation_w) * in_c, row_step, w + kx * group_c,
                         w16 != 0 ? w16 + kx * group_c : 0, kw * group_c, w_stride, rows, group_c, count, acc);
            }
        }
    }
    for (i = 0; i < count; ++i) {
        out[oc + i] = conv16_output(acc[i], oc + i, params);
    }
}

void tinyaot_conv2d_s16(const int16_t *input, const tinyaot_conv16_params *params, int16_t *output)
{
    const int32_t groups = params->groups;
    const int32_t group_out = params->out_c / groups;
    const int32_t image_size = params->in_h * params->in_w * params->in_c;
    int16_t *out = output;
    int32_t b;
    for (b = 0; b < params->batches; ++b) {
        const int16_t *image = input + b * image_size;
        int32_t oy;
        for (oy = 0; oy < params->out_h; ++oy) {
            conv16_window win;
            int32_t ox;
            win.iy0 = oy * params->stride_h - params->pad_top;
            tinyaot_valid_taps(win.iy0, params->dilation_h, params->kernel_h, params->in_h, &win.ky0, &win.ky1);
            for (ox = 0; ox < params->out_w; ++ox) {
                int32_t g;
                win.ix0 = ox * params->stride_w - params->pad_left;
                tinyaot_valid_taps(win.ix0, params->dilation_w, params->kernel_w, params->in_w, &win.kx0, &win.kx1);
                for (g = 0; g < groups; ++g) {
                    const int32_t oc_end = (g + 1) * group_out;
                    int32_t oc;
                    for (oc = g * group_out; oc < oc_end; oc += CONV16_BLOCK) {
                        conv16_block(image, params, &win, g, oc, oc_end - oc < CONV16_BLOCK ? oc_end - oc
                                                                                            : CONV16_BLOCK, out);
                    }
                }
                out += params->out_c;
            }
        }
    }
}
