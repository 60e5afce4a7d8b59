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
