-- pgpush schema, part 17: Web Push rows.
--
-- A `webpush` row names its browser by `subscription`, the JSON a web app gets from
-- PushSubscription.toJSON(): the push service's endpoint URL and the browser's keys. It has
-- no device token and no channel. What SQL can tell about a subscription is checked at
-- INSERT by rules of its own (docs/contract.md, Named constraints); whether its endpoint's
-- origin is one the operator allows and its key a point on the curve, the worker decides,
-- before any connection (docs/webpush.md).
--
-- A dead subscription is listed in invalid_tokens by its endpoint, in the token column
-- (service `webpush`), and later rows to it are failed at the claim as dead APNs and FCM
-- tokens are. The claim returns each row's subscription, as a new last column: the
-- function is made again, and 014's claim for workers of the previous version names its
-- columns instead of taking all of them.
--
-- pgpush.enqueue and pgpush.enqueue_many take `subscription` (`subscriptions`) by name;
-- calls written before keep their meaning.
--
-- Written like 005-016: safe on a filled database and safe to run again by hand.

-- A constant default (none) makes ADD COLUMN a catalog change only.
ALTER TABLE pgpush.notifications ADD COLUMN IF NOT EXISTS subscription jsonb;
COMMENT ON COLUMN pgpush.notifications.subscription IS
    'webpush rows only: the browser''s PushSubscription.toJSON(), {"endpoint": "https://...", "keys": {"p256dh": "...", "auth": "..."}}';

-- What a row is listed by in invalid_tokens: its device token, or a Web Push
-- subscription's endpoint, as the service keeps it (token_key, 015).
CREATE OR REPLACE FUNCTION pgpush.listed_token(service text, device_token text, subscription jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT pgpush.token_key(service, coalesce(device_token, subscription ->> 'endpoint')) $$;

-- The input rules of 015 with Web Push's: a subscription and no other target, its
-- endpoint and keys, the Topic header's alphabet, any JSON value of at most 3,993 bytes.
CREATE OR REPLACE FUNCTION pgpush.notification_input_holds(
    app text, service text, device_token text, push_type text, priority smallint, topic text, payload jsonb,
    collapse_id text, expires_at timestamptz, send_after timestamptz, idempotency_key text, channel_id text,
    subscription jsonb)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    aps jsonb;
    event jsonb;
    json_text text;
    size_limit integer;
    member text;
    key text;
BEGIN
    IF NOT (app ~ '^[A-Za-z0-9._-]{1,64}$') THEN
        PERFORM pgpush.input_rule_broken('notifications_app_name_1_to_64_letters_digits_dot_dash');
    END IF;
    IF NOT (app <> '') THEN
        PERFORM pgpush.input_rule_broken('notifications_app_not_empty');
    END IF;
    IF NOT (service IN ('apns', 'fcm', 'webpush')) THEN
        PERFORM pgpush.input_rule_broken('notifications_service_unknown');
    END IF;
    IF service = 'apns' THEN
        IF push_type = 'background' THEN
            IF NOT coalesce(payload -> 'aps' -> 'content-available' = '1', false) THEN
                PERFORM pgpush.input_rule_broken('notifications_background_needs_content_available');
            END IF;
            IF NOT (priority = 5) THEN
                PERFORM pgpush.input_rule_broken('notifications_background_priority_must_be_5');
            END IF;
        END IF;
        IF channel_id IS NOT NULL THEN
            IF coalesce(payload -> 'aps' -> 'event' = '"start"', false) THEN
                PERFORM pgpush.input_rule_broken('notifications_channel_cannot_start_liveactivity');
            END IF;
            IF NOT (channel_id ~ '^[A-Za-z0-9+/]+={0,2}$' AND length(channel_id) <= 1024) THEN
                PERFORM pgpush.input_rule_broken('notifications_channel_id_not_base64');
            END IF;
            IF NOT (push_type = 'liveactivity') THEN
                PERFORM pgpush.input_rule_broken('notifications_channel_only_liveactivity');
            END IF;
            IF collapse_id IS NOT NULL THEN
                PERFORM pgpush.input_rule_broken('notifications_channel_without_collapse_id');
            END IF;
        END IF;
    END IF;
    IF collapse_id IS NOT NULL THEN
        IF collapse_id ~ '[\u0001-\u001f\u007f-\u009f]' THEN
            PERFORM pgpush.input_rule_broken('notifications_collapse_id_control_character');
        END IF;
        IF NOT (octet_length(collapse_id) BETWEEN 1 AND 64) THEN
            PERFORM pgpush.input_rule_broken('notifications_collapse_id_too_long');
        END IF;
    END IF;
    IF service = 'apns' THEN
        IF NOT (length(device_token) BETWEEN 2 AND 400 AND length(device_token) % 2 = 0) THEN
            PERFORM pgpush.input_rule_broken('notifications_device_token_bad_length');
        END IF;
        IF NOT (device_token ~ '^[0-9A-Fa-f]*$') THEN
            PERFORM pgpush.input_rule_broken('notifications_device_token_not_hex');
        END IF;
    END IF;
    IF service = 'webpush' THEN
        IF NOT (device_token IS NULL AND channel_id IS NULL AND subscription IS NOT NULL) THEN
            PERFORM pgpush.input_rule_broken('notifications_webpush_target_is_subscription');
        END IF;
        -- PushSubscription.toJSON(): an https endpoint, the browser's P-256 point (65 bytes,
        -- starting 0x04, so its text starts with B) and its 16-byte auth secret, base64url
        -- without padding or, in older stored subscriptions, base64 with it. Whether the
        -- point is on the curve and the endpoint's origin is allowed, the worker says.
        IF NOT coalesce(subscription ->> 'endpoint' ~ '^https://[^\s]+$'
                        AND length(subscription ->> 'endpoint') <= 2048, false) THEN
            PERFORM pgpush.input_rule_broken('notifications_webpush_endpoint_https');
        END IF;
        key := subscription -> 'keys' ->> 'p256dh';
        IF NOT coalesce(key ~ '^B[A-Za-z0-9+/_-]{86}=?$', false) THEN
            PERFORM pgpush.input_rule_broken('notifications_webpush_p256dh_65_bytes');
        END IF;
        key := subscription -> 'keys' ->> 'auth';
        IF NOT coalesce(key ~ '^[A-Za-z0-9+/_-]{22}(==)?$', false) THEN
            PERFORM pgpush.input_rule_broken('notifications_webpush_auth_16_bytes');
        END IF;
        -- The Topic header: RFC 8030's 32 URL-safe base64 characters, and no length a
        -- base64url text cannot have (Apple refuses those).
        IF collapse_id IS NOT NULL AND NOT (collapse_id ~ '^[A-Za-z0-9_-]{1,32}$' AND length(collapse_id) % 4 <> 1) THEN
            PERFORM pgpush.input_rule_broken('notifications_webpush_collapse_id_topic');
        END IF;
    ELSE
        IF subscription IS NOT NULL THEN
            PERFORM pgpush.input_rule_broken('notifications_subscription_only_webpush');
        END IF;
        IF (device_token IS NULL) = (channel_id IS NULL) THEN
            PERFORM pgpush.input_rule_broken('notifications_exactly_one_of_device_token_and_channel_id');
        END IF;
    END IF;
    IF NOT isfinite(expires_at) THEN
        PERFORM pgpush.input_rule_broken('notifications_expires_at_infinite');
    END IF;
    IF service = 'fcm' THEN
        -- A registration token: printable ASCII, no space; a topic: FCM's alphabet.
        IF NOT (device_token ~ '^[!-~]+$' AND length(device_token) <= 4096) THEN
            PERFORM pgpush.input_rule_broken('notifications_fcm_token_printable_ascii');
        END IF;
        IF NOT (channel_id ~ '^[A-Za-z0-9_.~%-]+$' AND length(channel_id) <= 900) THEN
            PERFORM pgpush.input_rule_broken('notifications_fcm_topic_name');
        END IF;
        -- The payload is the message without its target.
        IF jsonb_typeof(payload) = 'object' THEN
            FOR member IN SELECT jsonb_object_keys(payload) LOOP
                IF member NOT IN ('notification', 'data', 'android', 'apns', 'webpush', 'fcm_options') THEN
                    PERFORM pgpush.input_rule_broken('notifications_fcm_payload_members');
                END IF;
            END LOOP;
            IF payload ? 'data' AND NOT (jsonb_typeof(payload -> 'data') = 'object'
                    AND NOT EXISTS (SELECT 1 FROM jsonb_each(payload -> 'data') d WHERE jsonb_typeof(d.value) <> 'string')) THEN
                PERFORM pgpush.input_rule_broken('notifications_fcm_data_strings');
            END IF;
            IF payload ? 'android' AND jsonb_typeof(payload -> 'android') <> 'object' THEN
                PERFORM pgpush.input_rule_broken('notifications_fcm_android_object');
            END IF;
        END IF;
    END IF;
    IF idempotency_key = '' THEN
        PERFORM pgpush.input_rule_broken('notifications_idempotency_key_empty');
    END IF;
    IF service = 'apns' THEN
        IF push_type = 'liveactivity' THEN
            aps := payload -> 'aps';
            event := aps -> 'event';
            IF NOT coalesce(event IN ('"start"', '"update"', '"end"'), false) THEN
                PERFORM pgpush.input_rule_broken('notifications_liveactivity_event_start_update_or_end');
            END IF;
            IF NOT coalesce(jsonb_typeof(aps -> 'timestamp') = 'number', false) THEN
                PERFORM pgpush.input_rule_broken('notifications_liveactivity_needs_timestamp');
            END IF;
            IF NOT (priority IN (5, 10)) THEN
                PERFORM pgpush.input_rule_broken('notifications_liveactivity_priority_must_be_5_or_10');
            END IF;
            IF coalesce(event = '"start"', false) AND aps -> 'alert' IS NULL THEN
                PERFORM pgpush.input_rule_broken('notifications_liveactivity_start_needs_alert');
            END IF;
            IF coalesce(event = '"start"', false)
               AND NOT coalesce(jsonb_typeof(aps -> 'attributes-type') = 'string'
                                AND jsonb_typeof(aps -> 'attributes') = 'object', false) THEN
                PERFORM pgpush.input_rule_broken('notifications_liveactivity_start_needs_attributes');
            END IF;
            IF coalesce(event IN ('"start"', '"update"'), false)
               AND NOT coalesce(jsonb_typeof(aps -> 'content-state') = 'object', false) THEN
                PERFORM pgpush.input_rule_broken('notifications_liveactivity_start_or_update_needs_content_state');
            END IF;
        END IF;
        IF push_type = 'location' AND NOT (priority IN (5, 10)) THEN
            PERFORM pgpush.input_rule_broken('notifications_location_priority_must_be_5_or_10');
        END IF;
        IF push_type = 'mdm' AND topic IS NULL THEN
            PERFORM pgpush.input_rule_broken('notifications_mdm_needs_topic');
        END IF;
    END IF;
    json_text := payload::text;
    IF NOT (octet_length(json_text) - octet_length(translate(json_text, '{[', '')) <= 64
            OR pgpush.jsonb_nesting_depth(payload, 64) <= 64) THEN
        PERFORM pgpush.input_rule_broken('notifications_payload_nested_deeper_than_64');
    END IF;
    -- A Web Push payload is any JSON value: the browser's service worker reads its text.
    IF NOT (jsonb_typeof(payload) = 'object' OR service = 'webpush') THEN
        PERFORM pgpush.input_rule_broken('notifications_payload_not_object');
    END IF;
    -- Web Push: 4,096 bytes on the wire, less the aes128gcm header, tag and padding delimiter.
    size_limit := CASE WHEN service = 'webpush' THEN 3993
                       WHEN service = 'fcm' THEN CASE WHEN channel_id IS NOT NULL THEN 2048 ELSE 4096 END
                       WHEN push_type = 'voip' OR channel_id IS NOT NULL THEN 5120 ELSE 4096 END;
    IF NOT (octet_length(json_text) <= size_limit OR pgpush.compact_json_length(payload) <= size_limit) THEN
        PERFORM pgpush.input_rule_broken('notifications_payload_too_large');
    END IF;
    IF NOT (priority IN (1, 5, 10)) THEN
        PERFORM pgpush.input_rule_broken('notifications_priority_not_1_5_10');
    END IF;
    IF NOT (push_type IN ('alert', 'background', 'voip', 'complication', 'fileprovider', 'mdm', 'location',
                          'liveactivity', 'pushtotalk', 'widgets', 'controls')) THEN
        PERFORM pgpush.input_rule_broken('notifications_push_type_unknown');
    END IF;
    IF service = 'apns' AND push_type = 'pushtotalk' AND NOT (priority IS NULL OR priority = 10
            OR (priority = 5 AND coalesce(payload -> 'aps' ->> 'ptt-push-type' = 'service-update', false))) THEN
        PERFORM pgpush.input_rule_broken('notifications_pushtotalk_priority_10_or_service_update_5');
    END IF;
    IF NOT isfinite(send_after) THEN
        PERFORM pgpush.input_rule_broken('notifications_send_after_infinite');
    END IF;
    IF topic IS NOT NULL THEN
        IF topic ~ '[\u0001-\u001f\u007f-\u009f]' THEN
            PERFORM pgpush.input_rule_broken('notifications_topic_control_character');
        END IF;
        IF topic = '' THEN
            PERFORM pgpush.input_rule_broken('notifications_topic_empty');
        END IF;
    END IF;
    RETURN true;
END
$$;

-- The constraint calls the new function; 015's is dropped with it.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                      AND conname = 'notifications_input_rules'
                      AND pg_get_constraintdef(oid) LIKE '%channel_id, subscription)%') THEN
        ALTER TABLE pgpush.notifications DROP CONSTRAINT IF EXISTS notifications_input_rules;
        ALTER TABLE pgpush.notifications ADD CONSTRAINT notifications_input_rules CHECK (
            status <> 'queued' OR claim_count > 0
            OR pgpush.notification_input_holds(app, service, device_token, push_type, priority, topic, payload,
                                               collapse_id, expires_at, send_after, idempotency_key, channel_id,
                                               subscription)) NOT VALID;
        BEGIN
            ALTER TABLE pgpush.notifications VALIDATE CONSTRAINT notifications_input_rules;
        EXCEPTION WHEN check_violation THEN
            RAISE WARNING 'pgpush: queued rows break the input rules, left NOT VALID (new rows are checked)';
        END;
    END IF;
END
$$;
DROP FUNCTION IF EXISTS pgpush.notification_input_holds(text, text, text, text, smallint, text, jsonb, text, timestamptz,
                                                        timestamptz, text, text);

-- As 015's claim, returning the subscription too; a dead endpoint (404 or 410, listed
-- as SubscriptionGone) fails its later rows without a request. A function's result
-- columns cannot change in place: it is made again (apply_role_privileges, below,
-- grants it again).
DROP FUNCTION IF EXISTS pgpush.claim(text, text, text, integer, double precision, boolean, bigint, double precision);
CREATE OR REPLACE FUNCTION pgpush.claim(worker_id text, app text, service text, claim_limit integer,
                                        lease_seconds double precision, skip_known_invalid boolean, lowest_id bigint,
                                        look_back_seconds double precision)
RETURNS TABLE (id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text,
               priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid,
               deliver_once boolean, channel_id text, subscription jsonb)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET jit = off SET enable_seqscan = off SET enable_sort = off SET enable_hashjoin = off
    SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    taken bigint[];     -- to be sent (or expired)
    refused bigint[];   -- known dead: failed without an attempt (or expired)
    refusals text[];    -- refused's reasons, in the same order
    newest bigint;      -- no committed row has a higher id
    first_taken bigint;
    last_taken bigint;
BEGIN
    SELECT s.last_value INTO newest FROM pgpush.notifications_id_seq s;
    SELECT array_agg(due.id) FILTER (WHERE due.refusal IS NULL),
           array_agg(due.id) FILTER (WHERE due.refusal IS NOT NULL),
           array_agg(due.refusal) FILTER (WHERE due.refusal IS NOT NULL),
           min(due.id), max(due.id)
      INTO taken, refused, refusals, first_taken, last_taken
      FROM (SELECT n.id,
                   CASE WHEN n.channel_id IS NOT NULL THEN
                            CASE WHEN n.service = 'apns'
                                      AND (SELECT c.deleted_at FROM pgpush.channels c
                                            WHERE c.app = n.app AND c.channel_id = n.channel_id) IS NOT NULL
                                 THEN 'KnownDeletedChannel' END
                        WHEN coalesce(claim.skip_known_invalid AND (
                                 SELECT t.reason FROM pgpush.invalid_tokens t
                                  WHERE t.app = n.app AND t.service = n.service
                                    AND t.device_token = pgpush.listed_token(n.service, n.device_token, n.subscription)
                                 ) IN ('Unregistered', 'ExpiredToken', 'UNREGISTERED', 'SubscriptionGone'), false)
                        THEN 'KnownInvalidToken'
                   END AS refusal
              FROM pgpush.notifications n
             WHERE n.status = 'queued' AND n.app = claim.app AND n.service = claim.service AND n.send_after <= now()
               AND n.send_after >= coalesce(now() - make_interval(secs => claim.look_back_seconds), '-infinity')
               AND n.id BETWEEN claim.lowest_id AND newest
             ORDER BY n.send_after, n.id
             LIMIT claim.claim_limit
             FOR UPDATE OF n SKIP LOCKED) AS due;
    IF refused IS NOT NULL THEN
        -- Expiry wins over a refusal. No attempt was made: the error row's `attempt` is
        -- the count of earlier ones, its status null (no answer).
        WITH ended AS (
            UPDATE pgpush.notifications n SET
                status       = CASE WHEN n.expires_at <= now() THEN 'expired' ELSE 'failed' END,
                claim_count  = n.claim_count + 1,
                last_status  = CASE WHEN n.expires_at <= now() THEN n.last_status END,
                last_reason  = CASE WHEN n.expires_at <= now() THEN 'Expired'
                                    ELSE refusals[array_position(refused, n.id)] END,
                finished_at  = now(),
                updated_at   = now()
             WHERE n.id = ANY (refused) AND n.id BETWEEN first_taken AND last_taken
            RETURNING n.id, n.app, n.service, n.device_token, n.channel_id, n.apns_id, n.attempts, n.status, n.last_reason
        )
        INSERT INTO pgpush.delivery_errors
            (notification_id, app, service, device_token, channel_id, apns_id, attempt, status, reason, worker_id)
        SELECT e.id, e.app, e.service, e.device_token, e.channel_id, e.apns_id, e.attempts, NULL, e.last_reason,
               claim.worker_id
          FROM ended e
         WHERE e.status = 'failed';
        RETURN QUERY SELECT n.id, n.status, n.claim_count, n.attempts, n.device_token, n.push_type, n.priority,
                            n.topic, n.payload, n.collapse_id, NULL::bigint, n.apns_id, n.deliver_once, n.channel_id,
                            n.subscription
                       FROM pgpush.notifications n
                      WHERE n.id = ANY (refused) AND n.id BETWEEN first_taken AND last_taken;
    END IF;
    IF taken IS NOT NULL THEN
        RETURN QUERY
        UPDATE pgpush.notifications n SET
            status       = CASE WHEN n.expires_at <= now() THEN 'expired' ELSE 'sending' END,
            attempts     = n.attempts + CASE WHEN n.expires_at <= now() THEN 0 ELSE 1 END,
            claim_count  = n.claim_count + 1,
            locked_by    = CASE WHEN n.expires_at <= now() THEN NULL ELSE claim.worker_id END,
            locked_until = CASE WHEN n.expires_at <= now() THEN NULL
                                ELSE now() + make_interval(secs => claim.lease_seconds) END,
            last_reason  = CASE WHEN n.expires_at <= now() THEN 'Expired' ELSE n.last_reason END,
            finished_at  = CASE WHEN n.expires_at <= now() THEN now() END,
            updated_at   = now()
         WHERE n.id = ANY (taken) AND n.id BETWEEN first_taken AND last_taken
        RETURNING n.id, n.status, n.claim_count, n.attempts, n.device_token, n.push_type, n.priority, n.topic,
                  n.payload, n.collapse_id,
                  -- An infinite expires_at (refused since 006) is sent without an expiration.
                  CASE WHEN isfinite(n.expires_at) THEN floor(extract(epoch FROM n.expires_at))::bigint END,
                  n.apns_id,
                  -- An APNs channel that stores no messages takes only apns-expiration 0.
                  CASE WHEN n.service = 'apns' AND n.channel_id IS NOT NULL
                            AND (SELECT c.message_storage_policy FROM pgpush.channels c
                                  WHERE c.app = n.app AND c.channel_id = n.channel_id) = 0
                       THEN true ELSE n.deliver_once END,
                  n.channel_id, n.subscription;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION pgpush.claim(text, text, text, integer, double precision, boolean, bigint, double precision)
  FROM PUBLIC;

-- 014's claim, for workers of the previous version: APNs rows, its own columns.
CREATE OR REPLACE FUNCTION pgpush.claim(worker_id text, app text, claim_limit integer, lease_seconds double precision,
                                        skip_known_invalid boolean, lowest_id bigint,
                                        look_back_seconds double precision)
RETURNS TABLE (id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text,
               priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid,
               deliver_once boolean, channel_id text)
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN QUERY SELECT c.id, c.status, c.claim_count, c.attempts, c.device_token, c.push_type, c.priority, c.topic,
                        c.payload, c.collapse_id, c.expiration, c.apns_id, c.deliver_once, c.channel_id
                   FROM pgpush.claim($1, $2, 'apns', $3, $4, $5, $6, $7) AS c;
END
$$;

-- As 015's, listing a Web Push row by its endpoint.
CREATE OR REPLACE FUNCTION pgpush.complete(worker_id text, ids bigint[], claim_counts integer[], statuses text[],
                                           http_statuses integer[], reasons text[], delays double precision[],
                                           refunds integer[], answered boolean[], records_error boolean[],
                                           invalidates_token boolean[], apple_timestamps double precision[],
                                           apns_unique_ids uuid[], message_ids text[], details text[])
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET jit = off SET enable_seqscan = off SET enable_nestloop = off SET enable_mergejoin = off
AS $$
DECLARE
    first_id bigint;
    last_id bigint;
BEGIN
    SELECT min(i), max(i) INTO first_id, last_id FROM unnest(complete.ids) AS i;
    RETURN QUERY
    WITH outcome AS (
        SELECT * FROM unnest(complete.ids, complete.claim_counts, complete.statuses, complete.http_statuses,
                             complete.reasons, complete.delays, complete.refunds, complete.answered,
                             complete.records_error, complete.invalidates_token, complete.apple_timestamps,
                             complete.apns_unique_ids, complete.message_ids, complete.details)
            AS o(id, claim_count, status, http_status, reason, delay, refund, answered, records_error,
                 invalidates_token, apple_timestamp, apns_unique_id, message_id, detail)
    ), written AS (
        UPDATE pgpush.notifications n SET
            status         = o.status,
            last_status    = CASE WHEN o.answered THEN o.http_status ELSE n.last_status END,
            last_reason    = CASE WHEN o.answered THEN o.reason ELSE n.last_reason END,
            apns_unique_id = CASE WHEN o.answered THEN o.apns_unique_id ELSE n.apns_unique_id END,
            message_id     = CASE WHEN o.answered THEN o.message_id ELSE n.message_id END,
            send_after     = CASE WHEN o.status = 'queued' THEN now() + make_interval(secs => o.delay)
                                  ELSE n.send_after END,
            attempts       = n.attempts - o.refund,
            finished_at    = CASE WHEN o.status = 'queued' THEN NULL ELSE now() END,
            locked_by      = NULL,
            locked_until   = NULL,
            updated_at     = now()
          FROM outcome o
         WHERE n.id = ANY (complete.ids) AND n.id BETWEEN first_id AND last_id AND n.id = o.id
           AND coalesce(n.status, '') = 'sending'
           AND n.locked_by = complete.worker_id AND n.claim_count = o.claim_count
        RETURNING n.id, n.app, n.service, n.device_token, n.channel_id, n.apns_id, n.attempts + o.refund AS attempt,
                  pgpush.listed_token(n.service, n.device_token, n.subscription) AS listed_token
    ), errors AS (
        INSERT INTO pgpush.delivery_errors
            (notification_id, app, service, device_token, channel_id, apns_id, attempt, status, reason, detail,
             worker_id, apns_unique_id)
        SELECT w.id, w.app, w.service, w.device_token, w.channel_id, w.apns_id, w.attempt, o.http_status,
               coalesce(o.reason, 'Unknown'), o.detail, complete.worker_id, o.apns_unique_id
          FROM written w JOIN outcome o ON o.id = w.id
         WHERE o.records_error
    ), tokens AS (
        INSERT INTO pgpush.invalid_tokens (app, service, device_token, reason, apple_timestamp)
        SELECT DISTINCT ON (w.app, w.service, w.listed_token)
               w.app, w.service, w.listed_token, coalesce(o.reason, 'Unknown'), to_timestamp(o.apple_timestamp)
          FROM written w JOIN outcome o ON o.id = w.id
         WHERE o.invalidates_token AND w.listed_token IS NOT NULL
         ORDER BY w.app, w.service, w.listed_token, o.apple_timestamp DESC NULLS LAST
        ON CONFLICT (app, service, device_token) DO UPDATE SET
            reason          = EXCLUDED.reason,
            apple_timestamp = greatest(pgpush.invalid_tokens.apple_timestamp, EXCLUDED.apple_timestamp),
            last_seen       = now(),
            times_seen      = pgpush.invalid_tokens.times_seen + 1
    ), channels AS (
        -- A broadcast refused for its channel's sake marks the channel, also one created
        -- outside pgpush (its row is then made here, storage policy unknown).
        INSERT INTO pgpush.channels (app, channel_id, refused_reason, refused_at)
        SELECT DISTINCT ON (w.app, w.channel_id) w.app, w.channel_id, coalesce(o.reason, 'Unknown'), now()
          FROM written w JOIN outcome o ON o.id = w.id
         WHERE o.invalidates_token AND w.channel_id IS NOT NULL AND w.service = 'apns'
         ORDER BY w.app, w.channel_id
        ON CONFLICT (app, channel_id) DO UPDATE SET
            refused_reason = EXCLUDED.refused_reason,
            refused_at     = EXCLUDED.refused_at
    )
    SELECT w.id FROM written w;
END
$$;

-- enqueue and enqueue_many take a subscription by name, last (every call written
-- before keeps its meaning), and choose the service from it: `webpush` with a
-- subscription, `apns` without, unless `service` says. The device token has a default
-- so that a call by name can leave it out. A new parameter means a new function: the
-- old ones go, with their grants (apply_role_privileges below grants the new ones).
DROP FUNCTION IF EXISTS pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean,
                                       text);
DROP FUNCTION IF EXISTS pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text,
                                            boolean, text);

CREATE OR REPLACE FUNCTION pgpush.enqueue(
    device_token text DEFAULT NULL, payload jsonb DEFAULT NULL, app text DEFAULT 'default', push_type text DEFAULT 'alert',
    priority integer DEFAULT NULL, topic text DEFAULT NULL, collapse_id text DEFAULT NULL,
    expires_at timestamptz DEFAULT NULL, send_after timestamptz DEFAULT now(), idempotency_key text DEFAULT NULL,
    deliver_once boolean DEFAULT NULL, service text DEFAULT NULL, subscription jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    inserted bigint;
BEGIN
    -- A repeated key skips the row (the key trigger of 009), and the first row's id is returned.
    PERFORM set_config('pgpush.repeated_key', 'skip', true);
    INSERT INTO pgpush.notifications
        (app, service, device_token, subscription, push_type, priority, topic, payload, collapse_id, expires_at,
         send_after, idempotency_key, deliver_once)
    VALUES
        (enqueue.app, coalesce(enqueue.service, CASE WHEN enqueue.subscription IS NULL THEN 'apns' ELSE 'webpush' END),
         enqueue.device_token, enqueue.subscription, enqueue.push_type, enqueue.priority::smallint, enqueue.topic,
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

-- One payload to many device tokens, or to many subscriptions (a JSON array of
-- them). With a key, each row's key is `<key>:<device token>` or `<key>:<endpoint>`.
CREATE OR REPLACE FUNCTION pgpush.enqueue_many(
    device_tokens text[] DEFAULT NULL, payload jsonb DEFAULT NULL, app text DEFAULT 'default',
    push_type text DEFAULT 'alert', priority integer DEFAULT NULL, topic text DEFAULT NULL,
    collapse_id text DEFAULT NULL, expires_at timestamptz DEFAULT NULL, send_after timestamptz DEFAULT now(),
    idempotency_key text DEFAULT NULL, deliver_once boolean DEFAULT NULL, service text DEFAULT NULL,
    subscriptions jsonb DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
BEGIN
    IF enqueue_many.subscriptions IS NOT NULL AND (enqueue_many.device_tokens IS NOT NULL
                                                  OR jsonb_typeof(enqueue_many.subscriptions) <> 'array') THEN
        RAISE EXCEPTION 'pgpush.enqueue_many takes device_tokens or subscriptions (a JSON array), not both'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('pgpush.repeated_key', 'skip', true);
    RETURN QUERY
    INSERT INTO pgpush.notifications
        (app, service, device_token, subscription, push_type, priority, topic, payload, collapse_id, expires_at,
         send_after, idempotency_key, deliver_once)
    SELECT enqueue_many.app,
           coalesce(enqueue_many.service, CASE WHEN enqueue_many.subscriptions IS NULL THEN 'apns' ELSE 'webpush' END),
           target.token, target.subscription, enqueue_many.push_type, enqueue_many.priority::smallint,
           enqueue_many.topic, enqueue_many.payload, enqueue_many.collapse_id, enqueue_many.expires_at,
           coalesce(enqueue_many.send_after, now()),
           enqueue_many.idempotency_key || ':' || coalesce(target.token, target.subscription ->> 'endpoint'),
           enqueue_many.deliver_once
      FROM (SELECT t AS token, NULL::jsonb AS subscription FROM unnest(enqueue_many.device_tokens) AS t
            UNION ALL
            SELECT NULL, s FROM jsonb_array_elements(enqueue_many.subscriptions) AS s) AS target
    RETURNING id;
    PERFORM set_config('pgpush.repeated_key', '', true);
END
$$;

REVOKE ALL ON FUNCTION
    pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text, jsonb),
    pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text,
                        jsonb)
  FROM PUBLIC;

-- As 015's, with the subscription column and the new functions.
CREATE OR REPLACE FUNCTION pgpush.apply_role_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
DECLARE
    -- The row's app, named with its table: a bare "app" inside the subquery
    -- would be g.app, and the rule would let every granted role see every app.
    granted constant text :=
        'EXISTS (SELECT 1 FROM pgpush.app_grants g WHERE g.role = current_user AND g.app IN (%I.app, ''*''))';
    tab text;
BEGIN
    REVOKE ALL ON pgpush.notifications, pgpush.delivery_errors, pgpush.invalid_tokens, pgpush.workers,
                  pgpush.app_health, pgpush.app_grants, pgpush.channels, pgpush.queue_depth, pgpush.throughput,
                  pgpush.error_breakdown, pgpush.worker_health, pgpush.unserved_apps
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    REVOKE ALL ON FUNCTION
        pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text, jsonb),
        pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text,
                            jsonb),
        pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text, text),
        pgpush.cancel(bigint[]), pgpush.token_registered(text, text, text), pgpush.prune(interval, integer),
        pgpush.claim(text, text, text, integer, double precision, boolean, bigint, double precision),
        pgpush.claim(text, text, integer, double precision, boolean, bigint, double precision),
        pgpush.claim(text, text, integer, double precision, boolean, bigint),
        pgpush.complete_deliveries(text, bigint[], integer[], uuid[], text[]),
        pgpush.complete_deliveries(text, bigint[], integer[], uuid[]),
        pgpush.complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[],
                        boolean[], boolean[], double precision[], uuid[], text[], text[]),
        pgpush.complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[],
                        boolean[], boolean[], double precision[], uuid[]),
        pgpush.renew_leases(text, bigint[], double precision),
        pgpush.rescue_expired_leases(integer, integer, text, bigint[])
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT USAGE ON SCHEMA pgpush TO pgpush_app, pgpush_worker, pgpush_monitor;
    -- `pgpush doctor` reports the schema version as whichever role it runs as.
    REVOKE ALL ON pgpush.schema_migrations FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT SELECT ON pgpush.schema_migrations TO pgpush_app, pgpush_worker, pgpush_monitor;

    -- Applications: insert rows of the apps granted to them, read them, cancel them.
    GRANT SELECT ON pgpush.notifications, pgpush.delivery_errors, pgpush.invalid_tokens, pgpush.app_grants,
                    pgpush.channels, pgpush.queue_depth, pgpush.throughput, pgpush.error_breakdown
       TO pgpush_app;
    GRANT INSERT (app, service, device_token, channel_id, subscription, push_type, priority, topic, payload, collapse_id,
                  expires_at, send_after, idempotency_key, apns_id, deliver_once)
       ON pgpush.notifications TO pgpush_app;
    GRANT EXECUTE ON FUNCTION
        pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text, jsonb),
        pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text,
                            jsonb),
        pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text, text),
        pgpush.cancel(bigint[]), pgpush.token_registered(text, text, text)
       TO pgpush_app;

    -- Workers: claim, record outcomes, keep their own rows and health, prune.
    GRANT SELECT ON pgpush.notifications TO pgpush_worker;
    GRANT UPDATE (status, attempts, claim_count, locked_by, locked_until, last_status, last_reason,
                  apns_unique_id, message_id, send_after, finished_at, updated_at)
       ON pgpush.notifications TO pgpush_worker;
    GRANT SELECT, INSERT ON pgpush.delivery_errors TO pgpush_worker;
    GRANT SELECT, INSERT ON pgpush.invalid_tokens TO pgpush_worker;
    GRANT UPDATE (reason, apple_timestamp, last_seen, times_seen) ON pgpush.invalid_tokens TO pgpush_worker;
    GRANT SELECT, INSERT, UPDATE, DELETE ON pgpush.workers, pgpush.app_health TO pgpush_worker;
    GRANT SELECT, INSERT ON pgpush.channels TO pgpush_worker;
    GRANT UPDATE (message_storage_policy, push_type, environment, deleted_at, refused_reason, refused_at)
       ON pgpush.channels TO pgpush_worker;
    GRANT SELECT ON pgpush.queue_depth, pgpush.throughput, pgpush.error_breakdown, pgpush.worker_health,
                    pgpush.unserved_apps
       TO pgpush_worker;
    GRANT SELECT ON SEQUENCE pgpush.notifications_id_seq TO pgpush_worker;
    GRANT EXECUTE ON FUNCTION
        pgpush.prune(interval, integer),
        pgpush.claim(text, text, text, integer, double precision, boolean, bigint, double precision),
        pgpush.claim(text, text, integer, double precision, boolean, bigint, double precision),
        pgpush.claim(text, text, integer, double precision, boolean, bigint),
        pgpush.complete_deliveries(text, bigint[], integer[], uuid[], text[]),
        pgpush.complete_deliveries(text, bigint[], integer[], uuid[]),
        pgpush.complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[],
                        boolean[], boolean[], double precision[], uuid[], text[], text[]),
        pgpush.complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[],
                        boolean[], boolean[], double precision[], uuid[]),
        pgpush.renew_leases(text, bigint[], double precision),
        pgpush.rescue_expired_leases(integer, integer, text, bigint[])
       TO pgpush_worker;

    -- Monitors: every app, no token, subscription, payload or idempotency key.
    GRANT SELECT (id, app, service, push_type, priority, topic, status, attempts, claim_count, last_status, last_reason,
                  send_after, expires_at, created_at, updated_at, finished_at, locked_by, locked_until,
                  apns_id, apns_unique_id, message_id, deliver_once)
       ON pgpush.notifications TO pgpush_monitor;
    GRANT SELECT (id, notification_id, app, service, apns_id, attempt, status, reason, detail, worker_id, created_at,
                  apns_unique_id)
       ON pgpush.delivery_errors TO pgpush_monitor;
    GRANT SELECT (app, service, reason, apple_timestamp, first_seen, last_seen, times_seen)
       ON pgpush.invalid_tokens TO pgpush_monitor;
    GRANT SELECT (app, message_storage_policy, push_type, environment, created_at, deleted_at, refused_reason, refused_at)
       ON pgpush.channels TO pgpush_monitor;
    GRANT SELECT ON pgpush.workers, pgpush.app_health, pgpush.queue_depth, pgpush.throughput,
                    pgpush.error_breakdown, pgpush.worker_health, pgpush.unserved_apps
       TO pgpush_monitor;

    FOREACH tab IN ARRAY ARRAY['notifications', 'delivery_errors', 'invalid_tokens'] LOOP
        EXECUTE format('ALTER TABLE pgpush.%I ENABLE ROW LEVEL SECURITY', tab);
        EXECUTE format('DROP POLICY IF EXISTS app_by_grant ON pgpush.%I', tab);
        EXECUTE format('CREATE POLICY app_by_grant ON pgpush.%I TO pgpush_app USING (%s) WITH CHECK (%s)',
                       tab, format(granted, tab), format(granted, tab));
        EXECUTE format('DROP POLICY IF EXISTS monitor_reads ON pgpush.%I', tab);
        EXECUTE format('CREATE POLICY monitor_reads ON pgpush.%I FOR SELECT TO pgpush_monitor USING (true)', tab);
        EXECUTE format('DROP POLICY IF EXISTS worker_reads ON pgpush.%I', tab);
        EXECUTE format('CREATE POLICY worker_reads ON pgpush.%I FOR SELECT TO pgpush_worker USING (true)', tab);
    END LOOP;
    DROP POLICY IF EXISTS worker_updates_unfinished ON pgpush.notifications;
    CREATE POLICY worker_updates_unfinished ON pgpush.notifications FOR UPDATE TO pgpush_worker
        USING (status IN ('queued', 'sending')) WITH CHECK (true);
    DROP POLICY IF EXISTS worker_writes ON pgpush.delivery_errors;
    CREATE POLICY worker_writes ON pgpush.delivery_errors FOR INSERT TO pgpush_worker WITH CHECK (true);
    DROP POLICY IF EXISTS worker_writes ON pgpush.invalid_tokens;
    CREATE POLICY worker_writes ON pgpush.invalid_tokens FOR INSERT TO pgpush_worker WITH CHECK (true);
    DROP POLICY IF EXISTS worker_updates ON pgpush.invalid_tokens;
    CREATE POLICY worker_updates ON pgpush.invalid_tokens FOR UPDATE TO pgpush_worker USING (true) WITH CHECK (true);

    ALTER TABLE pgpush.app_grants ENABLE ROW LEVEL SECURITY;
    DROP POLICY IF EXISTS own_grants ON pgpush.app_grants;
    CREATE POLICY own_grants ON pgpush.app_grants FOR SELECT TO pgpush_app USING (role = current_user);

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

-- Where roles.sql already ran, the roles get the new privileges now.
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
    END IF;
END
$$;
