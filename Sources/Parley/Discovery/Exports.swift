// The discovery types appear in the transceiver's API (`DiscoveredService`, `AutoConnectPolicy.matching`),
// so `import Parley` brings them along.
@_exported import ParleyDiscovery
// Likewise `SharedSecret`, in the configuration.
@_exported import ParleySecurity
