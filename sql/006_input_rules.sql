-- pgpush schema, part 6: rules on what an application may write, checked at
-- INSERT, for values that 001-005 accepted and that broke something later:
--   app names: they travel in pg_notify payloads (limited to 8000 bytes) and
--     into logs, metrics labels and terminals, so only a short, plain set of
--     characters is safe everywhere;
--   send_after / expires_at: an infinite timestamp breaks every subtraction
--     (queue_depth failed with "cannot subtract infinite timestamps");
--   topic / collapse_id: they become HTTP/2 header values, where control
--     characters have no business;
--   payload nesting: a deeply nested payload made the size check recurse
--     until "stack depth limit exceeded" instead of a named refusal.
--
-- Written like 005: safe on a filled database and safe to run again by hand.

-- How deeply a jsonb value nests (a scalar is 0, {} or [] is 1, {"a":{}} is
-- 2), counted level by level without recursion so that no input can exhaust
-- the stack, and giving up as soon as the count passes `max_depth`: the answer
-- is then max_depth + 1, and at most max_depth + 1 levels are ever read.
CREATE OR REPLACE FUNCTION pgpush.jsonb_nesting_depth(value jsonb, max_depth integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog AS $$
DECLARE
    level jsonb[] := ARRAY[value];
    depth integer := 0;
BEGIN
    LOOP
        -- Keep only the containers of this level; none left means done.
        SELECT coalesce(array_agg(v), '{}') INTO level
          FROM unnest(level) AS v WHERE jsonb_typeof(v) IN ('object', 'array');
        EXIT WHEN cardinality(level) = 0;
        depth := depth + 1;
        EXIT WHEN depth > max_depth;
        -- The next level: every member of every container of this one.
        SELECT coalesce(array_agg(child), '{}') INTO level
          FROM unnest(level) AS v,
               LATERAL (SELECT e.value FROM jsonb_each(CASE WHEN jsonb_typeof(v) = 'object' THEN v END) AS e
                        UNION ALL
                        SELECT e.value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(v) = 'array' THEN v END) AS e)
                   AS children(child);
    END LOOP;
    RETURN depth;
END
$$;

-- Unfinished rows written before these rules. A NOT VALID rule is still
-- checked on every UPDATE, and the worker updates the rows it claims in
-- batches: one old row that breaks a rule would fail the claim of its whole
-- app, again and again. So before the rules exist:
--   infinite times that have a finite meaning get it: due since -infinity is
--   due since the row was created, expiring at infinity is never expiring,
--   expired since -infinity is expired since it was created;
--   rows that cannot be sent as they are (a bad app name, control characters
--   in topic or collapse id, a payload nested too deep, or never due) end
--   'failed' with the reason BrokeInputRules, visible in delivery_errors.
-- Finished rows are left as they are: nothing updates them any more.
-- A second run finds no such rows: the rules below keep new ones out.
UPDATE pgpush.notifications
   SET send_after = CASE WHEN send_after = '-infinity' THEN created_at ELSE send_after END,
       expires_at = CASE WHEN expires_at = 'infinity' THEN NULL
                         WHEN expires_at = '-infinity' THEN created_at ELSE expires_at END,
       updated_at = now()
 WHERE status IN ('queued', 'sending')
   AND (send_after = '-infinity' OR NOT isfinite(expires_at));

WITH broken AS (
    UPDATE pgpush.notifications
       SET status = 'failed', last_status = NULL, last_reason = 'BrokeInputRules',
           -- send_after too: 'infinity' would break the rule on every later update.
           send_after = created_at, locked_by = NULL, locked_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE status IN ('queued', 'sending')
       AND (app !~ '^[A-Za-z0-9._-]{1,64}$'
            OR topic ~ '[\u0001-\u001f\u007f-\u009f]'
            OR collapse_id ~ '[\u0001-\u001f\u007f-\u009f]'
            OR send_after = 'infinity'
            OR (octet_length(payload::text) - octet_length(translate(payload::text, '{[', '')) > 64
                AND pgpush.jsonb_nesting_depth(payload, 64) > 64))
    RETURNING id, app, device_token, apns_id, attempts
)
INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, apns_id, attempt, status, reason, worker_id)
SELECT id, app, device_token, apns_id, attempts, NULL, 'BrokeInputRules', NULL FROM broken;

-- The rules, added NOT VALID first so that adding them never fails on old
-- rows, then validated below where the old rows allow it. Each name says the
-- rule, since it is what an application sees in the error.
DO $$
DECLARE
    rule record;
BEGIN
    FOR rule IN
        SELECT * FROM (VALUES
            -- 1 to 64 of letters, digits, '.', '_', '-'. '$' in a PostgreSQL
            -- regular expression is the true end of the text, so a trailing
            -- newline does not slip through.
            ('notifications_app_name_1_to_64_letters_digits_dot_dash',
             $c$app ~ '^[A-Za-z0-9._-]{1,64}$'$c$),
            ('notifications_send_after_infinite', 'isfinite(send_after)'),
            ('notifications_expires_at_infinite', 'isfinite(expires_at)'),
            -- C0 controls, DEL and C1 controls (0x9B alone starts a terminal escape).
            ('notifications_topic_control_character',
             $c$topic !~ '[\u0001-\u001f\u007f-\u009f]'$c$),
            ('notifications_collapse_id_control_character',
             $c$collapse_id !~ '[\u0001-\u001f\u007f-\u009f]'$c$),
            -- 64 levels is far more than any APNs payload needs. Fewer than 65
            -- '{' and '[' in the text (counting those inside strings too)
            -- cannot nest deeper, so the exact count runs only for the rare
            -- payload with that many. PostgreSQL checks constraints in name
            -- order, so this one runs before notifications_payload_too_large,
            -- whose exact length is computed recursively.
            ('notifications_payload_nested_deeper_than_64',
             $c$octet_length(payload::text) - octet_length(translate(payload::text, '{[', '')) <= 64
                OR pgpush.jsonb_nesting_depth(payload, 64) <= 64$c$)
        ) AS r(name, expression)
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                                 AND conname = rule.name);
        EXECUTE format('ALTER TABLE pgpush.notifications ADD CONSTRAINT %I CHECK (%s) NOT VALID', rule.name, rule.expression);
    END LOOP;
END
$$;

-- Validating against rows written before these rules, each on its own; a
-- rule that old rows break stays NOT VALID (new and updated rows are checked
-- either way) instead of failing the migration, as in 005. Which are left:
--   SELECT conname FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass AND NOT convalidated;
-- The depth rule may also fail on an old row so deep that reading it
-- exhausts the stack: also left NOT VALID.
DO $$
DECLARE
    rule text;
BEGIN
    FOREACH rule IN ARRAY ARRAY['notifications_app_name_1_to_64_letters_digits_dot_dash',
                                'notifications_send_after_infinite',
                                'notifications_expires_at_infinite',
                                'notifications_topic_control_character',
                                'notifications_collapse_id_control_character',
                                'notifications_payload_nested_deeper_than_64'] LOOP
        CONTINUE WHEN (SELECT convalidated FROM pg_constraint
                        WHERE conrelid = 'pgpush.notifications'::regclass AND conname = rule);
        BEGIN
            EXECUTE format('ALTER TABLE pgpush.notifications VALIDATE CONSTRAINT %I', rule);
        EXCEPTION WHEN check_violation OR statement_too_complex THEN
            RAISE WARNING 'pgpush: existing rows break %, left NOT VALID (new rows are checked)', rule;
        END;
    END LOOP;
END
$$;

-- queue_depth survives a row due since -infinity (none is left unfinished by
-- the repair above; this keeps one restored from an old backup from failing
-- the view): such a row
-- counts its age from when it was created (it was due from then on),
-- instead of failing the whole view. Same columns, same types as in 003.
CREATE OR REPLACE VIEW pgpush.queue_depth AS
SELECT app,
       count(*) FILTER (WHERE status = 'queued' AND send_after <= now())  AS due,
       count(*) FILTER (WHERE status = 'queued' AND send_after > now())   AS scheduled,
       count(*) FILTER (WHERE status = 'sending')                        AS sending,
       coalesce(extract(epoch FROM now() - min(CASE WHEN isfinite(send_after) THEN send_after ELSE created_at END)
                                           FILTER (WHERE status = 'queued' AND send_after <= now())), 0)
           AS oldest_due_seconds
  FROM pgpush.notifications
 WHERE status IN ('queued', 'sending')
 GROUP BY app;
