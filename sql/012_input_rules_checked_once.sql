-- pgpush schema, part 12: the input rules as one constraint, checked when a
-- row is inserted and not again once it is claimed.
--
-- The thirty-two CHECK constraints of 001-010 on the columns an
-- application writes cost little per row but much per statement: PostgreSQL
-- reads every constraint's stored expression back from its text form and
-- prepares it again in every INSERT and UPDATE statement, before the first
-- row. With one row per statement, as applications insert and as the worker
-- claims and records outcomes at steady rates, that preparation was about
-- half of each statement's time (measured on PostgreSQL 15: a single-row
-- insert 664 µs with the constraints, 279 µs without; a single-row update
-- 448 µs and 222 µs).
--
-- Now one constraint, notifications_input_rules, calls
-- pgpush.notification_input_holds, which checks the same rules in the same
-- order (by name) and, when one is broken, raises the error PostgreSQL would
-- have raised: SQLSTATE 23514 (check_violation) naming the rule as the
-- constraint. Applications and `pgpush enqueue` see the same names as before.
-- Its expression is small, so preparing it costs little; a PL/pgSQL function
-- keeps its plans for the session.
--
-- The rules hold for every row waiting for its first claim (queued, never
-- claimed): they are checked when a row is inserted, not on the claim and
-- outcome updates that follow. No role may change the columns they read
-- (sql/007_per_app_access.sql grants the worker only the columns of a claim
-- and an outcome, applications no UPDATE and no status at INSERT), so a
-- claimed row's input stays what was checked; rows an earlier migration
-- ended because they broke a rule (BrokeInputRules) are not waiting for a
-- claim. The rules on the columns the worker does change (status, attempts,
-- the lease) stay constraints of their own.
--
-- Written like 005-011: safe on a filled database and safe to run again by hand.

-- Raises the check_violation of `rule`, as PostgreSQL reports a broken CHECK.
CREATE OR REPLACE FUNCTION pgpush.input_rule_broken(rule text) RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'check_violation', CONSTRAINT = rule, SCHEMA = 'pgpush', TABLE = 'notifications',
        MESSAGE = format('new row for relation "notifications" violates check constraint "%s"', rule);
END
$$;

-- The input rules (what each rule means: docs/contract.md; where it came
-- from: the migration that added it). Each IF is the CHECK it replaces; rules
-- that apply to one push type, a channel or an optional column are grouped
-- under the test that makes them apply, in the same order, and the payload's
-- text form is made once instead of three times. True, or an error.
CREATE OR REPLACE FUNCTION pgpush.notification_input_holds(
    app text, device_token text, push_type text, priority smallint, topic text, payload jsonb, collapse_id text,
    expires_at timestamptz, send_after timestamptz, idempotency_key text, channel_id text)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    aps jsonb;
    event jsonb;
    json_text text;
    size_limit integer;
BEGIN
    IF NOT (app ~ '^[A-Za-z0-9._-]{1,64}$') THEN
        PERFORM pgpush.input_rule_broken('notifications_app_name_1_to_64_letters_digits_dot_dash');
    END IF;
    IF NOT (app <> '') THEN
        PERFORM pgpush.input_rule_broken('notifications_app_not_empty');
    END IF;
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
    IF collapse_id IS NOT NULL THEN
        IF collapse_id ~ '[\u0001-\u001f\u007f-\u009f]' THEN
            PERFORM pgpush.input_rule_broken('notifications_collapse_id_control_character');
        END IF;
        IF NOT (octet_length(collapse_id) BETWEEN 1 AND 64) THEN
            PERFORM pgpush.input_rule_broken('notifications_collapse_id_too_long');
        END IF;
    END IF;
    IF NOT (length(device_token) BETWEEN 2 AND 400 AND length(device_token) % 2 = 0) THEN
        PERFORM pgpush.input_rule_broken('notifications_device_token_bad_length');
    END IF;
    IF NOT (device_token ~ '^[0-9A-Fa-f]*$') THEN
        PERFORM pgpush.input_rule_broken('notifications_device_token_not_hex');
    END IF;
    IF (device_token IS NULL) = (channel_id IS NULL) THEN
        PERFORM pgpush.input_rule_broken('notifications_exactly_one_of_device_token_and_channel_id');
    END IF;
    IF NOT isfinite(expires_at) THEN
        PERFORM pgpush.input_rule_broken('notifications_expires_at_infinite');
    END IF;
    IF idempotency_key = '' THEN
        PERFORM pgpush.input_rule_broken('notifications_idempotency_key_empty');
    END IF;
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
    json_text := payload::text;
    IF NOT (octet_length(json_text) - octet_length(translate(json_text, '{[', '')) <= 64
            OR pgpush.jsonb_nesting_depth(payload, 64) <= 64) THEN
        PERFORM pgpush.input_rule_broken('notifications_payload_nested_deeper_than_64');
    END IF;
    IF NOT (jsonb_typeof(payload) = 'object') THEN
        PERFORM pgpush.input_rule_broken('notifications_payload_not_object');
    END IF;
    size_limit := CASE WHEN push_type = 'voip' OR channel_id IS NOT NULL THEN 5120 ELSE 4096 END;
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
    IF push_type = 'pushtotalk' AND NOT (priority IS NULL OR priority = 10
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

-- The same rules as one constraint. The thirty-two it replaces are
-- dropped; where one of them was left NOT VALID by an earlier migration (a
-- row still queued breaks it), the new one is too, with a warning.
DO $$
DECLARE
    rule text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                      AND conname = 'notifications_input_rules') THEN
        ALTER TABLE pgpush.notifications ADD CONSTRAINT notifications_input_rules CHECK (
            status <> 'queued' OR claim_count > 0
            OR pgpush.notification_input_holds(app, device_token, push_type, priority, topic, payload, collapse_id,
                                               expires_at, send_after, idempotency_key, channel_id)) NOT VALID;
    END IF;
    FOREACH rule IN ARRAY ARRAY[
        'notifications_app_name_1_to_64_letters_digits_dot_dash', 'notifications_app_not_empty',
        'notifications_background_needs_content_available', 'notifications_background_priority_must_be_5',
        'notifications_channel_cannot_start_liveactivity', 'notifications_channel_id_not_base64',
        'notifications_channel_only_liveactivity', 'notifications_channel_without_collapse_id',
        'notifications_collapse_id_control_character', 'notifications_collapse_id_too_long',
        'notifications_device_token_bad_length', 'notifications_device_token_not_hex',
        'notifications_exactly_one_of_device_token_and_channel_id', 'notifications_expires_at_infinite',
        'notifications_idempotency_key_empty', 'notifications_liveactivity_event_start_update_or_end',
        'notifications_liveactivity_needs_timestamp', 'notifications_liveactivity_priority_must_be_5_or_10',
        'notifications_liveactivity_start_needs_alert', 'notifications_liveactivity_start_needs_attributes',
        'notifications_liveactivity_start_or_update_needs_content_state',
        'notifications_location_priority_must_be_5_or_10', 'notifications_mdm_needs_topic',
        'notifications_payload_nested_deeper_than_64', 'notifications_payload_not_object',
        'notifications_payload_too_large', 'notifications_priority_not_1_5_10', 'notifications_push_type_unknown',
        'notifications_pushtotalk_priority_10_or_service_update_5', 'notifications_send_after_infinite',
        'notifications_topic_control_character', 'notifications_topic_empty']
    LOOP
        EXECUTE format('ALTER TABLE pgpush.notifications DROP CONSTRAINT IF EXISTS %I', rule);
    END LOOP;
    IF NOT (SELECT convalidated FROM pg_constraint
             WHERE conrelid = 'pgpush.notifications'::regclass AND conname = 'notifications_input_rules') THEN
        BEGIN
            ALTER TABLE pgpush.notifications VALIDATE CONSTRAINT notifications_input_rules;
        EXCEPTION WHEN check_violation THEN
            RAISE WARNING 'pgpush: queued rows break the input rules, left NOT VALID (new rows are checked)';
        END;
    END IF;
END
$$;
