/* The two-core run's marks (targets/m33/an521.py): a model built for it calls this at every profiling hook, on
 * whichever core runs the hook; the core-count plugin records that core's instruction count at each call. */
#ifndef TINYAOT_CORE_MARK_H
#define TINYAOT_CORE_MARK_H

void tinyaot_core_mark(void);

#endif /* TINYAOT_CORE_MARK_H */
