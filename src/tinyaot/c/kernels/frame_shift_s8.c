/*
 * frame_shift_s8.c - the window of a streamed causal conv; twin of ref/frame_shift_s8.py.
 *
 * window = the K - 1 frames kept in the state region (oldest first), then the new frame; the state then
 * drops its oldest frame and keeps the new one. The state lives apart from the arena and survives invokes.
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_frame_shift_s8(const int8_t *frame, const tinyaot_frame_shift_params *params, int8_t *window,
                            int8_t *state)
{
    const size_t frame_bytes = (size_t)params->frame_bytes;
    const size_t kept = (size_t)(params->frames - 1) * frame_bytes;
    memcpy(window, state, kept);
    memcpy(window + kept, frame, frame_bytes);
    memcpy(state, window + frame_bytes, kept);
}
