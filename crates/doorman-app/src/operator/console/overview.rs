//! `/console/overview`: what support sees going wrong now (issue 42): the tenants with the
//! most failed dispatches in the last day, those with the most stranded events now (each
//! linking to its Stranded list) and the agents failing or disabled, each linking to its
//! tenant. For sessions that see every tenant (a customer's portal has its tenant's charts).

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::ConsoleError;
use super::page::{self, Chrome};
use super::session::Session;
use crate::documents::OverviewDoc;
use crate::operator::state::AdminState;

#[derive(Template)]
#[template(path = "console/overview.html")]
struct OverviewPage {
    chrome: Chrome,
    overview: OverviewDoc,
}

pub async fn show(request: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let overview = state.operator.overview(&session.caller).await?;
    page::ok(&OverviewPage { chrome: session.chrome(&request), overview: OverviewDoc::from(overview) })
}
