@preconcurrency import Crypto
import Foundation
import SwiftASN1
import X509

/// A device's long-term identity: a P-256 key pair and a self-signed certificate for it, kept in a directory of
/// the device's own (parleyd's state directory, an app's data directory). Devices pin each other's certificates by
/// ``fingerprint`` (the Syncthing model), so the certificate's names and dates only describe it: nothing trusts it
/// for being signed.
///
/// The key file is written mode 0600 and refused, like a shared secret file, when other users may read it; its
/// description never shows the key.
public struct DeviceIdentity: Sendable {
    /// The certificate, DER.
    public let certificateDER: [UInt8]
    public let fingerprint: DeviceFingerprint
    /// The name in the certificate's subject (a device's name when it was created; it does not follow renames).
    public let name: String
    let privateKey: P256.Signing.PrivateKey

    /// The file names inside an identity's directory.
    public static let keyFileName = "device-key.pem"
    public static let certificateFileName = "device-certificate.pem"

    init(privateKey: P256.Signing.PrivateKey, certificateDER: [UInt8], name: String) {
        self.privateKey = privateKey
        self.certificateDER = certificateDER
        self.fingerprint = DeviceFingerprint(certificateDER: certificateDER)
        self.name = name
    }

    /// A new identity, held only in memory (tests, `--ephemeral` tools).
    public static func generate(name: String) throws(DeviceIdentityError) -> DeviceIdentity {
        let key = P256.Signing.PrivateKey()
        return try DeviceIdentity(privateKey: key, certificateDER: selfSigned(key, name: name), name: name)
    }

    /// The identity kept in `directory`, created there on first use (the directory too). A key whose certificate
    /// is missing gets a new certificate (and so a new fingerprint: devices that paired with the old one pair
    /// again). Two processes creating one at once end with the same identity: the key file and the certificate are
    /// each linked into place only if none is there, and the loser reads the winner's.
    public static func loadOrCreate(in directory: String, name: String) throws(DeviceIdentityError) -> DeviceIdentity {
        let keyPath = directory + "/" + keyFileName
        let certificatePath = directory + "/" + certificateFileName
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .cannotWrite(path: directory, reason: error.localizedDescription)
        }
        let key: P256.Signing.PrivateKey
        switch Result(catching: { () throws(ProtectedFile.Failure) in try ProtectedFile.read(keyPath, accessCheck: .ownerOnly, limit: 4096) }) {
        case .success(let bytes):
            key = try readKey(bytes, path: keyPath)
        case .failure(.missing):
            let new = P256.Signing.PrivateKey()
            do {
                try ProtectedFile.write(Array(new.pemRepresentation.utf8), to: keyPath, replacing: false)
                key = new
            } catch .alreadyExists {
                return try loadOrCreate(in: directory, name: name)
            } catch {
                throw DeviceIdentityError(error, path: keyPath)
            }
        case .failure(let failure):
            throw DeviceIdentityError(failure, path: keyPath)
        }
        if let existing = try storedCertificate(at: certificatePath, for: key, name: name) { return existing }
        // Missing, unreadable or for another key: made again from the key, which is what identifies the device.
        // Two processes making it at once sign two different certificates (and so two fingerprints): a missing one
        // is linked into place only if still missing, and the loser takes the winner's.
        let certificateDER = try selfSigned(key, name: name)
        let pem = Array((Self.pem(certificateDER) + "\n").utf8)
        do {
            try ProtectedFile.write(pem, to: certificatePath, replacing: false)
        } catch .alreadyExists {
            if let winner = try storedCertificate(at: certificatePath, for: key, name: name) { return winner }
            // A stale one, for another key: replaced, and what is on disk afterwards is the identity.
            do {
                try ProtectedFile.write(pem, to: certificatePath, replacing: true)
            } catch {
                throw DeviceIdentityError(error, path: certificatePath)
            }
            if let stored = try storedCertificate(at: certificatePath, for: key, name: name) { return stored }
        } catch {
            throw DeviceIdentityError(error, path: certificatePath)
        }
        return DeviceIdentity(privateKey: key, certificateDER: certificateDER, name: name)
    }

    /// The identity of the certificate at `path`, if it is one for `key`.
    private static func storedCertificate(at path: String, for key: P256.Signing.PrivateKey, name: String) throws(DeviceIdentityError) -> DeviceIdentity? {
        guard let existing = try? String(contentsOfFile: path, encoding: .utf8), let certificate = try? Certificate(pemEncoded: existing),
            certificate.publicKey == Certificate.PublicKey(key.publicKey)
        else { return nil }
        return DeviceIdentity(privateKey: key, certificateDER: try der(certificate), name: Self.commonName(certificate) ?? name)
    }

    /// The private key in PEM (PKCS #8), for a TLS library.
    public var privateKeyPEM: String { privateKey.pemRepresentation }

    /// The certificate in PEM.
    public var certificatePEM: String { Self.pem(certificateDER) }

    private static func pem(_ certificateDER: [UInt8]) -> String { PEMDocument(type: "CERTIFICATE", derBytes: certificateDER).pemString }

    private static func readKey(_ bytes: [UInt8], path: String) throws(DeviceIdentityError) -> P256.Signing.PrivateKey {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .malformed(path: path, reason: "it is not text") }
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw .malformed(path: path, reason: "it holds no P-256 private key in PEM (\(error))")
        }
    }

    /// A certificate for `key`, signed by it: v3, valid from a day ago for 100 years (pinned by fingerprint, so its
    /// dates are never what decides), usable for both ends of TLS.
    static func selfSigned(_ key: P256.Signing.PrivateKey, name: String) throws(DeviceIdentityError) -> [UInt8] {
        do {
            let subject = try DistinguishedName {
                CommonName(name.isEmpty ? "parley device" : String(name.prefix(64)))
                OrganizationName("Parley")
            }
            let now = Date()
            let certificate = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: Certificate.PublicKey(key.publicKey),
                notValidBefore: now.addingTimeInterval(-86_400),
                notValidAfter: now.addingTimeInterval(100 * 365.25 * 86_400),
                issuer: subject,
                subject: subject,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([.serverAuth, .clientAuth])
                },
                issuerPrivateKey: Certificate.PrivateKey(key)
            )
            return try der(certificate)
        } catch let error as DeviceIdentityError {
            throw error
        } catch {
            throw .cannotCreate(reason: "\(error)")
        }
    }

    private static func der(_ certificate: Certificate) throws(DeviceIdentityError) -> [UInt8] {
        var serializer = DER.Serializer()
        do {
            try serializer.serialize(certificate)
        } catch {
            throw .cannotCreate(reason: "\(error)")
        }
        return serializer.serializedBytes
    }

    private static func commonName(_ certificate: Certificate) -> String? {
        for relativeName in certificate.subject {
            for attribute in relativeName where attribute.type == .RDNAttributeType.commonName {
                return attribute.value.description
            }
        }
        return nil
    }
}

extension DeviceIdentity: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "DeviceIdentity(\(name), \(fingerprint.short), key not shown)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// Why a device identity cannot be read or made. Each description names the file and says what to do; none
/// contains any part of a key.
public enum DeviceIdentityError: Error, Sendable, Hashable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notAFile(path: String)
    case wrongOwner(path: String, owner: UInt32, user: UInt32)
    case accessibleToOthers(path: String, mode: UInt32)
    case malformed(path: String, reason: String)
    case cannotWrite(path: String, reason: String)
    case cannotCreate(reason: String)
    /// The list of debuggers a device paired with, kept beside its identity, is not one.
    case malformedPairedDebuggers(path: String, reason: String)

    init(_ failure: ProtectedFile.Failure, path: String) {
        self =
            switch failure {
            case .missing: .unreadable(path: path, reason: "it does not exist")
            case .unreadable(let reason): .unreadable(path: path, reason: reason)
            case .notAFile: .notAFile(path: path)
            case .wrongOwner(let owner, let user): .wrongOwner(path: path, owner: owner, user: user)
            case .accessibleToOthers(let mode): .accessibleToOthers(path: path, mode: mode)
            case .tooLong(let limit): .malformed(path: path, reason: "it is longer than \(limit) bytes")
            case .alreadyExists: .cannotWrite(path: path, reason: "it already exists")
            case .cannotWrite(let reason): .cannotWrite(path: path, reason: reason)
            }
    }

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read device key file \(path): \(reason)"
        case .notAFile(let path):
            "device key file \(path) is not a regular file"
        case .wrongOwner(let path, let owner, let user):
            "device key file \(path) belongs to uid \(owner), not to uid \(user) that this process runs as; "
                + "make that user its owner (`chown`) and the only one with access (`chmod 600 \(path)`)"
        case .accessibleToOthers(let path, let mode):
            "device key file \(path) has mode \(SharedSecretError.octal(mode)): its group or others may access it; "
                + "anyone who read it can pose as this device: remove it (a new identity is made at the next start) "
                + "and unpair the old fingerprint on the devices that paired with it"
        case .malformed(let path, let reason):
            "device key file \(path) does not hold a key: \(reason); remove it to make a new identity "
                + "(devices paired with this one then pair again)"
        case .cannotWrite(let path, let reason):
            "cannot write \(path): \(reason)"
        case .cannotCreate(let reason):
            "cannot make a device certificate: \(reason)"
        case .malformedPairedDebuggers(let path, let reason):
            "\(path) does not list paired debuggers: \(reason); remove it to pair again (the device identity is kept)"
        }
    }
}
