/*
 * lstm_s8.c - one unidirectional LSTM layer with TFLite Micro's integer semantics; twin of ref/lstm_s8.py.
 *
 * Per step: the four gates' int8 fully connected layers into int16 Q3.12 (input and recurrent, each requantized
 * and saturated, then added with saturation), TFLM's int16 sigmoid / tanh into Q0.15, the int16 cell state and
 * the int8 hidden state. Every step reads the previous hidden state whole, so the gates are computed for all
 * units before any unit's state is updated. The cell state, the gates and the hidden state live in `work`, the
 * layer's working memory in the arena (no stack arrays); the initial state is zero (h at its zero point).
 * tinyaot_lstm_s8_stateful (a streamed layer) starts from the layer's slot of the state region instead (c, then
 * h - zero point, int16: zero bytes are the zero state) and writes the final state back there.
 *
 * tinyaot_sigmoid_q15, tinyaot_tanh_q15 and tinyaot_rows_q12 are also the GRU's (gru_s8.c). The input offsets
 * are folded into the biases at compile time, so a gate row is a plain int8 dot product: four rows at a time
 * through tinyaot_dot4_s8 (SMLAD where the core has it; integer sums, so the same bits either way).
 */
#include <string.h>

#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define LSTM_GATES 4
#define INT16_LO (-32768)
#define INT16_HI 32767
#define GATE_TANH_MULTIPLIER 3 /* a gate's Q3.12 value into tanh: times 3, no shift */

/* sigmoid(k / 24) in unsigned Q0.16, k = 0..255: the table TFLM's int16 LOGISTIC and TANH interpolate. */
static const uint16_t tinyaot_sigmoid_q16[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
};

static inline int32_t sat16(int32_t x)
{
    return tinyaot_clamp(x, INT16_LO, INT16_HI);
}

int16_t tinyaot_sigmoid_q15(int32_t x)
{
    const int32_t v = x * 3; /* Q3.12 times 3: the table's steps of 1/24 are 2^9 apart */
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t k = a >> 9;
    uint32_t r;
    if (k >= 255u) {
        r = 0x7FFFu << 10;
    } else {
        const uint32_t lo = tinyaot_sigmoid_q16[k], hi = tinyaot_sigmoid_q16[k + 1u];
        r = (lo << 9) + (a & 0x1FFu) * (hi - lo);
    }
    r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int16_t)(r >> 10);
}

int16_t tinyaot_tanh_q15(int32_t x, int32_t multiplier, int32_t right)
{
    const int32_t rounding = right > 0 ? (int32_t)1 << (right - 1) : 0;
    const int32_t v = (x * multiplier + rounding) >> right;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t k = a >> 8;
    int32_t r;
    if (k >= 255u) {
        r = 0xFFFF << 8;
    } else {
        const uint32_t lo = tinyaot_sigmoid_q16[k], hi = tinyaot_sigmoid_q16[k + 1u];
        r = (int32_t)((lo << 8) + (a & 0xFFu) * (hi - lo));
    }
    r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)(r >> 8);
}

/*
 * The recurrent kernels' gate rows, up to TINYAOT_GATE_BLOCK at a time: out[i] = sat16(requantize(bias[i] +
 * sum_k w[i * n + k] * x[k], multiplier[i], shift[i])), i < count (int16 Q3.12 values in int32).
 */
void tinyaot_rows_q12(const int8_t *x, const int8_t *w, int32_t n, int32_t count, const int32_t *bias,
                      const int32_t *multiplier, const int32_t *shift, int32_t *out);

void tinyaot_rows_q12(const int8_t *x, const int8_t *w, int32_t n, int32_t count, const int32_t *bias,
                      const int32_t *multiplier, const int32_t *shift, int32_t *out)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        out[i] = bias[i];
    }
    if (count == TINYAOT_GATE_BLOCK) {
        tinyaot_dot4_s8(x, w, n, n, out); /* each input word widened once for the four rows (SMLAD on DSP cores) */
    } else {
        for (i = 0; i < count; ++i) {
            int32_t k;
            for (k = 0; k < n; ++k) {
                out[i] += (int32_t)w[i * n + k] * (int32_t)x[k];
            }
        }
    }
    for (i = 0; i < count; ++i) {
        out[i] = sat16(tinyaot_requantize(out[i], multiplier[i], shift[i]));
    }
}

/* The layer over the sequence from `slot`'s state (NULL: the zero state), the final state back into it.
 * Inlined into both entry points with `slot` known, so the whole-sequence one tests no slot: streaming costs
 * it nothing. */
__attribute__((always_inline)) static inline void lstm_run(const int8_t *input, const tinyaot_lstm_params *params,
                                                           int16_t *work, int8_t *output, int16_t *slot)
{
    const int32_t steps = params->steps;
    const int32_t in_size = params->input_size;
    const int32_t units = params->hidden_size;
    const int32_t rows = LSTM_GATES * units;
    const int32_t clip = params->cell_clip;
    const int8_t *const w_ih = params->weights_ih;
    const int8_t *const w_hh = params->weights_hh;
    int16_t *const cell = work;
    int16_t *const gates = work + units; /* [4][units]: i, f, g, o */
    int8_t *const hidden = (int8_t *)(void *)(work + 5 * units);
    int32_t t, r, j;

    if (slot == NULL) {
        memset(cell, 0, (size_t)units * sizeof(int16_t));
        memset(hidden, (int)params->hidden_offset, (size_t)units);
    } else {
        for (j = 0; j < units; ++j) {
            cell[j] = slot[j];
            hidden[j] = (int8_t)(slot[units + j] + params->hidden_offset);
        }
    }
    for (t = 0; t < steps; ++t) {
        const int8_t *const x = input + t * in_size;
        for (r = 0; r < rows; r += TINYAOT_GATE_BLOCK) {
            const int32_t count = rows - r < TINYAOT_GATE_BLOCK ? rows - r : TINYAOT_GATE_BLOCK;
            int32_t from_x[TINYAOT_GATE_BLOCK], from_h[TINYAOT_GATE_BLOCK];
            int32_t i;
            tinyaot_rows_q12(x, w_ih + r * in_size, in_size, count, params->input_bias + r,
                             params->input_multiplier + r, params->input_shift + r, from_x);
            tinyaot_rows_q12(hidden, w_hh + r * units, units, count, params->recurrent_bias + r,
                             params->recurrent_multiplier + r, params->recurrent_shift + r, from_h);
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
            int32_t h;
            if (clip > 0) {
                c = tinyaot_clamp(c, -clip, clip);
            }
            cell[j] = (int16_t)c;
            h = tinyaot_requantize(tinyaot_tanh_q15(c, params->tanh_multiplier, params->tanh_right) * out_gate,
                                   params->hidden_multiplier, params->hidden_shift);
            hidden[j] = (int8_t)tinyaot_clamp(h + params->hidden_offset, -128, 127);
        }
        if (!params->last_only) {
            memcpy(output + t * units, hidden, (size_t)units);
        }
    }
    if (params->last_only) {
        memcpy(output, hidden, (size_t)units);
    }
    if (slot != NULL) {
        for (j = 0; j < units; ++j) {
            slot[j] = cell[j];
            slot[units + j] = (int16_t)(hidden[j] - params->hidden_offset);
        }
    }
}

void tinyaot_lstm_s8(const int8_t *input, const tinyaot_lstm_params *params, int16_t *work, int8_t *output)
{
    lstm_run(input, params, work, output, NULL);
}

void tinyaot_lstm_s8_stateful(const int8_t *input, const tinyaot_lstm_params *params, int16_t *work,
                              int8_t *output, int16_t *state)
{
    lstm_run(input, params, work, output, state);
}
