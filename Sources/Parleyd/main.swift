import Foundation
import ParleyDaemon

// parleyd: the Parley daemon. Everything lives in ParleyDaemon; see docs/operations.md.
exit(await Parleyd.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
