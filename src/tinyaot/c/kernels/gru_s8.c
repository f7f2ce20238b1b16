/*
 * gru_s8.c - one unidirectional GRU layer from the LSTM's integer blocks; twin of ref/gru_s8.py.
 *
 * Per step: the three gates' int8 fully connected layers into int16 Q3.12 (from the input and from the previous
 * hidden state, kept apart for the candidate n, whose recurrent part is scaled by r first; tinyaot_rows_q12), TFLM's
 * int16 sigmoid / tanh (tinyaot_sigmoid_q15 / tinyaot_tanh_q15; all three in lstm_s8.c), then h16 = (1 - z) * n + z * h16 in int16 and the
 * int8 h the next step's recurrent layer reads. Everything lives in `work`, the layer's working memory in the
 * arena; the initial state is zero (h at its zero point). tinyaot_gru_s8_stateful (a streamed layer) starts from
 * h16 in the layer's slot of the state region instead (zero bytes: the zero state; the int8 h is narrowed from it)
 * and writes the final h16 back there.
 */
#include <string.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define GRU_GATES 3
#define INT16_LO (-32768)
#define INT16_HI 32767
#define ONE_Q15 32768 /* 1.0 in Q0.15, for 1 - z */
#define GATE_TANH_MULTIPLIER 3 /* a gate's Q3.12 value into tanh: times 3, no shift */

/*
 * The gate rows, up to TINYAOT_GATE_BLOCK at a time (defined in lstm_s8.c, which a model with a GRU links too:
 * codegen/emit_inplace.py KERNEL_DEPS): out[i] = sat16(requantize(bias[i] + sum_k w[i * n + k] * x[k],
 * multiplier[i], shift[i])), i < count (int16 Q3.12 values in int32).
 */
void tinyaot_rows_q12(const int8_t *x, const int8_t *w, int32_t n, int32_t count, const int32_t *bias,
                      const int32_t *multiplier, const int32_t *shift, int32_t *out);

static inline int32_t sat16(int32_t x)
{
    return tinyaot_clamp(x, INT16_LO, INT16_HI);
}

/* The int8 hidden state the recurrent layer reads, from the int16 one. */
static inline int8_t narrow(int32_t h16, const tinyaot_gru_params *params)
{
    return (int8_t)tinyaot_clamp(tinyaot_requantize(h16, params->narrow_multiplier, params->narrow_shift)
                                 + params->hidden_offset, -128, 127);
}

/* The layer over the sequence from `slot`'s h16 (NULL: the zero state), the final h16 back into it.
 * Inlined into both entry points with `slot` known, so the whole-sequence one tests no slot: streaming costs
 * it nothing. */
__attribute__((always_inline)) static inline void gru_run(const int8_t *input, const tinyaot_gru_params *params,
                                                          int16_t *work, int8_t *output, int16_t *slot)
{
    const int32_t steps = params->steps;
    const int32_t in_size = params->input_size;
    const int32_t units = params->hidden_size;
    const int8_t *const w_ih = params->weights_ih;
    const int8_t *const w_hh = params->weights_hh;
    int16_t *const h16 = work;
    int16_t *const reset = work + units;       /* r, then z, each [units] */
    int16_t *const update = work + 2 * units;
    int16_t *const cand_x = work + 3 * units;  /* the candidate's input part */
    int16_t *const cand_h = work + 4 * units;  /* and its recurrent part */
    int8_t *const hidden = (int8_t *)(void *)(work + 5 * units);
    int32_t t, j;

    if (slot == NULL) {
        memset(h16, 0, (size_t)units * sizeof(int16_t));
        memset(hidden, (int)params->hidden_offset, (size_t)units);
    } else {
        for (j = 0; j < units; ++j) {
            h16[j] = slot[j];
            hidden[j] = narrow(slot[j], params);
        }
    }
    for (t = 0; t < steps; ++t) {
        const int8_t *const x = input + t * in_size;
        for (j = 0; j < GRU_GATES * units; j += TINYAOT_GATE_BLOCK) {
            const int32_t count = GRU_GATES * units - j < TINYAOT_GATE_BLOCK ? GRU_GATES * units - j
                                                                              : TINYAOT_GATE_BLOCK;
            int32_t from_x[TINYAOT_GATE_BLOCK], from_h[TINYAOT_GATE_BLOCK];
            int32_t i;
            tinyaot_rows_q12(x, w_ih + j * in_size, in_size, count, params->input_bias + j,
                             params->input_multiplier + j, params->input_shift + j, from_x);
            tinyaot_rows_q12(hidden, w_hh + j * units, units, count, params->recurrent_bias + j,
                             params->recurrent_multiplier + j, params->recurrent_shift + j, from_h);
            for (i = 0; i < count; ++i) {
                const int32_t row = j + i;
                if (row < 2 * units) {
                    reset[row] = tinyaot_sigmoid_q15(sat16(from_x[i] + from_h[i])); /* r and z: adjacent rows */
                } else {
                    cand_x[row - 2 * units] = (int16_t)from_x[i];
                    cand_h[row - 2 * units] = (int16_t)from_h[i];
                }
            }
        }
        for (j = 0; j < units; ++j) {
            const int32_t z = update[j];
            const int32_t scaled = sat16(tinyaot_requantize(reset[j] * cand_h[j], params->reset_multiplier,
                                                            params->reset_shift));
            const int32_t n = tinyaot_tanh_q15(sat16(cand_x[j] + scaled), GATE_TANH_MULTIPLIER, 0);
            const int32_t fresh = sat16(tinyaot_requantize((ONE_Q15 - z) * n, params->new_multiplier,
                                                           params->new_shift));
            const int32_t kept = sat16(tinyaot_requantize(z * h16[j], params->keep_multiplier, params->keep_shift));
            const int32_t h = sat16(fresh + kept);
            h16[j] = (int16_t)h;
            hidden[j] = narrow(h, params);
        }
        if (!params->last_only) {
            memcpy(output + t * units, hidden, (size_t)units);
        }
    }
    if (params->last_only) {
        memcpy(output, hidden, (size_t)units);
    }
    if (slot != NULL) {
        memcpy(slot, h16, (size_t)units * sizeof(int16_t));
    }
}

void tinyaot_gru_s8(const int8_t *input, const tinyaot_gru_params *params, int16_t *work, int8_t *output)
{
    gru_run(input, params, work, output, NULL);
}

void tinyaot_gru_s8_stateful(const int8_t *input, const tinyaot_gru_params *params, int16_t *work,
                             int8_t *output, int16_t *state)
{
    gru_run(input, params, work, output, state);
}
