import Foundation

/// A time as whole milliseconds since 1970 (UTC), and its one text form, `2026-11-21T10:29:51.698Z`: what the
/// history keeps (exact in SQLite's integers, so an export → import round trip gives back the same times), and how
/// every time parleyd hands out is written — the web API, control replies, parleyctl's JSON, the log.
public struct Timestamp: Sendable, Hashable, Comparable {
    public var milliseconds: Int64

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    public init(_ date: Date) {
        milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` (years 0000–9999).
    public var iso8601: String {
        let (days, dayMilliseconds) = milliseconds.floorDivided(by: 86_400_000)
        let (year, month, day) = Self.civil(fromDays: days)
        let seconds = dayMilliseconds / 1000
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(seconds / 3600, 2)):\(pad(seconds / 60 % 60, 2)):\(pad(seconds % 60, 2)).\(pad(dayMilliseconds % 1000, 3))Z"
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fraction]Z`; a fraction finer than milliseconds is rounded down. Nil for
    /// anything else, including offsets other than `Z` and impossible dates.
    public init?(iso8601 text: String) {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func separator(_ index: Int, _ character: Character) -> Bool {
            index < bytes.count && bytes[index] == character.asciiValue
        }
        guard bytes.count >= 20, separator(4, "-"), separator(7, "-"), separator(10, "T"), separator(13, ":"), separator(16, ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...Self.daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var fraction: Int64 = 0
        if separator(index, ".") {
            index += 1
            var digits = 0
            while index < bytes.count, let digit = number(index..<(index + 1)) {
                if digits < 3 { fraction = fraction * 10 + digit }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { fraction *= 10 }
        }
        guard index == bytes.count - 1, separator(index, "Z") else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        milliseconds = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fraction
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar, day 0 = 1970-01-01).
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    /// Quotient and remainder rounded towards minus infinity (the remainder is never negative).
    fileprivate func floorDivided(by divisor: Int64) -> (Int64, Int64) {
        let remainder = self % divisor
        return remainder < 0 ? (self / divisor - 1, remainder + divisor) : (self / divisor, remainder)
    }
}

/// ``Timestamp/iso8601`` for a time in milliseconds since 1970: parleyd's log lines.
/// Plain arithmetic, no calendar or time zone (a Foundation `TimeZone` loads ICU and its zone data).
public func iso8601UTC(milliseconds: Int64) -> String {
    Timestamp(milliseconds: milliseconds).iso8601
}
