// The app-side client lands here; see issue #5.
import ParleyDebugger
