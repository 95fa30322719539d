-- pgpush schema, part 19: the claim says each row's lane.
--
-- Rows already claimed wait in the worker for a connection and the rate (up to a second's
-- worth at the cap). Until now they waited there in one line, so an urgent row claimed
-- behind a second of campaign rows was sent after them. The claim now returns each row's
-- lane (a last column: a worker that reads the columns before it is unaffected), and the
-- worker lets the waiting requests through lane by lane.
--
-- A function's result columns cannot be replaced in place: the claim is dropped and made
-- again, with the same body and arguments, and the roles' grants are applied again.

DROP FUNCTION pgpush.claim(text, text, text, integer, double precision, boolean, bigint, double precision);

CREATE FUNCTION pgpush.claim(worker_id text, app text, service text, claim_limit integer,
                                        lease_seconds double precision, skip_known_invalid boolean, lowest_id bigint,
                                        look_back_seconds double precision)
RETURNS TABLE (id bigint, status text, claim_count integer, attempts integer, device_token text, push_type text,
               priority smallint, topic text, payload jsonb, collapse_id text, expiration bigint, apns_id uuid,
               deliver_once boolean, channel_id text, subscription jsonb, lane text)
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
REVOKE ALL ON FUNCTION pgpush.claim(text, text, text, integer, double precision, boolean, bigint, double precision)
  FROM PUBLIC;

DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
    END IF;
END
$$;
