import Crypto
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
@testable import Parley
import ParleyTestSupport
import Synchronization
import Testing

/// A device's certificate is public (every TLS handshake shows it); its key is not. Someone who copied a paired
/// device's certificate and signs with a key of their own must not get in.
@Suite("Device keys", .timeLimit(.minutes(2)))
struct DeviceKeyTests {
    /// Signs TLS 1.3's CertificateVerify with `key`, whatever certificate it is presented with: the one thing an
    /// impostor holding only the certificate can do. (BoringSSL refuses a key file that does not match the
    /// certificate; a custom key is how a TLS stack is made to present them together.)
    struct ForeignKey: NIOSSLCustomPrivateKey, Hashable {
        let key: Data

        var signatureAlgorithms: [SignatureAlgorithm] { [.ecdsaSecp256R1Sha256] }

        func sign(channel: any Channel, algorithm: SignatureAlgorithm, data: ByteBuffer) -> EventLoopFuture<ByteBuffer> {
            channel.eventLoop.makeCompletedFuture {
                let signature = try P256.Signing.PrivateKey(rawRepresentation: key).signature(for: Data(data.readableBytesView))
                return ByteBuffer(bytes: signature.derRepresentation)
            }
        }

        func decrypt(channel: any Channel, data: ByteBuffer) -> EventLoopFuture<ByteBuffer> {
            channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
    }

    /// Records what the TLS client saw before its channel closed.
    final class Outcome: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let errors = Mutex<[String]>([])
        let bytes = Mutex(0)

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let count = unwrapInboundIn(data).readableBytes
            bytes.withLock { $0 += count }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.withLock { $0.append("\(error)") }
            context.close(promise: nil)
        }
    }

    @Test("a paired device's certificate presented with another key fails the TLS handshake: no pairing request, no peer, no handler, not a byte of Parley")
    func certificateWithoutItsKey() async throws {
        let (serverIdentity, phone) = (try DeviceIdentity.generate(name: "parleyd"), try DeviceIdentity.generate(name: "phone"))
        let requests = Mutex<[DeviceRequest]>([])
        let received = Mutex<[String]>([])
        let logs = LogCapture()
        let server = makeTransceiver("parleyd", logs: logs) {
            var devices = DeviceAuthentication(identity: serverIdentity, trusting: [phone.fingerprint])
            devices.untrusted = { request in
                requests.withLock { $0.append(request) }
                return "pairing requested"
            }
            $0.devices = devices
        }
        server.receive(Echo.self) { echo, _ in received.withLock { $0.append(echo.text) } }

        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv13
        configuration.certificateVerification = .none
        configuration.certificateChain = [.certificate(try NIOSSLCertificate(bytes: phone.certificateDER, format: .der))]
        configuration.privateKey = .privateKey(NIOSSLPrivateKey(customPrivateKey: ForeignKey(key: P256.Signing.PrivateKey().rawRepresentation)))
        let context = try NIOSSLContext(configuration: configuration)

        try await withRunning([server]) {
            let outcome = Outcome()
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers(
                            try NIOSSLClientHandler(context: context, serverHostname: nil), outcome
                        )
                    }
                }
                .connect(host: "127.0.0.1", port: try #require(server.listeningPort)).get()
            // The impostor's side of TLS 1.3 ends with its CertificateVerify; parleyd checks that signature against
            // the certificate's key, answers with an alert and closes.
            try await channel.closeFuture.get()
            #expect(await logs.logged(mentioning: "the TLS handshake failed"))
            #expect(outcome.bytes.withLock { $0 } == 0, "nothing but TLS reached the impostor")
            #expect(server.peers.isEmpty)
        }
        #expect(requests.withLock { $0 }.isEmpty, "not even a pairing request: the certificate was never proven")
        #expect(received.withLock { $0 }.isEmpty)
    }
}
