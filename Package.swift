// swift-tools-version:6.1
import PackageDescription

/// Every target gets the same strict settings: Swift 6 language mode (full data-race checking) and no warnings.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioPosix = Target.Dependency.product(name: "NIOPosix", package: "swift-nio")
let nioFoundation = Target.Dependency.product(name: "NIOFoundationCompat", package: "swift-nio")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let serviceLifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let unixSignals = Target.Dependency.product(name: "UnixSignals", package: "swift-service-lifecycle")
let grdb = Target.Dependency.product(name: "GRDB", package: "GRDB.swift")
let crypto = Target.Dependency.product(name: "Crypto", package: "swift-crypto")
let hummingbird = Target.Dependency.product(name: "Hummingbird", package: "hummingbird")
let metrics = Target.Dependency.product(name: "Metrics", package: "swift-metrics")
let prometheus = Target.Dependency.product(name: "Prometheus", package: "swift-prometheus")
let tracing = Target.Dependency.product(name: "Tracing", package: "swift-distributed-tracing")
let instrumentation = Target.Dependency.product(name: "Instrumentation", package: "swift-distributed-tracing")
// Network.framework's event loops for NIO, chosen by the app's event loop group (Sources/Parley/Transport/
// TransportBootstraps.swift). Only on Apple platforms: elsewhere the module is empty, and Linux builds link nothing new.
let nioTransportServices = Target.Dependency.product(
    name: "NIOTransportServices", package: "swift-nio-transport-services",
    condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS, .macCatalyst])
)

let package = Package(
    name: "Parley",
    // The Synchronization module (Mutex, Atomic) sets the floor on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "ParleyWire", targets: ["ParleyWire"]),
        .library(name: "Parley", targets: ["Parley"]),
        .library(name: "ParleySecurity", targets: ["ParleySecurity"]),
        .library(name: "ParleyDiscovery", targets: ["ParleyDiscovery"]),
        .library(name: "ParleyAvahi", targets: ["ParleyAvahi"]),
        .library(name: "ParleyDNSSD", targets: ["ParleyDNSSD"]),
        .library(name: "ParleyRemoteDebugger", targets: ["ParleyRemoteDebugger"]),
        .library(name: "ParleyRemoteDrawer", targets: ["ParleyRemoteDrawer"]),
        // Products so that the fuzz package can reach the JSON reader and the debugger's record formats.
        .library(name: "ParleyJSON", targets: ["ParleyJSON"]),
        .library(name: "ParleyDebugger", targets: ["ParleyDebugger"]),
        .library(name: "ParleyTelemetry", targets: ["ParleyTelemetry"]),
        .library(name: "ParleyLogging", targets: ["ParleyLogging"]),
        .library(name: "ParleyTracing", targets: ["ParleyTracing"]),
        .executable(name: "parley-example", targets: ["ParleyExample"]),
        .executable(name: "parley-test-peer", targets: ["ParleyTestPeer"]),
        .executable(name: "parley-bench", targets: ["ParleyBench"]),
        .executable(name: "parley-debugger-bench", targets: ["DebuggerBench"]),
        .executable(name: "parley-telemetry-bench", targets: ["TelemetryBench"]),
        .executable(name: "parley-traced-http", targets: ["ParleyTracedHTTP"]),
        .executable(name: "listr-example", targets: ["ListrExample"]),
        .executable(name: "parleyctl", targets: ["ParleyCtl"]),
        .executable(name: "parleyd", targets: ["Parleyd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // Devices' self-signed certificates (pinned by fingerprint) and TLS 1.3 between paired devices.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // The web debugger's HTTP server. Its traits (swift-configuration support, full Foundation) are not needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // parleyd's forwarding to another OTLP receiver (otlpForward), and parley-traced-http, the example and test
        // tool of a traced HTTP client (AsyncHTTPClient traces its requests through InstrumentationSystem). Its one
        // trait (an unstable HTTP API) is off by default.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // OTLP's protobuf messages; the Swift code is generated once from Protos/ (scripts/generate-otlp) and committed.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        // gzip for OTLP request bodies (zlib, inflated within a size limit).
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio-transport-services", from: "1.28.0"),
    ],
    targets: [
        // The wire protocol: framing, envelope, handshake. Depends on NIOCore only so other tools can reuse it.
        .target(name: "ParleyWire", dependencies: [nioCore], swiftSettings: strict),

        // The shared secret, the handshake's authenticator and the sealing of frames (swift-crypto); kept out of
        // ParleyWire so that the wire module depends on NIO only.
        .target(
            name: "ParleySecurity",
            dependencies: [
                "ParleyWire", crypto, nioCore, nioFoundation, .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),

        // The transceiver: TCP transport, handshake, typed message router, peer gate. Discovery only through the
        // ParleyDiscovery protocol: embedding Parley links no C library (scripts/test checks it).
        .target(
            name: "Parley",
            dependencies: [
                "ParleyWire", "ParleyJSON", "ParleySecurity", "ParleyDiscovery", "ParleyBlocking", nioCore, nioPosix, nioTransportServices, nioFoundation, logging,
                serviceLifecycle, .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            // Its nonisolated async functions run on their caller's executor unless marked `@concurrent`: a message's
            // way from the socket to its handler then hops executors nowhere (docs/performance.md).
            swiftSettings: strict + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
        ),

        // Blocking work off the event loops and the cooperative pool, one way for every module: `BlockingPool`, over
        // NIOThreadPool. A target of its own because the discovery interface and the history, which share no
        // module, both need it.
        .target(name: "ParleyBlocking", dependencies: [nioCore, nioPosix], swiftSettings: strict),
        // The discovery interface (advertise, browse, resolved services as events) and its value types; no C.
        .target(name: "ParleyDiscovery", dependencies: ["ParleyBlocking", logging], swiftSettings: strict),
        // Avahi's C client library, and the backend that owns every call into it.
        .systemLibrary(
            name: "CAvahi",
            // No pkgConfig: avahi-client.pc adds -D_REENTRANT, which SwiftPM refuses with a warning on every build.
            // The headers are in /usr/include and the module map links the two libraries; scripts/require-packages
            // installs libavahi-client-dev.
            providers: [.apt(["libavahi-client-dev"])]
        ),
        .target(name: "ParleyAvahi", dependencies: ["CAvahi", "ParleyDiscovery", logging], swiftSettings: strict),
        // The system's DNS-SD API (dns_sd.h), and the backend over it that apps on Apple platforms use. There the
        // module is the system's own `dnssd`; on Linux it is Avahi's compatibility library (libdns_sd), whose header
        // lives in a directory of its own. No pkgConfig, as for CAvahi (avahi-compat-libdns_sd.pc adds -D_REENTRANT).
        .systemLibrary(name: "CDNSSD", providers: [.apt(["libavahi-compat-libdnssd-dev"])]),
        .target(
            name: "ParleyDNSSD",
            dependencies: [.target(name: "CDNSSD", condition: .when(platforms: [.linux])), "ParleyDiscovery", logging],
            swiftSettings: strict
        ),
        // Registration in a unicast DNS zone by DNS UPDATE (nsupdate as a subprocess), for wide-area DNS-SD.
        .target(name: "ParleyDNSUpdate", dependencies: ["ParleyDiscovery", "ParleyBlocking", logging], swiftSettings: strict),
        // What parleyctl speaks: parleyd's control protocol (the `@<target>/<Type>` routing prefix, the
        // `parley.control.*` requests and replies, the default control socket path), and `CLIResponse`, the reply an
        // app answers `parleyctl send` with.
        .target(name: "ParleyControl", dependencies: ["Parley", "ParleyCommandLine", "ParleyJSON"], swiftSettings: strict),
        // What parleyd's and parleyctl's command lines share beyond the protocol: the release both print for
        // `--version`, the duration syntax both read (`90s`, `7d`; parleyd's configuration file takes it too), and
        // the did-you-mean suggestions for a misspelt name.
        .target(name: "ParleyCommandLine", swiftSettings: strict),
        // A CLI over ParleyDiscovery printing JSON-lines events; the discovery tests run it inside network namespaces.
        .executableTarget(
            name: "ParleyDiscoveryProbe",
            dependencies: ["ParleyDiscovery", "ParleyAvahi", "ParleyDNSSD", logging],
            swiftSettings: strict
        ),

        // JSON as the debugger needs it, over ByteBuffer: a strict scanner and skimmer, values that keep each number's
        // text, diffs and paths between two documents, Base64. Knows nothing of the debugger.
        .target(name: "ParleyJSON", dependencies: [nioCore], swiftSettings: strict),
        // An app's logs and traced requests as records shaped like OpenTelemetry's (log records, spans), the
        // `parley.telemetry.Batch` message that carries them, their limits and the redaction of secrets. Shared by
        // the app-side libraries, parleyd, its history and the web debugger; knows nothing of how they travel.
        .target(name: "ParleyTelemetry", dependencies: ["ParleyJSON", "ParleyWire"], swiftSettings: strict),
        // OpenTelemetry's OTLP export requests (protobuf and JSON) read into Parley's records, and the answers to them;
        // parleyd's OTLP/HTTP receiver uses it. Generated/ comes from Protos/ by scripts/generate-otlp.
        .target(
            name: "ParleyOTLP", dependencies: ["ParleyTelemetry", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: strict
        ),
        // The remote state debugger. ParleyDebugger: what apps, parleyd and parleyctl share — the wire format of
        // recorded states, the original debugger's payload, action patterns, history pages, the control requests
        // and their replies (no storage).
        .target(name: "ParleyDebugger", dependencies: ["ParleyJSON", "ParleyTelemetry", "ParleyWire", nioCore], swiftSettings: strict),
        // ParleyHistory: parleyd's history store (SQLite through GRDB), retention, export and import.
        .target(
            name: "ParleyHistory",
            dependencies: [
                "ParleyDebugger", "ParleyTelemetry", "ParleyJSON", "ParleyBlocking", grdb, .product(name: "GRDBSQLite", package: "GRDB.swift"), logging,
            ],
            swiftSettings: strict
        ),
        // ParleyRemoteDebugger: the client library apps link to send (action, state, screenshot) to parleyd. It finds
        // parleyd through the discovery backend the app passes, as a transceiver does, so it links no C library.
        .target(
            name: "ParleyRemoteDebugger",
            dependencies: ["Parley", "ParleyDebugger", "ParleyWire", "ParleyDiscovery", "ParleyTelemetry", nioCore, nioPosix, logging, instrumentation],
            swiftSettings: strict
        ),
        // The app's logs and traced requests on the debugger's timeline: a swift-log handler and a
        // swift-distributed-tracing tracer, both sending through ParleyRemoteDebugger's TelemetryExporter (which
        // finds parleyd as RemoteDebugger does). No C, no Avahi: the app passes its discovery backend.
        .target(name: "ParleyLogging", dependencies: ["ParleyRemoteDebugger", "ParleyTelemetry", logging, instrumentation], swiftSettings: strict),
        .target(name: "ParleyTracing", dependencies: ["ParleyRemoteDebugger", "ParleyTelemetry", tracing, instrumentation], swiftSettings: strict),

        // The debug drawer. ParleyDrawer: its vocabulary — items, messages, the rules a value set from outside
        // must meet — shared by apps, parleyd, parleyctl and the web debugger. ParleyRemoteDrawer: the API apps use
        // to offer a drawer (typed settings and actions).
        .target(name: "ParleyDrawer", dependencies: ["ParleyWire"], swiftSettings: strict),
        .target(name: "ParleyRemoteDrawer", dependencies: ["Parley", "ParleyDrawer", logging], swiftSettings: strict),

        // The web debugger: HTTP routes, the JSON API, the live stream, access control and the pages (Assets/,
        // embedded in the code by SwiftPM, so that parleyd stays one file). What it shows comes through
        // `WebDebuggerBackend`, which parleyd implements; this target knows neither the transceiver nor the store.
        .target(
            name: "ParleyWeb",
            dependencies: [
                "ParleyBlocking", "ParleyDebugger", "ParleyDrawer", "ParleyJSON", "ParleyOTLP", "ParleyTelemetry", hummingbird,
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"), metrics, nioCore,
                nioFoundation, logging, serviceLifecycle, crypto,
            ],
            resources: [.embedInCode("Assets")],
            swiftSettings: strict
        ),

        // Executables: thin layers over the libraries.
        .executableTarget(name: "ParleyExample", dependencies: ["Parley"], swiftSettings: strict),
        // The Listr example: a to-do list answering CLI commands; its command types live in a library so
        // that the app, parleyctl's tests and other tools share one definition of each wire name and JSON shape.
        .target(name: "ListrCommands", dependencies: ["Parley"], swiftSettings: strict),
        .executableTarget(
            name: "ListrExample",
            dependencies: [
                "Parley", "ParleyAvahi", "ParleyControl", "ParleyLogging", "ParleyRemoteDebugger", "ParleyRemoteDrawer", "ParleyTracing", "ListrCommands",
                logging, tracing, argumentParser, unixSignals, .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strict
        ),
        // parleyctl: the command-line tool (browse, send, listen, peers, status); --direct runs without parleyd.
        .executableTarget(
            name: "ParleyCtl",
            dependencies: [
                "Parley", "ParleyCommandLine", "ParleyControl", "ParleyDiscovery", "ParleyAvahi", "ParleyDebugger", "ParleyDrawer", "ParleyJSON",
                "ParleyTelemetry", nioCore, logging, argumentParser, unixSignals,
            ],
            swiftSettings: strict
        ),
        // parleyd: layered configuration, systemd notify/watchdog, journald logging, the service; main is thin.
        // glibc's allocator tuning for parleyd (malloc.h is not part of Swift's Glibc module).
        .target(name: "CMallocTuning"),
        .target(
            name: "ParleyDaemon",
            dependencies: [
                "CMallocTuning", "Parley", "ParleyAvahi", "ParleyCommandLine", "ParleyDNSUpdate", "ParleyControl", "ParleyDebugger",
                "ParleyDrawer", "ParleyHistory", "ParleyJSON", "ParleyOTLP", "ParleyTelemetry", "ParleyBlocking", "ParleyWeb", nioCore, nioPosix, logging, metrics,
                prometheus, argumentParser, serviceLifecycle, unixSignals, .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "Parleyd", dependencies: ["ParleyDaemon"], swiftSettings: strict),
        // Test support: shared message types, the peer process used by two-process tests and benchmarks.
        .target(
            name: "ParleyTestSupport", dependencies: ["Parley", "ParleyDebugger", "ParleyTelemetry", "ParleyWire", nioCore, nioPosix, logging],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ParleyTestPeer",
            dependencies: ["Parley", "ParleyAvahi", "ParleyDNSSD", "ParleyTestSupport", "ParleyRemoteDebugger", nioCore, logging],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ParleyBench",
            dependencies: [
                "Parley", "ParleyControl", "ParleyDebugger", "ParleyJSON", "ParleyOTLP", "ParleyTelemetry", "ParleyWire", "ParleyTestSupport", nioCore,
                nioPosix, .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Benchmarks/ParleyBench",
            swiftSettings: strict
        ),
        // A Hummingbird server and an AsyncHTTPClient request, each bootstrapped with ParleyTracer and
        // ParleyLogHandler: the integration tests' traced apps, and an example of the two bootstrap lines.
        .executableTarget(
            name: "ParleyTracedHTTP",
            dependencies: [
                "ParleyLogging", "ParleyTracing", hummingbird, .product(name: "AsyncHTTPClient", package: "async-http-client"), argumentParser,
                logging, tracing,
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "TelemetryBench",
            dependencies: ["ParleyLogging", "ParleyTracing", logging, tracing],
            path: "Benchmarks/TelemetryBench",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "DebuggerBench",
            dependencies: ["ParleyDebugger", "ParleyHistory", "ParleyJSON", "ParleyTelemetry", nioCore],
            path: "Benchmarks/DebuggerBench",
            swiftSettings: strict
        ),

        .testTarget(
            name: "ParleyWireTests",
            dependencies: [
                "ParleyWire", nioCore,
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleySecurityTests",
            dependencies: [
                "ParleySecurity", "ParleyWire", nioCore, .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyTests",
            dependencies: [
                "Parley", "ParleyWire", "ParleyTestSupport", "ParleyTestPeer", nioCore, nioPosix, nioFoundation, logging,
                serviceLifecycle, .product(name: "NIOEmbedded", package: "swift-nio"),
                // A TLS client of the tests' own (a device's certificate with another key) and the key that signs for it.
                .product(name: "NIOSSL", package: "swift-nio-ssl"), crypto,
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleyBlockingTests", dependencies: ["ParleyBlocking", nioCore, nioPosix], swiftSettings: strict),
        .testTarget(name: "ParleyDiscoveryTests", dependencies: ["ParleyDiscovery"], swiftSettings: strict),
        .testTarget(name: "ParleyAvahiTests", dependencies: ["ParleyAvahi", "ParleyDiscovery"], swiftSettings: strict),
        .testTarget(name: "ParleyDNSSDTests", dependencies: ["ParleyDNSSD", "ParleyDiscovery", logging], swiftSettings: strict),
        .testTarget(
            name: "ParleyDNSUpdateTests", dependencies: ["ParleyDNSUpdate", "ParleyDiscovery", "ParleyTestSupport", logging], swiftSettings: strict
        ),
        // Discovery in network-namespace labs with real avahi-daemons (and a DNS server), the products as processes
        // inside them; needs root, skips elsewhere.
        .testTarget(
            name: "ParleyDiscoveryLabTests",
            dependencies: ["ParleyDiscovery", "ParleyAvahi", "ParleyDNSSD", "ParleyDNSUpdate", "ParleyDiscoveryProbe", logging, "ParleyTestPeer", "Parleyd", "ParleyCtl", "ListrExample", "ParleyTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyCtlTests",
            dependencies: [
                "ParleyCtl", "ParleyCommandLine", "ParleyControl", "ListrExample", "ListrCommands", "ParleyTestSupport", "ParleyTestPeer", "Parleyd", "ParleyDebugger",
                "ParleyRemoteDebugger", "ParleyDrawer", "ParleyRemoteDrawer", "ParleyTelemetry", nioCore,
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleyTelemetryTests", dependencies: ["ParleyTelemetry", "ParleyJSON", nioCore], swiftSettings: strict),
        .testTarget(
            name: "ParleyOTLPTests",
            dependencies: ["ParleyOTLP", "ParleyTelemetry", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyLoggingTests",
            dependencies: ["ParleyLogging", "ParleyTracing", "ParleyRemoteDebugger", "ParleyTelemetry", "Parley", "ParleyTestSupport", logging, tracing],
            swiftSettings: strict
        ),
        // Unit tests of the tracer, and the integration tests: real parleyd, a traced Hummingbird server and a traced
        // AsyncHTTPClient client, each in its own process.
        .testTarget(
            name: "ParleyTracingTests",
            dependencies: [
                "ParleyTracing", "ParleyLogging", "ParleyRemoteDebugger", "ParleyTelemetry", "ParleyDebugger", "Parley", "ParleyTestSupport",
                "ParleyTracedHTTP", "Parleyd", tracing,
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleyCommandLineTests", dependencies: ["ParleyCommandLine"], swiftSettings: strict),
        .testTarget(name: "ParleyControlTests", dependencies: ["ParleyControl", "Parley"], swiftSettings: strict),
        .testTarget(name: "ParleyDrawerTests", dependencies: ["ParleyDrawer"], swiftSettings: strict),
        .testTarget(name: "ParleyJSONTests", dependencies: ["ParleyJSON", "ParleyTestSupport", nioCore], swiftSettings: strict),
        .testTarget(name: "ParleyDebuggerTests", dependencies: ["ParleyDebugger", "ParleyJSON", nioCore], swiftSettings: strict),
        .testTarget(
            name: "ParleyRemoteDebuggerTests",
            dependencies: ["ParleyRemoteDebugger", "ParleyDebugger", "ParleyTelemetry", "ParleyTestSupport", "Parley", nioCore, logging],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyRemoteDrawerTests", dependencies: ["ParleyRemoteDrawer", "ParleyDrawer", "Parley", "ParleyTestSupport"], swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyHistoryTests",
            dependencies: ["ParleyHistory", "ParleyDebugger", "ParleyTelemetry", "ParleyJSON", "ParleyTestSupport", grdb, nioCore],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyDaemonTests",
            dependencies: [
                "ParleyDaemon", "ParleyControl", "ParleyDebugger", "ParleyDrawer", "ParleyRemoteDrawer", "ParleyHistory", "ParleyTelemetry", "ParleyWeb",
                "Parleyd", "ParleyTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The web API against a backend of the tests' own, through Hummingbird's test client.
        .testTarget(
            name: "ParleyWebTests",
            dependencies: [
                "ParleyWeb", "ParleyDebugger", "ParleyDrawer", "ParleyJSON", "ParleyOTLP", "ParleyTelemetry", nioCore, nioFoundation, logging, metrics,
                .product(name: "CompressNIO", package: "compress-nio"), .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: strict
        ),
        // Load and fault tests: real parleyd processes on loopback under many peers, slow and stalled peers,
        // garbage and SIGKILL. Depends on Parleyd and ParleyCtl so that both binaries are built.
        .testTarget(
            name: "ParleyFaultTests",
            dependencies: [
                "Parley", "ParleyWire", "ParleyControl", "ParleyDebugger", "ParleyHistory", "ParleyTelemetry", "ParleyTestSupport", "Parleyd", "ParleyCtl",
                nioCore, nioPosix, logging,
            ],
            swiftSettings: strict
        ),
    ]
)
