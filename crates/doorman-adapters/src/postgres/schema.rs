// @generated automatically by Diesel CLI.

diesel::table! {
    admin_audit (id) {
        id -> Int8,
        at -> Timestamptz,
        actor_kind -> Text,
        actor_id -> Text,
        actor_name -> Text,
        action -> Text,
        tenant_id -> Nullable<Uuid>,
        target -> Nullable<Text>,
        request_id -> Text,
    }
}

diesel::table! {
    admin_idempotency (scope, key) {
        scope -> Text,
        key -> Text,
        fingerprint -> Text,
        tenant_id -> Uuid,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    admin_keys (id) {
        id -> Uuid,
        name -> Text,
        tenant_id -> Nullable<Uuid>,
        read_only -> Bool,
        secret_hash -> Text,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
        expires_at -> Nullable<Timestamptz>,
        last_used_at -> Nullable<Timestamptz>,
        read_payloads -> Bool,
    }
}

diesel::table! {
    admin_replay_job_events (job_id, position) {
        job_id -> Uuid,
        position -> Int4,
        tenant_id -> Uuid,
        platform -> Text,
        external_event_id -> Text,
        started_at -> Nullable<Timestamptz>,
        ended_at -> Nullable<Timestamptz>,
        outcome -> Nullable<Text>,
        detail -> Nullable<Text>,
        failure_before -> Nullable<Text>,
        failed_before_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    admin_replay_jobs (id) {
        id -> Uuid,
        tenant_id -> Uuid,
        selection -> Text,
        actor_kind -> Text,
        actor_id -> Text,
        actor_name -> Text,
        request_id -> Text,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        finished_at -> Nullable<Timestamptz>,
        runner_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    agent_bridges (tenant_id) {
        tenant_id -> Uuid,
        url -> Text,
        signing_secret -> Text,
        paused -> Bool,
        updated_at -> Timestamptz,
        failing_since -> Nullable<Timestamptz>,
        failing_seen_at -> Nullable<Timestamptz>,
        disabled_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    console_sessions (id_hash) {
        id_hash -> Text,
        key_id -> Uuid,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        ended_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    console_sign_in_links (token_hash) {
        token_hash -> Text,
        key_id -> Uuid,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    deleted_tenants (tenant_id) {
        tenant_id -> Uuid,
        name -> Text,
        deleted_at -> Timestamptz,
    }
}

diesel::table! {
    messaging_activity_hours (tenant_id, hour) {
        tenant_id -> Uuid,
        hour -> Timestamptz,
        delivered -> Int8,
        failed -> Int8,
        dispatch_ms -> Int8,
        dispatch_ms_max -> Int4,
    }
}

diesel::table! {
    messaging_event_attempts (tenant_id, platform, external_event_id, started_at) {
        tenant_id -> Uuid,
        platform -> Text,
        external_event_id -> Text,
        started_at -> Timestamptz,
        ended_at -> Timestamptz,
        replay -> Bool,
        status -> Nullable<Int2>,
        failure -> Nullable<Text>,
        reason -> Nullable<Text>,
        answer -> Nullable<Text>,
    }
}

diesel::table! {
    messaging_event_payloads (tenant_id, platform, external_event_id) {
        tenant_id -> Uuid,
        platform -> Text,
        external_event_id -> Text,
        claimed_at -> Timestamptz,
        payload -> Text,
        leased_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    messaging_event_receipts (tenant_id, platform, external_event_id) {
        tenant_id -> Uuid,
        platform -> Text,
        external_event_id -> Text,
        event_type -> Text,
        delivery_attempt -> Int4,
        claimed_at -> Timestamptz,
        handled_at -> Nullable<Timestamptz>,
        failure_reason -> Nullable<Text>,
        failed_at -> Nullable<Timestamptz>,
        replays -> Int4,
        claim_id -> Nullable<Uuid>,
        swept_at -> Nullable<Timestamptz>,
        dispatched_at -> Nullable<Timestamptz>,
        answer_status -> Nullable<Int2>,
        redeliveries -> Int2,
        gave_up_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    messaging_install_links (token_hash) {
        token_hash -> Text,
        tenant_id -> Uuid,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    messaging_install_states (state_hash) {
        state_hash -> Text,
        tenant_id -> Uuid,
        browser_hash -> Text,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        consumed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    messaging_installations (id) {
        id -> Int8,
        tenant_id -> Uuid,
        platform -> Text,
        team_id -> Nullable<Text>,
        enterprise_id -> Nullable<Text>,
        is_enterprise_install -> Bool,
        app_id -> Text,
        bot_user_id -> Text,
        bot_token -> Nullable<Text>,
        scopes -> Text,
        refresh_token -> Nullable<Text>,
        token_expires_at -> Nullable<Timestamptz>,
        installed_at -> Timestamptz,
        updated_at -> Timestamptz,
        refresh_leased_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    messaging_receipt_sweep (only_row) {
        only_row -> Bool,
        swept_before -> Timestamptz,
    }
}

diesel::table! {
    messaging_request_replays (tenant_id, signature) {
        tenant_id -> Uuid,
        signature -> Text,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    messaging_workspaces (id) {
        id -> Int8,
        tenant_id -> Uuid,
        platform -> Text,
        team_id -> Nullable<Text>,
        enterprise_id -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    operational_events (id) {
        id -> Uuid,
        #[sql_name = "type"]
        type_ -> Text,
        tenant_id -> Uuid,
        external_event_id -> Nullable<Text>,
        occurred_at -> Timestamptz,
        detail -> Nullable<Text>,
        attempts -> Int2,
        next_attempt_at -> Timestamptz,
        leased_until -> Nullable<Timestamptz>,
        delivered_at -> Nullable<Timestamptz>,
        gave_up_at -> Nullable<Timestamptz>,
        last_failure -> Nullable<Text>,
    }
}

diesel::table! {
    tenants (id) {
        id -> Uuid,
        name -> Text,
        created_at -> Timestamptz,
        retain_payloads -> Bool,
        redelivery_schedule -> Nullable<Array<Nullable<Int4>>>,
        read_only_portals_read_payloads -> Bool,
    }
}

diesel::joinable!(admin_idempotency -> tenants (tenant_id));
diesel::joinable!(admin_keys -> tenants (tenant_id));
diesel::joinable!(admin_replay_job_events -> admin_replay_jobs (job_id));
diesel::joinable!(admin_replay_jobs -> tenants (tenant_id));
diesel::joinable!(agent_bridges -> tenants (tenant_id));
diesel::joinable!(console_sessions -> admin_keys (key_id));
diesel::joinable!(console_sign_in_links -> admin_keys (key_id));
diesel::joinable!(messaging_install_links -> tenants (tenant_id));
diesel::joinable!(messaging_install_states -> tenants (tenant_id));
diesel::joinable!(messaging_installations -> tenants (tenant_id));
diesel::joinable!(messaging_workspaces -> tenants (tenant_id));

diesel::allow_tables_to_appear_in_same_query!(
    admin_audit,
    admin_idempotency,
    admin_keys,
    admin_replay_job_events,
    admin_replay_jobs,
    agent_bridges,
    console_sessions,
    console_sign_in_links,
    deleted_tenants,
    messaging_activity_hours,
    messaging_event_attempts,
    messaging_event_payloads,
    messaging_event_receipts,
    messaging_install_links,
    messaging_install_states,
    messaging_installations,
    messaging_receipt_sweep,
    messaging_request_replays,
    messaging_workspaces,
    operational_events,
    tenants,
);
