-- pgpush schema, part 7: each application reads and changes only the rows of
-- the apps it was granted. Until now any member of pgpush_app could enqueue
-- for every app, read every app's payloads, tokens and errors, cancel other
-- apps' rows through pgpush.cancel, and take another app's idempotency keys.
--
-- The grants live in pgpush.app_grants; row-level security on notifications,
-- delivery_errors and invalid_tokens enforces them for direct queries and for
-- pgpush.enqueue / enqueue_many (which run with the caller's rights), and the
-- SECURITY DEFINER functions (cancel, token_registered) check them
-- themselves, since they run as the owner, whom row-level security skips.
-- The policies name the roles of sql/roles.sql, so they are made by
-- pgpush.apply_row_security(): here when those roles already exist, else by
-- roles.sql when it creates them.
--
-- Safe on a filled database and safe to run again by hand.

-- Which login role may use which app ('*' = every app). Keyed by role name:
-- drop the grants of a role you drop (pgpush.revoke_app), or a new role of
-- the same name inherits them.
CREATE TABLE IF NOT EXISTS pgpush.app_grants (
    role       name        NOT NULL,
    app        text        NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (role, app),
    CONSTRAINT app_grants_app_name_or_star CHECK (app = '*' OR app ~ '^[A-Za-z0-9._-]{1,64}$')
);
COMMENT ON TABLE pgpush.app_grants IS
    'Per login role of pgpush_app: the apps whose rows it may enqueue, read and cancel (* = every app). Change with pgpush.grant_app / pgpush.revoke_app.';

-- Gives `role` the rows of `app` ('*' for all). Returns false when it already
-- had them. Not SECURITY DEFINER: only the owner (or a superuser), who may
-- write app_grants anyway, can run it.
CREATE OR REPLACE FUNCTION pgpush.grant_app(role name, app text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
BEGIN
    -- A typo would otherwise grant nothing to anyone, silently.
    IF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = grant_app.role) THEN
        RAISE EXCEPTION 'pgpush.grant_app: role "%" does not exist', grant_app.role USING ERRCODE = 'undefined_object';
    END IF;
    INSERT INTO pgpush.app_grants (role, app) VALUES (grant_app.role, grant_app.app) ON CONFLICT DO NOTHING;
    RETURN FOUND;
END
$$;
REVOKE ALL ON FUNCTION pgpush.grant_app(name, text) FROM PUBLIC;

-- Takes a grant back; returns whether there was one. Rows already enqueued
-- stay queued and are sent.
CREATE OR REPLACE FUNCTION pgpush.revoke_app(role name, app text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pgpush AS $$
BEGIN
    DELETE FROM pgpush.app_grants g WHERE g.role = revoke_app.role AND g.app = revoke_app.app;
    RETURN FOUND;
END
$$;
REVOKE ALL ON FUNCTION pgpush.revoke_app(name, text) FROM PUBLIC;

-- For SECURITY DEFINER functions: may the session's login role use `app`?
-- Inside such a function current_user is the owner, so the caller is
-- session_user (a SET ROLE inside the session does not change it; the login
-- role's own grants count). Who is not a member of pgpush_app (the owner, a
-- superuser, an administrator given EXECUTE by hand) is not a tenant and may
-- use every app; nor is anyone before roles.sql created pgpush_app.
CREATE OR REPLACE FUNCTION pgpush.session_may_use_app(app text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pgpush AS $$
    SELECT CASE
        WHEN to_regrole('pgpush_app') IS NULL THEN true
        WHEN (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user) THEN true
        WHEN NOT pg_has_role(session_user, 'pgpush_app', 'MEMBER') THEN true
        ELSE EXISTS (SELECT 1 FROM pgpush.app_grants g
                      WHERE g.role = session_user AND g.app IN (session_may_use_app.app, '*'))
    END
$$;
REVOKE ALL ON FUNCTION pgpush.session_may_use_app(text) FROM PUBLIC;

-- Cancel as in 004, for the apps the caller may use only: an id of another
-- app's row is skipped as if it were not queued.
CREATE OR REPLACE FUNCTION pgpush.cancel(ids bigint[]) RETURNS SETOF bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pgpush AS $$
    UPDATE pgpush.notifications n
       SET status = 'cancelled', finished_at = now(), updated_at = now()
     WHERE n.id = ANY(cancel.ids) AND n.status = 'queued' AND pgpush.session_may_use_app(n.app)
    RETURNING n.id
$$;
REVOKE ALL ON FUNCTION pgpush.cancel(bigint[]) FROM PUBLIC;

-- token_registered as in 005, for the apps the caller may use only.
CREATE OR REPLACE FUNCTION pgpush.token_registered(app text, device_token text) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pgpush AS $$
    WITH gone AS (
        DELETE FROM pgpush.invalid_tokens t
         WHERE t.app = token_registered.app AND t.device_token = lower(token_registered.device_token)
           AND pgpush.session_may_use_app(token_registered.app)
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM gone)
$$;
REVOKE ALL ON FUNCTION pgpush.token_registered(text, text) FROM PUBLIC;

-- The views read the tables with the reader's rights, so row-level security
-- applies to them: an application sees the depth, throughput and errors of
-- its own apps only. (A view otherwise reads with its owner's rights, and the
-- owner skips row-level security.)
ALTER VIEW pgpush.queue_depth SET (security_invoker = true);
ALTER VIEW pgpush.throughput SET (security_invoker = true);
ALTER VIEW pgpush.error_breakdown SET (security_invoker = true);

-- Apps with due rows that no live worker serves: they would wait for ever, and an
-- autoscaler counting them would add workers that cannot send them either. Read with
-- the owner's rights (it joins pgpush.workers), so it is for monitors and workers only:
-- it names every app.
CREATE OR REPLACE VIEW pgpush.unserved_apps AS
SELECT n.app, count(*) AS due,
       coalesce(extract(epoch FROM now() - min(n.send_after)), 0) AS oldest_due_seconds
  FROM pgpush.notifications n
 WHERE n.status = 'queued' AND n.send_after <= now()
   AND NOT EXISTS (SELECT 1 FROM pgpush.workers w
                    WHERE w.heartbeat_at >= now() - interval '30 seconds' AND n.app = ANY (w.apps))
 GROUP BY n.app;
COMMENT ON VIEW pgpush.unserved_apps IS 'Apps with due notifications that no live worker serves (heartbeat in the last 30 s).';

-- The privileges of the three roles of roles.sql and the row-level security
-- that goes with them, made again from scratch on every call (REVOKE ALL
-- first, DROP POLICY IF EXISTS), so that running it twice, or after an older
-- roles.sql, leaves exactly this. Needs those roles: this migration runs it
-- when they exist, roles.sql runs it after creating them.
--   pgpush_app:     enqueue (INSERT, enqueue, enqueue_many), read, cancel and
--                   clear re-registered tokens, for the rows of its granted
--                   apps only; its own grants; the views (its rows only).
--                   No UPDATE or DELETE.
--   pgpush_worker:  reads every row; updates only the columns a worker owns
--                   (NotificationQueue.swift writes exactly these), and only
--                   on unfinished rows, so a cancelled or delivered row stays
--                   so; writes errors, invalid tokens, heartbeats, health;
--                   prunes. No INSERT into the queue.
--   pgpush_monitor: states, counts, reasons and times of every row; never a
--                   payload, device token, collapse id or idempotency key.
-- A role in two of these groups gets the union of both: keep them apart.
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
                  pgpush.app_health, pgpush.app_grants, pgpush.queue_depth, pgpush.throughput,
                  pgpush.error_breakdown, pgpush.worker_health, pgpush.unserved_apps
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    REVOKE ALL ON FUNCTION
        pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean),
        pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean),
        pgpush.cancel(bigint[]), pgpush.token_registered(text, text), pgpush.prune(interval, integer)
      FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT USAGE ON SCHEMA pgpush TO pgpush_app, pgpush_worker, pgpush_monitor;
    -- `pgpush doctor` reports the schema version as whichever role it runs as.
    REVOKE ALL ON pgpush.schema_migrations FROM pgpush_app, pgpush_worker, pgpush_monitor;
    GRANT SELECT ON pgpush.schema_migrations TO pgpush_app, pgpush_worker, pgpush_monitor;

    GRANT SELECT ON pgpush.notifications, pgpush.delivery_errors, pgpush.invalid_tokens, pgpush.app_grants,
                    pgpush.queue_depth, pgpush.throughput, pgpush.error_breakdown
       TO pgpush_app;
    GRANT INSERT (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after,
                  idempotency_key, apns_id, deliver_once)
       ON pgpush.notifications TO pgpush_app;
    GRANT EXECUTE ON FUNCTION
        pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean),
        pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean),
        pgpush.cancel(bigint[]), pgpush.token_registered(text, text)
       TO pgpush_app;

    GRANT SELECT ON pgpush.notifications TO pgpush_worker;
    GRANT UPDATE (status, attempts, claim_count, locked_by, locked_until, last_status, last_reason,
                  apns_unique_id, send_after, finished_at, updated_at)
       ON pgpush.notifications TO pgpush_worker;
    GRANT SELECT, INSERT ON pgpush.delivery_errors TO pgpush_worker;
    GRANT SELECT, INSERT ON pgpush.invalid_tokens TO pgpush_worker;
    GRANT UPDATE (reason, apple_timestamp, last_seen, times_seen) ON pgpush.invalid_tokens TO pgpush_worker;
    GRANT SELECT, INSERT, UPDATE, DELETE ON pgpush.workers, pgpush.app_health TO pgpush_worker;
    GRANT SELECT ON pgpush.queue_depth, pgpush.throughput, pgpush.error_breakdown, pgpush.worker_health,
                    pgpush.unserved_apps
       TO pgpush_worker;
    GRANT EXECUTE ON FUNCTION pgpush.prune(interval, integer) TO pgpush_worker;

    GRANT SELECT (id, app, push_type, priority, topic, status, attempts, claim_count, last_status, last_reason,
                  send_after, expires_at, created_at, updated_at, finished_at, locked_by, locked_until,
                  apns_id, apns_unique_id, deliver_once)
       ON pgpush.notifications TO pgpush_monitor;
    GRANT SELECT (id, notification_id, app, apns_id, attempt, status, reason, worker_id, created_at, apns_unique_id)
       ON pgpush.delivery_errors TO pgpush_monitor;
    GRANT SELECT (app, reason, apple_timestamp, first_seen, last_seen, times_seen)
       ON pgpush.invalid_tokens TO pgpush_monitor;
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
END
$$;
REVOKE ALL ON FUNCTION pgpush.apply_role_privileges() FROM PUBLIC;

-- Where roles.sql already ran: its older grants gave pgpush_app every row
-- (through pgpush_monitor, which it was a member of) and pgpush_worker and
-- pgpush_monitor whole tables. Replace them now, so no application keeps
-- reading other apps' rows until someone runs roles.sql again. Taking
-- pgpush_monitor away from pgpush_app needs a superuser or CREATEROLE; without
-- those, a warning says to run roles.sql (until then the app role still reads
-- through the monitor's policies).
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('pgpush_app', 'pgpush_worker', 'pgpush_monitor')) = 3 THEN
        PERFORM pgpush.apply_role_privileges();
        IF pg_has_role('pgpush_app', 'pgpush_monitor', 'MEMBER') THEN
            BEGIN
                REVOKE pgpush_monitor FROM pgpush_app;
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE WARNING 'pgpush: pgpush_app is still a member of pgpush_monitor; run sql/roles.sql as a superuser';
            END;
        END IF;
    END IF;
END
$$;
