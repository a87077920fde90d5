/// The release both parleyd and parleyctl report with `--version`: one number, in one place.
public enum ParleyRelease {
    public static let version = "0.1.0"
}
