//! The OpenAPI 3.1 description of the JSON API, served at
//! `/api/openapi.json` and committed as `schema/openapi.json` (a test keeps
//! the two equal and checks live responses against the schemas).
//!
//! The component schemas are generated from the response types of
//! [`super::api`] (schemars, JSON Schema 2020-12, which OpenAPI 3.1 uses);
//! the paths are written here.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use super::api::{
    ChangePage, CheckQueued, ErrorBody, ThresholdInfo, ValuePage, WatchDetail, WatchSummary,
};
use super::series::SeriesPage;
use crate::monitor::backtest::Backtest;

/// `GET /api/openapi.json`.
pub(crate) async fn openapi_doc() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        openapi().to_string(),
    )
        .into_response()
}

fn ok(description: &str, schema: impl serde::Serialize) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema } } })
}

fn error(description: &str) -> Value {
    ok(
        description,
        json!({ "$ref": "#/components/schemas/ErrorBody" }),
    )
}

fn watch_param() -> Value {
    json!({ "name": "watch", "in": "path", "required": true,
            "description": "The watch id.", "schema": { "type": "string" } })
}

/// The document.
#[expect(
    clippy::too_many_lines,
    reason = "one JSON document told path by path; split, its paths would be read apart from each other"
)]
pub fn openapi() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "#/components/schemas/".into())
        .into_generator();
    let summary = generator.subschema_for::<WatchSummary>();
    let detail = generator.subschema_for::<WatchDetail>();
    let thresholds = generator.subschema_for::<Vec<ThresholdInfo>>();
    let changes = generator.subschema_for::<ChangePage>();
    let values = generator.subschema_for::<ValuePage>();
    let queued = generator.subschema_for::<CheckQueued>();
    let series = generator.subschema_for::<SeriesPage>();
    let backtest = generator.subschema_for::<Backtest>();
    generator.subschema_for::<ErrorBody>();
    let schemas = generator.take_definitions(true);
    let unauthorized = error("No token, or a token that is not valid.");
    let not_found = error("No such watch (or threshold).");
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "semclip API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Watches, their status, semantic change history, threshold states and value history, and checking a watch now. Send a token as `Authorization: Bearer TOKEN` (or as the password of HTTP Basic). Without tokens in the daemon file reads are open and `check` is refused. Times are RFC 3339 in UTC."
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": { "type": "http", "scheme": "bearer" },
                "basic": { "type": "http", "scheme": "basic" }
            }
        },
        "security": [ { "bearer": [] }, { "basic": [] } ],
        "paths": {
            "/api/watches": { "get": {
                "operationId": "listWatches",
                "summary": "Every watch with its status.",
                "responses": {
                    "200": ok("The watches, configured ones first, by id.",
                              json!({ "type": "array", "items": summary })),
                    "401": unauthorized
                }
            }},
            "/api/watches/{watch}": { "get": {
                "operationId": "getWatch",
                "summary": "One watch with its status and threshold states.",
                "parameters": [ watch_param() ],
                "responses": { "200": ok("The watch.", detail), "401": unauthorized, "404": not_found }
            }},
            "/api/watches/{watch}/changes": { "get": {
                "operationId": "listChanges",
                "summary": "The watch's semantic changes, newest first, a page at a time.",
                "parameters": [
                    watch_param(),
                    { "name": "before", "in": "query", "required": false,
                      "description": "Only events older than this id (the previous page's next_before).",
                      "schema": { "type": "integer", "format": "int64" } },
                    { "name": "limit", "in": "query", "required": false,
                      "description": "Events per page, 1 to 500 (default 50).",
                      "schema": { "type": "integer", "minimum": 1, "maximum": 500 } }
                ],
                "responses": { "200": ok("A page of changes.", changes), "400": error("A bad limit."),
                               "401": unauthorized, "404": not_found }
            }},
            "/api/watches/{watch}/thresholds": { "get": {
                "operationId": "listThresholds",
                "summary": "The watch's thresholds and their states.",
                "parameters": [ watch_param() ],
                "responses": { "200": ok("The thresholds, in file order.", thresholds),
                               "401": unauthorized, "404": not_found }
            }},
            "/api/watches/{watch}/thresholds/{name}/values": { "get": {
                "operationId": "listValues",
                "summary": "The value history of a threshold's XPath.",
                "parameters": [
                    watch_param(),
                    { "name": "name", "in": "path", "required": true,
                      "description": "The threshold name.", "schema": { "type": "string" } },
                    { "name": "limit", "in": "query", "required": false,
                      "description": "The newest values to give, 1 to 500 (default 50).",
                      "schema": { "type": "integer", "minimum": 1, "maximum": 500 } }
                ],
                "responses": { "200": ok("The values, oldest first.", values), "400": error("A bad limit."),
                               "401": unauthorized, "404": not_found }
            }},
            "/api/watches/{watch}/series": { "get": {
                "operationId": "getSeries",
                "summary": "Values over time: the series of the numeric nodes of the watch's clips and thresholds.",
                "description": "Without `xpath`, every series of the watch (heads only). With it, the points of the node it names: its semantic id, or an XPath over the current version (the nodes it selects, at most 50). A series is a step function: each point holds until the next; a point without a value marks the node gone.",
                "parameters": [
                    watch_param(),
                    { "name": "xpath", "in": "query", "required": false,
                      "description": "A node's semantic id (a trailing /@num is allowed) or an XPath selecting nodes.",
                      "schema": { "type": "string" } },
                    { "name": "from", "in": "query", "required": false,
                      "description": "Start: RFC 3339, or a duration back from now (7d, 12h). The point in force then comes first.",
                      "schema": { "type": "string" } },
                    { "name": "to", "in": "query", "required": false,
                      "description": "End: RFC 3339, or a duration back from now.",
                      "schema": { "type": "string" } },
                    { "name": "points", "in": "query", "required": false,
                      "description": "Most points per series, 2 to 10000 (default 1000): over it, each of points/2 equal spans keeps its lowest and highest point.",
                      "schema": { "type": "integer", "minimum": 2, "maximum": 10000 } },
                    { "name": "format", "in": "query", "required": false,
                      "description": "json (default); csv (time,node,label,value); ha (the first node as a Home Assistant REST sensor state: state, attributes); table (flat rows for Grafana's Infinity data source).",
                      "schema": { "type": "string", "enum": ["json", "csv", "ha", "table"] } }
                ],
                "responses": { "200": ok("The series (format=json).", series),
                               "400": error("A bad time, points or format."),
                               "401": unauthorized, "404": error("No such watch, or no series for the XPath.") }
            }},
            "/api/watches/{watch}/backtest": { "get": {
                "operationId": "backtest",
                "summary": "Replay a threshold, a clip or an ignore list over the watch's stored versions.",
                "parameters": [
                    watch_param(),
                    { "name": "threshold", "in": "query", "required": false,
                      "description": "A threshold of the watch, by name.", "schema": { "type": "string" } },
                    { "name": "clip", "in": "query", "required": false,
                      "description": "A clip of the watch, by name.", "schema": { "type": "string" } },
                    { "name": "ignore", "in": "query", "required": false,
                      "description": "An XPath to ignore in place of the watch's own list (repeatable).",
                      "schema": { "type": "string" } }
                ],
                "responses": { "200": ok("What the rule would have done, oldest first.", backtest),
                               "400": error("Not exactly one rule named."),
                               "401": unauthorized, "404": not_found }
            }},
            "/api/watches/{watch}/check": { "post": {
                "operationId": "checkNow",
                "summary": "Check the watch as soon as a slot is free (admin scope).",
                "parameters": [ watch_param() ],
                "responses": {
                    "202": ok("Queued.", queued),
                    "401": unauthorized,
                    "403": error("The token lacks the admin scope, or no token is configured."),
                    "404": not_found,
                    "409": error("No scheduler runs in this process (semclip serve).")
                }
            }}
        }
    })
}
