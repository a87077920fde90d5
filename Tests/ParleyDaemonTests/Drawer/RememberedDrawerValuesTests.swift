import Foundation
import Logging
@testable import ParleyDaemon
import ParleyDrawer
import ParleyTestSupport
import Testing

@Suite("The drawer's remembered values on disk")
struct RememberedDrawerValuesTests {
    @Test("writes that overlap leave the newest values in the file, and a new parleyd reads them back")
    func overlappingWrites() async throws {
        let scratch = try ScratchDirectory()
        let file = scratch.url.appendingPathComponent(RememberedDrawerValues.fileName).path
        let logger = Logger(label: "parley.test", factory: { _ in SwiftLogNoOpLogHandler() })
        let remembered = RememberedDrawerValues(file: file, logger: logger)
        // Each write runs on the blocking pool; several are in flight at once, and they may finish in any order.
        await withTaskGroup(of: Void.self) { group in
            for step in 0..<40 {
                group.addTask { await remembered.store(.number(Double(step)), app: "Listr", item: "step") }
                group.addTask { await remembered.store(.number(Double(step)), app: "Listr", item: "other-\(step % 3)") }
            }
        }
        let kept = remembered.values(for: "Listr")
        #expect(kept.count == 4)
        let data = try #require(FileManager.default.contents(atPath: file))
        let onDisk = try JSONDecoder().decode([String: [String: DrawerValue]].self, from: data)
        #expect(onDisk == ["Listr": kept])
        let reread = RememberedDrawerValues(file: file, logger: logger)
        await reread.load()
        #expect(reread.values(for: "Listr") == kept)
    }
}
