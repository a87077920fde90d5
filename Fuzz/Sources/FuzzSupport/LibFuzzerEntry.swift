import CLibFuzzer

/// Runs libFuzzer's driver on `callback`. Each fuzzer's entry point calls this: SwiftPM links an executable with
/// `main` redirected to `<module>_main` (so that tests could link the module), which leaves libFuzzer's own
/// `main` out; the fuzzer therefore defines `<module>_main` itself and hands over to the same driver.
public func runLibFuzzer(
    _ argc: CInt,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}
