#if canImport(Glibc)
import Glibc
#endif
import VPNSystem

/// Why a provider's bring-up failed: the error its tunnel ends with and the
/// stop reason recorded.
public struct ProviderFailure: Error, Sendable {
    public let error: ConnectionError
    public let stopReason: StopReason

    public init(error: ConnectionError, stopReason: StopReason) {
        self.error = error
        self.stopReason = stopReason
    }

    init(_ name: ConnectionError.Kind, _ message: String, _ reason: StopReason) {
        self.init(error: ConnectionError(name, message), stopReason: reason)
    }
}

/// A provider tunnel that ends the shared way: its timers cancelled, its own
/// resources released, its undo stack unwound, then `context.finish`, once.
protocol EndingTunnel: ProviderTunnel {
    var context: TunnelContext { get }
    var undo: UndoStack { get }
    var tokens: [String: EventLoop.Token] { get set }
    /// What the tunnel holds besides its timers and undo steps (sockets,
    /// fds, credentials); runs once, before the undo stack unwinds.
    func releaseAtEnd()
}

extension EndingTunnel {
    /// A failure: everything undone, disconnected with `error`.
    func fail(_ error: ConnectionError, _ reason: StopReason) {
        guard context.exitCode == nil else { return }
        if context.status != .connecting && context.status != .disconnecting { context.transition(.disconnecting) }
        end(error: error, reason: reason)
    }

    func end(error: ConnectionError?, reason: StopReason) {
        guard context.exitCode == nil else { return }
        for (_, token) in tokens { context.loop.cancel(token) }
        tokens = [:]
        releaseAtEnd()
        undo.unwind()
        context.finish(error: error, reason: reason)
    }

    /// A bring-up step's error as the end it means: a `ProviderFailure` as
    /// itself, a `VPNError` (a secret, the store) with its hint, anything else
    /// as a configuration failure.
    func failStart(_ error: Error) {
        switch error {
        case let f as ProviderFailure:
            fail(f.error, f.stopReason)
        case let e as VPNError:
            fail(ConnectionError(.configurationFailed, e.message + (e.hint.map { " (\($0))" } ?? "")), .configurationFailed)
        default:
            fail(ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }
    }
}
