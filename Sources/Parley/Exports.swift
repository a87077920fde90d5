// `import Parley` is all an app needs: the wire types in the API (`NamedMessage`, `MessageHeader`, `ErrorCode`),
// the discovery value types in its configuration (`DiscoveredService`, `DiscoveryBackendFactory`) and the shared
// secret, and `BlockingPool` (``Transceiver/respond(to:localOnly:codingOn:handler:)`` takes one). The Avahi backend is not among them: it is `import ParleyAvahi`, so that embedding Parley links no C.
@_exported import ParleyBlocking
@_exported import ParleyDiscovery
@_exported import ParleySecurity
@_exported import ParleyWire
