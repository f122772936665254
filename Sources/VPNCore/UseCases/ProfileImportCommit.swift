import FoundationEssentials
import VPNSystem

/// A plan committed: the secrets first (keyed by the profile's id), then the
/// trust anchors, then one store write of every saved and removed profile.
/// A failure before the store is written puts each secret back as it was, so
/// a failed import leaves nothing behind. Once the store is written, the
/// secrets a replaced profile no longer names and a removed profile's files go.
extension ProfileImport {
    public func commit(_ plan: ImportPlan) throws -> ImportOutcome {
        var undo: [() throws -> Void] = []
        let saved: [Profile]
        do {
            for c in plan.changes where c.writes { try writeSecrets(c, undo: &undo) }
            for (fingerprint, pem) in plan.anchors.sorted(by: { $0.key < $1.key }) {
                try trust.install(pem, fingerprint: fingerprint)
            }
            let saving = plan.changes.filter(\.writes).map(\.profile), removing = plan.removed.map(\.id)
            saved = saving.isEmpty && removing.isEmpty ? [] : try store.commit(saving: saving, removing: removing)
        } catch {
            throw Self.unwind(undo, after: error)
        }
        var done = plan
        var next = saved.makeIterator()
        for i in done.changes.indices where done.changes[i].writes {
            if let p = next.next() { done.changes[i].profile = p }
        }
        return ImportOutcome(plan: done, leftovers: cleanUp(plan))
    }

    /// Writes a change's secrets, pushing for each how to take it back: a new
    /// profile's secrets all go; an updated one's get their old values again.
    func writeSecrets(_ c: PlannedChange, undo: inout [() throws -> Void]) throws {
        let id = c.profile.id, secrets = store.secrets
        if c.change == .created && !c.secrets.isEmpty { undo.append { try secrets.removeAll(id) } }
        for (name, value) in c.secrets.sorted(by: { $0.key < $1.key }) {
            if c.change == .updated {
                let old = storedSecret(id, name)
                undo.append {
                    if let old { try secrets.set(id, name: name, value: old) } else { try secrets.remove(id, name: name) }
                }
            }
            try secrets.set(id, name: name, value: value)
        }
    }

    /// Runs the undo steps newest first, every one even when one fails; the
    /// error is the one that stopped the commit, with what could not be undone.
    static func unwind(_ undo: [() throws -> Void], after error: Error) -> Error {
        var failures: [String] = []
        for step in undo.reversed() {
            do { try step() } catch { failures.append(VPNError.from(error).message) }
        }
        guard !failures.isEmpty else { return error }
        let e = VPNError.from(error)
        return VPNError(e.code, e.message, hint: e.hint, remedy: e.remedy, cause: e.cause, problems: e.problems + failures)
    }

    /// After the store write: what the new profiles no longer use goes. A
    /// failure here changes nothing in the store; it is reported, not thrown.
    func cleanUp(_ plan: ImportPlan) -> [ImportLeftover] {
        var left: [ImportLeftover] = []
        for c in plan.changes {
            for name in c.secretsToRemove {
                do { try store.secrets.remove(c.profile.id, name: name) } catch {
                    left.append(ImportLeftover(profile: c.profile, secret: name, error: VPNError.from(error)))
                }
            }
            guard c.change == .removed else { continue }
            do {
                try store.secrets.removeAll(c.profile.id)
                try runtime.remove(c.profile.id)
            } catch {
                left.append(ImportLeftover(profile: c.profile, secret: nil, error: VPNError.from(error)))
            }
        }
        return left
    }
}
