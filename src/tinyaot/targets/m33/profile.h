/* Per-step timestamps for `tinyaot profile`: the generated model calls NAME_PROFILE_STEP(step)
 * after each kernel; the profiling build defines that macro to call this function. */
#ifndef TINYAOT_PROFILE_H
#define TINYAOT_PROFILE_H

void tinyaot_profile_step(int step);

#endif /* TINYAOT_PROFILE_H */
