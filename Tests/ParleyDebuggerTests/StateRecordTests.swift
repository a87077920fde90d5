import NIOCore
import ParleyDebugger
import Testing

@Suite("State record wire format")
struct StateRecordTests {
    @Test("a record survives encoding byte for byte: action, state JSON text and screenshot")
    func roundTrip() throws {
        let state = ByteBuffer(string: #"{"count":1.10,"名前":"ü","items":[]}"#)
        let png = ByteBuffer(bytes: [0x89, 0x50, 0x4E, 0x47, 0, 1, 2])
        let record = StateRecord(action: "increment ✓", state: state, screenshot: png)
        let decoded = try StateRecord(decoding: record.encoded())
        #expect(decoded == record)
        #expect(decoded.state.readableBytesView.elementsEqual(state.readableBytesView))
    }

    @Test("a record without a screenshot decodes with an empty one")
    func noScreenshot() throws {
        let decoded = try StateRecord(decoding: StateRecord(action: "a", state: ByteBuffer(string: "{}")).encoded())
        #expect(decoded.screenshot.readableBytes == 0)
    }

    @Test("a truncated record is rejected with an error that says which part is missing")
    func truncated() throws {
        var payload = StateRecord(action: "load", state: ByteBuffer(string: #"{"a":1}"#)).encoded()
        payload.moveWriterIndex(to: payload.writerIndex - 3)
        #expect(throws: StateRecordError.truncated("the state is 7 bytes but only 4 follow")) {
            try StateRecord(decoding: payload)
        }
        #expect(throws: StateRecordError.truncated("the action length (4 bytes) is missing")) {
            try StateRecord(decoding: ByteBuffer(bytes: [1, 0]))
        }
    }

    @Test("an action that is not UTF-8 is rejected")
    func badUTF8() {
        var payload = ByteBuffer()
        payload.writeInteger(UInt32(2), endianness: .little)
        payload.writeBytes([0xC3, 0x28])
        payload.writeInteger(UInt32(2), endianness: .little)
        payload.writeString("{}")
        #expect(throws: StateRecordError.actionNotUTF8) { try StateRecord(decoding: payload) }
    }
}

@Suite("Debugger control requests")
struct DebuggerControlTests {
    @Test("a history page is at most 500 entries and at least one, whatever limit a client asks for")
    func historyPageLimit() {
        #expect(DebuggerControl.History(limit: 1_000_000).pageLimit == 500)
        #expect(DebuggerControl.History(limit: 20).pageLimit == 20)
        #expect(DebuggerControl.History(limit: 0).pageLimit == 1)
        #expect(DebuggerControl.History(limit: -5).pageLimit == 1)
        #expect(DebuggerControl.History().pageLimit == DebuggerControl.History.pageSize)
    }
}
