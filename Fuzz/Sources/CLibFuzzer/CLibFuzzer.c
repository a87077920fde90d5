// Declarations only (include/CLibFuzzer.h); SwiftPM wants a source file in every C target.
#include "CLibFuzzer.h"
