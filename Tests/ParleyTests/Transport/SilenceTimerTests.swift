import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@Suite("The silence timer on an EmbeddedEventLoop")
struct SilenceTimerTests {
    @Test("a silence timer fires on the loop's clock, re-arms when activity moved, and stops when told there is nothing to watch")
    func silenceTimer() throws {
        let loop = EmbeddedEventLoop()
        var last: NIODeadline? = loop.now
        var fired: [TimeAmount] = []
        let timer = SilenceTimer(on: loop, timeout: .seconds(5), lastActivity: { last }) { fired.append($0) }
        timer.start()
        loop.advanceTime(by: .seconds(4))
        last = loop.now  // activity at 4 s: due at 9 s
        loop.advanceTime(by: .seconds(4))
        #expect(fired.isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(fired == [.seconds(5)])

        var watched: NIODeadline? = loop.now
        var stopped: [TimeAmount] = []
        let ending = SilenceTimer(on: loop, timeout: .seconds(5), lastActivity: { watched }) { stopped.append($0) }
        ending.start()
        watched = nil
        loop.advanceTime(by: .seconds(60))
        #expect(stopped.isEmpty)
    }
}
