-- pgpush schema, part 13: no empty partition below the first id.
--
-- 009 turned the tables of an existing installation into the partitions
-- notifications_0 and delivery_errors_0 (every id below the first one given
-- after it). On a database created at version 9 or later there was nothing
-- to convert: both are empty and stay empty, since ids only grow. They still
-- cost every claim and outcome: PostgreSQL 15 starts each partition of the
-- worker's kept (generic) plans before leaving out the ones not needed,
-- about 35-70 µs per partition and statement at 100 notifications/s
-- (BENCHMARKS.md, 0.5.0). Empty, they are dropped; holding rows, they are
-- history and stay until `pgpush prune` retires them.
--
-- Safe on a filled database and safe to run again by hand.
DO $$
BEGIN
    IF to_regclass('pgpush.notifications_0') IS NULL OR to_regclass('pgpush.delivery_errors_0') IS NULL THEN
        RETURN;
    END IF;
    LOCK TABLE pgpush.notifications, pgpush.delivery_errors IN ACCESS EXCLUSIVE MODE;
    IF EXISTS (SELECT 1 FROM pgpush.notifications_0) OR EXISTS (SELECT 1 FROM pgpush.delivery_errors_0) THEN
        RETURN;
    END IF;
    DROP TABLE pgpush.notifications_0;
    DROP TABLE pgpush.delivery_errors_0;
END
$$;
