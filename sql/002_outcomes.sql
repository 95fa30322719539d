-- pgpush schema, part 2: what workers record besides the row's own status.

-- One row per APNs error (or local failure) of one attempt.
CREATE TABLE pgpush.delivery_errors (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notification_id bigint      NOT NULL,
    app             text        NOT NULL,
    device_token    text        NOT NULL,
    apns_id         uuid,
    attempt         integer     NOT NULL,
    status          integer,            -- HTTP status; null when no response came
    reason          text        NOT NULL,
    worker_id       text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgpush.delivery_errors IS 'One row per failed delivery attempt: APNs status and reason, or a pgpush reason.';
CREATE INDEX delivery_errors_notification ON pgpush.delivery_errors (notification_id);
CREATE INDEX delivery_errors_created ON pgpush.delivery_errors (created_at);

-- Tokens APNs reported as no longer valid. Apps read this to stop sending to
-- them; `apple_timestamp` is when Apple last saw the token invalid (410), so
-- a token registered again after it is valid again.
CREATE TABLE pgpush.invalid_tokens (
    app             text        NOT NULL,
    device_token    text        NOT NULL,
    reason          text        NOT NULL,
    apple_timestamp timestamptz,
    first_seen      timestamptz NOT NULL DEFAULT now(),
    last_seen       timestamptz NOT NULL DEFAULT now(),
    times_seen      integer     NOT NULL DEFAULT 1,
    PRIMARY KEY (app, device_token)
);
COMMENT ON TABLE pgpush.invalid_tokens IS 'Device tokens APNs rejected as unregistered, expired, bad, or for another topic.';

-- One row per live worker process; the heartbeat says it is alive.
CREATE TABLE pgpush.workers (
    id              text        PRIMARY KEY,
    host            text        NOT NULL,
    pid             integer     NOT NULL,
    version         text        NOT NULL,
    apps            text[]      NOT NULL DEFAULT '{}',
    connections     integer     NOT NULL DEFAULT 0,
    started_at      timestamptz NOT NULL DEFAULT now(),
    heartbeat_at    timestamptz NOT NULL DEFAULT now(),
    sent            bigint      NOT NULL DEFAULT 0,
    delivered       bigint      NOT NULL DEFAULT 0,
    failed          bigint      NOT NULL DEFAULT 0,
    retried         bigint      NOT NULL DEFAULT 0
);
COMMENT ON TABLE pgpush.workers IS 'Live pgpush worker processes, with heartbeat and counters since start.';

-- One row per app that workers serve: healthy, or why not (credentials,
-- certificate, topic errors pause the app; its rows stay queued).
CREATE TABLE pgpush.app_health (
    app             text        PRIMARY KEY,
    healthy         boolean     NOT NULL,
    reason          text,
    since           timestamptz NOT NULL DEFAULT now(),
    checked_at      timestamptz NOT NULL DEFAULT now(),
    worker_id       text
);
COMMENT ON TABLE pgpush.app_health IS 'Per app: whether workers can send for it, and if not, the reason (e.g. InvalidProviderToken) and since when.';
