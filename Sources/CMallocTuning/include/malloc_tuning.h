#ifndef PARLEY_MALLOC_TUNING_H
#define PARLEY_MALLOC_TUNING_H

/// Makes glibc serve every allocation of `bytes` or more with pages of its own, returned to the system when
/// freed (a fixed M_MMAP_THRESHOLD, which also turns off glibc's raising of it). Returns 0 if glibc refused.
int parley_set_mmap_threshold(int bytes);

#endif
