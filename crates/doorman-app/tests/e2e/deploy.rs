//! The alert rules and the dashboard in `deploy/` name metrics a real server exposes: a
//! renamed metric fails here, not silently in production.

use std::collections::BTreeSet;

use crate::helpers::TestApp;

/// `doorman_…` names in a file, without the sample suffixes of counters and histograms.
fn metric_names(path: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut names = BTreeSet::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("doorman_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_lowercase() || c == '_')).unwrap_or(tail.len());
        let name = &tail[..end];
        let base = ["_total", "_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name);
        names.insert(base.to_owned());
        rest = &tail[end..];
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_alerts_and_the_dashboard_use_is_exposed() {
    let app = TestApp::spawn().await;
    // Labelled families appear once they have a sample: an event, Slack's re-send of it
    // after a timeout (a retry, a duplicate), and its dispatch.
    app.tenant("T1").await;
    assert_eq!(app.event("T1", "EvSeen", None).await.status(), 200);
    assert_eq!(app.event("T1", "EvSeen", Some(1)).await.status(), 200);
    app.quiesce().await;
    let exposed = app.metrics().await;
    let declared: BTreeSet<&str> = exposed
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    for file in ["deploy/prometheus/alerts.yml", "deploy/grafana/doorman.json"] {
        let used = metric_names(file);
        assert!(used.len() >= 6, "{file}: {used:?}");
        for name in used {
            assert!(
                declared.contains(name.as_str()),
                "{file} uses {name}, which /metrics does not declare: {declared:?}"
            );
        }
    }
}
