/// A value kept behind a reference, so that a struct holding a large
/// optional stays small: `DerivedStatus` carries a whole runtime record, and
/// `status` of a thousand profiles copied some 600 bytes per profile three
/// times over (a megabyte and a half of fresh pages). Copies share the box;
/// a set makes a new one, so the holder keeps value semantics. It codes as
/// the value itself, and an absent key decodes as nil.
@propertyWrapper
public struct Boxed<Value: Sendable>: Sendable {
    final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
    private var box: Box

    public init(wrappedValue: Value) { box = Box(wrappedValue) }

    public var wrappedValue: Value {
        get { box.value }
        set { box = Box(newValue) }
    }
}

extension Boxed: Equatable where Value: Equatable {
    public static func == (a: Self, b: Self) -> Bool { a.box === b.box || a.wrappedValue == b.wrappedValue }
}

extension Boxed: Encodable where Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(wrappedValue)
    }
}

extension Boxed: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws {
        self.init(wrappedValue: try decoder.singleValueContainer().decode(Value.self))
    }
}

// A synthesized Codable writes a nil as an absent key (as for any optional)
// and reads an absent key as nil, as it does without the box.
extension KeyedDecodingContainer {
    public func decode<T: Decodable & Sendable>(_ type: Boxed<T?>.Type, forKey key: Key) throws -> Boxed<T?> {
        Boxed(wrappedValue: try decodeIfPresent(T.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    public mutating func encode<T: Encodable & Sendable>(_ value: Boxed<T?>, forKey key: Key) throws {
        try encodeIfPresent(value.wrappedValue, forKey: key)
    }
}
