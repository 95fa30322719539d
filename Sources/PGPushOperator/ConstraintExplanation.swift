import Postgres

/// Turns a rejected INSERT into a sentence: pgpush names its CHECK constraints after
/// what is wrong (sql/001_queue.sql), and this says it in words for the command line.
package enum ConstraintExplanation {
    package static let sentences: [String: String] = [
        "notifications_app_not_empty": "the app name is empty",
        "notifications_device_token_not_hex": "the device token has characters other than hex digits",
        "notifications_device_token_bad_length":
            "the device token must have an even number of hex digits, between 2 and 400 (64 is common)",
        "notifications_push_type_unknown":
            "the push type is not one APNs knows (alert, background, voip, complication, fileprovider, mdm, "
            + "location, liveactivity, pushtotalk, widgets, controls)",
        "notifications_priority_not_1_5_10": "the priority must be 10, 5 or 1",
        "notifications_background_priority_must_be_5": "a background push must have priority 5 (or none, to derive it)",
        "notifications_pushtotalk_priority_10_or_service_update_5":
            "a push-to-talk push must have priority 10; only a service update (aps.ptt-push-type \"service-update\") may use 5",
        "notifications_liveactivity_priority_must_be_5_or_10": "a Live Activity push must have priority 5 or 10",
        "notifications_location_priority_must_be_5_or_10": "a location push must have priority 5 or 10",
        "notifications_background_needs_content_available":
            "a background push needs \"content-available\": 1 in its aps dictionary",
        "notifications_mdm_needs_topic": "an mdm push needs an explicit topic (the MDM certificate's topic)",
        "notifications_topic_empty": "the topic is empty (leave it out to derive it from the app's bundle id)",
        "notifications_payload_not_object": "the payload must be a JSON object ({…}); only a Web Push payload may be any JSON value",
        "notifications_payload_too_large":
            "the payload is over the size limit of its push type (4096 bytes; APNs: 5120 for voip and for a broadcast to a "
            + "channel; FCM: 2048 to a topic; Web Push: 3993)",
        "notifications_collapse_id_too_long": "the collapse id must be 1 to 64 bytes",
        "notifications_idempotency_key_empty": "the idempotency key is empty",
        "notifications_idempotency": "the app already has a notification with this idempotency key",
        "notifications_status_unknown": "the status is not one pgpush knows",
        "notifications_attempts_negative": "attempts cannot be negative",
        // sql/006_input_rules.sql
        "notifications_app_name_1_to_64_letters_digits_dot_dash":
            "the app name must be 1 to 64 characters, each a letter, digit, '.', '_' or '-'",
        "notifications_send_after_infinite": "send_after must be a finite time (not infinity or -infinity)",
        "notifications_expires_at_infinite": "expires_at must be a finite time (not infinity or -infinity); leave it out for none",
        "notifications_topic_control_character": "the topic contains a control character",
        "notifications_collapse_id_control_character": "the collapse id contains a control character",
        "notifications_payload_nested_deeper_than_64": "the payload nests objects and arrays more than 64 levels deep",
        // sql/010_broadcast_channels.sql
        "notifications_exactly_one_of_device_token_and_channel_id":
            "a notification goes to a device token or to a broadcast channel: give exactly one of them",
        "notifications_channel_only_liveactivity": "a broadcast channel carries only liveactivity pushes",
        "notifications_channel_id_not_base64": "the channel id must be the base64 id APNs returned when the channel was created",
        "notifications_channel_without_collapse_id": "a broadcast to a channel cannot carry a collapse id",
        "notifications_channel_cannot_start_liveactivity":
            "a broadcast cannot start a Live Activity (\"event\": \"start\"); send the start to a device token",
        "notifications_liveactivity_event_start_update_or_end":
            "a Live Activity push needs \"event\" in its aps dictionary: \"start\", \"update\" or \"end\"",
        "notifications_liveactivity_needs_timestamp": "a Live Activity push needs a numeric \"timestamp\" in its aps dictionary",
        "notifications_liveactivity_start_or_update_needs_content_state":
            "a Live Activity start or update needs a \"content-state\" object in its aps dictionary",
        "notifications_liveactivity_start_needs_attributes":
            "a Live Activity start needs \"attributes-type\" and an \"attributes\" object in its aps dictionary",
        "notifications_liveactivity_start_needs_alert": "a Live Activity start needs an \"alert\" in its aps dictionary",
        // sql/015_services.sql
        "notifications_service_unknown": "the service must be apns, fcm or webpush",
        "notifications_fcm_token_printable_ascii":
            "an FCM registration token is 1 to 4096 printable ASCII characters without spaces",
        "notifications_fcm_topic_name": "an FCM topic name is 1 to 900 characters of A-Z, a-z, 0-9 and -_.~%",
        "notifications_fcm_payload_members":
            "an FCM payload is the message without its target: only notification, data, android, apns, webpush and fcm_options",
        "notifications_fcm_data_strings": "FCM data is an object whose values are all strings",
        "notifications_fcm_android_object": "an FCM payload's android member is an object",
        // sql/017_web_push.sql
        "notifications_webpush_target_is_subscription":
            "a Web Push row names its browser by subscription alone, with no device token or channel id",
        "notifications_subscription_only_webpush": "only a webpush row has a subscription",
        "notifications_webpush_endpoint_https": "the subscription's endpoint must be an https URL of at most 2048 characters",
        "notifications_webpush_p256dh_65_bytes":
            "the subscription's keys.p256dh must be the browser's 65-byte P-256 key in base64url (87 characters, starting with B)",
        "notifications_webpush_auth_16_bytes": "the subscription's keys.auth must be 16 bytes in base64url (22 characters)",
        "notifications_webpush_collapse_id_topic":
            "a Web Push collapse id is the Topic header: 1 to 32 characters of A-Z, a-z, 0-9, - and _, "
            + "and not 1, 5, 9, … characters long (no base64url text has such a length)",
        // sql/018_daily_operations.sql
        "notifications_lane_urgent_normal_or_bulk": "the lane must be urgent, normal or bulk",
    ]

    /// A sentence for a database error an enqueue caused, or nil when it is not about the row
    /// (connection lost, missing schema, …) and should be reported as it is.
    package static func explain(_ error: PostgresError) -> String? {
        if let constraint = error.constraint {
            let sentence = sentences[constraint] ?? "the row breaks the rule \(constraint)"
            return "\(sentence) (constraint \(constraint))"
        }
        switch error.sqlState {
        case "22P02" where error.message.contains("json"):
            return "the payload is not valid JSON (\(error.message))"
        case "22P02", "22007", "22008":
            return "a value has the wrong form: \(error.message)"
        case "22003":
            return "a number is out of range: \(error.message)"
        case "42501" where error.message.contains("row-level security"):
            // sql/007_per_app_access.sql: an application role enqueues only for its granted apps.
            return "this database role may not enqueue for that app: the owner grants it with "
                + "SELECT pgpush.grant_app('<role>', '<app>')"
        default:
            return nil
        }
    }
}
