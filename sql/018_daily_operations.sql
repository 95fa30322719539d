-- pgpush schema, part 18: daily operations: lanes, requeue, a feed of dead tokens, and a
-- rate per app shared by every worker.
--
-- Lanes. A row's `lane` (urgent, normal or bulk; normal by default) orders the claim
-- within an app and service: every due urgent row before any normal one, normal before
-- bulk, then by send_after and id as before. A one-time code inserted behind a campaign
-- of 100,000 bulk rows is taken by the next claim. The due rows' index leads with the
-- lane, and the claim reads it one lane at a time, so that each lane's scan is bounded by
-- send_after as the one scan was: rows scheduled for later in one lane are never read
-- on the way to the next.
--
-- Requeue. pgpush.requeue(ids) puts failed and expired rows back to queued with no
-- attempts counted, for after a fault now fixed (a certificate renewed late, a service
-- down longer than the retries). It keeps expires_at: a row already past it expires
-- again. A member of pgpush_app requeues only rows of its apps, as with cancel. Rows
-- below the claims' starting mark (claim_from_id, 009) lower it: until now a final row
-- never became queued again.
--
-- Dead-token feed. A token newly listed in invalid_tokens is announced with
-- NOTIFY pgpush_invalid_token, its payload JSON {"app", "service", "token", "reason"}
-- (the token as invalid_tokens keeps it: APNs tokens in lower case, a Web Push
-- subscription by its endpoint). A token seen dead again is not announced again. Any
-- role that can connect to the database can LISTEN to any channel: where tenants share
-- a database and must not learn each other's dead tokens, set
-- pgpush.invalid_token_feed to off for the workers' role (ALTER ROLE ... SET).
--
-- Rate per app. A worker whose app sets rate_per_app sends for that app and service only
-- within a share of the rate it leases here, renewed every second: the live workers'
-- shares never add up to more than the rate, whoever comes and goes. A share is the rate
-- divided by the live workers; a newcomer gets what is free at once and the rest as the
-- others, at their next renewal, lower theirs. A worker may send at a share until its
-- lease ends, by its own clock measured from before it asked, whenever the answer that
-- lowers it arrives: so a lowered share still counts until the old lease's end and a
-- window after (held, held_until), and a lease that ended counts for the window after
-- its end: a worker's last second of sends at the old share never meets the next
-- holder's first. A worker that cannot renew stops sending for the app when its lease ends.
--
-- Written like 005-017: safe on a filled database and safe to run again by hand.

-- A constant default makes ADD COLUMN a catalog change only; the rule is checked
-- without holding writers back (NOT VALID, then VALIDATE).
ALTER TABLE pgpush.notifications ADD COLUMN IF NOT EXISTS lane text NOT NULL DEFAULT 'normal';
COMMENT ON COLUMN pgpush.notifications.lane IS
    'urgent, normal or bulk: claim order within an app and service (urgent first), then send_after, then id';
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass
                      AND conname = 'notifications_lane_urgent_normal_or_bulk') THEN
        ALTER TABLE pgpush.notifications ADD CONSTRAINT notifications_lane_urgent_normal_or_bulk
            CHECK (lane IN ('urgent', 'normal', 'bulk')) NOT VALID;
        ALTER TABLE pgpush.notifications VALIDATE CONSTRAINT notifications_lane_urgent_normal_or_bulk;
    END IF;
END
$$;

-- The due rows' index, by lane. Each partition's index is named after the parent's, as
-- create_history_partition (009) names them.
DO $$
DECLARE
    index record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = 'pgpush' AND indexname = 'notifications_queued_due'
                      AND indexdef LIKE '%(app, service, lane, send_after, id)%') THEN
        DROP INDEX IF EXISTS pgpush.notifications_queued_due;
        CREATE INDEX notifications_queued_due ON pgpush.notifications (app, service, lane, send_after, id)
            WHERE status = 'queued';
        FOR index IN
            SELECT child.relname AS name, substr(part.relname, length('notifications_') + 1) AS suffix
              FROM pg_inherits h JOIN pg_class child ON child.oid = h.inhrelid
              JOIN pg_index i ON i.indexrelid = child.oid JOIN pg_class part ON part.oid = i.indrelid
             WHERE h.inhparent = 'pgpush.notifications_queued_due'::regclass
        LOOP
            EXECUTE format('ALTER INDEX pgpush.%I RENAME TO %I', index.name, 'notifications_queued_due_' || index.suffix);
        END LOOP;
    END IF;
END
$$;

-- As 017's claim, one lane after the other. Its result is unchanged: replaced in place.
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


-- enqueue and enqueue_many take a lane by name, last (every call written before keeps
-- its meaning); null is normal. A new parameter means a new function: the old ones go,
-- with their grants (apply_role_privileges below grants the new ones).
DROP FUNCTION IF EXISTS pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean,
                                       text, jsonb);
DROP FUNCTION IF EXISTS pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text,
                                            boolean, text, jsonb);
DROP FUNCTION IF EXISTS pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text,
                                       text);

CREATE OR REPLACE FUNCTION pgpush.enqueue(
    device_token text DEFAULT NULL, payload jsonb DEFAULT NULL, app text DEFAULT 'default', push_type text DEFAULT 'alert',
    priority integer DEFAULT NULL, topic text DEFAULT NULL, collapse_id text DEFAULT NULL,
    expires_at timestamptz DEFAULT NULL, send_after timestamptz DEFAULT now(), idempotency_key text DEFAULT NULL,
    deliver_once boolean DEFAULT NULL, service text DEFAULT NULL, subscription jsonb DEFAULT NULL,
    lane text DEFAULT 'normal')
RETURNS bigint
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

-- A broadcast (an APNs channel) or an FCM topic, by channel_id.
CREATE OR REPLACE FUNCTION pgpush.enqueue(
    channel_id varchar, payload jsonb, app text DEFAULT 'default', priority integer DEFAULT NULL,
    topic text DEFAULT NULL, expires_at timestamptz DEFAULT NULL, send_after timestamptz DEFAULT now(),
    idempotency_key text DEFAULT NULL, deliver_once boolean DEFAULT NULL, push_type text DEFAULT NULL,
    service text DEFAULT 'apns', lane text DEFAULT 'normal')
RETURNS bigint
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

-- One payload to many device tokens, or to many subscriptions (a JSON array of
-- them). With a key, each row's key is `<key>:<device token>` or `<key>:<endpoint>`.
CREATE OR REPLACE FUNCTION pgpush.enqueue_many(
    device_tokens text[] DEFAULT NULL, payload jsonb DEFAULT NULL, app text DEFAULT 'default',
    push_type text DEFAULT 'alert', priority integer DEFAULT NULL, topic text DEFAULT NULL,
    collapse_id text DEFAULT NULL, expires_at timestamptz DEFAULT NULL, send_after timestamptz DEFAULT now(),
    idempotency_key text DEFAULT NULL, deliver_once boolean DEFAULT NULL, service text DEFAULT NULL,
    subscriptions jsonb DEFAULT NULL, lane text DEFAULT 'normal')
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

REVOKE ALL ON FUNCTION
    pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text, jsonb,
                   text),
    pgpush.enqueue(varchar, jsonb, text, integer, text, timestamptz, timestamptz, text, boolean, text, text, text),
    pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean, text,
                        jsonb, text)
  FROM PUBLIC;

-- Failed and expired rows back to queued, as if new: no attempts counted, due now.
-- Returns the ids requeued; ids of rows in another state, or of apps the caller may not
-- use, are left as they are.
CREATE OR REPLACE FUNCTION pgpush.requeue(ids bigint[]) RETURNS SETOF bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pgpush
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
REVOKE ALL ON FUNCTION pgpush.requeue(bigint[]) FROM PUBLIC;

-- The dead-token feed: rows inserted into invalid_tokens (a token seen dead again
-- updates its row, and is not announced again).
CREATE OR REPLACE FUNCTION pgpush.notify_invalid_token() RETURNS trigger
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
DROP TRIGGER IF EXISTS invalid_tokens_notify_listed ON pgpush.invalid_tokens;
CREATE TRIGGER invalid_tokens_notify_listed AFTER INSERT ON pgpush.invalid_tokens
    REFERENCING NEW TABLE AS listed FOR EACH STATEMENT EXECUTE FUNCTION pgpush.notify_invalid_token();


-- Rate per app: each worker's share, per app and service.
CREATE TABLE IF NOT EXISTS pgpush.rate_shares (
    app        text NOT NULL,
    service    text NOT NULL,
    worker_id  text NOT NULL,
    rate       integer NOT NULL,
    share      integer NOT NULL,
    held       integer NOT NULL DEFAULT 0,
    held_until timestamptz NOT NULL DEFAULT '-infinity',
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (app, service, worker_id)
);
COMMENT ON TABLE pgpush.rate_shares IS
    'Leases of rate_per_app: worker_id may send share requests/s for app and service until expires_at; '
    'held is a larger share it had, still counted until held_until (its last window of sends).';

-- Leases (or renews) the worker's share of `rate` requests/s for the app and service, for
-- `lease_seconds`; returns the share granted and the fair share (the rate over the live
-- workers), which it reaches once the others have lowered theirs. Workers configured with
-- different rates share the lowest.
CREATE OR REPLACE FUNCTION pgpush.take_rate_share(worker_id text, app text, service text, rate integer,
                                                  lease_seconds double precision)
RETURNS TABLE (share integer, fair integer)
LANGUAGE plpgsql VOLATILE
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

-- A worker that has stopped sending for the app and service gives its share back; it
-- still counts for the window after its last send.
CREATE OR REPLACE FUNCTION pgpush.release_rate_share(worker_id text, app text, service text) RETURNS void
LANGUAGE sql VOLATILE
AS $$
    UPDATE pgpush.rate_shares s
       SET held = greatest(s.share, CASE WHEN s.held_until > now() THEN s.held ELSE 0 END),
           held_until = now() + interval '1 second', share = 0, expires_at = now()
     WHERE s.app = release_rate_share.app AND s.service = release_rate_share.service
       AND s.worker_id = release_rate_share.worker_id
$$;
REVOKE ALL ON FUNCTION pgpush.take_rate_share(text, text, text, integer, double precision),
                       pgpush.release_rate_share(text, text, text)
  FROM PUBLIC;

-- As 017's, with lanes, requeue and rate shares.
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
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges() FROM PUBLIC;

-- Where roles.sql already ran, the roles get the new privileges now.
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
    END IF;
END
$$;
