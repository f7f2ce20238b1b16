/*
 * multicore.c - the weak tinyaot_core1_launch of a cores=2 model (tinyaot_multicore.h): no second core, so
 * invoke runs core 1's parts on core 0. A port with a second core defines its own.
 */
#include "tinyaot_multicore.h"

__attribute__((weak)) int tinyaot_core1_launch(void (*entry)(void))
{
    (void)entry;
    return 1;
}
