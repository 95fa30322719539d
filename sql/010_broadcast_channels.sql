-- pgpush schema, part 10: Live Activity broadcast channels, and the fields a
-- Live Activity payload needs.
--
-- A row goes either to one device (device_token) or to every device that
-- subscribed to a broadcast channel (channel_id): APNs then fans one request
-- out to all of them. pgpush.channels records the channels an app created
-- with `pgpush channels create`, and what the worker learned about them.
--
-- Written like 005-007: safe on a filled database and safe to run again by hand.

-- The channel a row is broadcast to: the base64 id APNs gave when the channel
-- was created. device_token becomes optional; a rule below wants exactly one.
ALTER TABLE pgpush.notifications ADD COLUMN IF NOT EXISTS channel_id text;
ALTER TABLE pgpush.notifications ALTER COLUMN device_token DROP NOT NULL;
COMMENT ON COLUMN pgpush.notifications.channel_id IS
    'Live Activity broadcast channel (base64 id from channel creation); a row has it or a device_token, never both.';
ALTER TABLE pgpush.delivery_errors ADD COLUMN IF NOT EXISTS channel_id text;
ALTER TABLE pgpush.delivery_errors ALTER COLUMN device_token DROP NOT NULL;
COMMENT ON COLUMN pgpush.delivery_errors.channel_id IS 'The channel of a broadcast row (device_token is null then).';

-- The channels of each app. message_storage_policy is fixed at creation:
-- 0 stores nothing (every broadcast must then carry apns-expiration 0, which
-- the worker sends), 1 keeps the most recent message; null when the channel
-- was not created through pgpush and the worker only met it in an answer.
-- refused_reason is the last answer that refused a broadcast to the channel
-- for the channel's sake (ChannelNotRegistered, FeatureNotEnabled, ...).
CREATE TABLE IF NOT EXISTS pgpush.channels (
    app                    text        NOT NULL,
    channel_id             text        NOT NULL,
    message_storage_policy smallint,
    push_type              text        NOT NULL DEFAULT 'LiveActivity',
    environment            text,
    created_at             timestamptz NOT NULL DEFAULT now(),
    deleted_at             timestamptz,
    refused_reason         text,
    refused_at             timestamptz,
    PRIMARY KEY (app, channel_id),
    CONSTRAINT channels_app_name_1_to_64_letters_digits_dot_dash CHECK (app ~ '^[A-Za-z0-9._-]{1,64}$'),
    CONSTRAINT channels_channel_id_not_base64 CHECK (channel_id ~ '^[A-Za-z0-9+/]+={0,2}$' AND length(channel_id) <= 1024),
    CONSTRAINT channels_message_storage_policy_0_or_1 CHECK (message_storage_policy IN (0, 1)),
    CONSTRAINT channels_environment_production_or_sandbox CHECK (environment IN ('production', 'sandbox'))
);
COMMENT ON TABLE pgpush.channels IS
    'Live Activity broadcast channels per app: created and deleted by `pgpush channels`, marked by workers when APNs refuses a broadcast to one.';

-- The rules, each with the name an application sees when an INSERT breaks
-- it. Apple ignores a Live Activity push without these fields: APNs answers
-- 200 and the device drops it, so the mistake would otherwise go unseen.
--   event: start, update or end; timestamp: a number (the newest wins);
--   content-state: the activity's state, needed to start or update (an end
--   may leave the last state as it is); a start also needs its attributes
--   type and attributes and an alert, and cannot be broadcast (a channel
--   only updates and ends activities that subscribed to it).
-- The payload limit is 5,120 bytes for broadcasts, as for voip.
-- The priority rule of 005 (liveactivity: 5 or 10) covers channel rows,
-- which are all liveactivity.
--
-- Unfinished rows that break a new rule could never be sent as they are, and
-- a NOT VALID rule is still checked on every UPDATE: one such row would fail
-- the worker's claim of its whole app, again and again (see 006). So each
-- rule first ends such rows 'failed' with BrokeInputRules and an error row,
-- as in 006, one row at a time so that a row no update can change (see
-- below) stops nothing else; then it is added NOT VALID, so that adding it never fails on
-- finished rows, and validated where the old rows allow it (as in 005, 006).
-- The payload size rule is replaced: it now allows 5,120 bytes to channel rows.
DO $$
DECLARE
    rule record;
    broken record;
BEGIN
    ALTER TABLE pgpush.notifications DROP CONSTRAINT IF EXISTS notifications_payload_too_large;
    FOR rule IN
        SELECT * FROM (VALUES
            ('notifications_exactly_one_of_device_token_and_channel_id',
             '(device_token IS NULL) <> (channel_id IS NULL)'),
            ('notifications_channel_only_liveactivity', $c$channel_id IS NULL OR push_type = 'liveactivity'$c$),
            -- Apple does not fix the id's length; 1,024 characters keeps a bad row
            -- from becoming a huge header.
            ('notifications_channel_id_not_base64', $c$channel_id ~ '^[A-Za-z0-9+/]+={0,2}$' AND length(channel_id) <= 1024$c$),
            ('notifications_channel_without_collapse_id', 'channel_id IS NULL OR collapse_id IS NULL'),
            ('notifications_channel_cannot_start_liveactivity',
             $c$channel_id IS NULL OR NOT coalesce(payload -> 'aps' -> 'event' = '"start"', false)$c$),
            ('notifications_liveactivity_event_start_update_or_end',
             $c$push_type <> 'liveactivity'
                OR coalesce(payload -> 'aps' -> 'event' IN ('"start"', '"update"', '"end"'), false)$c$),
            ('notifications_liveactivity_needs_timestamp',
             $c$push_type <> 'liveactivity' OR coalesce(jsonb_typeof(payload -> 'aps' -> 'timestamp') = 'number', false)$c$),
            ('notifications_liveactivity_start_or_update_needs_content_state',
             $c$push_type <> 'liveactivity' OR NOT coalesce(payload -> 'aps' -> 'event' IN ('"start"', '"update"'), false)
                OR coalesce(jsonb_typeof(payload -> 'aps' -> 'content-state') = 'object', false)$c$),
            ('notifications_liveactivity_start_needs_attributes',
             $c$push_type <> 'liveactivity' OR NOT coalesce(payload -> 'aps' -> 'event' = '"start"', false)
                OR coalesce(jsonb_typeof(payload -> 'aps' -> 'attributes-type') = 'string'
                            AND jsonb_typeof(payload -> 'aps' -> 'attributes') = 'object', false)$c$),
            ('notifications_liveactivity_start_needs_alert',
             $c$push_type <> 'liveactivity' OR NOT coalesce(payload -> 'aps' -> 'event' = '"start"', false)
                OR payload -> 'aps' -> 'alert' IS NOT NULL$c$),
            ('notifications_payload_too_large',
             $c$octet_length(payload::text) <= CASE WHEN push_type = 'voip' OR channel_id IS NOT NULL THEN 5120 ELSE 4096 END
                OR pgpush.compact_json_length(payload)
                   <= CASE WHEN push_type = 'voip' OR channel_id IS NOT NULL THEN 5120 ELSE 4096 END$c$)
        ) AS r(name, expression)
    LOOP
        FOR broken IN EXECUTE format('SELECT id FROM pgpush.notifications
                                       WHERE status IN (''queued'', ''sending'') AND NOT coalesce((%s), true)',
                                      rule.expression) LOOP
            BEGIN
                WITH failed AS (
                    UPDATE pgpush.notifications
                       SET status = 'failed', last_status = NULL, last_reason = 'BrokeInputRules',
                           locked_by = NULL, locked_until = NULL, finished_at = now(), updated_at = now()
                     WHERE id = broken.id
                    RETURNING id, app, device_token, channel_id, apns_id, attempts
                )
                INSERT INTO pgpush.delivery_errors
                    (notification_id, app, device_token, channel_id, apns_id, attempt, status, reason, worker_id)
                SELECT id, app, device_token, channel_id, apns_id, attempts, NULL, 'BrokeInputRules', NULL FROM failed;
            EXCEPTION WHEN check_violation THEN
                -- The row also breaks a NOT VALID rule of an earlier migration, which
                -- refuses every update of it (the claim's too): nothing here can change it.
                RAISE WARNING 'pgpush: row % breaks % and an earlier rule; left as it is', broken.id, rule.name;
            END;
        END LOOP;
        IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                          AND conname = rule.name) THEN
            EXECUTE format('ALTER TABLE pgpush.notifications ADD CONSTRAINT %I CHECK (%s) NOT VALID',
                           rule.name, rule.expression);
        END IF;
        CONTINUE WHEN (SELECT convalidated FROM pg_constraint
                        WHERE conrelid = 'pgpush.notifications'::regclass AND conname = rule.name);
        BEGIN
            EXECUTE format('ALTER TABLE pgpush.notifications VALIDATE CONSTRAINT %I', rule.name);
        EXCEPTION WHEN check_violation OR statement_too_complex THEN
            RAISE WARNING 'pgpush: existing rows break %, left NOT VALID (new rows are checked)', rule.name;
        END;
    END LOOP;
END
$$;

-- One broadcast: `pgpush.enqueue(channel_id => …, payload => …)`. A second
-- function of the same name rather than a new argument of the token one, so
-- that calls written for the token function keep working unchanged: the
-- argument names differ (channel_id has no default; no device_token or
-- collapse_id), so a call by name matches exactly one of the two. channel_id
-- is varchar, not text, for calls by position with untyped literals
-- (enqueue('ab12…', '{…}')): PostgreSQL then prefers the function whose
-- first argument is text, the preferred string type, so such a call still
-- means a device token. push_type is liveactivity, the only type a channel
-- carries. As for the token function, an idempotency key returns the first
-- row's id instead of making a second row.
CREATE OR REPLACE FUNCTION pgpush.enqueue(
    channel_id      varchar,
    payload         jsonb,
    app             text        DEFAULT 'default',
    priority        integer     DEFAULT NULL,
    topic           text        DEFAULT NULL,
    expires_at      timestamptz DEFAULT NULL,
    send_after      timestamptz DEFAULT now(),
    idempotency_key text        DEFAULT NULL,
    deliver_once    boolean     DEFAULT NULL,
    push_type       text        DEFAULT 'liveactivity'
) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    inserted bigint;
BEGIN
    -- A repeated key skips the row (the key trigger of 009), and the first row's id is returned.
    PERFORM set_config('pgpush.repeated_key', 'skip', true);
    INSERT INTO pgpush.notifications
        (app, channel_id, push_type, priority, topic, payload, expires_at, send_after, idempotency_key, deliver_once)
    VALUES
        (enqueue.app, enqueue.channel_id, enqueue.push_type, enqueue.priority::smallint, enqueue.topic,
         enqueue.payload, enqueue.expires_at, coalesce(enqueue.send_after, now()), enqueue.idempotency_key,
         enqueue.deliver_once)
    RETURNING id INTO inserted;
    PERFORM set_config('pgpush.repeated_key', '', true);
    IF inserted IS NULL THEN
        SELECT n.id INTO inserted FROM pgpush.notifications n
         WHERE n.id = pgpush.idempotency_key_holder(enqueue.app, enqueue.idempotency_key);
    END IF;
    RETURN inserted;
END
$$;

-- Privileges. pgpush.apply_role_privileges() (007, and whatever later
-- migrations made of it) stays as it is under a new name, and the function of
-- that name now runs it and then grants what channels need. Every grant of
-- the older function is kept without being written again, and running
-- roles.sql again still gives the whole set. The rename happens once: a
-- second run finds it done.
DO $$
BEGIN
    IF to_regprocedure('pgpush.apply_role_privileges_without_channels()') IS NULL THEN
        ALTER FUNCTION pgpush.apply_role_privileges() RENAME TO apply_role_privileges_without_channels;
    END IF;
END
$$;

-- What channels add to the roles:
--   pgpush_app:     channel rows like token rows (INSERT channel_id, the
--                   broadcast enqueue); reads the channels of its granted apps.
--   pgpush_worker:  reads every channel row; records channels (`pgpush
--                   channels`, run with the worker's database role) and marks
--                   those APNs refused.
--   pgpush_monitor: the channels' states and times, not their ids (as it
--                   reads no device tokens).
CREATE OR REPLACE FUNCTION pgpush.apply_role_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
BEGIN
    PERFORM pgpush.apply_role_privileges_without_channels();
    REVOKE ALL ON pgpush.channels FROM pgpush_app, pgpush_worker, pgpush_monitor;
    REVOKE ALL ON FUNCTION
        pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text)
      FROM pgpush_app, pgpush_worker, pgpush_monitor;

    GRANT INSERT (channel_id) ON pgpush.notifications TO pgpush_app;
    GRANT EXECUTE ON FUNCTION
        pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text)
       TO pgpush_app;
    GRANT SELECT ON pgpush.channels TO pgpush_app;

    GRANT SELECT, INSERT ON pgpush.channels TO pgpush_worker;
    GRANT UPDATE (message_storage_policy, push_type, environment, deleted_at, refused_reason, refused_at)
       ON pgpush.channels TO pgpush_worker;

    GRANT SELECT (app, message_storage_policy, push_type, environment, created_at, deleted_at, refused_reason, refused_at)
       ON pgpush.channels TO pgpush_monitor;

    ALTER TABLE pgpush.channels ENABLE ROW LEVEL SECURITY;
    DROP POLICY IF EXISTS app_by_grant ON pgpush.channels;
    CREATE POLICY app_by_grant ON pgpush.channels FOR SELECT TO pgpush_app USING (
        EXISTS (SELECT 1 FROM pgpush.app_grants g WHERE g.role = current_user AND g.app IN (channels.app, '*')));
    DROP POLICY IF EXISTS worker_reads ON pgpush.channels;
    CREATE POLICY worker_reads ON pgpush.channels FOR SELECT TO pgpush_worker USING (true);
    DROP POLICY IF EXISTS worker_writes ON pgpush.channels;
    CREATE POLICY worker_writes ON pgpush.channels FOR INSERT TO pgpush_worker WITH CHECK (true);
    DROP POLICY IF EXISTS worker_updates ON pgpush.channels;
    CREATE POLICY worker_updates ON pgpush.channels FOR UPDATE TO pgpush_worker USING (true) WITH CHECK (true);
    DROP POLICY IF EXISTS monitor_reads ON pgpush.channels;
    CREATE POLICY monitor_reads ON pgpush.channels FOR SELECT TO pgpush_monitor USING (true);
END
$$;
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges() FROM PUBLIC;
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges_without_channels() FROM PUBLIC;

-- Where roles.sql already ran, the roles get the new privileges now.
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
    END IF;
END
$$;
