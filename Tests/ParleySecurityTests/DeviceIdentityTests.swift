import Foundation
import ParleySecurity
import SwiftASN1
import Synchronization
import Testing
import X509

/// Device identities: a key and a self-signed certificate kept in a directory, their fingerprints and the codes
/// two devices show while they pair.
@Suite("Device identities")
struct DeviceIdentityTests {
    @Test("created on first use with the key file 0600 and a certificate for that key; the next load is the same device")
    func createdThenLoaded() throws {
        try SharedSecretTests.withDirectory { directory in
            let state = directory + "/state"
            let first = try DeviceIdentity.loadOrCreate(in: state, name: "alice-laptop")
            #expect(try SharedSecretTests.mode(state + "/" + DeviceIdentity.keyFileName) == 0o600)
            #expect(try SharedSecretTests.mode(state) == 0o700)
            let again = try DeviceIdentity.loadOrCreate(in: state, name: "renamed")
            #expect(again.fingerprint == first.fingerprint && again.certificateDER == first.certificateDER)
            #expect(again.name == "alice-laptop")

            let certificate = try Certificate(derEncoded: first.certificateDER)
            #expect(certificate.subject == certificate.issuer)
            #expect(try certificate.extensions.basicConstraints == .notCertificateAuthority)
            #expect(certificate.notValidAfter.timeIntervalSinceNow > 50 * 365 * 86_400)
            // Signed by its own key: the signature checks against the public key it carries.
            #expect(certificate.publicKey.isValidSignature(certificate.signature, for: certificate))
            #expect(!"\(first)".contains("PRIVATE") && "\(first)".contains(first.fingerprint.short))
        }
    }

    @Test("a lost certificate is made again from the key; a key file others may read is refused with the fix")
    func certificateAndKeyFiles() throws {
        try SharedSecretTests.withDirectory { directory in
            let first = try DeviceIdentity.loadOrCreate(in: directory, name: "box")
            try FileManager.default.removeItem(atPath: directory + "/" + DeviceIdentity.certificateFileName)
            let remade = try DeviceIdentity.loadOrCreate(in: directory, name: "box")
            #expect(try Certificate(derEncoded: remade.certificateDER).publicKey == Certificate(derEncoded: first.certificateDER).publicKey)

            let keyPath = directory + "/" + DeviceIdentity.keyFileName
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyPath)
            do throws(DeviceIdentityError) {
                _ = try DeviceIdentity.loadOrCreate(in: directory, name: "box")
                Issue.record("accepted a key file of mode 0644")
            } catch {
                #expect(error == .accessibleToOthers(path: keyPath, mode: 0o644))
                #expect(error.description.contains(keyPath) && error.description.contains("unpair"))
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
            try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: keyPath))
            #expect {
                try DeviceIdentity.loadOrCreate(in: directory, name: "box")
            } throws: { error in
                guard case DeviceIdentityError.malformed(let path, _) = error else { return false }
                return path == keyPath && "\(error)".contains("remove it")
            }
        }
    }

    @Test("eight creators racing in one directory end with one identity")
    func racingCreators() throws {
        try SharedSecretTests.withDirectory { directory in
            let all = Self.race(in: directory)
            #expect(!all.contains(nil) && Set(all).count == 1)
        }
    }

    /// What eight threads loading or creating the identity in `directory` at once each get (nil: an error).
    static func race(in directory: String) -> [DeviceFingerprint?] {
        let fingerprints = Mutex<[DeviceFingerprint?]>(Array(repeating: nil, count: 8))
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let fingerprint = try? DeviceIdentity.loadOrCreate(in: directory, name: "racer").fingerprint
            fingerprints.withLock { $0[index] = fingerprint }
        }
        return fingerprints.withLock { $0 }
    }

    @Test("eight creators racing to make a lost certificate again end with one fingerprint, the one on disk")
    func racingCertificates() throws {
        try SharedSecretTests.withDirectory { directory in
            _ = try DeviceIdentity.loadOrCreate(in: directory, name: "racer")
            for _ in 0..<5 {
                try FileManager.default.removeItem(atPath: directory + "/" + DeviceIdentity.certificateFileName)
                let all = Self.race(in: directory)
                #expect(!all.contains(nil) && Set(all).count == 1)
                #expect(all.first == (try DeviceIdentity.loadOrCreate(in: directory, name: "racer")).fingerprint)
            }
        }
    }

    @Test("a fingerprint is SHA-256 of the certificate in base32: full and short forms, parsed back, matched by a prefix")
    func fingerprints() throws {
        let identity = try DeviceIdentity.generate(name: "x")
        let fingerprint = identity.fingerprint
        #expect(fingerprint.full.count == 52 + 12 && fingerprint.full.split(separator: "-").count == 13)
        #expect(fingerprint.short == String(fingerprint.full.prefix(19)))
        #expect(DeviceFingerprint(fingerprint.full) == fingerprint)
        #expect(DeviceFingerprint(fingerprint.full.lowercased().replacingOccurrences(of: "-", with: "")) == fingerprint)
        #expect(DeviceFingerprint(String(fingerprint.full.dropLast())) == nil)
        #expect(DeviceFingerprint(String(repeating: "1", count: 52)) == nil)
        // 52 characters carry 260 bits: the last four must be zeros.
        #expect(DeviceFingerprint(String(repeating: "A", count: 51) + "B") == nil && DeviceFingerprint(String(repeating: "A", count: 52)) != nil)
        #expect(fingerprint.matches(prefix: fingerprint.short.lowercased()) && !fingerprint.matches(prefix: ""))
        // SHA-256("abc") in RFC 4648 base32, as Python's base64.b32encode writes it.
        #expect(DeviceFingerprint(certificateDER: Array("abc".utf8)).full == "XJ4B-NP4P-AHH6-UQKB-IDPF-3LRC-EOYA-GYND-SYLX-VHFU-CD7W-D4QA-CWWQ")
    }

    @Test("the pairing code is six digits, the same from both sides, and different for any other certificate")
    func pairingCodes() throws {
        let alice = try DeviceIdentity.generate(name: "alice").fingerprint
        let app = try DeviceIdentity.generate(name: "app").fingerprint
        let middle = try DeviceIdentity.generate(name: "mallory").fingerprint
        let code = PairingCode(alice, app)
        #expect(code == PairingCode(app, alice))
        #expect(code.digits.count == 6 && code.digits.allSatisfy(\.isNumber) && "\(code)".count == 7)
        #expect(PairingCode(alice, middle) != code || PairingCode(middle, app) != code)
    }
}
