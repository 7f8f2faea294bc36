//! `doorman receipts …`: what became of events, and sending kept ones again.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::Utc;
use doorman_adapters::postgres::{
    self, PgInstallations, PgReceiptStore, PgStoredEvents, PgTenantDirectory, PoolSettings,
};
use doorman_domain::ports::SystemClock;
use doorman_domain::{
    ExternalEventId, Inbound, Platform, Receipt, ReceiptKey, ReceiptStatus, ReplayOutcome, ReplaySelection,
    Replayed, TenantId,
};
use serde_json::json;

use super::admin::{connect, tenant_id};
use super::{Unsuccessful, output};
use crate::cli::{DatabaseArgs, DispatchArgs, ReceiptsCommand, ReplayArgs};
use crate::config::DispatchConfig;
use crate::server;

/// How much longer than a dispatch may take a replay holds its event, so a second replay of
/// it waits for the first to have finished.
const HOLD_MARGIN: Duration = Duration::from_secs(30);

pub async fn run(command: ReceiptsCommand) -> anyhow::Result<()> {
    match command {
        ReceiptsCommand::Show { tenant, event_id, older_than, json, db } => {
            show(&tenant, &event_id, *older_than, json, &db).await?;
        }
        ReceiptsCommand::Replay(args) => {
            let ReplayArgs {
                tenant,
                event_id,
                failed_since,
                stranded,
                older_than,
                dry_run,
                json,
                db,
                dispatch,
            } = *args;
            let tenant = tenant_id(&tenant)?;
            let ago = |d: std::time::Duration, flag| {
                chrono::Duration::from_std(d).map(|d| Utc::now() - d).context(flag)
            };
            let selection = match (event_id, failed_since) {
                (Some(id), _) => ReplaySelection::Event(ExternalEventId::new(id).context("--event-id")?),
                (None, Some(since)) => ReplaySelection::FailedSince(ago(*since, "--failed-since")?),
                (None, None) if stranded => {
                    ReplaySelection::StrandedBefore(ago(*older_than, "--older-than")?)
                }
                (None, None) => anyhow::bail!("say which events: --event-id, --failed-since or --stranded"),
            };
            replay(tenant, &selection, dry_run, json, &db, &dispatch).await?;
        }
        ReceiptsCommand::Stranded { older_than, tenant, json, db } => {
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let before = Utc::now() - chrono::Duration::from_std(*older_than).context("--older-than")?;
            let found = connect(&db).await?.stranded(before, tenant).await?;
            print_receipts(&found, json, "stranded (claimed, never handled, no failure recorded)");
        }
        ReceiptsCommand::Failed { tenant, json, db } => {
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let found = connect(&db).await?.failed(tenant).await?;
            print_receipts(&found, json, "failed");
        }
        ReceiptsCommand::Prune { retention, batch, json, db } => {
            let batch = NonZeroU32::new(batch).context("--batch must be at least 1")?;
            let retention = doorman_domain::Retention::new(*retention, batch.get()).context("--retention")?;
            let deleted =
                connect(&db).await?.prune_expired(retention.expiry_cutoff(Utc::now()), batch).await?;
            if json {
                output::json(&json!({ "deleted": deleted }));
            } else {
                output::line(&format!(
                    "deleted {deleted} receipts older than {}",
                    humantime::format_duration(retention.keep_for())
                ));
            }
        }
    }
    Ok(())
}

fn print_receipts(receipts: &[Receipt], as_json: bool, what: &str) {
    if as_json {
        let rows: Vec<_> = receipts.iter().map(receipt_json).collect();
        output::json(&serde_json::Value::Array(rows));
        return;
    }
    if receipts.is_empty() {
        output::line(&format!("no {what} receipts"));
        return;
    }
    output::line(&format!("{} {what} receipts:", receipts.len()));
    output::line(
        "TENANT                                PLATFORM  EVENT ID            TYPE                 ATTEMPT  CLAIMED AT            FAILURE",
    );
    for r in receipts {
        output::line(&format!(
            "{:<37} {:<9} {:<19} {:<20} {:<8} {:<21} {}",
            r.key.tenant,
            r.key.platform,
            r.key.external_id,
            r.event_type,
            r.attempt,
            r.claimed_at.format("%Y-%m-%d %H:%M:%S"),
            r.failure.as_ref().map(|f| f.reason.as_str()).unwrap_or("-"),
        ));
    }
}

fn receipt_json(r: &Receipt) -> serde_json::Value {
    json!({
        "tenant_id": r.key.tenant.to_string(),
        "platform": r.key.platform.as_str(),
        "external_event_id": r.key.external_id.as_str(),
        "event_type": r.event_type,
        "delivery_attempt": r.attempt,
        "claimed_at": r.claimed_at.to_rfc3339(),
        "handled_at": r.handled_at.map(|t| t.to_rfc3339()),
        "failure": r.failure.as_ref().map(|f| json!({ "reason": f.reason, "at": f.at.to_rfc3339() })),
    })
}

/// `receipts show`: one event's fate in one answer.
async fn show(
    tenant: &str,
    event_id: &str,
    stranded_after: Duration,
    as_json: bool,
    db: &DatabaseArgs,
) -> anyhow::Result<()> {
    let key = ReceiptKey {
        tenant: tenant_id(tenant)?,
        platform: Platform::Slack,
        external_id: ExternalEventId::new(event_id).context("--event-id")?,
    };
    let Some((receipt, payload_kept)) = connect(db).await?.receipt(&key).await? else {
        let why = "no receipt: never received, pruned after the retention, or from a workspace no tenant had linked";
        if as_json {
            output::json(&json!({
                "tenant_id": key.tenant.to_string(),
                "external_event_id": key.external_id.as_str(),
                "status": "unknown",
                "detail": why,
            }));
        } else {
            output::line(&format!("{}: unknown ({why})", key.external_id));
        }
        return Err(
            Unsuccessful(format!("event {} is unknown for tenant {}", key.external_id, key.tenant)).into()
        );
    };
    let status = receipt.status(Utc::now(), stranded_after);
    if as_json {
        let mut value = receipt_json(&receipt);
        value["status"] = json!(status_word(&status));
        value["dispatches"] = json!(receipt.dispatches());
        value["replays"] = json!(receipt.replays);
        value["payload_kept"] = json!(payload_kept);
        output::json(&value);
        return Ok(());
    }
    let when = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let plural = |n: u32, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let headline = match &status {
        ReceiptStatus::Handled { at } => {
            format!("handled at {} after {}", when(*at), plural(receipt.dispatches(), "dispatch"))
        }
        ReceiptStatus::Failed(failure) => format!(
            "failed at {} ({}) after {}",
            when(failure.at),
            failure.reason,
            plural(receipt.dispatches(), "dispatch")
        ),
        ReceiptStatus::InFlight => "in flight (claimed, its dispatch not finished yet)".to_owned(),
        ReceiptStatus::Stranded => format!(
            "stranded: acknowledged to Slack, never handled, no failure recorded (unfinished for over {})",
            humantime::format_duration(stranded_after)
        ),
    };
    output::line(&format!(
        "{} ({}, tenant {}): {headline}",
        receipt.key.external_id, receipt.event_type, receipt.key.tenant
    ));
    output::line(&format!(
        "claimed at {} on delivery attempt {}; replayed {}; payload kept: {}",
        when(receipt.claimed_at),
        receipt.attempt,
        plural(receipt.replays, "time"),
        if payload_kept { "yes" } else { "no" }
    ));
    Ok(())
}

fn status_word(status: &ReceiptStatus) -> &'static str {
    match status {
        ReceiptStatus::Handled { .. } => "handled",
        ReceiptStatus::Failed(_) => "failed",
        ReceiptStatus::InFlight => "in_flight",
        ReceiptStatus::Stranded => "stranded",
    }
}

/// `receipts replay`: the same dispatch path as `serve` (directory, bridge with its
/// destination policy, bounds and circuit, installations, receipt store), built from the same
/// settings, on a server-role pool.
async fn replay(
    tenant: TenantId,
    selection: &ReplaySelection,
    dry_run: bool,
    as_json: bool,
    db: &DatabaseArgs,
    dispatch: &DispatchArgs,
) -> anyhow::Result<()> {
    let config = DispatchConfig::from_args(dispatch)?;
    let pool = postgres::pool::connect(db.database_url.expose(), &PoolSettings::default());
    let (bridge, oauth) = server::outbound(&config.bridge, config.slack_app.as_ref())?;
    let keys = config.keys.clone();
    let inbound = Inbound::new(
        PgTenantDirectory::new(pool.clone(), keys.clone()),
        bridge,
        PgReceiptStore::with_pools(pool.clone(), pool.clone(), keys.clone()),
        PgInstallations::new(pool.clone(), keys.clone(), oauth),
        SystemClock,
        config.retention,
    );
    let stored = PgStoredEvents::new(pool, Arc::clone(&keys));
    let hold = config.bridge.dispatch_timeout + HOLD_MARGIN;
    let report = inbound
        .replay(&stored, tenant, selection, hold, dry_run)
        .await
        .context("selecting the events to replay")?;
    let report = if report.is_empty()
        && let ReplaySelection::Event(id) = selection
    {
        vec![Replayed {
            key: ReceiptKey { tenant, platform: Platform::Slack, external_id: id.clone() },
            outcome: ReplayOutcome::Unknown,
        }]
    } else {
        report
    };
    print_replay(tenant, &report, dry_run, as_json);
    let unsuccessful = report.iter().filter(|r| !r.outcome.is_success()).count();
    if unsuccessful > 0 {
        return Err(Unsuccessful(format!(
            "{unsuccessful} of {} selected events were not handled",
            report.len()
        ))
        .into());
    }
    Ok(())
}

fn detail(outcome: &ReplayOutcome) -> String {
    match outcome {
        ReplayOutcome::WouldReplay => "would be sent again".into(),
        ReplayOutcome::Handled => "sent again; the agent took it; the receipt is handled".into(),
        ReplayOutcome::HandledUnrecorded => {
            "sent again and taken, but the receipt could not be marked handled".into()
        }
        ReplayOutcome::Failed(reason) => format!("sent again; failed: {reason}"),
        ReplayOutcome::AlreadyHandled => "refused: already handled".into(),
        ReplayOutcome::NoPayload => {
            "refused: no payload kept (the tenant did not retain payloads when it was claimed: `doorman tenant retain-payloads`)".into()
        }
        ReplayOutcome::InProgress => "refused: another replay of it is in progress".into(),
        ReplayOutcome::Unknown => "refused: no receipt (never received, or pruned)".into(),
        ReplayOutcome::NotSent(why) => format!("not sent: {why}"),
    }
}

fn print_replay(tenant: TenantId, report: &[Replayed], dry_run: bool, as_json: bool) {
    let handled = report.iter().filter(|r| r.outcome.is_success()).count();
    if as_json {
        let events: Vec<_> = report
            .iter()
            .map(|r| {
                json!({
                    "external_event_id": r.key.external_id.as_str(),
                    "outcome": r.outcome.as_str(),
                    "detail": detail(&r.outcome),
                })
            })
            .collect();
        output::json(&json!({
            "tenant_id": tenant.to_string(),
            "dry_run": dry_run,
            "selected": report.len(),
            "succeeded": handled,
            "events": events,
        }));
        return;
    }
    if report.is_empty() {
        output::line(&format!("no receipts of tenant {tenant} match; nothing to replay"));
        return;
    }
    let verb = if dry_run { "would replay" } else { "replayed" };
    output::line(&format!("{verb} {handled} of {} selected events of tenant {tenant}", report.len()));
    for r in report {
        output::line(&format!("{:<24} {:<18} {}", r.key.external_id, r.outcome.as_str(), detail(&r.outcome)));
    }
}
