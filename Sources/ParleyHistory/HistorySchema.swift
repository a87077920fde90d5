import GRDB

/// The tables of `history.sqlite` and their migrations.
///
/// * `session`: one row per app connection (times in milliseconds since 1970, UTC); `importing = 1` marks an
///   import still in progress, invisible to every query until it commits.
/// * `entry`: the small columns of each state change, listed and paged without touching blobs.
/// * `entryContent`: the state JSON and screenshot PNG, one row per entry, read only when an entry is shown,
///   diffed, replayed or exported.
/// * `totals`: the entry count and byte total that the retention limits are checked against, kept in step as rows
///   come and go (by triggers, and for log records and spans stored by ``TelemetryRows``, once per batch) so that
///   an append does not have to sum the whole history.
/// * `logRecord` and `span`: an app's log lines and finished spans, beside its states in the same session. Each
///   has `received` (milliseconds, when parleyd stored it: the retention order) and its own time in nanoseconds
///   (`time`, `start`: the timeline order); what is only shown (metadata, attributes, events, links) is JSON text,
///   empty when there is none. Each counts as one entry, and its `size` in bytes, against the retention limits.
/// * `logText` and `spanText`: FTS5 indexes over log messages and span names, external-content tables kept in step
///   with their tables: rows are indexed by ``TelemetryRows`` once per stored batch, and removed by triggers.
/// * `traceSummary`: per trace and session, the first start, last end, and counts of spans and failed spans, so
///   that the newest traces are read from an index. Added to once per stored batch by ``TelemetryRows``, taken from
///   by a trigger as spans are removed; a trace partly removed by the retention limits keeps its first start and
///   last end as they were.
enum HistorySchema {
    /// Bytes a row costs beyond its texts and blobs: its integers, the row and index entries, page slack. An
    /// estimate on the high side, so that many small entries cannot pass the byte limit unseen.
    static let rowOverhead = 96

    /// What an entry counts against `historyMaxBytes`: its state, screenshot and action text, and its rows.
    static func entryBytes(_ row: String) -> String {
        "\(row).stateSize + \(row).screenshotSize + length(CAST(\(row).action AS BLOB)) + \(2 * rowOverhead)"
    }

    /// What a session counts: its texts and its row.
    static func sessionBytes(_ row: String) -> String {
        "length(CAST(\(row).appName AS BLOB)) + length(CAST(\(row).peerID AS BLOB)) + length(CAST(\(row).host AS BLOB)) + \(rowOverhead)"
    }

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
        migrator.registerMigration("v4: the byte limit counts texts and rows, not only states and screenshots") { db in
            // What an entry costs on disk, as HistorySchema.entryBytes says; sessions likewise.
            try db.execute(
                sql: """
                    DROP TRIGGER entry_added;
                    DROP TRIGGER entry_removed;
                    CREATE TRIGGER entry_added AFTER INSERT ON entry BEGIN
                        UPDATE totals SET entries = entries + 1, bytes = bytes + (\(entryBytes("NEW")));
                    END;
                    CREATE TRIGGER entry_removed AFTER DELETE ON entry BEGIN
                        UPDATE totals SET entries = entries - 1, bytes = bytes - (\(entryBytes("OLD")));
                    END;
                    CREATE TRIGGER session_added AFTER INSERT ON session BEGIN
                        UPDATE totals SET bytes = bytes + (\(sessionBytes("NEW")));
                    END;
                    CREATE TRIGGER session_removed AFTER DELETE ON session BEGIN
                        UPDATE totals SET bytes = bytes - (\(sessionBytes("OLD")));
                    END;
                    CREATE TRIGGER session_changed AFTER UPDATE OF appName, peerID, host ON session BEGIN
                        UPDATE totals SET bytes = bytes - (\(sessionBytes("OLD"))) + (\(sessionBytes("NEW")));
                    END;
                    UPDATE totals SET bytes =
                        (SELECT COALESCE(SUM(\(entryBytes("entry"))), 0) FROM entry) +
                        (SELECT COALESCE(SUM(\(sessionBytes("session"))), 0) FROM session);
                    """
            )
        }
        migrator.registerMigration("v5: log records and spans beside the states") { db in
            try db.execute(
                sql: """
                    CREATE TABLE logRecord (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        session INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                        received INTEGER NOT NULL,
                        time INTEGER NOT NULL,
                        severity INTEGER NOT NULL,
                        label TEXT NOT NULL,
                        message TEXT NOT NULL,
                        metadata TEXT NOT NULL,
                        source TEXT NOT NULL,
                        file TEXT NOT NULL,
                        function TEXT NOT NULL,
                        line INTEGER NOT NULL,
                        traceID TEXT,
                        spanID TEXT,
                        droppedMetadata INTEGER NOT NULL,
                        size INTEGER NOT NULL
                    );
                    CREATE INDEX logRecord_by_session_time ON logRecord(session, time);
                    CREATE INDEX logRecord_by_severity ON logRecord(severity);
                    CREATE INDEX logRecord_by_label ON logRecord(label);
                    CREATE INDEX logRecord_by_trace ON logRecord(traceID) WHERE traceID IS NOT NULL;
                    CREATE TABLE span (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        session INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                        received INTEGER NOT NULL,
                        traceID TEXT NOT NULL,
                        spanID TEXT NOT NULL,
                        parentSpanID TEXT,
                        name TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        start INTEGER NOT NULL,
                        end INTEGER NOT NULL,
                        statusCode TEXT NOT NULL,
                        statusMessage TEXT,
                        attributes TEXT NOT NULL,
                        events TEXT NOT NULL,
                        links TEXT NOT NULL,
                        droppedAttributes INTEGER NOT NULL,
                        droppedEvents INTEGER NOT NULL,
                        droppedLinks INTEGER NOT NULL,
                        size INTEGER NOT NULL
                    );
                    CREATE INDEX span_by_session_start ON span(session, start);
                    CREATE INDEX span_by_trace ON span(traceID, start);
                    -- The timeline merges states with log records and spans in nanoseconds: an index on that
                    -- expression lets SQLite walk each kind in order instead of sorting the states.
                    CREATE INDEX entry_by_session_nanos ON entry(session, time * 1000000);
                    CREATE VIRTUAL TABLE logText USING fts5(message, content = 'logRecord', content_rowid = 'id');
                    CREATE VIRTUAL TABLE spanText USING fts5(name, content = 'span', content_rowid = 'id');
                    CREATE TRIGGER logRecord_added AFTER INSERT ON logRecord BEGIN
                        INSERT INTO logText(rowid, message) VALUES (NEW.id, NEW.message);
                        UPDATE totals SET entries = entries + 1, bytes = bytes + NEW.size;
                    END;
                    CREATE TRIGGER logRecord_removed AFTER DELETE ON logRecord BEGIN
                        INSERT INTO logText(logText, rowid, message) VALUES ('delete', OLD.id, OLD.message);
                        UPDATE totals SET entries = entries - 1, bytes = bytes - OLD.size;
                    END;
                    CREATE TRIGGER span_added AFTER INSERT ON span BEGIN
                        INSERT INTO spanText(rowid, name) VALUES (NEW.id, NEW.name);
                        UPDATE totals SET entries = entries + 1, bytes = bytes + NEW.size;
                    END;
                    CREATE TRIGGER span_removed AFTER DELETE ON span BEGIN
                        INSERT INTO spanText(spanText, rowid, name) VALUES ('delete', OLD.id, OLD.name);
                        UPDATE totals SET entries = entries - 1, bytes = bytes - OLD.size;
                    END;
                    """
            )
        }
        migrator.registerMigration("v6: the resource attributes of an OpenTelemetry session") { db in
            // JSON of the resource's attributes (`service.name`, …) for sessions of kind otlp; empty for the others.
            try db.execute(sql: "ALTER TABLE session ADD COLUMN resource TEXT NOT NULL DEFAULT ''")
        }
        migrator.registerMigration("v7: log records and spans indexed and counted once per batch") { db in
            // A trigger per inserted row made the full-text index take each row as its own statement: storing a
            // batch of 512 log records cost four times what inserting them and then indexing the batch with one
            // INSERT … SELECT costs. TelemetryRows now does the latter, and adds the batch to `totals` at once.
            try db.execute(sql: "DROP TRIGGER logRecord_added; DROP TRIGGER span_added;")
            // Nothing ranks matches, so the indexes keep no per-row token counts (`columnsize=0`): a third less to
            // write for each row. Rebuilt from their tables.
            try db.execute(
                sql: """
                    DROP TABLE logText;
                    DROP TABLE spanText;
                    CREATE VIRTUAL TABLE logText USING fts5(message, content = 'logRecord', content_rowid = 'id', columnsize = 0);
                    CREATE VIRTUAL TABLE spanText USING fts5(name, content = 'span', content_rowid = 'id', columnsize = 0);
                    INSERT INTO logText(logText) VALUES ('rebuild');
                    INSERT INTO spanText(spanText) VALUES ('rebuild');
                    """)
        }
        migrator.registerMigration("v8: a summary row per trace and session") { db in
            // The newest traces were found by grouping every stored span by trace: 0.2–0.35 s with a few hundred
            // thousand spans, on every look at the web debugger's traces. A row per trace and session, added to once
            // per stored batch (TelemetryRows) and taken from as spans are removed (the trigger), lets the listing
            // read the newest few from an index instead.
            try db.execute(
                sql: """
                    CREATE TABLE traceSummary (
                        traceID TEXT NOT NULL,
                        session INTEGER NOT NULL,
                        start INTEGER NOT NULL,
                        end INTEGER NOT NULL,
                        spans INTEGER NOT NULL,
                        errors INTEGER NOT NULL,
                        PRIMARY KEY (traceID, session)
                    ) WITHOUT ROWID;
                    CREATE INDEX traceSummary_by_start ON traceSummary(start);
                    CREATE INDEX traceSummary_by_session ON traceSummary(session, start);
                    INSERT INTO traceSummary (traceID, session, start, end, spans, errors)
                        SELECT traceID, session, MIN(start), MAX(end), COUNT(*), SUM(statusCode = 'error') FROM span GROUP BY traceID, session;
                    CREATE TRIGGER span_summarized_removed AFTER DELETE ON span BEGIN
                        UPDATE traceSummary SET spans = spans - 1, errors = errors - (OLD.statusCode = 'error')
                            WHERE traceID = OLD.traceID AND session = OLD.session;
                        DELETE FROM traceSummary WHERE traceID = OLD.traceID AND session = OLD.session AND spans <= 0;
                    END;
                    """)
        }
        migrator.registerMigration("v9: the severity index holds warnings and above") { db in
            // Most of an app's records are info and below; a level filter that keeps those (info and above) reads
            // most of the table anyway, in a session through its time index. Indexing only warnings and above, what a
            // level filter narrows to, took a B-tree insert off nearly every stored record: 11.3 → 10.4 µs a record
            // (docs/performance.md). TelemetrySQL.atLeast states the index's condition for the planner. The number
            // is written out: a migration means what it meant when it ran.
            try db.execute(
                sql: """
                    DROP INDEX logRecord_by_severity;
                    CREATE INDEX logRecord_by_severity ON logRecord(severity) WHERE severity >= 13;
                    """)
        }
        return migrator
    }

    /// The lowest severity number the severity index holds (migration v9): warnings.
    static let indexedSeverity = 13
}
