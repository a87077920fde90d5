import Foundation

/// Where parleyd's control socket lives by default; parleyd's `controlSocket` key and parleyctl's `--socket`
/// share this one definition.
public enum ControlSocket {
    /// `$RUNTIME_DIRECTORY/parleyd.sock` under systemd with `RuntimeDirectory=` (`/run/parley/parleyd.sock` for
    /// the system unit); `/run/parley/parleyd.sock` for root; else `$XDG_RUNTIME_DIR/parley/parleyd.sock`; else
    /// `/tmp/parley-<uid>/parleyd.sock`.
    public static func defaultPath(environment: [String: String]) -> String {
        if let runtime = firstPath(environment["RUNTIME_DIRECTORY"]) { return runtime + "/parleyd.sock" }
        if getuid() == 0 { return "/run/parley/parleyd.sock" }
        if let xdg = firstPath(environment["XDG_RUNTIME_DIR"]) { return xdg + "/parley/parleyd.sock" }
        return "/tmp/parley-\(getuid())/parleyd.sock"
    }

    /// systemd passes several directories separated by colons; the first is ours. Only absolute paths count.
    public static func firstPath(_ value: String?) -> String? {
        guard let first = value?.split(separator: ":").first, first.hasPrefix("/") else { return nil }
        return String(first)
    }
}
