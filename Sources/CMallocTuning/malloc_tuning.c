#include <stdlib.h>  // defines __GLIBC__ when the C library is glibc
#include "malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
int parley_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
#else
int parley_set_mmap_threshold(int bytes) { (void)bytes; return 0; }
#endif
