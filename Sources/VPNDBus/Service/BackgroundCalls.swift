import Synchronization
import VPNCore
import VPNSystem

/// The calls that take a while (a start or stop, which spawn and signal
/// processes; a verify, which waits for its probe) run on a thread of their
/// own, so that the loop answers every other caller meanwhile; their replies
/// come back to the loop's thread, which sends them. Like the agent's
/// workers, one uid (root's aside) may have `maximumPerUser` of them running
/// at once, and nobody more than `maximumRunning` in all.
final class BackgroundCalls: @unchecked Sendable {
    let bus: BusConnection
    let replies: LoopQueue<(BusMessage, BusReply)>
    let running = Mutex<[UInt32: Int]>([:])
    let maximumPerUser: Int
    let maximumRunning: Int

    init(bus: BusConnection, maximumPerUser: Int = 32, maximumRunning: Int = 256) throws {
        self.bus = bus
        self.maximumPerUser = maximumPerUser
        self.maximumRunning = maximumRunning
        replies = try LoopQueue()
    }

    /// Sends the replies of finished calls from `loop`.
    func attach(to loop: EventLoop) {
        loop.watch(replies.readFD) { [unowned self] in
            for (call, reply) in replies.take() { bus.reply(to: call, reply) }
        }
    }

    /// Runs `work` on a thread of its own and answers `call` with what it
    /// returns or throws; the handler returns the `.deferred` given here.
    func run(_ call: BusMessage, for caller: Caller, _ work: @escaping () throws -> BusReply) throws -> BusReply {
        let uid = caller.uid
        let refusal: VPNError? = running.withLock { r in
            if !caller.isRoot && r[uid, default: 0] >= maximumPerUser {
                return VPNError(.failure, L("\(maximumPerUser) requests of yours are running already"), hint: L("wait for one of them to end, then call again"))
            }
            if r.values.reduce(0, +) >= maximumRunning {
                return VPNError(.failure, L("\(maximumRunning) requests are running already"), hint: L("wait for one of them to end, then call again"))
            }
            r[uid, default: 0] += 1
            return nil
        }
        if let refusal { throw refusal }
        do {
            try BackgroundThread.start { [self] in
                let reply: BusReply
                do { reply = try work() } catch { reply = VPNBusService.reply(for: error) }
                running.withLock { $0[uid, default: 1] -= 1 }
                replies.push((call, reply))
            }
        } catch {
            running.withLock { $0[uid, default: 1] -= 1 }
            throw error
        }
        return .deferred
    }
}
