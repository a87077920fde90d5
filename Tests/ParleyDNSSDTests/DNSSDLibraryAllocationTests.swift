#if os(Linux)
import CDNSSD
import Glibc
import Testing

@testable import ParleyDNSSD

@Suite("Memory Avahi's compatibility library allocates")
struct DNSSDLibraryAllocationTests {
    /// Avahi's compatibility library (0.8) allocates each DNSServiceRef with avahi_malloc (0xf8 bytes) and sets only
    /// its own kind of reply callback; when the daemon goes away it tests the other kinds' too. Once a DNSSDLibrary
    /// exists, a block of that size comes back zero-filled even when malloc reuses one full of other data, so those
    /// callbacks read NULL.
    @Test func referencesAreAllocatedZeroFilled() throws {
        _ = DNSSDLibrary()
        let size = 0xF8
        // malloc hands the block just freed back to the same thread for the next request of its size.
        let used = try #require(malloc(size))
        memset(used, 0xA5, size)
        free(used)
        let block = try #require(avahi_malloc(size))
        defer { avahi_free(block) }
        #expect(UnsafeRawBufferPointer(start: block, count: size).allSatisfy { $0 == 0 })
    }
}
#endif
