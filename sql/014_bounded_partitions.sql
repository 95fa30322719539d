-- pgpush schema, part 14: the worker's statements start only the partitions
-- that can hold their rows, and a claim reads only the part of the due rows'
-- index where new rows can be.
--
-- A kept (generic) plan names every partition of pgpush.notifications; each
-- statement leaves out, when it starts, those its bounds rule out, and every
-- partition it keeps costs it a scan to start even when empty (in PostgreSQL
-- 15 about 35-70 µs per partition and statement, BENCHMARKS.md, 0.5.0). Until
-- 013 the claim bounded ids from below only (history_partitioning.claim_from_id),
-- so it also started the empty partitions kept ready ahead and the default
-- partition, and the outcome functions started every partition.
--
-- Now each statement bounds its ids on both sides:
--   claim      from the lowest id that can be queued up to the identity's last
--              value (no committed row has a higher id); its updates, between
--              the first and last id it locked.
--   complete, complete_deliveries
--              between the lowest and highest id of the batch.
-- The default partition is left out whenever the partitions cover the bounds,
-- which they do unless ids were handed out while no partition was ready
-- (those rows are in the default partition, and then it is read, as before).
--
-- The claim reads the identity's sequence: pgpush_worker gets SELECT on it
-- (its last value only; it cannot take ids).
--
-- A claim also takes look_back_seconds: it reads only rows whose send_after is
-- at most that long ago (NULL: every due row). Every claimed row leaves a dead
-- entry at the head of notifications_queued_due, and a claim steps over all of
-- them until vacuum removes them: 100,000 of them, about what autovacuum's
-- defaults leave on a partition of a million rows, cost each claim 3-7 ms
-- (BENCHMARKS.md, 0.5.0). A worker claiming because of news (a NOTIFY, rows
-- coming faster than its claims) looks back to a little before its previous
-- claim, which took everything older; at least once per poll interval, and
-- after anything that can leave older rows due (a start, an outage, a pause, a
-- rescue, a full claim), it reads them all.
--
-- The claim of 011 (six arguments, without the look-back) stays for workers
-- of the previous version still running during an upgrade; it calls this one.
--
-- Written like 005-013: safe on a filled database and safe to run again by hand.

-- The identity sequence under one name (009 gave it this one; a database whose
-- sequence was renamed by hand gets it back).
DO $$
DECLARE
    sequence_name constant text := pg_get_serial_sequence('pgpush.notifications', 'id');
BEGIN
    IF sequence_name <> 'pgpush.notifications_id_seq' THEN
        EXECUTE format('ALTER SEQUENCE %s RENAME TO notifications_id_seq', sequence_name);
    END IF;
END
$$;

-- As 011's, with the bounds above.
CREATE OR REPLACE FUNCTION pgpush.claim(worker_id text, app text, claim_limit integer, lease_seconds double precision,
                                        skip_known_invalid boolean, lowest_id bigint,
                                        look_back_seconds double precision)
RETURNS TABLE (id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text,
               priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid,
               deliver_once boolean, channel_id text)
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
                            CASE WHEN (SELECT c.deleted_at FROM pgpush.channels c
                                        WHERE c.app = n.app AND c.channel_id = n.channel_id) IS NOT NULL
                                 THEN 'KnownDeletedChannel' END
                        WHEN coalesce(claim.skip_known_invalid AND (
                                 SELECT t.reason FROM pgpush.invalid_tokens t
                                  WHERE t.app = n.app AND t.device_token = lower(n.device_token)
                                 ) IN ('Unregistered', 'ExpiredToken'), false)
                        THEN 'KnownInvalidToken'
                   END AS refusal
              FROM pgpush.notifications n
             WHERE n.status = 'queued' AND n.app = claim.app AND n.send_after <= now()
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
            RETURNING n.id, n.app, n.device_token, n.channel_id, n.apns_id, n.attempts, n.status, n.last_reason
        )
        INSERT INTO pgpush.delivery_errors
            (notification_id, app, device_token, channel_id, apns_id, attempt, status, reason, worker_id)
        SELECT e.id, e.app, e.device_token, e.channel_id, e.apns_id, e.attempts, NULL, e.last_reason, claim.worker_id
          FROM ended e
         WHERE e.status = 'failed';
        RETURN QUERY SELECT n.id, n.status, n.claim_count, n.attempts, n.device_token, n.push_type, n.priority,
                            n.topic, n.payload, n.collapse_id, NULL::bigint, n.apns_id, n.deliver_once, n.channel_id
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
                  -- A channel that stores no messages takes only apns-expiration 0.
                  CASE WHEN n.channel_id IS NOT NULL
                            AND (SELECT c.message_storage_policy FROM pgpush.channels c
                                  WHERE c.app = n.app AND c.channel_id = n.channel_id) = 0
                       THEN true ELSE n.deliver_once END,
                  n.channel_id;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION pgpush.claim(text, text, integer, double precision, boolean, bigint, double precision)
  FROM PUBLIC;

-- 011's claim, for workers of the previous version: every due row.
CREATE OR REPLACE FUNCTION pgpush.claim(worker_id text, app text, claim_limit integer, lease_seconds double precision,
                                        skip_known_invalid boolean, lowest_id bigint)
RETURNS TABLE (id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text,
               priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid,
               deliver_once boolean, channel_id text)
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgpush.claim($1, $2, $3, $4, $5, $6, NULL::double precision);
END
$$;

-- The common outcome batch: every row accepted (200), nothing to record
-- beyond it. Writes what pgpush.complete writes for such rows, without its
-- joins for error rows and invalid tokens. Returns the ids whose lease still
-- held; a row taken over or cancelled meanwhile is left as it is.
CREATE OR REPLACE FUNCTION pgpush.complete_deliveries(worker_id text, ids bigint[], claim_counts integer[],
                                                      apns_unique_ids uuid[])
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET jit = off SET enable_seqscan = off SET enable_nestloop = off SET enable_mergejoin = off
AS $$
DECLARE
    first_id bigint;
    last_id bigint;
BEGIN
    SELECT min(i), max(i) INTO first_id, last_id FROM unnest(complete_deliveries.ids) AS i;
    RETURN QUERY
    UPDATE pgpush.notifications n SET
        status         = 'delivered',
        last_status    = 200,
        last_reason    = NULL,
        apns_unique_id = o.apns_unique_id,
        finished_at    = now(),
        locked_by      = NULL,
        locked_until   = NULL,
        updated_at     = now()
      FROM unnest(complete_deliveries.ids, complete_deliveries.claim_counts, complete_deliveries.apns_unique_ids)
           AS o(id, claim_count, apns_unique_id)
     WHERE n.id = ANY (complete_deliveries.ids) AND n.id BETWEEN first_id AND last_id AND n.id = o.id
       AND coalesce(n.status, '') = 'sending'
       AND n.locked_by = complete_deliveries.worker_id AND n.claim_count = o.claim_count
    RETURNING n.id;
END
$$;

-- Any outcome batch, one element of each array per row:
--   statuses          the row's next status: delivered, failed, expired, or
--                     queued (a retry, due after delays seconds)
--   refunds           1: the attempt is given back (not counted)
--   answered          the answer replaces last_status, last_reason and
--                     apns_unique_id (false: no answer, they stay)
--   records_error     one delivery_errors row
--   invalidates_token the token (or channel) goes to invalid_tokens (channels)
-- Returns the ids whose lease still held, as pgpush.complete_deliveries.
CREATE OR REPLACE FUNCTION pgpush.complete(worker_id text, ids bigint[], claim_counts integer[], statuses text[],
                                           http_statuses integer[], reasons text[], delays double precision[],
                                           refunds integer[], answered boolean[], records_error boolean[],
                                           invalidates_token boolean[], apple_timestamps double precision[],
                                           apns_unique_ids uuid[])
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
                             complete.apns_unique_ids)
            AS o(id, claim_count, status, http_status, reason, delay, refund, answered, records_error,
                 invalidates_token, apple_timestamp, apns_unique_id)
    ), written AS (
        UPDATE pgpush.notifications n SET
            status         = o.status,
            last_status    = CASE WHEN o.answered THEN o.http_status ELSE n.last_status END,
            last_reason    = CASE WHEN o.answered THEN o.reason ELSE n.last_reason END,
            apns_unique_id = CASE WHEN o.answered THEN o.apns_unique_id ELSE n.apns_unique_id END,
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
        RETURNING n.id, n.app, n.device_token, n.channel_id, n.apns_id, n.attempts + o.refund AS attempt
    ), errors AS (
        INSERT INTO pgpush.delivery_errors
            (notification_id, app, device_token, channel_id, apns_id, attempt, status, reason, worker_id, apns_unique_id)
        SELECT w.id, w.app, w.device_token, w.channel_id, w.apns_id, w.attempt, o.http_status,
               coalesce(o.reason, 'Unknown'), complete.worker_id, o.apns_unique_id
          FROM written w JOIN outcome o ON o.id = w.id
         WHERE o.records_error
    ), tokens AS (
        INSERT INTO pgpush.invalid_tokens (app, device_token, reason, apple_timestamp)
        SELECT DISTINCT ON (w.app, lower(w.device_token))
               w.app, lower(w.device_token), coalesce(o.reason, 'Unknown'), to_timestamp(o.apple_timestamp)
          FROM written w JOIN outcome o ON o.id = w.id
         WHERE o.invalidates_token AND w.device_token IS NOT NULL
         ORDER BY w.app, lower(w.device_token), o.apple_timestamp DESC NULLS LAST
        ON CONFLICT (app, device_token) DO UPDATE SET
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
         WHERE o.invalidates_token AND w.channel_id IS NOT NULL
         ORDER BY w.app, w.channel_id
        ON CONFLICT (app, channel_id) DO UPDATE SET
            refused_reason = EXCLUDED.refused_reason,
            refused_at     = EXCLUDED.refused_at
    )
    SELECT w.id FROM written w;
END
$$;

DO $$
BEGIN
    IF to_regprocedure('pgpush.apply_role_privileges_without_id_bound()') IS NULL THEN
        ALTER FUNCTION pgpush.apply_role_privileges() RENAME TO apply_role_privileges_without_id_bound;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION pgpush.apply_role_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
BEGIN
    PERFORM pgpush.apply_role_privileges_without_id_bound();
    REVOKE ALL ON FUNCTION pgpush.claim(text, text, integer, double precision, boolean, bigint, double precision)
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT EXECUTE ON FUNCTION pgpush.claim(text, text, integer, double precision, boolean, bigint, double precision)
       TO pgpush_worker;
    GRANT SELECT ON SEQUENCE pgpush.notifications_id_seq TO pgpush_worker;
END
$$;
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges() FROM PUBLIC;
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges_without_id_bound() FROM PUBLIC;

-- Where roles.sql already ran, the roles get the new privileges now.
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
    END IF;
END
$$;
