import NIOCore

/// Runs tasks on one NIO event loop. A connection's reading and handler code runs on its channel's own event
/// loop, so a frame read from the socket reaches its handler, and the handler's reply reaches the socket,
/// without waking another thread. The price: a handler that computes for long delays the other connections
/// on that loop (see `TransceiverConfiguration.handlersRunOnEventLoop`).
final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
