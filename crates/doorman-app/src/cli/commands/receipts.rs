//! `doorman receipts …`: what became of events, sending kept ones again, pruning.

use std::num::NonZeroU32;

use anyhow::Context;
use chrono::Utc;
use doorman_adapters::postgres::pool::{self, ADMIN_ROLE};
use doorman_domain::{
    AuditAction, EventReport, EventState, ExternalEventId, OperatorError, PageLimit, PageRequest,
    PayloadHidden, PayloadView, ReceiptStatus, ReplaySelection, TenantId,
};
use serde_json::json;

use super::context::{Cli, Needs, explain, maintenance, small_pool, tenant_id};
use super::{Unsuccessful, output};
use crate::cli::settings::keyring;
use crate::cli::{DatabaseArgs, ReceiptsCommand, ReplayArgs};
use crate::config::DispatchConfig;
use crate::documents::{EventDoc, EventMatchList, ReplayReport, indented};
use crate::event_detail::{EventDetail, Payload};
use crate::replays::Replays;

pub async fn run(command: ReceiptsCommand) -> anyhow::Result<()> {
    match command {
        ReceiptsCommand::Show { tenant, event_id, older_than, payload, json, db, keys } => {
            // Opening a payload needs the keys; without `--payload` none is read.
            let (payload, keys) = match payload {
                true => (Payload::AsAllowed, Some(keyring(&keys)?)),
                false => (Payload::NotAsked, None),
            };
            let cli = Cli::owner(&db, Needs { stranded_after: Some(*older_than), keys, ..Needs::default() });
            show(&cli, &tenant, &event_id, *older_than, payload, json).await?;
        }
        ReceiptsCommand::Find { event_id, older_than, json, db } => {
            find(&event_id, *older_than, json, &db).await?;
        }
        ReceiptsCommand::Replay(args) => Box::pin(replay(*args)).await?,
        ReceiptsCommand::Stranded { older_than, tenant, json, db } => {
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let cli = Cli::owner(&db, Needs { stranded_after: Some(*older_than), ..Needs::default() });
            let found = every(&cli, tenant, EventState::Stranded).await?;
            print_events(&found, json, "stranded (claimed, never handled, no failure recorded)");
        }
        ReceiptsCommand::Failed { tenant, json, db } => {
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let cli = Cli::owner(&db, Needs::default());
            let found = every(&cli, tenant, EventState::Failed).await?;
            print_events(&found, json, "failed");
        }
        ReceiptsCommand::Placement { json, db } => placement(json, &db).await?,
        ReceiptsCommand::Prune { retention, batch, json, db } => {
            let batch = NonZeroU32::new(batch).context("--batch must be at least 1")?;
            let retention = doorman_domain::Retention::new(*retention, batch.get()).context("--retention")?;
            let mut maintenance = maintenance(&db).await?;
            let kept = humantime::format_duration(retention.keep_for());
            let cli = Cli::owner(&db, Needs::default());
            let run = maintenance.prune_expired(retention.expiry_cutoff(Utc::now()), batch);
            let done = |deleted: &u64| format!("deleted {deleted} older than {kept}");
            let deleted = cli
                .operator
                .maintain(&cli.caller, AuditAction::ReceiptsPrune, run, done)
                .await
                .map_err(explain)?;
            if json {
                output::json(&json!({ "deleted": deleted }));
            } else {
                output::line(&format!("deleted {deleted} receipts older than {kept}"));
            }
        }
    }
    Ok(())
}

/// `doorman receipts placement`: read only, so not audited.
async fn placement(as_json: bool, db: &DatabaseArgs) -> anyhow::Result<()> {
    let placed = maintenance(db).await?.placements().await.context("reading the tenants' placements")?;
    if as_json {
        let rows: Vec<_> = placed
            .iter()
            .map(|p| {
                json!({ "tenant": p.tenant, "name": p.name, "node": p.node, "shard": p.shard,
                        "events_last_hour": p.last_hour, "events_last_day": p.last_day })
            })
            .collect();
        output::json(&json!({ "tenants": rows }));
        return Ok(());
    }
    output::line(&format!(
        "{:<36}  {:<24}  {:>8}  {:>10}  {:>10}  name",
        "tenant", "node", "shard", "last hour", "last day"
    ));
    for p in &placed {
        let node = p.node.as_deref().unwrap_or("(one server)");
        let shard = p.shard.map_or_else(|| "-".to_owned(), |s| s.to_string());
        output::line(&format!(
            "{:<36}  {node:<24}  {shard:>8}  {:>10}  {:>10}  {}",
            p.tenant, p.last_hour, p.last_day, p.name
        ));
    }
    Ok(())
}

/// Every page of a listing: of one tenant, or every tenant's.
async fn every(cli: &Cli, tenant: Option<TenantId>, state: EventState) -> anyhow::Result<Vec<EventReport>> {
    let mut page = PageRequest { limit: PageLimit::new(PageLimit::MAX)?, after: None };
    let mut found = Vec::new();
    loop {
        let listed = cli
            .operator
            .events(&cli.caller, tenant, Some(state), Default::default(), &page)
            .await
            .map_err(explain)?;
        found.extend(listed.items);
        match listed.next {
            Some(next) => page.after = Some(next),
            None => return Ok(found),
        }
    }
}

fn print_events(reports: &[EventReport], as_json: bool, what: &str) {
    if as_json {
        let rows: Vec<EventDoc> = reports.iter().cloned().map(EventDoc::from).collect();
        output::json(&serde_json::to_value(rows).unwrap_or_default());
        return;
    }
    if reports.is_empty() {
        output::line(&format!("no {what} receipts"));
        return;
    }
    output::line(&format!("{} {what} receipts:", reports.len()));
    output::line(
        "TENANT                                PLATFORM  EVENT ID            TYPE                 ATTEMPT  CLAIMED AT            FAILURE",
    );
    for report in reports {
        let r = &report.receipt;
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

/// `receipts find`: every tenant's event of that id, through the admin API's use case.
async fn find(
    event_id: &str,
    stranded_after: std::time::Duration,
    as_json: bool,
    db: &DatabaseArgs,
) -> anyhow::Result<()> {
    let event_id = ExternalEventId::new(event_id).context("--event-id")?;
    let cli = Cli::owner(db, Needs { stranded_after: Some(stranded_after), ..Needs::default() });
    let found = cli.operator.find_events(&cli.caller, &event_id).await.map_err(explain)?;
    let none = found.is_empty();
    if as_json {
        output::json(&serde_json::to_value(found.into_iter().collect::<EventMatchList>())?);
    } else if none {
        output::line(&format!(
            "{event_id}: no tenant has it (never received, pruned after the retention, or from a workspace no tenant had linked)"
        ));
    } else {
        output::line(
            "TENANT                                NAME                  STATUS     TYPE                 CLAIMED AT",
        );
        for m in &found {
            output::line(&format!(
                "{:<37} {:<21} {:<10} {:<20} {}",
                m.receipt.key.tenant,
                m.tenant_name,
                m.status.as_str(),
                m.receipt.event_type,
                m.receipt.claimed_at.format("%Y-%m-%d %H:%M:%S UTC"),
            ));
        }
    }
    if none {
        return Err(Unsuccessful(format!("no tenant has event {event_id}")).into());
    }
    Ok(())
}

/// `receipts show`: one event's fate in one answer, the request Doorman sends its agent, and
/// (with `--payload`: the command line, as the owner, may read any) its kept payload.
async fn show(
    cli: &Cli,
    tenant: &str,
    event_id: &str,
    stranded_after: std::time::Duration,
    payload: Payload,
    as_json: bool,
) -> anyhow::Result<()> {
    let tenant = tenant_id(tenant)?;
    let event_id = ExternalEventId::new(event_id).context("--event-id")?;
    let detail = match EventDetail::read(&cli.operator, &cli.caller, tenant, event_id.clone(), payload).await
    {
        Ok(detail) => detail,
        Err(OperatorError::NotFound { .. }) => {
            let why = "no receipt: never received, pruned after the retention, or from a workspace no tenant had linked";
            if as_json {
                output::json(&json!({
                    "tenant_id": tenant.to_string(),
                    "external_event_id": event_id.as_str(),
                    "status": "unknown",
                    "detail": why,
                }));
            } else {
                output::line(&format!("{event_id}: unknown ({why})"));
            }
            return Err(Unsuccessful(format!("event {event_id} is unknown for tenant {tenant}")).into());
        }
        Err(other) => return Err(explain(other)),
    };
    let document = detail.document();
    if as_json {
        let mut doc = serde_json::to_value(&document)?;
        if detail.payload.is_none() {
            // Not read: neither shown nor hidden for a reason.
            if let Some(doc) = doc.as_object_mut() {
                doc.remove("payload");
                doc.remove("payload_hidden");
            }
        }
        output::json(&doc);
        return Ok(());
    }
    let report = &detail.report;
    let receipt = &report.receipt;
    let when = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let plural = |n: u32, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let headline = match &report.status {
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
        "claimed at {} on delivery attempt {}; replayed {}; redelivered {}{}; payload kept: {}",
        when(receipt.claimed_at),
        receipt.attempt,
        plural(receipt.replays, "time"),
        plural(receipt.redeliveries, "time"),
        receipt.gave_up_at.map_or_else(String::new, |at| format!(" (given up at {})", when(at))),
        if report.payload_kept { "yes" } else { "no" }
    ));
    for attempt in &report.attempts {
        output::line(&format!("  {}", attempt_line(attempt)));
    }
    match &document.request {
        Some(request) => {
            output::line(
                "the request Doorman sends the agent (as the agent is set now; the signature redacted):",
            );
            output::line(&format!("  {} {}", request.method, request.url));
            for header in &request.headers {
                output::line(&format!("  {}: {}", header.name, header.value));
            }
        }
        None => output::line("no request: the tenant has no agent"),
    }
    match &detail.payload {
        Some(PayloadView::Shown(kept)) => {
            output::line("payload (as Slack sent it, its verification token redacted):");
            output::line(&indented(kept.expose()));
        }
        Some(PayloadView::Hidden(PayloadHidden::NotKept)) => output::line(
            "payload: none kept (the tenant keeps payloads neither for replay nor for redelivery, or the event was handled)",
        ),
        // The command line reads every payload (the domain's rule); kept for the match.
        Some(PayloadView::Hidden(PayloadHidden::NotAllowed | PayloadHidden::NotAllowedByTenant)) => {
            output::line("payload: not yours to read")
        }
        None if report.payload_kept => output::line("payload: kept; --payload prints it"),
        None => {}
    }
    Ok(())
}

/// One attempt, as `receipts show` prints it: kind, start (to the millisecond), outcome, and
/// what the agent answered when it is on record.
fn attempt_line(attempt: &doorman_domain::Attempt) -> String {
    let started = attempt
        .started_at
        .map_or_else(|| "—".to_owned(), |at| at.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string());
    let kind = match (attempt.replay, attempt.redelivery) {
        (true, _) => "replay",
        (false, true) => "redelivery",
        (false, false) => "dispatch",
    };
    let mut line = format!("{kind} {started}: {}", attempt.outcome);
    if let Some(answer) = &attempt.answer {
        match (answer.status, answer.failure) {
            (Some(status), _) => line += &format!(", HTTP {status}"),
            (None, Some(kind)) => line += &format!(", {}", kind.as_str()),
            (None, None) => {}
        }
        line += &format!(" in {} ms", answer.latency_ms);
    }
    if let Some(detail) = &attempt.detail {
        line += &format!(" ({detail})");
    }
    if let Some(body) = attempt.answer.as_ref().and_then(|answer| answer.body.as_deref()) {
        line += &format!("; the agent said: {}", body.replace('\n', " "));
    }
    line
}

/// `receipts replay`: the same path as the admin API's replays (`crate::replays`), as
/// `doorman_admin` under row-level security.
async fn replay(args: ReplayArgs) -> anyhow::Result<()> {
    let ReplayArgs { tenant, event_id, failed_since, stranded, older_than, dry_run, json, db, dispatch } =
        args;
    let tenant = tenant_id(&tenant)?;
    let ago =
        |d: std::time::Duration, flag| chrono::Duration::from_std(d).map(|d| Utc::now() - d).context(flag);
    let selection = match (event_id, failed_since) {
        (Some(id), _) => ReplaySelection::Event(ExternalEventId::new(id).context("--event-id")?),
        (None, Some(since)) => ReplaySelection::FailedSince(ago(*since, "--failed-since")?),
        (None, None) if stranded => ReplaySelection::StrandedBefore(ago(*older_than, "--older-than")?),
        (None, None) => anyhow::bail!("say which events: --event-id, --failed-since or --stranded"),
    };
    let config = DispatchConfig::from_args(&dispatch)?;
    let pool = pool::connect_as(db.database_url.expose(), &small_pool(), Some(ADMIN_ROLE));
    let replays = Replays::new(pool.clone(), &config)?;
    let needs =
        Needs { replay_hold: Some(crate::replays::hold(config.bridge.dispatch_timeout)), ..Needs::default() };
    let cli = Cli::on(pool, needs);
    let report = if dry_run {
        let would = replays.dry_run(&cli.operator, &cli.caller, tenant, &selection).await.map_err(explain)?;
        ReplayReport::new(tenant, true, &would)
    } else {
        // A job, as the admin API makes, held and run here to its end.
        let done =
            replays.start_and_run(&cli.operator, &cli.caller, tenant, &selection).await.map_err(explain)?;
        ReplayReport::of_job(&done)
    };
    print_replay(&report, json);
    let unsuccessful = report.selected - report.succeeded;
    if unsuccessful > 0 {
        return Err(Unsuccessful(format!(
            "{unsuccessful} of {} selected events were not handled",
            report.selected
        ))
        .into());
    }
    Ok(())
}

fn print_replay(report: &ReplayReport, as_json: bool) {
    if as_json {
        output::json(&serde_json::to_value(report).unwrap_or_default());
        return;
    }
    let tenant = report.tenant_id;
    if report.events.is_empty() {
        output::line(&format!("no receipts of tenant {tenant} match; nothing to replay"));
        return;
    }
    let verb = if report.dry_run { "would replay" } else { "replayed" };
    output::line(&format!(
        "{verb} {} of {} selected events of tenant {tenant}",
        report.succeeded, report.selected
    ));
    for r in &report.events {
        output::line(&format!("{:<24} {:<18} {}", r.external_event_id, r.outcome, r.detail));
    }
}
