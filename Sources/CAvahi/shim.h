// The parts of Avahi's C client library that ParleyDiscovery uses.
//
// Swift cannot call C variadic functions, so ParleyDiscovery uses the non-variadic variants only
// (avahi_entry_group_add_service_strlst, avahi_string_list_add_arbitrary, ...); nothing here needs a wrapper.
// The few helpers below exist because Swift cannot call a function pointer stored in a C struct as cleanly, or to
// give constants their C type.
#ifndef PARLEY_CAVAHI_SHIM_H
#define PARLEY_CAVAHI_SHIM_H

#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/defs.h>
#include <avahi-common/domain.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#include <avahi-common/timeval.h>
#include <avahi-common/watch.h>
#include <net/if.h>

/// Arms a one-shot timer on `api` that fires `callback` after `milliseconds`. Must be called on the poll thread or
/// with the threaded poll's lock held. Returns NULL if Avahi could not allocate the timer.
static inline AvahiTimeout *parley_avahi_timeout_new(const AvahiPoll *api, unsigned milliseconds,
                                                     AvahiTimeoutCallback callback, void *userdata) {
    struct timeval tv;
    avahi_elapse_time(&tv, milliseconds, 0);
    return api->timeout_new(api, &tv, callback, userdata);
}

/// Frees a timer made by parley_avahi_timeout_new (same threading rule).
static inline void parley_avahi_timeout_free(const AvahiPoll *api, AvahiTimeout *timeout) {
    api->timeout_free(timeout);
}

static const AvahiIfIndex PARLEY_AVAHI_IF_UNSPEC = AVAHI_IF_UNSPEC;
static const AvahiProtocol PARLEY_AVAHI_PROTO_UNSPEC = AVAHI_PROTO_UNSPEC;
static const AvahiProtocol PARLEY_AVAHI_PROTO_INET = AVAHI_PROTO_INET;
static const AvahiProtocol PARLEY_AVAHI_PROTO_INET6 = AVAHI_PROTO_INET6;

#endif
