#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

public enum Terminal {
    public static func isTerminal(_ fd: Int32) -> Bool { vpn_isatty(fd) == 1 }
}

/// Where text output goes. The CLI writes through this so tests can capture it.
public protocol TextSink: AnyObject {
    func write(_ text: String)
}

/// Writes straight to a file descriptor, unbuffered.
public final class FileDescriptorSink: TextSink {
    public let fd: Int32
    public init(fd: Int32) { self.fd = fd }

    public func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buf in Glibc.write(fd, buf.baseAddress! + offset, buf.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
        bytes.removeAll()
    }
}

/// Collects output in memory, for tests.
public final class BufferSink: TextSink {
    public private(set) var text = ""
    public init() {}
    public func write(_ text: String) { self.text += text }
}

extension Terminal {
    /// Reads one line from the terminal on fd 0 with echo turned off, for
    /// secrets typed by hand. The prompt goes to stderr.
    public static func readLineWithoutEcho(prompt: String) -> [UInt8] {
        FileDescriptorSink(fd: 2).write(prompt)
        var saved = termios()
        let haveTermios = tcgetattr(0, &saved) == 0
        if haveTermios {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSAFLUSH, &quiet)
        }
        defer {
            if haveTermios { tcsetattr(0, TCSAFLUSH, &saved) }
            FileDescriptorSink(fd: 2).write("\n")
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(0, &byte, 1) == 1 {
            if byte == 0x0A { break }
            line.append(byte)
        }
        return line
    }
}
