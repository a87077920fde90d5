// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets for Parley's network-facing decoders. Not part of the root package: each target
// defines `LLVMFuzzerTestOneInput` and takes its `main` from libFuzzer's runtime, so it links only when built
// with `-sanitize=fuzzer`. Build and run them with `scripts/fuzz [seconds]`; see Fuzz/README.md.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let parleyWire = Target.Dependency.product(name: "ParleyWire", package: "Parley")
let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let parleyDebugger = Target.Dependency.product(name: "ParleyDebugger", package: "Parley")
let parleyJSON = Target.Dependency.product(name: "ParleyJSON", package: "Parley")

let package = Package(
    name: "ParleyFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Parley", path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
    ],
    targets: [
        // libFuzzer's driver entry point (declaration only).
        .target(name: "CLibFuzzer"),
        // Reading a fuzzer's input as a sequence of choices, the checks the targets share, the entry into libFuzzer.
        .target(
            name: "FuzzSupport",
            dependencies: ["CLibFuzzer", parleyWire, nioCore, .product(name: "NIOEmbedded", package: "swift-nio")],
            swiftSettings: strict
        ),
        // The frame decoder, fed in pieces whose boundaries the input chooses, Parley and 0xCE frames alike; and the
        // batching decoder a connection runs, compared with it.
        .executableTarget(name: "FrameFuzzer", dependencies: ["FuzzSupport", parleyWire, nioCore], swiftSettings: strict),
        // Frames decoded from the input, each driven through the handshake state machine in both roles.
        .executableTarget(name: "HandshakeFuzzer", dependencies: ["FuzzSupport", parleyWire, nioCore], swiftSettings: strict),
        // The payload decoders a peer reaches: hello JSON, close, error-reply, message header, ping/pong.
        .executableTarget(name: "PayloadFuzzer", dependencies: ["FuzzSupport", parleyWire, nioCore], swiftSettings: strict),
        // What an app's bytes reach in the debugger: the JSON scanner and parser (compared), the original framing's
        // payload, the typed record.
        .executableTarget(name: "DebuggerFuzzer", dependencies: ["FuzzSupport", parleyDebugger, parleyJSON, nioCore], swiftSettings: strict),
    ]
)
