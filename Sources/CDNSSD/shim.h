// dns_sd.h on Linux: Avahi's compatibility library (Debian's libavahi-compat-libdnssd-dev), whose header lives in a
// directory of its own. On Apple platforms ParleyDNSSD imports the system's `dnssd` module instead; this target is
// a dependency on Linux only.
//
// No pkgConfig in Package.swift: avahi-compat-libdns_sd.pc adds -D_REENTRANT, which SwiftPM refuses with a warning
// on every build; the include below names the directory instead.
#ifndef PARLEY_CDNSSD_SHIM_H
#define PARLEY_CDNSSD_SHIM_H

#include <stdlib.h>
#include <avahi-common/malloc.h>
#include <avahi-compat-libdns_sd/dns_sd.h>

// Avahi's compatibility library (0.8) allocates each DNSServiceRef with avahi_malloc and sets only the reply callback
// of its own kind. When the daemon goes away, the client callback of a resolver or record query tests the browse
// callback first, then the others: it reads pointers nobody wrote and, when malloc handed back used memory, calls
// one of them (a crash). Zero-filled allocations make those pointers NULL, as the library assumes.
static inline void *parley_cdnssd_zeroed_malloc(size_t size) { return calloc(1, size); }

/// Makes every allocation of Avahi's libraries in this process zero-filled. Process-wide (the allocator is
/// avahi-common's, shared with Avahi's client library); idempotent.
static inline void parley_cdnssd_zero_fill_allocations(void) {
    static const AvahiAllocator zeroFilling = { parley_cdnssd_zeroed_malloc, free, realloc, calloc };
    avahi_set_allocator(&zeroFilling);
}

#endif
