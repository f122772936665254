import VPNSystem

/// Bringing a tunnel up pushes an undo step for every change; a failure or a
/// stop unwinds them newest first (wg-quick's `trap del_if`).
public final class UndoStack {
    public struct Step {
        public let description: String
        let undo: () throws -> Void
    }

    public private(set) var steps: [Step] = []
    let log: (String) -> Void

    public init(log: @escaping (String) -> Void) { self.log = log }

    /// Records that a change was made and how to take it back.
    public func push(_ description: String, undo: @escaping () throws -> Void) {
        steps.append(Step(description: description, undo: undo))
    }

    /// Runs every undo step, newest first. A failing step is logged and the
    /// rest still run, so one stuck change does not leave the others behind.
    public func unwind() {
        while let step = steps.popLast() {
            do {
                try step.undo()
            } catch let e as NetlinkError where e.isGone {
                // The interface went first (a provider killed): what was on it went too.
                log("[#] \(step.description): already gone")
            } catch {
                log("[!] undo '\(step.description)' failed: \(error)")
            }
        }
    }
}
