//! `GET /api/watches/{watch}/backtest?threshold=NAME | clip=NAME |
//! ignore=XPATH`: `semclip backtest` over HTTP (see
//! [`crate::monitor::backtest`]): a rule of the watch as the server has
//! loaded it, replayed over the stored versions.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};

use super::Server;
use super::auth::Need;
use super::error::{Error, Form, require};
use crate::monitor::backtest::{self, Backtest, Rule};

/// The parameters naming a rule: `threshold`, `clip` and the `ignore`s.
type RuleParams = (Option<String>, Option<String>, Vec<String>);

/// The rule a request names: exactly one of `threshold`, `clip`, or one
/// or more `ignore`.
fn rule_of(query: Option<&str>) -> Result<RuleParams, Error> {
    let pairs = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes());
    let (mut threshold, mut clip, mut ignore) = (None, None, Vec::new());
    for (k, v) in pairs {
        match &*k {
            "threshold" => threshold = Some(v.into_owned()),
            "clip" => clip = Some(v.into_owned()),
            "ignore" => ignore.push(v.into_owned()),
            _ => {}
        }
    }
    let named = usize::from(threshold.is_some())
        + usize::from(clip.is_some())
        + usize::from(!ignore.is_empty());
    if named != 1 {
        return Err(Error::new(
            StatusCode::BAD_REQUEST,
            "name exactly one rule: threshold=NAME, clip=NAME, or ignore=XPATH (repeatable)",
            Form::Json,
        ));
    }
    Ok((threshold, clip, ignore))
}

/// `GET /api/watches/{watch}/backtest`.
pub(crate) async fn backtest(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Json<Backtest>, Error> {
    require(&server, &headers, Need::Read, Form::Json)?;
    let (threshold, clip, ignore) = rule_of(query.as_deref())?;
    let Some(watch) = server.watches().get(&id).cloned() else {
        return Err(Error::not_found(format!("no watch `{id}`"), Form::Json));
    };
    if let Some(name) = &threshold
        && !watch.thresholds.iter().any(|t| &t.name == name)
    {
        return Err(Error::not_found(
            format!("watch `{id}` has no threshold `{name}`"),
            Form::Json,
        ));
    }
    if let Some(name) = &clip
        && !watch.clips.contains_key(name)
    {
        return Err(Error::not_found(
            format!("watch `{id}` has no clip `{name}`"),
            Form::Json,
        ));
    }
    let replayed = server
        .stores
        .run(move |s| {
            let rule = match (&threshold, &clip) {
                (Some(name), _) => watch
                    .thresholds
                    .iter()
                    .find(|t| &t.name == name)
                    .map(Rule::Threshold),
                (None, Some(name)) => watch.clips.get(name).map(|c| Rule::Clip(name, c)),
                (None, None) => Some(Rule::Ignore(&ignore)),
            };
            // Checked above: the rule is there.
            let rule = rule.unwrap_or(Rule::Ignore(&[]));
            backtest::replay(s, &watch, rule)
        })
        .await
        .map_err(|e| Error::internal(&e, Form::Json))?;
    Ok(Json(replayed))
}
