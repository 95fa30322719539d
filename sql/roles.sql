-- Least-privilege roles for pgpush (optional; run after `pgpush migrate`, as
-- the schema owner or a superuser). Safe to run again.
--
--   pgpush_app      applications: enqueue, cancel their rows, clear a re-registered token, read status and views
--   pgpush_worker   `pgpush run`: claim, record outcomes, heartbeat, prune
--   pgpush_monitor  dashboards and `pgpush status`: read-only
--
-- They are group roles without LOGIN; grant them to login roles:
--   CREATE ROLE shop_backend LOGIN PASSWORD '…' IN ROLE pgpush_app;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_app') THEN CREATE ROLE pgpush_app NOLOGIN; END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_worker') THEN CREATE ROLE pgpush_worker NOLOGIN; END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_monitor') THEN CREATE ROLE pgpush_monitor NOLOGIN; END IF;
END
$$;

GRANT USAGE ON SCHEMA pgpush TO pgpush_app, pgpush_worker, pgpush_monitor;

-- Monitoring: the views and tables, read-only.
GRANT SELECT ON pgpush.queue_depth, pgpush.throughput, pgpush.error_breakdown, pgpush.worker_health,
                pgpush.app_health, pgpush.invalid_tokens, pgpush.workers, pgpush.delivery_errors,
                pgpush.notifications
   TO pgpush_monitor;

-- Applications: insert rows (directly or through enqueue), read everything a
-- monitor reads, cancel through pgpush.cancel, take a token registered again
-- off pgpush.invalid_tokens through pgpush.token_registered. No UPDATE or
-- DELETE: an application cannot mark a row delivered or erase its history.
GRANT pgpush_monitor TO pgpush_app;
GRANT INSERT (app, device_token, push_type, priority, topic, payload, collapse_id, expires_at, send_after,
              idempotency_key, apns_id, deliver_once)
   ON pgpush.notifications TO pgpush_app;
GRANT EXECUTE ON FUNCTION pgpush.enqueue(text, jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean),
                          pgpush.enqueue_many(text[], jsonb, text, text, integer, text, text, timestamptz, timestamptz, text, boolean),
                          pgpush.cancel(bigint[]),
                          pgpush.token_registered(text, text)
   TO pgpush_app;

-- Workers: claim and update rows, record errors, tokens, health and
-- heartbeats, prune. No INSERT into the queue, no DDL.
GRANT SELECT, UPDATE ON pgpush.notifications TO pgpush_worker;
GRANT SELECT, INSERT ON pgpush.delivery_errors TO pgpush_worker;
GRANT SELECT, INSERT, UPDATE ON pgpush.invalid_tokens TO pgpush_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON pgpush.workers, pgpush.app_health TO pgpush_worker;
GRANT SELECT ON pgpush.queue_depth, pgpush.throughput, pgpush.error_breakdown, pgpush.worker_health TO pgpush_worker;
GRANT EXECUTE ON FUNCTION pgpush.prune(interval, integer) TO pgpush_worker;
