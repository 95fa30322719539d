-- pgpush schema, part 5: two more APNs headers per row, the priorities
-- Live Activity, location and push-to-talk pushes allow, tokens the queue
-- stops sending to, and app health per topic.
--
-- Written to run on a database that 001-004 created and that already holds
-- rows, and to be safe to run again by hand (every step checks first).

-- deliver_once: true sends `apns-expiration: 0` (APNs tries once and keeps
-- nothing to retry later); null lets the worker derive it from the push type
-- (true for pushtotalk only). SQL only stores the choice.
ALTER TABLE pgpush.notifications ADD COLUMN IF NOT EXISTS deliver_once boolean;
COMMENT ON COLUMN pgpush.notifications.deliver_once IS
    'true: sent with apns-expiration 0 (one try, not stored by APNs); null: derived (true for pushtotalk).';

-- enqueue and enqueue_many take deliver_once as a new last argument, so calls
-- by position keep working. CREATE OR REPLACE cannot add an argument: it would
-- create a second function beside the old one, and a call that names only
-- the old arguments would then match both and fail as ambiguous. So the old
-- signatures are dropped first (IF EXISTS: a second run finds them gone).
DROP FUNCTION IF EXISTS pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text);
DROP FUNCTION IF EXISTS pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text);

-- One notification; see 001 for the rest of its contract.
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
LANGUAGE sql VOLATILE AS $$
    WITH inserted AS (
        INSERT INTO pgpush.notifications
            (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after,
             idempotency_key, deliver_once)
        VALUES
            (enqueue.app, enqueue.device_token, enqueue.push_type, enqueue.priority::smallint, enqueue.topic,
             enqueue.payload, enqueue.collapse_id, enqueue.expires_at, coalesce(enqueue.send_after, now()),
             enqueue.idempotency_key, enqueue.deliver_once)
        ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING id
    )
    SELECT id FROM inserted
    UNION ALL
    SELECT n.id FROM pgpush.notifications n
     WHERE n.app = enqueue.app AND n.idempotency_key = enqueue.idempotency_key
       AND NOT EXISTS (SELECT 1 FROM inserted)
    LIMIT 1
$$;

-- One payload to many devices; see 001 for the rest of its contract.
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
LANGUAGE sql VOLATILE AS $$
    INSERT INTO pgpush.notifications
        (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after,
         idempotency_key, deliver_once)
    SELECT enqueue_many.app, token, enqueue_many.push_type, enqueue_many.priority::smallint, enqueue_many.topic,
           enqueue_many.payload, enqueue_many.collapse_id, enqueue_many.expires_at,
           coalesce(enqueue_many.send_after, now()),
           enqueue_many.idempotency_key || ':' || token, enqueue_many.deliver_once
      FROM unnest(enqueue_many.device_tokens) AS token
    ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id
$$;

-- A database where roles.sql already ran keeps working without running it
-- again: the application role needs INSERT on the new column (enqueue runs
-- with the caller's rights) and EXECUTE on the functions recreated above.
-- roles.sql grants the same on a fresh database.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_app') THEN
        GRANT INSERT (deliver_once) ON pgpush.notifications TO pgpush_app;
        GRANT EXECUTE ON FUNCTION
            pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean),
            pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean)
           TO pgpush_app;
    END IF;
END
$$;

-- The `apns-unique-id` header of the last answer APNs gave for the row (null
-- when that answer had none; APNs sends it in the sandbox only). It is the key
-- to look the push up in Apple's delivery log.
ALTER TABLE pgpush.notifications ADD COLUMN IF NOT EXISTS apns_unique_id uuid;
ALTER TABLE pgpush.delivery_errors ADD COLUMN IF NOT EXISTS apns_unique_id uuid;
COMMENT ON COLUMN pgpush.notifications.apns_unique_id IS
    'apns-unique-id header of the last APNs answer (sandbox only), for Apple''s delivery log.';
COMMENT ON COLUMN pgpush.delivery_errors.apns_unique_id IS
    'apns-unique-id header of the answer that carried this error, when APNs sent one.';

-- Priorities APNs takes per push type. A null priority is derived by the
-- worker and always fits, so each rule lets null through.
--   pushtotalk: 10; 5 only for a service update (aps.ptt-push-type
--     "service-update"), which is not urgent. coalesce: a missing key must
--     fail the check, and a CHECK that evaluates to null passes.
--   liveactivity, location: 10 or 5; priority 1 is not offered for them.
--
-- Added NOT VALID, so adding them checks new and updated rows only and never
-- fails on rows written before these rules existed; the VALIDATE step below
-- then checks the old rows too, where it can.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                      AND conname = 'notifications_pushtotalk_priority_10_or_service_update_5') THEN
        ALTER TABLE pgpush.notifications ADD CONSTRAINT notifications_pushtotalk_priority_10_or_service_update_5
            CHECK (push_type <> 'pushtotalk' OR priority IS NULL OR priority = 10
                   OR (priority = 5 AND coalesce(payload -> 'aps' ->> 'ptt-push-type' = 'service-update', false)))
            NOT VALID;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                      AND conname = 'notifications_liveactivity_priority_must_be_5_or_10') THEN
        ALTER TABLE pgpush.notifications ADD CONSTRAINT notifications_liveactivity_priority_must_be_5_or_10
            CHECK (push_type <> 'liveactivity' OR priority IN (5, 10)) NOT VALID;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                      AND conname = 'notifications_location_priority_must_be_5_or_10') THEN
        ALTER TABLE pgpush.notifications ADD CONSTRAINT notifications_location_priority_must_be_5_or_10
            CHECK (push_type <> 'location' OR priority IN (5, 10)) NOT VALID;
    END IF;
END
$$;

-- Validating the priority rules against rows written before them. Each rule
-- is validated on its own, and a rule that old rows break is left NOT VALID
-- instead of failing the migration: those rows are history (mostly finished),
-- the worker refuses an unsendable priority before sending anyway, and a
-- failed migration would stop every worker that migrates at start-up. New
-- and updated rows are checked either way. Which rules are still unvalidated:
--   SELECT conname FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass AND NOT convalidated;
-- Once the old rows are finished or pruned, run
--   ALTER TABLE pgpush.notifications VALIDATE CONSTRAINT <name>;
-- Each VALIDATE reads the whole table while this migration holds its lock,
-- so on a very large table migrate at a quiet time.
DO $$
DECLARE
    rule text;
BEGIN
    FOREACH rule IN ARRAY ARRAY['notifications_pushtotalk_priority_10_or_service_update_5',
                                'notifications_liveactivity_priority_must_be_5_or_10',
                                'notifications_location_priority_must_be_5_or_10'] LOOP
        CONTINUE WHEN (SELECT convalidated FROM pg_constraint
                        WHERE conrelid = 'pgpush.notifications'::regclass AND conname = rule);
        BEGIN
            EXECUTE format('ALTER TABLE pgpush.notifications VALIDATE CONSTRAINT %I', rule);
        EXCEPTION WHEN check_violation THEN
            RAISE WARNING 'pgpush: existing rows break %, left NOT VALID (new rows are checked)', rule;
        END;
    END LOOP;
END
$$;

-- Tokens the claim finishes without sending. invalid_tokens keeps hex in
-- lower case (the worker writes lower(device_token)) while notifications keep
-- it as inserted, so the claim looks up lower(n.device_token): the function
-- applies to the probe value, and the lookup stays a primary-key probe.
--
-- Only Unregistered and ExpiredToken stop later rows: after either, the token
-- is dead until the app registers it again (then it calls
-- pgpush.token_registered). BadDeviceToken is left out on purpose: it is also
-- what every token gets when the app is configured for the wrong APNs
-- environment (sandbox vs production), so honouring it would keep blocking
-- every later row of those tokens after the configuration is fixed.
-- DeviceTokenNotForTopic is left out for the same reason (a wrong topic).

-- An app calls this when a device registers a token again: the token leaves
-- invalid_tokens, so rows queued for it from now on are sent again. Rows the
-- claim already finished as KnownInvalidToken stay finished. Returns whether
-- the token was listed. SECURITY DEFINER: applications get this one delete
-- and no DELETE on the table.
CREATE OR REPLACE FUNCTION pgpush.token_registered(app text, device_token text) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pgpush AS $$
    WITH gone AS (
        DELETE FROM pgpush.invalid_tokens t
         WHERE t.app = token_registered.app AND t.device_token = lower(token_registered.device_token)
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM gone)
$$;
REVOKE ALL ON FUNCTION pgpush.token_registered(text, text) FROM PUBLIC;

-- As for enqueue above: where roles.sql already ran, the application role
-- gets the new function without running it again.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_app') THEN
        GRANT EXECUTE ON FUNCTION pgpush.token_registered(text, text) TO pgpush_app;
    END IF;
END
$$;

-- App health per apns-topic: a null topic is the whole app (what 001-004
-- wrote), a topic pauses only that topic of the app. The primary key on app
-- becomes one row per (app, topic), with null counting as one value: the
-- unique index on coalesce(topic, '') is what the worker's upsert names in
-- ON CONFLICT. An empty topic is refused so it cannot collide with null.
ALTER TABLE pgpush.app_health ADD COLUMN IF NOT EXISTS topic text;
COMMENT ON COLUMN pgpush.app_health.topic IS
    'null: the whole app; otherwise only this apns-topic of the app is paused or healthy.';
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.app_health'::regclass
                      AND conname = 'app_health_topic_empty') THEN
        ALTER TABLE pgpush.app_health ADD CONSTRAINT app_health_topic_empty CHECK (topic <> '');
    END IF;
END
$$;
CREATE UNIQUE INDEX IF NOT EXISTS app_health_app_topic ON pgpush.app_health (app, coalesce(topic, ''));
ALTER TABLE pgpush.app_health DROP CONSTRAINT IF EXISTS app_health_pkey;
-- The primary key made app NOT NULL; keep it so without the key.
ALTER TABLE pgpush.app_health ALTER COLUMN app SET NOT NULL;
COMMENT ON TABLE pgpush.app_health IS
    'Per app, or per apns-topic of an app: whether workers can send for it, and if not, the reason and since when.';
