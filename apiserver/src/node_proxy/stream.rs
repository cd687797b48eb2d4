//! The WebSocket side of the kubelet's streaming endpoints on simulated nodes: `pods/exec` runs
//! a command [`simulated_command`] knows in the container's sandbox and streams what it writes
//! over the `channel.k8s.io` protocols (v5 down to v1: a channel byte then data; stdout 1,
//! stderr 2, error 3 with the exit Status), as kubectl, client-go's WebSocket executor and the
//! Python client speak them; `pods/log` streams over `binary.k8s.io` / `base64.binary.k8s.io`.
//! SPDY upgrades are refused with a Status naming WebSocket.

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{FromRequestParts, Request};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use bytes::Bytes;
use http::HeaderValue;
use k1s_apimachinery::ApiError;
use k1s_apimachinery::simulated_command::{self, Outcome};
use serde_json::json;

/// The exec protocols k1s speaks; the client's order of preference decides among them.
const EXEC_PROTOCOLS: [&str; 5] = [
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];
const LOG_PROTOCOLS: [&str; 2] = ["binary.k8s.io", "base64.binary.k8s.io"];

const STDOUT: u8 = 1;
const ERROR: u8 = 3;

/// Whether a request asks for a WebSocket.
pub fn is_websocket(req: &Request) -> bool {
    req.headers()
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Upgrades to a WebSocket with the first protocol the client offers that k1s speaks (the
/// kubelet's negotiation), then runs `session` with it.
async fn upgrade<F, Fut>(req: Request, known: &[&'static str], session: F) -> Response
where
    F: FnOnce(WebSocket, String) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (mut parts, _) = req.into_parts();
    let mut ws = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(ws) => ws,
        Err(rejection) => return rejection.into_response(),
    };
    let offered: Vec<String> = ws
        .requested_protocols()
        .filter_map(|p| p.to_str().ok())
        .map(str::to_string)
        .collect();
    let chosen = offered
        .iter()
        .find(|p| known.contains(&p.as_str()))
        .cloned();
    if let Some(p) = chosen
        .as_deref()
        .and_then(|p| HeaderValue::from_str(p).ok())
    {
        ws.set_selected_protocol(p);
    }
    let protocol = chosen.unwrap_or_default();
    ws.on_upgrade(move |socket| session(socket, protocol))
}

/// `pods/log` over a WebSocket: the log's bytes, then a normal close.
pub async fn log(req: Request, body: Vec<u8>) -> Response {
    upgrade(
        req,
        &LOG_PROTOCOLS,
        move |mut socket, protocol| async move {
            if !body.is_empty() {
                let message = if protocol == "base64.binary.k8s.io" {
                    Message::Text(
                        base64::engine::general_purpose::STANDARD
                            .encode(&body)
                            .into(),
                    )
                } else {
                    Message::Binary(Bytes::from(body))
                };
                let _ = socket.send(message).await;
            }
            close(&mut socket).await;
        },
    )
    .await
}

/// What an exec ends with: the command's output and exit code, or why it could not run.
pub enum ExecResult {
    Ran { argv: Vec<String>, run: Outcome },
    Refused(ApiError),
}

/// `pods/exec` over a WebSocket.
pub async fn exec(req: Request, result: ExecResult) -> Response {
    if !is_websocket(&req) {
        return crate::response::error_response(&ApiError::bad_request(
            "k1s serves pods/exec over WebSocket (the channel.k8s.io protocols kubectl 1.31+, \
             client-go's WebSocket executor and the Python client use); SPDY is not supported",
        ));
    }
    upgrade(
        req,
        &EXEC_PROTOCOLS,
        move |mut socket, protocol| async move {
            let frame = |channel: u8, data: &[u8]| {
                let mut bytes = Vec::with_capacity(data.len() + 1);
                bytes.push(channel);
                bytes.extend_from_slice(data);
                Message::Binary(Bytes::from(bytes))
            };
            let status_protocol =
                matches!(protocol.as_str(), "v4.channel.k8s.io" | "v5.channel.k8s.io");
            let error_text = match result {
                ExecResult::Ran { argv, run } => {
                    let text = output_text(&run);
                    if !text.is_empty() {
                        let _ = socket.send(frame(STDOUT, text.as_bytes())).await;
                    }
                    if status_protocol {
                        Some(exit_status(&argv, run.code).to_string())
                    } else {
                        (run.code != 0).then(|| {
                            format!(
                                "command terminated with non-zero exit code: exit code {}",
                                run.code
                            )
                        })
                    }
                }
                ExecResult::Refused(e) if status_protocol => Some(e.to_status_json().to_string()),
                ExecResult::Refused(e) => Some(e.message.clone()),
            };
            if let Some(text) = error_text {
                let _ = socket.send(frame(ERROR, text.as_bytes())).await;
            }
            close(&mut socket).await;
        },
    )
    .await
}

/// A normal closure (1000), which clients read as the end of the streams.
async fn close(socket: &mut WebSocket) {
    let frame = CloseFrame {
        code: close_code::NORMAL,
        reason: "".into(),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}

/// Everything the command wrote, as its stdout carried it.
fn output_text(run: &Outcome) -> String {
    let now = jiff::Timestamp::now();
    let lines: Vec<String> = run
        .output
        .iter()
        .map(|o| simulated_command::line_text(&o.line, now, o.after_seconds))
        .collect();
    let mut text = lines.join("\n");
    if !run.open_last_line && !lines.is_empty() {
        text.push('\n');
    }
    text
}

/// The exit Status the v4 and v5 protocols end with (kubelet's remotecommand `writeStatus`).
fn exit_status(argv: &[String], code: i32) -> serde_json::Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
            argv.join(" ")
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
    })
}
