-- pgpush schema, part 1: the queue table and what applications call to fill it.
--
-- Applied by `pgpush migrate` inside one transaction, after the migration
-- runner has created schema `pgpush` and `pgpush.schema_migrations`.
-- Constraint names are part of the interface: an application that inserts a
-- bad row sees the name in the error, so the name says what is wrong.

-- Compact JSON length of a jsonb value: what the worker sends, which is
-- jsonb's text form without the blanks jsonb adds after ':' and ','.
-- Called only when the text form is over the limit (see the CHECK below).
CREATE FUNCTION pgpush.compact_json_length(value jsonb) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    total integer;
    entries integer;
BEGIN
    CASE jsonb_typeof(value)
    WHEN 'object' THEN
        SELECT coalesce(sum(octet_length(to_jsonb(e.key)::text) + 1 + pgpush.compact_json_length(e.value)), 0), count(*)
          INTO total, entries
          FROM jsonb_each(value) AS e;
        RETURN 2 + total + greatest(entries - 1, 0);
    WHEN 'array' THEN
        SELECT coalesce(sum(pgpush.compact_json_length(e.value)), 0), count(*)
          INTO total, entries
          FROM jsonb_array_elements(value) AS e;
        RETURN 2 + total + greatest(entries - 1, 0);
    ELSE
        RETURN octet_length(value::text);
    END CASE;
END
$$;

CREATE TABLE pgpush.notifications (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app             text        NOT NULL DEFAULT 'default',
    device_token    text        NOT NULL,
    push_type       text        NOT NULL DEFAULT 'alert',
    priority        smallint,
    topic           text,
    payload         jsonb       NOT NULL,
    collapse_id     text,
    expires_at      timestamptz,
    send_after      timestamptz NOT NULL DEFAULT now(),
    idempotency_key text,
    apns_id         uuid        NOT NULL DEFAULT gen_random_uuid(),
    status          text        NOT NULL DEFAULT 'queued',
    attempts        integer     NOT NULL DEFAULT 0,
    last_status     integer,
    last_reason     text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    -- The lease: which worker holds the row, until when, and under which
    -- claim. claim_count grows with every claim, so an outcome written under
    -- an older claim (a worker whose lease was taken over) matches no row.
    locked_by       text,
    locked_until    timestamptz,
    claim_count     integer     NOT NULL DEFAULT 0,

    CONSTRAINT notifications_app_not_empty CHECK (app <> ''),
    CONSTRAINT notifications_device_token_not_hex CHECK (device_token ~ '^[0-9A-Fa-f]*$'),
    CONSTRAINT notifications_device_token_bad_length
        CHECK (length(device_token) BETWEEN 2 AND 400 AND length(device_token) % 2 = 0),
    CONSTRAINT notifications_push_type_unknown CHECK (push_type IN (
        'alert', 'background', 'voip', 'complication', 'fileprovider', 'mdm',
        'location', 'liveactivity', 'pushtotalk', 'widgets', 'controls')),
    CONSTRAINT notifications_priority_not_1_5_10 CHECK (priority IN (1, 5, 10)),
    CONSTRAINT notifications_background_priority_must_be_5 CHECK (push_type <> 'background' OR priority = 5),
    CONSTRAINT notifications_background_needs_content_available
        CHECK (push_type <> 'background' OR coalesce(payload -> 'aps' -> 'content-available' = '1'::jsonb, false)),
    CONSTRAINT notifications_mdm_needs_topic CHECK (push_type <> 'mdm' OR topic IS NOT NULL),
    CONSTRAINT notifications_topic_empty CHECK (topic <> ''),
    CONSTRAINT notifications_payload_not_object CHECK (jsonb_typeof(payload) = 'object'),
    -- The text form is never shorter than the compact form, so the exact
    -- (recursive) length is only computed for payloads near the limit.
    CONSTRAINT notifications_payload_too_large CHECK (
        octet_length(payload::text) <= CASE WHEN push_type = 'voip' THEN 5120 ELSE 4096 END
        OR pgpush.compact_json_length(payload) <= CASE WHEN push_type = 'voip' THEN 5120 ELSE 4096 END),
    CONSTRAINT notifications_collapse_id_too_long CHECK (octet_length(collapse_id) BETWEEN 1 AND 64),
    CONSTRAINT notifications_idempotency_key_empty CHECK (idempotency_key <> ''),
    CONSTRAINT notifications_status_unknown CHECK (status IN (
        'queued', 'sending', 'delivered', 'failed', 'expired', 'cancelled')),
    CONSTRAINT notifications_attempts_negative CHECK (attempts >= 0),
    CONSTRAINT notifications_sending_needs_lease
        CHECK (status <> 'sending' OR (locked_by IS NOT NULL AND locked_until IS NOT NULL))
);

COMMENT ON TABLE pgpush.notifications IS
    'One APNs notification to one device. Applications INSERT (or call pgpush.enqueue); pgpush workers claim, send and record the outcome.';

-- Claiming reads only queued rows, oldest due first, per app: this partial
-- index stays small however many finished rows the table holds.
CREATE INDEX notifications_queued_due ON pgpush.notifications (app, send_after, id) WHERE status = 'queued';
-- Lease rescue scans only rows being sent.
CREATE INDEX notifications_sending_lease ON pgpush.notifications (locked_until) WHERE status = 'sending';
-- Pruning and monitoring of finished rows.
CREATE INDEX notifications_finished ON pgpush.notifications (finished_at) WHERE finished_at IS NOT NULL;
-- A second insert with the same key for the same app is rejected (plain
-- INSERT) or returns the first row's id (pgpush.enqueue): never sent twice.
CREATE UNIQUE INDEX notifications_idempotency ON pgpush.notifications (app, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Wake idle workers once per statement (not once per row), naming each app
-- that got rows due now. Rows scheduled for later are found by polling.
CREATE FUNCTION pgpush.notify_queued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pgpush_queued', app)
       FROM (SELECT DISTINCT app FROM new_rows WHERE status = 'queued' AND send_after <= now()) AS due;
    RETURN NULL;
END
$$;

CREATE TRIGGER notifications_notify_queued
    AFTER INSERT ON pgpush.notifications
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgpush.notify_queued();

-- One notification. Named, defaulted arguments:
--   SELECT pgpush.enqueue(device_token => 'ab12…', payload => '{"aps":{"alert":"Hi"}}');
-- With an idempotency_key that already exists for the app, returns the
-- existing row's id and inserts nothing.
CREATE FUNCTION pgpush.enqueue(
    device_token    text,
    payload         jsonb,
    app             text        DEFAULT 'default',
    push_type       text        DEFAULT 'alert',
    priority        integer     DEFAULT NULL,
    topic           text        DEFAULT NULL,
    collapse_id     text        DEFAULT NULL,
    expires_at      timestamptz DEFAULT NULL,
    send_after      timestamptz DEFAULT now(),
    idempotency_key text        DEFAULT NULL
) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    WITH inserted AS (
        INSERT INTO pgpush.notifications
            (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after, idempotency_key)
        VALUES
            (enqueue.app, enqueue.device_token, enqueue.push_type, enqueue.priority::smallint, enqueue.topic,
             enqueue.payload, enqueue.collapse_id, enqueue.expires_at, coalesce(enqueue.send_after, now()),
             enqueue.idempotency_key)
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

-- One payload to many devices, in one statement (one NOTIFY). With an
-- idempotency_key, each row's key is '<key>:<device_token>'. Returns the ids
-- of the rows inserted (tokens already enqueued under the key are skipped).
CREATE FUNCTION pgpush.enqueue_many(
    device_tokens   text[],
    payload         jsonb,
    app             text        DEFAULT 'default',
    push_type       text        DEFAULT 'alert',
    priority        integer     DEFAULT NULL,
    topic           text        DEFAULT NULL,
    collapse_id     text        DEFAULT NULL,
    expires_at      timestamptz DEFAULT NULL,
    send_after      timestamptz DEFAULT now(),
    idempotency_key text        DEFAULT NULL
) RETURNS SETOF bigint
LANGUAGE sql VOLATILE AS $$
    INSERT INTO pgpush.notifications
        (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after, idempotency_key)
    SELECT enqueue_many.app, token, enqueue_many.push_type, enqueue_many.priority::smallint, enqueue_many.topic,
           enqueue_many.payload, enqueue_many.collapse_id, enqueue_many.expires_at,
           coalesce(enqueue_many.send_after, now()),
           enqueue_many.idempotency_key || ':' || token
      FROM unnest(enqueue_many.device_tokens) AS token
    ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id
$$;
