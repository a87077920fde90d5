import Foundation
import Logging
import NIOEmbedded
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

/// The token bucket's arithmetic, with time passed in.
@Suite("Token bucket")
struct TokenBucketTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// How many of `attempts` frames at `now` the bucket admits.
    func admitted(_ attempts: Int, by bucket: inout TokenBucket, at now: NIODeadline) -> Int {
        var count = 0
        for _ in 0..<attempts where bucket.take(now: now) { count += 1 }
        return count
    }

    @Test("a full bucket admits exactly `burst` frames at once, then refuses")
    func burst() {
        var bucket = TokenBucket(MessageRateLimit(perSecond: 10, burst: 5), now: start)
        #expect(admitted(8, by: &bucket, at: start) == 5)
    }

    @Test("tokens come back at `perSecond`, never above `burst`")
    func refill() {
        var bucket = TokenBucket(MessageRateLimit(perSecond: 10, burst: 5), now: start)
        #expect(admitted(5, by: &bucket, at: start) == 5)
        #expect(admitted(1, by: &bucket, at: start + .milliseconds(50)) == 0)  // half a token
        #expect(admitted(2, by: &bucket, at: start + .milliseconds(100)) == 1)  // one token
        // An hour later the bucket holds `burst` tokens, not 36 000.
        #expect(admitted(10, by: &bucket, at: start + .hours(1)) == 5)
    }

    @Test("a steady sender at the rate is never refused; one at twice the rate is, after the burst")
    func steady() {
        var steady = TokenBucket(MessageRateLimit(perSecond: 100, burst: 1), now: start)
        var refused = 0
        for tick in 1...1000 where !steady.take(now: start + .milliseconds(Int64(tick) * 10)) { refused += 1 }
        #expect(refused == 0)

        var fast = TokenBucket(MessageRateLimit(perSecond: 100, burst: 10), now: start)
        var admitted = 0
        for tick in 1...1000 where fast.take(now: start + .milliseconds(Int64(tick) * 5)) { admitted += 1 }
        // 5 s at 100 a second plus the burst, give or take the last token.
        #expect((509...510).contains(admitted), "\(admitted)")
    }
}
