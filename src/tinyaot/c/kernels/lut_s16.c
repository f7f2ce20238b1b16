/*
 * lut_s16.c - the lut op on int16 (16x8) tensors; twin of ref/lut_s16.py. tflm_logistic / tflm_tanh are TFLite
 * Micro's int16 LOGISTIC and TANH (reference_integer_ops::Logistic / Tanh).
 *
 * The input is rescaled, v = (x * input_multiplier + round) >> input_shift, and the 256-entry table of
 * sigmoid(k / 24) is interpolated: logistic reads 9 fractional bits of |v|, tanh (2 sigmoid(2v) - 1) reads 8.
 * Negative inputs use the symmetry; output Q0.15. Any other function is a 513-entry table made at compile time
 * (TFLite's LUTPopulate), read with 7-bit interpolation. Clamped to the fused range. Runs in place (element i is
 * read before it is written).
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define LUT16_LAST_SEGMENT 255u /* the sigmoid table's last interpolated segment */
#define LUT16_TABLE_CENTRE 256     /* index of input 0 in a 513-entry table: 512 segments of 128 steps */
#define LUT16_SEGMENT_BITS 7

/* sigmoid(k / 24) in unsigned Q0.16, k = 0..255 (TFLM's sigmoid_table_uint16; lstm_s8.c has the same). */
static const uint16_t lut16_sigmoid_q16[256] = {
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

/* TFLM's int16 Logistic of the rescaled input v: Q0.15. */
static int32_t lut16_logistic(int32_t v)
{
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t k = a >> 9;
    uint32_t r;
    if (k >= LUT16_LAST_SEGMENT) {
        r = 0x7FFFu << 10;
    } else {
        const uint32_t lo = lut16_sigmoid_q16[k], hi = lut16_sigmoid_q16[k + 1u];
        r = (lo << 9) + (a & 0x1FFu) * (hi - lo);
    }
    r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int32_t)(r >> 10);
}

/* TFLM's int16 Tanh of the rescaled input v: Q0.15. */
static int32_t lut16_tanh(int32_t v)
{
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t k = a >> 8;
    int32_t r;
    if (k >= LUT16_LAST_SEGMENT) {
        r = 0xFFFF << 8;
    } else {
        const uint32_t lo = lut16_sigmoid_q16[k], hi = lut16_sigmoid_q16[k + 1u];
        r = (int32_t)((lo << 8) + (a & 0xFFu) * (hi - lo));
    }
    r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return r >> 8;
}

/* TFLite's int16 LUTLookup: the high 9 bits of value pick the segment, the low 7 interpolate, rounded. */
static int32_t lut16_lookup(int32_t value, const int16_t *lut)
{
    const int32_t index = LUT16_TABLE_CENTRE + (value >> LUT16_SEGMENT_BITS);
    const int32_t offset = value & ((1 << LUT16_SEGMENT_BITS) - 1);
    const int16_t slope = (int16_t)(lut[index + 1] - lut[index]);
    return (int16_t)(lut[index] + ((slope * offset + (1 << (LUT16_SEGMENT_BITS - 1))) >> LUT16_SEGMENT_BITS));
}

void tinyaot_lut_s16(const int16_t *input, const tinyaot_lut16_params *params, int16_t *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->input_multiplier;
    const int32_t shift = params->input_shift;
    const int32_t rounding = shift > 0 ? (int32_t)1 << (shift - 1) : 0;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    if (params->mode == TINYAOT_LUT16_TABLE) {
        for (i = 0; i < size; ++i) {
            output[i] = (int16_t)tinyaot_clamp(lut16_lookup(input[i], params->table), act_min, act_max);
        }
        return;
    }
    for (i = 0; i < size; ++i) {
        const int32_t v = ((int32_t)input[i] * multiplier + rounding) >> shift;
        const int32_t y = params->mode == TINYAOT_LUT16_TANH ? lut16_tanh(v) : lut16_logistic(v);
        output[i] = (int16_t)tinyaot_clamp(y, act_min, act_max);
    }
}
