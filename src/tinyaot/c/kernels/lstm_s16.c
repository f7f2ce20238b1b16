/*
 * lstm_s16.c - the 16x8 LSTM (TFLite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM for int16 activations); twin of
 * ref/lstm_s16.py.
 *
 * Per step: each gate row's two 16x8 fully connected layers into Q3.12 (the input one with its int64 bias, the
 * recurrent one over the previous int16 hidden state without), each through tinyaot_fc16_rows (exact int64 sums,
 * TFLM's int64 rescale, saturated; SMLAD where the core has it) four rows at a time, added with saturation; then
 * TFLM's int16 sigmoid / tanh (lstm_s8.c), the int16 cell state and the int16 hidden state h = sat16(requantize(
 * tanh(c) * o)). The gates of every unit are computed before any unit's state changes (each step reads the whole
 * previous h). c, the gates and h live in `work`, the layer's working memory in the arena.
 * tinyaot_lstm_s16_stateful starts from the layer's slot of the state region (c, then h) and writes the final
 * state back there.
 */
#include <string.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/*
 * Up to four rows of a 16x8 fully connected layer with int64 sums and the full int16 range (fully_connected_s16.c):
 * out[i] = sat16(requantize_64((bias ? bias[i] : 0) + sum_k x[k] * w[i * n + k], multiplier[i], shift[i])),
 * i < count <= 4; w16: the rows widened to int16 (speed mode), or NULL.
 */
void tinyaot_fc16_rows(const int16_t *x, const int8_t *w, const int16_t *w16, int32_t n, int32_t count,
                       const int64_t *bias, const int32_t *multiplier, const int32_t *shift, int32_t *out);

#define LSTM_GATES 4
#define INT16_LO (-32768)
#define INT16_HI 32767
#define GATE_TANH_MULTIPLIER 3 /* a gate's Q3.12 value into tanh: times 3, no shift */

static inline int32_t sat16(int32_t x)
{
    return tinyaot_clamp(x, INT16_LO, INT16_HI);
}

/* The widened copy of a weight matrix's rows from r on (n columns), or NULL when there is none (size mode). */
static inline const int16_t *rows16(const int16_t *w16, int32_t r, int32_t n)
{
    return w16 != 0 ? w16 + r * n : 0;
}

/* The layer over the sequence from `slot`'s state (NULL: the zero state), the final state back into it. */
__attribute__((always_inline)) static inline void lstm16_run(const int16_t *input, const tinyaot_lstm16_params *params,
                                                             int16_t *work, int16_t *output, int16_t *slot)
{
    const int32_t steps = params->steps;
    const int32_t in_size = params->input_size;
    const int32_t units = params->hidden_size;
    const int32_t rows = LSTM_GATES * units;
    const int32_t clip = params->cell_clip;
    int16_t *const cell = work;
    int16_t *const gates = work + units; /* [4][units]: i, f, g, o */
    int16_t *const hidden = work + 5 * units;
    int32_t t, r, j;

    if (slot == NULL) {
        memset(cell, 0, (size_t)units * sizeof(int16_t));
        memset(hidden, 0, (size_t)units * sizeof(int16_t));
    } else {
        memcpy(cell, slot, (size_t)units * sizeof(int16_t));
        memcpy(hidden, slot + units, (size_t)units * sizeof(int16_t));
    }
    for (t = 0; t < steps; ++t) {
        const int16_t *const x = input + t * in_size;
        for (r = 0; r < rows; r += TINYAOT_GATE_BLOCK) {
            const int32_t count = rows - r < TINYAOT_GATE_BLOCK ? rows - r : TINYAOT_GATE_BLOCK;
            int32_t from_x[TINYAOT_GATE_BLOCK], from_h[TINYAOT_GATE_BLOCK];
            int32_t i;
            tinyaot_fc16_rows(x, params->weights_ih + r * in_size, rows16(params->weights_ih16, r, in_size),
                              in_size, count, params->bias + r, params->input_multiplier + r,
                              params->input_shift + r, from_x);
            tinyaot_fc16_rows(hidden, params->weights_hh + r * units, rows16(params->weights_hh16, r, units),
                              units, count, 0, params->recurrent_multiplier + r, params->recurrent_shift + r,
                              from_h);
            for (i = 0; i < count; ++i) {
                gates[r + i] = (int16_t)sat16(from_x[i] + from_h[i]);
            }
        }
        for (j = 0; j < units; ++j) {
            const int32_t in_gate = tinyaot_sigmoid_q15(gates[j]);
            const int32_t forget = tinyaot_sigmoid_q15(gates[units + j]);
            const int32_t candidate = tinyaot_tanh_q15(gates[2 * units + j], GATE_TANH_MULTIPLIER, 0);
            const int32_t out_gate = tinyaot_sigmoid_q15(gates[3 * units + j]);
            const int32_t kept = sat16(tinyaot_requantize(forget * cell[j], params->forget_multiplier,
                                                          params->forget_shift));
            const int32_t added = sat16(tinyaot_requantize(in_gate * candidate, params->update_multiplier,
                                                           params->update_shift));
            int32_t c = sat16(kept + added);
            if (clip > 0) {
                c = tinyaot_clamp(c, -clip, clip);
            }
            cell[j] = (int16_t)c;
            hidden[j] = (int16_t)sat16(tinyaot_requantize(
                tinyaot_tanh_q15(c, params->tanh_multiplier, params->tanh_right) * out_gate, params->hidden_multiplier,
                params->hidden_shift));
        }
        if (!params->last_only) {
            memcpy(output + t * units, hidden, (size_t)units * sizeof(int16_t));
        }
    }
    if (params->last_only) {
        memcpy(output, hidden, (size_t)units * sizeof(int16_t));
    }
    if (slot != NULL) {
        memcpy(slot, cell, (size_t)units * sizeof(int16_t));
        memcpy(slot + units, hidden, (size_t)units * sizeof(int16_t));
    }
}

void tinyaot_lstm_s16(const int16_t *input, const tinyaot_lstm16_params *params, int16_t *work, int16_t *output)
{
    lstm16_run(input, params, work, output, NULL);
}

void tinyaot_lstm_s16_stateful(const int16_t *input, const tinyaot_lstm16_params *params, int16_t *work,
                               int16_t *output, int16_t *state)
{
    lstm16_run(input, params, work, output, state);
}
