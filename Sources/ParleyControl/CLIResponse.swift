import Foundation
import Parley

/// The reply `parleyctl send` understands: text for a person, or bytes for a file. An app answers the commands it
/// takes from the command line with it (the Listr example does), and parleyctl prints the text or writes the bytes.
///
/// Encoded as an object with exactly one key: `{"message": "text"}` or `{"data": "<base64>"}` (the base64 of
/// Foundation's `JSONEncoder`, standard alphabet, padded). Any tool can produce or read it without Swift.
public enum CLIResponse: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "CLIResponse"

    case message(String)
    case data(Data)

    private enum CodingKeys: String, CodingKey {
        case message
        case data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let keys = container.allKeys
        guard keys.count == 1 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "a CLIResponse has exactly one key, \"message\" or \"data\"; found \(keys.map(\.stringValue))")
            )
        }
        switch keys[0] {
        case .message: self = .message(try container.decode(String.self, forKey: .message))
        case .data: self = .data(try container.decode(Data.self, forKey: .data))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .message(let text): try container.encode(text, forKey: .message)
        case .data(let bytes): try container.encode(bytes, forKey: .data)
        }
    }
}
