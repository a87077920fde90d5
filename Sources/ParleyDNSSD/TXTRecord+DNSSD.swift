import ParleyDiscovery

extension TXTRecord {
    /// The record as `dns_sd.h` takes and gives it: each string after a byte holding its length, in order. An empty
    /// record is one empty string, a single zero byte: a TXT record with no strings at all is not allowed
    /// (RFC 6763 §6.1).
    var dnssdBytes: [UInt8] {
        let strings = encodedStrings
        guard !strings.isEmpty else { return [0] }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedSize)
        // `Advertisement.validated()` has checked that each string fits its length byte.
        for string in strings {
            let fitting = string.prefix(255)
            bytes.append(UInt8(fitting.count))
            bytes.append(contentsOf: fitting)
        }
        return bytes
    }

    /// Reads a record in that form. A length that runs past the end takes what is there (a daemon's record is
    /// trusted no further than that); empty strings and repeated keys are dropped as `init(strings:)` does.
    init(dnssdBytes bytes: [UInt8]) {
        self.init(strings: Self.dnssdStrings(bytes))
    }

    /// The strings of a record in that form, in its order.
    static func dnssdStrings(_ bytes: [UInt8]) -> [[UInt8]] {
        var strings: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            let start = index + 1
            let end = min(start + length, bytes.count)
            strings.append(Array(bytes[start..<end]))
            index = end
        }
        return strings
    }
}
