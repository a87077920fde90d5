// dns_sd.h on Linux: Avahi's compatibility library (Debian's libavahi-compat-libdnssd-dev), whose header lives in a
// directory of its own. On Apple platforms ParleyDNSSD imports the system's `dnssd` module instead; this target is
// a dependency on Linux only.
//
// No pkgConfig in Package.swift: avahi-compat-libdns_sd.pc adds -D_REENTRANT, which SwiftPM refuses with a warning
// on every build; the include below names the directory instead.
#ifndef PARLEY_CDNSSD_SHIM_H
#define PARLEY_CDNSSD_SHIM_H

#include <avahi-compat-libdns_sd/dns_sd.h>

#endif
