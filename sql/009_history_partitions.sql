-- pgpush schema, part 9: history that is retired by dropping partitions.
--
-- Until now every finished notification stayed a row until `pgpush prune`
-- deleted it: one row delete per notification, with its WAL, its index
-- entries to vacuum and the bloat left behind. From here on
-- pgpush.notifications and pgpush.delivery_errors are partitioned by RANGE of
-- the notification id, in spans of ids (settable below), and prune drops a
-- whole partition once every row in it is final and its newest finished_at is
-- older than the retention: one catalog change instead of a million deletes.
--
-- Why by id and not by time: id is the primary key, given in order, and never
-- changes, so a row never moves between partitions, the primary key stays a
-- plain unique index, and partitions fill in order: the old ones hold only
-- finished rows, which claims leave out by naming the lowest id that can still
-- be queued (claim_from_id below). Time ranges would need created_at in the
-- primary key and in every lookup by id.
-- delivery_errors is partitioned by notification_id with the same bounds, so a
-- notification's errors are dropped with it.
--
-- What a partitioned table cannot have: a unique index without the id. The
-- idempotency key (unique per app) therefore moves to pgpush.idempotency_keys,
-- one small row per keyed notification, written by a trigger in the same
-- statement as the notification; its primary key keeps the public name
-- notifications_idempotency. Those rows are the one thing still deleted row by
-- row when a partition goes (keyless notifications cost no delete at all).
--
-- Existing tables are converted in place: the old table becomes the first
-- partition (ids up to the highest given so far), keeping its rows, ids,
-- constraints (NOT VALID ones stay NOT VALID), indexes and storage
-- parameters; a fresh install takes the same path with an empty table.
-- ATTACH checks the old rows against the bound with one read of the table
-- while this migration holds its lock (the whole migration took 5.1-5.6 s for
-- 10,000,000 rows in `pgpush bench --scenarios history`, see BENCHMARKS.md):
-- migrate a big table at a quiet time. Adding a validated CHECK first would
-- not shorten it, since both run in the migration's one transaction.
--
-- Safe to run again by hand: each step checks first.

-- How history is cut. One row. partition_span: ids per partition (at 10
-- million notifications a day, the default of one million is a partition
-- every 2.4 hours); partitions_ahead: the ids of this many partitions are
-- kept ready above the next id. The storage parameters (e.g. fillfactor) of each table live here,
-- since a partitioned table itself cannot have any: every partition is
-- created with them. Change them with UPDATE; partitions created from then on
-- follow (ALTER TABLE the existing partitions by hand if you want them to).
CREATE TABLE IF NOT EXISTS pgpush.history_partitioning (
    single                  boolean PRIMARY KEY DEFAULT true CHECK (single),
    partition_span          bigint  NOT NULL DEFAULT 1000000 CHECK (partition_span > 0),
    partitions_ahead        integer NOT NULL DEFAULT 2 CHECK (partitions_ahead BETWEEN 1 AND 100),
    notifications_storage   text[]  NOT NULL DEFAULT '{}',
    delivery_errors_storage text[]  NOT NULL DEFAULT '{}',
    claim_from_id           bigint  NOT NULL DEFAULT -9223372036854775808
);
COMMENT ON COLUMN pgpush.history_partitioning.claim_from_id IS
    'No row below this id is queued or sending (kept by pgpush.create_history_partitions): claims name it, so PostgreSQL plans them over the partitions at and above it only.';
COMMENT ON TABLE pgpush.history_partitioning IS
    'How pgpush.notifications and pgpush.delivery_errors are cut into partitions: ids per partition, partitions kept ready ahead, storage parameters of new partitions.';
INSERT INTO pgpush.history_partitioning (single) VALUES (true) ON CONFLICT DO NOTHING;

-- Idempotency keys in use: unique per app, pointing at the notification that
-- took the key. Applications have no grant on it; the trigger below writes
-- it with the owner's rights, after checking the caller may use the app (so a
-- key of another app is never revealed by a duplicate-key error).
CREATE TABLE IF NOT EXISTS pgpush.idempotency_keys (
    app             text   NOT NULL,
    idempotency_key text   NOT NULL,
    notification_id bigint NOT NULL
);
COMMENT ON TABLE pgpush.idempotency_keys IS
    'Idempotency keys in use per app and the notification holding each; retired with that notification''s partition.';
CREATE INDEX IF NOT EXISTS idempotency_keys_notification ON pgpush.idempotency_keys (notification_id);
-- The keys already used move over; the unique index of 001 gives its name
-- to the new table's key.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('pgpush.notifications_idempotency')
                  AND indrelid = 'pgpush.notifications'::regclass) THEN
        INSERT INTO pgpush.idempotency_keys (app, idempotency_key, notification_id)
        SELECT app, idempotency_key, id FROM pgpush.notifications WHERE idempotency_key IS NOT NULL;
        DROP INDEX pgpush.notifications_idempotency;
        ALTER TABLE pgpush.idempotency_keys
            ADD CONSTRAINT notifications_idempotency PRIMARY KEY (app, idempotency_key);
    END IF;
END
$$;

-- One converted table: `tab` becomes `tab`_0, attached as the partition of
-- every key below `bound` of a new partitioned `tab` with the same columns,
-- defaults, identity (continuing where it was), CHECK constraints, indexes,
-- comment and views. Used by this migration only, then dropped.
CREATE OR REPLACE FUNCTION pgpush.partition_history_table(tab text, key text, primary_key text, bound bigint)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    old constant regclass := format('pgpush.%I', tab)::regclass;
    legacy constant text := tab || '_0';
    identity_column text;
    identity_next bigint;
    index_defs text[];
    not_valid text[];
    views text[];
    statement text;
    item record;
BEGIN
    SELECT a.attname INTO identity_column FROM pg_attribute a WHERE a.attrelid = old AND a.attidentity <> '';
    EXECUTE format('SELECT 1 + greatest(coalesce(pg_sequence_last_value(%L::regclass), 0), coalesce(max(%I), 0)) FROM %s',
                   pg_get_serial_sequence(old::text, identity_column), identity_column, old)
       INTO identity_next;
    -- Definitions read before the rename, so they name pgpush.<tab> (search_path is
    -- pg_catalog only, so every name comes out schema-qualified).
    SELECT coalesce(array_agg(pg_get_indexdef(i.indexrelid)), '{}') INTO index_defs
      FROM pg_index i WHERE i.indrelid = old
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid);
    SELECT coalesce(array_agg(format('ALTER TABLE pgpush.%I DROP CONSTRAINT %I, ADD CONSTRAINT %I %s',
                                     tab, c.conname, c.conname, pg_get_constraintdef(c.oid))), '{}')
      INTO not_valid FROM pg_constraint c WHERE c.conrelid = old AND c.contype = 'c' AND NOT c.convalidated;
    SELECT coalesce(array_agg(format('CREATE OR REPLACE VIEW %s %s AS %s', v.oid::regclass,
                                     coalesce('WITH (' || array_to_string(v.reloptions, ', ') || ')', ''),
                                     pg_get_viewdef(v.oid))), '{}')
      INTO views
      FROM pg_class v WHERE v.relkind = 'v' AND v.oid IN (
            SELECT r.ev_class FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
             WHERE d.refobjid = old);

    EXECUTE format('ALTER TABLE pgpush.%I RENAME TO %I', tab, legacy);
    FOR item IN SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = old LOOP
        EXECUTE format('ALTER INDEX pgpush.%I RENAME TO %I', item.relname, item.relname || '_0');
    END LOOP;
    FOR item IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = old AND NOT t.tgisinternal LOOP
        EXECUTE format('DROP TRIGGER %I ON pgpush.%I', item.tgname, legacy);
    END LOOP;
    EXECUTE format('ALTER TABLE pgpush.%I ALTER COLUMN %I DROP IDENTITY', legacy, identity_column);

    EXECUTE format('CREATE TABLE pgpush.%I (LIKE pgpush.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE '
                   'INCLUDING COMMENTS) PARTITION BY RANGE (%I)', tab, legacy, key);
    EXECUTE format('ALTER TABLE pgpush.%I ALTER COLUMN %I ADD GENERATED ALWAYS AS IDENTITY (START WITH %s)',
                   tab, identity_column, identity_next);
    EXECUTE format('COMMENT ON TABLE pgpush.%I IS %L', tab, obj_description(old, 'pg_class'));
    FOREACH statement IN ARRAY not_valid LOOP EXECUTE statement; END LOOP;
    EXECUTE format('ALTER TABLE pgpush.%I ADD CONSTRAINT %I PRIMARY KEY (%s)', tab, tab || '_pkey', primary_key);
    FOREACH statement IN ARRAY index_defs LOOP EXECUTE statement; END LOOP;

    -- The old rows stay where they are: ATTACH reuses every index that matches one
    -- of the parent's (all of them, but delivery_errors' primary key, which now
    -- includes notification_id) and reads the table once to check the bound.
    EXECUTE format('ALTER TABLE pgpush.%I ATTACH PARTITION pgpush.%I FOR VALUES FROM (MINVALUE) TO (%s)',
                   tab, legacy, bound);
    FOREACH statement IN ARRAY views LOOP EXECUTE statement; END LOOP;
END
$$;

-- The conversion: both tables cut at the same bound, above every id given so
-- far (so new rows never land in the old table, which can then be dropped
-- once its rows are final and old enough).
DO $$
DECLARE
    bound bigint;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'pgpush.notifications'::regclass) = 'p' THEN
        RETURN;
    END IF;
    LOCK TABLE pgpush.notifications, pgpush.delivery_errors IN ACCESS EXCLUSIVE MODE;
    bound := 1 + greatest(
        coalesce(pg_sequence_last_value(pg_get_serial_sequence('pgpush.notifications', 'id')::regclass), 0),
        coalesce((SELECT max(id) FROM pgpush.notifications), 0),
        coalesce((SELECT max(notification_id) FROM pgpush.delivery_errors), 0));

    UPDATE pgpush.history_partitioning
       SET notifications_storage = coalesce((SELECT reloptions FROM pg_class WHERE oid = 'pgpush.notifications'::regclass), '{}'),
           delivery_errors_storage = coalesce((SELECT reloptions FROM pg_class WHERE oid = 'pgpush.delivery_errors'::regclass), '{}');

    PERFORM pgpush.partition_history_table('notifications', 'id', 'id', bound);
    -- A key of a partitioned table includes the partition key: delivery_errors'
    -- becomes (id, notification_id), built on the old rows by ATTACH.
    ALTER TABLE pgpush.delivery_errors DROP CONSTRAINT delivery_errors_pkey;
    PERFORM pgpush.partition_history_table('delivery_errors', 'notification_id', 'id, notification_id', bound);
END
$$;
DROP FUNCTION pgpush.partition_history_table(text, text, text, bigint);

-- Wake idle workers once per statement: as in 001, now on the partitioned table.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'pgpush.notifications'::regclass
                      AND tgname = 'notifications_notify_queued') THEN
        CREATE TRIGGER notifications_notify_queued
            AFTER INSERT ON pgpush.notifications
            REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION pgpush.notify_queued();
    END IF;
END
$$;

-- Every partition of both tables, with its id range: what prune and the
-- creation ahead work from, and what an operator looks at. first_id is null
-- for the partition of the oldest ids (it starts at the lowest value) and for
-- the default one; end_id is the first id the partition no longer holds.
CREATE OR REPLACE VIEW pgpush.history_partitions AS
SELECT parent.relname::text AS table_name,
       c.oid::regclass AS partition,
       substring(b.bound FROM 'FROM \(''(-?[0-9]+)''\)')::bigint AS first_id,
       substring(b.bound FROM 'TO \(''(-?[0-9]+)''\)')::bigint AS end_id,
       b.bound = 'DEFAULT' AS is_default,
       nullif(c.reltuples, -1)::bigint AS estimated_rows,
       pg_total_relation_size(c.oid) AS bytes
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  JOIN pg_class parent ON parent.oid = i.inhparent
  CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) AS b
 WHERE i.inhparent IN ('pgpush.notifications'::regclass, 'pgpush.delivery_errors'::regclass);
COMMENT ON VIEW pgpush.history_partitions IS
    'Partitions of notifications and delivery_errors: id range (end_id excluded), default or not, estimated rows, bytes on disk.';

-- The id the next notification gets (ids below it are handed out already).
CREATE OR REPLACE FUNCTION pgpush.next_notification_id() RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pgpush AS $$
DECLARE
    next_id bigint;
BEGIN
    EXECUTE format('SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM %s',
                   pg_get_serial_sequence('pgpush.notifications', 'id')) INTO next_id;
    RETURN next_id;
END
$$;
REVOKE ALL ON FUNCTION pgpush.next_notification_id() FROM PUBLIC;

-- One partition of `tab` from `first` (null: the default partition), with the
-- storage parameters kept for it. Its indexes are named after the parent's
-- (e.g. notifications_queued_due_1000001), so a plan says which index it reads.
CREATE OR REPLACE FUNCTION pgpush.create_history_partition(tab text, first bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
DECLARE
    suffix constant text := coalesce(first::text, 'default');
    storage text[];
    index record;
BEGIN
    SELECT CASE tab WHEN 'notifications' THEN s.notifications_storage ELSE s.delivery_errors_storage END
      INTO storage FROM pgpush.history_partitioning s;
    EXECUTE format('CREATE TABLE pgpush.%I PARTITION OF pgpush.%I %s %s', tab || '_' || suffix, tab,
                   CASE WHEN first IS NULL THEN 'DEFAULT'
                        ELSE format('FOR VALUES FROM (%s) TO (%s)', first,
                                    first + (SELECT partition_span FROM pgpush.history_partitioning)) END,
                   CASE WHEN cardinality(storage) > 0 THEN 'WITH (' || array_to_string(storage, ', ') || ')' ELSE '' END);
    FOR index IN
        SELECT child.relname AS name, parent.relname AS parent_name
          FROM pg_index i JOIN pg_class child ON child.oid = i.indexrelid
          JOIN pg_inherits h ON h.inhrelid = i.indexrelid JOIN pg_class parent ON parent.oid = h.inhparent
         WHERE i.indrelid = format('pgpush.%I', tab || '_' || suffix)::regclass
    LOOP
        EXECUTE format('ALTER INDEX pgpush.%I RENAME TO %I', index.name, index.parent_name || '_' || suffix);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION pgpush.create_history_partition(text, bigint) FROM PUBLIC;

-- Keeps partitions_ahead empty partitions ready above the newest id, and the
-- default partitions that take a row when none is (a worker that never ran
-- this for a long time): an insert never fails for want of a partition.
-- Returns how many partitions of notifications it created. Run by migrate,
-- by `pgpush prune`, and every 10 minutes by the one worker holding the prune
-- lock. Creating a partition locks the table for a moment: lock_timeout (1 s) keeps
-- it from queueing claims behind a long transaction (it fails, and the next
-- run tries again, long before the partitions ahead are used up).
CREATE OR REPLACE FUNCTION pgpush.create_history_partitions() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pgpush SET lock_timeout = '1s' AS $$
DECLARE
    settings pgpush.history_partitioning;
    next_id constant bigint := pgpush.next_notification_id();
    first bigint;
    created integer := 0;
BEGIN
    SELECT * INTO settings FROM pgpush.history_partitioning;
    IF to_regclass('pgpush.notifications_default') IS NULL THEN
        PERFORM pgpush.create_history_partition('notifications', NULL);
        PERFORM pgpush.create_history_partition('delivery_errors', NULL);
    END IF;
    -- Above the newest partition, and above every row the default partitions
    -- took (a partition may not cover a row already in the default one). Ids
    -- handed out while no partition was ready stay with the default.
    first := greatest((SELECT max(end_id) FROM pgpush.history_partitions WHERE table_name = 'notifications'),
                      next_id,
                      1 + (SELECT max(id) FROM pgpush.notifications_default),
                      1 + (SELECT max(notification_id) FROM pgpush.delivery_errors_default));
    WHILE first < next_id + settings.partitions_ahead * settings.partition_span LOOP
        PERFORM pgpush.create_history_partition('notifications', first);
        PERFORM pgpush.create_history_partition('delivery_errors', first);
        first := first + settings.partition_span;
        created := created + 1;
    END LOOP;

    -- Where claims start: the first partition that holds a queued or sending row or can
    -- still get new rows, or the lowest such row of the default partition. SHARE mode waits
    -- for every transaction that is inserting or claiming to end (and holds new ones back
    -- for the few index probes below), so an insert not yet committed cannot hide a row
    -- from the check; the next id is read after it for the same reason. Final rows never
    -- become queued again (workers update unfinished rows only; cancel takes queued ones).
    -- Inserts and claims queue behind a waiting lock, so it waits 100 ms at most: when
    -- busy, the mark stays where it was (lower is safe) until the next run.
    BEGIN
        PERFORM set_config('lock_timeout', '100ms', true);
        LOCK TABLE pgpush.notifications IN SHARE MODE;
        UPDATE pgpush.history_partitioning SET claim_from_id = coalesce(least(
            (SELECT min(coalesce(p.first_id, -9223372036854775808)) FROM pgpush.history_partitions p
              WHERE p.table_name = 'notifications' AND NOT p.is_default
                AND (p.end_id > pgpush.next_notification_id()
                     OR NOT pgpush.history_partition_retired(p.partition, '0 seconds'))),
            (SELECT min(id) FROM pgpush.notifications_default WHERE status IN ('queued', 'sending'))),
            pgpush.next_notification_id());
    EXCEPTION WHEN lock_not_available THEN
        NULL;
    END;
    RETURN created;
END
$$;
REVOKE ALL ON FUNCTION pgpush.create_history_partitions() FROM PUBLIC;

-- The idempotency key of a new row is claimed in pgpush.idempotency_keys in
-- the same statement. A key the app already used: a plain INSERT fails with
-- unique_violation on notifications_idempotency, as before; inside enqueue
-- and enqueue_many (which set pgpush.repeated_key to 'skip' around their
-- insert) the row is skipped, as ON CONFLICT DO NOTHING did. Two inserts of
-- one key at once: the second waits for the first to commit or roll back.
-- An app the caller may not use is left alone here: row-level security
-- refuses the row right after this trigger, and claiming the key first
-- would tell, by a duplicate-key error, that the other app used it.
CREATE OR REPLACE FUNCTION pgpush.claim_idempotency_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pgpush AS $$
BEGIN
    IF NEW.idempotency_key = '' OR NOT pgpush.session_may_use_app(NEW.app) THEN
        RETURN NEW;  -- the CHECK or the row-level security refuses the row
    END IF;
    INSERT INTO pgpush.idempotency_keys (app, idempotency_key, notification_id)
    VALUES (NEW.app, NEW.idempotency_key, NEW.id)
    ON CONFLICT DO NOTHING;
    IF FOUND THEN
        RETURN NEW;
    ELSIF current_setting('pgpush.repeated_key', true) = 'skip' THEN
        RETURN NULL;
    END IF;
    RAISE unique_violation USING
        MESSAGE = 'duplicate key value violates unique constraint "notifications_idempotency"',
        DETAIL = format('Key (app, idempotency_key)=(%s, %s) already exists.', NEW.app, NEW.idempotency_key),
        CONSTRAINT = 'notifications_idempotency', SCHEMA = 'pgpush', TABLE = 'notifications';
END
$$;
REVOKE ALL ON FUNCTION pgpush.claim_idempotency_key() FROM PUBLIC;
DROP TRIGGER IF EXISTS notifications_idempotency_key ON pgpush.notifications;
CREATE TRIGGER notifications_idempotency_key
    BEFORE INSERT ON pgpush.notifications
    FOR EACH ROW WHEN (NEW.idempotency_key IS NOT NULL)
    EXECUTE FUNCTION pgpush.claim_idempotency_key();

-- The notification holding `idempotency_key` of `app`, for enqueue's repeat:
-- none when the caller may not use the app.
CREATE OR REPLACE FUNCTION pgpush.idempotency_key_holder(app text, idempotency_key text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pgpush AS $$
    SELECT k.notification_id FROM pgpush.idempotency_keys k
     WHERE k.app = idempotency_key_holder.app AND k.idempotency_key = idempotency_key_holder.idempotency_key
       AND pgpush.session_may_use_app(idempotency_key_holder.app)
$$;
REVOKE ALL ON FUNCTION pgpush.idempotency_key_holder(text, text) FROM PUBLIC;

-- enqueue and enqueue_many as in 005, with the key checked by the trigger
-- above (ON CONFLICT needs a unique index on the table, which a partitioned
-- table keyed by id cannot have on the key). Same arguments, same results.
CREATE OR REPLACE FUNCTION pgpush.enqueue(
    device_token    text,
    payload         jsonb,
    app             text        DEFAULT 'default',
    push_type       text        DEFAULT 'alert',
    priority        integer     DEFAULT NULL,
    topic           text        DEFAULT NULL,
    collapse_id     text        DEFAULT NULL,
    expires_at      timestamptz DEFAULT NULL,
    send_after      timestamptz DEFAULT now(),
    idempotency_key text        DEFAULT NULL,
    deliver_once    boolean     DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    inserted bigint;
BEGIN
    PERFORM set_config('pgpush.repeated_key', 'skip', true);
    INSERT INTO pgpush.notifications
        (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after,
         idempotency_key, deliver_once)
    VALUES
        (enqueue.app, enqueue.device_token, enqueue.push_type, enqueue.priority::smallint, enqueue.topic,
         enqueue.payload, enqueue.collapse_id, enqueue.expires_at, coalesce(enqueue.send_after, now()),
         enqueue.idempotency_key, enqueue.deliver_once)
    RETURNING id INTO inserted;
    PERFORM set_config('pgpush.repeated_key', '', true);
    IF inserted IS NULL THEN
        SELECT n.id INTO inserted FROM pgpush.notifications n
         WHERE n.id = pgpush.idempotency_key_holder(enqueue.app, enqueue.idempotency_key);
    END IF;
    RETURN inserted;
END
$$;

CREATE OR REPLACE FUNCTION pgpush.enqueue_many(
    device_tokens   text[],
    payload         jsonb,
    app             text        DEFAULT 'default',
    push_type       text        DEFAULT 'alert',
    priority        integer     DEFAULT NULL,
    topic           text        DEFAULT NULL,
    collapse_id     text        DEFAULT NULL,
    expires_at      timestamptz DEFAULT NULL,
    send_after      timestamptz DEFAULT now(),
    idempotency_key text        DEFAULT NULL,
    deliver_once    boolean     DEFAULT NULL
) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('pgpush.repeated_key', 'skip', true);
    RETURN QUERY
    INSERT INTO pgpush.notifications
        (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after,
         idempotency_key, deliver_once)
    SELECT enqueue_many.app, token, enqueue_many.push_type, enqueue_many.priority::smallint, enqueue_many.topic,
           enqueue_many.payload, enqueue_many.collapse_id, enqueue_many.expires_at,
           coalesce(enqueue_many.send_after, now()),
           enqueue_many.idempotency_key || ':' || token, enqueue_many.deliver_once
      FROM unnest(enqueue_many.device_tokens) AS token
    RETURNING id;
    PERFORM set_config('pgpush.repeated_key', '', true);
END
$$;

-- Whether every row of one partition of notifications is final and its
-- newest finished_at is older than `older_than`. Reads the partition's
-- partial indexes only (queued, sending, finished_at), never the rows.
CREATE OR REPLACE FUNCTION pgpush.history_partition_retired(part regclass, older_than interval) RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pgpush AS $$
DECLARE
    retired boolean;
BEGIN
    EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %1$s WHERE status = ''queued'')
                       AND NOT EXISTS (SELECT 1 FROM %1$s WHERE status = ''sending'')
                       AND coalesce((SELECT max(finished_at) FROM %1$s), ''-infinity'') < now() - $1', part)
       INTO retired USING older_than;
    RETURN retired;
END
$$;
REVOKE ALL ON FUNCTION pgpush.history_partition_retired(regclass, interval) FROM PUBLIC;

-- One step of retiring history, in one short transaction; returns how many
-- notifications went, or null when nothing was left to do (callers loop until
-- then). A step drops the oldest partition of notifications that is wholly
-- below the next id and retired (see above), with the delivery_errors
-- partition of the same ids and the idempotency keys of its rows (deleted
-- first, before the lock the claims wait for); empty partitions go on the
-- way. The row count is the table statistics' estimate once it has one.
-- Without such a partition, it deletes up to batch_size finished rows older
-- than `older_than` from the default partition (rows inserted while no
-- partition was ready: the only rows still deleted one by one), with their
-- errors and keys. Rows of a partition that still holds an unfinished row
-- (e.g. one scheduled weeks ahead) wait for it: retention is a lower bound.
CREATE OR REPLACE FUNCTION pgpush.prune(older_than interval, batch_size integer DEFAULT 5000) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pgpush SET lock_timeout = '1s' AS $$
DECLARE
    next_id constant bigint := pgpush.next_notification_id();
    part record;
    retired integer;
    dropped boolean := false;
BEGIN
    FOR part IN
        SELECT p.partition, p.first_id, p.end_id, p.estimated_rows FROM pgpush.history_partitions p
         WHERE p.table_name = 'notifications' AND NOT p.is_default AND p.end_id <= next_id
         ORDER BY p.end_id
    LOOP
        CONTINUE WHEN NOT pgpush.history_partition_retired(part.partition, older_than);
        DELETE FROM pgpush.idempotency_keys
         WHERE notification_id >= coalesce(part.first_id, -9223372036854775808) AND notification_id < part.end_id;
        -- The tables first, in the order a claim locks them (table, then
        -- partitions): dropping a partition locks its table anyway.
        LOCK TABLE pgpush.notifications, pgpush.delivery_errors IN ACCESS EXCLUSIVE MODE;
        IF NOT pgpush.history_partition_retired(part.partition, older_than) THEN
            RAISE EXCEPTION 'pgpush.prune: partition % changed while it was being retired', part.partition;
        END IF;
        IF part.estimated_rows IS NULL THEN
            EXECUTE format('SELECT count(*) FROM %s', part.partition) INTO retired;
        ELSE
            retired := part.estimated_rows;
        END IF;
        EXECUTE format('DROP TABLE %s, pgpush.%I', part.partition,
                       'delivery_errors_' || substring(part.partition::text FROM 'notifications_([0-9a-z]+)$'));
        dropped := true;
        IF retired > 0 THEN
            RETURN retired;
        END IF;
    END LOOP;

    WITH doomed AS (
        SELECT id FROM pgpush.notifications_default
         WHERE finished_at < now() - older_than
         ORDER BY finished_at
         LIMIT batch_size
         FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM pgpush.notifications_default n USING doomed WHERE n.id = doomed.id RETURNING n.id
    ), keys AS (
        DELETE FROM pgpush.idempotency_keys k USING gone WHERE k.notification_id = gone.id
    ), errors AS (
        DELETE FROM pgpush.delivery_errors_default e USING gone WHERE e.notification_id = gone.id
    )
    SELECT count(*) INTO retired FROM gone;
    RETURN CASE WHEN retired > 0 OR dropped THEN retired END;
END
$$;

-- The grants of the three roles on what this migration added. Partitions
-- get none: they are read and written through their table, where row-level
-- security applies, never by name. Workers read the settings and the list of
-- partitions and create partitions ahead; monitors read the list.
CREATE OR REPLACE FUNCTION pgpush.apply_history_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT partition FROM pgpush.history_partitions LOOP
        EXECUTE format('REVOKE ALL ON %s FROM PUBLIC, pgpush_app, pgpush_worker, pgpush_monitor', part.partition);
    END LOOP;
    REVOKE ALL ON pgpush.history_partitioning, pgpush.idempotency_keys, pgpush.history_partitions
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT SELECT ON pgpush.history_partitioning, pgpush.history_partitions TO pgpush_worker, pgpush_monitor;
    REVOKE ALL ON FUNCTION pgpush.create_history_partitions(), pgpush.idempotency_key_holder(text, text)
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT EXECUTE ON FUNCTION pgpush.create_history_partitions() TO pgpush_worker;
    GRANT EXECUTE ON FUNCTION pgpush.idempotency_key_holder(text, text) TO pgpush_app;
END
$$;
REVOKE ALL ON FUNCTION pgpush.apply_history_privileges() FROM PUBLIC;

-- Partitions ready now; where roles.sql already ran, the new table gets the
-- grants and row-level security of 007 (they belonged to the old table) and
-- the grants above. roles.sql runs both on a fresh database.
SELECT pgpush.create_history_partitions();
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
        PERFORM pgpush.apply_history_privileges();
    END IF;
END
$$;
