//! `GET /metrics` on an address of its own (`DOORMAN_METRICS_BIND` for `doorman serve`,
//! `DOORMAN_ADMIN_METRICS_BIND` for `doorman admin serve`; loopback by default), never on the
//! listener Slack or the platform's backend reach: what a process counts (tenants' refusals,
//! circuits, keys' failures) is the operator's, not the internet's.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix_web::{App, HttpResponse, HttpServer, web};
use anyhow::Context;

/// What renders the process's metrics, in the OpenMetrics text format.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// The metrics listener, answering until stopped.
#[derive(Debug)]
pub struct MetricsListener {
    addr: SocketAddr,
    handle: actix_web::dev::ServerHandle,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl MetricsListener {
    /// Listens on `bind` (port 0 picks a free one), one worker: Prometheus asks every few
    /// seconds.
    pub fn start(bind: SocketAddr, render: Render) -> anyhow::Result<Self> {
        let listener =
            TcpListener::bind(bind).with_context(|| format!("binding the metrics address {bind}"))?;
        let addr = listener.local_addr()?;
        let render = web::Data::new(render);
        let server = HttpServer::new(move || {
            App::new().app_data(render.clone()).route("/metrics", web::get().to(metrics)).default_service(
                web::to(|| async { HttpResponse::NotFound().body("only /metrics is served here\n") }),
            )
        })
        .workers(1)
        .disable_signals()
        .listen(listener)?
        .run();
        let handle = server.handle();
        let task = tokio::spawn(server);
        tracing::info!(%addr, "metrics listening");
        Ok(Self { addr, handle, task })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub async fn stop(self) {
        self.handle.stop(true).await;
        let _ = self.task.await;
    }
}

async fn metrics(render: web::Data<Render>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(render())
}
