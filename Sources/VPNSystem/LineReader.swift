#if canImport(Glibc)
import Glibc
#endif

/// Reads '\n'-terminated lines from a non-blocking fd.
public final class LineReader {
    public let fd: Int32
    var buffer: [UInt8] = []
    public private(set) var closed = false

    public init(fd: Int32) { self.fd = fd }

    public func readLines() -> [String] {
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { buffer += chunk[0..<n]; continue }
            if n == 0 { closed = true }
            break
        }
        return LineReader.takeLines(&buffer)
    }

    /// Takes the complete lines off the front of `buffer` (any bytes; not
    /// valid UTF-8 becomes U+FFFD), leaving a partial last line in it.
    public static func takeLines(_ buffer: inout [UInt8]) -> [String] {
        var lines: [String] = []
        var start = 0
        while let nl = buffer[start...].firstIndex(of: 0x0A) {
            lines.append(String(decoding: buffer[start..<nl], as: UTF8.self))
            start = nl + 1
        }
        buffer.removeFirst(start)
        return lines
    }
}
