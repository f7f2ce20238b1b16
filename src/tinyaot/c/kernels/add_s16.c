/*
 * add_s16.c - the 16x8 element-wise add and subtract; twin of ref/add_s16.py (TFLM's int16 ADD / SUB: the
 * general rescaling path with a left shift of 15).
 *
 * Each element: both inputs shifted left, scaled by their multipliers, added (or subtracted), the sum rescaled
 * and clamped; the zero points are 0. The output is walked in order over out_shape, each operand read at its
 * strides (0 along the axes it broadcasts), so the kernel may run in place over an operand with the output's
 * full shape: every element is read before it is written. Each output row (the last axis) runs in a function
 * of its own, one for add and one for subtract, so that the loop keeps every constant in a register. On cores
 * with the DSP extension each of the three rescalings is one SMMLAR and one ASR (add16_scale_dsp, equal to
 * add16_scale for every input the kernel meets).
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* TFLM's MultiplyByQuantizedMultiplierSmallerThanOneExp for its multipliers (in [0, 2^31), right = -shift >= 0):
 * tinyaot_requantize_nonneg without its left-shift case. */
static inline int32_t add16_scale(int32_t x, int32_t multiplier, int32_t right)
{
    int32_t high = (int32_t)((uint64_t)((int64_t)x * multiplier + ((int64_t)1 << 30)) >> 31);
    if (right == 0) {
        return high;
    }
    high += high >> 31;
    return (high >> right) + ((high >> (right - 1)) & 1);
}

#if TINYAOT_DSP
/*
 * add16_scale on the DSP extension, for |x| <= 2^30 (x = input << 15, or the sum of two scaled inputs, each at
 * most 2^29 in magnitude): SMMLAR(2x, multiplier, correction) is the high word plus the correction in one
 * instruction (2x fits int32), then one ASR. With correction = 2^(right - 1) - (x < 0) this is the rounding divide
 * of tinyaot_requantize_right (high has x's sign except where it is 0, and there both give 0); with right 0 the
 * correction is 0 and the shift none. The input of the larger scale has multiplier 2^30, shift 0 (exactly 1/2):
 * its scaled value is input << 14 exactly, one LSL.
 */
#define ADD16_HALF_MULTIPLIER 1073741824 /* 2^30 with shift 0: the scale 1/2 */

typedef struct {
    int32_t multiplier, right, half, sign_mask; /* sign_mask: -1 where right > 0, else 0 */
} add16_scaler;

static inline add16_scaler add16_scaler_of(int32_t multiplier, int32_t shift)
{
    add16_scaler k;
    k.multiplier = multiplier;
    k.right = -shift;
    k.half = shift < 0 ? (int32_t)1 << (-shift - 1) : 0;
    k.sign_mask = shift < 0 ? -1 : 0;
    return k;
}

static inline int32_t add16_scale_dsp(int32_t x, const add16_scaler *k)
{
    const int32_t correction = k->half + (k->sign_mask & (x >> 31));
    int32_t high;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(high) : "r"(x + x), "r"(k->multiplier), "r"(correction));
    return high >> k->right;
}

/* One input scaled: input << 14 when `half` (its scaler is exactly 1/2), else add16_scale_dsp of input << 15. */
static inline int32_t add16_input(int32_t v, const add16_scaler *k, int32_t half)
{
    return half ? (int32_t)((uint32_t)v << 14) : add16_scale_dsp((int32_t)((uint32_t)v << 15), k);
}

/* One output row; half_a / half_b constants where inlined, so that each row function has one shape. */
static inline __attribute__((always_inline)) void add16_row_dsp(const int16_t *pa, const int16_t *pb,
                                                                int32_t step_a, int32_t step_b, int32_t row,
                                                                const tinyaot_add16_params *params, int16_t *out,
                                                                int32_t subtract, int32_t half_a, int32_t half_b)
{
    const add16_scaler k1 = add16_scaler_of(params->input1_multiplier, params->input1_shift);
    const add16_scaler k2 = add16_scaler_of(params->input2_multiplier, params->input2_shift);
    const add16_scaler ko = add16_scaler_of(params->output_multiplier, params->output_shift);
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int16_t *const end = out + row;
    while (out != end) {
        const int32_t a = add16_input(*pa, &k1, half_a); /* |a| <= 2^29 */
        const int32_t b = add16_input(*pb, &k2, half_b);
        const int32_t v = add16_scale_dsp(subtract ? a - b : a + b, &ko);
        *out++ = (int16_t)tinyaot_clamp(v, act_min, act_max);
        pa += step_a;
        pb += step_b;
    }
}

static int32_t add16_is_half(int32_t multiplier, int32_t shift)
{
    return multiplier == ADD16_HALF_MULTIPLIER && shift == 0;
}

#define ADD16_ROW_FN(name, subtract, half_a, half_b)                                                             \
    __attribute__((noinline)) static void name(const int16_t *pa, const int16_t *pb, int32_t step_a,            \
                                               int32_t step_b, int32_t row, const tinyaot_add16_params *params, \
                                               int16_t *out)                                                     \
    {                                                                                                            \
        add16_row_dsp(pa, pb, step_a, step_b, row, params, out, subtract, half_a, half_b);                       \
    }
ADD16_ROW_FN(add16_add_hh, 0, 1, 1)
ADD16_ROW_FN(add16_add_hg, 0, 1, 0)
ADD16_ROW_FN(add16_add_gh, 0, 0, 1)
ADD16_ROW_FN(add16_add_gg, 0, 0, 0)
ADD16_ROW_FN(add16_sub_hh, 1, 1, 1)
ADD16_ROW_FN(add16_sub_hg, 1, 1, 0)
ADD16_ROW_FN(add16_sub_gh, 1, 0, 1)
ADD16_ROW_FN(add16_sub_gg, 1, 0, 0)

typedef void (*add16_row_fn)(const int16_t *, const int16_t *, int32_t, int32_t, int32_t,
                             const tinyaot_add16_params *, int16_t *);

/* The row function of the layer: add or subtract, each input scaled by 1/2 exactly or not. */
static add16_row_fn add16_row_for(const tinyaot_add16_params *params)
{
    static const add16_row_fn rows[8] = {add16_add_gg, add16_add_gh, add16_add_hg, add16_add_hh,
                                         add16_sub_gg, add16_sub_gh, add16_sub_hg, add16_sub_hh};
    const int32_t half_a = add16_is_half(params->input1_multiplier, params->input1_shift);
    const int32_t half_b = add16_is_half(params->input2_multiplier, params->input2_shift);
    return rows[(params->subtract ? 4 : 0) + half_a * 2 + half_b];
}
#else
static inline void add16_row(const int16_t *pa, const int16_t *pb, int32_t step_a, int32_t step_b, int32_t row,
                             const tinyaot_add16_params *params, int16_t *out, int32_t subtract)
{
    const int32_t scale = (int32_t)1 << params->left_shift; /* |x| <= 2^15, so x * 2^15 fits */
    const int32_t m1 = params->input1_multiplier;
    const int32_t r1 = -params->input1_shift;
    const int32_t m2 = params->input2_multiplier;
    const int32_t r2 = -params->input2_shift;
    const int32_t mo = params->output_multiplier;
    const int32_t ro = -params->output_shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    for (i = 0; i < row; ++i) {
        const int32_t a = add16_scale((int32_t)*pa * scale, m1, r1); /* at most 2^29 in magnitude */
        const int32_t b = add16_scale((int32_t)*pb * scale, m2, r2);
        const int32_t v = add16_scale(subtract ? a - b : a + b, mo, ro);
        out[i] = (int16_t)tinyaot_clamp(v, act_min, act_max);
        pa += step_a;
        pb += step_b;
    }
}

__attribute__((noinline)) static void add16_row_add(const int16_t *pa, const int16_t *pb, int32_t step_a,
                                                    int32_t step_b, int32_t row, const tinyaot_add16_params *params,
                                                    int16_t *out)
{
    add16_row(pa, pb, step_a, step_b, row, params, out, 0);
}

__attribute__((noinline)) static void add16_row_sub(const int16_t *pa, const int16_t *pb, int32_t step_a,
                                                    int32_t step_b, int32_t row, const tinyaot_add16_params *params,
                                                    int16_t *out)
{
    add16_row(pa, pb, step_a, step_b, row, params, out, 1);
}

typedef void (*add16_row_fn)(const int16_t *, const int16_t *, int32_t, int32_t, int32_t,
                             const tinyaot_add16_params *, int16_t *);

static add16_row_fn add16_row_for(const tinyaot_add16_params *params)
{
    return params->subtract ? add16_row_sub : add16_row_add;
}
#endif

void tinyaot_add_s16(const int16_t *input1, const int16_t *input2, const tinyaot_add16_params *params,
                     int16_t *output)
{
    const int32_t *const out_shape = params->out_shape;
    const int32_t *const a_strides = params->a_strides;
    const int32_t *const b_strides = params->b_strides;
    const int32_t row = out_shape[3];
    const int32_t step_a = a_strides[3], step_b = b_strides[3]; /* 1, or 0 where the operand broadcasts */
    const add16_row_fn row_fn = add16_row_for(params);
    int32_t i0, i1, i2;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int16_t *pa = input1 + i0 * a_strides[0] + i1 * a_strides[1] + i2 * a_strides[2];
                const int16_t *pb = input2 + i0 * b_strides[0] + i1 * b_strides[1] + i2 * b_strides[2];
                row_fn(pa, pb, step_a, step_b, row, params, output);
                output += row;
            }
        }
    }
}
