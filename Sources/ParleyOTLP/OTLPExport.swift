import Foundation
import ParleyTelemetry
import SwiftProtobuf

/// What an OTLP export request (`POST /v1/traces`, `POST /v1/logs`) held, as Parley's records: one entry per
/// resource (a service instance), with what had to be refused.
public struct OTLPExport: Sendable {
    /// The records of one resource: its attributes (`service.name`, `service.instance.id`, …) and its log records
    /// and spans.
    public struct Resource: Sendable {
        public var attributes: TelemetryAttributes
        public var batch: TelemetryBatch

        /// `service.name`, when the resource names one.
        public var serviceName: String? { attributes["service.name"].flatMap { if case .string(let name) = $0 { name } else { nil } } }
        /// `service.instance.id`, when the resource has one.
        public var instanceID: String? {
            attributes["service.instance.id"].map { if case .string(let id) = $0 { id } else { $0.description } }
        }
    }

    public var resources: [Resource]
    /// Spans or log records refused (an id of the wrong length, say); OTLP's partial success reports them.
    public var rejected: Int
    /// Why the first refused item was refused, for the partial success's `error_message` and parleyd's log.
    public var rejection: String?
    /// Text fields that were not valid UTF-8, stored with U+FFFD in place of each bad sequence (of a JSON body,
    /// which is text as a whole, the bad sequences).
    public var textsRepaired = 0

    public var count: Int { resources.reduce(0) { $0 + $1.batch.count } }
}

/// How the body of an OTLP/HTTP request is encoded: by its `Content-Type`.
public enum OTLPEncoding: String, Sendable, Hashable {
    case protobuf = "application/x-protobuf"
    case json = "application/json"

    /// The encoding a `Content-Type` header names (parameters such as `charset` ignored), or nil for another.
    public init?(contentType: String) {
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        self.init(rawValue: type)
    }
}

/// A body that is not an OTLP export of the kind asked for: answered 400.
public struct OTLPDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// Which signal a request carries.
public enum OTLPSignal: String, Sendable, Hashable {
    case traces, logs
}

extension OTLPExport {
    /// Decodes an export request body. Protobuf by swift-protobuf from the `.proto` files in Protos/; JSON by
    /// swift-protobuf's JSON mapping, with the one exception OTLP makes to it: ids are hexadecimal, not base64.
    ///
    /// Text that is not valid UTF-8 (which protobuf's decoders refuse) does not lose the export: each bad sequence
    /// becomes U+FFFD, as the OpenTelemetry Collector, which does not check, would pass it on, and
    /// ``textsRepaired`` says how many texts were.
    public static func decode(_ body: Data, signal: OTLPSignal, encoding: OTLPEncoding) throws(OTLPDecodingError) -> OTLPExport {
        do {
            return try decodeAsSent(body, signal: signal, encoding: encoding)
        } catch BinaryDecodingError.invalidUTF8 {
            guard let repaired = OTLPWireScan.replacingInvalidUTF8(protobuf: body, signal: signal), repaired.fields > 0 else {
                // Not a text this schema knows (a field of a newer OTLP): the decoder's own words.
                throw failure(BinaryDecodingError.invalidUTF8, signal, encoding)
            }
            do {
                var export = try decodeAsSent(repaired.body, signal: signal, encoding: encoding)
                export.textsRepaired = repaired.fields
                return export
            } catch {
                throw failure(error, signal, encoding)
            }
        } catch let error as JSONDecodingError {
            // swift-protobuf says `malformedString` of a string with a byte that is not UTF-8: the body is checked
            // only now that decoding it failed.
            let text = String(decoding: body, as: UTF8.self)
            guard !text.utf8.elementsEqual(body) else { throw failure(error, signal, encoding) }
            do {
                var export = try decodeAsSent(Data(text.utf8), signal: signal, encoding: encoding)
                let replacement = Array("\u{FFFD}".utf8)
                let sentAsSuch = body.indices.dropLast(2).count { body[$0] == replacement[0] && body[$0 + 1] == replacement[1] && body[$0 + 2] == replacement[2] }
                export.textsRepaired = text.unicodeScalars.count { $0 == "\u{FFFD}" } - sentAsSuch
                return export
            } catch {
                throw failure(error, signal, encoding)
            }
        } catch {
            throw failure(error, signal, encoding)
        }
    }

    /// How many messages (spans, log records, attributes, values…) a body holds, read without decoding it: what
    /// decoding it will hold in memory grows with this, not with the body's size. A body that is not well formed
    /// is counted as far as it is.
    public static func messageCount(_ body: Data, signal: OTLPSignal, encoding: OTLPEncoding) -> Int {
        switch encoding {
        case .protobuf: OTLPWireScan.messageCount(protobuf: body, signal: signal)
        case .json: OTLPWireScan.messageCount(json: body)
        }
    }

    private static func failure(_ error: any Error, _ signal: OTLPSignal, _ encoding: OTLPEncoding) -> OTLPDecodingError {
        switch error {
        case let error as BinaryDecodingError:
            OTLPDecodingError(reason: "the body is not an OTLP \(signal.rawValue) export in protobuf: \(OTLPMapping.describe(error))")
        case let error as JSONDecodingError:
            OTLPDecodingError(reason: "the body is not an OTLP \(signal.rawValue) export in JSON: \(OTLPMapping.describe(error))")
        default:
            OTLPDecodingError(reason: "the body is not an OTLP \(signal.rawValue) export: \(error)")
        }
    }

    private static func decodeAsSent(_ body: Data, signal: OTLPSignal, encoding: OTLPEncoding) throws -> OTLPExport {
        var binaryOptions = BinaryDecodingOptions()
        binaryOptions.messageDepthLimit = OTLPMapping.messageDepthLimit
        var jsonOptions = JSONDecodingOptions()
        jsonOptions.ignoreUnknownFields = true
        jsonOptions.messageDepthLimit = OTLPMapping.messageDepthLimit
        let mapping = OTLPMapping(ids: encoding == .json ? .hexadecimalText : .raw)
        switch (signal, encoding) {
        case (.traces, .protobuf):
            return mapping.export(try Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest(serializedBytes: body, options: binaryOptions))
        case (.traces, .json):
            return mapping.export(try Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest(jsonUTF8Data: body, options: jsonOptions))
        case (.logs, .protobuf):
            return mapping.export(try Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest(serializedBytes: body, options: binaryOptions))
        case (.logs, .json):
            return mapping.export(try Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest(jsonUTF8Data: body, options: jsonOptions))
        }
    }

    /// The answer to an export: OTLP's `Export…ServiceResponse`, with a partial success when something was
    /// refused, in the request's encoding.
    public static func response(signal: OTLPSignal, encoding: OTLPEncoding, rejected: Int, message: String?) -> Data {
        do {
            switch signal {
            case .traces:
                var response = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceResponse()
                if rejected > 0 || message != nil {
                    response.partialSuccess.rejectedSpans = Int64(rejected)
                    response.partialSuccess.errorMessage = message ?? ""
                }
                return encoding == .json ? try response.jsonUTF8Data() : try response.serializedData()
            case .logs:
                var response = Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceResponse()
                if rejected > 0 || message != nil {
                    response.partialSuccess.rejectedLogRecords = Int64(rejected)
                    response.partialSuccess.errorMessage = message ?? ""
                }
                return encoding == .json ? try response.jsonUTF8Data() : try response.serializedData()
            }
        } catch {
            // Encoding two scalar fields cannot fail; an empty body is still a valid (empty) response.
            return Data()
        }
    }
}

extension OTLPExport {
    /// The body of an error answer (OTLP/HTTP: a `google.rpc.Status`), in the request's encoding, or in JSON when
    /// the request's own could not be told (an unsupported content type).
    public static func status(code: Int32, message: String, encoding: OTLPEncoding?) -> Data {
        var status = Google_Rpc_Status()
        status.code = code
        status.message = message
        // Encoding an integer and a string cannot fail; an empty body is still an answer.
        return (encoding == .protobuf ? try? status.serializedData() : try? status.jsonUTF8Data()) ?? Data()
    }
}
