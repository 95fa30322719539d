import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// What a notification costs in WAL depends on whether its claim and outcome updates find
/// room on the row's own page (sql/008_room_for_updates.sql, sql/016_room_for_both_updates.sql):
/// the pages that hold rows, in the partition a row lands in and in the partitions made later,
/// are filled only to 70%.
/// (Where updates then go, and the WAL they write, is measured by `pgpush bench`, not
/// asserted here: it depends on what else the database is doing.)
@Suite struct RoomForUpdatesTests {
    @Test func everyPartitionLeavesRoomForTheRowsOwnUpdates() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let inserted = try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload)
            VALUES (repeat('ab', 32), '{"aps":{"alert":"hi"}}') RETURNING id
            """)
        let id = try #require(inserted.int64(0, 0))
        let fillfactors = try connection.query("""
            SELECT c.oid = (SELECT tableoid FROM pgpush.notifications WHERE id = $1),
                   (SELECT option_value FROM pg_options_to_table(c.reloptions) WHERE option_name = 'fillfactor')
              FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'pgpush.notifications'::regclass
            """, [id])
        #expect(fillfactors.rowCount >= 2)
        var holdsTheRow = false
        for row in 0..<fillfactors.rowCount {
            #expect(fillfactors.string(row, 1) == "70", "partition \(row) of \(fillfactors.rowCount)")
            holdsTheRow = holdsTheRow || fillfactors.bool(row, 0) == true
        }
        #expect(holdsTheRow)
    }

    /// A fillfactor the operator chose is theirs: 016 changes only 008's default, and running
    /// it again changes nothing.
    @Test func aFillfactorTheOperatorChoseIsKept() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let partition = try #require(try connection.query("""
            SELECT min(c.oid::regclass::text) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'pgpush.notifications'::regclass
            """).string(0, 0))
        try connection.execute(script: """
            ALTER TABLE \(partition) SET (fillfactor = 85);
            UPDATE pgpush.history_partitioning SET notifications_storage = '{fillfactor=85,autovacuum_vacuum_scale_factor=0.01}';
            """)
        let migration = try #require(try Migration.load(directory: TestDatabase.sqlDirectory).first { $0.version == 16 })
        try connection.execute(script: migration.sql)
        #expect(try connection.query("SELECT notifications_storage::text FROM pgpush.history_partitioning").string(0, 0)
                == "{fillfactor=85,autovacuum_vacuum_scale_factor=0.01}")
        #expect(try connection.query("""
            SELECT option_value FROM pg_class c, pg_options_to_table(c.reloptions)
             WHERE c.oid = $1::regclass AND option_name = 'fillfactor'
            """, [partition]).string(0, 0) == "85")
    }
}
