// The history store lands here (GRDB); see issue #5.
import ParleyDebugger
