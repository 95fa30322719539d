-- pgpush schema, part 11: the worker's queue statements as functions.
--
-- Every statement `pgpush run` sends for a notification (claim, outcome,
-- lease renewal, lease rescue) is one of the functions below, so the queue's
-- SQL reads in one place, next to the schema it works on, and PostgreSQL
-- keeps each statement's plan for the life of its server process. As plain
-- statements they were parsed and planned on every call: planning the claim
-- over the partitioned table cost several times what running it did, and at
-- the rates applications run, one claim per notification or close to it.
-- A plan kept by a function survives a transaction pooler too (the server
-- process keeps it, whichever client it serves next), which prepared
-- statements on PgBouncer 1.18 would not.
--
-- The plans are generic (`plan_cache_mode = force_generic_plan`): a custom
-- plan, made for each call's values, is the planning these functions exist
-- to avoid. A generic plan is made once, from the statistics of that moment,
-- and kept while the table grows, so its shape must not depend on them. No
-- function plans a sequential scan, and every statement finds the table's
-- rows through an index, by id (`id = ANY (array)`): the claim and the lease
-- rescue lock their rows first and then update them by id. A plan made on an
-- empty table would otherwise read the whole table on every call once it is
-- full (a claim hashed all of it: 75 ms with 100,000 rows queued). Nor does
-- the claim or the lease rescue sort: not knowing how many rows the LIMIT
-- takes, a generic plan may read every due row and sort them, where an index
-- scan in order stops after the LIMIT (83 ms a claim with 200,000 rows
-- queued, against 11 ms with 100,000). And no JIT compilation: a generic
-- plan's costs assume more rows than a claim takes, enough to compile its
-- expressions on every call, which cost 60 ms of a 77 ms claim of 1,000
-- rows. The claim
-- joins nothing to the table (no hash or merge joins there); the outcome
-- functions read their rows by id through the primary key and join them to
-- the batch of outcomes by hashing (no nested loops there: planned for the
-- ten rows a generic plan assumes, a nested loop compared every outcome with
-- every row, 4 million comparisons for a batch of 2,000). Their status test
-- is written `coalesce(n.status, '') = 'sending'` so that it does not match
-- the partial index of rows in flight: through that index the ids were a
-- filter tested against every row in flight, through the primary key they
-- are the keys looked up. Partitions below the lowest id are left out when the plan starts,
-- not when it is made.
--
-- SECURITY INVOKER (the default): each statement runs with the caller's
-- privileges and row-level security, as it did when the worker sent it.
-- Only pgpush_worker (and the owner) may call them.
--
-- Written like 005-010: safe on a filled database and safe to run again by hand.

-- Claims up to claim_limit due rows of one app, oldest first, skipping rows
-- other workers hold: `sending` under this worker's lease, or `expired` when
-- past expires_at, or `failed` without an attempt when the token is known
-- dead (KnownInvalidToken, only with skip_known_invalid) or the channel
-- deleted (KnownDeletedChannel; one delivery_errors row each). A channel
-- row whose channel stores no messages is returned deliver_once (APNs takes
-- only apns-expiration 0 there). lowest_id: no row below it is queued
-- (history_partitioning.claim_from_id); partitions below it are not read.
--
-- The token check is a scalar subquery, a primary-key probe of
-- invalid_tokens per row taken (written as EXISTS or a join it can be planned
-- as a scan of the whole table). invalid_tokens holds tokens in lower case.
CREATE OR REPLACE FUNCTION pgpush.claim(worker_id text, app text, claim_limit integer, lease_seconds double precision,
                                        skip_known_invalid boolean, lowest_id bigint)
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
BEGIN
    SELECT array_agg(due.id) FILTER (WHERE due.refusal IS NULL),
           array_agg(due.id) FILTER (WHERE due.refusal IS NOT NULL),
           array_agg(due.refusal) FILTER (WHERE due.refusal IS NOT NULL)
      INTO taken, refused, refusals
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
             WHERE n.status = 'queued' AND n.app = claim.app AND n.send_after <= now() AND n.id >= claim.lowest_id
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
             WHERE n.id = ANY (refused) AND n.id >= claim.lowest_id
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
                      WHERE n.id = ANY (refused) AND n.id >= claim.lowest_id;
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
         WHERE n.id = ANY (taken) AND n.id >= claim.lowest_id
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
BEGIN
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
     WHERE n.id = ANY (complete_deliveries.ids) AND n.id = o.id AND coalesce(n.status, '') = 'sending'
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
BEGIN
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
         WHERE n.id = ANY (complete.ids) AND n.id = o.id AND coalesce(n.status, '') = 'sending'
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

-- Extends the lease of rows still in flight; returns the ids still held.
CREATE OR REPLACE FUNCTION pgpush.renew_leases(worker_id text, ids bigint[], lease_seconds double precision)
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET jit = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
BEGIN
    RETURN QUERY
    UPDATE pgpush.notifications n SET locked_until = now() + make_interval(secs => renew_leases.lease_seconds)
     WHERE n.id = ANY (renew_leases.ids) AND n.status = 'sending' AND n.locked_by = renew_leases.worker_id
    RETURNING n.id;
END
$$;

-- Takes back up to batch_size rows whose lease ended (their worker died or
-- hung): queued again, or failed with LeaseExpired once max_attempts
-- attempts were spent on them (a row that kills every worker must not loop
-- for ever), or expired. Never worker_id's own rows, unless `holding` is
-- given: then only those it still holds are left alone. Returns how many
-- rows were taken back.
CREATE OR REPLACE FUNCTION pgpush.rescue_expired_leases(max_attempts integer, batch_size integer, worker_id text,
                                                        holding bigint[])
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET jit = off SET enable_seqscan = off SET enable_sort = off SET enable_hashjoin = off
    SET enable_mergejoin = off
AS $$
DECLARE
    stale bigint[];
    rescued integer;
BEGIN
    SELECT array_agg(s.id) INTO stale
      FROM (SELECT r.id FROM pgpush.notifications r
             WHERE r.status = 'sending' AND r.locked_until < now()
               AND (r.locked_by IS DISTINCT FROM rescue_expired_leases.worker_id
                    OR (rescue_expired_leases.holding IS NOT NULL AND r.id <> ALL (rescue_expired_leases.holding)))
             ORDER BY r.locked_until
             LIMIT rescue_expired_leases.batch_size
             FOR UPDATE SKIP LOCKED) AS s;
    IF stale IS NULL THEN
        RETURN 0;
    END IF;
    UPDATE pgpush.notifications n SET
        status       = CASE WHEN n.expires_at <= now() THEN 'expired'
                            WHEN n.attempts >= rescue_expired_leases.max_attempts THEN 'failed'
                            ELSE 'queued' END,
        last_reason  = CASE WHEN n.expires_at <= now() THEN 'Expired'
                            WHEN n.attempts >= rescue_expired_leases.max_attempts THEN 'LeaseExpired'
                            ELSE n.last_reason END,
        finished_at  = CASE WHEN n.expires_at <= now() OR n.attempts >= rescue_expired_leases.max_attempts
                            THEN now() END,
        locked_by    = NULL,
        locked_until = NULL,
        updated_at   = now()
     WHERE n.id = ANY (stale);
    GET DIAGNOSTICS rescued = ROW_COUNT;
    RETURN rescued;
END
$$;

REVOKE ALL ON FUNCTION
    pgpush.claim(text, text, integer, double precision, boolean, bigint),
    pgpush.complete_deliveries(text, bigint[], integer[], uuid[]),
    pgpush.complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[],
                    boolean[], boolean[], double precision[], uuid[]),
    pgpush.renew_leases(text, bigint[], double precision),
    pgpush.rescue_expired_leases(integer, integer, text, bigint[])
  FROM PUBLIC;

-- Privileges: as in 010, the function of the older migrations keeps its grants
-- under a new name, and pgpush.apply_role_privileges() runs it and then grants
-- the worker its functions. Renamed once; a second run finds it done.
DO $$
BEGIN
    IF to_regprocedure('pgpush.apply_role_privileges_without_queue_functions()') IS NULL THEN
        ALTER FUNCTION pgpush.apply_role_privileges() RENAME TO apply_role_privileges_without_queue_functions;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION pgpush.apply_role_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
BEGIN
    PERFORM pgpush.apply_role_privileges_without_queue_functions();
    REVOKE ALL ON FUNCTION
        pgpush.claim(text, text, integer, double precision, boolean, bigint),
        pgpush.complete_deliveries(text, bigint[], integer[], uuid[]),
        pgpush.complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[],
                        boolean[], boolean[], double precision[], uuid[]),
        pgpush.renew_leases(text, bigint[], double precision),
        pgpush.rescue_expired_leases(integer, integer, text, bigint[])
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT EXECUTE ON FUNCTION
        pgpush.claim(text, text, integer, double precision, boolean, bigint),
        pgpush.complete_deliveries(text, bigint[], integer[], uuid[]),
        pgpush.complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[],
                        boolean[], boolean[], double precision[], uuid[]),
        pgpush.renew_leases(text, bigint[], double precision),
        pgpush.rescue_expired_leases(integer, integer, text, bigint[])
       TO pgpush_worker;
END
$$;
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges() FROM PUBLIC;
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges_without_queue_functions() FROM PUBLIC;

-- Where roles.sql already ran, the roles get the new privileges now.
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
    END IF;
END
$$;
