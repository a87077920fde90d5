import GRDB

/// The tables of `history.sqlite` and their migrations.
///
/// * `session`: one row per app connection (times in milliseconds since 1970, UTC); `importing = 1` marks an
///   import still in progress, invisible to every query until it commits.
/// * `entry`: the small columns of each state change, listed and paged without touching blobs.
/// * `entryContent`: the state JSON and screenshot PNG, one row per entry, read only when an entry is shown,
///   diffed, replayed or exported.
/// * `totals`: the entry count and byte total that the retention limits are checked against, kept by triggers so
///   that an append does not have to sum the whole history.
enum HistorySchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: sessions, entries, contents, totals") { db in
            try db.execute(
                sql: """
                    CREATE TABLE session (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        peerID TEXT NOT NULL,
                        appName TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        imported BOOLEAN NOT NULL DEFAULT 0,
                        importing BOOLEAN NOT NULL DEFAULT 0,
                        started INTEGER NOT NULL,
                        ended INTEGER
                    );
                    CREATE TABLE entry (
                        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                        session INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                        time INTEGER NOT NULL,
                        action TEXT NOT NULL,
                        stateSize INTEGER NOT NULL,
                        screenshotSize INTEGER NOT NULL
                    );
                    CREATE INDEX entry_by_session ON entry(session, sequence);
                    CREATE TABLE entryContent (
                        sequence INTEGER PRIMARY KEY REFERENCES entry(sequence) ON DELETE CASCADE,
                        state BLOB NOT NULL,
                        screenshot BLOB NOT NULL
                    );
                    CREATE TABLE totals (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        entries INTEGER NOT NULL,
                        bytes INTEGER NOT NULL
                    );
                    INSERT INTO totals (id, entries, bytes) VALUES (1, 0, 0);
                    CREATE TRIGGER entry_added AFTER INSERT ON entry BEGIN
                        UPDATE totals SET entries = entries + 1, bytes = bytes + NEW.stateSize + NEW.screenshotSize;
                    END;
                    CREATE TRIGGER entry_removed AFTER DELETE ON entry BEGIN
                        UPDATE totals SET entries = entries - 1, bytes = bytes - OLD.stateSize - OLD.screenshotSize;
                    END;
                    """
            )
        }
        migrator.registerMigration("v2: one name for the original framing") { db in
            // Sessions of apps in the original Swift Talk debugger framing were recorded as kind "legacy".
            try db.execute(sql: "UPDATE session SET kind = 'original' WHERE kind = 'legacy'")
        }
        migrator.registerMigration("v3: the address each app connected from") { db in
            // Empty for sessions recorded before, and for imported ones.
            try db.execute(sql: "ALTER TABLE session ADD COLUMN host TEXT NOT NULL DEFAULT ''")
        }
        return migrator
    }
}
