-- The pgpush schema as sql/0*.sql and sql/roles.sql leave it: pg_dump --schema-only
-- --schema=pgpush --no-owner --no-privileges of a freshly migrated database (the grants
-- of each role are in sql/007_per_app_access.sql and the migrations that extend it).
-- Generated; never edited by hand. The migrations are what changes a database; this
-- file is for reading, and a test checks that it matches them
-- (Tests/PushQueueTests/SchemaFileTests.swift).
--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: pgpush; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA pgpush;


--
-- Name: apply_history_privileges(); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.apply_history_privileges() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
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


--
-- Name: apply_role_privileges(); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.apply_role_privileges() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
DECLARE
    -- The row's app, named with its table: a bare "app" inside the subquery
    -- would be g.app, and the rule would let every granted role see every app.
    granted constant text :=
        'EXISTS (SELECT 1 FROM pgpush.app_grants g WHERE g.role = current_user AND g.app IN (%I.app, ''*''))';
    tab text;
BEGIN
    REVOKE ALL ON pgpush.notifications, pgpush.delivery_errors, pgpush.invalid_tokens, pgpush.workers,
                  pgpush.app_health, pgpush.app_grants, pgpush.channels, pgpush.queue_depth, pgpush.throughput,
                  pgpush.error_breakdown, pgpush.worker_health, pgpush.unserved_apps, pgpush.rate_shares
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    REVOKE ALL ON FUNCTION
        pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text, jsonb,
                       text),
        pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text,
                            jsonb, text),
        pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text, text, text),
        pgpush.cancel(bigint[]), pgpush.requeue(bigint[]), pgpush.token_registered(text, text, text), pgpush.prune(interval, integer),
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
        pgpush.rescue_expired_leases(integer, integer, text, bigint[]),
        pgpush.take_rate_share(text, text, text, integer, double precision),
        pgpush.release_rate_share(text, text, text)
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT USAGE ON SCHEMA pgpush TO pgpush_app, pgpush_worker, pgpush_monitor;
    -- `pgpush doctor` reports the schema version as whichever role it runs as.
    REVOKE ALL ON pgpush.schema_migrations FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT SELECT ON pgpush.schema_migrations TO pgpush_app, pgpush_worker, pgpush_monitor;

    -- Applications: insert rows of the apps granted to them, read them, cancel and requeue them.
    GRANT SELECT ON pgpush.notifications, pgpush.delivery_errors, pgpush.invalid_tokens, pgpush.app_grants,
                    pgpush.channels, pgpush.queue_depth, pgpush.throughput, pgpush.error_breakdown
       TO pgpush_app;
    GRANT INSERT (app, service, device_token, channel_id, subscription, lane, push_type, priority, topic, payload,
                  collapse_id, expires_at, send_after, idempotency_key, apns_id, deliver_once)
       ON pgpush.notifications TO pgpush_app;
    GRANT EXECUTE ON FUNCTION
        pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text, jsonb,
                       text),
        pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text,
                            jsonb, text),
        pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text, text, text),
        pgpush.cancel(bigint[]), pgpush.requeue(bigint[]), pgpush.token_registered(text, text, text)
       TO pgpush_app;

    -- Workers: claim, record outcomes, keep their own rows and health, prune.
    GRANT SELECT ON pgpush.notifications TO pgpush_worker;
    GRANT UPDATE (status, attempts, claim_count, locked_by, locked_until, last_status, last_reason,
                  apns_unique_id, message_id, send_after, finished_at, updated_at)
       ON pgpush.notifications TO pgpush_worker;
    GRANT SELECT, INSERT ON pgpush.delivery_errors TO pgpush_worker;
    GRANT SELECT, INSERT ON pgpush.invalid_tokens TO pgpush_worker;
    GRANT UPDATE (reason, apple_timestamp, last_seen, times_seen) ON pgpush.invalid_tokens TO pgpush_worker;
    GRANT SELECT, INSERT, UPDATE, DELETE ON pgpush.workers, pgpush.app_health, pgpush.rate_shares TO pgpush_worker;
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
        pgpush.rescue_expired_leases(integer, integer, text, bigint[]),
        pgpush.take_rate_share(text, text, text, integer, double precision),
        pgpush.release_rate_share(text, text, text)
       TO pgpush_worker;

    -- Monitors: every app, no token, subscription, payload or idempotency key.
    GRANT SELECT (id, app, service, lane, push_type, priority, topic, status, attempts, claim_count, last_status,
                  last_reason, send_after, expires_at, created_at, updated_at, finished_at, locked_by, locked_until,
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
                    pgpush.error_breakdown, pgpush.worker_health, pgpush.unserved_apps, pgpush.rate_shares
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


--
-- Name: cancel(bigint[]); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.cancel(ids bigint[]) RETURNS SETOF bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
    UPDATE pgpush.notifications n
       SET status = 'cancelled', finished_at = now(), updated_at = now()
     WHERE n.id = ANY(cancel.ids) AND n.status = 'queued' AND pgpush.session_may_use_app(n.app)
    RETURNING n.id
$$;


--
-- Name: claim(text, text, integer, double precision, boolean, bigint); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.claim(worker_id text, app text, claim_limit integer, lease_seconds double precision, skip_known_invalid boolean, lowest_id bigint) RETURNS TABLE(id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text, priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid, deliver_once boolean, channel_id text)
    LANGUAGE plpgsql
    AS $_$
BEGIN
    RETURN QUERY SELECT * FROM pgpush.claim($1, $2, $3, $4, $5, $6, NULL::double precision);
END
$_$;


--
-- Name: claim(text, text, integer, double precision, boolean, bigint, double precision); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.claim(worker_id text, app text, claim_limit integer, lease_seconds double precision, skip_known_invalid boolean, lowest_id bigint, look_back_seconds double precision) RETURNS TABLE(id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text, priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid, deliver_once boolean, channel_id text)
    LANGUAGE plpgsql
    AS $_$
BEGIN
    RETURN QUERY SELECT c.id, c.status, c.claim_count, c.attempts, c.device_token, c.push_type, c.priority, c.topic,
                        c.payload, c.collapse_id, c.expiration, c.apns_id, c.deliver_once, c.channel_id
                   FROM pgpush.claim($1, $2, 'apns', $3, $4, $5, $6, $7) AS c;
END
$_$;


--
-- Name: claim(text, text, text, integer, double precision, boolean, bigint, double precision); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.claim(worker_id text, app text, service text, claim_limit integer, lease_seconds double precision, skip_known_invalid boolean, lowest_id bigint, look_back_seconds double precision) RETURNS TABLE(id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text, priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid, deliver_once boolean, channel_id text, subscription jsonb, lane text)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    SET enable_seqscan TO 'off'
    SET enable_sort TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
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
              -- One lane after the other, each read from the index in its own order: the
              -- nested loop asks the next lane only for what the one before could not give.
              FROM unnest(ARRAY['urgent', 'normal', 'bulk']) AS l(lane)
             CROSS JOIN LATERAL (
                   SELECT n.id, n.app, n.service, n.channel_id, n.device_token, n.subscription
                     FROM pgpush.notifications n
                    WHERE n.status = 'queued' AND n.app = claim.app AND n.service = claim.service
                      AND n.lane = l.lane AND n.send_after <= now()
                      AND n.send_after >= coalesce(now() - make_interval(secs => claim.look_back_seconds), '-infinity')
                      AND n.id BETWEEN claim.lowest_id AND newest
                    ORDER BY n.send_after, n.id
                    LIMIT claim.claim_limit
                    FOR UPDATE OF n SKIP LOCKED) AS n
             LIMIT claim.claim_limit) AS due;
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
                            n.subscription, n.lane
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
                  n.channel_id, n.subscription, n.lane;
    END IF;
END
$$;


--
-- Name: claim_idempotency_key(); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.claim_idempotency_key() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
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


--
-- Name: compact_json_length(jsonb); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.compact_json_length(value jsonb) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
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


--
-- Name: complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[], boolean[], boolean[], double precision[], uuid[]); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.complete(worker_id text, ids bigint[], claim_counts integer[], statuses text[], http_statuses integer[], reasons text[], delays double precision[], refunds integer[], answered boolean[], records_error boolean[], invalidates_token boolean[], apple_timestamps double precision[], apns_unique_ids uuid[]) RETURNS SETOF bigint
    LANGUAGE sql
    AS $_$ SELECT * FROM pgpush.complete($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL::text[], NULL::text[]) $_$;


--
-- Name: complete(text, bigint[], integer[], text[], integer[], text[], double precision[], integer[], boolean[], boolean[], boolean[], double precision[], uuid[], text[], text[]); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.complete(worker_id text, ids bigint[], claim_counts integer[], statuses text[], http_statuses integer[], reasons text[], delays double precision[], refunds integer[], answered boolean[], records_error boolean[], invalidates_token boolean[], apple_timestamps double precision[], apns_unique_ids uuid[], message_ids text[], details text[]) RETURNS SETOF bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    SET enable_seqscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
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


--
-- Name: complete_deliveries(text, bigint[], integer[], uuid[]); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.complete_deliveries(worker_id text, ids bigint[], claim_counts integer[], apns_unique_ids uuid[]) RETURNS SETOF bigint
    LANGUAGE sql
    AS $_$ SELECT * FROM pgpush.complete_deliveries($1, $2, $3, $4, NULL::text[]) $_$;


--
-- Name: complete_deliveries(text, bigint[], integer[], uuid[], text[]); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.complete_deliveries(worker_id text, ids bigint[], claim_counts integer[], apns_unique_ids uuid[], message_ids text[]) RETURNS SETOF bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    SET enable_seqscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
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
        message_id     = o.message_id,
        finished_at    = now(),
        locked_by      = NULL,
        locked_until   = NULL,
        updated_at     = now()
      FROM unnest(complete_deliveries.ids, complete_deliveries.claim_counts, complete_deliveries.apns_unique_ids,
                  complete_deliveries.message_ids)
           AS o(id, claim_count, apns_unique_id, message_id)
     WHERE n.id = ANY (complete_deliveries.ids) AND n.id BETWEEN first_id AND last_id AND n.id = o.id
       AND coalesce(n.status, '') = 'sending'
       AND n.locked_by = complete_deliveries.worker_id AND n.claim_count = o.claim_count
    RETURNING n.id;
END
$$;


--
-- Name: create_history_partition(text, bigint); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.create_history_partition(tab text, first bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
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


--
-- Name: create_history_partitions(); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.create_history_partitions() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pgpush'
    SET lock_timeout TO '1s'
    AS $$
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


--
-- Name: enqueue(character varying, jsonb, text, integer, text, timestamp with time zone, timestamp with time zone, text, boolean, text, text, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.enqueue(channel_id character varying, payload jsonb, app text DEFAULT 'default'::text, priority integer DEFAULT NULL::integer, topic text DEFAULT NULL::text, expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone, send_after timestamp with time zone DEFAULT now(), idempotency_key text DEFAULT NULL::text, deliver_once boolean DEFAULT NULL::boolean, push_type text DEFAULT NULL::text, service text DEFAULT 'apns'::text, lane text DEFAULT 'normal'::text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    inserted bigint;
BEGIN
    PERFORM set_config('pgpush.repeated_key', 'skip', true);
    INSERT INTO pgpush.notifications
        (app, service, channel_id, lane, push_type, priority, topic, payload, expires_at, send_after, idempotency_key,
         deliver_once)
    VALUES
        (enqueue.app, enqueue.service, enqueue.channel_id, coalesce(enqueue.lane, 'normal'),
         coalesce(enqueue.push_type, CASE WHEN enqueue.service = 'apns' THEN 'liveactivity' ELSE 'alert' END),
         enqueue.priority::smallint, enqueue.topic, enqueue.payload, enqueue.expires_at,
         coalesce(enqueue.send_after, now()), enqueue.idempotency_key, enqueue.deliver_once)
    RETURNING id INTO inserted;
    PERFORM set_config('pgpush.repeated_key', '', true);
    IF inserted IS NULL THEN
        SELECT n.id INTO inserted FROM pgpush.notifications n
         WHERE n.id = pgpush.idempotency_key_holder(enqueue.app, enqueue.idempotency_key);
    END IF;
    RETURN inserted;
END
$$;


--
-- Name: enqueue(text, jsonb, text, text, integer, text, text, timestamp with time zone, timestamp with time zone, text, boolean, text, jsonb, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.enqueue(device_token text DEFAULT NULL::text, payload jsonb DEFAULT NULL::jsonb, app text DEFAULT 'default'::text, push_type text DEFAULT 'alert'::text, priority integer DEFAULT NULL::integer, topic text DEFAULT NULL::text, collapse_id text DEFAULT NULL::text, expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone, send_after timestamp with time zone DEFAULT now(), idempotency_key text DEFAULT NULL::text, deliver_once boolean DEFAULT NULL::boolean, service text DEFAULT NULL::text, subscription jsonb DEFAULT NULL::jsonb, lane text DEFAULT 'normal'::text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    inserted bigint;
BEGIN
    -- A repeated key skips the row (the key trigger of 009), and the first row's id is returned.
    PERFORM set_config('pgpush.repeated_key', 'skip', true);
    INSERT INTO pgpush.notifications
        (app, service, device_token, subscription, lane, push_type, priority, topic, payload, collapse_id, expires_at,
         send_after, idempotency_key, deliver_once)
    VALUES
        (enqueue.app, coalesce(enqueue.service, CASE WHEN enqueue.subscription IS NULL THEN 'apns' ELSE 'webpush' END),
         enqueue.device_token, enqueue.subscription, coalesce(enqueue.lane, 'normal'), enqueue.push_type,
         enqueue.priority::smallint, enqueue.topic, enqueue.payload, enqueue.collapse_id, enqueue.expires_at,
         coalesce(enqueue.send_after, now()), enqueue.idempotency_key, enqueue.deliver_once)
    RETURNING id INTO inserted;
    PERFORM set_config('pgpush.repeated_key', '', true);
    IF inserted IS NULL THEN
        SELECT n.id INTO inserted FROM pgpush.notifications n
         WHERE n.id = pgpush.idempotency_key_holder(enqueue.app, enqueue.idempotency_key);
    END IF;
    RETURN inserted;
END
$$;


--
-- Name: enqueue_many(text[], jsonb, text, text, integer, text, text, timestamp with time zone, timestamp with time zone, text, boolean, text, jsonb, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.enqueue_many(device_tokens text[] DEFAULT NULL::text[], payload jsonb DEFAULT NULL::jsonb, app text DEFAULT 'default'::text, push_type text DEFAULT 'alert'::text, priority integer DEFAULT NULL::integer, topic text DEFAULT NULL::text, collapse_id text DEFAULT NULL::text, expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone, send_after timestamp with time zone DEFAULT now(), idempotency_key text DEFAULT NULL::text, deliver_once boolean DEFAULT NULL::boolean, service text DEFAULT NULL::text, subscriptions jsonb DEFAULT NULL::jsonb, lane text DEFAULT 'normal'::text) RETURNS SETOF bigint
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
        (app, service, device_token, subscription, lane, push_type, priority, topic, payload, collapse_id, expires_at,
         send_after, idempotency_key, deliver_once)
    SELECT enqueue_many.app,
           coalesce(enqueue_many.service, CASE WHEN enqueue_many.subscriptions IS NULL THEN 'apns' ELSE 'webpush' END),
           target.token, target.subscription, coalesce(enqueue_many.lane, 'normal'), enqueue_many.push_type,
           enqueue_many.priority::smallint, enqueue_many.topic, enqueue_many.payload, enqueue_many.collapse_id,
           enqueue_many.expires_at, coalesce(enqueue_many.send_after, now()),
           enqueue_many.idempotency_key || ':' || coalesce(target.token, target.subscription ->> 'endpoint'),
           enqueue_many.deliver_once
      FROM (SELECT t AS token, NULL::jsonb AS subscription FROM unnest(enqueue_many.device_tokens) AS t
            UNION ALL
            SELECT NULL, s FROM jsonb_array_elements(enqueue_many.subscriptions) AS s) AS target
    RETURNING id;
    PERFORM set_config('pgpush.repeated_key', '', true);
END
$$;


--
-- Name: grant_app(name, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.grant_app(role name, app text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
BEGIN
    -- A typo would otherwise grant nothing to anyone, silently.
    IF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = grant_app.role) THEN
        RAISE EXCEPTION 'pgpush.grant_app: role "%" does not exist', grant_app.role USING ERRCODE = 'undefined_object';
    END IF;
    INSERT INTO pgpush.app_grants (role, app) VALUES (grant_app.role, grant_app.app) ON CONFLICT DO NOTHING;
    RETURN FOUND;
END
$$;


--
-- Name: history_partition_retired(regclass, interval); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.history_partition_retired(part regclass, older_than interval) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $_$
DECLARE
    retired boolean;
BEGIN
    EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %1$s WHERE status = ''queued'')
                       AND NOT EXISTS (SELECT 1 FROM %1$s WHERE status = ''sending'')
                       AND coalesce((SELECT max(finished_at) FROM %1$s), ''-infinity'') < now() - $1', part)
       INTO retired USING older_than;
    RETURN retired;
END
$_$;


--
-- Name: idempotency_key_holder(text, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.idempotency_key_holder(app text, idempotency_key text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
    SELECT k.notification_id FROM pgpush.idempotency_keys k
     WHERE k.app = idempotency_key_holder.app AND k.idempotency_key = idempotency_key_holder.idempotency_key
       AND pgpush.session_may_use_app(idempotency_key_holder.app)
$$;


--
-- Name: input_rule_broken(text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.input_rule_broken(rule text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'check_violation', CONSTRAINT = rule, SCHEMA = 'pgpush', TABLE = 'notifications',
        MESSAGE = format('new row for relation "notifications" violates check constraint "%s"', rule);
END
$$;


--
-- Name: jsonb_nesting_depth(jsonb, integer); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.jsonb_nesting_depth(value jsonb, max_depth integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog'
    AS $$
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


--
-- Name: listed_token(text, text, jsonb); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.listed_token(service text, device_token text, subscription jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT pgpush.token_key(service, coalesce(device_token, subscription ->> 'endpoint')) $$;


--
-- Name: next_notification_id(); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.next_notification_id() RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
DECLARE
    next_id bigint;
BEGIN
    EXECUTE format('SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM %s',
                   pg_get_serial_sequence('pgpush.notifications', 'id')) INTO next_id;
    RETURN next_id;
END
$$;


--
-- Name: notification_input_holds(text, text, text, text, smallint, text, jsonb, text, timestamp with time zone, timestamp with time zone, text, text, jsonb); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.notification_input_holds(app text, service text, device_token text, push_type text, priority smallint, topic text, payload jsonb, collapse_id text, expires_at timestamp with time zone, send_after timestamp with time zone, idempotency_key text, channel_id text, subscription jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $_$
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
$_$;


--
-- Name: notify_invalid_token(); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.notify_invalid_token() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF coalesce(current_setting('pgpush.invalid_token_feed', true), '') <> 'off' THEN
        PERFORM pg_notify('pgpush_invalid_token', jsonb_build_object('app', t.app, 'service', t.service,
                                                                     'token', t.device_token, 'reason', t.reason)::text)
           FROM listed t;
    END IF;
    RETURN NULL;
END
$$;


--
-- Name: notify_queued(); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.notify_queued() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('pgpush_queued', app)
       FROM (SELECT DISTINCT app FROM new_rows WHERE status = 'queued' AND send_after <= now()) AS due;
    RETURN NULL;
END
$$;


--
-- Name: prune(interval, integer); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.prune(older_than interval, batch_size integer DEFAULT 5000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pgpush'
    SET lock_timeout TO '1s'
    AS $_$
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
$_$;


--
-- Name: release_rate_share(text, text, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.release_rate_share(worker_id text, app text, service text) RETURNS void
    LANGUAGE sql
    AS $$
    UPDATE pgpush.rate_shares s
       SET held = greatest(s.share, CASE WHEN s.held_until > now() THEN s.held ELSE 0 END),
           held_until = now() + interval '1 second', share = 0, expires_at = now()
     WHERE s.app = release_rate_share.app AND s.service = release_rate_share.service
       AND s.worker_id = release_rate_share.worker_id
$$;


--
-- Name: renew_leases(text, bigint[], double precision); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.renew_leases(worker_id text, ids bigint[], lease_seconds double precision) RETURNS SETOF bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
BEGIN
    RETURN QUERY
    UPDATE pgpush.notifications n SET locked_until = now() + make_interval(secs => renew_leases.lease_seconds)
     WHERE n.id = ANY (renew_leases.ids) AND n.status = 'sending' AND n.locked_by = renew_leases.worker_id
    RETURNING n.id;
END
$$;


--
-- Name: requeue(bigint[]); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.requeue(ids bigint[]) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
DECLARE
    requeued bigint[];
    apps text[];
BEGIN
    WITH again AS (
        UPDATE pgpush.notifications n
           SET status = 'queued', attempts = 0, send_after = now(), finished_at = NULL, updated_at = now()
         WHERE n.id = ANY (requeue.ids) AND n.status IN ('failed', 'expired') AND pgpush.session_may_use_app(n.app)
        RETURNING n.id, n.app
    )
    SELECT array_agg(a.id), array_agg(DISTINCT a.app) INTO requeued, apps FROM again a;
    IF requeued IS NULL THEN
        RETURN;
    END IF;
    -- Claims start at the mark; create_history_partitions raises it only past rows that
    -- are final, and waits for this transaction (its SHARE lock) to read these.
    UPDATE pgpush.history_partitioning
       SET claim_from_id = least(claim_from_id, (SELECT min(i) FROM unnest(requeued) AS i));
    PERFORM pg_notify('pgpush_queued', a) FROM unnest(apps) AS a;
    RETURN QUERY SELECT unnest(requeued);
END
$$;


--
-- Name: rescue_expired_leases(integer, integer, text, bigint[]); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.rescue_expired_leases(max_attempts integer, batch_size integer, worker_id text, holding bigint[]) RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    SET enable_seqscan TO 'off'
    SET enable_sort TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
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


--
-- Name: revoke_app(name, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.revoke_app(role name, app text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
BEGIN
    DELETE FROM pgpush.app_grants g WHERE g.role = revoke_app.role AND g.app = revoke_app.app;
    RETURN FOUND;
END
$$;


--
-- Name: session_may_use_app(text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.session_may_use_app(app text) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
    SELECT CASE
        WHEN to_regrole('pgpush_app') IS NULL THEN true
        WHEN (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user) THEN true
        WHEN NOT pg_has_role(session_user, 'pgpush_app', 'MEMBER') THEN true
        ELSE EXISTS (SELECT 1 FROM pgpush.app_grants g
                      WHERE g.role = session_user AND g.app IN (session_may_use_app.app, '*'))
    END
$$;


--
-- Name: take_rate_share(text, text, text, integer, double precision); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.take_rate_share(worker_id text, app text, service text, rate integer, lease_seconds double precision) RETURNS TABLE(share integer, fair integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    -- Sends at a share count for a window after it.
    tail constant interval := interval '1 second';
    live_rate integer;
    claimants integer;
    others integer;
    fair_share integer;
    granted integer;
    mine pgpush.rate_shares;
BEGIN
    -- One worker at a time per app and service: each decides on what the others hold.
    PERFORM pg_advisory_xact_lock(hashtextextended('pgpush.rate_shares/' || take_rate_share.app || '/'
                                                   || take_rate_share.service, 0));
    DELETE FROM pgpush.rate_shares s
     WHERE s.app = take_rate_share.app AND s.service = take_rate_share.service
       AND greatest(s.expires_at, s.held_until) + tail < now();
    SELECT * INTO mine FROM pgpush.rate_shares s
     WHERE s.app = take_rate_share.app AND s.service = take_rate_share.service
       AND s.worker_id = take_rate_share.worker_id;
    SELECT least(take_rate_share.rate, min(s.rate) FILTER (WHERE s.expires_at > now())),
           1 + count(*) FILTER (WHERE s.expires_at > now()),
           coalesce(sum(greatest(CASE WHEN s.expires_at + tail > now() THEN s.share ELSE 0 END,
                                 CASE WHEN s.held_until > now() THEN s.held ELSE 0 END)), 0)
      INTO live_rate, claimants, others
      FROM pgpush.rate_shares s
     WHERE s.app = take_rate_share.app AND s.service = take_rate_share.service
       AND s.worker_id <> take_rate_share.worker_id;
    fair_share := live_rate / claimants;
    granted := least(fair_share, greatest(live_rate - others, 0));
    INSERT INTO pgpush.rate_shares AS s (app, service, worker_id, rate, share, expires_at)
    VALUES (take_rate_share.app, take_rate_share.service, take_rate_share.worker_id, take_rate_share.rate, granted,
            now() + make_interval(secs => take_rate_share.lease_seconds))
    ON CONFLICT (app, service, worker_id) DO UPDATE SET
        rate       = EXCLUDED.rate,
        share      = EXCLUDED.share,
        expires_at = EXCLUDED.expires_at,
        -- Lowered: the worker may go on at the old share (or a larger one still held) until
        -- the old lease ends, whenever this answer reaches it; it counts until a window after.
        held       = CASE WHEN s.share > EXCLUDED.share
                          THEN greatest(s.share, CASE WHEN s.held_until > now() THEN s.held ELSE 0 END)
                          ELSE s.held END,
        held_until = CASE WHEN s.share > EXCLUDED.share THEN greatest(s.expires_at, now()) + tail
                          ELSE s.held_until END;
    RETURN QUERY SELECT granted, fair_share;
END
$$;


--
-- Name: token_key(text, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.token_key(service text, device_token text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN service = 'apns' THEN lower(device_token) ELSE device_token END $$;


--
-- Name: token_registered(text, text, text); Type: FUNCTION; Schema: pgpush; Owner: -
--

CREATE FUNCTION pgpush.token_registered(app text, device_token text, service text DEFAULT 'apns'::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pgpush'
    AS $$
    WITH gone AS (
        DELETE FROM pgpush.invalid_tokens t
         WHERE t.app = token_registered.app AND t.service = token_registered.service
           AND t.device_token = pgpush.token_key(token_registered.service, token_registered.device_token)
           AND pgpush.session_may_use_app(token_registered.app)
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM gone)
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: app_grants; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.app_grants (
    role name NOT NULL,
    app text NOT NULL,
    granted_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT app_grants_app_name_or_star CHECK (((app = '*'::text) OR (app ~ '^[A-Za-z0-9._-]{1,64}$'::text)))
);


--
-- Name: TABLE app_grants; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.app_grants IS 'Per login role of pgpush_app: the apps whose rows it may enqueue, read and cancel (* = every app). Change with pgpush.grant_app / pgpush.revoke_app.';


--
-- Name: app_health; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.app_health (
    app text NOT NULL,
    healthy boolean NOT NULL,
    reason text,
    since timestamp with time zone DEFAULT now() NOT NULL,
    checked_at timestamp with time zone DEFAULT now() NOT NULL,
    worker_id text,
    topic text,
    service text DEFAULT 'apns'::text NOT NULL,
    CONSTRAINT app_health_topic_empty CHECK ((topic <> ''::text))
);


--
-- Name: TABLE app_health; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.app_health IS 'Per app, or per apns-topic of an app: whether workers can send for it, and if not, the reason and since when.';


--
-- Name: COLUMN app_health.topic; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.app_health.topic IS 'null: the whole app; otherwise only this apns-topic of the app is paused or healthy.';


--
-- Name: channels; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.channels (
    app text NOT NULL,
    channel_id text NOT NULL,
    message_storage_policy smallint,
    push_type text DEFAULT 'LiveActivity'::text NOT NULL,
    environment text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    refused_reason text,
    refused_at timestamp with time zone,
    CONSTRAINT channels_app_name_1_to_64_letters_digits_dot_dash CHECK ((app ~ '^[A-Za-z0-9._-]{1,64}$'::text)),
    CONSTRAINT channels_channel_id_not_base64 CHECK (((channel_id ~ '^[A-Za-z0-9+/]+={0,2}$'::text) AND (length(channel_id) <= 1024))),
    CONSTRAINT channels_environment_production_or_sandbox CHECK ((environment = ANY (ARRAY['production'::text, 'sandbox'::text]))),
    CONSTRAINT channels_message_storage_policy_0_or_1 CHECK ((message_storage_policy = ANY (ARRAY[0, 1])))
);


--
-- Name: TABLE channels; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.channels IS 'Live Activity broadcast channels per app: created and deleted by `pgpush channels`, marked by workers when APNs refuses a broadcast to one.';


--
-- Name: delivery_errors; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.delivery_errors (
    id bigint NOT NULL,
    notification_id bigint NOT NULL,
    app text NOT NULL,
    device_token text,
    apns_id uuid,
    attempt integer NOT NULL,
    status integer,
    reason text NOT NULL,
    worker_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    detail text
)
PARTITION BY RANGE (notification_id);


--
-- Name: TABLE delivery_errors; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.delivery_errors IS 'One row per failed delivery attempt: APNs status and reason, or a pgpush reason.';


--
-- Name: COLUMN delivery_errors.apns_unique_id; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.delivery_errors.apns_unique_id IS 'apns-unique-id header of the answer that carried this error, when APNs sent one.';


--
-- Name: COLUMN delivery_errors.channel_id; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.delivery_errors.channel_id IS 'The channel of a broadcast row (device_token is null then).';


--
-- Name: COLUMN delivery_errors.detail; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.delivery_errors.detail IS 'the service''s own words about the refusal (FCM''s error message), or pgpush''s sentence for a row it refused';


--
-- Name: delivery_errors_1; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.delivery_errors_1 (
    id bigint NOT NULL,
    notification_id bigint NOT NULL,
    app text NOT NULL,
    device_token text,
    apns_id uuid,
    attempt integer NOT NULL,
    status integer,
    reason text NOT NULL,
    worker_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    detail text
);


--
-- Name: delivery_errors_1000001; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.delivery_errors_1000001 (
    id bigint NOT NULL,
    notification_id bigint NOT NULL,
    app text NOT NULL,
    device_token text,
    apns_id uuid,
    attempt integer NOT NULL,
    status integer,
    reason text NOT NULL,
    worker_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    detail text
);


--
-- Name: delivery_errors_default; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.delivery_errors_default (
    id bigint NOT NULL,
    notification_id bigint NOT NULL,
    app text NOT NULL,
    device_token text,
    apns_id uuid,
    attempt integer NOT NULL,
    status integer,
    reason text NOT NULL,
    worker_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    detail text
);


--
-- Name: delivery_errors_id_seq; Type: SEQUENCE; Schema: pgpush; Owner: -
--

ALTER TABLE pgpush.delivery_errors ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgpush.delivery_errors_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: error_breakdown; Type: VIEW; Schema: pgpush; Owner: -
--

CREATE VIEW pgpush.error_breakdown WITH (security_invoker='true') AS
 SELECT delivery_errors.app,
    delivery_errors.status,
    delivery_errors.reason,
    count(*) AS errors,
    max(delivery_errors.created_at) AS last_seen
   FROM pgpush.delivery_errors
  WHERE (delivery_errors.created_at >= (now() - '24:00:00'::interval))
  GROUP BY delivery_errors.app, delivery_errors.status, delivery_errors.reason;


--
-- Name: VIEW error_breakdown; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON VIEW pgpush.error_breakdown IS 'Failed attempts per app, HTTP status and reason, last 24 hours.';


--
-- Name: history_partitioning; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.history_partitioning (
    single boolean DEFAULT true NOT NULL,
    partition_span bigint DEFAULT 1000000 NOT NULL,
    partitions_ahead integer DEFAULT 2 NOT NULL,
    notifications_storage text[] DEFAULT '{}'::text[] NOT NULL,
    delivery_errors_storage text[] DEFAULT '{}'::text[] NOT NULL,
    claim_from_id bigint DEFAULT '-9223372036854775808'::bigint NOT NULL,
    CONSTRAINT history_partitioning_partition_span_check CHECK ((partition_span > 0)),
    CONSTRAINT history_partitioning_partitions_ahead_check CHECK (((partitions_ahead >= 1) AND (partitions_ahead <= 100))),
    CONSTRAINT history_partitioning_single_check CHECK (single)
);


--
-- Name: TABLE history_partitioning; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.history_partitioning IS 'How pgpush.notifications and pgpush.delivery_errors are cut into partitions: ids per partition, partitions kept ready ahead, storage parameters of new partitions.';


--
-- Name: COLUMN history_partitioning.claim_from_id; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.history_partitioning.claim_from_id IS 'No row below this id is queued or sending (kept by pgpush.create_history_partitions): claims name it, so PostgreSQL plans them over the partitions at and above it only.';


--
-- Name: notifications; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.notifications (
    id bigint NOT NULL,
    app text DEFAULT 'default'::text NOT NULL,
    device_token text,
    push_type text DEFAULT 'alert'::text NOT NULL,
    priority smallint,
    topic text,
    payload jsonb NOT NULL,
    collapse_id text,
    expires_at timestamp with time zone,
    send_after timestamp with time zone DEFAULT now() NOT NULL,
    idempotency_key text,
    apns_id uuid DEFAULT gen_random_uuid() NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_status integer,
    last_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    locked_by text,
    locked_until timestamp with time zone,
    claim_count integer DEFAULT 0 NOT NULL,
    deliver_once boolean,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    message_id text,
    subscription jsonb,
    lane text DEFAULT 'normal'::text NOT NULL,
    CONSTRAINT notifications_attempts_negative CHECK ((attempts >= 0)),
    CONSTRAINT notifications_input_rules CHECK (((status <> 'queued'::text) OR (claim_count > 0) OR pgpush.notification_input_holds(app, service, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after, idempotency_key, channel_id, subscription))),
    CONSTRAINT notifications_lane_urgent_normal_or_bulk CHECK ((lane = ANY (ARRAY['urgent'::text, 'normal'::text, 'bulk'::text]))),
    CONSTRAINT notifications_sending_needs_lease CHECK (((status <> 'sending'::text) OR ((locked_by IS NOT NULL) AND (locked_until IS NOT NULL)))),
    CONSTRAINT notifications_status_unknown CHECK ((status = ANY (ARRAY['queued'::text, 'sending'::text, 'delivered'::text, 'failed'::text, 'expired'::text, 'cancelled'::text])))
)
PARTITION BY RANGE (id);


--
-- Name: TABLE notifications; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.notifications IS 'One APNs notification to one device. Applications INSERT (or call pgpush.enqueue); pgpush workers claim, send and record the outcome.';


--
-- Name: COLUMN notifications.deliver_once; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.notifications.deliver_once IS 'true: sent with apns-expiration 0 (one try, not stored by APNs); null: derived (true for pushtotalk).';


--
-- Name: COLUMN notifications.apns_unique_id; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.notifications.apns_unique_id IS 'apns-unique-id header of the last APNs answer (sandbox only), for Apple''s delivery log.';


--
-- Name: COLUMN notifications.channel_id; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.notifications.channel_id IS 'Live Activity broadcast channel (base64 id from channel creation); a row has it or a device_token, never both.';


--
-- Name: COLUMN notifications.service; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.notifications.service IS 'apns, fcm (Firebase Cloud Messaging HTTP v1) or webpush: the service the row goes to';


--
-- Name: COLUMN notifications.message_id; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.notifications.message_id IS 'the service''s id of the accepted message: FCM''s name (projects/<p>/messages/<id>); null for APNs rows';


--
-- Name: COLUMN notifications.subscription; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.notifications.subscription IS 'webpush rows only: the browser''s PushSubscription.toJSON(), {"endpoint": "https://...", "keys": {"p256dh": "...", "auth": "..."}}';


--
-- Name: COLUMN notifications.lane; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON COLUMN pgpush.notifications.lane IS 'urgent, normal or bulk: claim order within an app and service (urgent first), then send_after, then id';


--
-- Name: history_partitions; Type: VIEW; Schema: pgpush; Owner: -
--

CREATE VIEW pgpush.history_partitions AS
 SELECT (parent.relname)::text AS table_name,
    (c.oid)::regclass AS partition,
    ("substring"(b.bound, 'FROM \(''(-?[0-9]+)''\)'::text))::bigint AS first_id,
    ("substring"(b.bound, 'TO \(''(-?[0-9]+)''\)'::text))::bigint AS end_id,
    (b.bound = 'DEFAULT'::text) AS is_default,
    (NULLIF(c.reltuples, ('-1'::integer)::double precision))::bigint AS estimated_rows,
    pg_total_relation_size((c.oid)::regclass) AS bytes
   FROM (((pg_inherits i
     JOIN pg_class c ON ((c.oid = i.inhrelid)))
     JOIN pg_class parent ON ((parent.oid = i.inhparent)))
     CROSS JOIN LATERAL ( SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b)
  WHERE (i.inhparent = ANY (ARRAY[('pgpush.notifications'::regclass)::oid, ('pgpush.delivery_errors'::regclass)::oid]));


--
-- Name: VIEW history_partitions; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON VIEW pgpush.history_partitions IS 'Partitions of notifications and delivery_errors: id range (end_id excluded), default or not, estimated rows, bytes on disk.';


--
-- Name: idempotency_keys; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.idempotency_keys (
    app text NOT NULL,
    idempotency_key text NOT NULL,
    notification_id bigint NOT NULL
);


--
-- Name: TABLE idempotency_keys; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.idempotency_keys IS 'Idempotency keys in use per app and the notification holding each; retired with that notification''s partition.';


--
-- Name: invalid_tokens; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.invalid_tokens (
    app text NOT NULL,
    device_token text NOT NULL,
    reason text NOT NULL,
    apple_timestamp timestamp with time zone,
    first_seen timestamp with time zone DEFAULT now() NOT NULL,
    last_seen timestamp with time zone DEFAULT now() NOT NULL,
    times_seen integer DEFAULT 1 NOT NULL,
    service text DEFAULT 'apns'::text NOT NULL
);


--
-- Name: TABLE invalid_tokens; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.invalid_tokens IS 'Device tokens APNs rejected as unregistered, expired, bad, or for another topic.';


--
-- Name: notifications_1; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.notifications_1 (
    id bigint NOT NULL,
    app text DEFAULT 'default'::text NOT NULL,
    device_token text,
    push_type text DEFAULT 'alert'::text NOT NULL,
    priority smallint,
    topic text,
    payload jsonb NOT NULL,
    collapse_id text,
    expires_at timestamp with time zone,
    send_after timestamp with time zone DEFAULT now() NOT NULL,
    idempotency_key text,
    apns_id uuid DEFAULT gen_random_uuid() NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_status integer,
    last_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    locked_by text,
    locked_until timestamp with time zone,
    claim_count integer DEFAULT 0 NOT NULL,
    deliver_once boolean,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    message_id text,
    subscription jsonb,
    lane text DEFAULT 'normal'::text NOT NULL,
    CONSTRAINT notifications_attempts_negative CHECK ((attempts >= 0)),
    CONSTRAINT notifications_input_rules CHECK (((status <> 'queued'::text) OR (claim_count > 0) OR pgpush.notification_input_holds(app, service, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after, idempotency_key, channel_id, subscription))),
    CONSTRAINT notifications_lane_urgent_normal_or_bulk CHECK ((lane = ANY (ARRAY['urgent'::text, 'normal'::text, 'bulk'::text]))),
    CONSTRAINT notifications_sending_needs_lease CHECK (((status <> 'sending'::text) OR ((locked_by IS NOT NULL) AND (locked_until IS NOT NULL)))),
    CONSTRAINT notifications_status_unknown CHECK ((status = ANY (ARRAY['queued'::text, 'sending'::text, 'delivered'::text, 'failed'::text, 'expired'::text, 'cancelled'::text])))
)
WITH (fillfactor='70');


--
-- Name: notifications_1000001; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.notifications_1000001 (
    id bigint NOT NULL,
    app text DEFAULT 'default'::text NOT NULL,
    device_token text,
    push_type text DEFAULT 'alert'::text NOT NULL,
    priority smallint,
    topic text,
    payload jsonb NOT NULL,
    collapse_id text,
    expires_at timestamp with time zone,
    send_after timestamp with time zone DEFAULT now() NOT NULL,
    idempotency_key text,
    apns_id uuid DEFAULT gen_random_uuid() NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_status integer,
    last_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    locked_by text,
    locked_until timestamp with time zone,
    claim_count integer DEFAULT 0 NOT NULL,
    deliver_once boolean,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    message_id text,
    subscription jsonb,
    lane text DEFAULT 'normal'::text NOT NULL,
    CONSTRAINT notifications_attempts_negative CHECK ((attempts >= 0)),
    CONSTRAINT notifications_input_rules CHECK (((status <> 'queued'::text) OR (claim_count > 0) OR pgpush.notification_input_holds(app, service, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after, idempotency_key, channel_id, subscription))),
    CONSTRAINT notifications_lane_urgent_normal_or_bulk CHECK ((lane = ANY (ARRAY['urgent'::text, 'normal'::text, 'bulk'::text]))),
    CONSTRAINT notifications_sending_needs_lease CHECK (((status <> 'sending'::text) OR ((locked_by IS NOT NULL) AND (locked_until IS NOT NULL)))),
    CONSTRAINT notifications_status_unknown CHECK ((status = ANY (ARRAY['queued'::text, 'sending'::text, 'delivered'::text, 'failed'::text, 'expired'::text, 'cancelled'::text])))
)
WITH (fillfactor='70');


--
-- Name: notifications_default; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.notifications_default (
    id bigint NOT NULL,
    app text DEFAULT 'default'::text NOT NULL,
    device_token text,
    push_type text DEFAULT 'alert'::text NOT NULL,
    priority smallint,
    topic text,
    payload jsonb NOT NULL,
    collapse_id text,
    expires_at timestamp with time zone,
    send_after timestamp with time zone DEFAULT now() NOT NULL,
    idempotency_key text,
    apns_id uuid DEFAULT gen_random_uuid() NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_status integer,
    last_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    locked_by text,
    locked_until timestamp with time zone,
    claim_count integer DEFAULT 0 NOT NULL,
    deliver_once boolean,
    apns_unique_id uuid,
    channel_id text,
    service text DEFAULT 'apns'::text NOT NULL,
    message_id text,
    subscription jsonb,
    lane text DEFAULT 'normal'::text NOT NULL,
    CONSTRAINT notifications_attempts_negative CHECK ((attempts >= 0)),
    CONSTRAINT notifications_input_rules CHECK (((status <> 'queued'::text) OR (claim_count > 0) OR pgpush.notification_input_holds(app, service, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after, idempotency_key, channel_id, subscription))),
    CONSTRAINT notifications_lane_urgent_normal_or_bulk CHECK ((lane = ANY (ARRAY['urgent'::text, 'normal'::text, 'bulk'::text]))),
    CONSTRAINT notifications_sending_needs_lease CHECK (((status <> 'sending'::text) OR ((locked_by IS NOT NULL) AND (locked_until IS NOT NULL)))),
    CONSTRAINT notifications_status_unknown CHECK ((status = ANY (ARRAY['queued'::text, 'sending'::text, 'delivered'::text, 'failed'::text, 'expired'::text, 'cancelled'::text])))
)
WITH (fillfactor='70');


--
-- Name: notifications_id_seq; Type: SEQUENCE; Schema: pgpush; Owner: -
--

ALTER TABLE pgpush.notifications ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgpush.notifications_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: queue_depth; Type: VIEW; Schema: pgpush; Owner: -
--

CREATE VIEW pgpush.queue_depth WITH (security_invoker='true') AS
 SELECT notifications.app,
    count(*) FILTER (WHERE ((notifications.status = 'queued'::text) AND (notifications.send_after <= now()))) AS due,
    count(*) FILTER (WHERE ((notifications.status = 'queued'::text) AND (notifications.send_after > now()))) AS scheduled,
    count(*) FILTER (WHERE (notifications.status = 'sending'::text)) AS sending,
    COALESCE(EXTRACT(epoch FROM (now() - min(
        CASE
            WHEN isfinite(notifications.send_after) THEN notifications.send_after
            ELSE notifications.created_at
        END) FILTER (WHERE ((notifications.status = 'queued'::text) AND (notifications.send_after <= now()))))), (0)::numeric) AS oldest_due_seconds
   FROM pgpush.notifications
  WHERE (notifications.status = ANY (ARRAY['queued'::text, 'sending'::text]))
  GROUP BY notifications.app;


--
-- Name: VIEW queue_depth; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON VIEW pgpush.queue_depth IS 'Unfinished notifications per app: due now, scheduled later, being sent, and the age of the oldest due row.';


--
-- Name: rate_shares; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.rate_shares (
    app text NOT NULL,
    service text NOT NULL,
    worker_id text NOT NULL,
    rate integer NOT NULL,
    share integer NOT NULL,
    held integer DEFAULT 0 NOT NULL,
    held_until timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);


--
-- Name: TABLE rate_shares; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.rate_shares IS 'Leases of rate_per_app: worker_id may send share requests/s for app and service until expires_at; held is a larger share it had, still counted until held_until (its last window of sends).';


--
-- Name: schema_migrations; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: throughput; Type: VIEW; Schema: pgpush; Owner: -
--

CREATE VIEW pgpush.throughput WITH (security_invoker='true') AS
 SELECT notifications.app,
    date_trunc('minute'::text, notifications.finished_at) AS minute,
    count(*) FILTER (WHERE (notifications.status = 'delivered'::text)) AS delivered,
    count(*) FILTER (WHERE (notifications.status = 'failed'::text)) AS failed,
    count(*) FILTER (WHERE (notifications.status = 'expired'::text)) AS expired,
    count(*) FILTER (WHERE (notifications.status = 'cancelled'::text)) AS cancelled
   FROM pgpush.notifications
  WHERE (notifications.finished_at >= (now() - '01:00:00'::interval))
  GROUP BY notifications.app, (date_trunc('minute'::text, notifications.finished_at));


--
-- Name: VIEW throughput; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON VIEW pgpush.throughput IS 'Finished notifications per app and minute, last hour.';


--
-- Name: workers; Type: TABLE; Schema: pgpush; Owner: -
--

CREATE TABLE pgpush.workers (
    id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    apps text[] DEFAULT '{}'::text[] NOT NULL,
    connections integer DEFAULT 0 NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    sent bigint DEFAULT 0 NOT NULL,
    delivered bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    retried bigint DEFAULT 0 NOT NULL,
    services text[]
);


--
-- Name: TABLE workers; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON TABLE pgpush.workers IS 'Live pgpush worker processes, with heartbeat and counters since start.';


--
-- Name: unserved_apps; Type: VIEW; Schema: pgpush; Owner: -
--

CREATE VIEW pgpush.unserved_apps AS
 SELECT d.app,
    d.due,
    d.oldest_due_seconds,
    d.service
   FROM ( SELECT n.app,
            n.service,
            count(*) AS due,
            COALESCE(EXTRACT(epoch FROM (now() - min(n.send_after))), (0)::numeric) AS oldest_due_seconds
           FROM pgpush.notifications n
          WHERE ((n.status = 'queued'::text) AND (n.send_after <= now()))
          GROUP BY n.app, n.service) d
  WHERE (NOT (EXISTS ( SELECT 1
           FROM pgpush.workers w
          WHERE ((w.heartbeat_at >= (now() - '00:00:30'::interval)) AND ((((d.app || '/'::text) || d.service) = ANY (w.services)) OR ((w.services IS NULL) AND (d.service = 'apns'::text) AND (d.app = ANY (w.apps))))))));


--
-- Name: VIEW unserved_apps; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON VIEW pgpush.unserved_apps IS 'Apps and services with due notifications that no live worker sends for (heartbeat in the last 30 s): no worker runs, or none holds credentials for that service.';


--
-- Name: worker_health; Type: VIEW; Schema: pgpush; Owner: -
--

CREATE VIEW pgpush.worker_health AS
 SELECT workers.id,
    workers.host,
    workers.pid,
    workers.version,
    workers.apps,
    workers.connections,
    workers.started_at,
    workers.heartbeat_at,
    EXTRACT(epoch FROM (now() - workers.heartbeat_at)) AS seconds_since_heartbeat,
    (workers.heartbeat_at >= (now() - '00:00:30'::interval)) AS alive,
    workers.sent,
    workers.delivered,
    workers.failed,
    workers.retried
   FROM pgpush.workers;


--
-- Name: VIEW worker_health; Type: COMMENT; Schema: pgpush; Owner: -
--

COMMENT ON VIEW pgpush.worker_health IS 'Workers with the age of their last heartbeat; alive = heartbeat in the last 30 s.';


--
-- Name: delivery_errors_1; Type: TABLE ATTACH; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.delivery_errors ATTACH PARTITION pgpush.delivery_errors_1 FOR VALUES FROM ('1') TO ('1000001');


--
-- Name: delivery_errors_1000001; Type: TABLE ATTACH; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.delivery_errors ATTACH PARTITION pgpush.delivery_errors_1000001 FOR VALUES FROM ('1000001') TO ('2000001');


--
-- Name: delivery_errors_default; Type: TABLE ATTACH; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.delivery_errors ATTACH PARTITION pgpush.delivery_errors_default DEFAULT;


--
-- Name: notifications_1; Type: TABLE ATTACH; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.notifications ATTACH PARTITION pgpush.notifications_1 FOR VALUES FROM ('1') TO ('1000001');


--
-- Name: notifications_1000001; Type: TABLE ATTACH; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.notifications ATTACH PARTITION pgpush.notifications_1000001 FOR VALUES FROM ('1000001') TO ('2000001');


--
-- Name: notifications_default; Type: TABLE ATTACH; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.notifications ATTACH PARTITION pgpush.notifications_default DEFAULT;


--
-- Name: app_grants app_grants_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.app_grants
    ADD CONSTRAINT app_grants_pkey PRIMARY KEY (role, app);


--
-- Name: channels channels_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.channels
    ADD CONSTRAINT channels_pkey PRIMARY KEY (app, channel_id);


--
-- Name: delivery_errors delivery_errors_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.delivery_errors
    ADD CONSTRAINT delivery_errors_pkey PRIMARY KEY (id, notification_id);


--
-- Name: delivery_errors_1 delivery_errors_pkey_1; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.delivery_errors_1
    ADD CONSTRAINT delivery_errors_pkey_1 PRIMARY KEY (id, notification_id);


--
-- Name: delivery_errors_1000001 delivery_errors_pkey_1000001; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.delivery_errors_1000001
    ADD CONSTRAINT delivery_errors_pkey_1000001 PRIMARY KEY (id, notification_id);


--
-- Name: delivery_errors_default delivery_errors_pkey_default; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.delivery_errors_default
    ADD CONSTRAINT delivery_errors_pkey_default PRIMARY KEY (id, notification_id);


--
-- Name: history_partitioning history_partitioning_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.history_partitioning
    ADD CONSTRAINT history_partitioning_pkey PRIMARY KEY (single);


--
-- Name: invalid_tokens invalid_tokens_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.invalid_tokens
    ADD CONSTRAINT invalid_tokens_pkey PRIMARY KEY (app, service, device_token);


--
-- Name: idempotency_keys notifications_idempotency; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.idempotency_keys
    ADD CONSTRAINT notifications_idempotency PRIMARY KEY (app, idempotency_key);


--
-- Name: notifications notifications_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.notifications
    ADD CONSTRAINT notifications_pkey PRIMARY KEY (id);


--
-- Name: notifications_1 notifications_pkey_1; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.notifications_1
    ADD CONSTRAINT notifications_pkey_1 PRIMARY KEY (id);


--
-- Name: notifications_1000001 notifications_pkey_1000001; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.notifications_1000001
    ADD CONSTRAINT notifications_pkey_1000001 PRIMARY KEY (id);


--
-- Name: notifications_default notifications_pkey_default; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.notifications_default
    ADD CONSTRAINT notifications_pkey_default PRIMARY KEY (id);


--
-- Name: rate_shares rate_shares_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.rate_shares
    ADD CONSTRAINT rate_shares_pkey PRIMARY KEY (app, service, worker_id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: workers workers_pkey; Type: CONSTRAINT; Schema: pgpush; Owner: -
--

ALTER TABLE ONLY pgpush.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);


--
-- Name: app_health_app_service_topic; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE UNIQUE INDEX app_health_app_service_topic ON pgpush.app_health USING btree (app, service, COALESCE(topic, ''::text));


--
-- Name: delivery_errors_created; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_created ON ONLY pgpush.delivery_errors USING btree (created_at);


--
-- Name: delivery_errors_created_1; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_created_1 ON pgpush.delivery_errors_1 USING btree (created_at);


--
-- Name: delivery_errors_created_1000001; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_created_1000001 ON pgpush.delivery_errors_1000001 USING btree (created_at);


--
-- Name: delivery_errors_created_default; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_created_default ON pgpush.delivery_errors_default USING btree (created_at);


--
-- Name: delivery_errors_notification; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_notification ON ONLY pgpush.delivery_errors USING btree (notification_id);


--
-- Name: delivery_errors_notification_1; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_notification_1 ON pgpush.delivery_errors_1 USING btree (notification_id);


--
-- Name: delivery_errors_notification_1000001; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_notification_1000001 ON pgpush.delivery_errors_1000001 USING btree (notification_id);


--
-- Name: delivery_errors_notification_default; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX delivery_errors_notification_default ON pgpush.delivery_errors_default USING btree (notification_id);


--
-- Name: idempotency_keys_notification; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX idempotency_keys_notification ON pgpush.idempotency_keys USING btree (notification_id);


--
-- Name: notifications_finished; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_finished ON ONLY pgpush.notifications USING btree (finished_at) WHERE (finished_at IS NOT NULL);


--
-- Name: notifications_finished_1; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_finished_1 ON pgpush.notifications_1 USING btree (finished_at) WHERE (finished_at IS NOT NULL);


--
-- Name: notifications_finished_1000001; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_finished_1000001 ON pgpush.notifications_1000001 USING btree (finished_at) WHERE (finished_at IS NOT NULL);


--
-- Name: notifications_finished_default; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_finished_default ON pgpush.notifications_default USING btree (finished_at) WHERE (finished_at IS NOT NULL);


--
-- Name: notifications_queued_due; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_queued_due ON ONLY pgpush.notifications USING btree (app, service, lane, send_after, id) WHERE (status = 'queued'::text);


--
-- Name: notifications_queued_due_1; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_queued_due_1 ON pgpush.notifications_1 USING btree (app, service, lane, send_after, id) WHERE (status = 'queued'::text);


--
-- Name: notifications_queued_due_1000001; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_queued_due_1000001 ON pgpush.notifications_1000001 USING btree (app, service, lane, send_after, id) WHERE (status = 'queued'::text);


--
-- Name: notifications_queued_due_default; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_queued_due_default ON pgpush.notifications_default USING btree (app, service, lane, send_after, id) WHERE (status = 'queued'::text);


--
-- Name: notifications_sending_lease; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_sending_lease ON ONLY pgpush.notifications USING btree (locked_until) WHERE (status = 'sending'::text);


--
-- Name: notifications_sending_lease_1; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_sending_lease_1 ON pgpush.notifications_1 USING btree (locked_until) WHERE (status = 'sending'::text);


--
-- Name: notifications_sending_lease_1000001; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_sending_lease_1000001 ON pgpush.notifications_1000001 USING btree (locked_until) WHERE (status = 'sending'::text);


--
-- Name: notifications_sending_lease_default; Type: INDEX; Schema: pgpush; Owner: -
--

CREATE INDEX notifications_sending_lease_default ON pgpush.notifications_default USING btree (locked_until) WHERE (status = 'sending'::text);


--
-- Name: delivery_errors_created_1; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_created ATTACH PARTITION pgpush.delivery_errors_created_1;


--
-- Name: delivery_errors_created_1000001; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_created ATTACH PARTITION pgpush.delivery_errors_created_1000001;


--
-- Name: delivery_errors_created_default; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_created ATTACH PARTITION pgpush.delivery_errors_created_default;


--
-- Name: delivery_errors_notification_1; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_notification ATTACH PARTITION pgpush.delivery_errors_notification_1;


--
-- Name: delivery_errors_notification_1000001; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_notification ATTACH PARTITION pgpush.delivery_errors_notification_1000001;


--
-- Name: delivery_errors_notification_default; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_notification ATTACH PARTITION pgpush.delivery_errors_notification_default;


--
-- Name: delivery_errors_pkey_1; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_pkey ATTACH PARTITION pgpush.delivery_errors_pkey_1;


--
-- Name: delivery_errors_pkey_1000001; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_pkey ATTACH PARTITION pgpush.delivery_errors_pkey_1000001;


--
-- Name: delivery_errors_pkey_default; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.delivery_errors_pkey ATTACH PARTITION pgpush.delivery_errors_pkey_default;


--
-- Name: notifications_finished_1; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_finished ATTACH PARTITION pgpush.notifications_finished_1;


--
-- Name: notifications_finished_1000001; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_finished ATTACH PARTITION pgpush.notifications_finished_1000001;


--
-- Name: notifications_finished_default; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_finished ATTACH PARTITION pgpush.notifications_finished_default;


--
-- Name: notifications_pkey_1; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_pkey ATTACH PARTITION pgpush.notifications_pkey_1;


--
-- Name: notifications_pkey_1000001; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_pkey ATTACH PARTITION pgpush.notifications_pkey_1000001;


--
-- Name: notifications_pkey_default; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_pkey ATTACH PARTITION pgpush.notifications_pkey_default;


--
-- Name: notifications_queued_due_1; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_queued_due ATTACH PARTITION pgpush.notifications_queued_due_1;


--
-- Name: notifications_queued_due_1000001; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_queued_due ATTACH PARTITION pgpush.notifications_queued_due_1000001;


--
-- Name: notifications_queued_due_default; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_queued_due ATTACH PARTITION pgpush.notifications_queued_due_default;


--
-- Name: notifications_sending_lease_1; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_sending_lease ATTACH PARTITION pgpush.notifications_sending_lease_1;


--
-- Name: notifications_sending_lease_1000001; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_sending_lease ATTACH PARTITION pgpush.notifications_sending_lease_1000001;


--
-- Name: notifications_sending_lease_default; Type: INDEX ATTACH; Schema: pgpush; Owner: -
--

ALTER INDEX pgpush.notifications_sending_lease ATTACH PARTITION pgpush.notifications_sending_lease_default;


--
-- Name: invalid_tokens invalid_tokens_notify_listed; Type: TRIGGER; Schema: pgpush; Owner: -
--

CREATE TRIGGER invalid_tokens_notify_listed AFTER INSERT ON pgpush.invalid_tokens REFERENCING NEW TABLE AS listed FOR EACH STATEMENT EXECUTE FUNCTION pgpush.notify_invalid_token();


--
-- Name: notifications notifications_idempotency_key; Type: TRIGGER; Schema: pgpush; Owner: -
--

CREATE TRIGGER notifications_idempotency_key BEFORE INSERT ON pgpush.notifications FOR EACH ROW WHEN ((new.idempotency_key IS NOT NULL)) EXECUTE FUNCTION pgpush.claim_idempotency_key();


--
-- Name: notifications notifications_notify_queued; Type: TRIGGER; Schema: pgpush; Owner: -
--

CREATE TRIGGER notifications_notify_queued AFTER INSERT ON pgpush.notifications REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION pgpush.notify_queued();


--
-- Name: channels app_by_grant; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY app_by_grant ON pgpush.channels FOR SELECT TO pgpush_app USING ((EXISTS ( SELECT 1
   FROM pgpush.app_grants g
  WHERE ((g.role = CURRENT_USER) AND (g.app = ANY (ARRAY[channels.app, '*'::text]))))));


--
-- Name: delivery_errors app_by_grant; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY app_by_grant ON pgpush.delivery_errors TO pgpush_app USING ((EXISTS ( SELECT 1
   FROM pgpush.app_grants g
  WHERE ((g.role = CURRENT_USER) AND (g.app = ANY (ARRAY[delivery_errors.app, '*'::text])))))) WITH CHECK ((EXISTS ( SELECT 1
   FROM pgpush.app_grants g
  WHERE ((g.role = CURRENT_USER) AND (g.app = ANY (ARRAY[delivery_errors.app, '*'::text]))))));


--
-- Name: invalid_tokens app_by_grant; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY app_by_grant ON pgpush.invalid_tokens TO pgpush_app USING ((EXISTS ( SELECT 1
   FROM pgpush.app_grants g
  WHERE ((g.role = CURRENT_USER) AND (g.app = ANY (ARRAY[invalid_tokens.app, '*'::text])))))) WITH CHECK ((EXISTS ( SELECT 1
   FROM pgpush.app_grants g
  WHERE ((g.role = CURRENT_USER) AND (g.app = ANY (ARRAY[invalid_tokens.app, '*'::text]))))));


--
-- Name: notifications app_by_grant; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY app_by_grant ON pgpush.notifications TO pgpush_app USING ((EXISTS ( SELECT 1
   FROM pgpush.app_grants g
  WHERE ((g.role = CURRENT_USER) AND (g.app = ANY (ARRAY[notifications.app, '*'::text])))))) WITH CHECK ((EXISTS ( SELECT 1
   FROM pgpush.app_grants g
  WHERE ((g.role = CURRENT_USER) AND (g.app = ANY (ARRAY[notifications.app, '*'::text]))))));


--
-- Name: app_grants; Type: ROW SECURITY; Schema: pgpush; Owner: -
--

ALTER TABLE pgpush.app_grants ENABLE ROW LEVEL SECURITY;

--
-- Name: channels; Type: ROW SECURITY; Schema: pgpush; Owner: -
--

ALTER TABLE pgpush.channels ENABLE ROW LEVEL SECURITY;

--
-- Name: delivery_errors; Type: ROW SECURITY; Schema: pgpush; Owner: -
--

ALTER TABLE pgpush.delivery_errors ENABLE ROW LEVEL SECURITY;

--
-- Name: invalid_tokens; Type: ROW SECURITY; Schema: pgpush; Owner: -
--

ALTER TABLE pgpush.invalid_tokens ENABLE ROW LEVEL SECURITY;

--
-- Name: channels monitor_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY monitor_reads ON pgpush.channels FOR SELECT TO pgpush_monitor USING (true);


--
-- Name: delivery_errors monitor_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY monitor_reads ON pgpush.delivery_errors FOR SELECT TO pgpush_monitor USING (true);


--
-- Name: invalid_tokens monitor_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY monitor_reads ON pgpush.invalid_tokens FOR SELECT TO pgpush_monitor USING (true);


--
-- Name: notifications monitor_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY monitor_reads ON pgpush.notifications FOR SELECT TO pgpush_monitor USING (true);


--
-- Name: notifications; Type: ROW SECURITY; Schema: pgpush; Owner: -
--

ALTER TABLE pgpush.notifications ENABLE ROW LEVEL SECURITY;

--
-- Name: app_grants own_grants; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY own_grants ON pgpush.app_grants FOR SELECT TO pgpush_app USING ((role = CURRENT_USER));


--
-- Name: channels worker_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_reads ON pgpush.channels FOR SELECT TO pgpush_worker USING (true);


--
-- Name: delivery_errors worker_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_reads ON pgpush.delivery_errors FOR SELECT TO pgpush_worker USING (true);


--
-- Name: invalid_tokens worker_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_reads ON pgpush.invalid_tokens FOR SELECT TO pgpush_worker USING (true);


--
-- Name: notifications worker_reads; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_reads ON pgpush.notifications FOR SELECT TO pgpush_worker USING (true);


--
-- Name: channels worker_updates; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_updates ON pgpush.channels FOR UPDATE TO pgpush_worker USING (true) WITH CHECK (true);


--
-- Name: invalid_tokens worker_updates; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_updates ON pgpush.invalid_tokens FOR UPDATE TO pgpush_worker USING (true) WITH CHECK (true);


--
-- Name: notifications worker_updates_unfinished; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_updates_unfinished ON pgpush.notifications FOR UPDATE TO pgpush_worker USING ((status = ANY (ARRAY['queued'::text, 'sending'::text]))) WITH CHECK (true);


--
-- Name: channels worker_writes; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_writes ON pgpush.channels FOR INSERT TO pgpush_worker WITH CHECK (true);


--
-- Name: delivery_errors worker_writes; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_writes ON pgpush.delivery_errors FOR INSERT TO pgpush_worker WITH CHECK (true);


--
-- Name: invalid_tokens worker_writes; Type: POLICY; Schema: pgpush; Owner: -
--

CREATE POLICY worker_writes ON pgpush.invalid_tokens FOR INSERT TO pgpush_worker WITH CHECK (true);


--
-- PostgreSQL database dump complete
--


